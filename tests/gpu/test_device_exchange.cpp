// GPU: device fields exchanged through the fused pack/unpack kernels, blocking, split-phase and
// stream-ordered. Skips (exit 77) where no GPU is usable.
#include <cuda_runtime.h>
#include <boost/mpi/collectives.hpp>
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "../check.hpp"
#include "exchange/peer_agreement.hpp"
#include "gpu_setup.hpp"
#include "kernels.hpp"
#include "transport/locality.hpp"
#include "transport/nccl_carrier.hpp"

namespace {

// Options as the tests name them: a staging policy ("auto", "gpu_aware", "host_staged",
// "peer_ipc") and the host_staged variant ("mapped", "copy", or "pieces": copies in pieces of
// 4 KiB, so that even small messages are cut).
halox::exchange_options staging_options(const char* policy, const char* variant = "mapped") {
  halox::exchange_options o;
  const std::string p = policy;
  o.device_staging = p == "gpu_aware"     ? halox::staging::gpu_aware
                     : p == "host_staged" ? halox::staging::host_staged
                     : p == "peer_ipc"    ? halox::staging::peer_ipc
                                          : halox::staging::automatic;
  o.host_staging_copies = std::string(variant) == "copy";
  if (std::string(variant) == "pieces") o.staging_chunk_bytes = 4096;
  return o;
}

// Each message describe() lists ("send to R: N B via <route>...", "recv from R: ..."): the peer
// and the rest of the line.
std::vector<std::pair<int, std::string>> message_routes(const std::string& d) {
  std::vector<std::pair<int, std::string>> out;
  for (const char* key : {"send to ", "recv from "})
    for (std::size_t at = d.find(key); at != std::string::npos; at = d.find(key, at + 1)) {
      const std::size_t end = std::min(d.find('\n', at), d.size());
      const std::string line = d.substr(at, end - at);
      out.emplace_back(std::atoi(line.c_str() + std::strlen(key)), line);
    }
  return out;
}

// Whether the environment lets ranks a and b pair over CUDA IPC (options asked for it):
// HALOX_STAGING auto, peer_ipc or nccl (or unset), and both in one virtual node.
bool ipc_allowed(int a, int b) {
  const char* s = std::getenv("HALOX_STAGING");
  const std::string staging = s ? s : "";
  if (!staging.empty() && staging != "auto" && staging != "peer_ipc" && staging != "nccl")
    return false;
  const char* k = std::getenv("HALOX_NODE_SIZE");
  const int node = k && *k ? std::atoi(k) : 0;
  return node == 0 || a / node == b / node;
}

const bool skipped_without_gpu = gpu_test::skip_without_gpu();
using gpu_test::cuda;
using gpu_test::geom_of;

template <class T, int D>
std::size_t bytes_of(const halox::field<T, D>& f) {
  return std::size_t(f.allocated_box().volume()) * std::size_t(f.components()) * sizeof(T);
}

// A count of wrong cells in device memory, for halox_test::verify to add to.
class device_errors {
 public:
  device_errors() {
    cuda(cudaMalloc(&p_, sizeof *p_));
    cuda(cudaMemset(p_, 0, sizeof *p_));
    cuda(cudaDeviceSynchronize());
  }
  ~device_errors() { (void)cudaFree(p_); }
  device_errors(const device_errors&) = delete;
  device_errors& operator=(const device_errors&) = delete;
  unsigned long long* get() const { return p_; }
  /// This rank's count, once the work of every stream is done.
  unsigned long long count() const {
    unsigned long long v = 0;
    cuda(cudaDeviceSynchronize());
    cuda(cudaMemcpy(&v, p_, sizeof v, cudaMemcpyDeviceToHost));
    return v;
  }

 private:
  unsigned long long* p_ = nullptr;
};

// Device field + host mirror of identical layout: the reference checker runs on the mirror.
template <class T, int D>
struct mirrored {
  halox::field<T, D> dev, host;
  void upload() const {
    cuda(cudaMemcpy(dev.data(), host.data(), bytes_of(host), cudaMemcpyHostToDevice));
  }
  void download() const {
    cuda(cudaMemcpy(host.data(), dev.data(), bytes_of(host), cudaMemcpyDeviceToHost));
  }
};

template <class T, class Dom, int D>
mirrored<T, D> make_mirrored(const Dom& dom, const halox::stencil<D>& st, halox::field_options o) {
  return {dom.template make_field<T>(st, halox::device, o),
          dom.template make_field<T>(st, halox::host, o)};
}

// Three device fields of different element types and layouts (double; float x 2, planar;
// triple x 3, interleaved), each with its host mirror: filled, uploaded, checked together.
template <class Dom>
struct three_fields {
  mirrored<double, 3> a;
  mirrored<float, 3> b;
  mirrored<test_support::triple, 3> c;

  three_fields(const Dom& dom, const halox::stencil<3>& st)
      : a(make_mirrored<double>(dom, st, {})),
        b(make_mirrored<float>(dom, st, planar_pair())),
        c(make_mirrored<test_support::triple>(dom, st, interleaved_triple())) {}
  static halox::field_options planar_pair() {
    halox::field_options o;
    o.components = 2;
    o.component_layout = halox::components_layout::planar;
    return o;
  }
  static halox::field_options interleaved_triple() {
    halox::field_options o;
    o.components = 3;
    return o;
  }
  // Tags {1, salt}, {2, salt}, {3, salt} in owned cells, sentinels in the halos; uploaded.
  void fill(const halox::extents<3>& n, int salt) {
    test_support::fill(a.host, n, {1, salt});
    test_support::fill(b.host, n, {2, salt});
    test_support::fill(c.host, n, {3, salt});
    a.upload(), b.upload(), c.upload();
  }
  void check(const halox::stencil<3>& st, const halox::extents<3>& n,
             const std::array<bool, 3>& periodic, int salt) {
    a.download(), b.download(), c.download();
    HXT_REQUIRE_OK(test_support::check(a.host, st, n, periodic, {1, salt}));
    HXT_REQUIRE_OK(test_support::check(b.host, st, n, periodic, {2, salt}));
    HXT_REQUIRE_OK(test_support::check(c.host, st, n, periodic, {3, salt}));
  }
};

// Runs `ex` the way round `k` asks: 0 blocking, 1 split phase (polled), 2 stream-ordered.
void run_exchange(halox::halo_exchange& ex, int k) {
  if (k == 0) {
    ex.exchange();
  } else if (k == 1) {
    auto handle = ex.start();
    while (!handle.test()) {
    }
    handle.wait();
  } else {
    cudaStream_t s;
    cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    ex.schedule_exchange(s);
    ex.schedule_wait(s);
    cuda(cudaStreamSynchronize(s));
    cuda(cudaStreamDestroy(s));
  }
}

// Whether NCCL can join pairs of these `ranks` here (2 or more, one GPU each, NCCL usable);
// if not, says so (WARN) for the caller to return.
bool nccl_pairs(int ranks) {
  int gpus = 0;
  cuda(cudaGetDeviceCount(&gpus));
  if (halox::detail::nccl_available() && ranks <= gpus && ranks >= 2) return true;
  WARN("skipped: needs 2 or more ranks, one GPU each, and NCCL");
  return false;
}

}  // namespace

// The set-up step that lets ranks reach GPUs they cannot see (test_hidden_gpus runs it that way,
// on two GPUs): here between every pair of ranks, whichever GPUs they drive (one shared GPU
// included), every direction must open the other's memory and read its marker back.
TEST_CASE("the CUDA IPC probe: every pair of ranks opens each other's memory") {
  boost::mpi::communicator world;
  std::vector<int> peers;
  for (int r = 0; r < world.size(); ++r)
    if (r != world.rank()) peers.push_back(r);
  const auto failed = halox::detail::probe_hidden_ipc(world, peers, world.rank());
  REQUIRE(failed.size() == peers.size());
  for (std::size_t k = 0; k < peers.size(); ++k) {
    INFO("peer " << peers[k] << ": " << failed[k]);
    CHECK(failed[k].empty());
  }
  // No buffer is left behind, and CUDA has no error pending.
  CHECK(cudaGetLastError() == cudaSuccess);
}

TEST_CASE("device fields are allocated, padded and zeroed") {
  boost::mpi::communicator world;
  constexpr auto st = halox::stencil<3>::box(2);
  const halox::cartesian<3> dom(world, {16, 12, 10}, halox::periodic{true, false, true});
  auto u = dom.make_field<double>(st, halox::device, 2);
  REQUIRE(u.space() == halox::memory_space::device);
  REQUIRE(u.allocated_box() == halox::grow(u.owned_box(), st.lo, st.hi));
  std::vector<double> h(std::size_t(u.allocated_box().volume()) * 2, 1.0);
  cuda(cudaMemcpy(h.data(), u.data(), h.size() * sizeof(double), cudaMemcpyDeviceToHost));
  for (double x : h) REQUIRE(x == 0.0);
}

TEST_CASE("device and host fields of several types in one blocking exchange") {
  boost::mpi::communicator world;
  const halox::extents<3> n{13, 10, 9};
  const auto per =
      GENERATE(halox::periodic<3>{true, true, true}, halox::periodic<3>{false, true, false});
  const auto st = GENERATE(halox::stencil<3>::box(1), halox::stencil<3>::star({0, 1, 2}, {2, 0, 1}),
                           halox::stencil<3>::box(2));
  const halox::cartesian<3> dom(world, n, per);
  three_fields<halox::cartesian<3>> t(dom, st);
  auto& a = t.a;
  auto h = dom.make_field<int>(st);  // a host field in the same exchange
  t.fill(n, 0);
  test_support::fill(h, n, {4, 0});
  auto ex = halox::make_exchange(dom, st, a.dev, h, t.b.dev, t.c.dev);
  ex.exchange();
  t.check(st, n, per.flags, 0);
  HXT_REQUIRE_OK(test_support::check(h, st, n, per.flags, {4, 0}));

  // Again with changed data, split phase.
  test_support::fill(a.host, n, {1, 5});
  test_support::fill(h, n, {4, 5});
  a.upload();
  auto handle = ex.start();
  while (!handle.test()) {
  }
  handle.wait();
  a.download();
  HXT_REQUIRE_OK(test_support::check(a.host, st, n, per.flags, {1, 5}));
  HXT_REQUIRE_OK(test_support::check(h, st, n, per.flags, {4, 5}));
}

TEST_CASE("device fields only: several types and layouts, uneven boxes, every CUDA IPC target") {
  // Device fields only, so node-local peers pair over CUDA IPC: with device signals (one GPU
  // per rank) messages up to ipc_inline_max_bytes travel as flagged words (4- and 12-byte
  // elements here), larger ones straight into the receivers' halos, or into their receive
  // buffers when HALOX_IPC_INTO=buffer. 13 x 10 x 9 cells split unevenly: the two sides of a
  // message have different field strides. The limits: every message flagged, none, and (the
  // stencils with different widths on the two sides: messages of two sizes) one direction of a
  // pair flagged, the other not; a halo on one side of a dimension that is not periodic sends
  // one way only.
  boost::mpi::communicator world;
  const halox::extents<3> n{13, 10, 9};
  const char* into = GENERATE("field", "buffer");
  const auto per =
      GENERATE(halox::periodic<3>{true, true, true}, halox::periodic<3>{false, true, false});
  const auto st = GENERATE(halox::stencil<3>::box(1), halox::stencil<3>::star({0, 1, 2}, {2, 0, 1}),
                           halox::stencil<3>::star({1, 1, 0}, {2, 0, 1}));
  const std::size_t inline_max =
      GENERATE(std::size_t(256) << 10, std::size_t(0), std::size_t(4096));
  const halox::cartesian<3> dom(world, n, per);
  three_fields<halox::cartesian<3>> t(dom, st);
  halox::exchange_options o;
  o.ipc_into_fields = std::string(into) == "field";
  o.ipc_inline_max_bytes = inline_max;
  auto ex = halox::make_exchange(dom, st, o, t.a.dev, t.b.dev, t.c.dev);
  INFO("HALOX_IPC_INTO=" << into << " ipc_inline_max_bytes=" << inline_max << "\n"
                         << ex.describe());
  if (inline_max == 0) CHECK(ex.describe().find("flagged words") == std::string::npos);
  for (int round = 0; round < 3; ++round) {  // blocking, split phase, stream-ordered
    t.fill(n, round);
    run_exchange(ex, round);
    t.check(st, n, per.flags, round);
  }
}

TEST_CASE("a periodic dimension held by one rank: opposite narrow halos copied as pairs") {
  // Every rank holds the whole extent of the last (contiguous) dimension and it is periodic, so
  // its low and high halos are copies on the rank itself, rows of one to three cells. The
  // kernel runs two such copies of one shape as one (adjacent threads copy the same row of
  // both): rows of 8 to 24 bytes (doubles), 4 to 12 (floats, planar). With different widths on
  // the two sides the shapes differ and nothing is paired.
  boost::mpi::communicator world;
  const halox::extents<3> n{7, 4 * world.size() + 1, 11};
  const auto st =
      GENERATE(halox::stencil<3>::box(1), halox::stencil<3>::box(2), halox::stencil<3>::box(3),
               halox::stencil<3>::star({1, 1, 2}, {2, 1, 1}));
  const auto per =
      GENERATE(halox::periodic<3>{true, true, true}, halox::periodic<3>{false, false, true});
  const halox::cartesian<3> dom(world, n, per, halox::process_grid<3>{{1, world.size(), 1}});
  three_fields<halox::cartesian<3>> t(dom, st);
  auto ex = halox::make_exchange(dom, st, t.a.dev, t.b.dev, t.c.dev);
  const auto d = ex.describe();
  INFO(d);
  const bool same_sides = st.lo == st.hi;
  CHECK((d.find("pairs of adjacent narrow copies") != std::string::npos) == same_sides);
  for (int round = 0; round < 3; ++round) {  // blocking, split phase, stream-ordered
    t.fill(n, round);
    run_exchange(ex, round);
    t.check(st, n, per.flags, round);
  }
}

TEST_CASE("stream-ordered exchanges back to back with kernels writing and reading the halo") {
  boost::mpi::communicator world;
  const halox::extents<3> n{24, 20, 18};
  constexpr auto st = halox::stencil<3>::box(1);
  const halox::cartesian<3> dom(world, n, halox::periodic<3>::all());
  auto u = dom.make_field<double>(st, halox::device);
  auto v = dom.make_field<double>(st, halox::device);
  // Every transport: auto (CUDA IPC on one node: device signals where every peer is on another
  // GPU, writing straight into the peers' halos or, forced, into their receive buffers; else
  // the MPI handshake, also forced), both host_staged variants, and CUDA IPC mixed with MPI in
  // one exchange (only ranks 0 and 1 pair over IPC; with either staging variant for the MPI
  // messages).
  struct transport {
    const char *policy, *variant, *ipc_ranks, *signal, *into;
    bool plain_words = false;  // ipc_inline_max_bytes = 0
  };
  const auto t = GENERATE(transport{"auto", "mapped", nullptr, nullptr, nullptr},
                          transport{"auto", "mapped", nullptr, nullptr, nullptr, true},
                          transport{"auto", "mapped", nullptr, nullptr, "buffer"},
                          transport{"auto", "mapped", nullptr, nullptr, "buffer", true},
                          transport{"auto", "mapped", nullptr, "host", nullptr},
                          transport{"host_staged", "mapped", nullptr, nullptr, nullptr},
                          transport{"host_staged", "copy", nullptr, nullptr, nullptr},
                          transport{"host_staged", "pieces", nullptr, nullptr, nullptr},
                          transport{"auto", "mapped", "0,1", nullptr, nullptr},
                          transport{"auto", "copy", "0,1", nullptr, nullptr});
  const char* policy = t.policy;
  const char* variant = t.variant;
  auto o = staging_options(policy, variant);
  if (t.ipc_ranks) o.peer_ipc_ranks = std::vector{0, 1};
  if (t.signal) o.ipc_device_signals = false;
  if (t.into) o.ipc_into_fields = false;
  if (t.plain_words) o.ipc_inline_max_bytes = 0;
  auto ex_u = halox::make_exchange(dom, st, o, u);
  auto ex_v = halox::make_exchange(dom, st, o, v);
  // Two ranks on two GPUs with device signals: these messages (a few KiB) travel as flagged
  // words, with or without writes into the halos allowed (those of larger messages:
  // test_graphs); with flagged words turned off, straight into the halos where allowed.
  int gpus = 0;
  cuda(cudaGetDeviceCount(&gpus));
  if (world.size() == 2 && gpus >= 2 && std::strcmp(policy, "auto") == 0 && !t.ipc_ranks &&
      !t.signal && ipc_allowed(0, 1) && std::getenv("HALOX_IPC_SIGNAL") == nullptr) {
    const auto d = ex_u.describe();
    INFO(d);
    CHECK((d.find("every message as flagged words") != std::string::npos) == !t.plain_words);
    CHECK((d.find("straight into the receiver's halo") != std::string::npos) ==
          (t.plain_words && t.into == nullptr));
  }
  if (t.ipc_ranks) {
    // Ranks 0 and 1 reach each other through CUDA IPC where the environment (which overrides
    // the options) allows it, everybody else through another route: checked per message.
    const auto d = ex_u.describe();
    INFO(d);
    for (const auto& [peer, how] : message_routes(d)) {
      INFO("peer " << peer << ": " << how);
      const bool pair = world.rank() <= 1 && peer <= 1 && peer != world.rank();
      CHECK((how.find("via peer_ipc") != std::string::npos) == (pair && ipc_allowed(0, 1)));
    }
  }
  cudaStream_t stream;
  cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const device_errors errors;
  const auto gu = geom_of(u, n), gv = geom_of(v, n);
  const int iterations = 300;
  INFO("HALOX_STAGING=" << policy << " HALOX_HOST_STAGING=" << variant
                        << " HALOX_PEER_IPC_RANKS=" << (t.ipc_ranks ? t.ipc_ranks : "(unset)")
                        << " HALOX_IPC_SIGNAL=" << (t.signal ? t.signal : "(unset)")
                        << " HALOX_IPC_INTO=" << (t.into ? t.into : "(unset)")
                        << " HALOX_IPC_INLINE_MAX=" << (t.plain_words ? "0" : "(unset)"));
  for (int s = 1; s <= iterations; ++s) {
    // u and v alternate so two objects interleave on one stream, as a solver's steps do.
    auto& ex = s % 2 ? ex_u : ex_v;
    const auto& g = s % 2 ? gu : gv;
    halox_test::stamp(g, s, stream);  // the "solver" writes new owned values
    ex.schedule_exchange(stream);     // packing waits for the stamp kernel
    ex.schedule_wait(stream);         // the verify kernel waits for the unpack
    halox_test::verify(g, s, errors.get(), stream);
  }
  const auto bad = errors.count();
  cuda(cudaStreamDestroy(stream));
  REQUIRE(boost::mpi::all_reduce(world, bad, std::plus<unsigned long long>()) == 0);
}

TEST_CASE("host staging in pieces: many pieces, every call style, reverse, ranks disagreeing") {
  // 64 x 48 x 40 cells, width 2, three fields: messages of tens to hundreds of KiB, cut into
  // pieces of 4 KiB, each copied out, sent, received and copied in on its own. Ranks ask for
  // different chunk sizes (they agree on the smallest); then one rank turns cutting off.
  boost::mpi::communicator world;
  const int P = world.size(), me = world.rank();
  const halox::extents<3> n{64, 48, 40};
  constexpr auto st = halox::stencil<3>::box(2);
  const auto per =
      GENERATE(halox::periodic<3>{true, true, true}, halox::periodic<3>{false, true, false});
  const halox::cartesian<3> dom(world, n, per);
  three_fields<halox::cartesian<3>> t(dom, st);
  auto o = staging_options("host_staged", "pieces");
  o.staging_chunk_bytes = std::size_t(4096) * std::size_t(1 + me % 3);
  auto ex = halox::make_exchange(dom, st, o, t.a.dev, t.b.dev, t.c.dev);
  const std::string d = ex.describe();
  INFO(d);
  if (P > 1) {
    CHECK(d.find("host staging in pieces (chunk 4096 B)") != std::string::npos);
    CHECK(d.find("copied in as each arrives") != std::string::npos);
  }
  for (int round = 0; round < 6; ++round) {  // blocking, split phase, stream-ordered, twice
    t.fill(n, round);
    run_exchange(ex, round % 3);
    t.check(st, n, per.flags, round);
  }
  // Rank 0 turns cutting off: every rank sends whole messages, still through copies where its
  // messages are over its own chunk size.
  o.staging_chunk_bytes = me == 0 ? 0 : 4096;
  auto whole = halox::make_exchange(dom, st, o, t.a.dev, t.b.dev, t.c.dev);
  INFO(whole.describe());
  if (P > 1 && me != 0) CHECK(whole.describe().find("(chunk 0 B)") != std::string::npos);
  for (int round = 6; round < 9; ++round) {
    t.fill(n, round);
    run_exchange(whole, round % 3);
    t.check(st, n, per.flags, round);
  }
  // A reverse sum in pieces matches the host's, bit for bit.
  auto hd = dom.make_field<double>(st);
  auto dd = dom.make_field<double>(st, halox::device);
  const auto a = hd.allocated_box();
  for (auto i = a.lo[0]; i < a.hi[0]; ++i)
    for (auto j = a.lo[1]; j < a.hi[1]; ++j)
      for (auto k = a.lo[2]; k < a.hi[2]; ++k)
        hd.at({i, j, k}) = 0.25 * double((i * 31 + j * 17 + k * 3 + me * 7) % 23) - 1.0;
  cuda(cudaMemcpy(dd.data(), hd.data(), bytes_of(hd), cudaMemcpyHostToDevice));
  o.staging_chunk_bytes = 4096;
  halox::make_reverse_exchange(dom, st, halox::reduction::sum, hd).exchange();
  auto rev = halox::make_reverse_exchange(dom, st, halox::reduction::sum, o, dd);
  if (P > 1) CHECK(rev.describe().find("host staging in pieces") != std::string::npos);
  rev.exchange();
  std::vector<double> got(std::size_t(a.volume()));
  cuda(cudaMemcpy(got.data(), dd.data(), bytes_of(dd), cudaMemcpyDeviceToHost));
  long bad = 0;
  for (std::size_t k = 0; k < got.size(); ++k)
    bad += std::memcmp(&got[k], hd.data() + k, sizeof(double)) != 0;
  REQUIRE(boost::mpi::all_reduce(world, bad, std::plus<long>()) == 0);
}

TEST_CASE("a scheduled exchange waited for on another stream") {
  // The solver stamps and exchanges on one stream and reads the halo on a second one. At one
  // rank (local copies alone) the copies run on the first stream itself, so the second must
  // still be made to wait for them.
  boost::mpi::communicator world;
  const halox::extents<3> n{20, 16, 12};
  constexpr auto st = halox::stencil<3>::box(2);
  const halox::cartesian<3> dom(world, n, halox::periodic<3>::all());
  auto u = dom.make_field<double>(st, halox::device);
  auto ex = halox::make_exchange(dom, st, u);
  cudaStream_t a, b;
  cuda(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  cuda(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  const device_errors errors;
  const auto g = geom_of(u, n);
  for (int s = 1; s <= 50; ++s) {
    halox_test::stamp(g, s, a);
    ex.schedule_exchange(a);
    ex.schedule_wait(b);
    halox_test::verify(g, s, errors.get(), b);
    cuda(cudaStreamSynchronize(b));  // the next stamp (on a) must not overwrite what b reads
  }
  const auto bad = errors.count();
  cuda(cudaStreamDestroy(a));
  cuda(cudaStreamDestroy(b));
  REQUIRE(boost::mpi::all_reduce(world, bad, std::plus<unsigned long long>()) == 0);
}

TEST_CASE("a scheduled exchange on a stream its owner destroys afterwards, then on another") {
  // The user's stream of one scheduled exchange is gone before the next one, on a stream made
  // while the first still existed (so the two differ): halox must not touch the old stream
  // again (compute-sanitizer reports any call on it).
  boost::mpi::communicator world;
  const halox::extents<3> n{18, 14, 10};
  constexpr auto st = halox::stencil<3>::box(1);
  const halox::cartesian<3> dom(world, n, halox::periodic<3>::all());
  auto u = dom.make_field<double>(st, halox::device);
  auto ex = halox::make_exchange(dom, st, u);
  const device_errors errors;
  const auto g = geom_of(u, n);
  cudaStream_t old;
  cuda(cudaStreamCreateWithFlags(&old, cudaStreamNonBlocking));
  for (int s = 1; s <= 6; ++s) {
    cudaStream_t next;
    cuda(cudaStreamCreateWithFlags(&next, cudaStreamNonBlocking));
    halox_test::stamp(g, s, old);
    ex.schedule_exchange(old);
    ex.schedule_wait(old);
    halox_test::verify(g, s, errors.get(), old);
    cuda(cudaStreamSynchronize(old));
    cuda(cudaStreamDestroy(old));
    old = next;
  }
  cuda(cudaStreamDestroy(old));
  const auto bad = errors.count();
  REQUIRE(boost::mpi::all_reduce(world, bad, std::plus<unsigned long long>()) == 0);
}

TEST_CASE("reverse exchanges of device fields match the host's, bit for bit") {
  boost::mpi::communicator world;
  const auto op = GENERATE(halox::reduction::sum, halox::reduction::min, halox::reduction::max,
                           halox::reduction::replace);
  // Periodic, halo wider than a rank's box on 4+ ranks: owned cells receive several
  // contributions, from peers and periodic images alike.
  const halox::extents<2> n{12, 7};
  constexpr auto st = halox::stencil<2>::box(2);
  const halox::cartesian<2> dom(world, n, halox::periodic{true, true});
  auto hd = dom.make_field<double>(st);
  auto hi = dom.make_field<int>(st, halox::host, 2);
  auto dd = dom.make_field<double>(st, halox::device);
  auto di = dom.make_field<int>(st, halox::device, 2);
  // Every allocated cell, halo included, holds a value of its own (global cell, rank).
  const auto a = hd.allocated_box();
  for (auto i = a.lo[0]; i < a.hi[0]; ++i)
    for (auto j = a.lo[1]; j < a.hi[1]; ++j) {
      hd.at({i, j}) = 0.1 * double((i * 31 + j * 17 + world.rank() * 7) % 23) - 1.0;
      for (int c = 0; c < 2; ++c)
        hi.at({i, j}, c) = int((i * 13 + j * 5 + c + world.rank()) % 11) - 5;
    }
  cuda(cudaMemcpy(dd.data(), hd.data(), bytes_of(hd), cudaMemcpyHostToDevice));
  cuda(cudaMemcpy(di.data(), hi.data(), bytes_of(hi), cudaMemcpyHostToDevice));
  halox::make_reverse_exchange(dom, st, op, hd, hi).exchange();  // the reference
  auto ex = halox::make_reverse_exchange(dom, st, op, dd, di);
  ex.exchange();
  std::vector<double> gd(std::size_t(a.volume()));
  std::vector<int> gi(std::size_t(a.volume()) * 2);
  cuda(cudaMemcpy(gd.data(), dd.data(), bytes_of(dd), cudaMemcpyDeviceToHost));
  cuda(cudaMemcpy(gi.data(), di.data(), bytes_of(di), cudaMemcpyDeviceToHost));
  long bad = 0;
  for (std::size_t k = 0; k < gd.size(); ++k)
    bad += std::memcmp(&gd[k], hd.data() + k, sizeof(double)) != 0;
  for (std::size_t k = 0; k < gi.size(); ++k) bad += gi[k] != hi.data()[k];
  INFO("reduction " << halox::to_string(op));
  REQUIRE(boost::mpi::all_reduce(world, bad, std::plus<long>()) == 0);
}

TEST_CASE("unstructured reverse sum on device fields matches the host's") {
  boost::mpi::communicator world;
  const int P = world.size(), r = world.rank();
  const long n = 500;
  std::vector<halox::global_id> owned, ghosts;
  for (long k = 0; k < n; ++k) owned.push_back(halox::global_id(r) * n + k);
  if (P > 1)
    for (long k = 0; k < n; k += 3)
      ghosts.push_back(halox::global_id((r + 1 + k % (P - 1)) % P) * n + (k * 7) % n);
  halox::unstructured pat(world, owned, ghosts);
  auto h = pat.make_field<double>(2);
  auto d = pat.make_field<double>(2, halox::entity_layout::entity_major, halox::device);
  for (long k = 0; k < pat.local_count(); ++k)
    for (int c = 0; c < 2; ++c) h(k, c) = 0.37 * double((k * 11 + c * 3 + r) % 29) - 2.0;
  const auto bytes = std::size_t(pat.local_count()) * 2 * sizeof(double);
  cuda(cudaMemcpy(d.data(), h.data(), bytes, cudaMemcpyHostToDevice));
  halox::make_reverse_exchange(pat, halox::reduction::sum, h).exchange();
  halox::make_reverse_exchange(pat, halox::reduction::sum, d).exchange();
  std::vector<double> got(std::size_t(pat.local_count()) * 2);
  cuda(cudaMemcpy(got.data(), d.data(), bytes, cudaMemcpyDeviceToHost));
  long bad = 0;
  for (std::size_t k = 0; k < got.size(); ++k)
    bad += std::memcmp(&got[k], h.data() + k, sizeof(double)) != 0;
  REQUIRE(boost::mpi::all_reduce(world, bad, std::plus<long>()) == 0);
}

TEST_CASE("device reverse sum of a type the kernels cannot add is rejected") {
  boost::mpi::communicator world;
  constexpr auto st = halox::stencil<2>::box(1);
  const halox::cartesian<2> dom(world, {8, 8}, halox::periodic{true, true});
  auto u = dom.make_field<short>(st, halox::device);
  REQUIRE_THROWS_WITH(
      halox::make_reverse_exchange(dom, st, halox::reduction::sum, u),
      Catch::Contains("on device memory supports double, float and 32/64-bit integers"));
  REQUIRE_NOTHROW(halox::make_reverse_exchange(dom, st, halox::reduction::replace, u));
}

TEST_CASE("unstructured device fields: ring plus long-range ghosts, both layouts, forced staging") {
  boost::mpi::communicator world;
  const int P = world.size(), r = world.rank();
  const long n = 1000;  // owned entities per rank
  auto gid = [&](int rank, long k) { return halox::global_id(rank) * 1'000'000'007LL + k; };
  std::vector<halox::global_id> owned, ghosts;
  for (long k = 0; k < n; ++k) owned.push_back(gid(r, k));
  if (P > 1)
    for (long k = 0; k < n; k += 7)
      ghosts.push_back(gid((r + 1 + int(k) % (P - 1)) % P, (k * 13) % n));
  const char* policy = GENERATE("auto", "host_staged", "gpu_aware", "peer_ipc");
  const char* variant = GENERATE("mapped", "copy");  // HALOX_HOST_STAGING
  halox::unstructured pat(world, owned, ghosts);
  const auto layout =
      GENERATE(halox::entity_layout::entity_major, halox::entity_layout::component_major);
  auto dev = pat.make_field<double>(2, layout, halox::device);
  auto host = pat.make_field<double>(2, layout, halox::host);
  const auto bytes = std::size_t(pat.local_count()) * 2 * sizeof(double);
  for (long k = 0; k < pat.local_count(); ++k)
    for (int c = 0; c < 2; ++c) host(k, c) = k < n ? double(owned[k]) * 2 + c : -1.0;
  cuda(cudaMemcpy(dev.data(), host.data(), bytes, cudaMemcpyHostToDevice));
  auto ex = halox::make_exchange(pat, staging_options(policy, variant), dev);
  if (P > 1 && std::string(policy) == "host_staged" && std::string(variant) == "copy")
    REQUIRE_THAT(ex.describe(), Catch::Contains("cudaMemcpyAsync"));
  // auto and peer_ipc take CUDA IPC where every peer's GPU is reachable (as on one node here),
  // else the MPI path auto would choose.
  const std::string path = std::string(policy) == "auto" ? "peer_ipc" : policy;
  if (P > 1) REQUIRE_THAT(ex.describe(), Catch::Contains(path) || Catch::Contains("host_staged"));
  if (P > 1 && path != "peer_ipc") REQUIRE_THAT(ex.describe(), Catch::Contains(path));
  ex.exchange();
  cuda(cudaMemcpy(host.data(), dev.data(), bytes, cudaMemcpyDeviceToHost));
  long bad = 0;
  for (long k = 0; k < pat.local_count(); ++k)
    for (int c = 0; c < 2; ++c) {
      const double want = k < n ? double(owned[k]) * 2 + c : double(ghosts[k - n]) * 2 + c;
      bad += host(k, c) != want;
    }
  REQUIRE(boost::mpi::all_reduce(world, bad, std::plus<long>()) == 0);
}

TEST_CASE("an unknown HALOX_STAGING is an input error on every rank") {
  boost::mpi::communicator world;
  constexpr auto st = halox::stencil<2>::box(1);
  const halox::cartesian<2> dom(world, {8, 8}, halox::periodic{true, true});
  auto u = dom.make_field<double>(st, halox::device);
  ::setenv("HALOX_STAGING", "carrier_pigeon", 1);
  REQUIRE_THROWS_WITH(halox::make_exchange(dom, st, u), Catch::Contains("carrier_pigeon"));
  ::unsetenv("HALOX_STAGING");
}

TEST_CASE("wrapped user device memory; exchange() orders after the legacy default stream") {
  boost::mpi::communicator world;
  const halox::extents<3> n{20, 18, 16};
  constexpr auto st = halox::stencil<3>::box(1);
  const halox::cartesian<3> dom(world, n, halox::periodic<3>::all());
  const auto owned = dom.local_boxes()[0];
  const auto alloc = halox::grow(owned, st.lo, st.hi).size();
  double* raw = nullptr;  // memory from "another library"
  cuda(cudaMalloc(&raw, std::size_t(alloc[0] * alloc[1] * alloc[2]) * sizeof(double)));
  unsigned long long bad = 0;
  {
    auto u = dom.wrap(raw, alloc, st.lo, st.hi, {}, halox::device);
    REQUIRE(u.space() == halox::memory_space::device);
    auto ex = halox::make_exchange(dom, st, u);
    const device_errors errors;
    const auto g = geom_of(u, n);
    for (int s = 1; s <= 50; ++s) {
      halox_test::stamp(g, s, nullptr);  // legacy default stream, no host synchronisation
      ex.exchange();                     // documented: packing sees the legacy stream's work
      halox_test::verify(g, s, errors.get(), nullptr);
    }
    bad = errors.count();
  }
  REQUIRE(boost::mpi::all_reduce(world, bad, std::plus<unsigned long long>()) == 0);
  // Every rank's exchange object is gone (the all-reduce is after every destructor), so no
  // peer still has this memory open through CUDA IPC: now it may be freed (concepts.md).
  cuda(cudaFree(raw));
}

TEST_CASE("schedule_exchange(0) / schedule_wait(0): the legacy default stream, in stream order") {
  // An app whose kernels run on the default stream passes 0, as CUDA means it.
  boost::mpi::communicator world;
  const halox::extents<3> n{20, 16, 12};
  constexpr auto st = halox::stencil<3>::box(1);
  const halox::cartesian<3> dom(world, n, halox::periodic<3>::all());
  auto u = dom.make_field<double>(st, halox::device);
  auto ex = halox::make_exchange(dom, st, u);
  const device_errors errors;
  const auto g = geom_of(u, n);
  for (int s = 1; s <= 50; ++s) {
    halox_test::stamp(g, s, nullptr);
    ex.schedule_exchange(nullptr);
    REQUIRE(ex.in_flight());
    ex.schedule_wait(nullptr);
    REQUIRE_FALSE(ex.in_flight());
    halox_test::verify(g, s, errors.get(), nullptr);
  }
  REQUIRE(boost::mpi::all_reduce(world, errors.count(), std::plus<unsigned long long>()) == 0);
}

TEST_CASE("wrap checks the memory space: host memory as device, device memory as host, too short") {
  boost::mpi::communicator world;
  const halox::extents<2> n{12, 10};
  constexpr auto st = halox::stencil<2>::box(1);
  halox::box_list<2> dom(world, n, halox::periodic<2>::all(),
                         {{{{0, 0}, {6, 10}}, 0}, {{{6, 0}, {12, 10}}, 0}});
  std::vector<double> host(8 * 12, 3.0);
  double* dev = nullptr;
  cuda(cudaMalloc(&dev, 8 * 12 * sizeof(double)));
  halox::field_options o;
  o.name = "u";
  const std::vector<halox::extents<2>> sizes{{8, 12}, {8, 12}};
  if (world.rank() == 0) {
    REQUIRE_THROWS_WITH(
        dom.wrap(std::vector<double*>{dev, host.data()}, sizes, st.lo, st.hi, o, halox::device),
        Catch::Contains("rank 0: field 'u' block 1 wraps 768 bytes: ") &&
            Catch::Contains("it is host memory, given as device memory"));
    REQUIRE_THROWS_WITH(
        dom.wrap(std::vector<double*>{host.data(), dev}, sizes, st.lo, st.hi, o, halox::host),
        Catch::Contains("block 1") && Catch::Contains("given as host memory"));
    REQUIRE_THROWS_WITH(
        dom.wrap(std::vector<double*>{dev, dev + 1}, sizes, st.lo, st.hi, o, halox::device),
        Catch::Contains("block 1") &&
            Catch::Contains(
                "its device allocation holds 760 bytes from there, the block needs 768"));
    const auto f = dom.wrap(std::vector<double*>{dev, dev}, sizes, st.lo, st.hi, o, halox::device);
    REQUIRE(f.block_count() == 2);
  }
  REQUIRE(std::all_of(host.begin(), host.end(), [](double x) { return x == 3.0; }));
  cuda(cudaFree(dev));
}

TEST_CASE("memory CUDA IPC cannot export: the messages into it keep the receive buffer") {
  // A field wrapped around stream-ordered pool memory (cudaMallocAsync), which legacy CUDA IPC
  // cannot export: its senders cannot write straight into its halo, so both sides agree on the
  // receive buffer for those messages, and the exchange stays correct.
  boost::mpi::communicator world;
  const halox::extents<3> n{20, 18, 16};
  constexpr auto st = halox::stencil<3>::box(1);
  const halox::cartesian<3> dom(world, n, halox::periodic<3>::all());
  const auto alloc = halox::grow(dom.local_boxes()[0], st.lo, st.hi).size();
  const auto bytes = std::size_t(alloc[0] * alloc[1] * alloc[2]) * sizeof(double);
  double* raw = nullptr;
  cuda(cudaMallocAsync(reinterpret_cast<void**>(&raw), bytes, nullptr));
  cuda(cudaStreamSynchronize(nullptr));
  cudaIpcMemHandle_t probe{};
  const bool exportable = cudaIpcGetMemHandle(&probe, raw) == cudaSuccess;
  (void)cudaGetLastError();
  unsigned long long bad = 0;
  {
    auto u = dom.wrap(raw, alloc, st.lo, st.hi, {}, halox::device);
    auto ex = halox::make_exchange(dom, st, u);
    const auto d = ex.describe();
    INFO(d);
    if (!exportable) CHECK(d.find("straight into the receiver's halo") == std::string::npos);
    const device_errors errors;
    const auto g = geom_of(u, n);
    for (int s = 1; s <= 20; ++s) {
      halox_test::stamp(g, s, nullptr);
      ex.exchange();
      halox_test::verify(g, s, errors.get(), nullptr);
    }
    bad = errors.count();
  }
  REQUIRE(boost::mpi::all_reduce(world, bad, std::plus<unsigned long long>()) == 0);
  cuda(cudaFreeAsync(raw, nullptr));
  cuda(cudaStreamSynchronize(nullptr));
}

TEST_CASE("fresh device fields are zero before make_field returns: first writes survive") {
  // The user's first writes go on a non-blocking stream right after allocation (what the
  // stream-ordered API invites); with ranks sharing a GPU the zeroing could otherwise run later
  // and wipe them.
  boost::mpi::communicator world;
  const halox::cartesian<3> dom(world, {96, 96, 96}, halox::periodic<3>::all());
  constexpr auto st = halox::stencil<3>::box(2);
  cudaStream_t s;
  cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  long long wrong = 0;
  for (int round = 0; round < 12; ++round) {
    std::vector<halox::field<double, 3>> fs;
    for (int k = 0; k < 4; ++k) {
      fs.push_back(dom.make_field<double>(st, halox::device));
      const long long n = fs.back().allocated_box().volume();
      halox_test::fill_value(fs.back().data(), n, 1000.0 * round + k + 1, s);
    }
    cuda(cudaStreamSynchronize(s));
    for (int k = 0; k < 4; ++k) {
      std::vector<double> h(std::size_t(fs[std::size_t(k)].allocated_box().volume()));
      cuda(cudaMemcpy(h.data(), fs[std::size_t(k)].data(), h.size() * sizeof(double),
                      cudaMemcpyDeviceToHost));
      for (double x : h) wrong += x != 1000.0 * round + k + 1;
    }
  }
  cuda(cudaStreamDestroy(s));
  REQUIRE(boost::mpi::all_reduce(world, wrong, std::plus<long long>()) == 0);
}

// Options for the progress tests: "auto" (device signals between separate GPUs, the MPI
// handshake where ranks share one), "handshake" (CUDA IPC with the MPI handshake everywhere),
// "host_staged".
halox::exchange_options progress_options(const std::string& policy) {
  auto o = staging_options(policy == "handshake" || policy == "nccl" ? "auto" : policy.c_str());
  o.ipc_device_signals = policy != "handshake";
  if (policy == "nccl") {  // every rank a node of its own: every message through NCCL
    o.device_staging = halox::staging::nccl;
    o.node_size = 1;
  }
  return o;
}

TEST_CASE("start() on device fields does not wait for a peer, on every path") {
  boost::mpi::communicator world;
  const int me = world.rank();
  const halox::extents<3> n{20, 18, 16};
  constexpr auto st = halox::stencil<3>::box(1);
  const halox::cartesian<3> dom(world, n, halox::periodic<3>::all());
  auto u = dom.make_field<double>(st, halox::device);
  const std::string policy = GENERATE("auto", "handshake", "host_staged", "nccl");
  CAPTURE(policy);
  int gpus = 0;
  cuda(cudaGetDeviceCount(&gpus));
  if (policy == "nccl" && (!halox::detail::nccl_available() || world.size() > gpus)) {
    WARN("skipped: NCCL needs one GPU per rank");
    return;
  }
  auto ex = halox::make_exchange(dom, st, progress_options(policy), u);
  INFO(ex.describe());
  const device_errors errors;
  const auto g = geom_of(u, n);
  // start() packs after the legacy default stream's work: stamp and verify run there.
  auto stamp = [&](int salt) { halox_test::stamp(g, salt, nullptr); };
  auto verify = [&](int salt) { halox_test::verify(g, salt, errors.get(), nullptr); };
  SECTION(
      "the issue's order: rank 0 starts its second exchange before its peers finished the first") {
    // ... then enters a collective that they reach only before finishing theirs.
    if (me == 0) {
      stamp(1);
      ex.exchange();
      verify(1);
      const int got = boost::mpi::all_reduce(world, 1, std::plus<int>());
      stamp(2);
      auto h = ex.start();
      const int again = boost::mpi::all_reduce(world, got, std::plus<int>());
      h.wait();
      verify(2);
      CHECK(again == world.size() * world.size());
    } else {
      stamp(1);
      auto h = ex.start();
      const int got = boost::mpi::all_reduce(world, 1, std::plus<int>());
      const int again = boost::mpi::all_reduce(world, got, std::plus<int>());
      h.wait();
      verify(1);
      CHECK(again == world.size() * world.size());
      stamp(2);
      auto h2 = ex.start();
      h2.wait();
      verify(2);
    }
  }
  SECTION("a collective between start() and wait() on odd ranks, after wait() on even ranks") {
    for (int step = 1; step <= 12; ++step) {
      stamp(step);
      auto h = ex.start();
      if (me % 2) {
        (void)boost::mpi::all_reduce(world, step, std::plus<int>());
        h.wait();
      } else {
        h.wait();
        (void)boost::mpi::all_reduce(world, step, std::plus<int>());
      }
      verify(step);
    }
  }
  REQUIRE(boost::mpi::all_reduce(world, errors.count(), std::plus<unsigned long long>()) == 0);
}

TEST_CASE("a sender two exchanges ahead of a receiver that never sends back") {
  // Halo on the low side of dimension 0 only, not periodic there: rank r receives from the
  // rank below and sends to the rank above, so no pair talks both ways. The last rank starts
  // late (after a collective the others enter between their second start() and wait()).
  boost::mpi::communicator world;
  const int me = world.rank(), P = world.size();
  const halox::extents<3> n{6 * P, 10, 8};
  const auto st = halox::stencil<3>::star({1, 0, 0}, {0, 0, 0});
  const std::array<bool, 3> per{false, false, false};
  const halox::cartesian<3> dom(world, n, halox::periodic{false, false, false},
                                halox::process_grid<3>{{P, 1, 1}});
  auto u = make_mirrored<double>(dom, st, {});
  const std::string policy = GENERATE("auto", "handshake", "host_staged");
  CAPTURE(policy);
  auto ex = halox::make_exchange(dom, st, progress_options(policy), u.dev);
  INFO(ex.describe());
  // A sender that completes an exchange its receiver has not started is beyond MPI's own
  // guarantee: a CUDA-aware MPI may complete a send of device memory only once the receive is
  // posted (rendezvous). halox's node-local paths and small host-staged messages allow it; a
  // gpu_aware exchange (HALOX_STAGING, or auto under a CUDA-aware MPI) is left out.
  const int mpi_device = ex.describe().find("via gpu_aware") != std::string::npos;
  if (boost::mpi::all_reduce(world, mpi_device, std::plus<int>()) > 0) {
    WARN("skipped: gpu_aware hands device memory to MPI, whose sends may wait for their receiver");
    return;
  }
  // CUDA IPC with device signals (one GPU per rank) writes straight into the receiver's halo:
  // a sender's exchange completes once its receivers have started the same exchange, which is
  // the documented rule (docs/concepts.md, Progress) and all this program may not rely on: its
  // receiver starts only after a collective the sender enters after its first exchange. The
  // rule itself is checked on every path by "start() on device fields does not wait for a
  // peer" (collectives between start() and wait() on some ranks, after wait() on others).
  const int signalled = ex.describe().find("device signals") != std::string::npos;
  if (boost::mpi::all_reduce(world, signalled, std::plus<int>()) > 0) {
    WARN(
        "skipped: CUDA IPC with device signals completes an exchange once the receivers have "
        "started it (the documented rule); a sender cannot run exchanges ahead of them");
    return;
  }
  std::vector<test_support::result>
      results;  // checked together at the end (the checks are collective)
  auto fill = [&](int salt) {
    test_support::fill(u.host, n, {1, salt});
    u.upload();
  };
  auto record = [&](int salt) {
    u.download();
    results.push_back(test_support::check(u.host, st, n, per, {1, salt}));
  };
  if (me != P - 1) {
    fill(1);
    ex.exchange();
    record(1);
    fill(2);
    auto h = ex.start();  // its receiver may not have started exchange 1 yet
    (void)boost::mpi::all_reduce(world, 1, std::plus<int>());
    h.wait();
    record(2);
  } else {
    (void)boost::mpi::all_reduce(world, 1, std::plus<int>());
    for (int step = 1; step <= 2; ++step) {
      fill(step);
      ex.exchange();
      record(step);
    }
  }
  for (int step = 3; step <= 6; ++step) {
    fill(step);
    ex.exchange();
    record(step);
  }
  for (const auto& r : results) HXT_REQUIRE_OK(r);
}

TEST_CASE("CUDA IPC checks message sizes at set-up, on both ranks") {
  // Ranks 0 and 1 build exchanges of different halo widths with the set-up agreement switched
  // off (test-only), so that the CUDA IPC handshake itself meets messages of the wrong size.
  boost::mpi::communicator world;
  const int me = world.rank();
  if (world.size() < 2) return;
  const boost::mpi::communicator pair = world.split(me < 2 ? 0 : 1);
  if (me >= 2) return;
  struct skip_agreement {
    skip_agreement() { halox::detail::testing::skip_peer_agreement = true; }
    ~skip_agreement() { halox::detail::testing::skip_peer_agreement = false; }
  } skip;
  constexpr auto b1 = halox::stencil<3>::box(1), b2 = halox::stencil<3>::box(2);
  const halox::cartesian<3> dom(pair, {12, 10, 8}, halox::periodic<3>::all());
  auto u = dom.make_field<double>(b2, halox::device);
  std::string what;
  try {
    (void)halox::make_exchange(dom, me == 1 ? b2 : b1, progress_options("handshake"), u);
  } catch (const halox::error& e) {
    what = e.what();
  }
  INFO(what);
  CHECK_THAT(what, Catch::Contains("CUDA IPC set-up") && Catch::Contains("expects"));
}

TEST_CASE("a staging policy set on one rank only: each pair takes what both allow") {
  // Rank 0 rules CUDA IPC out; the others allow it: rank 0's pairs use MPI, the rest may not.
  boost::mpi::communicator world;
  const halox::extents<3> n{18, 16, 14};
  constexpr auto st = halox::stencil<3>::box(1);
  const halox::cartesian<3> dom(world, n, halox::periodic<3>::all());
  auto u = dom.make_field<double>(st, halox::device);
  auto ex =
      halox::make_exchange(dom, st, staging_options(world.rank() == 0 ? "host_staged" : "auto"), u);
  const auto d = ex.describe();
  INFO(d);
  if (world.rank() == 0) {  // no route via CUDA IPC, and each node-local pair says why
    CHECK(d.find("via peer_ipc") == std::string::npos);
    CHECK((world.size() == 1 ||
           d.find("[not CUDA IPC: rank 0's staging policy does not take it") != std::string::npos));
  }
  const device_errors errors;
  const auto g = geom_of(u, n);
  for (int s = 1; s <= 5; ++s) {
    halox_test::stamp(g, s, nullptr);
    ex.exchange();
    halox_test::verify(g, s, errors.get(), nullptr);
  }
  REQUIRE(boost::mpi::all_reduce(world, errors.count(), std::plus<unsigned long long>()) == 0);
}

TEST_CASE(
    "staging nccl: every message through NCCL, or NCCL across virtual nodes and CUDA IPC inside") {
  boost::mpi::communicator world;
  const int P = world.size();
  int gpus = 0;
  cuda(cudaGetDeviceCount(&gpus));
  if (!halox::detail::nccl_available() || P > gpus) {
    WARN("skipped: " << (P > gpus ? "ranks share a GPU, which NCCL does not allow"
                                  : halox::detail::nccl_unavailable_reason()));
    return;
  }
  // node_size 1: every rank a node of its own (all NCCL); 2: pairs share CUDA IPC, NCCL between.
  const int node_size = GENERATE(1, 2);
  CAPTURE(node_size);
  const halox::extents<3> n{14, 11, 9};
  const auto st =
      GENERATE(halox::stencil<3>::box(1), halox::stencil<3>::star({0, 1, 2}, {2, 0, 1}));
  const halox::cartesian<3> dom(world, n, halox::periodic<3>::all());
  halox::exchange_options o;
  o.device_staging = halox::staging::nccl;
  o.node_size = node_size;
  three_fields<halox::cartesian<3>> t(dom, st);
  auto ex = halox::make_exchange(dom, st, o, t.a.dev, t.b.dev, t.c.dev);
  const std::string d = ex.describe();
  INFO(d);
  // A peer outside this rank's virtual node is reached through NCCL.
  const int me = world.rank();
  bool remote_peer = false;
  for (int q = 0; q < P; ++q) remote_peer |= q / node_size != me / node_size;
  if (remote_peer) CHECK(d.find("via nccl") != std::string::npos);
  for (int round = 0; round < 6; ++round) {  // blocking, split phase, stream-ordered, twice
    t.fill(n, round);
    run_exchange(ex, round % 3);
    t.check(st, n, {true, true, true}, round);
  }
  // A reverse sum over NCCL matches the host's, bit for bit.
  constexpr auto st2 = halox::stencil<3>::box(2);
  auto hd = dom.make_field<double>(st2);
  auto dd = dom.make_field<double>(st2, halox::device);
  const auto a = hd.allocated_box();
  for (auto i = a.lo[0]; i < a.hi[0]; ++i)
    for (auto j = a.lo[1]; j < a.hi[1]; ++j)
      for (auto k = a.lo[2]; k < a.hi[2]; ++k)
        hd.at({i, j, k}) = 0.25 * double((i * 31 + j * 17 + k * 3 + me * 7) % 23) - 1.0;
  cuda(cudaMemcpy(dd.data(), hd.data(), bytes_of(hd), cudaMemcpyHostToDevice));
  halox::make_reverse_exchange(dom, st2, halox::reduction::sum, hd).exchange();
  halox::make_reverse_exchange(dom, st2, halox::reduction::sum, o, dd).exchange();
  std::vector<double> got(std::size_t(a.volume()));
  cuda(cudaMemcpy(got.data(), dd.data(), bytes_of(dd), cudaMemcpyDeviceToHost));
  long bad = 0;
  for (std::size_t k = 0; k < got.size(); ++k)
    bad += std::memcmp(&got[k], hd.data() + k, sizeof(double)) != 0;
  REQUIRE(boost::mpi::all_reduce(world, bad, std::plus<long>()) == 0);
  // Unstructured device fields over NCCL: a ring with long-range ghosts, values from the ids.
  const long ne = 300;
  std::vector<halox::global_id> owned, ghosts;
  for (long k = 0; k < ne; ++k) owned.push_back(halox::global_id(me) * ne + k);
  if (P > 1)
    for (long k = 0; k < ne; k += 5)
      ghosts.push_back(halox::global_id((me + 1 + k % (P - 1)) % P) * ne + (k * 7) % ne);
  halox::unstructured pat(world, owned, ghosts);
  auto uh = pat.make_field<double>(2);
  auto ud = pat.make_field<double>(2, halox::entity_layout::entity_major, halox::device);
  for (long k = 0; k < pat.local_count(); ++k)
    for (int c = 0; c < 2; ++c) uh(k, c) = k < ne ? double(owned[std::size_t(k)]) * 2 + c : -1.0;
  const auto ubytes = std::size_t(pat.local_count()) * 2 * sizeof(double);
  cuda(cudaMemcpy(ud.data(), uh.data(), ubytes, cudaMemcpyHostToDevice));
  halox::make_exchange(pat, o, ud).exchange();
  cuda(cudaMemcpy(uh.data(), ud.data(), ubytes, cudaMemcpyDeviceToHost));
  long ubad = 0;
  for (std::size_t g = 0; g < ghosts.size(); ++g)
    for (int c = 0; c < 2; ++c) ubad += uh(ne + long(g), c) != double(ghosts[g]) * 2 + c;
  REQUIRE(boost::mpi::all_reduce(world, ubad, std::plus<long>()) == 0);
}

TEST_CASE("staging nccl: calls of 1 MiB and more are registered with NCCL where both sides ask") {
  // Split over the ranks in dimension 0 only: each message is the owned part of a plane, 2 MB
  // in one piece of the field, handed to NCCL from and into the field itself. Registered on
  // both sides where both ask for it (exchange_options::nccl_register); where rank 0 does not,
  // neither side of its messages registers, and the values are the same. The halos of
  // dimension 1 are the rank's own periodic images, 1 MiB and more: copied by the pack kernel.
  boost::mpi::communicator world;
  const int P = world.size(), me = world.rank();
  if (!nccl_pairs(P)) return;
  const halox::extents<3> n{4 * P, 32, 8200};  // a message: 32 * 8200 * 8 B = 2,099,200 B
  static_assert(32 * 8200 * 8 >= halox::detail::nccl_register_min_bytes);
  const auto st = halox::stencil<3>::star({1, 2, 0}, {1, 2, 0});  // own images: 2 * 4*2*8200*8 B
  const halox::cartesian<3> dom(world, n, halox::periodic<3>::all(),
                                halox::process_grid<3>{{P, 1, 1}});
  halox::exchange_options o;
  o.device_staging = halox::staging::nccl;
  o.node_size = 1;
  const bool opt_out = GENERATE(false, true);
  CAPTURE(opt_out);
  o.nccl_register = !(opt_out && me == 0);
  auto a = make_mirrored<double>(dom, st, {});
  {
    auto ex = halox::make_exchange(dom, st, o, a.dev);
    const std::string d = ex.describe();
    INFO(d);
    CHECK(d.find("zero-copy") != std::string::npos);
    // Each message's line: registered unless rank 0 opted out and it is one of rank 0's.
    int lines = 0;
    for (std::size_t at = 0; at < d.size();) {
      const std::size_t end = std::min(d.find('\n', at), d.size());
      const std::string line = d.substr(at, end - at);
      at = end + 1;
      const std::size_t to = line.find("send to "), from = line.find("recv from ");
      if (to == std::string::npos && from == std::string::npos) continue;
      const int peer = std::atoi(line.c_str() + (to != std::string::npos ? to + 8 : from + 10));
      INFO(line);
      CHECK((line.find("registered with NCCL") != std::string::npos) ==
            !(opt_out && (me == 0 || peer == 0)));
      ++lines;
    }
    CHECK(lines == (P == 2 ? 2 : 4));
    for (int round = 0; round < 6; ++round) {  // blocking, split phase, stream-ordered, twice
      test_support::fill(a.host, n, {1, round});
      a.upload();
      run_exchange(ex, round % 3);
      a.download();
      HXT_REQUIRE_OK(test_support::check(a.host, st, n, {true, true, true}, {1, round}));
    }
  }
}

TEST_CASE("staging nccl zero-copy: contiguous halos straight from and into the fields") {
  // Halo only in dimension 0, split over the ranks: each message is whole planes of each field.
  // Field a is halox's own (planes contiguous: NCCL reads and writes the field itself); field b
  // is wrapped on odd ranks with one column of extra padding in dimension 2 (planes not
  // contiguous: packed there), so every pair mixes a zero-copy side with a packed one and both
  // must cut the message alike.
  boost::mpi::communicator world;
  const int P = world.size(), me = world.rank();
  if (!nccl_pairs(P)) return;
  const halox::extents<3> n{4 * P, 6, 5};
  const auto st = halox::stencil<3>::star({1, 0, 0}, {1, 0, 0});
  const halox::cartesian<3> dom(world, n, halox::periodic<3>::all(),
                                halox::process_grid<3>{{P, 1, 1}});
  halox::exchange_options o;
  o.device_staging = halox::staging::nccl;
  o.node_size = 1;
  auto a = make_mirrored<double>(dom, st, {});
  const bool padded = me % 2 == 1;
  const auto own = dom.local_boxes()[0].size();
  const halox::extents<3> alloc{own[0] + 2, own[1], own[2] + (padded ? 1 : 0)};
  const halox::widths<3> lo{1, 0, 0}, hi{1, 0, padded ? 1 : 0};
  const auto cells = std::size_t(alloc[0] * alloc[1] * alloc[2]);
  std::vector<double> b_host(cells);
  double* b_dev = nullptr;
  cuda(cudaMalloc(&b_dev, cells * sizeof(double)));
  mirrored<double, 3> b{dom.wrap(b_dev, alloc, lo, hi, {}, halox::device),
                        dom.wrap(b_host.data(), alloc, lo, hi)};
  {
    auto ex = halox::make_exchange(dom, st, o, a.dev, b.dev);
    const std::string d = ex.describe();
    INFO(d);
    // Even ranks hand NCCL their fields; odd ranks pack, in the pieces the even side cut: one
    // plane per field and neighbour (both neighbours are the one peer at 2 ranks).
    const std::string calls = std::to_string(P == 2 ? 4 : 2) + " NCCL calls";
    CHECK(d.find((padded ? "packed, " : "zero-copy: ") + calls) != std::string::npos);
    CHECK((d.find("zero-copy") != std::string::npos) == !padded);
    for (int round = 0; round < 6; ++round) {  // blocking, split phase, stream-ordered, twice
      test_support::fill(a.host, n, {1, round});
      test_support::fill(b.host, n, {2, round});
      a.upload(), b.upload();
      run_exchange(ex, round % 3);
      a.download(), b.download();
      HXT_REQUIRE_OK(test_support::check(a.host, st, n, {true, true, true}, {1, round}));
      HXT_REQUIRE_OK(test_support::check(b.host, st, n, {true, true, true}, {2, round}));
    }
  }
  cuda(cudaFree(b_dev));
}

namespace {

// The transports of the diagonal-neighbour test: auto (CUDA IPC with device signals between
// separate GPUs), the MPI handshake, both host staging variants, NCCL between virtual nodes of
// one rank, and auto between virtual nodes (NCCL where built and one GPU per rank, else host
// staging).
halox::exchange_options diagonal_options(const std::string& path) {
  halox::exchange_options o;
  if (path == "handshake") o.ipc_device_signals = false;
  if (path == "host_staged" || path == "host_staged_copy")
    o.device_staging = halox::staging::host_staged;
  o.host_staging_copies = path == "host_staged_copy";
  if (path == "nccl") o.device_staging = halox::staging::nccl;
  if (path == "nccl" || path == "nodes") o.node_size = 1;
  return o;
}

// 2 x (P/2) where P is even (2 x 2 at 4 ranks: every rank has a diagonal neighbour), else P x 1.
std::array<int, 2> diagonal_grid(int P) {
  return P % 2 == 0 ? std::array<int, 2>{2, P / 2} : std::array<int, 2>{P, 1};
}

}  // namespace

TEST_CASE(
    "diagonal GPU neighbours: 2x2 and 2x2x1 grids, box stencils, several fields, every path") {
  boost::mpi::communicator world;
  const int P = world.size();
  const std::string path =
      GENERATE("auto", "handshake", "host_staged", "host_staged_copy", "nccl", "nodes");
  const int w = GENERATE(1, 2);
  const bool periodic = GENERATE(true, false);
  CAPTURE(path, w, periodic);
  if (path == "nccl" && !nccl_pairs(P)) return;
  const auto g = diagonal_grid(P);
  const auto o = diagonal_options(path);
  const halox::stencil<3> st3 = halox::stencil<3>::box(w);
  const halox::extents<3> n3{6 * g[0], 5 * g[1], 4};
  const halox::cartesian<3> d3(world, n3, halox::periodic<3>{periodic, periodic, true},
                               halox::process_grid<3>{{g[0], g[1], 1}});
  three_fields<halox::cartesian<3>> t(d3, st3);
  auto ex3 = halox::make_exchange(d3, st3, o, t.a.dev, t.b.dev, t.c.dev);
  INFO(ex3.describe());
  // 2-D: a double field and a float field of 2 planar components.
  const halox::stencil<2> st2 = halox::stencil<2>::box(w);
  const halox::extents<2> n2{7 * g[0], 6 * g[1]};
  const halox::cartesian<2> d2(world, n2, halox::periodic<2>{periodic, periodic},
                               halox::process_grid<2>{{g[0], g[1]}});
  auto p = make_mirrored<double>(d2, st2, {});
  auto q = make_mirrored<float>(d2, st2, three_fields<halox::cartesian<3>>::planar_pair());
  auto ex2 = halox::make_exchange(d2, st2, o, p.dev, q.dev);
  for (int round = 0; round < 3; ++round) {  // blocking, split phase, stream-ordered
    t.fill(n3, round);
    run_exchange(ex3, round);
    t.check(st3, n3, {periodic, periodic, true}, round);
    test_support::fill(p.host, n2, {4, round});
    test_support::fill(q.host, n2, {5, round});
    p.upload(), q.upload();
    run_exchange(ex2, round);
    p.download(), q.download();
    HXT_REQUIRE_OK(test_support::check(p.host, st2, n2, {periodic, periodic}, {4, round}));
    HXT_REQUIRE_OK(test_support::check(q.host, st2, n2, {periodic, periodic}, {5, round}));
  }
}
