// GPU: halo exchanges captured into CUDA graphs with the user's kernels and replayed
// (docs/graphs.md). Every check is against the global coordinates encoded in the data, on the
// GPU, or bit for bit against the same steps run without a graph. Skips (exit 77) without a GPU.
#include <cuda_runtime.h>
#include <boost/mpi/collectives.hpp>
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_setup.hpp"
#include "kernels.hpp"
#include "transport/nccl_comm.hpp"

namespace {

const bool skipped_without_gpu = gpu_test::skip_without_gpu();
using gpu_test::cuda;
using gpu_test::geom_of;

// A double in device memory (the salt a graph's kernels read) and a device error counter.
struct device_state {
  double* salt = nullptr;
  unsigned long long* errors = nullptr;
  device_state() {
    cuda(cudaMalloc(&salt, sizeof *salt));
    cuda(cudaMalloc(&errors, sizeof *errors));
    set_salt(0);
    cuda(cudaMemset(errors, 0, sizeof *errors));
    cuda(cudaDeviceSynchronize());
  }
  ~device_state() {
    (void)cudaFree(salt);
    (void)cudaFree(errors);
  }
  device_state(const device_state&) = delete;
  device_state& operator=(const device_state&) = delete;
  void set_salt(double v) const { cuda(cudaMemcpy(salt, &v, sizeof v, cudaMemcpyHostToDevice)); }
  double read_salt() const {
    double v = 0;
    cuda(cudaMemcpy(&v, salt, sizeof v, cudaMemcpyDeviceToHost));
    return v;
  }
  unsigned long long read_errors() const {
    unsigned long long v = 0;
    cuda(cudaDeviceSynchronize());
    cuda(cudaMemcpy(&v, errors, sizeof v, cudaMemcpyDeviceToHost));
    return v;
  }
};

// One time step as a solver captures it: new owned values, the exchange, a kernel that reads
// every halo cell (and counts wrong ones), the step counter advanced; all on `s`.
void time_step(halox::halo_exchange& ex, const halox_test::geom& g, const device_state& d,
               cudaStream_t s) {
  halox_test::stamp(g, d.salt, s);
  ex.schedule_exchange(s);
  ex.schedule_wait(s);
  halox_test::verify(g, d.salt, d.errors, s);
  halox_test::bump(d.salt, s);
}

cudaGraphExec_t capture(halox::halo_exchange& ex, const halox_test::geom& g, const device_state& d,
                        cudaStream_t s, int steps) {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  cuda(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int k = 0; k < steps; ++k) time_step(ex, g, d, s);
  cuda(cudaStreamEndCapture(s, &graph));
  cuda(cudaGraphInstantiate(&exec, graph, 0));
  cuda(cudaGraphDestroy(graph));
  return exec;
}

// How many times the replay test replays its first graph: 200, or HALOX_TEST_REPLAYS (the
// sanitizer stage of tests/gpu/gpu-suite.sh runs fewer: racecheck instruments every load).
int replays() {
  const char* v = std::getenv("HALOX_TEST_REPLAYS");
  return v != nullptr && std::atoi(v) > 0 ? std::atoi(v) : 200;
}

long total(const boost::mpi::communicator& world, long v) {
  return boost::mpi::all_reduce(world, v, std::plus<long>());
}

// The paths a test runs: "auto" (CUDA IPC with device signals between GPUs, the MPI handshake
// where ranks share one, local copies at one rank) and "nccl" (every rank a node of its own).
halox::exchange_options options_for(const std::string& path) {
  halox::exchange_options o;
  if (path == "nccl") {
    o.device_staging = halox::staging::nccl;
    o.node_size = 1;
  }
  return o;
}

bool runnable(const std::string& path, const boost::mpi::communicator& world) {
  int gpus = 0;
  cuda(cudaGetDeviceCount(&gpus));
  return path != "nccl" || (halox::detail::nccl_available() && world.size() <= gpus);
}

// The bytes of every message describe() lists ("send to R: N B via ...", "recv from R: N B").
std::size_t message_bytes(const std::string& d) {
  std::size_t total = 0;
  for (const char* key : {"send to ", "recv from "})
    for (std::size_t at = d.find(key); at != std::string::npos; at = d.find(key, at + 1)) {
      const std::size_t colon = d.find(": ", at);
      total += std::stoull(d.substr(colon + 2));
    }
  return total;
}

}  // namespace

TEST_CASE("a captured time step replayed 200 times gives the halos of 200 exchanges") {
  boost::mpi::communicator world;
  const std::string path = GENERATE("auto", "nccl");
  CAPTURE(path);
  if (!runnable(path, world)) {
    WARN("skipped: NCCL needs one GPU per rank");
    return;
  }
  // Small exchanges run as one launch over CUDA IPC with device signals, those of more than
  // 1 MiB (here: halos 8 wide, 1.3 MiB a rank at 2 ranks) as a pack launch and an unpack
  // launch: both kinds are replayed.
  const bool large = GENERATE(false, true);
  CAPTURE(large);
  const halox::extents<3> n = large ? halox::extents<3>{64, 64, 64} : halox::extents<3>{12, 10, 8};
  const auto st = halox::stencil<3>::box(large ? 8 : 1);
  const halox::cartesian<3> dom(world, n, halox::periodic<3>::all());
  auto u = dom.make_field<double>(st, halox::device);
  auto ex = halox::make_exchange(dom, st, options_for(path), u);
  const std::string d = ex.describe();
  INFO(d);
  // Over CUDA IPC with device signals the small case's messages travel as flagged words into two
  // copies of the receive buffers by turns (the device picks the copy and the words' number, also
  // in replays); the large one's go straight into the halos.
  if (d.find("CUDA IPC (device signals)") != std::string::npos) {
    // One launch for both halves where the exchange moves at most 1 MiB (device_copier's
    // decide_fusion): always for the small case; for the large one only where its messages
    // allow it (at 4 ranks they are 3 of at most 320 KiB).
    const bool fused = d.find("pack and unpack as one launch") != std::string::npos;
    if (!large) CHECK(fused);
    if (fused) CHECK(message_bytes(d) <= (std::size_t(1) << 20));
    CHECK((d.find("every message as flagged words") != std::string::npos) == !large);
    CHECK((d.find("straight into the receiver's halo") != std::string::npos) == large);
  }
  const bool capturable = d.find("CUDA graphs: capturable") != std::string::npos;
  // Where the describe() says so, the agreement holds on every rank.
  REQUIRE(total(world, capturable) % world.size() == 0);
  const auto g = geom_of(u, n);
  device_state state;
  cudaStream_t s;
  cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  // An ordinary scheduled exchange first (before any capture).
  halox_test::stamp(g, 0.5, s);
  ex.schedule_exchange(s);
  ex.schedule_wait(s);
  halox_test::verify(g, 0.5, state.errors, s);
  cuda(cudaStreamSynchronize(s));
  REQUIRE(total(world, long(state.read_errors())) == 0);

  if (!capturable) {
    // Refused on every rank before anything is enqueued: the capture stays valid.
    bool refused = false;
    std::string what;
    cuda(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    halox_test::stamp(g, state.salt, s);
    try {
      ex.schedule_exchange(s);
    } catch (const halox::error& e) {
      refused = true;
      what = e.what();
    }
    cudaGraph_t graph = nullptr;
    cuda(cudaStreamEndCapture(s, &graph));
    cuda(cudaGraphDestroy(graph));
    INFO(what);
    CHECK(what.find("being captured into a CUDA graph") != std::string::npos);
    REQUIRE(total(world, refused) == world.size());
    // The object still works outside graphs.
    halox_test::stamp(g, 3.0, s);
    ex.schedule_exchange(s);
    ex.schedule_wait(s);
    halox_test::verify(g, 3.0, state.errors, s);
    cuda(cudaStreamSynchronize(s));
    REQUIRE(total(world, long(state.read_errors())) == 0);
    cuda(cudaStreamDestroy(s));
    return;
  }

  // One step per graph, replayed R (200) times; the kernels read the step from device memory.
  // The later replays are in proportion: R/10 after ordinary exchanges, R/4 of a graph of three
  // steps, R/10 of two graphs in turns.
  const int n1 = replays(), n2 = std::max(2, n1 / 10), n3 = std::max(1, n1 / 4);
  double salt = 1;
  state.set_salt(salt);
  cudaGraphExec_t one = capture(ex, g, state, s, 1);
  for (int r = 0; r < n1; ++r) cuda(cudaGraphLaunch(one, s));
  cuda(cudaStreamSynchronize(s));
  salt += n1;
  CHECK(state.read_salt() == salt);
  REQUIRE(total(world, long(state.read_errors())) == 0);

  // Ordinary exchanges after the replays (scheduled and blocking), then replays again.
  halox_test::stamp(g, 700.0, s);
  ex.schedule_exchange(s);
  ex.schedule_wait(s);
  halox_test::verify(g, 700.0, state.errors, s);
  cuda(cudaStreamSynchronize(s));
  halox_test::stamp(g, 701.0, s);
  cuda(cudaStreamSynchronize(s));
  ex.exchange();
  halox_test::verify(g, 701.0, state.errors, s);
  for (int r = 0; r < n2; ++r) cuda(cudaGraphLaunch(one, s));
  cuda(cudaStreamSynchronize(s));
  salt += n2;
  CHECK(state.read_salt() == salt);
  REQUIRE(total(world, long(state.read_errors())) == 0);
  cuda(cudaGraphExecDestroy(one));

  // A new capture of three steps in one graph (the old one destroyed).
  cudaGraphExec_t three = capture(ex, g, state, s, 3);
  for (int r = 0; r < n3; ++r) cuda(cudaGraphLaunch(three, s));
  cuda(cudaStreamSynchronize(s));
  salt += 3 * n3;
  CHECK(state.read_salt() == salt);
  REQUIRE(total(world, long(state.read_errors())) == 0);
  cuda(cudaGraphExecDestroy(three));

  // Two graphs captured one after the other before either runs (as a solver captures one per
  // parity): the second's frozen exchange number is ahead of the first's; replayed in turns.
  cudaGraphExec_t first = capture(ex, g, state, s, 1), second = capture(ex, g, state, s, 1);
  for (int r = 0; r < n2; ++r) cuda(cudaGraphLaunch(r % 2 ? first : second, s));
  cuda(cudaStreamSynchronize(s));
  salt += n2;
  CHECK(state.read_salt() == salt);
  REQUIRE(total(world, long(state.read_errors())) == 0);
  cuda(cudaGraphExecDestroy(first));
  cuda(cudaGraphExecDestroy(second));
  cuda(cudaStreamDestroy(s));
}

TEST_CASE("boundary rules and reverse sums replayed in a graph match the same steps without one") {
  boost::mpi::communicator world;
  const std::string path = GENERATE("auto", "nccl");
  CAPTURE(path);
  if (!runnable(path, world)) {
    WARN("skipped: NCCL needs one GPU per rank");
    return;
  }
  // Periodic in x and y, walls in z: a constant rule below, zero gradient above.
  const halox::extents<3> n{12, 10, 8};
  const auto st = halox::stencil<3>::box(2);
  const halox::cartesian<3> dom(world, n, halox::periodic<3>{true, true, false});
  halox::boundary<double, 3> bc;
  bc.constant({2, halox::side::low}, 7.5).zero_gradient({2, halox::side::high});
  const auto o = options_for(path);
  // Two twins: one driven by a graph, one by the same calls without capture.
  auto fa = dom.make_field<double>(st, halox::device),
       fb = dom.make_field<double>(st, halox::device);
  auto ra = dom.make_field<double>(st, halox::device),
       rb = dom.make_field<double>(st, halox::device);
  auto exa = halox::make_exchange(dom, o, halox::halo(st, fa, bc));
  auto exb = halox::make_exchange(dom, o, halox::halo(st, fb, bc));
  auto reva = halox::make_reverse_exchange(dom, st, halox::reduction::sum, o, ra);
  auto revb = halox::make_reverse_exchange(dom, st, halox::reduction::sum, o, rb);
  const bool capturable = exa.describe().find("CUDA graphs: capturable") != std::string::npos &&
                          reva.describe().find("CUDA graphs: capturable") != std::string::npos;
  if (total(world, capturable) != world.size()) {
    WARN("skipped: not capturable on this path (" << exa.describe() << ")");
    return;
  }
  device_state da, db;
  cudaStream_t s;
  cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // Every allocated cell of the reverse fields gets salt * 1e6 + its index: halo cells carry
  // contributions that the reverse sum adds into their owners.
  auto step = [&](halox::halo_exchange& ex, halox::halo_exchange& rev,
                  const halox::field<double, 3>& f, const halox::field<double, 3>& r,
                  const device_state& d) {
    halox_test::stamp(geom_of(f, n), d.salt, s);
    ex.schedule_exchange(s);
    ex.schedule_wait(s);
    halox_test::stamp(geom_of(r, n), d.salt, s);
    rev.schedule_exchange(s);
    rev.schedule_wait(s);
    halox_test::bump(d.salt, s);
  };
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  cuda(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  step(exa, reva, fa, ra, da);
  cuda(cudaStreamEndCapture(s, &graph));
  // As docs/graphs.md advises: the nodes keep the priorities of the streams they were captured on.
  cuda(cudaGraphInstantiate(&exec, graph, cudaGraphInstantiateFlagUseNodePriority));
  cuda(cudaGraphDestroy(graph));
  for (int r = 0; r < 30; ++r) {
    cuda(cudaGraphLaunch(exec, s));
    step(exb, revb, fb, rb, db);
  }
  cuda(cudaStreamSynchronize(s));
  auto same = [&](const halox::field<double, 3>& x, const halox::field<double, 3>& y) {
    const auto bytes = std::size_t(x.allocated_box().volume()) * sizeof(double);
    std::vector<double> hx(bytes / sizeof(double)), hy(hx.size());
    cuda(cudaMemcpy(hx.data(), x.data(), bytes, cudaMemcpyDeviceToHost));
    cuda(cudaMemcpy(hy.data(), y.data(), bytes, cudaMemcpyDeviceToHost));
    long bad = 0;
    for (std::size_t k = 0; k < hx.size(); ++k)
      bad += std::memcmp(&hx[k], &hy[k], sizeof(double)) != 0;
    return bad;
  };
  CHECK(da.read_salt() == 30);
  REQUIRE(total(world, same(fa, fb)) == 0);
  REQUIRE(total(world, same(ra, rb)) == 0);
  // The constant rule really ran: the halo cells below z = 0 hold 7.5 in the graph's field.
  const auto bytes = std::size_t(fa.allocated_box().volume()) * sizeof(double);
  std::vector<double> h(bytes / sizeof(double));
  cuda(cudaMemcpy(h.data(), fa.data(), bytes, cudaMemcpyDeviceToHost));
  const auto a = fa.allocated_box();
  long wall = 0, cells = 0;
  if (fa.owned_box().lo[2] == 0)
    for (auto i = a.lo[0]; i < a.hi[0]; ++i)
      for (auto j = a.lo[1]; j < a.hi[1]; ++j)
        for (auto k = a.lo[2]; k < 0; ++k, ++cells)
          wall += h[std::size_t(((i - a.lo[0]) * fa.strides()[0] + (j - a.lo[1]) * fa.strides()[1] +
                                 (k - a.lo[2]) * fa.strides()[2]))] != 7.5;
  CHECK(total(world, cells) > 0);
  REQUIRE(total(world, wall) == 0);
  cuda(cudaGraphExecDestroy(exec));
  cuda(cudaStreamDestroy(s));
}

TEST_CASE("require_capturable refuses an exchange that needs the host, on every rank") {
  boost::mpi::communicator world;
  const halox::extents<3> n{12, 10, 8};
  const auto st = halox::stencil<3>::star(1);
  const halox::cartesian<3> dom(world, n, halox::periodic<3>::all());
  auto u = dom.make_field<double>(st, halox::device);
  auto h = dom.make_field<double>(st);
  halox::exchange_options o;
  o.require_capturable = true;
  // A host field needs the host every exchange: refused at set-up, on every rank.
  std::string what;
  try {
    (void)halox::make_exchange(dom, st, o, u, h);
  } catch (const halox::error& e) {
    what = e.what();
  }
  INFO(what);
  CHECK(what.find("require_capturable") != std::string::npos);
  REQUIRE(total(world, !what.empty()) == world.size());
  // Host staging through MPI too, where there is a peer.
  o.device_staging = halox::staging::host_staged;
  what.clear();
  try {
    (void)halox::make_exchange(dom, st, o, u);
  } catch (const halox::error& e) {
    what = e.what();
  }
  const bool peers = world.size() > 1;
  REQUIRE(total(world, !what.empty()) == (peers ? world.size() : 0));
}
