#include <catch2/catch.hpp>
#include <halox/halox.hpp>

namespace mpi = boost::mpi;

TEST_CASE("smoke 3d") {
  mpi::communicator world;
  constexpr auto st = halox::stencil<3>::box(1);
  halox::cartesian<3> dom(world, {10, 9, 8}, halox::periodic{true, true, true});
  auto u = dom.make_field<double>(st);
  const auto b = u.owned_box();
  for (auto i = b.lo[0]; i < b.hi[0]; ++i)
    for (auto j = b.lo[1]; j < b.hi[1]; ++j)
      for (auto k = b.lo[2]; k < b.hi[2]; ++k) u(i, j, k) = i * 10000 + j * 100 + k;
  auto ex = halox::make_exchange(dom, st, u);
  ex.exchange();
  const auto a = u.allocated_box();
  auto wrap = [](halox::index x, halox::index n) { return ((x % n) + n) % n; };
  for (auto i = a.lo[0]; i < a.hi[0]; ++i)
    for (auto j = a.lo[1]; j < a.hi[1]; ++j)
      for (auto k = a.lo[2]; k < a.hi[2]; ++k)
        REQUIRE(u(i, j, k) == wrap(i, 10) * 10000 + wrap(j, 9) * 100 + wrap(k, 8));
}
