// MPI tests of the halo exchange: every halo cell of every field is checked against the model in
// check.hpp (wrapped global source, or untouched sentinel), over dimensions, stencils,
// periodicity, value types, layouts, user memory, process grids and box-list domains.
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <boost/mpi/collectives.hpp>

#include <span>

#include "centering_check.hpp"
#include "check.hpp"
#include "support.hpp"

namespace mpi = boost::mpi;
using halox::box;
using idx = halox::index;

namespace {

template <int D>
std::string per_str(const halox::periodic<D>& p) {
  std::string s;
  for (int i = 0; i < D; ++i) s += p[i] ? 'P' : 'n';
  return s;
}

// One field of T made by the domain, filled, exchanged once, checked.
template <class T = double, class Dom, int D>
test_support::result exchange_once(const Dom& dom, const halox::stencil<D>& st,
                                   halox::field_options o = {}) {
  auto f = dom.template make_field<T>(st, halox::host, o);
  test_support::fill(dom, f, {0, 0});
  auto ex = halox::make_exchange(dom, st, f);
  ex.exchange();
  return test_support::check(dom, f, st, {0, 0});
}

#define REQUIRE_OK(expr) HXT_REQUIRE_OK(expr)

// Sum over all ranks.
long long total(const mpi::communicator& c, long long v) {
  return mpi::all_reduce(c, v, std::plus<long long>());
}

}  // namespace

// ---- dimensions, stencils, periodicity -------------------------------------------------------

TEST_CASE("1-D exchanges") {
  mpi::communicator world;
  const std::vector<halox::stencil<1>> stencils = {
      halox::stencil<1>::star(1), halox::stencil<1>::box(2), halox::stencil<1>::star({0}, {2}),
      halox::stencil<1>::star({3}, {1})};
  for (bool p : {false, true}) {
    halox::cartesian<1> dom(world, {13}, halox::periodic{p});
    for (const auto& st : stencils) {
      INFO("periodic " << p << " lo " << st.lo[0] << " hi " << st.hi[0]);
      const auto r = exchange_once(dom, st);
      REQUIRE_OK(r);
      if (p) REQUIRE(r.filled == st.lo[0] + st.hi[0]);
    }
  }
}

TEST_CASE("2-D exchanges: star, box, asymmetric widths, every periodicity") {
  mpi::communicator world;
  const std::vector<halox::stencil<2>> stencils = {
      halox::stencil<2>::star(1), halox::stencil<2>::box(1), halox::stencil<2>::box({0, 0}, {2, 2}),
      halox::stencil<2>::star({2, 1}, {0, 3}), halox::stencil<2>::from_offsets({{1, -1}, {-2, 0}})};
  for (int m = 0; m < 4; ++m) {
    const auto per = test_support::periodic_mask<2>(m);
    halox::cartesian<2> dom(world, {9, 7}, per);
    for (std::size_t s = 0; s < stencils.size(); ++s) {
      INFO("periodic " << per_str(per) << " stencil #" << s);
      const auto r = exchange_once(dom, stencils[s]);
      REQUIRE_OK(r);
      // The sum of filled halo cells over all ranks follows from the model; with everything
      // periodic every rank's halo is full.
      if (m == 3) {
        const auto o = dom.local_boxes()[0];
        const auto st = stencils[s];
        idx want = 0;
        const auto dirs = st.directions();
        for (int k = 0; k < st.neighbor_count(); ++k) {
          const auto e = st.region_extents<idx>(dirs[k], o.size());
          want += e[0] * e[1];
        }
        REQUIRE(r.filled == want);
      }
    }
  }
}

TEST_CASE("3-D exchanges: star, box, asymmetric widths, every periodicity") {
  mpi::communicator world;
  const std::vector<halox::stencil<3>> stencils = {
      halox::stencil<3>::star(1), halox::stencil<3>::box(1),
      halox::stencil<3>::box({0, 1, 2}, {2, 0, 1}), halox::stencil<3>::star({0, 0, 0}, {2, 2, 2}),
      halox::stencil<3>::star(0)};  // no neighbours: nothing may change
  for (int m = 0; m < 8; ++m) {
    const auto per = test_support::periodic_mask<3>(m);
    halox::cartesian<3> dom(world, {6, 5, 7}, per);
    for (std::size_t s = 0; s < stencils.size(); ++s) {
      INFO("periodic " << per_str(per) << " stencil #" << s);
      const auto r = exchange_once(dom, stencils[s]);
      REQUIRE_OK(r);
      if (m == 7) REQUIRE((r.filled > 0) == (stencils[s].neighbor_count() > 0));
    }
  }
}

TEST_CASE("a stencil fixed at compile time builds the same plan and exchange") {
  mpi::communicator world;
  constexpr auto st = halox::stencil<3>::star({2, 1, 0}, {1, 0, 2});
  for (int m = 0; m < 8; ++m) {
    const auto per = test_support::periodic_mask<3>(m);
    INFO("periodic " << per_str(per));
    halox::cartesian<3> dom(world, {9, 7, 6}, per);
    const auto a = halox::make_plan<st>(dom), b = halox::make_plan(dom, st);
    REQUIRE(a.local == b.local);
    REQUIRE(a.sends.size() == b.sends.size());
    REQUIRE(a.recvs.size() == b.recvs.size());
    for (std::size_t k = 0; k < a.sends.size(); ++k) {
      CHECK(a.sends[k].rank == b.sends[k].rank);
      CHECK(a.sends[k].items == b.sends[k].items);
    }
    for (std::size_t k = 0; k < a.recvs.size(); ++k) {
      CHECK(a.recvs[k].rank == b.recvs[k].rank);
      CHECK(a.recvs[k].items == b.recvs[k].items);
    }
    auto f = dom.make_field<double>(st);
    test_support::fill(dom, f, {0, m});
    auto ex = halox::make_exchange<st>(dom, f);
    ex.exchange();
    REQUIRE_OK(test_support::check(dom, f, st, {0, m}));
  }
}

TEST_CASE("4-D exchange (the largest supported dimension)") {
  mpi::communicator world;
  halox::cartesian<4> dom(world, {3, 4, 2, 3}, halox::periodic{true, false, true, true});
  REQUIRE_OK(exchange_once<float>(dom, halox::stencil<4>::box(1),
                                  halox::field_options{2, halox::components_layout::planar,
                                                       halox::layout::column_major, "4d"}));
  REQUIRE_OK(exchange_once<test_support::triple>(
      dom, halox::stencil<4>::star({1, 2, 0, 1}, {2, 0, 1, 1})));
}

TEST_CASE("explicit process grids: decomposition and exchange") {
  mpi::communicator world;
  auto run = [&](auto dtag, const auto& n) {
    constexpr int D = decltype(dtag)::value;
    const auto gs = test_support::all_grids<D>(world.size(), n);
    REQUIRE(!gs.empty());
    for (const auto& g : gs) {
      halox::extents<D> gd{};
      for (int i = 0; i < D; ++i) gd[i] = g.dims[i];
      INFO("grid " << test_support::str<D>(gd));
      halox::periodic<D> per;
      per.flags[0] = true;
      halox::cartesian<D> dom(world, n, per, g);
      REQUIRE(dom.grid() == g);
      // ranks are row-major over the grid; blocks follow split(); they tile the domain
      idx vol = 0;
      for (int r = 0; r < world.size(); ++r) {
        const auto c = dom.coords(r);
        REQUIRE(dom.rank_of(c) == r);
        REQUIRE(c[D - 1] == r % g.dims[D - 1]);
        const auto b = dom.box_of(r);
        for (int i = 0; i < D; ++i) {
          const auto s = halox::split(n[i], g.dims[i], c[i]);
          REQUIRE(b.lo[i] == s.first);
          REQUIRE(b.hi[i] == s.last);
        }
        vol += b.volume();
        for (int q = 0; q < r; ++q) REQUIRE(halox::intersect(b, dom.box_of(q)).empty());
      }
      REQUIRE(vol == dom.global_box().volume());
      REQUIRE(dom.local_boxes().size() == 1);
      REQUIRE(dom.local_boxes()[0] == dom.box_of(world.rank()));
      REQUIRE_OK(exchange_once(dom, halox::stencil<D>::box(1)));
      REQUIRE_OK(exchange_once(dom, halox::stencil<D>::star(2)));
    }
  };
  run(std::integral_constant<int, 2>{}, halox::extents<2>{9, 8});
  run(std::integral_constant<int, 3>{}, halox::extents<3>{4, 6, 5});
}

// ---- several fields, types, components and layouts ---------------------------------------------

TEST_CASE("several fields of different types in one exchange") {
  mpi::communicator world;
  constexpr auto st = halox::stencil<3>::box({1, 2, 1}, {2, 1, 1});
  halox::cartesian<3> dom(world, {7, 6, 5}, halox::periodic{true, false, true});
  halox::field_options planar2{2, halox::components_layout::planar, halox::layout::row_major, "f"};
  halox::field_options inter3{3, halox::components_layout::interleaved, halox::layout::column_major,
                              "i"};
  auto a = dom.make_field<double>(st);
  auto b = dom.make_field<float>(st, halox::host, planar2);
  auto c = dom.make_field<int>(st, halox::host, inter3);
  auto d = dom.make_field<test_support::triple>(st, halox::host, 2);
  test_support::fill(dom, a, {0, 0});
  test_support::fill(dom, b, {1, 0});
  test_support::fill(dom, c, {2, 0});
  test_support::fill(dom, d, {3, 0});
  auto ex = halox::make_exchange(dom, st, a, b, c, d);
  for (int it = 0; it < 3; ++it) {
    if (it > 0) {
      test_support::fill_owned(a, dom.global_box().hi, {0, it});
      test_support::fill_owned(b, dom.global_box().hi, {1, it});
      test_support::fill_owned(c, dom.global_box().hi, {2, it});
      test_support::fill_owned(d, dom.global_box().hi, {3, it});
    }
    ex.exchange();
    INFO("iteration " << it);
    REQUIRE_OK(test_support::check(dom, a, st, {0, it}));
    REQUIRE_OK(test_support::check(dom, b, st, {1, it}));
    REQUIRE_OK(test_support::check(dom, c, st, {2, it}));
    REQUIRE_OK(test_support::check(dom, d, st, {3, it}));
  }
}

TEST_CASE("fields chosen at run time: a vector of one type, a vector of mixed types") {
  mpi::communicator world;
  const auto st = halox::stencil<2>::box({1, 2}, {2, 1});
  halox::cartesian<2> dom(world, {9, 7}, halox::periodic{true, false});
  // Which fields an app exchanges often depends on its flags: here on the step.
  std::vector<halox::field<double, 2>> same;
  for (int k = 0; k < 3; ++k) same.push_back(dom.make_field<double>(st));
  std::vector<halox::exchange_field<2>> mixed{same[0],
                                              dom.make_field<std::int32_t>(st, halox::host, 2),
                                              dom.make_field<test_support::triple>(st)};
  const auto i32 = halox::field<std::int32_t, 2>(mixed[1].state);
  const auto tri = halox::field<test_support::triple, 2>(mixed[2].state);
  auto ex_same = halox::make_exchange(dom, st, halox::exchange_options{}, same);
  auto ex_mixed = halox::make_exchange(dom, st, halox::exchange_options{}, mixed);
  for (int k = 0; k < 3; ++k) test_support::fill(dom, same[std::size_t(k)], {k, 0});
  ex_same.exchange();
  for (int k = 0; k < 3; ++k)
    REQUIRE_OK(test_support::check(dom, same[std::size_t(k)], st, {k, 0}));
  test_support::fill(dom, same[0], {0, 1});
  test_support::fill(dom, i32, {1, 1});
  test_support::fill(dom, tri, {2, 1});
  ex_mixed.exchange();
  REQUIRE_OK(test_support::check(dom, same[0], st, {0, 1}));
  REQUIRE_OK(test_support::check(dom, i32, st, {1, 1}));
  REQUIRE_OK(test_support::check(dom, tri, st, {2, 1}));
  // The same declaration as the parameter-pack call, so ranks may mix the two spellings.
  auto ex_pack = halox::make_exchange(dom, st, same[0], i32, tri);
  REQUIRE(ex_pack.describe() == ex_mixed.describe());
  // An empty list is refused on every rank before anything is sent.
  const std::vector<halox::exchange_field<2>> none;
  REQUIRE_THROWS_WITH(halox::make_exchange(dom, st, halox::exchange_options{}, none),
                      Catch::Contains("needs at least one field"));
}

TEST_CASE("an empty halo_exchange: a member assigned after its domain, refused until then") {
  mpi::communicator world;
  const auto st = halox::stencil<2>::star(1);
  struct solver {  // an app's class: the exchange is built once the fields exist
    halox::cartesian<2> dom;
    halox::field<double, 2> u;
    halox::halo_exchange ex;
  };
  solver app{halox::cartesian<2>(world, {8, 6}, halox::periodic<2>::all()), {}, {}};
  REQUIRE(app.ex.empty());
  REQUIRE_FALSE(app.ex.in_flight());
  REQUIRE_THROWS_WITH(app.ex.exchange(), Catch::Contains("this halo_exchange is empty"));
  REQUIRE_THROWS_WITH(app.ex.describe(), Catch::Contains("assign one from make_exchange"));
  app.u = app.dom.make_field<double>(st);
  app.ex = halox::make_exchange(app.dom, st, app.u);
  REQUIRE_FALSE(app.ex.empty());
  test_support::fill(app.dom, app.u, {0, 0});
  app.ex.exchange();
  REQUIRE_OK(test_support::check(app.dom, app.u, st, {0, 0}));
  auto moved = std::move(app.ex);
  REQUIRE(app.ex.empty());
  REQUIRE_THROWS_WITH(app.ex.start(), Catch::Contains("moved from"));
}

TEST_CASE("components interleaved and planar, row- and column-major") {
  mpi::communicator world;
  constexpr auto st = halox::stencil<2>::box({1, 0}, {2, 1});
  halox::cartesian<2> dom(world, {10, 7}, halox::periodic{true, true});
  for (auto cl : {halox::components_layout::interleaved, halox::components_layout::planar})
    for (auto order : {halox::layout::row_major, halox::layout::column_major})
      for (int nc : {1, 3}) {
        halox::field_options o{nc, cl, order, "u"};
        INFO("components " << nc << " planar " << (cl == halox::components_layout::planar)
                           << " column-major " << (order == halox::layout::column_major));
        auto f = dom.make_field<float>(st, halox::host, o);
        const auto a = f.allocated_box().size();
        // the layout is what was asked for
        if (order == halox::layout::row_major)
          REQUIRE(f.strides()[0] > f.strides()[1]);
        else
          REQUIRE(f.strides()[0] < f.strides()[1]);
        if (nc > 1 && cl == halox::components_layout::planar)
          REQUIRE(f.component_stride() == a[0] * a[1]);
        if (nc > 1 && cl == halox::components_layout::interleaved) {
          REQUIRE(f.component_stride() == 1);
          REQUIRE(std::min(f.strides()[0], f.strides()[1]) == nc);
        }
        test_support::fill(dom, f, {1, 0});
        auto ex = halox::make_exchange(dom, st, f);
        ex.exchange();
        REQUIRE_OK(test_support::check(dom, f, st, {1, 0}));
      }
}

TEST_CASE("padding wider than the stencil stays untouched") {
  mpi::communicator world;
  constexpr auto st = halox::stencil<2>::star(1);
  halox::cartesian<2> dom(world, {8, 9}, halox::periodic{true, true});
  auto f = dom.make_field<double>(halox::widths<2>{3, 2}, halox::widths<2>{1, 4}, halox::host, {});
  test_support::fill(dom, f, {0, 0});
  auto ex = halox::make_exchange(dom, st, f);
  ex.exchange();
  const auto r = test_support::check(dom, f, st, {0, 0});
  REQUIRE_OK(r);
  REQUIRE(r.untouched > 0);
}

// ---- user memory -----------------------------------------------------------------------------

TEST_CASE("wrapped user memory, row-major and column-major") {
  mpi::communicator world;
  constexpr auto st = halox::stencil<3>::box(1);
  halox::cartesian<3> dom(world, {6, 7, 5}, halox::periodic{true, false, true});
  const halox::widths<3> plo{1, 2, 1}, phi{2, 1, 1};  // wider than the stencil in places
  const auto o = dom.local_boxes()[0];
  halox::extents<3> alloc{};
  for (int i = 0; i < 3; ++i) alloc[i] = o.hi[i] - o.lo[i] + plo[i] + phi[i];
  for (auto order : {halox::layout::row_major, halox::layout::column_major})
    for (int nc : {1, 2}) {
      INFO("column-major " << (order == halox::layout::column_major) << " components " << nc);
      std::vector<double> mem(std::size_t(alloc[0] * alloc[1] * alloc[2] * nc) + 5, -99.0);
      halox::field_options fo{nc, halox::components_layout::interleaved, order, "user"};
      auto f = dom.wrap<double>(mem.data(), alloc, plo, phi, fo);
      // the field addresses the user's array as the user laid it out
      test_support::for_cells<3>(f.allocated_box(), [&](const auto& g) {
        idx l[3];
        for (int i = 0; i < 3; ++i) l[i] = g[i] - o.lo[i] + plo[i];
        const idx cell = order == halox::layout::row_major
                             ? (l[0] * alloc[1] + l[1]) * alloc[2] + l[2]
                             : (l[2] * alloc[1] + l[1]) * alloc[0] + l[0];
        for (int c = 0; c < nc; ++c) REQUIRE(f.pointer(g, c) == mem.data() + cell * nc + c);
      });
      test_support::fill(dom, f, {2, 0});
      auto ex = halox::make_exchange(dom, st, f);
      ex.exchange();
      REQUIRE_OK(test_support::check(dom, f, st, {2, 0}));
      for (std::size_t k = mem.size() - 5; k < mem.size(); ++k) REQUIRE(mem[k] == -99.0);
    }
}

TEST_CASE("wrap_strided: user strides with gaps, planar components") {
  mpi::communicator world;
  constexpr auto st = halox::stencil<2>::box({2, 1}, {1, 2});
  halox::cartesian<2> dom(world, {9, 6}, halox::periodic{true, true});
  const auto o = dom.local_boxes()[0];
  const idx a0 = o.hi[0] - o.lo[0] + 3, a1 = o.hi[1] - o.lo[1] + 3;
  // dimension 0 fastest with a gap of 2 elements after each run, then a gap between components
  const halox::extents<2> strides{1, a0 + 2};
  const idx comp_stride = a1 * (a0 + 2) + 7;
  const int nc = 2;
  std::vector<int> mem(std::size_t(comp_stride * nc), -5);
  halox::field_options fo;
  fo.components = nc;
  auto f = dom.wrap_strided<int>(mem.data(), st.lo, st.hi, strides, comp_stride, fo);
  std::vector<char> addressed(mem.size(), 0);
  test_support::for_cells<2>(f.allocated_box(), [&](const auto& g) {
    for (int c = 0; c < nc; ++c) {
      const auto k = f.pointer(g, c) - mem.data();
      REQUIRE(k == (g[0] - o.lo[0] + 2) * strides[0] + (g[1] - o.lo[1] + 1) * strides[1] +
                       c * comp_stride);
      addressed[std::size_t(k)] = 1;
    }
  });
  test_support::fill(dom, f, {1, 0});
  // gaps get their own marker
  for (std::size_t k = 0; k < mem.size(); ++k)
    if (!addressed[k]) mem[k] = -1234;
  auto ex = halox::make_exchange(dom, st, f);
  ex.exchange();
  REQUIRE_OK(test_support::check(dom, f, st, {1, 0}));
  for (std::size_t k = 0; k < mem.size(); ++k)
    if (!addressed[k]) REQUIRE(mem[k] == -1234);
}

// ---- peculiar neighbourhoods -----------------------------------------------------------------

TEST_CASE("halos wider than a neighbour's box") {
  mpi::communicator world;
  for (bool p : {true, false}) {
    halox::cartesian<1> dom(world, {10}, halox::periodic{p});
    for (const auto& st : {halox::stencil<1>::star(3), halox::stencil<1>::star({0}, {3}),
                           halox::stencil<1>::star({3}, {1})}) {
      INFO("periodic " << p << " widths " << st.lo[0] << "/" << st.hi[0]);
      REQUIRE_OK(exchange_once<int>(dom, st));
    }
  }
  halox::cartesian<2> dom2(world, {3, 4}, halox::periodic{true, true});
  REQUIRE_OK(exchange_once(dom2, halox::stencil<2>::box(3)));
  REQUIRE_OK(exchange_once(dom2, halox::stencil<2>::box({4, 0}, {1, 5})));
  halox::cartesian<3> dom3(world, {2, 3, 2}, halox::periodic{true, false, true});
  REQUIRE_OK(exchange_once(dom3, halox::stencil<3>::box(2)));
}

TEST_CASE("halos up to max_periodic_wraps times a periodic extent wrap; wider ones are refused") {
  mpi::communicator world;
  static_assert(halox::max_periodic_wraps == 16);
  halox::cartesian<2> dom(world, {4, 4}, halox::periodic{true, true});
  // 64 = 16 x 4, the widest halo a 4-cell periodic dimension takes: 17 images per side.
  REQUIRE_OK(exchange_once(dom, halox::stencil<2>::star({64, 0}, {64, 0})));
  REQUIRE_OK(exchange_once(dom, halox::stencil<2>::star({5, 64}, {63, 9})));
  REQUIRE_OK(exchange_once<int>(dom, halox::stencil<2>::box({64, 3}, {7, 13})));
  // One more cell, or the width of the issue, is refused at once (make_plan: this rank).
  REQUIRE_THROWS_WITH(halox::make_plan(dom, halox::stencil<2>::star({65, 0}, {0, 0})),
                      Catch::Contains("halo width 65 on the low side of dimension 0") &&
                          Catch::Contains("(here: width at most 64)"));
  REQUIRE_THROWS_AS(halox::make_plan(dom, halox::stencil<2>::star({1000000, 0}, {1000000, 0})),
                    halox::error);
  // Along a non-periodic dimension a halo only clips, whatever its width.
  halox::cartesian<2> open(world, {4, 4}, halox::periodic{false, true});
  const auto plan = halox::make_plan(open, halox::stencil<2>::star({1000000, 0}, {1000000, 0}));
  std::size_t pieces = plan.local.size();
  for (const auto& p : plan.recvs) pieces += p.items.size();
  REQUIRE(pieces <= 2 * std::size_t(world.size()));
  REQUIRE_OK(exchange_once(halox::cartesian<1>(world, {8}, halox::periodic{false}),
                           halox::stencil<1>::star(200)));
  // Centred on faces along the periodic dimension: its points wrap as often as the cells.
  halox::field_options faces;
  faces.at = halox::centering::face(0);
  auto f = dom.make_field<double>(halox::stencil<2>::star({64, 1}, {64, 1}), halox::host, faces);
  test_support::fill_points(f, {2, 0});
  auto ex = halox::make_exchange(dom, halox::stencil<2>::star({64, 1}, {64, 1}), f);
  ex.exchange();
  REQUIRE_OK(test_support::check_points(f, halox::stencil<2>::star({64, 1}, {64, 1}), {2, 0}));
}

TEST_CASE("2 ranks periodic: the same peer on both sides; 1 rank periodic: itself") {
  mpi::communicator world;
  // groups of two ranks (an odd last rank is alone)
  mpi::communicator pair = world.split(world.rank() / 2);
  {
    halox::cartesian<1> dom(pair, {5}, halox::periodic{true});
    auto f = dom.make_field<double>(halox::stencil<1>::star(2));
    test_support::fill(dom, f, {0, 0});
    auto ex = halox::make_exchange(dom, halox::stencil<1>::star(2), f);
    ex.exchange();
    REQUIRE_OK(test_support::check(dom, f, halox::stencil<1>::star(2), {0, 0}));
    // one message per peer, even when the peer is on both sides
    if (pair.size() == 2)
      REQUIRE_THAT(ex.describe(), Catch::Contains("sends 1 message(s)"));
    else
      REQUIRE_THAT(ex.describe(), Catch::Contains("sends 0 message(s)"));
  }
  {
    halox::cartesian<2> dom(pair, {4, 6}, halox::periodic{true, true},
                            halox::process_grid<2>{{pair.size(), 1}});
    REQUIRE_OK(exchange_once(dom, halox::stencil<2>::box(2)));
    REQUIRE_OK(exchange_once(dom, halox::stencil<2>::box({5, 1}, {0, 3})));
  }
  mpi::communicator alone = world.split(world.rank());
  {
    halox::cartesian<3> dom(alone, {3, 2, 4}, halox::periodic{true, true, true});
    constexpr auto st = halox::stencil<3>::box({2, 3, 1}, {1, 2, 5});
    auto f = dom.make_field<test_support::triple>(st);
    test_support::fill(dom, f, {0, 0});
    auto ex = halox::make_exchange(dom, st, f);
    ex.exchange();
    REQUIRE_OK(test_support::check(dom, f, st, {0, 0}));
    REQUIRE_THAT(ex.describe(), Catch::Contains("sends 0 message(s)"));
    REQUIRE_THAT(ex.describe(), Catch::Contains("receives 0 message(s)"));
    halox::cartesian<3> dom2(alone, {3, 2, 4}, halox::periodic{false, true, false});
    REQUIRE_OK(exchange_once(dom2, st));
  }
}

// ---- split phase, concurrency, repetition ----------------------------------------------------

TEST_CASE("split-phase start / test / wait") {
  mpi::communicator world;
  constexpr auto st = halox::stencil<2>::box(1);
  halox::cartesian<2> dom(world, {11, 5}, halox::periodic{true, false});
  auto f = dom.make_field<double>(st);
  auto ex = halox::make_exchange(dom, st, f);
  REQUIRE(!ex.in_flight());
  for (int it = 0; it < 4; ++it) {
    test_support::fill(dom, f, {0, it});
    auto h = ex.start();
    REQUIRE(ex.in_flight());
    if (it % 2 == 0) {
      long spins = 0;
      while (!h.test()) ++spins;
      INFO("test() polls " << spins);
      REQUIRE(!ex.in_flight());
      REQUIRE(h.test());  // stays complete
    } else {
      h.wait();
      REQUIRE(!ex.in_flight());
      h.wait();  // idempotent
    }
    INFO("iteration " << it);
    REQUIRE_OK(test_support::check(dom, f, st, {0, it}));
  }
  // a handle of a completed exchange stays complete after the object starts a newer one
  test_support::fill(dom, f, {0, 7});
  auto old = ex.start();
  old.wait();
  test_support::fill(dom, f, {0, 8});
  auto young = ex.start();
  old.wait();  // no-op: must not complete (or disturb) the newer exchange
  REQUIRE(old.test());
  REQUIRE(ex.in_flight());
  young.wait();
  REQUIRE(!ex.in_flight());
  REQUIRE_OK(test_support::check(dom, f, st, {0, 8}));
}

TEST_CASE("destroying an exchange in flight completes it") {
  mpi::communicator world;
  constexpr auto st = halox::stencil<2>::box(2);
  halox::cartesian<2> dom(world, {9, 10}, halox::periodic{true, true});
  auto f = dom.make_field<int>(st);
  test_support::fill(dom, f, {0, 0});
  {
    auto ex = halox::make_exchange(dom, st, f);
    auto h = ex.start();
    (void)h;
  }
  REQUIRE_OK(test_support::check(dom, f, st, {0, 0}));
}

TEST_CASE("two exchange objects in flight at once") {
  mpi::communicator world;
  constexpr auto s1 = halox::stencil<3>::star(1);
  constexpr auto s2 = halox::stencil<3>::box(2);
  halox::cartesian<3> dom(world, {5, 6, 4}, halox::periodic{true, true, false});
  auto u = dom.make_field<double>(s1);
  auto v = dom.make_field<int>(s2, halox::host, 2);
  auto w = dom.make_field<double>(s2);
  auto e1 = halox::make_exchange(dom, s1, u);
  auto e2 = halox::make_exchange(dom, s2, v, w);
  for (int it = 0; it < 3; ++it) {
    test_support::fill(dom, u, {0, it});
    test_support::fill(dom, v, {1, it});
    test_support::fill(dom, w, {2, it});
    auto h1 = e1.start();
    auto h2 = e2.start();
    REQUIRE(e1.in_flight());
    REQUIRE(e2.in_flight());
    if (it % 2) {
      h1.wait();
      h2.wait();
    } else {
      h2.wait();
      while (!h1.test()) {
      }
    }
    REQUIRE_OK(test_support::check(dom, u, s1, {0, it}));
    REQUIRE_OK(test_support::check(dom, v, s2, {1, it}));
    REQUIRE_OK(test_support::check(dom, w, s2, {2, it}));
  }
}

TEST_CASE("repeated exchanges move the new data; moved exchange objects work") {
  mpi::communicator world;
  constexpr auto st = halox::stencil<2>::star({1, 2}, {2, 0});
  halox::cartesian<2> dom(world, {7, 12}, halox::periodic{true, true});
  auto f = dom.make_field<float>(st, halox::host, 2);
  test_support::fill(dom, f, {0, 0});
  auto ex0 = halox::make_exchange(dom, st, f);
  halox::halo_exchange ex = std::move(ex0);
  for (int it = 0; it < 6; ++it) {
    test_support::fill_owned(f, dom.global_box().hi, {0, it});
    ex.exchange();
    INFO("iteration " << it);
    REQUIRE_OK(test_support::check(dom, f, st, {0, it}));
  }
}

// ---- box-list domains ------------------------------------------------------------------------

namespace {
// A 12x10 domain cut into 12 unequal boxes: x-strips [0,2) [2,7) [7,12), each cut along y.
std::vector<halox::owned_box<2>> twelve_boxes(int ranks) {
  const std::vector<std::pair<std::array<idx, 2>, std::vector<idx>>> strips = {
      {{0, 2}, {0, 1, 5, 10}}, {{2, 7}, {0, 3, 4, 8, 10}}, {{7, 12}, {0, 2, 3, 6, 7, 10}}};
  std::vector<halox::owned_box<2>> out;
  for (const auto& [x, ys] : strips)
    for (std::size_t k = 0; k + 1 < ys.size(); ++k)
      out.push_back({box<2>{{x[0], ys[k]}, {x[1], ys[k + 1]}}, int(out.size()) % ranks});
  return out;
}
}  // namespace

TEST_CASE("box_list: 12 unequal boxes assigned round-robin") {
  mpi::communicator world;
  const auto boxes = twelve_boxes(world.size());
  REQUIRE(boxes.size() == 12);
  const std::vector<halox::stencil<2>> stencils = {
      halox::stencil<2>::star(1), halox::stencil<2>::box(1), halox::stencil<2>::box({2, 0}, {1, 3}),
      halox::stencil<2>::star(4)};
  for (int m = 0; m < 4; ++m) {
    const auto per = test_support::periodic_mask<2>(m);
    halox::box_list<2> dom(world, {12, 10}, per, boxes);
    int mine = 0;
    for (std::size_t k = 0; k < boxes.size(); ++k) mine += boxes[k].owner == world.rank();
    REQUIRE(int(dom.local_boxes().size()) == mine);
    for (std::size_t s = 0; s < stencils.size(); ++s) {
      INFO("periodic " << per_str(per) << " stencil #" << s);
      REQUIRE_OK(exchange_once(dom, stencils[s]));
    }
    // several fields, several blocks
    constexpr auto st = halox::stencil<2>::box(1);
    auto a = dom.make_field<int>(st, halox::host, 3);
    auto b = dom.make_field<test_support::triple>(
        st, halox::host,
        halox::field_options{1, halox::components_layout::interleaved, halox::layout::column_major,
                             "b"});
    REQUIRE(a.block_count() == mine);
    auto ex = halox::make_exchange(dom, st, a, b);
    for (int it = 0; it < 2; ++it) {
      test_support::fill(dom, a, {0, it});
      test_support::fill(dom, b, {1, it});
      ex.exchange();
      REQUIRE_OK(test_support::check(dom, a, st, {0, it}));
      REQUIRE_OK(test_support::check(dom, b, st, {1, it}));
    }
  }
}

TEST_CASE("box_list: user memory per box, and ranks that own no box") {
  mpi::communicator world;
  // 3 boxes only: with more than 3 ranks some ranks own nothing but still take part.
  const std::vector<halox::owned_box<2>> boxes = {{box<2>{{0, 0}, {5, 3}}, 2 % world.size()},
                                                  {box<2>{{5, 0}, {6, 3}}, 0},
                                                  {box<2>{{0, 3}, {6, 7}}, (world.size() - 1)}};
  halox::box_list<2> dom(world, {6, 7}, halox::periodic{true, true}, boxes);
  constexpr auto st = halox::stencil<2>::box({1, 2}, {2, 1});
  std::vector<std::vector<double>> mem;
  std::vector<double*> ptrs;
  std::vector<halox::extents<2>> sizes;
  for (const auto& b : dom.local_boxes()) {
    sizes.push_back(halox::grow(b, st.lo, st.hi).size());
    mem.emplace_back(std::size_t(sizes.back()[0] * sizes.back()[1]));
  }
  for (auto& m : mem) ptrs.push_back(m.data());
  auto f = dom.wrap(ptrs, sizes, st.lo, st.hi);
  REQUIRE(f.block_count() == int(dom.local_boxes().size()));
  for (int b = 0; b < f.block_count(); ++b) REQUIRE(f.data(b) == mem[std::size_t(b)].data());
  auto ex = halox::make_exchange(dom, st, f);
  for (int it = 0; it < 3; ++it) {
    test_support::fill(dom, f, {0, it});
    ex.exchange();
    REQUIRE_OK(test_support::check(dom, f, st, {0, it}));
  }
  // the owners' halo cells were all received: count over all ranks
  const auto r = test_support::check(dom, f, st, {0, 2});
  long long want = 0;
  for (const auto& ob : boxes) {
    const auto e = ob.cells.size();
    want += (e[0] + 3) * (e[1] + 3) - e[0] * e[1];
  }
  REQUIRE(total(world, r.filled) == want);
}

TEST_CASE("domains over a raw MPI_Comm: a split communicator and MPI_COMM_WORLD") {
  mpi::communicator world;
  // Two halves (even and odd world ranks), each its own periodic domain.
  MPI_Comm half = MPI_COMM_NULL;
  REQUIRE(MPI_Comm_split(MPI_COMM_WORLD, world.rank() % 2, world.rank(), &half) == MPI_SUCCESS);
  {
    constexpr auto st = halox::stencil<2>::box(1);
    const halox::cartesian<2> dom(half, {10, 6}, halox::periodic{true, true});
    int n = 0;
    MPI_Comm_size(half, &n);
    REQUIRE(dom.size() == n);
    auto f = dom.make_field<double>(st);
    test_support::fill(dom, f, {0, 7});
    auto ex = halox::make_exchange(dom, st, f);
    ex.exchange();
    REQUIRE_OK(test_support::check(dom, f, st, {0, 7}));
  }
  MPI_Comm_free(&half);
  const halox::box_list<2> boxes(MPI_Comm(MPI_COMM_WORLD), {12, 10}, halox::periodic{true, false},
                                 twelve_boxes(world.size()));
  REQUIRE_OK(exchange_once(boxes, halox::stencil<2>::star(2)));
}
