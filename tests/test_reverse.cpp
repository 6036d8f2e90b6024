// MPI tests of reverse (ghost-to-owner) exchanges, unstructured and structured, with every
// reduction. Each rank fills owned entities (cells) and ghosts (halo cells) with values encoding
// who holds them; the expected owner value is computed here, independently, by folding every
// contribution that the model says exists (every rank's ghosts of the entity, every halo cell on
// every rank that mirrors the cell) into the owner's value.
//
// Unstructured: the documented order (peers by increasing rank) makes even double sums of
// arbitrary values bitwise reproducible, so the reference folds in that order and the results
// are compared bit for bit; replace keeps the highest-ranked ghost's value.
// Structured: sums use integer-valued data (exact in any order); replace is checked where every
// halo cell mirroring one owned cell holds the same value (see docs/unstructured.md: which of
// several differing images wins is fixed but follows the plan's internal order).
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <cmath>
#include <cstring>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "entity_check.hpp"

namespace mpi = boost::mpi;
using idx = halox::index;
using halox::reduction;

#define REQUIRE_OK(expr) HXT_REQUIRE_OK(expr)

namespace {

constexpr reduction all_ops[] = {reduction::sum, reduction::min, reduction::max,
                                 reduction::replace};

// a ⊕ b, written out independently of halox's reducers.
template <class T>
T combine(reduction op, const T& a, const T& b) {
  if constexpr (std::is_arithmetic_v<T>) {
    switch (op) {
      case reduction::sum:
        return T(a + b);
      case reduction::min:
        return b < a ? b : a;
      case reduction::max:
        return a < b ? b : a;
      case reduction::replace:
        return b;
    }
  }
  return b;
}

// Values: arbitrary ones, or small integers (sums exact in every type and every order).
template <class T>
T value(std::uint64_t h, bool small) {
  if constexpr (std::is_arithmetic_v<T>)
    if (small) return T(int(h % 2001) - 1000);
  return test_support::entity_value<T>::make(h);
}
std::uint64_t owner_hash(int field, test_support::gid id, int c) {
  return test_support::entity_key(field, id, c, 1);
}
std::uint64_t ghost_hash(int field, test_support::gid id, int c, int rank) {
  return test_support::mix(test_support::entity_key(field, id, c, 2) +
                           0x51ed27ull * std::uint64_t(rank + 1));
}

// ---- unstructured ------------------------------------------------------------------------------

template <class T>
void fill_reverse(const halox::entity_field<T>& f, const test_support::view& v, int field,
                  bool small) {
  for (idx e = 0; e < f.size(); ++e)
    for (int c = 0; c < f.components(); ++c) f(e, c) = test_support::entity_value<T>::sentinel();
  for (std::size_t k = 0; k < v.owned.size(); ++k)
    for (int c = 0; c < f.components(); ++c)
      f(v.owned_local[k], c) = value<T>(owner_hash(field, v.owned[k], c), small);
  for (std::size_t k = 0; k < v.ghosts.size(); ++k)
    for (int c = 0; c < f.components(); ++c)
      f(v.ghost_local[k], c) = value<T>(ghost_hash(field, v.ghosts[k], c, v.rank), small);
}

// Owned entities: the owner's value, then each ghosting rank's, ascending; ghosts keep their own
// value; every other entity its sentinel. Bitwise comparison (memcmp: -0.0 vs 0.0 would count).
template <class T>
test_support::result check_reverse(const halox::entity_field<T>& f, const test_support::graph& g,
                                   const std::vector<std::vector<int>>& ghosters,
                                   const test_support::view& v, int field, bool small,
                                   reduction op) {
  test_support::result r;
  auto expect = [&](idx e, int c, const T& want, const std::string& what) {
    const T got = f(e, c);
    if (std::memcmp(&got, &want, sizeof(T)) != 0 && ++r.bad <= 8)
      r.report += fmt::format("rank {} field {} ({}) local {} comp {}: got {}, want {}\n", v.rank,
                              field, what, e, c, test_support::show(got), test_support::show(want));
  };
  std::vector<char> seen(static_cast<std::size_t>(f.size()), 0);
  for (std::size_t k = 0; k < v.owned.size(); ++k) {
    const int ent = v.owned_entity[k];
    seen[std::size_t(v.owned_local[k])] = 1;
    for (int c = 0; c < f.components(); ++c) {
      T want = value<T>(owner_hash(field, v.owned[k], c), small);
      for (int q : ghosters[std::size_t(ent)])
        want = combine(op, want, value<T>(ghost_hash(field, g.ids[std::size_t(ent)], c, q), small));
      r.filled += !ghosters[std::size_t(ent)].empty();
      expect(
          v.owned_local[k], c, want,
          fmt::format("owned id {}, {} ghosters", v.owned[k], ghosters[std::size_t(ent)].size()));
    }
  }
  for (std::size_t k = 0; k < v.ghosts.size(); ++k) {
    seen[std::size_t(v.ghost_local[k])] = 1;
    for (int c = 0; c < f.components(); ++c)
      expect(v.ghost_local[k], c, value<T>(ghost_hash(field, v.ghosts[k], c, v.rank), small),
             "ghost, must keep its value");
  }
  for (idx e = 0; e < f.size(); ++e)
    if (!seen[std::size_t(e)])
      for (int c = 0; c < f.components(); ++c)
        expect(e, c, test_support::entity_value<T>::sentinel(), "unused");
  return r;
}

// The graphs every unstructured reverse test runs on.
std::vector<std::pair<std::string, test_support::graph>> graphs(int p) {
  std::vector<std::pair<std::string, test_support::graph>> out;
  const test_support::tri_mesh mesh(8, 9);
  out.push_back({"triangles (edge neighbours), irregular blocks",
                 test_support::mesh_triangles(mesh, p, test_support::split_kind::blocks, false)});
  out.push_back({"triangles (vertex neighbours), strips",
                 test_support::mesh_triangles(mesh, p, test_support::split_kind::strips, true)});
  out.push_back({"vertices, irregular blocks",
                 test_support::mesh_vertices(mesh, p, test_support::split_kind::blocks)});
  std::mt19937_64 rng(4242);
  out.push_back({"random graph", test_support::random_graph(50, 140, p, rng, true)});
  out.push_back({"ring, reach 2", test_support::ring(2 * p + 1, 2, p)});
  return out;
}

}  // namespace

TEST_CASE("unstructured reverse: sum, min, max, replace against a serial fold") {
  mpi::communicator world;
  for (const auto& [name, g] : graphs(world.size())) {
    const auto gh = g.ghosters();
    const auto v = test_support::make_view(g, world.rank(), true, 5, 3);
    const auto pat = test_support::make_pattern(world, v, false);
    for (reduction op : all_ops) {
      INFO(name << ", reduction " << halox::to_string(op));
      const bool small = op == reduction::sum;  // for int and float; doubles stay arbitrary
      auto a = pat.make_field<double>(2, halox::entity_layout::component_major, halox::host, "a");
      auto b = pat.make_field<int>(3, halox::entity_layout::entity_major, halox::host, "b");
      auto c = pat.make_field<float>(1);
      std::vector<std::int64_t> mem(std::size_t(pat.local_count() * 2 + 4));
      auto d = pat.wrap<std::int64_t>(mem.data(), 2, halox::entity_layout::component_major,
                                      pat.local_count() + 2);
      fill_reverse(a, v, 0, false);
      fill_reverse(b, v, 1, small);
      fill_reverse(c, v, 2, small);
      fill_reverse(d, v, 3, small);
      auto ex = halox::make_reverse_exchange(pat, op, a, b, c, d);
      ex.exchange();
      REQUIRE_OK(check_reverse(a, g, gh, v, 0, false, op));
      REQUIRE_OK(check_reverse(b, g, gh, v, 1, small, op));
      REQUIRE_OK(check_reverse(c, g, gh, v, 2, small, op));
      REQUIRE_OK(check_reverse(d, g, gh, v, 3, small, op));
    }
    // replace on a value type with no arithmetic
    auto t = pat.make_field<test_support::triple>(2);
    fill_reverse(t, v, 4, false);
    auto ex = halox::make_reverse_exchange(pat, reduction::replace, t);
    ex.exchange();
    INFO(name << ", replace, triple");
    REQUIRE_OK(check_reverse(t, g, gh, v, 4, false, reduction::replace));
  }
}

TEST_CASE("unstructured reverse: given owners, split phase, repeated, bitwise reproducible") {
  mpi::communicator world;
  const auto g = test_support::mesh_vertices(test_support::tri_mesh(10, 7), world.size(),
                                             test_support::split_kind::blocks);
  const auto gh = g.ghosters();
  const auto v = test_support::make_view(g, world.rank(), true, 9, 2);
  std::vector<double> first;
  for (int run = 0; run < 3; ++run) {
    // a fresh pattern and exchange each run (owners given or discovered); the sums of
    // arbitrary doubles must come out bit for bit the same, and equal the serial fold
    const auto pat = test_support::make_pattern(world, v, run == 1);
    auto f = pat.make_field<double>(3, halox::entity_layout::entity_major);
    auto ex = halox::make_reverse_exchange(pat, reduction::sum, f);
    for (int rep = 0; rep < 2; ++rep) {
      fill_reverse(f, v, 0, false);
      auto h = ex.start();
      if (rep == 0) {
        while (!h.test()) {
        }
      } else {
        h.wait();
      }
      INFO("run " << run << " repetition " << rep);
      REQUIRE_OK(check_reverse(f, g, gh, v, 0, false, reduction::sum));
      std::vector<double> now(f.data(), f.data() + f.size() * 3);
      if (first.empty()) first = now;
      REQUIRE(std::memcmp(first.data(), now.data(), now.size() * sizeof(double)) == 0);
    }
  }
}

TEST_CASE("unstructured forward and reverse exchanges in flight at once") {
  mpi::communicator world;
  const auto g = test_support::mesh_triangles(test_support::tri_mesh(7, 8), world.size(),
                                              test_support::split_kind::strips, false);
  const auto gh = g.ghosters();
  const auto v = test_support::make_view(g, world.rank(), true, 13, 0);
  const auto pat = test_support::make_pattern(world, v, false);
  auto u = pat.make_field<double>(), w = pat.make_field<double>();
  auto fwd = halox::make_exchange(pat, u);
  auto rev = halox::make_reverse_exchange(pat, reduction::max, w);
  test_support::fill(u, v, 7, 0);
  fill_reverse(w, v, 8, false);
  auto hr = rev.start();
  auto hf = fwd.start();
  hf.wait();
  hr.wait();
  REQUIRE_OK(test_support::check(u, v, 7, 0));
  REQUIRE_OK(check_reverse(w, g, gh, v, 8, false, reduction::max));
}

// ---- structured --------------------------------------------------------------------------------

namespace {

// Every block of the decomposition: its box and owner, in a global order.
template <int D>
struct blocks {
  std::vector<halox::owned_box<D>> all;
  std::vector<int> mine;  // global numbers of this rank's blocks, in local_boxes() order
};

template <int D>
blocks<D> blocks_of(const halox::cartesian<D>& dom) {
  blocks<D> b;
  for (int r = 0; r < dom.size(); ++r) b.all.push_back({dom.box_of(r), r});
  b.mine.push_back(dom.rank());
  return b;
}
template <int D>
blocks<D> blocks_of(const halox::box_list<D>& dom, const std::vector<halox::owned_box<D>>& list) {
  blocks<D> b;
  b.all = list;
  for (int k = 0; k < int(list.size()); ++k)
    if (list[std::size_t(k)].owner == dom.rank()) b.mine.push_back(k);
  return b;
}

template <int D>
idx linear(const halox::extents<D>& n, const halox::extents<D>& g) {
  idx l = 0;
  for (int i = 0; i < D; ++i) l = l * (n[i] + 64) + (g[i] + 32);  // halo coordinates too
  return l;
}

// Owned cells: a value of the cell; halo cells: a value of (block, halo cell), or, with
// `per_source`, of the owned cell it mirrors (so every image of a cell holds the same value).
template <class T, int D>
void fill_structured(const halox::field<T, D>& f, const halox::stencil<D>& st, const blocks<D>& bl,
                     const std::type_identity_t<halox::extents<D>>& n,
                     const halox::periodic<D>& per, bool small, bool per_source) {
  for (int b = 0; b < f.block_count(); ++b) {
    const auto o = f.owned_box(b);
    test_support::for_cells<D>(f.allocated_box(b), [&](const auto& g) {
      halox::extents<D> src{};
      const bool owned = o.contains(g);
      const bool halo = !owned && test_support::source_of<D>(g, o, st, n, per.flags, src);
      for (int c = 0; c < f.components(); ++c) {
        if (owned)
          f.at(g, c, b) = value<T>(owner_hash(0, linear<D>(n, g), c), small);
        else if (halo && per_source)
          f.at(g, c, b) = value<T>(ghost_hash(0, linear<D>(n, src), c, 0), small);
        else if (halo)
          f.at(g, c, b) =
              value<T>(ghost_hash(bl.mine[std::size_t(b)], linear<D>(n, g), c, 0), small);
        else
          f.at(g, c, b) = test_support::entity_value<T>::sentinel();
      }
    });
  }
}

// The reference: every halo cell of every block of every rank that mirrors one of this rank's
// owned cells contributes its value (as fill_structured wrote it on its rank).
template <class T, int D>
test_support::result check_structured(const halox::field<T, D>& f, const halox::stencil<D>& st,
                                      const blocks<D>& bl,
                                      const std::type_identity_t<halox::extents<D>>& n,
                                      const halox::periodic<D>& per, bool small, bool per_source,
                                      reduction op, double tol = 0) {
  // contributions[(my block, cell)] = halo cells (block, cell) mirroring it
  std::map<std::pair<int, idx>, std::vector<std::pair<int, halox::extents<D>>>> contrib;
  for (int B = 0; B < int(bl.all.size()); ++B) {
    const auto o = bl.all[std::size_t(B)].cells;
    test_support::for_cells<D>(halox::grow(o, st.lo, st.hi), [&](const auto& h) {
      halox::extents<D> src{};
      if (o.contains(h) || !test_support::source_of<D>(h, o, st, n, per.flags, src)) return;
      for (int b = 0; b < f.block_count(); ++b)
        if (f.owned_box(b).contains(src)) contrib[{b, linear<D>(n, src)}].push_back({B, h});
    });
  }
  test_support::result r;
  for (int b = 0; b < f.block_count(); ++b) {
    const auto o = f.owned_box(b);
    test_support::for_cells<D>(f.allocated_box(b), [&](const auto& g) {
      const bool owned = o.contains(g);
      const auto it = owned ? contrib.find({b, linear<D>(n, g)}) : contrib.end();
      for (int c = 0; c < f.components(); ++c) {
        T want{};
        if (owned) {
          want = value<T>(owner_hash(0, linear<D>(n, g), c), small);
          if (it != contrib.end()) {
            ++r.filled;
            for (const auto& [B, h] : it->second)
              want = combine(op, want,
                             per_source ? value<T>(ghost_hash(0, linear<D>(n, g), c, 0), small)
                                        : value<T>(ghost_hash(B, linear<D>(n, h), c, 0), small));
          }
        } else {
          // halo cells keep what fill_structured wrote: recompute it
          halox::extents<D> src{};
          const bool halo = test_support::source_of<D>(g, o, st, n, per.flags, src);
          want = !halo ? test_support::entity_value<T>::sentinel()
                 : per_source
                     ? value<T>(ghost_hash(0, linear<D>(n, src), c, 0), small)
                     : value<T>(ghost_hash(bl.mine[std::size_t(b)], linear<D>(n, g), c, 0), small);
        }
        const T got = f.at(g, c, b);
        bool ok = got == want;
        if constexpr (std::is_floating_point_v<T>)
          ok = ok ||
               (tol > 0 && std::abs(got - want) <= tol * std::max(1.0, std::abs(double(want))));
        if (!ok && ++r.bad <= 8)
          r.report += fmt::format(
              "block {} cell {} comp {} ({}): got {}, want {}\n", b, test_support::str<D>(g), c,
              owned ? fmt::format("owned, {} images", it == contrib.end() ? 0 : it->second.size())
                    : std::string("halo, must keep its value"),
              test_support::show(got), test_support::show(want));
      }
    });
  }
  return r;
}

template <int D, class Dom>
void structured_all_ops(const Dom& dom, const blocks<D>& bl, const halox::stencil<D>& st) {
  const auto n = dom.global_box().hi;
  const auto per = dom.periodicity();
  for (reduction op : all_ops) {
    const bool per_source = op == reduction::replace;
    INFO("reduction " << halox::to_string(op));
    auto a = dom.template make_field<double>(st, halox::host, 2);
    auto b = dom.template make_field<int>(st, halox::host,
                                          halox::field_options{3, halox::components_layout::planar,
                                                               halox::layout::column_major, "b"});
    fill_structured(a, st, bl, n, per, true, per_source);
    fill_structured(b, st, bl, n, per, true, per_source);
    auto ex = halox::make_reverse_exchange(dom, st, op, a, b);
    ex.exchange();
    REQUIRE_OK(check_structured(a, st, bl, n, per, true, per_source, op));
    REQUIRE_OK(check_structured(b, st, bl, n, per, true, per_source, op));
  }
  // replace on a non-arithmetic type
  auto t = dom.template make_field<test_support::triple>(st);
  fill_structured(t, st, bl, n, per, false, true);
  auto ex = halox::make_reverse_exchange(dom, st, reduction::replace, t);
  ex.exchange();
  REQUIRE_OK(check_structured(t, st, bl, n, per, false, true, reduction::replace));
}

template <int D>
halox::periodic<D> mask(int m) {
  halox::periodic<D> p;
  for (int i = 0; i < D; ++i) p.flags[std::size_t(i)] = (m >> i) & 1;
  return p;
}

}  // namespace

TEST_CASE("structured reverse: every reduction, periodic images, self-neighbours, wide halos") {
  mpi::communicator world;
  for (int m = 0; m < 2; ++m) {
    halox::cartesian<1> dom(world, {11}, mask<1>(m));
    for (const auto& st : {halox::stencil<1>::star(1), halox::stencil<1>::star({3}, {1})}) {
      INFO("1-D periodic " << m << " widths " << st.lo[0] << "/" << st.hi[0]);
      structured_all_ops<1>(dom, blocks_of(dom), st);
    }
  }
  for (int m = 0; m < 4; ++m) {
    halox::cartesian<2> dom(world, {7, 6}, mask<2>(m));
    for (const auto& st : {halox::stencil<2>::box(1), halox::stencil<2>::star({2, 1}, {1, 2}),
                           halox::stencil<2>::box(3)}) {
      INFO("2-D periodic mask " << m << " widths " << st.lo[0] << "," << st.lo[1] << "/" << st.hi[0]
                                << "," << st.hi[1] << " neighbours " << st.neighbor_count());
      structured_all_ops<2>(dom, blocks_of(dom), st);
    }
  }
  halox::cartesian<3> dom3(world, {5, 4, 6}, halox::periodic{true, false, true});
  INFO("3-D box(1)");
  structured_all_ops<3>(dom3, blocks_of(dom3), halox::stencil<3>::box(1));
}

TEST_CASE("structured reverse: box_list with several blocks per rank and ranks without blocks") {
  mpi::communicator world;
  const int p = world.size();
  // 7 unequal boxes of a 10x8 grid, dealt so that ranks hold several, one, or none
  const std::vector<halox::box<2>> cells = {{{0, 0}, {3, 2}}, {{3, 0}, {10, 2}}, {{0, 2}, {1, 8}},
                                            {{1, 2}, {6, 5}}, {{6, 2}, {10, 5}}, {{1, 5}, {6, 8}},
                                            {{6, 5}, {10, 8}}};
  std::vector<halox::owned_box<2>> list;
  for (std::size_t k = 0; k < cells.size(); ++k)
    list.push_back({cells[k], int((k * 2) % std::size_t(p))});
  for (int m = 0; m < 4; ++m) {
    halox::box_list<2> dom(world, {10, 8}, mask<2>(m), list);
    for (const auto& st : {halox::stencil<2>::box(1), halox::stencil<2>::box({2, 0}, {1, 3})}) {
      INFO("periodic mask " << m << " stencil widths " << st.lo[0] << "," << st.lo[1] << "/"
                            << st.hi[0] << "," << st.hi[1]);
      structured_all_ops<2>(dom, blocks_of(dom, list), st);
    }
  }
}

TEST_CASE("structured reverse: double sums are bitwise reproducible") {
  mpi::communicator world;
  constexpr auto st = halox::stencil<3>::box(1);
  halox::cartesian<3> dom(world, {6, 5, 4}, halox::periodic{true, true, true});
  const auto bl = blocks_of(dom);
  const auto n = dom.global_box().hi;
  std::vector<double> first;
  for (int run = 0; run < 3; ++run) {
    auto f = dom.make_field<double>(st, halox::host, 2);
    fill_structured(f, st, bl, n, dom.periodicity(), false, false);
    auto ex = halox::make_reverse_exchange(dom, st, reduction::sum, f);
    if (run == 2) {
      auto h = ex.start();
      while (!h.test()) {
      }
    } else {
      ex.exchange();
    }
    // against the reference up to rounding (its order differs), and bit for bit between runs
    REQUIRE_OK(
        check_structured(f, st, bl, n, dom.periodicity(), false, false, reduction::sum, 1e-14));
    const auto snap = test_support::snapshot(f);
    if (first.empty()) first = snap;
    INFO("run " << run);
    REQUIRE(first.size() == snap.size());
    REQUIRE(std::memcmp(first.data(), snap.data(), snap.size() * sizeof(double)) == 0);
  }
}
