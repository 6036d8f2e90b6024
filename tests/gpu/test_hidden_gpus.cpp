// GPU: ranks that each see only their own GPU, as cluster launchers arrange with a per-rank
// CUDA_VISIBLE_DEVICES, still exchange through CUDA IPC: CUDA maps memory of a GPU the mapping
// process cannot see, and halox tries that at set-up instead of giving CUDA IPC up. The program
// sets CUDA_VISIBLE_DEVICES itself, before CUDA starts, to one GPU per node-local rank (modulo
// the node's GPUs); every halo cell is checked against global coordinates after blocking and
// scheduled exchanges, with device signals and with the MPI handshake, and describe() must say
// CUDA IPC and name the GPU each rank could not see. Skips (exit 77) unless the node has two
// GPUs and two ranks on it.
#include <cuda_runtime.h>
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <fmt/format.h>
#include <boost/mpi/collectives.hpp>
#include <boost/serialization/string.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "gpu_setup.hpp"
#include "kernels.hpp"

namespace {

// The node's GPUs as CUDA_VISIBLE_DEVICES may name them: the list already set, else one index
// per GPU the NVIDIA driver lists (read without starting CUDA, which would fix the list).
std::vector<std::string> node_gpus() {
  std::vector<std::string> gpus;
  if (const char* set = std::getenv("CUDA_VISIBLE_DEVICES")) {
    std::stringstream in(set);
    for (std::string g; std::getline(in, g, ',');)
      if (!g.empty()) gpus.push_back(g);
    return gpus;
  }
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
    (void)e;
    gpus.push_back(std::to_string(gpus.size()));
  }
  return gpus;
}

// Runs before MPI and CUDA start (namespace scope, ahead of skip_without_gpu below).
bool hide_other_gpus() {
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  const char* local_size = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const std::vector<std::string> gpus = node_gpus();
  if (local == nullptr || local_size == nullptr || std::atoi(local_size) < 2 || gpus.size() < 2) {
    std::printf("SKIP: needs two ranks on a node with two GPUs (Open MPI's mpiexec)\n");
    std::exit(77);
  }
  const std::string mine = gpus[std::size_t(std::atoi(local)) % gpus.size()];
  setenv("CUDA_VISIBLE_DEVICES", mine.c_str(), 1);
  return true;
}

const bool hidden = hide_other_gpus();
const bool skipped_without_gpu = gpu_test::skip_without_gpu();
using gpu_test::cuda;
using gpu_test::geom_of;
using gpu_test::wrong_cells;

std::string my_bus_id() {
  int dev = 0;
  char bus[32] = {};
  cuda(cudaGetDevice(&dev));
  cuda(cudaDeviceGetPCIBusId(bus, sizeof bus, dev));
  return bus;
}

// describe()'s lines for the messages to and from `peer`.
std::vector<std::string> lines_of(const std::string& d, int peer) {
  std::vector<std::string> out;
  std::stringstream in(d);
  const std::string to = "send to " + std::to_string(peer) + ":";
  const std::string from = "recv from " + std::to_string(peer) + ":";
  for (std::string line; std::getline(in, line);)
    if (line.find(to) != std::string::npos || line.find(from) != std::string::npos)
      out.push_back(line);
  return out;
}

}  // namespace

TEST_CASE("hidden GPUs: ranks that see only their own GPU take CUDA IPC between them") {
  boost::mpi::communicator world;
  const int P = world.size(), me = world.rank();
  std::vector<std::string> bus;
  boost::mpi::all_gather(world, my_bus_id(), bus);
  int visible = 0;
  cuda(cudaGetDeviceCount(&visible));
  REQUIRE(visible == 1);  // the program hid the others

  const bool signals = GENERATE(true, false);
  INFO((signals ? "device signals" : "MPI handshake"));
  const halox::extents<3> n{16, 8 * P, 12};
  constexpr auto st = halox::stencil<3>::box(1);
  const halox::cartesian<3> dom(world, n, halox::periodic<3>::all(),
                                halox::process_grid<3>{{1, P, 1}});
  auto u = dom.make_field<double>(st, halox::device);
  halox::exchange_options o;
  o.ipc_device_signals = signals;
  o.label = "hidden";
  auto ex = halox::make_exchange(dom, st, o, u);
  const std::string d = ex.describe();
  INFO(d);
  for (const int peer : {(me + 1) % P, (me + P - 1) % P}) {
    const auto lines = lines_of(d, peer);
    CHECK(!lines.empty());
    for (const auto& line : lines) {
      CHECK(line.find("via peer_ipc") != std::string::npos);
      if (bus[std::size_t(peer)] == bus[std::size_t(me)]) continue;  // one GPU: not hidden
      CHECK(line.find(fmt::format("rank {}'s GPU {} is not visible to rank {}", peer,
                                  bus[std::size_t(peer)], me)) != std::string::npos);
      CHECK(line.find("CUDA IPC between them worked when tried at set-up") != std::string::npos);
    }
  }
  if (signals && P == 2) CHECK(d.find("no host wait") != std::string::npos);

  cudaStream_t s;
  cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const auto g = geom_of(u, n);
  for (int k = 1; k <= 3; ++k) {
    halox_test::stamp(g, k, s);
    cuda(cudaStreamSynchronize(s));
    ex.exchange();
    CHECK(wrong_cells(g, k, s) == 0);
  }
  for (int k = 4; k <= 6; ++k) {
    halox_test::stamp(g, k, s);
    ex.schedule_exchange(s);
    ex.schedule_wait(s);
    CHECK(wrong_cells(g, k, s) == 0);
  }
  cuda(cudaStreamDestroy(s));
}
