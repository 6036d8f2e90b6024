// Unit tests of the decomposition arithmetic (split, balanced_grid), box arithmetic, and the
// structured plan (make_plan) against an independent model of the halo.
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <random>

#include "check.hpp"
#include "plan/plan_builder.hpp"

using halox::box;
using idx = halox::index;

// ---- split / split_owner ---------------------------------------------------------------------

TEST_CASE("split tiles [0, n) and split_owner inverts it") {
  for (idx n = 1; n <= 70; ++n)
    for (int p = 1; p <= 75; ++p) {
      INFO("n=" << n << " p=" << p);
      idx next = 0;
      for (int i = 0; i < p; ++i) {
        const auto s = halox::split(n, p, i);
        REQUIRE(s.first == next);
        const idx len = s.last - s.first;
        REQUIRE(len == n / p + (i < n % p ? 1 : 0));
        for (idx x = s.first; x < s.last; ++x) REQUIRE(halox::split_owner(n, p, x) == i);
        next = s.last;
      }
      REQUIRE(next == n);
    }
  // large extents (64-bit)
  const idx big = idx(1) << 40;
  const auto s = halox::split(big + 3, 7, 6);
  CHECK(s.last == big + 3);
  CHECK(halox::split_owner(big + 3, 7, big + 2) == 6);
  CHECK(halox::split_owner(big + 3, 7, s.first) == 6);
  CHECK(halox::split_owner(big + 3, 7, s.first - 1) == 5);
}

// ---- balanced_grid -----------------------------------------------------------------------------

// Independent cost model: halo surface of one (largest) block, counting only split dimensions.
template <int D>
double surface(const std::array<int, D>& p, const halox::extents<D>& n) {
  double s = 0;
  for (int i = 0; i < D; ++i) {
    if (p[i] == 1) continue;
    double face = 1;
    for (int j = 0; j < D; ++j)
      if (j != i) face *= double((n[j] + p[j] - 1) / p[j]);
    s += 2 * face;
  }
  return s;
}

template <int D>
void all_grids(int ranks, int dim, std::array<int, D>& cur, std::vector<std::array<int, D>>& out) {
  if (dim == D - 1) {
    cur[dim] = ranks;
    out.push_back(cur);
    return;
  }
  for (int f = 1; f <= ranks; ++f)
    if (ranks % f == 0) {
      cur[dim] = f;
      all_grids<D>(ranks / f, dim + 1, cur, out);
    }
}

template <int D>
void check_balanced(int ranks, const halox::extents<D>& n) {
  INFO("ranks " << ranks << " extents " << test_support::str<D>(n));
  std::array<int, D> cur{};
  std::vector<std::array<int, D>> grids;
  all_grids<D>(ranks, 0, cur, grids);
  double best = 1e300;
  for (const auto& g : grids) {
    bool ok = true;
    for (int i = 0; i < D; ++i) ok = ok && g[i] <= n[i];
    if (ok) best = std::min(best, surface<D>(g, n));
  }
  if (best == 1e300) {
    REQUIRE_THROWS_AS(halox::balanced_grid<D>(ranks, n), halox::error);
    return;
  }
  const auto g = halox::balanced_grid<D>(ranks, n).dims;
  long long product = 1;
  for (int i = 0; i < D; ++i) {
    REQUIRE(g[i] >= 1);
    REQUIRE(g[i] <= n[i]);
    product *= g[i];
  }
  REQUIRE(product == ranks);
  REQUIRE(surface<D>(g, n) == best);
}

TEST_CASE("balanced_grid: known answers") {
  CHECK(halox::balanced_grid<3>(8, {64, 64, 64}).dims == std::array<int, 3>{2, 2, 2});
  // Ties go to the outer dimensions (contiguous faces for row-major fields).
  CHECK(halox::balanced_grid<3>(2, {64, 64, 64}).dims == std::array<int, 3>{2, 1, 1});
  CHECK(halox::balanced_grid<3>(4, {64, 64, 64}).dims == std::array<int, 3>{2, 2, 1});
  CHECK(halox::balanced_grid<2>(2, {64, 64}).dims == std::array<int, 2>{2, 1});
  CHECK(halox::balanced_grid<2>(4, {1000, 10}).dims == std::array<int, 2>{4, 1});
  CHECK(halox::balanced_grid<2>(4, {10, 1000}).dims == std::array<int, 2>{1, 4});
  CHECK(halox::balanced_grid<2>(4, {1, 4}).dims == std::array<int, 2>{1, 4});
  CHECK(halox::balanced_grid<3>(1, {5, 6, 7}).dims == std::array<int, 3>{1, 1, 1});
  CHECK(halox::balanced_grid<1>(7, {7}).dims == std::array<int, 1>{7});
  CHECK(halox::balanced_grid<2>(16, {100, 100}).dims == std::array<int, 2>{4, 4});
  CHECK(halox::balanced_grid<3>(27, {30, 30, 30}).dims == std::array<int, 3>{3, 3, 3});
}

TEST_CASE("balanced_grid: product, fit and minimal surface over many shapes") {
  std::mt19937 rng(12345);
  for (int t = 0; t < 300; ++t) {
    const int ranks = 1 + int(rng() % 24);
    check_balanced<1>(ranks, {idx(1 + rng() % 30)});
    check_balanced<2>(ranks, {idx(1 + rng() % 30), idx(1 + rng() % 30)});
    check_balanced<3>(ranks, {idx(1 + rng() % 12), idx(1 + rng() % 12), idx(1 + rng() % 12)});
  }
}

TEST_CASE("balanced_grid: more ranks than cells is an error naming the rank count") {
  REQUIRE_THROWS_AS(halox::balanced_grid<2>(7, {2, 3}), halox::error);
  REQUIRE_THROWS_WITH(halox::balanced_grid<2>(7, {2, 3}), Catch::Contains("7 ranks"));
  REQUIRE_THROWS_WITH(halox::balanced_grid<1>(5, {4}), Catch::Contains("5 ranks"));
  REQUIRE_THROWS_WITH(halox::balanced_grid<3>(5, {1, 1, 4}), Catch::Contains("1x1x4"));
  // 5 is prime: it cannot be spread over a 2x2x2 domain even though it has 8 cells.
  REQUIRE_THROWS_AS(halox::balanced_grid<3>(5, {2, 2, 2}), halox::error);
  REQUIRE_THROWS_WITH(halox::balanced_grid<2>(0, {4, 4}), Catch::Contains("got 0"));
  REQUIRE_THROWS_WITH(halox::balanced_grid<2>(-2, {4, 4}), Catch::Contains("got -2"));
}

// ---- box arithmetic ----------------------------------------------------------------------------

TEST_CASE("box arithmetic") {
  constexpr box<2> a{{0, 0}, {4, 6}}, b{{2, -1}, {7, 3}};
  STATIC_REQUIRE(halox::intersect(a, b) == box<2>{{2, 0}, {4, 3}});
  STATIC_REQUIRE(halox::intersect(a, b).volume() == 6);
  STATIC_REQUIRE(halox::intersect(a, box<2>{{4, 0}, {5, 6}}).empty());  // touching: empty
  STATIC_REQUIRE(halox::intersect(a, box<2>{{4, 0}, {5, 6}}).volume() == 0);
  STATIC_REQUIRE(halox::translate(a, {-3, 10}) == box<2>{{-3, 10}, {1, 16}});
  STATIC_REQUIRE(halox::grow(a, std::array<int, 2>{1, 2}, std::array<int, 2>{3, 0}) ==
                 box<2>{{-1, -2}, {7, 6}});
  STATIC_REQUIRE(a.volume() == 24);
  STATIC_REQUIRE(a.size() == halox::extents<2>{4, 6});
  STATIC_REQUIRE(a.contains({0, 0}) && a.contains({3, 5}) && !a.contains({4, 5}) &&
                 !a.contains({-1, 0}));
  STATIC_REQUIRE(box<3>{{0, 0, 0}, {1, 0, 1}}.empty());
  STATIC_REQUIRE(box<3>{{0, 0, 0}, {1, -1, 1}}.volume() == 0);
  STATIC_REQUIRE(box<1>{{5}, {9}}.volume() == 4);
  CHECK(halox::to_string(b) == "[2,7)x[-1,3)");

  STATIC_REQUIRE(halox::floor_div(7, 3) == 2);
  STATIC_REQUIRE(halox::floor_div(-7, 3) == -3);
  STATIC_REQUIRE(halox::floor_div(-6, 3) == -2);
  STATIC_REQUIRE(halox::floor_div(-1, 10) == -1);
  STATIC_REQUIRE(halox::floor_div(0, 10) == 0);
  STATIC_REQUIRE(halox::floor_div(7, -3) == -3);
  for (idx x = -50; x <= 50; ++x)
    for (idx n = 1; n <= 7; ++n) {
      const idx q = halox::floor_div(x, n);
      REQUIRE(q * n <= x);
      REQUIRE(x < (q + 1) * n);
    }
}

// ---- checked arithmetic and 64-bit limits ------------------------------------------------------

TEST_CASE("checked arithmetic: products, sums and volumes that do not fit are reported") {
  using halox::detail::checked_add;
  using halox::detail::checked_mul;
  using halox::detail::checked_sub;
  constexpr idx max = std::numeric_limits<idx>::max(), min = std::numeric_limits<idx>::min();
  STATIC_REQUIRE(checked_mul(idx(1) << 31, idx(1) << 31) == idx(1) << 62);
  STATIC_REQUIRE(!checked_mul(idx(1) << 32, idx(1) << 31));
  STATIC_REQUIRE(!checked_mul(min, -1));
  STATIC_REQUIRE(checked_mul(max, 1) == max);
  STATIC_REQUIRE(!checked_mul(std::optional<idx>(), 1));
  STATIC_REQUIRE(checked_add(max - 1, 1) == max);
  STATIC_REQUIRE(!checked_add(max, 1));
  STATIC_REQUIRE(!checked_add(std::optional<idx>(), 0));
  STATIC_REQUIRE(!checked_sub(min, 1));
  STATIC_REQUIRE(box<2>{{0, 0}, {4, 6}}.checked_volume() == 24);
  STATIC_REQUIRE(box<2>{{3, 0}, {1, 6}}.checked_volume() == 0);  // empty
  STATIC_REQUIRE(!box<2>{{0, 0}, {idx(1) << 32, idx(1) << 32}}.checked_volume());
  STATIC_REQUIRE(box<2>{{0, 0}, {idx(1) << 31, idx(1) << 31}}.checked_volume() == idx(1) << 62);
  STATIC_REQUIRE(!box<1>{{min}, {max}}.checked_volume());  // hi - lo itself overflows
  STATIC_REQUIRE(!box<3>{{0, 0, 0}, {idx(1) << 62, 2, 1}}.checked_volume());
  STATIC_REQUIRE(box<3>{{0, 0, 0}, {idx(1) << 61, 2, 1}}.checked_volume() == idx(1) << 62);
}

TEST_CASE("balanced_grid and split at extents near INT64_MAX") {
  constexpr idx max = std::numeric_limits<idx>::max();
  CHECK(halox::balanced_grid<1>(3, {max}).dims == std::array<int, 1>{3});
  CHECK(halox::balanced_grid<2>(4, {max, max}).dims == std::array<int, 2>{2, 2});
  CHECK(halox::balanced_grid<3>(6, {max, max - 1, 7}).dims == std::array<int, 3>{3, 2, 1});
  const auto s = halox::split(max, 3, 2);
  CHECK(s.last == max);
  CHECK(halox::split_owner(max, 3, max - 1) == 2);
  CHECK(halox::split_owner(max, 3, s.first) == 2);
  CHECK(halox::split_owner(max, 3, s.first - 1) == 1);
}

TEST_CASE("cartesian: extents above max_extent are refused; at it, the plan's images fit") {
  boost::mpi::communicator self(MPI_COMM_SELF, boost::mpi::comm_attach);
  constexpr idx max = std::numeric_limits<idx>::max();
  // periodic images of a halo at INT64_MAX - 1 cells lie beyond INT64_MAX
  REQUIRE_THROWS_WITH(halox::cartesian<1>(self, {max - 1}, halox::periodic{true}),
                      Catch::Contains("global extent 9223372036854775806 in dimension 0 exceeds "
                                      "2305843009213693952"));
  REQUIRE_THROWS_AS(halox::cartesian<1>(self, {halox::max_extent + 1}), halox::error);
  // the widest halo at the largest extent: every coordinate and image shift fits
  constexpr idx n = halox::max_extent;
  constexpr int w = std::numeric_limits<int>::max();
  const halox::cartesian<2> dom(self, {n, 3}, halox::periodic<2>::all());
  const auto st = halox::stencil<2>::star({w, 1}, {w, 1});
  const auto p = halox::make_plan<2>(dom, st);
  REQUIRE(p.local.size() == 4);
  std::vector<halox::transfer<2>> want{
      {0, 0, box<2>{{n - w, 0}, {n, 3}}, box<2>{{-w, 0}, {0, 3}}},
      {0, 0, box<2>{{0, 0}, {w, 3}}, box<2>{{n, 0}, {n + w, 3}}},
      {0, 0, box<2>{{0, 2}, {n, 3}}, box<2>{{0, -1}, {n, 0}}},
      {0, 0, box<2>{{0, 0}, {n, 1}}, box<2>{{0, 3}, {n, 4}}},
  };
  for (const auto& t : want) CHECK(std::count(p.local.begin(), p.local.end(), t) == 1);
}

// ---- make_plan ---------------------------------------------------------------------------------

// A domain description of rank `me` among `ranks` for make_plan, independent of MPI.
template <int D>
struct fake_domain {
  box<D> global{};
  halox::periodic<D> per{};
  std::vector<halox::owned_box<D>> boxes;
  int me = 0;
  std::vector<box<D>> mine;
  std::vector<int> local_id;

  fake_domain(const halox::extents<D>& n, halox::periodic<D> p, std::vector<halox::owned_box<D>> b,
              int ranks, int r)
      : per(p), boxes(std::move(b)), me(r) {
    global.hi = n;
    std::vector<int> count(ranks, 0);
    for (const auto& ob : boxes) {
      local_id.push_back(count[ob.owner]++);
      if (ob.owner == me) mine.push_back(ob.cells);
    }
  }
  int rank() const { return me; }
  const box<D>& global_box() const { return global; }
  const halox::periodic<D>& periodicity() const { return per; }
  const std::vector<box<D>>& local_boxes() const { return mine; }
  std::vector<box<D>> boxes_of(int r) const {
    std::vector<box<D>> out;
    for (const auto& ob : boxes)
      if (ob.owner == r) out.push_back(ob.cells);
    return out;
  }
  template <class F>
  void for_each_owner(const box<D>& q, F&& f) const {
    for (std::size_t k = 0; k < boxes.size(); ++k)
      if (!halox::intersect(q, boxes[k].cells).empty())
        f(boxes[k].owner, local_id[k], boxes[k].cells);
  }
};

// Random tiling of [0, n) into about `want` boxes by recursive bisection.
template <int D>
void bisect(const box<D>& b, int want, std::mt19937& rng, std::vector<box<D>>& out) {
  std::vector<int> cut_dims;
  for (int i = 0; i < D; ++i)
    if (b.hi[i] - b.lo[i] > 1) cut_dims.push_back(i);
  if (want <= 1 || cut_dims.empty()) {
    out.push_back(b);
    return;
  }
  const int i = cut_dims[rng() % cut_dims.size()];
  const idx at = b.lo[i] + 1 + idx(rng() % std::uint64_t(b.hi[i] - b.lo[i] - 1));
  box<D> l = b, r = b;
  l.hi[i] = at, r.lo[i] = at;
  const int wl = 1 + int(rng() % std::uint64_t(want - 1));
  bisect<D>(l, wl, rng, out);
  bisect<D>(r, want - wl, rng, out);
}

// Checks the plans of all ranks against each other and against the model in check.hpp:
// sends match receives pairwise, and the transfers into each block hit every halo cell the
// stencil needs exactly once, from the right (wrapped) cell of the right block.
template <int D>
void check_plans(const halox::extents<D>& n, halox::periodic<D> per,
                 const std::vector<halox::owned_box<D>>& boxes, int ranks,
                 const halox::stencil<D>& st) {
  std::vector<halox::structured_plan<D>> plans;
  std::vector<fake_domain<D>> doms;
  for (int r = 0; r < ranks; ++r) {
    doms.emplace_back(n, per, boxes, ranks, r);
    plans.push_back(halox::make_plan<D>(doms.back(), st));
  }
  // sends of a to b == receives of b from a, item for item
  std::map<std::pair<int, int>, std::vector<halox::transfer<D>>> sent, received;
  for (int r = 0; r < ranks; ++r) {
    int prev = -1;
    for (const auto& pt : plans[r].sends) {
      REQUIRE(pt.rank != r);
      REQUIRE(pt.rank > prev);  // increasing peer rank
      prev = pt.rank;
      REQUIRE(!pt.items.empty());
      sent[{r, pt.rank}] = pt.items;
    }
    prev = -1;
    for (const auto& pt : plans[r].recvs) {
      REQUIRE(pt.rank != r);
      REQUIRE(pt.rank > prev);
      prev = pt.rank;
      REQUIRE(!pt.items.empty());
      received[{pt.rank, r}] = pt.items;
    }
  }
  REQUIRE(sent == received);
  // coverage of each rank's halo
  for (int r = 0; r < ranks; ++r) {
    const auto& mine = doms[r].mine;
    std::vector<std::map<halox::extents<D>, int>> hits(mine.size());
    auto visit = [&](int src_rank, const halox::transfer<D>& t) {
      REQUIRE(t.src.size() == t.dst.size());
      REQUIRE(!t.src.empty());
      REQUIRE(t.dst_block >= 0);
      REQUIRE(t.dst_block < int(mine.size()));
      const auto src_boxes = doms[r].boxes_of(src_rank);
      REQUIRE(t.src_block >= 0);
      REQUIRE(t.src_block < int(src_boxes.size()));
      // src lies in the sender's block
      REQUIRE(halox::intersect(t.src, src_boxes[t.src_block]) == t.src);
      test_support::for_cells<D>(t.dst, [&](const auto& g) {
        halox::extents<D> from{}, want{};
        for (int i = 0; i < D; ++i) from[i] = g[i] - t.dst.lo[i] + t.src.lo[i];
        const bool needed =
            test_support::source_of<D>(g, mine[t.dst_block], st, n, per.flags, want);
        INFO("rank " << r << " block " << t.dst_block << " cell " << test_support::str<D>(g));
        REQUIRE(needed);
        REQUIRE(from == want);
        ++hits[t.dst_block][g];
      });
    };
    for (const auto& pt : plans[r].recvs)
      for (const auto& t : pt.items) visit(pt.rank, t);
    for (const auto& t : plans[r].local) visit(r, t);
    for (std::size_t b = 0; b < mine.size(); ++b) {
      std::int64_t expected = 0;
      const auto padded = halox::grow(mine[b], st.lo, st.hi);
      test_support::for_cells<D>(padded, [&](const auto& g) {
        halox::extents<D> src{};
        if (!mine[b].contains(g) && test_support::source_of<D>(g, mine[b], st, n, per.flags, src)) {
          ++expected;
          INFO("rank " << r << " block " << b << " cell " << test_support::str<D>(g));
          REQUIRE(hits[b].count(g) == 1);
        }
      });
      std::int64_t total = 0;
      for (const auto& [g, k] : hits[b]) {
        REQUIRE(k == 1);
        total += k;
      }
      REQUIRE(total == expected);
    }
  }
}

TEST_CASE("make_plan: one periodic rank copies exactly the halo shell to itself") {
  boost::mpi::communicator self(MPI_COMM_SELF, boost::mpi::comm_attach);
  constexpr auto st = halox::stencil<3>::box({1, 2, 0}, {2, 1, 3});
  const halox::cartesian<3> dom(self, {5, 4, 6}, halox::periodic<3>::all());
  const auto p = halox::make_plan<3>(dom, st);
  CHECK(p.sends.empty());
  CHECK(p.recvs.empty());
  REQUIRE(!p.local.empty());
  const auto owned = dom.local_boxes()[0];
  const auto shell = halox::grow(owned, st.lo, st.hi);
  std::map<halox::extents<3>, int> hit;
  for (const auto& t : p.local) {
    CHECK(t.src_block == 0);
    CHECK(t.dst_block == 0);
    CHECK(halox::intersect(t.src, owned) == t.src);
    CHECK(halox::intersect(t.dst, owned).empty());
    CHECK(halox::intersect(t.dst, shell) == t.dst);
    for (int i = 0; i < 3; ++i) {
      const idx shift = t.dst.lo[i] - t.src.lo[i];
      CHECK(shift % dom.global_box().hi[i] == 0);
      CHECK(t.dst.hi[i] - t.src.hi[i] == shift);
    }
    test_support::for_cells<3>(t.dst, [&](const auto& g) { ++hit[g]; });
  }
  CHECK(idx(hit.size()) == shell.volume() - owned.volume());
  for (const auto& [g, k] : hit) CHECK(k == 1);
  check_plans<3>({5, 4, 6}, halox::periodic<3>::all(), {{owned, 0}}, 1, st);
}

TEST_CASE("make_plan: one non-periodic rank has nothing to do") {
  boost::mpi::communicator self(MPI_COMM_SELF, boost::mpi::comm_attach);
  const halox::cartesian<2> dom(self, {7, 3});
  const auto p = halox::make_plan<2>(dom, halox::stencil<2>::box(2));
  CHECK(p.sends.empty());
  CHECK(p.recvs.empty());
  CHECK(p.local.empty());
  // partly periodic: only the periodic dimension's faces (a star has no corners)
  const halox::cartesian<2> dom2(self, {7, 3}, halox::periodic{false, true});
  const auto p2 = halox::make_plan<2>(dom2, halox::stencil<2>::star(1));
  REQUIRE(p2.local.size() == 2);
  idx cells = 0;
  for (const auto& t : p2.local) cells += t.dst.volume();
  CHECK(cells == 2 * 7);
}

TEST_CASE("make_plan: star on a 1-rank periodic domain skips corners") {
  boost::mpi::communicator self(MPI_COMM_SELF, boost::mpi::comm_attach);
  const halox::cartesian<2> dom(self, {4, 5}, halox::periodic<2>::all());
  const auto p = halox::make_plan<2>(dom, halox::stencil<2>::star(1));
  idx cells = 0;
  for (const auto& t : p.local) cells += t.dst.volume();
  CHECK(cells == 2 * 4 + 2 * 5);
  check_plans<2>({4, 5}, halox::periodic<2>::all(), {{dom.local_boxes()[0], 0}}, 1,
                 halox::stencil<2>::star(1));
}

TEST_CASE("make_plan: halos wider than the domain wrap several times") {
  boost::mpi::communicator self(MPI_COMM_SELF, boost::mpi::comm_attach);
  const halox::cartesian<1> dom(self, {2}, halox::periodic{true});
  const auto st = halox::stencil<1>::star({5}, {3});
  const auto p = halox::make_plan<1>(dom, st);
  idx cells = 0;
  for (const auto& t : p.local) cells += t.dst.volume();
  CHECK(cells == 8);
  check_plans<1>({2}, halox::periodic{true}, {{dom.local_boxes()[0], 0}}, 1, st);
}

TEST_CASE("make_plan: random tilings over several simulated ranks") {
  std::mt19937 rng(2024);
  for (int t = 0; t < 60; ++t) {
    const int ranks = 1 + int(rng() % 5);
    const int dim = 1 + int(rng() % 3);
    auto widths = [&](auto& w) {
      for (auto& x : w) x = int(rng() % 4);
    };
    INFO("trial " << t << " dim " << dim << " ranks " << ranks);
    auto run = [&](auto dtag) {
      constexpr int D = decltype(dtag)::value;
      halox::extents<D> n{};
      for (auto& x : n) x = 1 + idx(rng() % 9);
      halox::periodic<D> per;
      for (auto& f : per.flags) f = rng() % 2;
      halox::widths<D> lo{}, hi{};
      widths(lo);
      widths(hi);
      const auto st = rng() % 2 ? halox::stencil<D>::box(lo, hi) : halox::stencil<D>::star(lo, hi);
      std::vector<box<D>> cells;
      bisect<D>(box<D>{{}, n}, 1 + int(rng() % 9), rng, cells);
      std::vector<halox::owned_box<D>> boxes;
      for (const auto& c : cells) boxes.push_back({c, int(rng() % ranks)});
      check_plans<D>(n, per, boxes, ranks, st);
    };
    if (dim == 1) run(std::integral_constant<int, 1>{});
    if (dim == 2) run(std::integral_constant<int, 2>{});
    if (dim == 3) run(std::integral_constant<int, 3>{});
  }
}

TEST_CASE("split_interior: interior plus shell tile the box exactly, interior reads no halo") {
  const auto check = [](const halox::box<3>& b, const halox::stencil<3>& st) {
    const auto parts = halox::split_interior(b, st);
    std::vector<int> hits(std::size_t(b.volume()), 0);
    auto mark = [&](const halox::box<3>& p) {
      REQUIRE(halox::intersect(p, b) == p);  // inside b
      for (auto i = p.lo[0]; i < p.hi[0]; ++i)
        for (auto j = p.lo[1]; j < p.hi[1]; ++j)
          for (auto k = p.lo[2]; k < p.hi[2]; ++k)
            ++hits[std::size_t(((i - b.lo[0]) * (b.hi[1] - b.lo[1]) + (j - b.lo[1])) *
                                   (b.hi[2] - b.lo[2]) +
                               (k - b.lo[2]))];
    };
    if (!parts.interior.empty()) mark(parts.interior);
    for (const auto& s : parts.shell) mark(s);
    for (int h : hits) REQUIRE(h == 1);
    REQUIRE(parts.shell.size() <= 6);
    // Interior cells: every offset within the widths stays inside b.
    if (!parts.interior.empty())
      for (int d = 0; d < 3; ++d) {
        REQUIRE(parts.interior.lo[d] - st.lo[d] >= b.lo[d]);
        REQUIRE(parts.interior.hi[d] + st.hi[d] <= b.hi[d]);
      }
  };
  check({{0, 0, 0}, {6, 5, 4}}, halox::stencil<3>::box(1));
  check({{3, -2, 7}, {9, 4, 8}}, halox::stencil<3>::star({0, 2, 1}, {2, 0, 1}));
  check({{0, 0, 0}, {2, 2, 2}}, halox::stencil<3>::box(2));  // no interior at all
  check({{0, 0, 0}, {1, 9, 3}}, halox::stencil<3>::star(1));
  const auto whole = halox::split_interior<3>({{0, 0, 0}, {4, 4, 4}}, halox::stencil<3>::box(0));
  REQUIRE(whole.shell.empty());
  REQUIRE(whole.interior == halox::box<3>{{0, 0, 0}, {4, 4, 4}});
}
