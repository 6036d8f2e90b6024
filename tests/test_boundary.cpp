// Physical boundary rules run by the exchange object: a hand-computed 2-D table (corners
// included) on every process grid, then every allocated cell of 2-D and 3-D fields against an
// independent model of the rules (dimension order, low before high, over global coordinates),
// and the errors.
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <boost/mpi/collectives.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "check.hpp"
#include "support.hpp"

namespace mpi = boost::mpi;
using halox::box;
using idx = halox::index;

#define REQUIRE_OK(expr) HXT_REQUIRE_OK(expr)

namespace {

// ---- the model ------------------------------------------------------------------------------

// One face's rule as the model sees it.
struct model_rule {
  halox::boundary_kind kind = halox::boundary_kind::none;
  double value = 0;
  std::vector<double> signs;
};

template <int D>
using rules_t = std::map<std::pair<int, int>, model_rule>;  // (dim, 0 low / 1 high)

// What a test callback writes: a function of the cell and component only.
template <int D>
double callback_value(const halox::extents<D>& g, int c) {
  double v = 5000 + c;
  for (int i = 0; i < D; ++i) v = v * 7 + double(g[i]);
  return v;
}

// The value halo or owned cell g of block `o` must hold, component c (see boundary.hpp): the
// rule of the highest dimension in which g lies beyond a non-periodic face and which has a
// rule, reading the model itself; else the plain exchange model of check.hpp.
template <int D>
double model(const halox::extents<D>& g, int c, int ncomp, const box<D>& o,
             const halox::stencil<D>& st, const halox::extents<D>& n,
             const std::array<bool, D>& per, const rules_t<D>& rules) {
  using VT = test_support::value_traits<double>;
  if (o.contains(g)) return VT::make(test_support::key<D>(n, g, c, ncomp, {0, 0}));
  for (int i = 0; i < D; ++i)
    if (g[i] < o.lo[i] - st.lo[i] || g[i] >= o.hi[i] + st.hi[i]) return VT::sentinel();
  for (int d = D - 1; d >= 0; --d) {
    if (per[d] || (g[d] >= 0 && g[d] < n[d])) continue;
    const int s = g[d] < 0 ? 0 : 1;
    const auto it = rules.find({d, s});
    if (it == rules.end()) continue;
    const auto& r = it->second;
    auto from = g;
    switch (r.kind) {
      case halox::boundary_kind::constant:
        return r.value;
      case halox::boundary_kind::callback:
        return callback_value<D>(g, c);
      case halox::boundary_kind::zero_gradient:
        from[d] = s == 0 ? 0 : n[d] - 1;
        return model<D>(from, c, ncomp, o, st, n, per, rules);
      case halox::boundary_kind::reflect:
        from[d] = s == 0 ? -1 - g[d] : 2 * n[d] - 1 - g[d];
        return (r.signs.empty() ? 1.0 : r.signs[std::size_t(c)]) *
               model<D>(from, c, ncomp, o, st, n, per, rules);
      case halox::boundary_kind::mirror:
        from[d] = s == 0 ? -g[d] : 2 * (n[d] - 1) - g[d];
        return (r.signs.empty() ? 1.0 : r.signs[std::size_t(c)]) *
               model<D>(from, c, ncomp, o, st, n, per, rules);
      default:
        break;
    }
  }
  halox::extents<D> src{};
  if (test_support::source_of<D>(g, o, st, n, per, src))
    return VT::make(test_support::key<D>(n, src, c, ncomp, {0, 0}));
  return VT::sentinel();
}

// The same rules for halox.
template <int D>
halox::boundary<double, D> to_boundary(const rules_t<D>& rules) {
  halox::boundary<double, D> bc;
  for (const auto& [fs, r] : rules) {
    const halox::face fc{fs.first, fs.second == 0 ? halox::side::low : halox::side::high};
    switch (r.kind) {
      case halox::boundary_kind::constant:
        bc.constant(fc, r.value);
        break;
      case halox::boundary_kind::zero_gradient:
        bc.zero_gradient(fc);
        break;
      case halox::boundary_kind::reflect:
        bc.reflect(fc, r.signs);
        break;
      case halox::boundary_kind::mirror:
        bc.mirror(fc, r.signs);
        break;
      case halox::boundary_kind::callback:
        bc.callback(fc, [](const halox::boundary_face<double, D>& bf) {
          test_support::for_cells<D>(bf.cells, [&](const auto& g) {
            for (int c = 0; c < bf.f.components(); ++c)
              bf.f.at(g, c, bf.block) = callback_value<D>(g, c);
          });
        });
        break;
      default:
        break;
    }
  }
  return bc;
}

// Checks every allocated cell of f against the model.
template <int D, class Dom>
test_support::result check_model(const Dom& dom, const halox::field<double, D>& f,
                                 const halox::stencil<D>& st, const rules_t<D>& rules) {
  test_support::result r;
  const auto n = dom.global_box().hi;
  for (int b = 0; b < f.block_count(); ++b)
    test_support::for_cells<D>(f.allocated_box(b), [&](const auto& g) {
      for (int c = 0; c < f.components(); ++c) {
        const double want =
            model<D>(g, c, f.components(), f.owned_box(b), st, n, dom.periodicity().flags, rules);
        const double got = f.at(g, c, b);
        if (want != test_support::value_traits<double>::sentinel()) ++r.filled;
        if (got != want && ++r.bad <= 8)
          r.report += "block " + std::to_string(b) + " cell " + test_support::str<D>(g) + " comp " +
                      std::to_string(c) + ": got " + std::to_string(got) + ", want " +
                      std::to_string(want) + "\n";
      }
    });
  return r;
}

// Fills, exchanges twice (the second time with the halos holding the first results), checks.
template <int D, class Dom>
void run_case(const Dom& dom, const halox::stencil<D>& st, int ncomp, const rules_t<D>& rules) {
  auto f = dom.template make_field<double>(st, halox::host, ncomp);
  auto ex = halox::make_exchange(dom, halox::halo(st, f, to_boundary<D>(rules)));
  for (int it = 0; it < 2; ++it) {
    if (it == 0)
      test_support::fill(dom, f, {0, 0});
    else
      test_support::fill_owned(f, dom.global_box().hi, {0, 0});
    ex.exchange();
    REQUIRE_OK(check_model<D>(dom, f, st, rules));
  }
}

}  // namespace

TEST_CASE("boundary rules: a 4x4 table computed by hand, corners included, every grid") {
  mpi::communicator world;
  constexpr auto low = halox::side::low, high = halox::side::high;
  // Owned cell (x, y) holds 10x + y. x low: 100; x high: zero gradient; y low: reflect,
  // negated; y high: 7. Dimension 1 is applied last, so it has the corners.
  const double T[6][6] = {
      /* x=-1 */ {-100, 100, 100, 100, 100, 7},
      /* x= 0 */ {0, 0, 1, 2, 3, 7},
      /* x= 1 */ {-10, 10, 11, 12, 13, 7},
      /* x= 2 */ {-20, 20, 21, 22, 23, 7},
      /* x= 3 */ {-30, 30, 31, 32, 33, 7},
      /* x= 4 */ {-30, 30, 31, 32, 33, 7},
  };
  constexpr auto st = halox::stencil<2>::box(1);
  for (const auto& grid : test_support::all_grids<2>(world.size(), {4, 4})) {
    const halox::cartesian<2> dom(world, {4, 4}, halox::periodic<2>{}, grid);
    auto f = dom.make_field<double>(st);
    halox::boundary<double, 2> bc;
    bc.constant({0, low}, 100.0)
        .zero_gradient({0, high})
        .reflect({1, low}, {-1.0})
        .constant({1, high}, 7.0);
    auto ex = halox::make_exchange(dom, halox::halo(st, f, bc));
    test_support::for_cells<2>(f.allocated_box(), [&](const auto& g) { f.at(g) = -1; });
    test_support::for_cells<2>(f.owned_box(),
                               [&](const auto& g) { f.at(g) = double(10 * g[0] + g[1]); });
    ex.exchange();
    long long bad = 0;
    test_support::for_cells<2>(f.allocated_box(), [&](const auto& g) {
      const double want = T[g[0] + 1][g[1] + 1];
      if (f.at(g) != want) {
        ++bad;
        UNSCOPED_INFO("grid " << grid.dims[0] << "x" << grid.dims[1] << " cell "
                              << test_support::str<2>(g) << ": got " << f.at(g) << ", want "
                              << want);
      }
    });
    CHECK(bad == 0);
    REQUIRE(mpi::all_reduce(world, bad, std::plus<long long>()) == 0);
  }
}

TEST_CASE("boundary rules: every kind, 2-D and 3-D, every grid and periodicity, against a model") {
  mpi::communicator world;
  using K = halox::boundary_kind;
  // 2-D: every combination of rules on the non-periodic faces, two components.
  const std::vector<halox::stencil<2>> st2 = {halox::stencil<2>::box({2, 1}, {1, 2}),
                                              halox::stencil<2>::star(2),
                                              halox::stencil<2>::box(1)};
  for (int m = 0; m < 4; ++m) {
    const auto per = test_support::periodic_mask<2>(m);
    for (const auto& grid : test_support::all_grids<2>(world.size(), {6, 5})) {
      const halox::cartesian<2> dom(world, {6, 5}, per, grid);
      rules_t<2> rules;
      const model_rule kinds[] = {{K::constant, -3.5, {}},
                                  {K::zero_gradient, 0, {}},
                                  {K::reflect, 0, {-1.0, 2.0}},
                                  {K::callback, 0, {}}};
      int k = 0;
      for (int d = 0; d < 2; ++d)
        for (int s = 0; s < 2; ++s, ++k)
          if (!per[d]) rules[{d, s}] = kinds[(k + m) % 4];
      for (std::size_t si = 0; si < st2.size(); ++si) {
        INFO("periodic mask " << m << " grid " << grid.dims[0] << "x" << grid.dims[1]
                              << " stencil #" << si);
        run_case<2>(dom, st2[si], 2, rules);
      }
      // mirror reads one cell further in than reflect: a block one cell thick needs as wide a
      // halo inside as beyond the face, so symmetric stencils here (the error: below).
      rules_t<2> mirrors;
      for (int d = 0; d < 2; ++d)
        if (!per[d]) {
          mirrors[{d, 0}] = {K::mirror, 0, {3.0, -1.0}};
          mirrors[{d, 1}] = d == 0 ? model_rule{K::mirror, 0, {}} : kinds[(m + 2) % 4];
        }
      for (std::size_t si = 1; si < st2.size(); ++si) {
        INFO("mirror: periodic mask " << m << " grid " << grid.dims[0] << "x" << grid.dims[1]
                                      << " stencil #" << si);
        run_case<2>(dom, st2[si], 2, mirrors);
      }
      // Faces without rules stay untouched (halo cells next to them keep the sentinel).
      rules_t<2> partial;
      if (!per[0]) partial[{0, 1}] = {K::zero_gradient, 0, {}};
      run_case<2>(dom, halox::stencil<2>::box(1), 1, partial);
    }
  }
  // 3-D, non-periodic in x and z, one process grid (halox's choice).
  const halox::cartesian<3> dom(world, {5, 4, 6}, halox::periodic{false, true, false});
  rules_t<3> rules;
  rules[{0, 0}] = {K::reflect, 0, {-1.0}};
  rules[{0, 1}] = {K::constant, 2.25, {}};
  rules[{2, 0}] = {K::zero_gradient, 0, {}};
  rules[{2, 1}] = {K::callback, 0, {}};
  run_case<3>(dom, halox::stencil<3>::box(1), 1, rules);
  rules[{0, 1}] = {K::mirror, 0, {}};
  rules[{2, 0}] = {K::mirror, 0, {-1.0}};
  run_case<3>(dom, halox::stencil<3>::box({2, 1, 1}, {1, 1, 2}), 1, rules);
}

TEST_CASE("boundary rules on a box list with several blocks per rank") {
  mpi::communicator world;
  using K = halox::boundary_kind;
  std::vector<halox::owned_box<2>> boxes;
  int owner = 0;
  for (idx x = 0; x < 8; x += 4)
    for (idx y = 0; y < 6; y += 3)
      boxes.push_back({box<2>{{x, y}, {x + 4, y + 3}}, owner++ % world.size()});
  const halox::box_list<2> dom(world, {8, 6}, halox::periodic<2>{}, boxes);
  rules_t<2> rules;
  rules[{0, 0}] = {K::zero_gradient, 0, {}};
  rules[{0, 1}] = {K::reflect, 0, {-1.0}};
  rules[{1, 0}] = {K::constant, 9, {}};
  rules[{1, 1}] = {K::reflect, 0, {}};
  run_case<2>(dom, halox::stencil<2>::box({2, 1}, {3, 2}), 1, rules);
  rules[{0, 0}] = {K::mirror, 0, {-1.0}};
  rules[{1, 1}] = {K::mirror, 0, {}};
  run_case<2>(dom, halox::stencil<2>::box({2, 1}, {3, 2}), 1, rules);
}

TEST_CASE("boundary rules: mirror about the boundary cell's centre and reflect, by hand, 1-D") {
  mpi::communicator world;
  // Cells 0..3 hold 10..13; three halo cells a side. Low: mirror (cell -k holds cell k, the
  // boundary cell not repeated); high: reflect (cell 3 + k holds cell 4 - k, a mirror at the
  // face). Then the other way round, negated.
  constexpr auto st = halox::stencil<1>::box(3);
  const double mirror_low[10] = {13, 12, 11, 10, 11, 12, 13, 13, 12, 11};
  const double reflect_low[10] = {-12, -11, -10, 10, 11, 12, 13, -12, -11, -10};
  for (const auto& grid : test_support::all_grids<1>(world.size(), {4}))
    for (bool swap : {false, true}) {
      const halox::cartesian<1> dom(world, {4}, halox::periodic<1>{}, grid);
      auto f = dom.make_field<double>(st);
      halox::boundary<double, 1> bc;
      if (swap)
        bc.reflect({0, halox::side::low}, {-1.0}).mirror({0, halox::side::high}, {-1.0});
      else
        bc.mirror({0, halox::side::low}).reflect({0, halox::side::high});
      auto ex = halox::make_exchange(dom, halox::halo(st, f, bc));
      test_support::for_cells<1>(f.allocated_box(), [&](const auto& g) { f.at(g) = -1; });
      test_support::for_cells<1>(f.owned_box(),
                                 [&](const auto& g) { f.at(g) = double(10 + g[0]); });
      ex.exchange();
      long long bad = 0;
      test_support::for_cells<1>(f.allocated_box(), [&](const auto& g) {
        const double want = (swap ? reflect_low : mirror_low)[g[0] + 3];
        if (f.at(g) != want) {
          ++bad;
          UNSCOPED_INFO("ranks " << grid.dims[0] << (swap ? " reflect/mirror" : " mirror/reflect")
                                 << " cell " << g[0] << ": got " << f.at(g) << ", want " << want);
        }
      });
      CHECK(bad == 0);
      REQUIRE(mpi::all_reduce(world, bad, std::plus<long long>()) == 0);
    }
}

namespace {
// What point g of a face(0) field on n cells holds after the rules of the staggered test:
// along x (staggered, points 0..n0) mirror and reflect alike are about the wall point; along y
// (cells) mirror at the high face is about cell n1 - 1, reflect at the low face about the face.
double staggered_model(halox::extents<2> g, const halox::extents<2>& n) {
  const idx px = n[0] + 1;  // points along x
  if (g[1] < 0) return staggered_model({g[0], -1 - g[1]}, n);
  if (g[1] >= n[1]) return -staggered_model({g[0], 2 * (n[1] - 1) - g[1]}, n);
  if (g[0] < 0) return 2 * staggered_model({-g[0], g[1]}, n);
  if (g[0] >= px) return staggered_model({2 * (px - 1) - g[0], g[1]}, n);
  return double(1000 + 100 * g[0] + g[1]);
}
}  // namespace

TEST_CASE("boundary rules: mirror on a staggered field, along and across its stagger") {
  mpi::communicator world;
  // u on x-faces: f(i, n1 - 1 + k) = -f(i, n1 - 1 - k) at the y-high wall (the issue's flux
  // rule), reflect at the y-low wall; at the x walls mirror (sign 2) or reflect: both about the
  // wall point, so they give the same values.
  constexpr auto st = halox::stencil<2>::box(2);
  const halox::extents<2> n{6, 5};
  for (const auto& grid : test_support::all_grids<2>(world.size(), n))
    for (bool x_mirror : {true, false}) {
      INFO("grid " << grid.dims[0] << "x" << grid.dims[1] << " x walls "
                   << (x_mirror ? "mirror" : "reflect"));
      const halox::cartesian<2> dom(world, n, halox::periodic<2>{}, grid);
      auto f = dom.make_field<double>(st, halox::host, halox::centering::face(0));
      halox::boundary<double, 2> bc;
      bc.reflect({1, halox::side::low}).mirror({1, halox::side::high}, {-1.0});
      if (x_mirror)
        bc.mirror({0, halox::side::low}, {2.0}).mirror({0, halox::side::high});
      else
        bc.reflect({0, halox::side::low}, {2.0}).reflect({0, halox::side::high});
      auto ex = halox::make_exchange(dom, halox::halo(st, f, bc));
      test_support::for_cells<2>(f.allocated_box(), [&](const auto& g) { f.at(g) = -7; });
      test_support::for_cells<2>(
          f.owned_points(), [&](const auto& g) { f.at(g) = double(1000 + 100 * g[0] + g[1]); });
      ex.exchange();
      test_support::result r;
      test_support::for_cells<2>(f.allocated_box(), [&](const auto& g) {
        const double want = staggered_model(g, n), got = f.at(g);
        if (got != want && ++r.bad <= 8)
          r.report += "point " + test_support::str<2>(g) + ": got " + std::to_string(got) +
                      ", want " + std::to_string(want) + "\n";
      });
      REQUIRE_OK(r);
    }
}

TEST_CASE("boundary rules: errors on every rank before anything is written") {
  mpi::communicator world;
  constexpr auto st = halox::stencil<2>::box(1);
  auto error_of = [&](auto&& fn) -> std::string {
    try {
      fn();
    } catch (const halox::error& e) {
      return e.what();
    }
    return {};
  };
  auto expect = [&](const std::string& msg, const std::string& text) {
    INFO(msg);
    CHECK(msg.find(text) != std::string::npos);
  };
  {
    const halox::cartesian<2> dom(world, {6, 6}, halox::periodic{true, false});
    auto f = dom.make_field<double>(st);
    halox::boundary<double, 2> bc;
    bc.constant({0, halox::side::low}, 1.0);
    expect(error_of([&] { halox::make_exchange(dom, halox::halo(st, f, bc)); }),
           "boundary rule on the low face of dimension 0, which is periodic");
    halox::boundary<double, 2> signs;
    signs.reflect({1, halox::side::high}, {1.0, -1.0});
    expect(
        error_of([&] { halox::make_exchange(dom, halox::halo(st, f, signs)); }),
        "reflect on the high face of dimension 1 has 2 sign(s) but the field has 1 component(s)");
    halox::boundary<double, 2> msigns;
    msigns.mirror({1, halox::side::low}, {1.0, -1.0, 2.0});
    expect(error_of([&] { halox::make_exchange(dom, halox::halo(st, f, msigns)); }),
           "mirror on the low face of dimension 1 has 3 sign(s) but the field has 1 component(s)");
    halox::boundary<double, 2> dim;
    dim.zero_gradient({2, halox::side::high});
    expect(error_of([&] { halox::make_exchange(dom, halox::halo(st, f, dim)); }),
           "boundary rule for dimension 2 of a 2-D field");
  }
  {
    // A width-3 reflection on 1-cell boxes: the mirror lies beyond what the exchange fills
    // (on every rank count, the 2-cell domain is narrower than the halo).
    constexpr auto wide = halox::stencil<2>::star({3, 1}, {1, 1});
    const halox::cartesian<2> dom(world, {2, 4 * world.size()}, halox::periodic<2>{},
                                  halox::process_grid<2>{{1, world.size()}});
    auto f = dom.make_field<double>(wide);
    test_support::fill(dom, f, {0, 0});
    const auto before = test_support::snapshot(f);
    halox::boundary<double, 2> bc;
    bc.reflect({0, halox::side::low});
    expect(error_of([&] { halox::make_exchange(dom, halox::halo(wide, f, bc)); }),
           "reflect on the low face of dimension 0 reads cells 0..2 along it, outside the global "
           "box");
    CHECK(test_support::snapshot(f) == before);
  }
}

TEST_CASE("boundary rules: a mirror reading beyond what the exchange fills, on every rank") {
  // mirror reads one cell further in than reflect: width 2 on a domain 2 cells wide reaches
  // outside it. Refused before anything is written.
  mpi::communicator world;
  const halox::cartesian<2> dom(world, {2, 4 * world.size()}, halox::periodic<2>{},
                                halox::process_grid<2>{{1, world.size()}});
  constexpr auto two = halox::stencil<2>::star({2, 1}, {1, 1});
  auto f = dom.make_field<double>(two);
  test_support::fill(dom, f, {0, 0});
  const auto before = test_support::snapshot(f);
  halox::boundary<double, 2> m;
  m.mirror({0, halox::side::low});
  const std::string msg =
      test_support::error_of([&] { halox::make_exchange(dom, halox::halo(two, f, m)); });
  INFO(msg);
  CHECK(msg.find("mirror on the low face of dimension 0 reads cells 1..2 along it, outside the "
                 "global box") != std::string::npos);
  CHECK(test_support::snapshot(f) == before);
}

TEST_CASE("boundary rules on a device field in a build without CUDA: an error on every rank") {
  // (With CUDA: tests/gpu/test_device_boundary.cpp.)
  if (halox::detail::cuda_enabled()) return;
  mpi::communicator world;
  constexpr auto st = halox::stencil<2>::star(1);
  const halox::cartesian<2> dom(world, {6, 6}, halox::periodic{true, false});
  const auto n = dom.local_boxes()[0].size();
  std::vector<double> mem(std::size_t((n[0] + 2) * (n[1] + 2)), -1.0);
  // Host memory declared as device memory: halox must refuse it before touching it.
  auto f = dom.wrap<double>(mem.data(), {n[0] + 2, n[1] + 2}, {1, 1}, {1, 1}, {},
                            halox::memory_space::device);
  halox::boundary<double, 2> bc;
  bc.constant({1, halox::side::low}, 1.0).callback({1, halox::side::high}, [](const auto&) {
    FAIL("callback run");
  });
  std::string msg;
  try {
    halox::make_exchange(dom, halox::halo(st, f, bc));
  } catch (const halox::error& e) {
    msg = e.what();
  }
  INFO(msg);
  CHECK(msg.find("lives in device memory; this halox was built without CUDA") != std::string::npos);
  CHECK(std::all_of(mem.begin(), mem.end(), [](double v) { return v == -1.0; }));
}
