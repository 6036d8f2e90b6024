// MPI tests of unstructured patterns and their forward exchange (owners -> ghosts): rings, a 2-D
// triangular mesh (triangles and vertices as entities, strips and irregular blocks), ghosts and
// owned entities in shuffled order at interleaved local indices, several fields of several types
// and layouts in one exchange, ranks that own or need nothing, given versus discovered owners,
// split phase, and a structured and an unstructured exchange in flight at once. Every local
// entity is checked against the model in entity_check.hpp; every plan against the send and
// receive lists the model derives from all ranks' declarations.
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "entity_check.hpp"

namespace mpi = boost::mpi;
using idx = halox::index;

#define REQUIRE_OK(expr) HXT_REQUIRE_OK(expr)

namespace {

// Every rank's declaration, as rank r would make it.
std::vector<test_support::view> all_views(const test_support::graph& g, bool shuffle,
                                          std::uint64_t seed = 0, int extra = 0) {
  std::vector<test_support::view> all;
  for (int r = 0; r < g.ranks; ++r)
    all.push_back(test_support::make_view(g, r, shuffle, seed, extra));
  return all;
}

// The plan is the model's; collective, so every rank fails together.
void require_plan(const halox::unstructured& pat, const std::vector<test_support::view>& all) {
  const auto why = test_support::plan_mismatch(pat, all);
  INFO("rank " << pat.rank() << ": " << why);
  CHECK(why.empty());
  const int bad = mpi::all_reduce(pat.comm(), int(!why.empty()), std::plus<int>());
  REQUIRE(bad == 0);
}

// Whether make_exchange accepts these two fields over a pattern / a 2-D domain.
template <class A, class B>
concept unstructured_exchangeable = requires(const halox::unstructured& u, const A& a, const B& b) {
  halox::make_exchange(u, a, b);
};
template <class A, class B>
concept structured_exchangeable = requires(const halox::cartesian<2>& d, const A& a, const B& b) {
  halox::make_exchange(d, halox::stencil<2>::box(1), a, b);
};

// One double field over the pattern, exchanged and checked.
void exchange_and_check(const halox::unstructured& pat, const test_support::view& v) {
  auto f = pat.make_field<double>(1, halox::entity_layout::entity_major, halox::host, "u");
  test_support::fill(f, v, 0, 0);
  auto ex = halox::make_exchange(pat, f);
  ex.exchange();
  REQUIRE_OK(test_support::check(f, v, 0, 0));
}

}  // namespace

TEST_CASE("rings: contiguous blocks, one and several entities per rank, reach 1 and 3") {
  mpi::communicator world;
  const int p = world.size();
  for (int per_rank : {1, 4})
    for (int reach : {1, 3})
      for (bool give : {false, true}) {
        const auto g = test_support::ring(per_rank * p, reach, p, /*big=*/true);
        const auto all = all_views(g, false);
        const auto& v = all[std::size_t(world.rank())];
        INFO("ring of " << g.size() << " reach " << reach << " owners given " << give);
        const auto pat = test_support::make_pattern(world, v, give);
        REQUIRE(pat.owned_count() == per_rank);
        REQUIRE(pat.ghost_count() == idx(v.ghosts.size()));
        require_plan(pat, all);
        exchange_and_check(pat, v);
        // with enough entities per rank every rank talks to its two ring neighbours only
        if (p >= 3 && per_rank >= reach) {
          auto f = pat.make_field<int>();
          auto ex = halox::make_exchange(pat, f);
          REQUIRE_THAT(ex.describe(), Catch::Contains("sends 2 message(s)"));
          REQUIRE_THAT(ex.describe(), Catch::Contains("receives 2 message(s)"));
        }
      }
}

TEST_CASE("a pattern over a raw MPI_Comm") {
  mpi::communicator world;
  const auto g = test_support::ring(3 * world.size(), 2, world.size(), /*big=*/true);
  const auto all = all_views(g, false);
  const auto& v = all[std::size_t(world.rank())];
  const halox::unstructured pat(MPI_Comm(MPI_COMM_WORLD), v.owned, v.ghosts);
  require_plan(pat, all);
  exchange_and_check(pat, v);
}

TEST_CASE("triangular mesh: triangles and vertices, strips and irregular blocks") {
  mpi::communicator world;
  const int p = world.size();
  const test_support::tri_mesh mesh(9, 8);
  for (int kind = 0; kind < 3; ++kind)
    for (auto split : {test_support::split_kind::strips, test_support::split_kind::blocks})
      for (bool shuffle : {false, true}) {
        const auto g = kind == 2 ? test_support::mesh_vertices(mesh, p, split)
                                 : test_support::mesh_triangles(mesh, p, split, kind == 1);
        const auto all = all_views(g, shuffle, 7, shuffle ? 5 : 0);
        const auto& v = all[std::size_t(world.rank())];
        INFO((kind == 2   ? "vertices"
              : kind == 1 ? "triangles sharing a vertex"
                          : "triangles sharing an edge")
             << (split == test_support::split_kind::strips ? ", strips" : ", blocks")
             << (shuffle ? ", shuffled and interleaved" : ", declaration order"));
        // the model itself: every entity has one owner, and on more than one rank somebody
        // needs ghosts
        long long ghosts =
            mpi::all_reduce(world, (long long)v.ghosts.size(), std::plus<long long>());
        if (p > 1 && split == test_support::split_kind::strips) REQUIRE(ghosts > 0);
        for (bool give : {false, true}) {
          const auto pat = test_support::make_pattern(world, v, give);
          require_plan(pat, all);
          exchange_and_check(pat, v);
        }
      }
}

TEST_CASE("given owners and discovered owners give identical plans") {
  mpi::communicator world;
  const int p = world.size();
  std::mt19937_64 rng(99);
  std::vector<test_support::graph> graphs;
  graphs.push_back(test_support::mesh_triangles(test_support::tri_mesh(7, 10), p,
                                                test_support::split_kind::blocks, true));
  graphs.push_back(test_support::random_graph(60, 150, p, rng, true));
  graphs.push_back(test_support::ring(2 * p + 1, 2, p));
  for (std::size_t k = 0; k < graphs.size(); ++k) {
    INFO("graph #" << k);
    const auto all = all_views(graphs[k], true, k, 2);
    const auto& v = all[std::size_t(world.rank())];
    const auto a = test_support::make_pattern(world, v, false),
               b = test_support::make_pattern(world, v, true);
    REQUIRE(a.ghost_owners() == b.ghost_owners());
    REQUIRE(test_support::same_lists(a.sends(), b.sends()));
    REQUIRE(test_support::same_lists(a.recvs(), b.recvs()));
    REQUIRE(a.owned_local() == b.owned_local());
    REQUIRE(a.ghost_local() == b.ghost_local());
    REQUIRE(a.id() != b.id());  // two patterns, even from the same declaration
    require_plan(a, all);
  }
}

TEST_CASE("several fields: types, components, entity- and component-major, user memory") {
  mpi::communicator world;
  const int p = world.size();
  const auto g = test_support::mesh_triangles(test_support::tri_mesh(8, 7), p,
                                              test_support::split_kind::blocks, false);
  const auto all = all_views(g, true, 3, 4);
  const auto& v = all[std::size_t(world.rank())];
  const auto pat = test_support::make_pattern(world, v, false);
  const idx n = pat.local_count();
  REQUIRE(n == idx(v.owned.size() + v.ghosts.size()) + 4);

  auto a = pat.make_field<double>(3, halox::entity_layout::entity_major, halox::host, "a");
  auto b = pat.make_field<float>(2, halox::entity_layout::component_major, halox::host, "b");
  auto c = pat.make_field<test_support::triple>(1);
  // user memory, component-major with a gap of 3 elements between components, guard values
  // around it that must survive
  const idx stride = n + 3;
  std::vector<int> mem(std::size_t(stride * 4 + 6), -99);
  auto d = pat.wrap<int>(mem.data() + 3, 4, halox::entity_layout::component_major, stride,
                         halox::host, "d");
  // user memory, entity-major
  std::vector<std::int64_t> mem2(std::size_t(n * 2));
  auto e = pat.wrap<std::int64_t>(mem2.data(), 2);
  // the accessors address memory as declared
  if (n > 0) {
    REQUIRE(&d(1, 2) == mem.data() + 3 + 2 * stride + 1);
    REQUIRE(&e(1, 1) == mem2.data() + 3);
    REQUIRE(&b(1, 1) == b.data() + n + 1);
    REQUIRE(&a(1, 2) == a.data() + 5);
  }
  auto ex = halox::make_exchange(pat, a, b, c, d, e);
  for (int salt = 0; salt < 3; ++salt) {
    if (salt == 0) {
      test_support::fill(a, v, 0, salt), test_support::fill(b, v, 1, salt),
          test_support::fill(c, v, 2, salt);
      test_support::fill(d, v, 3, salt), test_support::fill(e, v, 4, salt);
    } else {
      test_support::fill_owned(a, v, 0, salt), test_support::fill_owned(b, v, 1, salt),
          test_support::fill_owned(c, v, 2, salt);
      test_support::fill_owned(d, v, 3, salt), test_support::fill_owned(e, v, 4, salt);
    }
    ex.exchange();
    INFO("exchange #" << salt);
    REQUIRE_OK(test_support::check(a, v, 0, salt));
    REQUIRE_OK(test_support::check(b, v, 1, salt));
    REQUIRE_OK(test_support::check(c, v, 2, salt));
    REQUIRE_OK(test_support::check(d, v, 3, salt));
    REQUIRE_OK(test_support::check(e, v, 4, salt));
    // the gaps between the components of d and the guards around it are untouched
    for (idx k = 0; k < idx(mem.size()); ++k) {
      const idx off = k - 3;
      if (off < 0 || off >= 4 * stride || off % stride >= n) REQUIRE(mem[std::size_t(k)] == -99);
    }
  }
  // one message per peer for all five fields
  std::size_t peers = pat.sends().size();
  REQUIRE_THAT(ex.describe(), Catch::Contains(fmt::format("sends {} message(s)", peers)));
}

TEST_CASE("ranks that own nothing, ranks that need nothing, one peer for unrelated ghosts") {
  mpi::communicator world;
  const int p = world.size();
  // 6 entities per rank; ranks r = 1 (mod 3) own nothing; ranks r = 2 (mod 3) need no ghosts;
  // the others ghost scattered entities, many of one owner, none adjacent to what they own
  test_support::graph g;
  g.ranks = p;
  const int n = 6 * p;
  g.ids = test_support::make_ids(n, true, 5);
  g.adj.assign(std::size_t(n), {});
  std::vector<int> owners;
  for (int r = 0; r < p; ++r)
    if (r % 3 != 1 || p == 1) owners.push_back(r);
  for (int k = 0; k < n; ++k) g.owner.push_back(owners[std::size_t(k) % owners.size()]);
  for (int r = 0; r < p; ++r) {
    if (r % 3 == 2) continue;
    auto& x = g.extra_ghosts[r];
    for (int k = r; k < n; k += 5) x.push_back(k);  // not owned by r is filtered by the model
  }
  const auto all = all_views(g, true, 17, 1);
  const auto& v = all[std::size_t(world.rank())];
  if (p > 1 && world.rank() % 3 == 1) REQUIRE(v.owned.empty());
  if (world.rank() % 3 == 2) REQUIRE(v.ghosts.empty());
  for (bool give : {false, true}) {
    INFO("owners given " << give);
    const auto pat = test_support::make_pattern(world, v, give);
    require_plan(pat, all);
    auto f = pat.make_field<double>(2, halox::entity_layout::component_major);
    auto h = pat.make_field<test_support::triple>();
    test_support::fill(f, v, 0, 0);
    test_support::fill(h, v, 1, 0);
    auto ex = halox::make_exchange(pat, f, h);
    ex.exchange();
    REQUIRE_OK(test_support::check(f, v, 0, 0));
    REQUIRE_OK(test_support::check(h, v, 1, 0));
    // several unrelated ghosts of one owner still travel in one message per peer
    REQUIRE_THAT(ex.describe(),
                 Catch::Contains(fmt::format("receives {} message(s)", pat.recvs().size())));
    for (const auto& l : pat.recvs()) REQUIRE(l.rank != world.rank());
  }
  // a pattern with no entities on any rank
  const halox::unstructured empty(world, {}, {});
  REQUIRE(empty.local_count() == 0);
  auto z = empty.make_field<double>();
  auto ez = halox::make_exchange(empty, z);
  ez.exchange();
  REQUIRE_THAT(ez.describe(), Catch::Contains("sends 0 message(s)"));
}

TEST_CASE("split phase: start / test / wait, repeated, moved exchange objects") {
  mpi::communicator world;
  const auto g = test_support::mesh_vertices(test_support::tri_mesh(6, 9), world.size(),
                                             test_support::split_kind::blocks);
  const auto all = all_views(g, true, 23, 3);
  const auto& v = all[std::size_t(world.rank())];
  const auto pat = test_support::make_pattern(world, v, false);
  auto f = pat.make_field<float>(2, halox::entity_layout::entity_major);
  auto ex0 = halox::make_exchange(pat, f);
  halox::halo_exchange ex = std::move(ex0);
  test_support::fill(f, v, 0, 0);
  for (int it = 0; it < 4; ++it) {
    test_support::fill_owned(f, v, 0, it);
    auto h = ex.start();
    REQUIRE(ex.in_flight());
    if (it % 2) {
      h.wait();
      h.wait();
    } else {
      while (!h.test()) {
      }
      REQUIRE(h.test());
    }
    REQUIRE(!ex.in_flight());
    INFO("iteration " << it);
    REQUIRE_OK(test_support::check(f, v, 0, it));
  }
}

TEST_CASE("a structured and two unstructured exchanges in flight at once") {
  mpi::communicator world;
  // structured and unstructured fields cannot share an exchange object: neither overload of
  // make_exchange accepts the mix
  using ef = halox::entity_field<double>;
  using sf = halox::field<double, 2>;
  static_assert(!unstructured_exchangeable<ef, sf>);
  static_assert(!structured_exchangeable<sf, ef>);
  static_assert(unstructured_exchangeable<ef, ef> && structured_exchangeable<sf, sf>);

  constexpr auto st = halox::stencil<2>::box(1);
  halox::cartesian<2> dom(world, {9, 7}, halox::periodic{true, false});
  auto s = dom.make_field<double>(st, halox::host, 2);
  const auto g1 = test_support::mesh_triangles(test_support::tri_mesh(8, 6), world.size(),
                                               test_support::split_kind::strips, false);
  const auto g2 = test_support::ring(3 * world.size(), 2, world.size(), true);
  const auto v1 = test_support::make_view(g1, world.rank(), true, 1, 2);
  const auto v2 = test_support::make_view(g2, world.rank(), false);
  const auto p1 = test_support::make_pattern(world, v1, false);
  const auto p2 = test_support::make_pattern(world, v2, true);
  auto u1 = p1.make_field<double>();
  auto u2 = p2.make_field<int>(3, halox::entity_layout::component_major);
  auto es = halox::make_exchange(dom, st, s);
  auto e1 = halox::make_exchange(p1, u1);
  auto e2 = halox::make_exchange(p2, u2);
  for (int it = 0; it < 3; ++it) {
    test_support::fill(dom, s, {0, it});
    test_support::fill(u1, v1, 1, it);
    test_support::fill(u2, v2, 2, it);
    auto hs = es.start();
    auto h1 = e1.start();
    auto h2 = e2.start();
    REQUIRE((es.in_flight() && e1.in_flight() && e2.in_flight()));
    if (it == 0) {
      h2.wait(), h1.wait(), hs.wait();
    } else if (it == 1) {
      hs.wait(), h1.wait(), h2.wait();
    } else {
      bool a = false, b = false, c = false;
      while (!(a && b && c)) a = h1.test(), b = hs.test(), c = h2.test();
    }
    INFO("iteration " << it);
    REQUIRE_OK(test_support::check(dom, s, st, {0, it}));
    REQUIRE_OK(test_support::check(u1, v1, 1, it));
    REQUIRE_OK(test_support::check(u2, v2, 2, it));
  }
}
