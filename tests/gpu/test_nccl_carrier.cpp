// GPU + NCCL: the shared NCCL communicator (one per group of ranks, kept until MPI_Finalize)
// and nccl_carrier (messages between device buffers as one NCCL group). Ranks exchange with both
// ring neighbours; every received element encodes its sender, message, round and index and
// is checked on the receiver. Skips (exit 77) without a GPU, and when this node has more ranks
// than GPUs: NCCL refuses two ranks of one communicator on one GPU.
#include <cuda_runtime.h>
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <mpi.h>

#include "gpu_setup.hpp"
#include "transport/nccl_carrier.hpp"

using halox::detail::message;
using halox::detail::nccl_carrier;
using halox::detail::nccl_comm;

namespace {

const halox::detail::exchange_program no_program;  // paths built from messages alone

// Runs before Catch's session and before MPI_Init, like gpu_test::skip_without_gpu (which also
// picks device = node-local rank % GPU count): the node-local rank count comes from the
// launcher's environment (Open MPI, MPICH/Hydra); without one, a single local rank.
const bool skipped = [] {
  gpu_test::skip_without_gpu();
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  if (local == nullptr) local = std::getenv("MPI_LOCALNRANKS");
  const int ranks = local != nullptr ? std::atoi(local) : 1;
  const int gpus = halox::detail::device_count();
  if (ranks > gpus) {
    std::printf(
        "SKIP: %d ranks on this node, %d GPU(s): NCCL needs a GPU per rank of a communicator\n",
        ranks, gpus);
    std::exit(77);
  }
  return true;
}();
using gpu_test::cuda;

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

// Device memory freed at scope exit.
struct device_buffer {
  std::byte* p = nullptr;
  std::size_t bytes = 0;
  explicit device_buffer(std::size_t n) : bytes(n) { cuda(cudaMalloc(&p, n)); }
  ~device_buffer() { (void)cudaFree(p); }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
};

struct stream_holder {
  cudaStream_t s = nullptr;
  stream_holder() { cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~stream_holder() { (void)cudaStreamDestroy(s); }
  stream_holder(const stream_holder&) = delete;
  stream_holder& operator=(const stream_holder&) = delete;
};

using value = std::uint64_t;
// Element i of message `dir` (0: to the right neighbour, 1: to the left) from `sender`, round
// `round`, exchange `salt`: all five recoverable from the value.
value encode(int sender, int salt, int dir, int round, std::size_t i) {
  return value(sender) << 48 | value(salt) << 40 | value(dir) << 36 | value(round) << 28 | value(i);
}
const value untouched = 0xDEADBEEFDEADBEEFull;

// Sizes (elements) of a sender's messages: different per sender and direction, so a message
// matched with the wrong receive shows.
std::size_t right_elems(int sender) {
  return 1000 + 7 * std::size_t(sender);
}
std::size_t left_elems(int sender) {
  return 300 + 5 * std::size_t(sender);
}
constexpr std::size_t gap = 3;  // elements between two messages in a buffer: must stay untouched

// One rank's side of the ring exchange: messages, buffers and their expected contents.
struct ring {
  int me, n, right, left, salt;
  std::vector<message> sends, recvs;
  std::size_t send_elems, recv_elems;
  device_buffer send, recv;

  ring(int salt_, int me_, int n_)
      : me(me_),
        n(n_),
        right((me_ + 1) % n_),
        left((me_ + n_ - 1) % n_),
        salt(salt_),
        send_elems(right_elems(me_) + gap + left_elems(me_)),
        recv_elems(right_elems(left) + gap + left_elems(right)),
        send(send_elems * sizeof(value)),
        recv(recv_elems * sizeof(value)) {
    const std::size_t b = sizeof(value);
    // To the right, an empty message (dropped on both sides), to the left; received in the
    // same order from the left and from the right.
    sends = {{right, 0, right_elems(me) * b},
             {right, 0, 0},
             {left, (right_elems(me) + gap) * b, left_elems(me) * b}};
    recvs = {{left, 0, right_elems(left) * b},
             {left, 0, 0},
             {right, (right_elems(left) + gap) * b, left_elems(right) * b}};
  }

  std::vector<value> send_values(int round) const {
    std::vector<value> v(send_elems, untouched);
    for (std::size_t i = 0; i < right_elems(me); ++i) v[i] = encode(me, salt, 0, round, i);
    for (std::size_t i = 0; i < left_elems(me); ++i)
      v[right_elems(me) + gap + i] = encode(me, salt, 1, round, i);
    return v;
  }
  std::vector<value> expected(int round) const {
    std::vector<value> v(recv_elems, untouched);
    for (std::size_t i = 0; i < right_elems(left); ++i) v[i] = encode(left, salt, 0, round, i);
    for (std::size_t i = 0; i < left_elems(right); ++i)
      v[right_elems(left) + gap + i] = encode(right, salt, 1, round, i);
    return v;
  }
  // Fills the buffers for `round`: the send buffer with encoded values, the receive buffer with
  // `untouched`. From pageable memory cudaMemcpy may return before the data lands, and NCCL
  // runs on a non-blocking stream: wait for the copies.
  void fill(int round) const {
    const auto s = send_values(round);
    const std::vector<value> r(recv_elems, untouched);
    cuda(cudaMemcpy(send.p, s.data(), send.bytes, cudaMemcpyHostToDevice));
    cuda(cudaMemcpy(recv.p, r.data(), recv.bytes, cudaMemcpyHostToDevice));
    cuda(cudaDeviceSynchronize());
  }
  // Elements of the receive buffer that differ from what `round` should have left there.
  std::size_t wrong(int round) const {
    std::vector<value> got(recv_elems);
    cuda(cudaMemcpy(got.data(), recv.p, recv.bytes, cudaMemcpyDeviceToHost));
    const auto want = expected(round);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < recv_elems; ++i) {
      if (got[i] != want[i] && bad++ < 3)
        UNSCOPED_INFO("rank " << me << " element " << i << ": got " << std::hex << got[i]
                              << ", want " << want[i] << std::dec);
    }
    return bad;
  }
  nccl_carrier path(std::shared_ptr<nccl_comm> c) const {
    return nccl_carrier(std::move(c), sends, recvs, send.p, send.bytes, recv.p, recv.bytes);
  }
};

// Rounds of exchanges through `p` on `stream`, each checked after the stream finished.
void run_rounds(const ring& r, nccl_carrier& p, cudaStream_t stream, int rounds) {
  for (int round = 0; round < rounds; ++round) {
    r.fill(round);
    p.enqueue(stream);
    cuda(cudaStreamSynchronize(stream));
    p.check_async();
    CHECK(r.wrong(round) == 0);
  }
}

}  // namespace

TEST_CASE("nccl_carrier: ring exchange between device buffers", "[nccl]") {
  INFO(halox::detail::nccl_unavailable_reason());
  REQUIRE(halox::detail::nccl_available());
  const int me = world_rank(), n = world_size();
  auto c = nccl_comm::shared(MPI_COMM_WORLD);
  REQUIRE(c->rank() == me);
  REQUIRE(c->size() == n);
  int dev = -1;
  cuda(cudaGetDevice(&dev));
  REQUIRE(c->device() == dev);

  ring r(1, me, n);
  nccl_carrier p = r.path(c);
  CHECK(p.send_count() == 2);  // the empty message is dropped
  CHECK(p.recv_count() == 2);
  stream_holder s;
  run_rounds(r, p, s.s, 5);
}

TEST_CASE("nccl_comm: users over the same ranks share one NCCL communicator", "[nccl]") {
  const int me = world_rank(), n = world_size();
  // Made here, or kept from an earlier case: the process holds it until MPI_Finalize.
  auto first = nccl_comm::shared(MPI_COMM_WORLD);
  const long created0 = nccl_comm::created_count(), live0 = nccl_comm::live_count();
  const nccl_comm* kept = first.get();
  first.reset();
  {
    auto a = nccl_comm::shared(MPI_COMM_WORLD);
    auto b = nccl_comm::shared(MPI_COMM_WORLD);
    CHECK(a.get() == b.get());
    CHECK(a.get() == kept);
    CHECK(nccl_comm::created_count() == created0);
    CHECK(nccl_comm::live_count() == live0);

    // Exchange objects each hold a duplicate of the domain's communicator: congruent, so they
    // share it too, through the exchange's entry point.
    MPI_Comm d1 = MPI_COMM_NULL, d2 = MPI_COMM_NULL;
    REQUIRE(MPI_Comm_dup(MPI_COMM_WORLD, &d1) == MPI_SUCCESS);
    REQUIRE(MPI_Comm_dup(MPI_COMM_WORLD, &d2) == MPI_SUCCESS);
    ring ra(2, me, n), rb(3, me, n);
    auto pa = nccl_carrier::attach(d1, false, no_program, ra.sends, ra.send.p, ra.recvs, ra.recv.p,
                                   false);
    auto pb = nccl_carrier::attach(d2, false, no_program, rb.sends, rb.send.p, rb.recvs, rb.recv.p,
                                   false);
    CHECK(&pa->comm() == a.get());
    CHECK(&pb->comm() == a.get());
    CHECK(nccl_comm::created_count() == created0);
    CHECK_THAT(pa->describe(), Catch::Contains("NCCL 2.") && Catch::Contains("shared by 4"));

    // Their groups, on two streams, in the same order on every rank.
    stream_holder s1, s2;
    for (int round = 0; round < 3; ++round) {
      ra.fill(round);
      rb.fill(round);
      pa->enqueue(s1.s);
      pb->enqueue(s2.s);
      cuda(cudaStreamSynchronize(s1.s));
      cuda(cudaStreamSynchronize(s2.s));
      pa->check_async();
      CHECK(ra.wrong(round) == 0);
      CHECK(rb.wrong(round) == 0);
    }

    // Users' communicators may go first; the last user keeps the NCCL communicator alive.
    REQUIRE(MPI_Comm_free(&d1) == MPI_SUCCESS);
    REQUIRE(MPI_Comm_free(&d2) == MPI_SUCCESS);
    a.reset();
    b.reset();
    pa.reset();
    CHECK(nccl_comm::live_count() == live0);
    rb.fill(3);
    pb->enqueue(s2.s);
    cuda(cudaStreamSynchronize(s2.s));
    CHECK(rb.wrong(3) == 0);
  }
  // With no user left it is still kept: a later user gets the same one, no new initialisation.
  CHECK(nccl_comm::live_count() == live0);
  auto again = nccl_comm::shared(MPI_COMM_WORLD);
  CHECK(nccl_comm::created_count() == created0);
  CHECK(nccl_comm::live_count() == live0);
  ring r(5, me, n);
  nccl_carrier p = r.path(again);
  stream_holder s;
  run_rounds(r, p, s.s, 2);
}

TEST_CASE("nccl_comm: ranks that released their users at different times reuse the same one",
          "[nccl]") {
  const int me = world_rank(), n = world_size();
  auto first = nccl_comm::shared(MPI_COMM_WORLD);
  const long created0 = nccl_comm::created_count();
  const nccl_comm* was = first.get();
  if (me == 0) first.reset();  // rank 0 alone lets go: the process still keeps it
  auto second = nccl_comm::shared(MPI_COMM_WORLD);
  CHECK(second.get() == was);
  CHECK(nccl_comm::created_count() == created0);
  ring r(6, me, n);
  nccl_carrier p = r.path(second);
  stream_holder s;
  run_rounds(r, p, s.s, 1);
}

TEST_CASE("nccl_comm: the same ranks in another order get their own", "[nccl]") {
  const int me = world_rank(), n = world_size();
  auto world = nccl_comm::shared(MPI_COMM_WORLD);
  const long created0 = nccl_comm::created_count();
  MPI_Comm reversed = MPI_COMM_NULL;
  REQUIRE(MPI_Comm_split(MPI_COMM_WORLD, 0, n - 1 - me, &reversed) == MPI_SUCCESS);
  auto c = nccl_comm::shared(reversed);
  // One rank: the same order, so the same communicator.
  CHECK((c.get() == world.get()) == (n == 1));
  CHECK(nccl_comm::created_count() == created0 + (n == 1 ? 0 : 1));
  CHECK(c->rank() == n - 1 - me);
  CHECK(c->size() == n);
  // Ranks as the reversed communicator numbers them.
  ring r(4, n - 1 - me, n);
  nccl_carrier p = r.path(c);
  stream_holder s;
  run_rounds(r, p, s.s, 2);
  REQUIRE(MPI_Comm_free(&reversed) == MPI_SUCCESS);
}

TEST_CASE("nccl_carrier: bad messages are errors before anything is sent", "[nccl]") {
  const int me = world_rank(), n = world_size();
  auto c = nccl_comm::shared(MPI_COMM_WORLD);
  device_buffer buf(64);
  const std::vector<message> none;
  auto path_with = [&](std::vector<message> sends, std::vector<message> recvs) {
    nccl_carrier p(c, sends, recvs, buf.p, buf.bytes, buf.p, buf.bytes);
  };
  auto message_of = [&](auto&& f) -> std::string {
    try {
      f();
    } catch (const halox::error& e) {
      return e.what();
    }
    return "no error";
  };
  const std::string rank = "rank " + std::to_string(me);

  // A peer outside the communicator, either way, either side.
  std::string what = message_of([&] { path_with({{n, 0, 8}}, none); });
  CHECK_THAT(what, Catch::Contains(rank) && Catch::Contains("send message #0") &&
                       Catch::Contains("peer " + std::to_string(n)) &&
                       Catch::Contains("outside the communicator of " + std::to_string(n)));
  what = message_of([&] { path_with(none, {{0, 0, 8}, {-1, 8, 8}}); });
  CHECK_THAT(what, Catch::Contains(rank) && Catch::Contains("receive message #1") &&
                       Catch::Contains("peer -1"));

  // A message past its buffer's end, and one whose end overflows.
  what = message_of([&] { path_with({{0, 60, 8}}, none); });
  CHECK_THAT(what, Catch::Contains("8 bytes at offset 60 does not fit its 64-byte buffer"));
  what = message_of([&] { path_with(none, {{0, 8, std::size_t(-4)}}); });
  CHECK_THAT(what, Catch::Contains("receive message #0") && Catch::Contains("64-byte buffer"));

  // Host memory is not a device buffer.
  std::vector<std::byte> host(64);
  what = message_of([&] {
    nccl_carrier p(c, {{0, 0, 8}}, {{0, 0, 8}}, host.data(), host.size(), buf.p, buf.bytes);
  });
  CHECK_THAT(what, Catch::Contains("send buffer is neither device memory"));

  // The exchange's entry point refuses ranks sharing a GPU (every rank: locality is agreed).
  what = message_of([&] {
    nccl_carrier::attach(MPI_COMM_WORLD, true, no_program, none, nullptr, none, nullptr, false);
  });
  CHECK_THAT(what, Catch::Contains(rank) && Catch::Contains("share a GPU"));

  // A valid path still works after the rejected ones (nothing was enqueued).
  ring r(5, me, n);
  nccl_carrier p = r.path(c);
  stream_holder s;
  run_rounds(r, p, s.s, 1);
}

// A chain's use: a variable path whose calls change size every group (nccl_carrier::assign), each
// message's size a function of its sender, direction and round, so that a call matched with
// the wrong receive or left at an old size shows.
TEST_CASE("nccl_carrier: variable calls set per group", "[nccl]") {
  const int me = world_rank(), n = world_size();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  auto elems = [](int sender, int dir, int round) {
    return std::size_t(50 + 40 * ((round * 7 + sender * 3 + dir) % 5));
  };
  constexpr std::size_t most = 50 + 40 * 4;
  constexpr std::size_t b = sizeof(value);
  auto c = nccl_comm::shared(MPI_COMM_WORLD);
  nccl_carrier p(c, {right, left}, 2);
  p.connect();
  device_buffer out(2 * most * b), in(2 * most * b);
  stream_holder s;
  for (int round = 0; round < 6; ++round) {
    std::vector<value> host(2 * most, untouched);
    for (int dir = 0; dir < 2; ++dir)
      for (std::size_t i = 0; i < elems(me, dir, round); ++i)
        host[std::size_t(dir) * most + i] = encode(me, 9, dir, round, i);
    cuda(cudaMemcpy(out.p, host.data(), out.bytes, cudaMemcpyHostToDevice));
    const std::vector<value> blank(2 * most, untouched);
    cuda(cudaMemcpy(in.p, blank.data(), in.bytes, cudaMemcpyHostToDevice));
    // To the right (dir 0), then to the left; from the left, then from the right.
    const halox::detail::nccl_call sends[2] = {{right, out.p, elems(me, 0, round) * b},
                                               {left, out.p + most * b, elems(me, 1, round) * b}};
    const halox::detail::nccl_call recvs[2] = {
        {left, in.p, elems(left, 0, round) * b},
        {right, in.p + most * b, elems(right, 1, round) * b}};
    p.assign(sends, 2, recvs, 2);
    p.enqueue(s.s);
    cuda(cudaStreamSynchronize(s.s));
    p.check_async();
    std::vector<value> got(2 * most);
    cuda(cudaMemcpy(got.data(), in.p, in.bytes, cudaMemcpyDeviceToHost));
    std::size_t bad = 0;
    for (int dir = 0; dir < 2; ++dir) {
      const int from = dir == 0 ? left : right;
      for (std::size_t i = 0; i < most; ++i) {
        const value want = i < elems(from, dir, round) ? encode(from, 9, dir, round, i) : untouched;
        bad += got[std::size_t(dir) * most + i] != want;
      }
    }
    CHECK(bad == 0);
  }
  // More calls than the path was made for, and a peer it was not made for, are refused.
  const halox::detail::nccl_call three[3] = {
      {right, out.p, 8}, {right, out.p, 8}, {right, out.p, 8}};
  CHECK_THROWS_WITH(p.assign(three, 3, nullptr, 0),
                    Catch::Contains("in one group of a carrier made for 2"));
  if (n > 3) {  // (me + 2) % n is then neither neighbour
    const halox::detail::nccl_call far[1] = {{(me + 2) % n, out.p, 8}};
    CHECK_THROWS_WITH(p.assign(far, 1, nullptr, 0), Catch::Contains("not a peer of this path"));
  }
}
