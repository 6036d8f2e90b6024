// GPU: halox::chain with device buffers (staged through pinned host memory): rounds, split
// phase, gather_left/gather_right and the stream-ordered variant, checked against the host
// model in chain_model.hpp. Skips (exit 77) where no GPU is usable.
#include <cuda_runtime.h>
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "../chain_model.hpp"
#include "chain_device_check.hpp"
#include "gpu_setup.hpp"

namespace mpi = boost::mpi;
using namespace chain_model;

namespace {

const bool skipped_without_gpu = gpu_test::skip_without_gpu();
using gpu_test::cuda;

}  // namespace

TEST_CASE("device chain: blocking and split-phase rounds") {
  mpi::communicator world;
  const int me = world.rank();
  const bool periodic = GENERATE(false, true);
  halox::chain<i64> ch(world, {.periodic = periodic, .space = halox::device});
  for (int round = 0; round < 5; ++round) {
    const device_vector tl(payload(me, round, 0)), tr(payload(me, round, 1));
    if (round % 2 == 0) {
      check_round(ch, ch.exchange(tl.span(), tr.span()), round);
    } else {
      auto h = ch.start(tl.span(), tr.span());
      while (!h.test()) {
      }
      check_round(ch, h.wait(), round);
    }
  }
}

TEST_CASE("device chain: gather_left and gather_right against the host model") {
  mpi::communicator world;
  const int P = world.size(), me = world.rank();
  const bool periodic = GENERATE(false, true);
  const auto seed = GENERATE(1u, 5u);
  const layout l = make_layout(P, seed);
  const device_vector mine(l.slice(me));
  halox::chain<i64> ch(world, {.periodic = periodic, .space = halox::device});
  const std::size_t N = l.total();
  for (const std::size_t w : {std::size_t(0), std::size_t(1), std::size_t(17), N + 3,
                              std::numeric_limits<std::size_t>::max()}) {
    CAPTURE(periodic, seed, w);
    REQUIRE(download(ch.gather_left(mine.span(), w)) == expected_context(l, me, w, periodic, true));
    REQUIRE(download(ch.gather_right(mine.span(), w)) ==
            expected_context(l, me, w, periodic, false));
  }
}

TEST_CASE("device chain: stream-ordered rounds") {
  mpi::communicator world;
  const int me = world.rank();
  halox::chain<i64> ch(world, {.periodic = true, .space = halox::device});
  cudaStream_t s = nullptr;
  cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (int round = 0; round < 4; ++round) {
    // The payload is written on the stream itself: the chain's copies must wait for it.
    const auto hl = payload(me, round, 0), hr = payload(me, round, 1);
    const device_vector tl(std::vector<i64>(hl.size(), -1)), tr(std::vector<i64>(hr.size(), -1));
    cuda(cudaMemcpyAsync(tl.p, hl.data(), hl.size() * sizeof(i64), cudaMemcpyHostToDevice, s));
    cuda(cudaMemcpyAsync(tr.p, hr.data(), hr.size() * sizeof(i64), cudaMemcpyHostToDevice, s));
    ch.schedule_exchange(s, tl.span(), tr.span());
    check_round(ch, ch.schedule_wait(s), round, s);
  }
  cuda(cudaStreamDestroy(s));
}

TEST_CASE("device chain: a host payload is rejected") {
  mpi::communicator world;
  halox::chain<i64> ch(world, {.periodic = true, .space = halox::device});
  const std::vector<i64> host(3, 1);
  CHECK_THROWS_WITH(ch.exchange(host, {}), Catch::Contains("is not device memory"));
  const device_vector tl(payload(world.rank(), 0, 0)), tr(payload(world.rank(), 0, 1));
  check_round(ch, ch.exchange(tl.span(), tr.span()), 0);  // usable afterwards
}

TEST_CASE("device chain: ranks making different calls throw, and the chain goes on") {
  mpi::communicator world;
  if (world.size() == 1) return;  // nothing to differ from
  const bool periodic = GENERATE(false, true);
  halox::chain<i64> ch(world, {.periodic = periodic, .space = halox::device});
  check_mismatched_calls(ch, world.rank());
}
