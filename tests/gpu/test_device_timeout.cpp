// GPU: exchange_options::wait_timeout on device paths. A peer that never starts its exchange
// makes every rank that waits for it give up after the timeout with a halox::error naming the
// exchange and the peer, on the host (blocking waits) and on the GPU (kernels polling a peer's
// flags give up by the GPU's clock and the next host call raises); the object then refuses
// further use and everything is destroyed cleanly. Skips (exit 77) where no GPU is usable.
#include <cuda_runtime.h>
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <boost/mpi/collectives.hpp>

#include <chrono>
#include <cstdlib>
#include <string>

#include "gpu_setup.hpp"
#include "kernels.hpp"
#include "transport/nccl_carrier.hpp"

namespace {

const bool skipped_without_gpu = gpu_test::skip_without_gpu();
using gpu_test::cuda;
using gpu_test::geom_of;
using gpu_test::wrong_cells;

// HALOX_WAIT_TIMEOUT overrides the option (ctest sets it for every test): this test sets its
// own for its lifetime and puts the old value back.
class timeout_env {
 public:
  explicit timeout_env(const char* seconds) {
    if (const char* v = std::getenv("HALOX_WAIT_TIMEOUT")) old_ = v, had_ = true;
    setenv("HALOX_WAIT_TIMEOUT", seconds, 1);
  }
  ~timeout_env() {
    if (had_)
      setenv("HALOX_WAIT_TIMEOUT", old_.c_str(), 1);
    else
      unsetenv("HALOX_WAIT_TIMEOUT");
  }
  timeout_env(const timeout_env&) = delete;
  timeout_env& operator=(const timeout_env&) = delete;

 private:
  std::string old_;
  bool had_ = false;
};

struct transport {
  const char* name;
  halox::staging policy;
  bool device_signals;
  int node_size = 0;  // 1: NCCL between virtual nodes of one rank
};

halox::exchange_options options_of(const transport& t) {
  halox::exchange_options o;
  o.device_staging = t.policy;
  o.ipc_device_signals = t.device_signals;
  o.node_size = t.node_size;
  o.label = std::string("timeout-") + t.name;
  return o;
}

}  // namespace

TEST_CASE("wait_timeout: a peer that never starts is named by every rank that waits for it") {
  boost::mpi::communicator world;
  const int P = world.size(), me = world.rank(), silent = P - 1;
  const timeout_env env("0.5");
  const auto t = GENERATE(transport{"signals", halox::staging::automatic, true},
                          transport{"handshake", halox::staging::automatic, false},
                          transport{"host_staged", halox::staging::host_staged, true},
                          transport{"nccl", halox::staging::nccl, true, 1});
  const bool scheduled = GENERATE(false, true);
  INFO("transport " << t.name << (scheduled ? ", scheduled" : ", blocking"));
  int gpus = 0;
  cuda(cudaGetDeviceCount(&gpus));
  if (t.policy == halox::staging::nccl && (!halox::detail::nccl_available() || P > gpus)) {
    SUCCEED("NCCL needs a GPU per rank and a build with NCCL");  // (its own entries run it)
    return;
  }
  const halox::extents<3> n{16, 8 * P, 12};
  constexpr auto st = halox::stencil<3>::box(1);
  const halox::cartesian<3> dom(world, n, halox::periodic<3>::all(),
                                halox::process_grid<3>{{1, P, 1}});
  auto u = dom.make_field<double>(st, halox::device);
  auto ex = halox::make_exchange(dom, st, options_of(t), u);
  const std::string d = ex.describe();
  INFO(d);
  cudaStream_t s;
  cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const auto g = geom_of(u, n);
  // Two good exchanges first: the timeout changes nothing while every rank takes part.
  for (int k = 1; k <= 2; ++k) {
    halox_test::stamp(g, k, s);
    ex.schedule_exchange(s);
    ex.schedule_wait(s);
    CHECK(wrong_cells(g, k, s) == 0);
  }
  // Exchange #3: every rank but `silent` starts it; each of them must give up.
  std::string message;
  if (P > 1 && me != silent) {
    const auto t0 = std::chrono::steady_clock::now();
    try {
      if (scheduled) {
        ex.schedule_exchange(s);
        ex.schedule_wait(s);
        cuda(cudaStreamSynchronize(s));  // a kernel waiting for the silent peer gives up
        ex.schedule_exchange(s);         // ... and the next call says so
      } else {
        ex.exchange();
      }
    } catch (const halox::error& e) {
      message = e.what();
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    INFO(message);
    CHECK(secs < 60);
    // The silent rank's neighbours give up naming it; a rank further away may complete (its
    // neighbours sent before they gave up) or give up waiting for a neighbour that did.
    const bool next_to_silent = me == (silent + 1) % P || me == (silent + P - 1) % P;
    if (next_to_silent) {
      CHECK(message.find("gave up") != std::string::npos);
      CHECK(message.find("'timeout-" + std::string(t.name) + "' #3") != std::string::npos);
      CHECK(message.find("rank " + std::to_string(silent) + " (") != std::string::npos);
    }
    // The object refuses further use.
    if (!message.empty()) CHECK_THROWS_WITH(ex.exchange(), Catch::Contains("earlier one failed"));
  }
  cuda(cudaStreamSynchronize(s));
  cuda(cudaStreamDestroy(s));
  world.barrier();
  const int failed = message.empty() ? 0 : 1;
  const int all = boost::mpi::all_reduce(world, failed, std::plus<int>());
  CHECK(all >= (P == 1 ? 0 : P == 2 ? 1 : 2));  // the silent rank's neighbours at least
}
