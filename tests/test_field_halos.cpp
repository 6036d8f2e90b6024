// Per-field halos in one exchange: `make_exchange(dom, halo(st_a, a), halo(st_b, b), ...)`.
// Every allocated cell of every field is checked against its own stencil's model (check.hpp),
// over process grids, periodicity and box lists; the exchange sends one message per peer (the
// union of the fields' peers); errors for padding that cannot hold a field's halo and for
// ranks that declare different stencils.
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <boost/mpi/collectives.hpp>

#include <set>

#include "check.hpp"
#include "support.hpp"

namespace mpi = boost::mpi;
using halox::box;
using idx = halox::index;

#define REQUIRE_OK(expr) HXT_REQUIRE_OK(expr)

namespace {

// The number of peers this rank sends to: the union over the fields' own plans.
template <int D, class Dom>
std::size_t union_peers(const Dom& dom, std::initializer_list<halox::stencil<D>> sts) {
  std::set<int> peers;
  for (const auto& st : sts)
    for (const auto& p : halox::make_plan<D>(dom, st).sends) peers.insert(p.rank);
  return peers.size();
}

// Three fields with three stencils in one exchange, exchanged twice, each checked against its
// own stencil; the exchange sends one message per peer.
template <int D, class Dom>
void three_fields(const Dom& dom, const halox::stencil<D>& sa, const halox::stencil<D>& sb,
                  const halox::stencil<D>& sc) {
  auto a = dom.template make_field<double>(sa, halox::host, 2);
  auto b = dom.template make_field<float>(
      sb, halox::host,
      halox::field_options{1, halox::components_layout::planar, halox::layout::column_major, "b"});
  auto c = dom.template make_field<test_support::triple>(sc);
  auto ex = halox::make_exchange(dom, halox::halo(sa, a), halox::halo(sb, b), halox::halo(sc, c));
  for (int it = 0; it < 2; ++it) {
    test_support::fill(dom, a, {0, it});
    test_support::fill(dom, b, {1, it});
    test_support::fill(dom, c, {2, it});
    ex.exchange();
    REQUIRE_OK(test_support::check(dom, a, sa, {0, it}));
    REQUIRE_OK(test_support::check(dom, b, sb, {1, it}));
    REQUIRE_OK(test_support::check(dom, c, sc, {2, it}));
  }
  const auto want = "sends " + std::to_string(union_peers<D>(dom, {sa, sb, sc})) + " message(s)";
  INFO(ex.describe());
  CHECK(ex.describe().find(want) != std::string::npos);
}

}  // namespace

TEST_CASE("per-field halos: 2-D, every grid and periodicity") {
  mpi::communicator world;
  const auto sa = halox::stencil<2>::box({2, 1}, {1, 2});
  const auto sb = halox::stencil<2>::star(1);
  const auto sc = halox::stencil<2>::star({0, 0}, {3, 2});
  for (int m = 0; m < 4; ++m)
    for (const auto& grid : test_support::all_grids<2>(world.size(), {7, 6})) {
      INFO("periodic mask " << m << " grid " << grid.dims[0] << "x" << grid.dims[1]);
      const halox::cartesian<2> dom(world, {7, 6}, test_support::periodic_mask<2>(m), grid);
      three_fields<2>(dom, sa, sb, sc);
    }
}

TEST_CASE("per-field halos: 3-D, mixed periodicity") {
  mpi::communicator world;
  for (int m : {0, 5, 7}) {
    INFO("periodic mask " << m);
    const halox::cartesian<3> dom(world, {6, 5, 4}, test_support::periodic_mask<3>(m));
    three_fields<3>(dom, halox::stencil<3>::box(1), halox::stencil<3>::star({2, 0, 1}, {1, 0, 2}),
                    halox::stencil<3>::box({0, 1, 1}, {1, 1, 0}));
  }
}

TEST_CASE("per-field halos: box list with several blocks per rank") {
  mpi::communicator world;
  std::vector<halox::owned_box<2>> boxes;
  int owner = 0;
  for (idx x = 0; x < 9; x += 3)
    for (idx y = 0; y < 8; y += 4)
      boxes.push_back({box<2>{{x, y}, {x + 3, y + 4}}, owner++ % world.size()});
  for (int m = 0; m < 4; ++m) {
    INFO("periodic mask " << m);
    const halox::box_list<2> dom(world, {9, 8}, test_support::periodic_mask<2>(m), boxes);
    three_fields<2>(dom, halox::stencil<2>::box(2), halox::stencil<2>::star({1, 0}, {0, 3}),
                    halox::stencil<2>::box({1, 1}, {0, 0}));
  }
}

TEST_CASE("per-field halos: padding wider than the field's stencil is left alone") {
  mpi::communicator world;
  const halox::cartesian<2> dom(world, {8, 6}, halox::periodic{true, false});
  const auto wide = halox::stencil<2>::box(3), narrow = halox::stencil<2>::star(1);
  auto u = dom.make_field<double>(wide);  // padded for 3, exchanged for 1
  auto p = dom.make_field<double>(wide);
  auto ex = halox::make_exchange(dom, halox::halo(narrow, u), halox::halo(wide, p));
  test_support::fill(dom, u, {0, 0});
  test_support::fill(dom, p, {1, 0});
  ex.exchange();
  REQUIRE_OK(test_support::check(dom, u, narrow, {0, 0}));
  REQUIRE_OK(test_support::check(dom, p, wide, {1, 0}));
}

TEST_CASE("per-field halos: errors on every rank") {
  mpi::communicator world;
  auto error_of = [&](auto&& fn) -> std::string {
    try {
      fn();
    } catch (const halox::error& e) {
      return e.what();
    }
    return {};
  };
  const halox::cartesian<2> dom(world, {8, 8}, halox::periodic<2>::all());
  const auto one = halox::stencil<2>::star(1), two = halox::stencil<2>::box(2);
  auto u = dom.make_field<double>(two);
  auto p = dom.make_field<float>(one, halox::host,
                                 halox::field_options{1, halox::components_layout::interleaved,
                                                      halox::layout::row_major, "p"});
  test_support::fill(dom, p, {1, 0});
  const auto before = test_support::snapshot(p);
  {
    const auto msg =
        error_of([&] { halox::make_exchange(dom, halox::halo(two, u), halox::halo(two, p)); });
    INFO(msg);
    CHECK(msg.find("field #1 'p' has padding 1/1 in dimension 0 but the stencil's halo is 2/2") !=
          std::string::npos);
    CHECK(test_support::snapshot(p) == before);
  }
  if (world.size() > 1) {
    // Rank 0 declares another stencil for field #0 than the others.
    const auto mine = world.rank() == 0 ? one : two;
    const auto msg =
        error_of([&] { halox::make_exchange(dom, halox::halo(mine, u), halox::halo(one, p)); });
    INFO(msg);
    CHECK(msg.find("they build different exchanges") != std::string::npos);
  }
}
