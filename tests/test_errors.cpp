// Every bad input throws halox::error, naming the offending value, on every rank, and leaves the
// fields' data untouched.
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <array>
#include <cstddef>
#include <functional>
#include <limits>
#include <span>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "check.hpp"

namespace mpi = boost::mpi;
using halox::box;
using idx = halox::index;

// Both the type and the message (the expression runs twice; collective calls stay matched).
#define REQUIRE_HALOX_ERROR(expr, text)               \
  do {                                                \
    REQUIRE_THROWS_AS(expr, halox::error);            \
    REQUIRE_THROWS_WITH(expr, Catch::Contains(text)); \
  } while (0)

namespace {
constexpr auto st2 = halox::stencil<2>::box(1);
constexpr idx int64_max = std::numeric_limits<idx>::max();

using test_support::error_of;

// Collective: `f()` throws on every rank, the same message everywhere, containing `text`.
// CHECKs only, so that a failure on one rank leaves the collectives of the others matched.
template <class F>
void require_same_error_everywhere(const mpi::communicator& world, F&& f, const std::string& text) {
  const std::string msg = error_of(f);
  std::string first = msg;
  mpi::broadcast(world, first, 0);
  const int threw = mpi::all_reduce(world, int(!msg.empty()), std::plus<int>());
  const int same = mpi::all_reduce(world, int(msg == first), std::plus<int>());
  CHECK(threw == world.size());
  CHECK(same == world.size());
  CHECK_THAT(msg, Catch::Contains(text));
}
}  // namespace

TEST_CASE("wrap: extents that do not match box plus padding; bad pointers, strides, components") {
  mpi::communicator world;
  halox::cartesian<2> dom(world, {9, 7}, halox::periodic{true, true});
  const auto o = dom.local_boxes()[0];
  const halox::extents<2> good{o.hi[0] - o.lo[0] + 2, o.hi[1] - o.lo[1] + 2};
  std::vector<double> mem(std::size_t((good[0] + 1) * (good[1] + 1) * 2), 3.5);
  const auto before = mem;
  const halox::extents<2> bad{good[0] + 1, good[1]};
  REQUIRE_HALOX_ERROR(dom.wrap<double>(mem.data(), bad, st2.lo, st2.hi),
                      fmt::format("extents {}x{}", bad[0], bad[1]));
  REQUIRE_HALOX_ERROR(dom.wrap<double>(mem.data(), good, st2.lo, {1, 2}),
                      fmt::format("needs {}x{}", good[0], good[1] + 1));
  REQUIRE_HALOX_ERROR(dom.wrap<double>(nullptr, good, st2.lo, st2.hi), "null pointer");
  REQUIRE_HALOX_ERROR(dom.wrap<double>(mem.data(), good, {1, -2}, st2.hi),
                      "negative padding -2/1 in dimension 1");
  REQUIRE_HALOX_ERROR(dom.wrap<double>(mem.data(), good, {-2, 1}, st2.hi), "-2/1 in dimension 0");
  halox::field_options zero;
  zero.components = 0;
  zero.name = "nocomp";
  REQUIRE_HALOX_ERROR(dom.wrap<double>(mem.data(), good, st2.lo, st2.hi, zero),
                      "'nocomp' needs at least one component, got 0");
  REQUIRE_HALOX_ERROR(dom.wrap_strided<double>(mem.data(), st2.lo, st2.hi, {good[1], 0}, 1),
                      "stride 0 in dimension 1");
  halox::field_options two;
  two.components = 2;
  REQUIRE_HALOX_ERROR(
      dom.wrap_strided<double>(mem.data(), st2.lo, st2.hi, {2 * good[1], 2}, -4, two),
      "component stride -4");
  REQUIRE(mem == before);
}

TEST_CASE(
    "make_exchange: padding narrower than the stencil, negative widths, empty fields, "
    "fields of another domain") {
  mpi::communicator world;
  halox::cartesian<2> dom(world, {8, 6}, halox::periodic{true, false});
  halox::cartesian<2> other(world, {8, 6}, halox::periodic{true, false});
  auto narrow = dom.make_field<double>(halox::stencil<2>::star(1));
  halox::field_options named;
  named.name = "temperature";
  auto good = dom.make_field<int>(halox::stencil<2>::box(2), halox::host, named);
  auto foreign = other.make_field<double>(halox::stencil<2>::box(2));
  test_support::fill(dom, narrow, {0, 0});
  test_support::fill(dom, good, {1, 0});
  test_support::fill(other, foreign, {2, 0});
  const auto s1 = test_support::snapshot(narrow);
  const auto s2 = test_support::snapshot(good);
  const auto s3 = test_support::snapshot(foreign);

  REQUIRE_HALOX_ERROR(
      halox::make_exchange(dom, halox::stencil<2>::box(2), good, narrow),
      "field #1 '(unnamed)' has padding 1/1 in dimension 0 but the stencil's halo is 2/2");
  REQUIRE_HALOX_ERROR(halox::make_exchange(dom, halox::stencil<2>::star({1, 1}, {1, 3}), narrow),
                      "padding 1/1 in dimension 1 but the stencil's halo is 1/3");
  REQUIRE_HALOX_ERROR(halox::make_exchange(dom, halox::stencil<2>::star({1, -1}, {1, 1}), narrow),
                      "stencil widths -1/1 in dimension 1 must not be negative");
  REQUIRE_HALOX_ERROR(halox::make_exchange(dom, halox::stencil<2>::box(1), good, foreign),
                      "field #1 '(unnamed)' belongs to another domain");
  REQUIRE_HALOX_ERROR(
      halox::make_exchange(dom, halox::stencil<2>::box(1), good, halox::field<float, 2>{}),
      "field #1 is empty (default-constructed)");
  REQUIRE_HALOX_ERROR(
      halox::make_exchange(dom, halox::stencil<2>::box(1), halox::field<double, 2>{}),
      "field #0 is empty");
  REQUIRE_HALOX_ERROR(dom.make_field<double>(halox::stencil<2>::star(-1)),
                      "negative padding -1/-1");
  REQUIRE(test_support::snapshot(narrow) == s1);
  REQUIRE(test_support::snapshot(good) == s2);
  REQUIRE(test_support::snapshot(foreign) == s3);
  // still usable with a valid stencil
  auto ex = halox::make_exchange(dom, halox::stencil<2>::box(2), good);
  ex.exchange();
  HXT_REQUIRE_OK(test_support::check(dom, good, halox::stencil<2>::box(2), {1, 0}));
}

TEST_CASE("make_exchange: a halo wrapping a periodic dimension too often, on every rank") {
  mpi::communicator world;
  const int me = world.rank();
  // The case that used to build its plan for minutes: 1000000 cells of halo on a 4-cell ring.
  halox::cartesian<2> dom(world, {4, 4}, halox::periodic{true, true});
  halox::field_options named;
  named.name = "u";
  auto u = dom.make_field<double>(halox::stencil<2>::box(1), halox::host, named);
  named.name = "v";
  auto v = dom.make_field<float>(halox::stencil<2>::box(1), halox::host, named);
  test_support::fill(dom, u, {0, 0});
  test_support::fill(dom, v, {1, 0});
  const auto su = test_support::snapshot(u);
  const auto sv = test_support::snapshot(v);
  const auto huge = halox::stencil<2>::star({1000000, 0}, {1000000, 0});
  const std::string why =
      "halo width 1000000 on the low side of dimension 0 is more than 16 times the periodic "
      "global extent 4; a halo may wrap around a periodic dimension at most 16 times (here: "
      "width at most 64)";
  // Checked with the stencil, before the padding: every rank throws, quoting rank 0.
  REQUIRE_HALOX_ERROR(halox::make_exchange(dom, huge, u, v), "rank 0: field #0 'u': " + why);
  REQUIRE_THROWS_WITH(halox::make_exchange(dom, huge, u, v),
                      Catch::StartsWith(fmt::format("halox: rank {}: ", me)));
  REQUIRE_HALOX_ERROR(halox::make_reverse_exchange(dom, huge, halox::reduction::sum, u),
                      "rank 0: field #0 'u': " + why);
  // Per-field halos: the field whose own halo is too wide is named; one cell over the limit.
  REQUIRE_HALOX_ERROR(
      halox::make_exchange(dom, halox::halo(halox::stencil<2>::box(1), u),
                           halox::halo(halox::stencil<2>::star({0, 0}, {0, 65}), v)),
      "rank 0: field #1 'v': halo width 65 on the high side of dimension 1 is more than 16 "
      "times the periodic global extent 4");
  // make_plan alone is local work: it throws on the calling rank, with the same text.
  REQUIRE_THROWS_WITH(halox::make_plan(dom, huge),
                      Catch::Equals(fmt::format("halox: rank {}: {}", me, why)));
  REQUIRE(test_support::snapshot(u) == su);
  REQUIRE(test_support::snapshot(v) == sv);
}

TEST_CASE("make_exchange: an error on one rank only makes every rank throw") {
  mpi::communicator world;
  halox::cartesian<2> dom(world, {8, 6}, halox::periodic{true, true});
  constexpr auto st = halox::stencil<2>::box(1);
  // only rank 0 passes a field with too little padding
  auto f = world.rank() == 0
               ? dom.make_field<double>(halox::widths<2>{1, 0}, {1, 1}, halox::host, {})
               : dom.make_field<double>(st);
  test_support::fill(dom, f, {0, 0});
  const auto before = test_support::snapshot(f);
  REQUIRE_HALOX_ERROR(halox::make_exchange(dom, st, f),
                      "rank 0: field #0 '(unnamed)' has padding 0/1");
  std::string msg;  // every rank but the failing one says where the input was rejected
  try {
    (void)halox::make_exchange(dom, st, f);
  } catch (const halox::error& e) {
    msg = e.what();
  }
  REQUIRE_THAT(msg, Catch::Contains("padding 0/1 in dimension 1"));
  // the failing rank is named, and every other rank says who it is
  REQUIRE_THAT(msg, Catch::Contains("rank 0: field #0"));
  REQUIRE_THAT(msg, Catch::StartsWith(fmt::format("halox: rank {}: ", world.rank())));
  REQUIRE(test_support::snapshot(f) == before);
  // only the last rank passes a field of another domain (the lowest failing rank is reported)
  halox::cartesian<2> other(world, {8, 6}, halox::periodic{true, true});
  auto g =
      world.rank() == world.size() - 1 ? other.make_field<double>(st) : dom.make_field<double>(st);
  test_support::fill(dom, g, {1, 0});
  const auto gb = test_support::snapshot(g);
  REQUIRE_HALOX_ERROR(
      halox::make_exchange(dom, st, g),
      fmt::format("rank {}: field #0 '(unnamed)' belongs to another domain", world.size() - 1));
  REQUIRE(test_support::snapshot(g) == gb);
  // two ranks failing: everybody reports the lowest
  if (world.size() >= 2) {
    auto h = world.rank() >= 1
                 ? dom.make_field<double>(halox::widths<2>{0, 0}, {0, 0}, halox::host, {})
                 : dom.make_field<double>(st);
    REQUIRE_HALOX_ERROR(halox::make_exchange(dom, st, h), "rank 1: field #0");
  }
}

TEST_CASE("domains: non-positive extents, bad process grids, too many ranks") {
  mpi::communicator world;
  const int p = world.size();
  REQUIRE_HALOX_ERROR(halox::cartesian<2>(world, {5, 0}),
                      "global extent 0 in dimension 1 must be positive");
  REQUIRE_HALOX_ERROR(halox::cartesian<3>(world, {5, 4, -3}), "global extent -3 in dimension 2");
  REQUIRE_HALOX_ERROR(halox::cartesian<1>(world, {-1}), "global extent -1 in dimension 0");
  REQUIRE_HALOX_ERROR(
      halox::cartesian<2>(world, {20, 20}, {}, halox::process_grid<2>{{p + 1, 1}}),
      fmt::format("process grid {}x1 holds {} ranks but the communicator has {}", p + 1, p + 1, p));
  REQUIRE_HALOX_ERROR(halox::cartesian<2>(world, {20, 20}, {}, halox::process_grid<2>{{0, p}}),
                      fmt::format("process grid 0x{} has 0 ranks in dimension 0", p));
  REQUIRE_HALOX_ERROR(halox::cartesian<2>(world, {20, 20}, {}, halox::process_grid<2>{{p, -1}}),
                      "has -1 ranks in dimension 1");
  REQUIRE_HALOX_ERROR(
      halox::cartesian<3>(world, {20, 3, 20}, {}, halox::process_grid<3>{{1, 4, p}}),
      "has 4 ranks in dimension 1 of extent 3");
  if (p > 1) {
    REQUIRE_HALOX_ERROR(halox::cartesian<1>(world, {p - 1}),
                        fmt::format("{} ranks cannot each own a cell", p));
    REQUIRE_HALOX_ERROR(halox::cartesian<2>(world, {1, p - 1}), fmt::format("1x{} domain", p - 1));
  }
}

TEST_CASE("box_list: overlapping, not covering, empty, bad owner, outside the global box") {
  mpi::communicator world;
  const int p = world.size();
  using ob = halox::owned_box<2>;
  const halox::extents<2> n{6, 4};
  const halox::periodic<2> per{true, false};
  REQUIRE_HALOX_ERROR(
      halox::box_list<2>(world, n, per, {ob{{{0, 0}, {4, 4}}, 0}, ob{{{3, 0}, {6, 4}}, 0}}),
      "boxes #0 [0,4)x[0,4) (owner 0) and #1 [3,6)x[0,4) (owner 0) overlap");
  REQUIRE_HALOX_ERROR(
      halox::box_list<2>(world, n, per, {ob{{{0, 0}, {3, 4}}, 0}, ob{{{4, 0}, {6, 4}}, p - 1}}),
      "cover 20 of the 24 cells");
  REQUIRE_HALOX_ERROR(
      halox::box_list<2>(world, n, per, {ob{{{0, 0}, {6, 4}}, 0}, ob{{{2, 1}, {2, 3}}, 0}}),
      "box #1 [2,2)x[1,3) (owner 0) is empty");
  REQUIRE_HALOX_ERROR(
      halox::box_list<2>(world, n, per, {ob{{{0, 0}, {6, 2}}, 0}, ob{{{0, 2}, {6, 4}}, p}}),
      fmt::format("box #1 has owner rank {} outside [0, {})", p, p));
  REQUIRE_HALOX_ERROR(
      halox::box_list<2>(world, n, per, {ob{{{0, 0}, {6, 2}}, -1}, ob{{{0, 2}, {6, 4}}, 0}}),
      "owner rank -1");
  REQUIRE_HALOX_ERROR(halox::box_list<2>(world, n, per, {ob{{{0, 0}, {6, 5}}, 0}}),
                      "box #0 [0,6)x[0,5) (owner 0) reaches outside the global box [0,6)x[0,4)");
  REQUIRE_HALOX_ERROR(halox::box_list<2>(world, n, per, {ob{{{-1, 0}, {5, 4}}, 0}}),
                      "reaches outside");
  REQUIRE_HALOX_ERROR(halox::box_list<2>(world, {6, 0}, per, {}), "global extent 0 in dimension 1");
  REQUIRE_HALOX_ERROR(halox::box_list<2>(world, n, per, {}), "cover 0 of the 24 cells");

  // wrapping the wrong number of arrays, or one pointer on a rank with several boxes
  halox::box_list<2> dom(world, n, per, {ob{{{0, 0}, {3, 4}}, 0}, ob{{{3, 0}, {6, 4}}, 0}});
  std::vector<double> a(100, 1.0), b(100, 2.0);
  const std::vector<double*> one{a.data()}, two{a.data(), b.data()};
  const std::vector<halox::extents<2>> cells{{5, 6}, {5, 6}}, nodes{{6, 7}, {6, 7}};
  if (world.rank() == 0) {
    REQUIRE_HALOX_ERROR(dom.wrap(one, {{5, 6}}, st2.lo, st2.hi),
                        "wraps 1 arrays with 1 extents but the rank owns 2 boxes");
    REQUIRE_HALOX_ERROR(dom.wrap(two, {{5, 6}}, st2.lo, st2.hi),
                        "wraps 2 arrays with 1 extents but the rank owns 2 boxes");
    // Node-centred arrays declared as cell-centred: block 0 has one more point per dimension.
    REQUIRE_HALOX_ERROR(dom.wrap(two, nodes, st2.lo, st2.hi),
                        "rank 0: field '(unnamed)' block 0 has extents 6x7 but the owned box "
                        "[0,3)x[0,4) (cell-centred) with padding 1,1/1,1 needs 5x6");
    halox::field_options at_nodes;
    at_nodes.at = halox::centering::node();
    REQUIRE_HALOX_ERROR(dom.wrap(two, cells, st2.lo, st2.hi, at_nodes),
                        "block 0 has extents 5x6 but the owned box [0,4)x[0,5) (node-centred)");
    REQUIRE(dom.wrap(two, cells, st2.lo, st2.hi).block_count() == 2);
    REQUIRE_HALOX_ERROR(dom.wrap<double>(a.data(), {5, 6}, st2.lo, st2.hi), "this one owns 2");
  } else {
    REQUIRE_HALOX_ERROR(dom.wrap<double>(a.data(), {5, 6}, st2.lo, st2.hi), "this one owns 0");
  }
  REQUIRE(std::all_of(a.begin(), a.end(), [](double x) { return x == 1.0; }));
  REQUIRE(std::all_of(b.begin(), b.end(), [](double x) { return x == 2.0; }));
}

TEST_CASE("a second start() while in flight throws and changes nothing") {
  mpi::communicator world;
  constexpr auto st = halox::stencil<3>::box(1);
  halox::cartesian<3> dom(world, {5, 4, 6}, halox::periodic{true, true, false});
  auto f = dom.make_field<double>(st, halox::host, 2);
  test_support::fill(dom, f, {0, 0});
  auto ex = halox::make_exchange(dom, st, f);
  auto h = ex.start();
  test_support::fill(dom, f, {0, 0});  // halo back to sentinels: a second start must not write them
  const auto snap = test_support::snapshot(f);
  REQUIRE_HALOX_ERROR((void)ex.start(),
                      "start() called while this object's previous exchange is still in flight");
  REQUIRE(test_support::snapshot(f) == snap);
  REQUIRE(ex.in_flight());
  h.wait();
  REQUIRE(!ex.in_flight());
  // still works after
  test_support::fill(dom, f, {0, 1});
  ex.exchange();
  HXT_REQUIRE_OK(test_support::check(dom, f, st, {0, 1}));
  test_support::fill(dom, f, {0, 2});
  auto h2 = ex.start();
  h2.wait();
  HXT_REQUIRE_OK(test_support::check(dom, f, st, {0, 2}));
}

TEST_CASE("device fields without CUDA") {
  mpi::communicator world;
  halox::cartesian<2> dom(world, {6, 6}, halox::periodic{true, true});
  if (halox::detail::cuda_enabled()) {
    WARN("built with CUDA: the no-CUDA device checks do not apply");
    return;
  }
  REQUIRE_HALOX_ERROR(dom.make_field<double>(st2, halox::device), "built without CUDA");
  // user memory declared as device memory is refused by make_exchange
  const auto o = dom.local_boxes()[0];
  const halox::extents<2> e{o.hi[0] - o.lo[0] + 2, o.hi[1] - o.lo[1] + 2};
  std::vector<float> mem(std::size_t(e[0] * e[1]), 4.0f);
  halox::field_options named;
  named.name = "dev";
  auto f = dom.wrap<float>(mem.data(), e, st2.lo, st2.hi, named, halox::device);
  REQUIRE(f.space() == halox::device);
  REQUIRE_HALOX_ERROR(halox::make_exchange(dom, st2, f), "field #0 'dev' lives in device memory");
  REQUIRE(std::all_of(mem.begin(), mem.end(), [](float x) { return x == 4.0f; }));
}

TEST_CASE("transport environment variables: a bad value is an input error on every rank") {
  mpi::communicator world;
  halox::cartesian<2> dom(world, {8, 6}, halox::periodic{true, true});
  auto f = dom.make_field<double>(st2);
  test_support::fill(dom, f, {0, 0});
  const auto before = test_support::snapshot(f);
  struct {
    const char* var;
    const char* text;
  } const cases[] = {
      {"HALOX_STAGING", "HALOX_STAGING='sideways' is not a staging policy"},
      {"HALOX_HOST_STAGING", "HALOX_HOST_STAGING='sideways' is not a host staging variant"},
      {"HALOX_IPC_SIGNAL", "HALOX_IPC_SIGNAL='sideways' is not a signalling mode"},
      {"HALOX_IPC_INTO", "HALOX_IPC_INTO='sideways' is not a CUDA IPC target"},
      {"HALOX_SHM_INTO", "HALOX_SHM_INTO='sideways' is not a shared-memory target"},
      {"HALOX_SHM_DIRECT_MIN", "HALOX_SHM_DIRECT_MIN='sideways' is not a number of bytes"},
      {"HALOX_IPC_INLINE_MAX", "HALOX_IPC_INLINE_MAX='sideways' is not a number of bytes"},
      {"HALOX_PEER_IPC_RANKS", "HALOX_PEER_IPC_RANKS='sideways' is not a comma-separated list"},
      {"HALOX_PEER_SHM_RANKS", "HALOX_PEER_SHM_RANKS='sideways' is not a comma-separated list"},
      {"HALOX_HOST_TRANSPORT", "HALOX_HOST_TRANSPORT='sideways' is not a host transport"},
      {"HALOX_NODE_SIZE", "HALOX_NODE_SIZE='sideways' is not a number of ranks"},
      {"HALOX_STAGING_CHUNK", "HALOX_STAGING_CHUNK='sideways' is not a number of bytes"},
      {"HALOX_NCCL_REGISTER", "HALOX_NCCL_REGISTER='sideways' is not an NCCL registration switch"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.var);
    ::setenv(c.var, "sideways", 1);
    REQUIRE_HALOX_ERROR(halox::make_exchange(dom, st2, f), c.text);
    ::unsetenv(c.var);
    REQUIRE(test_support::snapshot(f) == before);
  }
  auto ex = halox::make_exchange(dom, st2, f);  // usable again once the variables are fixed
  ex.exchange();
  HXT_REQUIRE_OK(test_support::check(dom, f, st2, {0, 0}));
}

TEST_CASE("exchange_options: bad values are input errors on every rank") {
  mpi::communicator world;
  halox::cartesian<2> dom(world, {8, 6}, halox::periodic{true, true});
  auto f = dom.make_field<double>(st2);
  test_support::fill(dom, f, {0, 0});
  const auto before = test_support::snapshot(f);
  const bool last = world.rank() == world.size() - 1;  // only the last rank is wrong
  halox::exchange_options o;
  SECTION("negative node size") {
    if (last) o.node_size = -2;
    REQUIRE_HALOX_ERROR(halox::make_exchange(dom, st2, o, f), "exchange_options::node_size is -2");
  }
  SECTION("negative rank in a peer list") {
    if (last) o.peer_shm_ranks = std::vector{0, -1};
    REQUIRE_HALOX_ERROR(halox::make_reverse_exchange(dom, st2, halox::reduction::sum, o, f),
                        "rank -1 in a peer rank list is negative");
  }
  REQUIRE(test_support::snapshot(f) == before);
}

TEST_CASE("domains: cell counts and extents that overflow 64-bit arithmetic") {
  mpi::communicator world;
  using ob = halox::owned_box<2>;
  const halox::periodic<2> per{true, true};
  const idx e32 = idx(1) << 32, e62 = idx(1) << 62;
  // 2^64 cells and no boxes: the coverage count wrapped to 0 == 0 and the list was accepted
  REQUIRE_HALOX_ERROR(halox::box_list<2>(world, {e32, e32}, per, {}),
                      "the global box 4294967296x4294967296 holds more than 9223372036854775807 "
                      "cells (a 64-bit index cannot count them)");
  // 2^65 cells, half of them covered: both counts wrapped to 0
  REQUIRE_HALOX_ERROR(
      halox::box_list<2>(world, {e62, 8}, per, {ob{{{0, 0}, {e62 / 2, 8}}, 0}}),
      "global extent 4611686018427387904 in dimension 0 exceeds 2305843009213693952, the "
      "largest halox supports");
  REQUIRE_HALOX_ERROR(
      halox::box_list<2>(world, {halox::max_extent, 8}, per,
                         {ob{{{0, 0}, {halox::max_extent / 2, 8}}, 0}}),
      "the global box 2305843009213693952x8 holds more than 9223372036854775807 cells");
  REQUIRE_HALOX_ERROR(halox::cartesian<2>(world, {e32, e32}),
                      "the global box 4294967296x4294967296 holds more than");
  REQUIRE_HALOX_ERROR(halox::cartesian<4>(world, {e32, 2, 2, e32}, {},
                                          halox::process_grid<4>{{world.size(), 1, 1, 1}}),
                      "the global box 4294967296x2x2x4294967296 holds more than");
  // extents near INT64_MAX: the grid search and the plan's periodic images overflowed
  REQUIRE_HALOX_ERROR(halox::cartesian<1>(world, {int64_max}, halox::periodic{true}),
                      "global extent 9223372036854775807 in dimension 0 exceeds");
  REQUIRE_HALOX_ERROR(halox::cartesian<3>(world, {4, halox::max_extent + 1, 4}),
                      "global extent 2305843009213693953 in dimension 1 exceeds");
  REQUIRE_HALOX_ERROR(
      halox::box_list<2>(world, {int64_max, 1}, per, {ob{{{0, 0}, {int64_max, 1}}, 0}}),
      "global extent 9223372036854775807 in dimension 0 exceeds");
  // the limit itself is fine: the blocks tile it
  const halox::cartesian<2> dom(world, {halox::max_extent, 3}, per);
  idx cells = 0;
  for (int r = 0; r < world.size(); ++r) cells += dom.box_of(r).volume();
  CHECK(cells == 3 * halox::max_extent);
}

TEST_CASE("make_field and wrap: sizes that overflow 64 bits fail before anything is allocated") {
  mpi::communicator world;
  const int me = world.rank();
  halox::cartesian<3> dom(world, {4, 4, 4}, halox::periodic<3>::all());
  // 2^21 - 2 cells of padding on a 4^3 domain: the byte count wrapped to 0, make_field returned
  // a 0-byte field that make_exchange accepted and exchange() wrote through
  const int w = (1 << 21) - 2;
  const halox::widths<3> pad{w, w, w};
  const auto a = halox::grow(dom.local_boxes()[0], pad, pad).size();
  halox::field_options o;
  o.name = "huge";
  const std::string needs = fmt::format(
      "rank {}: field 'huge' needs {}x{}x{} cells x 1 components x 8 bytes (the owned box {} "
      "with padding 2097150,2097150,2097150/2097150,2097150,2097150), more than "
      "9223372036854775807 bytes",
      me, a[0], a[1], a[2], halox::to_string(dom.local_boxes()[0]));
  REQUIRE_HALOX_ERROR(dom.make_field<double>(pad, pad, halox::host, o), needs);
  REQUIRE_HALOX_ERROR(dom.make_field<double>(halox::stencil<3>::star(w), halox::host, o),
                      "x 1 components x 8 bytes");
  // cells x components x sizeof(T): each fits, the product does not
  using big_t = std::array<std::byte, std::size_t(1) << 30>;
  REQUIRE_HALOX_ERROR(
      dom.make_field<big_t>(halox::stencil<3>::box(1), halox::host, 1 << 30),
      fmt::format("rank {}: field '(unnamed)' needs {} cells x 1073741824 components x "
                  "1073741824 bytes",
                  me,
                  fmt::join(halox::grow(dom.local_boxes()[0], halox::stencil<3>::box(1).lo,
                                        halox::stencil<3>::box(1).hi)
                                .size(),
                            "x")));
  // wrapping memory of those extents: the strides would overflow
  std::vector<double> mem(64, 1.5);
  REQUIRE_HALOX_ERROR(dom.wrap<double>(mem.data(), a, pad, pad, o), needs);
  const std::vector<double*> one{mem.data()};
  const std::vector<halox::extents<3>> sizes(1, a);
  REQUIRE_HALOX_ERROR(dom.wrap(one, sizes, pad, pad, o), needs);
  // user strides whose offsets overflow
  const halox::widths<3> p1{1, 1, 1};
  REQUIRE_HALOX_ERROR(dom.wrap_strided<double>(mem.data(), p1, p1, {idx(1) << 62, 1, 1}, 1, o),
                      fmt::format("rank {}: field 'huge' with strides 4611686018427387904,1,1 "
                                  "and component stride 1 spans more than 9223372036854775807 "
                                  "bytes",
                                  me));
  halox::field_options two = o;
  two.components = 2;
  REQUIRE_HALOX_ERROR(
      dom.wrap_strided<double>(mem.data(), p1, p1, {1, 1, 1}, int64_max, two),
      "with strides 1,1,1 and component stride 9223372036854775807 spans more than");
  REQUIRE(std::all_of(mem.begin(), mem.end(), [](double x) { return x == 1.5; }));

  // several blocks of 2^62 bytes each: only their sum overflows
  using ob = halox::owned_box<2>;
  const idx n = idx(1) << 59;
  halox::box_list<2> two_blocks(world, {n, 2}, {},
                                {ob{{{0, 0}, {n, 1}}, 0}, ob{{{0, 1}, {n, 2}}, 0}});
  const halox::widths<2> none{0, 0};
  if (me == 0)
    REQUIRE_HALOX_ERROR(two_blocks.make_field<double>(none, none, halox::host, o),
                        "rank 0: field 'huge' needs more than 9223372036854775807 bytes for its "
                        "2 blocks");
  else
    CHECK(two_blocks.make_field<double>(none, none, halox::host, o).block_count() == 0);
}

TEST_CASE("unstructured fields: sizes that overflow 64 bits fail before anything is allocated") {
  mpi::communicator world;
  const int me = world.rank();
  const std::vector<halox::global_id> own{10 * halox::global_id(me), 10 * halox::global_id(me) + 1};
  halox::unstructured_options opt;
  opt.local_count = 16;
  halox::unstructured pat(world, own, std::vector<halox::global_id>{}, opt);
  using big_t = std::array<std::byte, std::size_t(1) << 30>;
  REQUIRE_HALOX_ERROR(
      pat.make_field<big_t>(1 << 30, halox::entity_layout::entity_major, halox::host, "big"),
      fmt::format("rank {}: field 'big' needs 16 entities x 1073741824 components x 1073741824 "
                  "bytes (component stride 1), more than 9223372036854775807 bytes",
                  me));
  std::vector<double> mem(64, 2.5);
  REQUIRE_HALOX_ERROR(pat.wrap<double>(mem.data(), 3, halox::entity_layout::component_major,
                                       idx(1) << 62, halox::host, "cm"),
                      "field 'cm' needs 16 entities x 3 components x 8 bytes (component stride "
                      "4611686018427387904)");
  REQUIRE(std::all_of(mem.begin(), mem.end(), [](double x) { return x == 2.5; }));
}

TEST_CASE("domains: ranks that disagree on the arguments fail on every rank alike") {
  mpi::communicator world;
  const int me = world.rank(), p = world.size();
  using ob = halox::owned_box<2>;
  if (p == 1) {
    // one rank agrees with itself: nothing to compare, construction succeeds
    CHECK(halox::cartesian<2>(world, {8, 8}).local_boxes().size() == 1);
    return;
  }
  const halox::periodic<2> both{true, true}, first{true, false};
  require_same_error_everywhere(
      world,
      [&] {
        (void)halox::cartesian<2>(world, {8, me == 0 ? 8 : 9}, both);
      },
      "halox: rank 1: domain built with global extents 8x9, but rank 0 built it with global "
      "extents 8x8; every rank must pass the same arguments");
  require_same_error_everywhere(
      world,
      [&] {
        (void)halox::cartesian<2>(world, {8, 8}, me == 0 ? both : first);
      },
      "rank 1: domain built with periodicity [true, false], but rank 0 built it with "
      "periodicity [true, true]");
  // only the last rank differs: it is the one named
  require_same_error_everywhere(
      world,
      [&] {
        (void)halox::cartesian<2>(world, {me == p - 1 ? 9 : 8, 8}, both);
      },
      fmt::format("rank {}: domain built with global extents 9x8, but rank 0", p - 1));
  // a rank's own bad extent is reported as the disagreement it is, on every rank
  require_same_error_everywhere(
      world,
      [&] {
        (void)halox::cartesian<2>(world, {8, me == 1 ? 0 : 8}, both);
      },
      "rank 1: domain built with global extents 8x0, but rank 0 built it with global extents "
      "8x8");
  const halox::process_grid<2> rows{{p, 1}}, cols{{1, p}};
  require_same_error_everywhere(
      world,
      [&] {
        (void)halox::cartesian<2>(
            world, {8, 8}, both,
            me == 0 ? std::optional(rows) : std::optional<halox::process_grid<2>>());
      },
      fmt::format("rank 1: domain built with process grid automatic, but rank 0 built it with "
                  "process grid {}x1",
                  p));
  require_same_error_everywhere(
      world,
      [&] {
        (void)halox::cartesian<2>(world, {8, 8}, both, me == 0 ? rows : cols);
      },
      fmt::format("rank 1: domain built with process grid 1x{}, but rank 0 built it with "
                  "process grid {}x1",
                  p, p));

  // box lists: extents, periodicity, the boxes, their owners, their number; another type
  const std::vector<ob> halves{ob{{{0, 0}, {4, 8}}, 0}, ob{{{4, 0}, {8, 8}}, p - 1}};
  require_same_error_everywhere(
      world,
      [&] {
        (void)halox::box_list<2>(world, {8, me == 0 ? 8 : 9}, both, halves);
      },
      "rank 1: domain built with global extents 8x9, but rank 0 built it with global extents "
      "8x8");
  require_same_error_everywhere(
      world,
      [&] {
        (void)halox::box_list<2>(world, {8, 8}, me == 0 ? both : first, halves);
      },
      "rank 1: domain built with periodicity [true, false]");
  require_same_error_everywhere(
      world,
      [&] {
        auto b = halves;
        if (me != 0) b[1].owner = 0;
        (void)halox::box_list<2>(world, {8, 8}, both, b);
      },
      fmt::format("rank 1: domain built with box #1 [4,8)x[0,8) (owner 0), but rank 0 built it "
                  "with box #1 [4,8)x[0,8) (owner {})",
                  p - 1));
  require_same_error_everywhere(
      world,
      [&] {
        auto b = halves;
        if (me != 0) b[0].cells.hi[0] = 3, b[1].cells.lo[0] = 3;
        (void)halox::box_list<2>(world, {8, 8}, both, b);
      },
      "rank 1: domain built with box #0 [0,3)x[0,8) (owner 0), but rank 0 built it with box #0 "
      "[0,4)x[0,8) (owner 0)");
  require_same_error_everywhere(
      world,
      [&] {
        auto b = halves;
        if (me != 0)
          b = {ob{{{0, 0}, {4, 8}}, 0}, ob{{{4, 0}, {8, 4}}, 1}, ob{{{4, 4}, {8, 8}}, 1}};
        (void)halox::box_list<2>(world, {8, 8}, both, b);
      },
      "rank 1: domain built with box count 3, but rank 0 built it with box count 2");
  require_same_error_everywhere(
      world,
      [&] {
        if (me == 0)
          (void)halox::cartesian<2>(world, {8, 8}, both);
        else
          (void)halox::box_list<2>(world, {8, 8}, both, halves);
      },
      "rank 1: domain built with type box_list<2>, but rank 0 built it with type cartesian<2>");
  require_same_error_everywhere(
      world,
      [&] {
        if (me == 0)
          (void)halox::cartesian<2>(world, {8, 8}, both);
        else
          (void)halox::cartesian<3>(world, {8, 8, 1}, halox::periodic<3>::all());
      },
      "rank 1: domain built with type cartesian<3>, but rank 0 built it with type cartesian<2>");

  // agreeing ranks still build a working domain afterwards (the communicator is in step)
  halox::box_list<2> dom(world, {8, 8}, both, halves);
  auto f = dom.make_field<double>(st2);
  test_support::fill(dom, f, {0, 0});
  auto ex = halox::make_exchange(dom, st2, f);
  ex.exchange();
  HXT_REQUIRE_OK(test_support::check(dom, f, st2, {0, 0}));
}
