// Unit tests of halox::stencil: neighbour counts, pruning, from_offsets, encoding, and use as a
// template argument, halo_pattern (directions and region rules at compile time). Most checks are
// compile-time.
#include <catch2/catch.hpp>
#include <halox/pattern/halo_pattern.hpp>
#include <halox/pattern/stencil.hpp>

#include <set>

using halox::stencil;

// ---- neighbour counts ----------------------------------------------------------------------
static_assert(stencil<1>::star(1).neighbor_count() == 2);
static_assert(stencil<2>::star(1).neighbor_count() == 4);
static_assert(stencil<3>::star(1).neighbor_count() == 6);
static_assert(stencil<1>::box(1).neighbor_count() == 2);
static_assert(stencil<2>::box(1).neighbor_count() == 8);
static_assert(stencil<3>::box(2).neighbor_count() == 26);
static_assert(stencil<3>::box(1).max_width() == 1);
static_assert(stencil<2>::star(0).neighbor_count() == 0);
static_assert(stencil<3>::box(0).neighbor_count() == 0);

// ---- zero-width sides are pruned -----------------------------------------------------------
static_assert(stencil<2>::star({0, 0}, {2, 2}).neighbor_count() == 2);
static_assert(stencil<2>::star({0, 0}, {2, 2}).has({1, 0}));
static_assert(stencil<2>::star({0, 0}, {2, 2}).has({0, 1}));
static_assert(!stencil<2>::star({0, 0}, {2, 2}).has({-1, 0}));
static_assert(stencil<2>::box({0, 0}, {2, 2}).neighbor_count() == 3);  // +x, +y, (+x,+y)
static_assert(!stencil<2>::box({0, 0}, {2, 2}).has({-1, 1}));
static_assert(stencil<3>::box({1, 0, 1}, {1, 0, 1}).neighbor_count() == 8);  // y flat: 2-D box
static_assert(stencil<3>::star({1, 0, 0}, {0, 0, 2}).neighbor_count() == 2);
static_assert(stencil<1>::star({0}, {3}).neighbor_count() == 1);
static_assert(stencil<3>::box({1, 2, 0}, {0, 1, 3}).neighbor_count() == 2 * 3 * 2 - 1);

// ---- from_offsets --------------------------------------------------------------------------
constexpr auto diag = stencil<2>::from_offsets({{1, 1}});
static_assert(diag.neighbor_count() == 3);  // corner + the two faces beside it
static_assert(diag.has({1, 1}) && diag.has({1, 0}) && diag.has({0, 1}));
static_assert(!diag.has({-1, 0}) && !diag.has({1, -1}));
static_assert(diag.lo == halox::widths<2>{0, 0} && diag.hi == halox::widths<2>{1, 1});

constexpr auto five = stencil<2>::from_offsets({{0, 0}, {-1, 0}, {1, 0}, {0, -1}, {0, 1}});
static_assert(five == stencil<2>::star(1));
constexpr auto nine = stencil<2>::from_offsets(
    {{-1, -1}, {-1, 0}, {-1, 1}, {0, -1}, {0, 0}, {0, 1}, {1, -1}, {1, 0}, {1, 1}});
static_assert(nine == stencil<2>::box(1));

constexpr auto wide = stencil<3>::from_offsets({{-3, 0, 0}, {0, 2, 0}, {0, 0, 1}, {0, 0, -1}});
static_assert(wide.lo == halox::widths<3>{3, 0, 1});
static_assert(wide.hi == halox::widths<3>{0, 2, 1});
static_assert(wide.neighbor_count() == 4);
static_assert(wide == stencil<3>::star({3, 0, 1}, {0, 2, 1}));
static_assert(wide.max_width() == 3);

constexpr auto mixed = stencil<3>::from_offsets({{-2, 1, 0}, {0, 0, 3}});
static_assert(mixed.lo == halox::widths<3>{2, 0, 0} && mixed.hi == halox::widths<3>{0, 1, 3});
// (-2,1,0) needs (-1,0,0), (0,1,0), (-1,1,0); (0,0,3) needs (0,0,1)
static_assert(mixed.neighbor_count() == 4);
static_assert(mixed.has({-1, 1, 0}) && mixed.has({0, 0, 1}) && !mixed.has({-1, 1, 1}));

static_assert(stencil<1>::from_offsets({{0}}).neighbor_count() == 0);

// ---- encode / decode -----------------------------------------------------------------------
template <int D>
constexpr bool round_trip() {
  for (int k = 0; k < stencil<D>::slots; ++k) {
    const auto d = stencil<D>::decode(k);
    for (int v : d)
      if (v < -1 || v > 1) return false;
    if (stencil<D>::encode(d) != k) return false;
  }
  return true;
}
static_assert(round_trip<1>() && round_trip<2>() && round_trip<3>() && round_trip<4>());
static_assert(stencil<3>::encode({-1, -1, -1}) == 0);
static_assert(stencil<3>::encode({0, 0, 0}) == 13);
static_assert(stencil<3>::encode({1, -1, -1}) == 2);  // dimension 0 fastest
static_assert(stencil<3>::encode({-1, -1, 1}) == 18);
static_assert(stencil<3>::slots == 27 && stencil<1>::slots == 3);

// ---- region extents ------------------------------------------------------------------------
constexpr auto asym = stencil<3>::box({1, 2, 3}, {4, 5, 6});
static_assert(asym.region_extents<long>({-1, 0, 1}, {10, 20, 30}) == std::array<long, 3>{1, 20, 6});
static_assert(asym.region_extents<long>({1, -1, 0}, {10, 20, 30}) == std::array<long, 3>{4, 2, 30});
static_assert(asym.region_width({0, 1, -1}, 0) == 0 && asym.region_width({0, 1, -1}, 1) == 5 &&
              asym.region_width({0, 1, -1}, 2) == 3);
static_assert(asym.max_width() == 6);

// ---- directions() --------------------------------------------------------------------------
constexpr auto star3 = stencil<3>::star(1);
static_assert(star3.directions<6>()[0] == halox::direction<3>{0, 0, -1});
static_assert(star3.directions<6>()[5] == halox::direction<3>{0, 0, 1});

// ---- stencils as template arguments --------------------------------------------------------
template <halox::stencil<2> S>
struct kernel {
  static constexpr int neighbors = S.neighbor_count();
  static constexpr int reach = S.max_width();
  static int halo_cells(int nx, int ny) {
    int cells = 0;
    const auto dirs = S.directions();
    for (int k = 0; k < S.neighbor_count(); ++k) {
      const auto e = S.template region_extents<int>(dirs[k], {nx, ny});
      cells += e[0] * e[1];
    }
    return cells;
  }
};

TEST_CASE("stencil as a template argument") {
  constexpr auto up = halox::stencil<2>::star({0, 0}, {2, 2});
  STATIC_REQUIRE(kernel<halox::stencil<2>::star(1)>::neighbors == 4);
  STATIC_REQUIRE(kernel<halox::stencil<2>::box(2)>::neighbors == 8);
  STATIC_REQUIRE(kernel<up>::neighbors == 2);
  STATIC_REQUIRE(kernel<up>::reach == 2);
  // Distinct stencils are distinct instantiations.
  STATIC_REQUIRE(
      !std::is_same_v<kernel<halox::stencil<2>::star(1)>, kernel<halox::stencil<2>::box(1)>>);
  CHECK(kernel<halox::stencil<2>::star(1)>::halo_cells(5, 7) == 2 * 7 + 2 * 5);
  CHECK(kernel<halox::stencil<2>::box(1)>::halo_cells(5, 7) == 7 * 9 - 5 * 7);
  CHECK(kernel<up>::halo_cells(5, 7) == 2 * 7 + 2 * 5);
}

TEST_CASE("directions lists exactly the used slots, in slot order") {
  const auto check = [](const auto& st) {
    using S = std::decay_t<decltype(st)>;
    const auto dirs = st.directions();
    std::set<int> seen;
    int prev = -1;
    for (int k = 0; k < st.neighbor_count(); ++k) {
      const int code = S::encode(dirs[k]);
      CHECK(code > prev);
      prev = code;
      CHECK(st.has(dirs[k]));
      seen.insert(code);
    }
    int used = 0;
    for (int k = 0; k < S::slots; ++k) used += st.used[k];
    CHECK(int(seen.size()) == used);
    CHECK(!st.used[S::slots / 2]);  // the centre never is a neighbour
  };
  check(stencil<3>::box({1, 0, 2}, {0, 3, 1}));
  check(stencil<3>::star({1, 0, 2}, {0, 3, 1}));
  check(stencil<2>::from_offsets({{1, -1}, {-2, 0}}));
  check(stencil<1>::box(3));
}

TEST_CASE("runtime construction matches compile-time construction") {
  // Builders are constexpr but must also work with runtime widths.
  volatile int w = 2;
  const auto s = stencil<3>::star({w, 0, w}, {0, w, 1});
  CHECK(s.neighbor_count() == 4);
  CHECK(s == stencil<3>::star({2, 0, 2}, {0, 2, 1}));
  const auto b = stencil<2>::box(w);
  CHECK(b.neighbor_count() == 8);
  CHECK(b.lo == halox::widths<2>{2, 2});
}

TEST_CASE("halo_pattern: directions and region rules are compile-time values") {
  constexpr auto st = halox::stencil<3>::box(1);
  using pat = halox::halo_pattern<st>;
  STATIC_REQUIRE(pat::count == 26);
  STATIC_REQUIRE(pat::directions[0] == halox::direction<3>{-1, -1, -1});
  STATIC_REQUIRE(pat::directions[25] == halox::direction<3>{1, 1, 1});
  constexpr halox::box<3> b{{0, 0, 0}, {8, 6, 4}};
  // The +,+,+ corner: one cell beyond every high side.
  constexpr auto corner = pat::regions[25](b);
  STATIC_REQUIRE(corner == halox::box<3>{{8, 6, 4}, {9, 7, 5}});
  // The -x face (slot of {-1, 0, 0}): below x, the box's extent along y and z.
  constexpr int face = halox::stencil<3>::encode({-1, 0, 0});
  constexpr auto fx = [] {
    for (int k = 0; k < pat::count; ++k)
      if (halox::stencil<3>::encode(pat::directions[std::size_t(k)]) == face)
        return pat::regions[std::size_t(k)](halox::box<3>{{0, 0, 0}, {8, 6, 4}});
    return halox::box<3>{};
  }();
  STATIC_REQUIRE(fx == halox::box<3>{{-1, 0, 0}, {0, 6, 4}});
  // Asymmetric widths: an upwind stencil's one region, and its interior.
  constexpr auto up = halox::stencil<2>::star({0, 0}, {2, 3});
  using upat = halox::halo_pattern<up>;
  STATIC_REQUIRE(upat::count == 2);
  constexpr halox::box<2> b2{{10, 20}, {15, 30}};
  STATIC_REQUIRE(upat::regions[0](b2) == halox::box<2>{{15, 20}, {17, 30}});
  STATIC_REQUIRE(upat::regions[1](b2) == halox::box<2>{{10, 30}, {15, 33}});
  STATIC_REQUIRE(upat::interior(b2) == halox::box<2>{{10, 20}, {13, 27}});
  // Every region rule at run time agrees with the region's extents the stencil reports.
  for (int k = 0; k < pat::count; ++k) {
    const auto r = pat::regions[std::size_t(k)](b);
    const auto e = st.region_extents<halox::index>(pat::directions[std::size_t(k)], b.size());
    for (int i = 0; i < 3; ++i) CHECK(r.hi[i] - r.lo[i] == e[std::size_t(i)]);
  }
}
