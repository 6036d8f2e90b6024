// halox::chain: variable-size rounds with the left and right neighbour, multi-hop forwarding,
// gather_left/gather_right, split phase and errors, each checked against a model of the whole
// series that every rank computes on its own.
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include <boost/mpi/collectives.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "chain_model.hpp"
#include "check.hpp"

namespace mpi = boost::mpi;

using namespace chain_model;

TEST_CASE("chain rounds: payloads of every size from both neighbours, nullopt at the ends") {
  mpi::communicator world;
  const int P = world.size(), me = world.rank();
  const bool periodic = GENERATE(false, true);
  halox::chain<i64> ch(world, {.periodic = periodic});
  const int left = periodic ? (me + P - 1) % P : me - 1;
  const int right = periodic ? (me + 1) % P : (me + 1 < P ? me + 1 : -1);
  REQUIRE(ch.left() == left);
  REQUIRE(ch.right() == right);
  for (int round = 0; round < 6; ++round) {
    const auto tl = payload(me, round, 0), tr = payload(me, round, 1);
    const auto res = ch.exchange(tl, tr);
    if (left < 0) {
      REQUIRE_FALSE(res.from_left().has_value());
    } else {
      REQUIRE(res.from_left().has_value());
      REQUIRE(as_vector(*res.from_left()) == payload(left, round, 1));
    }
    if (right < 0) {
      REQUIRE_FALSE(res.from_right().has_value());
    } else {
      REQUIRE(res.from_right().has_value());
      REQUIRE(as_vector(*res.from_right()) == payload(right, round, 0));
    }
  }
}

TEST_CASE("chain rounds: a rank may send nothing, an empty span arrives (not nullopt)") {
  mpi::communicator world;
  const int me = world.rank();
  halox::chain<test_support::triple> ch(world, {.periodic = true});
  const test_support::triple one{me, float(me) + 0.5f, -me};
  const std::vector<test_support::triple> mine(me % 2 == 0 ? 1 : 0, one);
  const auto res = ch.exchange(mine, {});
  REQUIRE(res.from_left().has_value());
  REQUIRE(res.from_right().has_value());
  REQUIRE(res.from_left()->empty());  // nobody sent anything rightwards
  const int r = ch.right();
  REQUIRE(res.from_right()->size() == (r % 2 == 0 ? 1u : 0u));
  if (r % 2 == 0) REQUIRE((*res.from_right())[0] == test_support::triple{r, float(r) + 0.5f, -r});
}

TEST_CASE("chain rounds: multi-hop forwarding of uneven slices") {
  mpi::communicator world;
  const int P = world.size(), me = world.rank();
  const bool periodic = GENERATE(false, true);
  const auto seed = GENERATE(1u, 2u, 3u);
  const layout l = make_layout(P, seed);
  halox::chain<i64> ch(world, {.periodic = periodic});
  std::vector<i64> carry = l.slice(me);  // round 0 sends my own slice to the right
  for (int round = 0; round < P + 1; ++round) {
    const auto res = ch.exchange({}, carry);
    REQUIRE(res.from_right().has_value() == (ch.right() >= 0));
    if (res.from_right()) REQUIRE(res.from_right()->empty());
    if (ch.left() < 0) {
      REQUIRE_FALSE(res.from_left().has_value());
      carry.clear();
      continue;
    }
    // In round k, rank r receives rank r-1-k's slice (nothing from beyond the chain's start).
    const int src = me - 1 - round;
    std::vector<i64> want;
    if (periodic)
      want = l.slice(((src % P) + P) % P);
    else if (src >= 0)
      want = l.slice(src);
    REQUIRE(res.from_left().has_value());
    REQUIRE(as_vector(*res.from_left()) == want);
    carry = as_vector(*res.from_left());  // the chain's buffer is reused by the next round
  }
}

TEST_CASE("gather_left and gather_right: W from 0 to beyond the whole series") {
  mpi::communicator world;
  const int P = world.size(), me = world.rank();
  const bool periodic = GENERATE(false, true);
  const auto seed = GENERATE(1u, 4u, 5u, 9u);
  const layout l = make_layout(P, seed);
  const auto mine = l.slice(me);
  halox::chain<i64> ch(world, {.periodic = periodic});
  const std::size_t N = l.total();
  for (const std::size_t w : {std::size_t(0), std::size_t(1), std::size_t(3), std::size_t(17),
                              std::size_t(45), N, N + 5, std::numeric_limits<std::size_t>::max()}) {
    CAPTURE(periodic, seed, w, N, l.n);
    REQUIRE(as_vector(ch.gather_left(mine, w)) == expected_context(l, me, w, periodic, true));
    REQUIRE(as_vector(ch.gather_right(mine, w)) == expected_context(l, me, w, periodic, false));
  }
  // Rounds and gathers mix on one object.
  const auto res = ch.exchange(payload(me, 1, 0), payload(me, 1, 1));
  if (ch.left() >= 0) REQUIRE(as_vector(*res.from_left()) == payload(ch.left(), 1, 1));
  REQUIRE(as_vector(ch.gather_left(mine, 7)) == expected_context(l, me, 7, periodic, true));
}

TEST_CASE("gather_left: every element on one rank, all others empty") {
  mpi::communicator world;
  const int P = world.size(), me = world.rank();
  layout l;
  l.offset.push_back(0);
  for (int r = 0; r < P; ++r) {
    l.n.push_back(r == P / 2 ? 50 : 0);
    l.offset.push_back(l.offset.back() + l.n.back());
  }
  const bool periodic = GENERATE(false, true);
  halox::chain<i64> ch(world, {.periodic = periodic});
  for (const std::size_t w : {std::size_t(1), std::size_t(30), std::size_t(50), std::size_t(80)}) {
    REQUIRE(as_vector(ch.gather_left(l.slice(me), w)) ==
            expected_context(l, me, w, periodic, true));
    REQUIRE(as_vector(ch.gather_right(l.slice(me), w)) ==
            expected_context(l, me, w, periodic, false));
  }
}

TEST_CASE("split phase: start, test, wait; a second start while in flight is an error") {
  mpi::communicator world;
  const int me = world.rank();
  halox::chain<i64> ch(world, {.periodic = true});
  for (int round = 0; round < 3; ++round) {
    const auto tl = payload(me, round, 0), tr = payload(me, round, 1);
    auto h = ch.start(tl, tr);
    REQUIRE(ch.in_flight());
    CHECK_THROWS_WITH(ch.start(tl, tr),
                      Catch::Contains(fmt::format("rank {}: chain round started while round", me)));
    while (!h.test()) {
    }
    REQUIRE_FALSE(ch.in_flight());
    const auto res = h.wait();
    REQUIRE(as_vector(*res.from_left()) == payload(ch.left(), round, 1));
    REQUIRE(as_vector(*res.from_right()) == payload(ch.right(), round, 0));
    REQUIRE(as_vector(*h.wait().from_left()) == payload(ch.left(), round, 1));  // idempotent
    auto h2 = ch.start({}, {});
    CHECK_THROWS_WITH(h.wait(), Catch::Contains("has started since"));  // stale handle
    const auto empty = h2.wait();
    REQUIRE(empty.from_left()->empty());
  }
  // The stream-ordered spelling works on a host chain too (the stream is not used).
  ch.schedule_exchange(nullptr, payload(me, 9, 0), payload(me, 9, 1));
  REQUIRE(as_vector(*ch.schedule_wait(nullptr).from_right()) == payload(ch.right(), 9, 0));
}

TEST_CASE("errors: a payload over max_elements fails its rank and its neighbours, not the rest") {
  mpi::communicator world;
  const int P = world.size(), me = world.rank();
  const bool periodic = GENERATE(false, true);
  halox::chain<i64> ch(world, {.periodic = periodic, .max_elements = 10});
  const std::vector<i64> ok(10, 1), big(11, 2);
  const int culprit = P / 2;
  const bool neighbour = ch.left() == culprit || ch.right() == culprit;
  if (me == culprit) {
    CHECK_THROWS_WITH(
        ch.exchange(ok, big),
        Catch::Contains(fmt::format("rank {}: payload for the right neighbour has 11 elements, "
                                    "more than max_elements = 10",
                                    me)));
  } else if (neighbour) {
    CHECK_THROWS_WITH(ch.exchange(ok, ok),
                      Catch::Contains(fmt::format("neighbour (rank {}) rejected", culprit)));
  } else {
    REQUIRE_NOTHROW(ch.exchange(ok, ok));
  }
  // The round was completed everywhere: the chain goes on working.
  const auto res = ch.exchange(payload(me, 2, 0), payload(me, 2, 1));
  if (ch.left() >= 0) REQUIRE(as_vector(*res.from_left()) == payload(ch.left(), 2, 1));
  if (ch.right() >= 0) REQUIRE(as_vector(*res.from_right()) == payload(ch.right(), 2, 0));
}

TEST_CASE("errors: element types or options that differ across ranks, collectively") {
  mpi::communicator world;
  const int me = world.rank();
  if (world.size() == 1) return;  // nothing to differ from
  auto build_mixed_sizes = [&] {
    if (me == 0) {
      halox::chain<std::int32_t> c(world);
    } else {
      halox::chain<std::int64_t> c(world);
    }
  };
  auto build_mixed_names = [&] {  // same size, different type
    if (me == 1) {
      halox::chain<float> c(world);
    } else {
      halox::chain<std::int32_t> c(world);
    }
  };
  if (me == 0) {
    CHECK_THROWS_WITH(build_mixed_sizes(), Catch::Contains("another rank rejected"));
  } else {
    // The lowest rank that differs reports it; the others quote that report.
    CHECK_THROWS_WITH(build_mixed_sizes(),
                      Catch::Contains("rank 1: chain built with element type long (8 bytes)") &&
                          Catch::Contains("but rank 0 built it with int (4 bytes)"));
  }
  if (me == 1)
    CHECK_THROWS_WITH(build_mixed_names(), Catch::Contains("element type float (4 bytes)"));
  else
    CHECK_THROWS_AS(build_mixed_names(), halox::error);
  CHECK_THROWS_WITH(halox::chain<double>(world, {.periodic = me == 0}),
                    Catch::Contains("periodic"));
  CHECK_THROWS_WITH(halox::chain<double>(world, {.max_elements = me == 0 ? 5u : 6u}),
                    Catch::Contains("max_elements"));
}

namespace {
const std::string round_call = "a round (exchange, start or schedule_exchange)";

// The error of a rank whose `side` neighbour `nb` made call `theirs`, this rank `mine`.
std::string calls_differ(int me, const std::string& mine, const char* side, int nb,
                         const std::string& theirs) {
  return fmt::format(
      "halox: rank {}: chain calls differ: this rank called {}, but its {} neighbour (rank {}) "
      "called {}; every rank must make the same chain calls in the same order (gathers with the "
      "same w)",
      me, mine, side, nb, theirs);
}

using test_support::error_of;

// After a failed call the chain works on: no message of it was left behind.
void check_round_works(halox::chain<i64>& ch, int me) {
  const auto res = ch.exchange(payload(me, 5, 0), payload(me, 5, 1));
  if (ch.left() >= 0) CHECK(as_vector(*res.from_left()) == payload(ch.left(), 5, 1));
  if (ch.right() >= 0) CHECK(as_vector(*res.from_right()) == payload(ch.right(), 5, 0));
}
}  // namespace

TEST_CASE("errors: gather with different w across ranks; device chain without a usable GPU") {
  mpi::communicator world;
  const int me = world.rank();
  halox::chain<i64> ch(world);
  const std::vector<i64> mine(3, me);
  // Ranks 0 and 1 meet in the first round and both throw. Rank 2 needs two elements of rank
  // 0's slice, which rank 1 no longer passes on: it throws too. Ranks beyond have their five
  // elements from ranks 1 and 2, which were passed on before.
  if (world.size() > 1) {
    std::span<const i64> got;
    const std::string msg = error_of([&] { got = ch.gather_left(mine, me == 0 ? 4 : 5); });
    if (me <= 1)
      CHECK_THAT(msg, Catch::Contains(me == 0 ? "gather_left(w = 4), but its right neighbour "
                                                "(rank 1) called gather_left(w = 5)"
                                              : "gather_left(w = 5), but its left neighbour "
                                                "(rank 0) called gather_left(w = 4)"));
    else if (me == 2)
      CHECK_THAT(msg, Catch::Contains("rank 2: gather_left: the left neighbour (rank 1) failed"));
    else
      CHECK(as_vector(got) == std::vector<i64>{me - 2, me - 2, me - 1, me - 1, me - 1});
  }
  REQUIRE(ch.gather_left(mine, 2).size() == (me == 0 ? 0u : 2u));  // still usable
  if (halox::detail::device_count() == 0)
    CHECK_THROWS_AS(halox::chain<i64>(world, {.space = halox::device}), halox::error);
  if (!halox::detail::cuda_enabled())
    CHECK_THROWS_WITH(halox::chain<i64>(world, {.space = halox::device}),
                      Catch::Contains("built without CUDA"));
}

TEST_CASE("errors: exchange on one rank, gather_left on the others: a clear error, no hang") {
  mpi::communicator world;
  const int P = world.size(), me = world.rank();
  if (P == 1) return;  // nothing to differ from
  const bool periodic = GENERATE(false, true);
  halox::chain<i64> ch(world, {.periodic = periodic});
  std::vector<i64> mine(5);  // five elements each, as in issue 26
  for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = i64(me) * 100 + i64(i);
  std::span<const i64> got;
  const std::string msg = error_of([&] {
    if (me == 0)
      (void)ch.exchange(mine, mine);
    else
      got = ch.gather_left(mine, 2);
  });
  const std::string gather2 = "gather_left(w = 2)";
  // CHECKs, so that every rank reaches the round below even where one fails.
  if (me == 0 && periodic) {  // the left neighbour is named where both differ
    CHECK(msg == calls_differ(0, round_call, "left", P - 1, gather2));
  } else if (me == 0) {
    CHECK(msg == calls_differ(0, round_call, "right", 1, gather2));
  } else if (me == 1) {
    CHECK(msg == calls_differ(1, gather2, "left", 0, round_call));
  } else if (periodic && me == P - 1) {
    CHECK(msg == calls_differ(me, gather2, "right", 0, round_call));
  } else {
    // Not next to rank 0: the context is the left neighbour's last two elements, in round 0.
    CHECK(msg.empty());
    CHECK(as_vector(got) == std::vector<i64>{i64(me - 1) * 100 + 3, i64(me - 1) * 100 + 4});
  }
  check_round_works(ch, me);
}

TEST_CASE("errors: every rank next to a rank making another call throws, and says which") {
  mpi::communicator world;
  const int P = world.size(), me = world.rank();
  if (P == 1) return;
  const bool periodic = GENERATE(false, true);
  const int variant = GENERATE(0, 1, 2);
  halox::chain<i64> ch(world, {.periodic = periodic});
  const std::vector<i64> mine(4, me);
  // Even ranks make one call, odd ranks another: every rank has a neighbour of the other kind.
  const std::string names[3][2] = {{round_call, "gather_right(w = 3)"},
                                   {"gather_left(w = 7)", "gather_right(w = 7)"},
                                   {"gather_left(w = 0)", round_call}};
  auto call_of = [&](int r) { return names[variant][r % 2]; };
  const std::string msg = error_of([&] {
    if (call_of(me) == round_call) {
      auto h = ch.start(mine, mine);  // split phase: the error comes from wait()
      (void)h.wait();
    } else {
      const bool left = call_of(me).rfind("gather_left", 0) == 0;
      const std::size_t w = variant == 0 ? 3 : variant == 1 ? 7 : 0;
      (void)(left ? ch.gather_left(mine, w) : ch.gather_right(mine, w));
    }
  });
  // The left neighbour's call is named where it differs, the right one's otherwise.
  const int l = ch.left(), r = ch.right();
  const bool left_differs = l >= 0 && call_of(l) != call_of(me);
  const int nb = left_differs ? l : r;
  CAPTURE(periodic, variant);
  CHECK(msg == calls_differ(me, call_of(me), left_differs ? "left" : "right", nb, call_of(nb)));
  REQUIRE_FALSE(ch.in_flight());
  check_round_works(ch, me);
}

TEST_CASE("errors: gathers with different w: the ranks between fail, those beyond complete") {
  mpi::communicator world;
  const int P = world.size(), me = world.rank();
  if (P == 1) return;
  // One element per rank; ranks below m gather 2, the others 3. Ranks m-1 and m meet in round
  // 0. Rank m then has no context to pass on: m+1 fails in round 1, and m+2 in round 2 (through
  // m+1). Rank m+3 has its three elements by then (m's own came through in round 0), and ranks
  // below m-1 never need anything from the right.
  const int m = P / 2;
  halox::chain<i64> ch(world);
  layout l;
  l.offset.push_back(0);
  for (int k = 0; k < P; ++k) {
    l.n.push_back(1);
    l.offset.push_back(l.offset.back() + 1);
  }
  const std::size_t w = me < m ? 2 : 3;
  std::span<const i64> got;
  const std::string msg = error_of([&] { got = ch.gather_left(l.slice(me), w); });
  CAPTURE(m);
  if (me == m - 1)
    CHECK(msg == calls_differ(me, "gather_left(w = 2)", "right", m, "gather_left(w = 3)"));
  else if (me == m)
    CHECK(msg == calls_differ(me, "gather_left(w = 3)", "left", m - 1, "gather_left(w = 2)"));
  else if (me == m + 1 || me == m + 2)
    CHECK(msg == fmt::format("halox: rank {}: gather_left: the left neighbour (rank {}) failed "
                             "and passed on none of the context this rank needs (round {} of "
                             "the gather); see its error",
                             me, me - 1, me - m));
  else
    CHECK(as_vector(got) == expected_context(l, me, w, false, true));
  // Every pair finished its rounds: the chain goes on, rounds and gathers alike.
  check_round_works(ch, me);
  REQUIRE(as_vector(ch.gather_left(l.slice(me), 3)) == expected_context(l, me, 3, false, true));
}
