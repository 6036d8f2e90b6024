// Two ranks, each holding more than a million ghosts of the other's entities, with 64-bit ids
// beyond 2^32, in shuffled order: the owners are discovered through the directory, and every
// ghost's value is checked after a forward exchange, every owned value after a reverse sum.
#include <boost/mpi/collectives.hpp>
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <chrono>
#include <iostream>
#include <numeric>
#include <random>

namespace mpi = boost::mpi;
using idx = halox::index;
using halox::global_id;

TEST_CASE("2 ranks, 1.1 million ghosts each, ids beyond 2^32") {
  mpi::communicator world;
  if (world.size() != 2) {
    WARN("needs exactly 2 ranks");
    return;
  }
  const int me = world.rank(), other = 1 - me;
  constexpr idx m = 1'100'000;
  constexpr global_id base = global_id(3) << 34;
  // rank r owns base + 2k + r: the two ranks' ids interleave
  auto id = [&](int r, idx k) { return base + 2 * k + r; };
  std::vector<idx> perm_o(static_cast<std::size_t>(m)), perm_g(static_cast<std::size_t>(m));
  std::iota(perm_o.begin(), perm_o.end(), idx(0));
  std::iota(perm_g.begin(), perm_g.end(), idx(0));
  std::mt19937_64 rng(77 + std::uint64_t(me));
  std::shuffle(perm_o.begin(), perm_o.end(), rng);
  std::shuffle(perm_g.begin(), perm_g.end(), rng);
  std::vector<global_id> owned(static_cast<std::size_t>(m)), ghosts(static_cast<std::size_t>(m));
  for (idx k = 0; k < m; ++k) {
    owned[std::size_t(k)] = id(me, perm_o[std::size_t(k)]);
    ghosts[std::size_t(k)] = id(other, perm_g[std::size_t(k)]);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const halox::unstructured pat(world, owned, ghosts);
  const double setup = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(pat.ghost_count() == m);
  REQUIRE(pat.recvs().size() == 1);
  REQUIRE(pat.sends().size() == 1);
  REQUIRE(pat.sends()[0].local.size() == std::size_t(m));

  // forward: ghost k (local m + k) must hold its id, encoded
  auto value = [](global_id g, int c) { return g * 3 + 1 + c; };
  auto f = pat.make_field<std::int64_t>(2, halox::entity_layout::component_major);
  for (idx k = 0; k < m; ++k)
    for (int c = 0; c < 2; ++c) f(k, c) = value(owned[std::size_t(k)], c), f(m + k, c) = -1;
  auto ex = halox::make_exchange(pat, f);
  ex.exchange();
  long long bad = 0;
  idx first_bad = -1;
  for (idx k = 0; k < m; ++k)
    for (int c = 0; c < 2; ++c) {
      const bool ok = f(k, c) == value(owned[std::size_t(k)], c) &&
                      f(m + k, c) == value(ghosts[std::size_t(k)], c);
      if (!ok && bad++ == 0) first_bad = k;
    }
  INFO("rank " << me << ": first mismatch at entity " << first_bad);
  CHECK(bad == 0);
  REQUIRE(mpi::all_reduce(world, bad, std::plus<long long>()) == 0);

  // reverse sum: each owned entity gets its single ghost's value added
  auto contribution = [](global_id g) { return (g % 1000) - 500; };
  auto r = pat.make_field<std::int64_t>();
  for (idx k = 0; k < m; ++k)
    r(k) = owned[std::size_t(k)], r(m + k) = contribution(ghosts[std::size_t(k)]);
  auto rev = halox::make_reverse_exchange(pat, halox::reduction::sum, r);
  rev.exchange();
  bad = 0;
  for (idx k = 0; k < m; ++k) {
    const global_id g = owned[std::size_t(k)];
    bad += r(k) != g + contribution(g);
    bad += r(m + k) != contribution(ghosts[std::size_t(k)]);
  }
  CHECK(bad == 0);
  REQUIRE(mpi::all_reduce(world, bad, std::plus<long long>()) == 0);
  if (me == 0)
    std::cout << "test_unstructured_large: pattern set-up " << setup << " s" << std::endl;
}
