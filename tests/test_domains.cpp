// Domains built the way existing codes hold their decomposition: box_list::from_local (each
// rank knows only its own boxes), cartesian's rank orders, and cartesian::from_cart_comm (an
// MPI_Cart_create communicator taken as it is). Owners are checked against an independent
// model (the order's arithmetic, MPI_Cart_coords, what each rank says it owns), exchanges
// against the global coordinates encoded in the data (check.hpp).
#include <mpi.h>

#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <array>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <boost/mpi/collectives.hpp>

#include "check.hpp"
#include "support.hpp"

namespace mpi = boost::mpi;
using halox::box;
using idx = halox::index;

namespace {

// Collective: `f()` throws on every rank of `comm`, each message containing `text` (the
// failing rank's own, or the others' quote of it). CHECKs only, so that a failure on one rank
// leaves the others' collectives matched.
template <class F>
void require_error_everywhere(const mpi::communicator& comm, F&& f, const std::string& text) {
  const std::string msg = test_support::error_of(f);
  CHECK(mpi::all_reduce(comm, int(!msg.empty()), std::plus<int>()) == comm.size());
  CHECK_THAT(msg, Catch::Contains(text));
}

// Two fields (double; int with 2 components) through two exchanges, checked against the model
// on this rank only (no collective: for domains over some of the world's ranks).
template <class Dom, int D>
test_support::result exchange_here(const Dom& dom, const halox::stencil<D>& st) {
  auto a = dom.template make_field<double>(st);
  auto b = dom.template make_field<int>(st, halox::host, 2);
  auto ex = halox::make_exchange(dom, st, a, b);
  test_support::result all;
  for (int it = 0; it < 2; ++it) {
    test_support::fill(dom, a, {0, it});
    test_support::fill(dom, b, {1, it});
    ex.exchange();
    for (const auto& r :
         {test_support::check(dom, a, st, {0, it}), test_support::check(dom, b, st, {1, it})}) {
      all.bad += r.bad;
      all.report += r.report;
    }
  }
  return all;
}

// exchange_here on every rank of the world, failing on every rank together.
template <class Dom, int D>
void require_exchange_right(const Dom& dom, const halox::stencil<D>& st) {
  HXT_REQUIRE_OK(exchange_here(dom, st));
}

// Each rank's own box, as every rank sees it (what the ranks say they own).
template <int D>
std::vector<box<D>> owned_by_each(const mpi::communicator& comm, const box<D>& mine) {
  std::vector<idx> all;
  std::vector<idx> flat(mine.lo.begin(), mine.lo.end());
  flat.insert(flat.end(), mine.hi.begin(), mine.hi.end());
  mpi::all_gather(comm, flat.data(), 2 * D, all);
  std::vector<box<D>> out(std::size_t(comm.size()));
  for (std::size_t r = 0; r < out.size(); ++r)
    for (int i = 0; i < D; ++i)
      out[r].lo[i] = all[r * 2 * D + std::size_t(i)], out[r].hi[i] = all[r * 2 * D + D + i];
  return out;
}

// The reference: the block at grid coordinates `c`, from split().
template <int D>
box<D> block_at(const halox::extents<D>& n, const std::array<int, D>& dims,
                const std::array<int, D>& c) {
  box<D> b;
  for (int i = 0; i < D; ++i) {
    const auto s = halox::split(n[i], dims[i], c[i]);
    b.lo[i] = s.first, b.hi[i] = s.last;
  }
  return b;
}

// The reference: the coordinates of rank r numbered x-fastest (first dimension fastest) or
// row-major.
template <int D>
std::array<int, D> coords_in(int r, const std::array<int, D>& dims, bool x_fastest) {
  std::array<int, D> c{};
  int stride = 1;
  for (int k = 0; k < D; ++k) {
    const int i = x_fastest ? k : D - 1 - k;
    c[i] = r / stride % dims[i];
    stride *= dims[i];
  }
  return c;
}

// The owner of every block is what the numbering says: by the domain's queries, by what
// each rank holds, and `coords_of(r)` for the reference.
template <int D, class Coords>
void require_owners(const halox::cartesian<D>& dom, const halox::extents<D>& n,
                    Coords&& coords_of) {
  const auto said = owned_by_each<D>(dom.comm(), dom.local_boxes().at(0));
  for (int r = 0; r < dom.size(); ++r) {
    const std::array<int, D> c = coords_of(r);
    INFO("rank " << r);
    REQUIRE(dom.coords(r) == c);
    REQUIRE(dom.rank_of(c) == r);
    REQUIRE(dom.box_of(r) == block_at<D>(n, dom.grid().dims, c));
    REQUIRE(said[std::size_t(r)] == dom.box_of(r));
  }
  // for_each_owner names the owner of each cell's block.
  test_support::for_cells<D>(dom.global_box(), [&](const auto& g) {
    box<D> cell;
    for (int i = 0; i < D; ++i) cell.lo[i] = g[i], cell.hi[i] = g[i] + 1;
    int seen = 0;
    dom.for_each_owner(cell, [&](int r, int, const box<D>& b) {
      ++seen;
      REQUIRE(b.contains(g));
      REQUIRE(said[std::size_t(r)] == b);
    });
    REQUIRE(seen == 1);
  });
}

}  // namespace

// ---- box_list::from_local ---------------------------------------------------------------------

namespace {
// 12 unequal boxes tiling 12x10, owner k % ranks, and the world's reference list.
std::vector<halox::owned_box<2>> twelve(int ranks) {
  std::vector<halox::owned_box<2>> out;
  const idx xs[] = {0, 3, 8, 12};
  const idx ys[] = {0, 2, 5, 9, 10};
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 4; ++b)
      out.push_back({box<2>{{xs[a], ys[b]}, {xs[a + 1], ys[b + 1]}}, int(out.size()) % ranks});
  return out;
}
}  // namespace

TEST_CASE("box_list::from_local: the gathered list, each rank's blocks in its order, exchanges") {
  mpi::communicator world;
  const auto all = twelve(world.size());
  // Each rank gives its own boxes, last first (its blocks keep that order).
  std::vector<box<2>> mine;
  for (auto it = all.rbegin(); it != all.rend(); ++it)
    if (it->owner == world.rank()) mine.push_back(it->cells);
  for (int m = 0; m < 4; ++m) {
    const auto per = test_support::periodic_mask<2>(m);
    const auto dom = halox::box_list<2>::from_local(world, {12, 10}, per, mine);
    REQUIRE(dom.local_boxes() == mine);
    for (int r = 0; r < world.size(); ++r) {
      std::vector<box<2>> want;
      for (auto it = all.rbegin(); it != all.rend(); ++it)
        if (it->owner == r) want.push_back(it->cells);
      REQUIRE(dom.boxes_of(r) == want);
    }
    require_exchange_right(dom, halox::stencil<2>::box(1));
    require_exchange_right(dom, halox::stencil<2>::star({2, 1}, {1, 3}));
  }
}

TEST_CASE("box_list::from_local over MPI_Comm, 3-D, ranks without boxes") {
  mpi::communicator world;
  // Rank 0 holds the whole domain in two slabs; the other ranks hold nothing.
  std::vector<box<3>> mine;
  if (world.rank() == 0) mine = {box<3>{{0, 0, 0}, {5, 4, 3}}, box<3>{{0, 4, 0}, {5, 6, 3}}};
  const auto dom = halox::box_list<3>::from_local(MPI_COMM_WORLD, {5, 6, 3},
                                                  halox::periodic{true, false, true}, mine);
  REQUIRE(dom.local_boxes() == mine);
  for (int r = 1; r < world.size(); ++r) REQUIRE(dom.boxes_of(r).empty());
  require_exchange_right(dom, halox::stencil<3>::box(1));
}

TEST_CASE("box_list::from_local: overlaps, gaps and boxes outside, on every rank") {
  mpi::communicator world;
  const int p = world.size(), me = world.rank();
  const halox::extents<2> n{4, 2 * p};
  const halox::periodic<2> per{false, true};
  // Rank r holds rows [2r, 2r+2): right. The last rank reaching one row into rank 0's, wrong.
  box<2> row{{0, 2 * me}, {4, 2 * me + 2}};
  REQUIRE(halox::box_list<2>::from_local(world, n, per, {row}).local_boxes().size() == 1);
  auto over = row;
  if (me == p - 1) over.lo[1] -= 1;
  require_error_everywhere(
      world, [&] { (void)halox::box_list<2>::from_local(world, n, per, {over}); },
      p > 1 ? fmt::format("(owner {}) and #{} [0,4)x[{},{}) (owner {}) overlap", p - 2, p - 1,
                          2 * p - 3, 2 * p, p - 1)
            : "reaches outside the global box");
  require_error_everywhere(
      world,
      [&] {
        (void)halox::box_list<2>::from_local(world, n, per,
                                             me == 0 ? std::vector<box<2>>{} : std::vector{row});
      },
      fmt::format("the boxes cover {} of the {} cells", 8 * p - 8, 8 * p));
  auto empty = row;
  if (me == p - 1) empty.hi[0] = 0;
  require_error_everywhere(
      world, [&] { (void)halox::box_list<2>::from_local(world, n, per, {empty}); },
      fmt::format("box #{} [0,0)x[{},{}) (owner {}) is empty", p - 1, 2 * p - 2, 2 * p, p - 1));
  // Different global extents on one rank: the settings check names them.
  if (p > 1)
    require_error_everywhere(
        world,
        [&] {
          (void)halox::box_list<2>::from_local(world, {me == 1 ? 5 : 4, 2 * p}, per, {row});
        },
        "global extents");
}

// ---- cartesian: rank order ------------------------------------------------------------------

TEST_CASE("cartesian rank order: x-fastest and row-major owners over every grid, exchanges") {
  mpi::communicator world;
  const halox::extents<2> n{7, 9};
  for (const auto& g : test_support::all_grids<2>(world.size(), n))
    for (bool x_fastest : {true, false}) {
      INFO("grid " << g.dims[0] << "x" << g.dims[1] << (x_fastest ? " x-fastest" : " row-major"));
      const auto order =
          x_fastest ? halox::rank_order::first_fastest : halox::rank_order::last_fastest;
      for (int m : {0, 3}) {
        const halox::cartesian<2> dom(world, n, test_support::periodic_mask<2>(m), g, order);
        require_owners<2>(dom, n, [&](int r) { return coords_in<2>(r, g.dims, x_fastest); });
        require_exchange_right(dom, halox::stencil<2>::box({1, 2}, {2, 1}));
      }
    }
}

TEST_CASE("cartesian rank order: 3-D x-fastest, automatic grid, raw MPI_Comm") {
  mpi::communicator world;
  const halox::extents<3> n{6, 5, 4};
  const halox::cartesian<3> dom(MPI_COMM_WORLD, n, halox::periodic{true, false, true}, std::nullopt,
                                halox::rank_order::first_fastest);
  REQUIRE(dom.grid() == halox::balanced_grid<3>(world.size(), n));
  require_owners<3>(dom, n, [&](int r) { return coords_in<3>(r, dom.grid().dims, true); });
  // x-fastest: rank 1 is the next block along dimension 0 where it is split.
  if (world.size() > 1 && dom.grid().dims[0] > 1) REQUIRE(dom.coords(1)[0] == 1);
  require_exchange_right(dom, halox::stencil<3>::box(1));
}

TEST_CASE("cartesian rank order: ranks that differ, and a value that is no order") {
  mpi::communicator world;
  const int p = world.size();
  if (p > 1)
    require_error_everywhere(
        world,
        [&] {
          (void)halox::cartesian<2>(world, {8, 8}, {}, std::nullopt,
                                    world.rank() == p - 1 ? halox::rank_order::first_fastest
                                                          : halox::rank_order::last_fastest);
        },
        fmt::format("rank {}: domain built with rank order first dimension fastest, but rank 0 "
                    "built it with rank order last dimension fastest",
                    p - 1));
  require_error_everywhere(
      world,
      [&] {
        (void)halox::cartesian<2>(world, {8, 8}, {}, std::nullopt, halox::rank_order(7));
      },
      "rank order 7 is not a halox::rank_order");
}

// ---- cartesian::from_cart_comm ----------------------------------------------------------------

namespace {
// A Cartesian communicator over the first `prod(dims)` ranks of the world (MPI_COMM_NULL on
// the others), freed at the end of the scope.
template <int D>
struct cart_comm {
  MPI_Comm comm = MPI_COMM_NULL;
  cart_comm(const std::array<int, D>& dims, const std::array<int, D>& periods, bool reorder) {
    REQUIRE(MPI_Cart_create(MPI_COMM_WORLD, D, dims.data(), periods.data(), int(reorder), &comm) ==
            MPI_SUCCESS);
  }
  ~cart_comm() {
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }
  cart_comm(const cart_comm&) = delete;
  cart_comm& operator=(const cart_comm&) = delete;
};

template <int D>
std::array<int, D> mpi_coords(MPI_Comm comm, int r) {
  std::array<int, D> c{};
  REQUIRE(MPI_Cart_coords(comm, r, D, c.data()) == MPI_SUCCESS);
  return c;
}
}  // namespace

TEST_CASE("cartesian::from_cart_comm: the communicator's grid, periods and rank places") {
  mpi::communicator world;
  const halox::extents<2> n{6, 7};
  for (const auto& g : test_support::all_grids<2>(world.size(), n))
    for (int m = 0; m < 4; ++m)
      for (bool reorder : {false, true}) {
        INFO("grid " << g.dims[0] << "x" << g.dims[1] << " periods " << m << " reorder "
                     << reorder);
        const cart_comm<2> cart(g.dims, {m & 1, (m >> 1) & 1}, reorder);
        const auto dom = halox::cartesian<2>::from_cart_comm(cart.comm, n);
        REQUIRE(dom.grid() == g);
        REQUIRE(dom.periodicity() == test_support::periodic_mask<2>(m));
        REQUIRE(dom.rank() == mpi::communicator(cart.comm, mpi::comm_attach).rank());
        require_owners<2>(dom, n, [&](int r) { return mpi_coords<2>(cart.comm, r); });
        require_exchange_right(dom, halox::stencil<2>::box(2));
      }
}

TEST_CASE("cartesian::from_cart_comm: 3-D, and a grid over some of the ranks") {
  mpi::communicator world;
  const int p = world.size();
  {
    const cart_comm<3> cart({1, p, 1}, {1, 0, 1}, true);
    const halox::extents<3> n{3, 2 * p, 4};
    const auto dom = halox::cartesian<3>::from_cart_comm(cart.comm, n);
    require_owners<3>(dom, n, [&](int r) { return mpi_coords<3>(cart.comm, r); });
    require_exchange_right(dom, halox::stencil<3>::star(1));
  }
  if (p > 1) {
    // The last rank is outside a grid of p - 1: its communicator is MPI_COMM_NULL.
    const cart_comm<1> cart({p - 1}, {1}, false);
    test_support::result r;
    if (world.rank() == p - 1) {
      REQUIRE(cart.comm == MPI_COMM_NULL);
      REQUIRE_THROWS_WITH(halox::cartesian<1>::from_cart_comm(cart.comm, {8}),
                          Catch::Contains("the communicator is MPI_COMM_NULL"));
    } else {
      const auto dom = halox::cartesian<1>::from_cart_comm(cart.comm, {8});
      require_owners<1>(dom, {8}, [&](int q) { return mpi_coords<1>(cart.comm, q); });
      r = exchange_here(dom, halox::stencil<1>::box(1));
    }
    HXT_REQUIRE_OK(r);
  }
}

TEST_CASE("cartesian::from_cart_comm: no topology, another dimension count, too small a domain") {
  mpi::communicator world;
  const int p = world.size();
  require_error_everywhere(
      world,
      [&] {
        (void)halox::cartesian<2>::from_cart_comm(MPI_COMM_WORLD, {4, 4});
      },
      "the communicator has no Cartesian topology (MPI_Topo_test gives MPI_UNDEFINED)");
  const cart_comm<2> cart({p, 1}, {0, 0}, false);
  const mpi::communicator on(cart.comm, mpi::comm_attach);
  require_error_everywhere(
      on,
      [&] {
        (void)halox::cartesian<3>::from_cart_comm(cart.comm, {4, 4, 4});
      },
      "the communicator's Cartesian topology has 2 dimension(s) but the domain has 3");
  if (p > 1)
    require_error_everywhere(
        on,
        [&] {
          (void)halox::cartesian<2>::from_cart_comm(cart.comm, {p - 1, 4});
        },
        fmt::format("process grid {}x1 has {} ranks in dimension 0 of extent {}", p, p, p - 1));
  if (p > 1)
    require_error_everywhere(
        on,
        [&] {
          (void)halox::cartesian<2>::from_cart_comm(cart.comm, {p, on.rank() == 0 ? 4 : 5});
        },
        "global extents");
}
