// GPU + NCCL: halox::chain with device buffers and staging nccl (sizes and payloads as NCCL
// groups on halox's stream): rounds, split phase, stream-ordered rounds and
// gather_left/gather_right, checked against the host model in chain_model.hpp; the NCCL
// communicator shared with other chains and exchange objects on the same ranks; forced NCCL where
// it cannot be used is an error on every rank. On one rank the periodic chain is its own left and
// right neighbour: NCCL sends to itself, on one GPU. Cases that need NCCL skip (WARN) where it is
// not built or ranks outnumber the GPUs (NCCL refuses two ranks of one communicator on one GPU);
// the program skips (exit 77) without a GPU.
#include <cuda_runtime.h>
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "../chain_model.hpp"
#include "chain_device_check.hpp"
#include "gpu_setup.hpp"
#include "transport/nccl_comm.hpp"

namespace mpi = boost::mpi;
using namespace chain_model;
using halox::detail::nccl_comm;

namespace {

const bool skipped_without_gpu = gpu_test::skip_without_gpu();
using gpu_test::cuda;

constexpr halox::chain_options over_nccl(bool periodic) {
  return {.periodic = periodic, .space = halox::device, .device_staging = halox::staging::nccl};
}

// Whether NCCL can carry a chain over `world` here; if not, says why (WARN) for the caller to
// return.
bool nccl_usable(const mpi::communicator& world) {
  const int gpus = halox::detail::device_count();
  if (halox::detail::nccl_available() && world.size() <= gpus) return true;
  WARN("skipped: " << (halox::detail::nccl_available()
                           ? "ranks share a GPU, which NCCL does not allow"
                           : halox::detail::nccl_unavailable_reason()));
  return false;
}

// Runs `make` on every rank and requires that every rank throws halox::error containing `what`
// (the rank that found the problem) or the quote of it (the others).
template <class F>
void every_rank_throws(F make, const std::string& what) {
  std::string msg;
  try {
    make();
  } catch (const halox::error& e) {
    msg = e.what();
  }
  INFO(msg);
  CHECK(msg.find(what) != std::string::npos);
}

}  // namespace

TEST_CASE("chain over NCCL: blocking and split-phase rounds") {
  mpi::communicator world;
  if (!nccl_usable(world)) return;
  const int me = world.rank();
  const bool periodic = GENERATE(false, true);
  CAPTURE(periodic);
  halox::chain<i64> ch(world, over_nccl(periodic));
  REQUIRE(ch.device_staging() == halox::staging::nccl);
  for (int round = 0; round < 6; ++round) {
    const device_vector tl(payload(me, round, 0)), tr(payload(me, round, 1));
    if (round % 2 == 0) {
      check_round(ch, ch.exchange(tl.span(), tr.span()), round);
    } else {
      auto h = ch.start(tl.span(), tr.span());
      while (!h.test()) {
      }
      check_round(ch, h.wait(), round);
      check_round(ch, h.wait(), round);  // idempotent
    }
  }
}

TEST_CASE("chain over NCCL: gather_left and gather_right against the host model") {
  mpi::communicator world;
  if (!nccl_usable(world)) return;
  const int P = world.size(), me = world.rank();
  const bool periodic = GENERATE(false, true);
  const auto seed = GENERATE(1u, 5u);
  const layout l = make_layout(P, seed);
  const device_vector mine(l.slice(me));
  halox::chain<i64> ch(world, over_nccl(periodic));
  const std::size_t N = l.total();
  for (const std::size_t w : {std::size_t(0), std::size_t(1), std::size_t(17), N + 3,
                              std::numeric_limits<std::size_t>::max()}) {
    CAPTURE(periodic, seed, w);
    REQUIRE(download(ch.gather_left(mine.span(), w)) == expected_context(l, me, w, periodic, true));
    REQUIRE(download(ch.gather_right(mine.span(), w)) ==
            expected_context(l, me, w, periodic, false));
  }
}

TEST_CASE("chain over NCCL: stream-ordered rounds") {
  mpi::communicator world;
  if (!nccl_usable(world)) return;
  const int me = world.rank();
  halox::chain<i64> ch(world, over_nccl(true));
  cudaStream_t s = nullptr;
  cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (int round = 0; round < 4; ++round) {
    // The payload is written on the stream itself: the chain's NCCL group must wait for it.
    const auto hl = payload(me, round, 0), hr = payload(me, round, 1);
    const device_vector tl(std::vector<i64>(hl.size(), -1)), tr(std::vector<i64>(hr.size(), -1));
    cuda(cudaMemcpyAsync(tl.p, hl.data(), hl.size() * sizeof(i64), cudaMemcpyHostToDevice, s));
    cuda(cudaMemcpyAsync(tr.p, hr.data(), hr.size() * sizeof(i64), cudaMemcpyHostToDevice, s));
    ch.schedule_exchange(s, tl.span(), tr.span());
    check_round(ch, ch.schedule_wait(s), round, s);
  }
  cuda(cudaStreamDestroy(s));
}

TEST_CASE("chain over NCCL: one NCCL communicator shared with chains and exchange objects") {
  mpi::communicator world;
  if (!nccl_usable(world)) return;
  const int me = world.rank();
  const long before = nccl_comm::created_count();
  halox::chain<i64> a(world, over_nccl(true));
  const long made = nccl_comm::created_count();
  CHECK(made - before <= 1);  // none where an older user still holds one
  halox::chain<i64> b(world, over_nccl(false));
  const auto st = halox::stencil<1>::star(1);
  const halox::cartesian<1> dom(world, {64}, halox::periodic<1>::all());
  auto f = dom.make_field<double>(st, halox::device);
  halox::exchange_options o;
  o.device_staging = halox::staging::nccl;
  auto ex = halox::make_exchange(dom, st, o, f);
  CHECK(nccl_comm::created_count() == made);
  CHECK(nccl_comm::live_count() == 1);
  // Their groups interleave on the one communicator, in the same order on every rank.
  for (int round = 0; round < 3; ++round) {
    const device_vector tl(payload(me, round, 0)), tr(payload(me, round, 1));
    auto h = a.start(tl.span(), tr.span());
    ex.exchange();
    check_round(b, b.exchange(tl.span(), tr.span()), round);
    check_round(a, h.wait(), round);
  }
}

TEST_CASE("chain over NCCL: HALOX_STAGING overrides the option of device chains") {
  mpi::communicator world;
  REQUIRE(setenv("HALOX_STAGING", "host_staged", 1) == 0);
  {
    halox::chain<i64> ch(world, over_nccl(true));
    CHECK(ch.device_staging() == halox::staging::host_staged);
    const device_vector tl(payload(world.rank(), 0, 0)), tr(payload(world.rank(), 0, 1));
    check_round(ch, ch.exchange(tl.span(), tr.span()), 0);
  }
  REQUIRE(setenv("HALOX_STAGING", "nccl", 1) == 0);
  {
    halox::chain<i64> host(world, {.periodic = true});  // host chains ignore it
    CHECK(host.device_staging() == halox::staging::automatic);
  }
  if (nccl_usable(world)) {
    halox::chain<i64> ch(world, {.periodic = true, .space = halox::device});
    CHECK(ch.device_staging() == halox::staging::nccl);
    const device_vector tl(payload(world.rank(), 1, 0)), tr(payload(world.rank(), 1, 1));
    check_round(ch, ch.exchange(tl.span(), tr.span()), 1);
  }
  REQUIRE(unsetenv("HALOX_STAGING") == 0);
  halox::chain<i64> ch(world, {.periodic = true, .space = halox::device});
  CHECK(ch.device_staging() == halox::staging::host_staged);  // auto keeps pinned staging
}

TEST_CASE("chain over NCCL: where it cannot be used, every rank throws at construction") {
  mpi::communicator world;
  const int P = world.size();
  every_rank_throws([&] { halox::chain<i64> ch(world, {.device_staging = halox::staging::nccl}); },
                    "on a host chain");
  every_rank_throws(
      [&] {
        halox::chain<i64> ch(world,
                             {.space = halox::device, .device_staging = halox::staging::gpu_aware});
      },
      "chain_options::device_staging = 'gpu_aware'");
  if (P > 1) {  // rank 0 forces NCCL, the others keep auto
    every_rank_throws(
        [&] {
          halox::chain<i64> ch(
              world, {.space = halox::device,
                      .device_staging =
                          world.rank() == 0 ? halox::staging::nccl : halox::staging::automatic});
        },
        "needs every rank to ask for it");
  }
  if (!halox::detail::nccl_available()) {  // built without NCCL, or its library not loaded
    every_rank_throws([&] { halox::chain<i64> ch(world, over_nccl(true)); },
                      halox::detail::nccl_unavailable_reason());
  } else if (P > halox::detail::device_count()) {  // one node: some ranks share a GPU
    every_rank_throws([&] { halox::chain<i64> ch(world, over_nccl(true)); }, "share a GPU");
  }
  // Nothing was left half-made: a usable chain still works afterwards.
  halox::chain<i64> ch(world, {.periodic = true, .space = halox::device});
  const device_vector tl(payload(world.rank(), 2, 0)), tr(payload(world.rank(), 2, 1));
  check_round(ch, ch.exchange(tl.span(), tr.span()), 2);
}

TEST_CASE("chain over NCCL: payload checks as on the pinned path") {
  mpi::communicator world;
  if (!nccl_usable(world)) return;
  halox::chain<i64> ch(world, over_nccl(true));
  const std::vector<i64> host(3, 1);
  CHECK_THROWS_WITH(ch.exchange(host, {}), Catch::Contains("is not device memory"));
  const device_vector tl(payload(world.rank(), 0, 0)), tr(payload(world.rank(), 0, 1));
  check_round(ch, ch.exchange(tl.span(), tr.span()), 0);  // usable afterwards
}

TEST_CASE("chain over NCCL: ranks making different calls throw, and the chain goes on") {
  mpi::communicator world;
  if (world.size() == 1 || !nccl_usable(world)) return;
  const bool periodic = GENERATE(false, true);
  halox::chain<i64> ch(world, over_nccl(periodic));
  check_mismatched_calls(ch, world.rank());
}
