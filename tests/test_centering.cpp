// Staggered fields: every stored and halo point of cell-, face-, edge- and node-centred fields
// after a forward exchange, checked against the owner of its global point (centering_check.hpp),
// over every process grid, periodic and not, on Cartesian domains and box lists; fields of
// different centerings and stencils in one exchange (one message per peer); a reverse sum of
// the shared copies against a serial count; errors for centerings that cannot be. Each with
// both rules for shared points: the owner overwrites them, or each block keeps its own
// (rank-encoded) value and only the halo proper is filled.
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <boost/mpi/collectives.hpp>

#include <set>
#include <vector>

#include "centering_check.hpp"
#include "support.hpp"

namespace mpi = boost::mpi;
using halox::box;
using halox::centering;
using halox::shared_points;
using idx = halox::index;

#define REQUIRE_OK(expr) HXT_REQUIRE_OK(expr)

namespace {

// Every centering of a D-dimensional field.
template <int D>
std::vector<centering> all_centerings() {
  std::vector<centering> out{centering::cell(), centering::node()};
  for (int d = 0; d < D; ++d) out.push_back(centering::face(d)), out.push_back(centering::edge(d));
  return out;
}

// Options of a field centred at `at` with `components` components and shared-points rule `sp`.
halox::field_options options(centering at, shared_points sp, int components = 1) {
  halox::field_options o;
  o.components = components;
  o.at = at;
  o.shared = sp;
  return o;
}

const shared_points both_rules[] = {shared_points::owner_overwrites, shared_points::keep};

// One field of centering `at`, exchanged twice with `st` and checked point by point.
template <int D, class Dom>
void one_field(const Dom& dom, const halox::stencil<D>& st, centering at, shared_points sp) {
  INFO("centering " << halox::to_string(at) << ", shared points " << halox::to_string(sp));
  auto f = dom.template make_field<double>(st, halox::host, options(at, sp, 2));
  auto ex = halox::make_exchange(dom, st, f);
  for (int it = 0; it < 2; ++it) {
    test_support::fill_points(f, {0, it});
    ex.exchange();
    const auto r = test_support::check_points(f, st, {0, it});
    REQUIRE_OK(r);
  }
}

// Every centering, with a star and a box stencil of uneven widths.
template <int D, class Dom>
void every_centering(const Dom& dom) {
  halox::widths<D> lo{}, hi{};
  for (int i = 0; i < D; ++i) lo[i] = 1 + i % 2, hi[i] = 2 - i % 2;
  for (const auto at : all_centerings<D>())
    for (const auto sp : both_rules) {
      one_field<D>(dom, halox::stencil<D>::box(lo, hi), at, sp);
      one_field<D>(dom, halox::stencil<D>::star(hi, lo), at, sp);
    }
}

// The peers of this rank's sends over the fields' own plans.
template <int D, class Dom, class... F>
std::size_t union_peers(const Dom& dom, const std::vector<halox::stencil<D>>& sts,
                        const F&... fields) {
  std::set<int> peers;
  std::size_t k = 0;
  (
      [&] {
        for (const auto& p : halox::make_plan<D>(dom, sts[k++], fields.state()->points).sends)
          peers.insert(p.rank);
      }(),
      ...);
  return peers.size();
}

}  // namespace

TEST_CASE("centering: 2-D, every centering, grid and periodicity") {
  mpi::communicator world;
  for (int m = 0; m < 4; ++m)
    for (const auto& grid : test_support::all_grids<2>(world.size(), {7, 6})) {
      INFO("periodic mask " << m << " grid " << grid.dims[0] << "x" << grid.dims[1]);
      const halox::cartesian<2> dom(world, {7, 6}, test_support::periodic_mask<2>(m), grid);
      every_centering<2>(dom);
    }
}

TEST_CASE("centering: 3-D, every centering") {
  mpi::communicator world;
  for (int m : {0, 5, 7}) {
    INFO("periodic mask " << m);
    const halox::cartesian<3> dom(world, {5, 4, 6}, test_support::periodic_mask<3>(m));
    every_centering<3>(dom);
  }
}

TEST_CASE("centering: box list with several blocks per rank, one rank along a dimension") {
  mpi::communicator world;
  std::vector<halox::owned_box<2>> boxes;
  int owner = 0;
  for (idx x = 0; x < 9; x += 3)
    for (idx y = 0; y < 8; y += 4)
      boxes.push_back({box<2>{{x, y}, {x + 3, y + 4}}, owner++ % world.size()});
  for (int m = 0; m < 4; ++m) {
    INFO("periodic mask " << m);
    const halox::box_list<2> dom(world, {9, 8}, test_support::periodic_mask<2>(m), boxes);
    every_centering<2>(dom);
  }
}

TEST_CASE("centering: a MAC grid in one exchange, each field with its stencil") {
  mpi::communicator world;
  for (int m = 0; m < 8; ++m) {
    INFO("periodic mask " << m);
    const halox::cartesian<3> dom(world, {6, 5, 4}, test_support::periodic_mask<3>(m));
    const auto s_vel = halox::stencil<3>::box(1), s_p = halox::stencil<3>::star(2);
    const auto s_w = halox::stencil<3>::star({0, 1, 1}, {2, 0, 1});
    auto u = dom.make_field<double>(s_vel, halox::host, centering::face(0));
    auto v = dom.make_field<float>(s_vel, halox::host, centering::face(1));
    auto w = dom.make_field<double>(s_w, halox::host, centering::face(2));
    auto p = dom.make_field<double>(s_p);
    auto omega = dom.make_field<double>(s_vel, halox::host, centering::edge(2), 3);
    auto ex =
        halox::make_exchange(dom, halox::halo(s_vel, u), halox::halo(s_vel, v), halox::halo(s_w, w),
                             halox::halo(s_p, p), halox::halo(s_vel, omega));
    for (int it = 0; it < 2; ++it) {
      test_support::fill_points(u, {0, it});
      test_support::fill_points(v, {1, it});
      test_support::fill_points(w, {2, it});
      test_support::fill_points(p, {3, it});
      test_support::fill_points(omega, {4, it});
      ex.exchange();
      REQUIRE_OK(test_support::check_points(u, s_vel, {0, it}));
      REQUIRE_OK(test_support::check_points(v, s_vel, {1, it}));
      REQUIRE_OK(test_support::check_points(w, s_w, {2, it}));
      REQUIRE_OK(test_support::check_points(p, s_p, {3, it}));
      REQUIRE_OK(test_support::check_points(omega, s_vel, {4, it}));
    }
    const auto peers = union_peers<3>(dom, {s_vel, s_vel, s_w, s_p, s_vel}, u, v, w, p, omega);
    INFO(ex.describe());
    CHECK(ex.describe().find("sends " + std::to_string(peers) + " message(s)") !=
          std::string::npos);
  }
}

TEST_CASE("centering: shared points chosen per field, in one exchange") {
  mpi::communicator world;
  for (int m = 0; m < 4; ++m)
    for (const auto& grid : test_support::all_grids<2>(world.size(), {7, 6})) {
      INFO("periodic mask " << m << " grid " << grid.dims[0] << "x" << grid.dims[1]);
      const halox::cartesian<2> dom(world, {7, 6}, test_support::periodic_mask<2>(m), grid);
      const auto st = halox::stencil<2>::box(2);
      // The same centering and stencil twice: only the rule tells the two plans apart.
      auto a = dom.make_field<double>(st, halox::host, options(centering::node(), both_rules[0]));
      auto b = dom.make_field<double>(st, halox::host, options(centering::node(), both_rules[1]));
      auto c = dom.make_field<double>(st, halox::host, options(centering::face(1), both_rules[1]));
      auto ex = halox::make_exchange(dom, st, a, b, c);
      for (int it = 0; it < 2; ++it) {
        test_support::fill_points(a, {0, it});
        test_support::fill_points(b, {1, it});
        test_support::fill_points(c, {2, it});
        ex.exchange();
        REQUIRE_OK(test_support::check_points(a, st, {0, it}));
        REQUIRE_OK(test_support::check_points(b, st, {1, it}));
        REQUIRE_OK(test_support::check_points(c, st, {2, it}));
      }
    }
}

// Reverse sum: every copy holds its point's value; afterwards each owned point holds its value
// times one plus the number of copies of it on all ranks (counted serially from the model).
// A kept copy is neither filled nor summed: it holds the value it started with.
template <int D, class Dom>
void reverse_sum(const Dom& dom, const halox::stencil<D>& st, centering at, shared_points sp) {
  INFO("centering " << halox::to_string(at) << ", shared points " << halox::to_string(sp));
  mpi::communicator world;
  auto f = dom.template make_field<double>(st, halox::host, options(at, sp));
  const auto n = test_support::point_extents(f);
  for (int b = 0; b < f.block_count(); ++b)
    test_support::for_cells<D>(f.allocated_box(b), [&](const auto& g) {
      const auto src = test_support::point_source(f, b, st, g);
      f.at(g, 0, b) = src ? double(test_support::key<D>(n, *src, 0, 1, {}) + 1) : -7.0;
    });
  idx volume = 1;
  for (int i = 0; i < D; ++i) volume *= n[i];
  std::vector<long long> mine(std::size_t(volume), 0), all(std::size_t(volume), 0);
  for (const auto& [k, c] : test_support::copy_counts(f, st)) mine[std::size_t(k)] += c;
  mpi::all_reduce(world, mine.data(), int(volume), all.data(), std::plus<long long>());
  auto ex = halox::make_reverse_exchange(dom, st, halox::reduction::sum, f);
  ex.exchange();
  test_support::result r;
  for (int b = 0; b < f.block_count(); ++b)
    test_support::for_cells<D>(f.allocated_box(b), [&](const auto& g) {
      const auto src = test_support::point_source(f, b, st, g);
      const bool owned = f.owned_points(b).contains(g);
      const auto k = src ? test_support::key<D>(n, *src, 0, 1, {}) : 0;
      const double want = owned ? double(k + 1) * double(1 + all[std::size_t(k)])
                          : src ? double(k + 1)
                                : -7.0;
      if (f.at(g, 0, b) != want && ++r.bad <= 5)
        r.report += "block " + std::to_string(b) + " point " + test_support::str<D>(g) + ": got " +
                    std::to_string(f.at(g, 0, b)) + ", want " + std::to_string(want) + "\n";
    });
  REQUIRE_OK(r);
}

TEST_CASE("centering: reverse sum of shared copies into their owners") {
  mpi::communicator world;
  for (int m = 0; m < 4; ++m)
    for (const auto& grid : test_support::all_grids<2>(world.size(), {7, 6})) {
      INFO("periodic mask " << m << " grid " << grid.dims[0] << "x" << grid.dims[1]);
      const halox::cartesian<2> dom(world, {7, 6}, test_support::periodic_mask<2>(m), grid);
      for (const auto at : all_centerings<2>())
        for (const auto sp : both_rules) {
          reverse_sum<2>(dom, halox::stencil<2>::box(1), at, sp);
          reverse_sum<2>(dom, halox::stencil<2>::star({0, 1}, {1, 0}), at, sp);
        }
    }
  const halox::cartesian<3> dom3(world, {4, 5, 3}, test_support::periodic_mask<3>(2));
  for (const auto at : all_centerings<3>())
    for (const auto sp : both_rules) reverse_sum<3>(dom3, halox::stencil<3>::box(1), at, sp);
}

TEST_CASE("centering: errors") {
  mpi::communicator world;
  const halox::cartesian<2> dom(world, {6, 4});
  const auto st = halox::stencil<2>::star(1);
  // A centering naming a dimension the domain does not have.
  CHECK_THROWS_WITH(dom.make_field<double>(st, halox::host, centering::face(2)),
                    Catch::Contains("centering face(2), which names no dimension of a 2-D domain"));
  // A wrapped array sized for cells, declared face-centred.
  if (world.size() == 1) {
    std::vector<double> a(8 * 6);
    halox::field_options o;
    o.at = centering::face(0);
    CHECK_THROWS_WITH(dom.wrap<double>(a.data(), {8, 6}, {1, 1}, {1, 1}, o),
                      Catch::Contains("(face(0)-centred) with padding 1,1/1,1 needs 9x6"));
  }
  // Ranks that declare different centerings for a field fail together, naming both.
  if (world.size() >= 2) {
    const halox::cartesian<2> line(world, {8, 4}, {}, halox::process_grid<2>{{world.size(), 1}});
    auto f = line.make_field<double>(st, halox::host,
                                     world.rank() == 0 ? centering::face(1) : centering::cell());
    CHECK_THROWS_WITH(halox::make_exchange(line, st, f), Catch::Contains("centred face(1)"));
    // ... and different rules for a staggered field's shared points, on every rank.
    auto g = line.make_field<double>(
        st, halox::host, options(centering::node(), both_rules[world.rank() == 1 ? 1 : 0]));
    CHECK_THROWS_WITH(halox::make_exchange(line, st, g),
                      Catch::Contains("build different exchanges") &&
                          Catch::Contains("centred node, shared points kept"));
  }
  // A cell-centred field has no shared points: keeping them is allowed and changes nothing.
  auto h = dom.make_field<double>(st, halox::host, options(centering::cell(), both_rules[1]));
  CHECK_NOTHROW(halox::make_exchange(dom, st, h));
}
