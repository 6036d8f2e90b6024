// Exchanges a 2-D periodic halo and checks it against the global coordinates.
#include <cstdio>

#include <halox/halox.hpp>

int main(int argc, char** argv) {
  boost::mpi::environment env(argc, argv);
  boost::mpi::communicator world;
  constexpr auto st = halox::stencil<2>::box(1);
  const halox::cartesian<2> dom(world, {7, 5}, halox::periodic{true, true});
  auto u = dom.make_field<long>(st);
  const auto b = u.owned_box();
  for (auto i = b.lo[0]; i < b.hi[0]; ++i)
    for (auto j = b.lo[1]; j < b.hi[1]; ++j) u(i, j) = 100 * i + j;
  auto ex = halox::make_exchange(dom, st, u);
  ex.exchange();
  const auto a = u.allocated_box();
  int bad = 0;
  for (auto i = a.lo[0]; i < a.hi[0]; ++i)
    for (auto j = a.lo[1]; j < a.hi[1]; ++j) bad += u(i, j) != 100 * ((i + 7) % 7) + (j + 5) % 5;
  std::printf("rank %d: %d wrong halo cells\n", world.rank(), bad);
  return bad == 0 ? 0 : 1;
}
