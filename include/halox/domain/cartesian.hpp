#pragma once
/// @file
/// A global box split into one block per rank over a Cartesian process grid.

#include <optional>
#include <vector>

#include <boost/mpi/communicator.hpp>

#include "halox/comm/agree.hpp"
#include "halox/core/format.hpp"
#include "halox/domain/decomposition.hpp"
#include "halox/domain/domain_base.hpp"

namespace halox {

namespace detail {
/// A Cartesian communicator's topology (cartesian::from_cart_comm): its grid and periods per
/// dimension, and the coordinates of every rank (`ndims` per rank, rank 0 first).
struct cart_topology {
  std::vector<int> dims, periods, coords;
};
/// Reads `comm`'s topology (MPI_Topo_test, MPI_Cartdim_get, MPI_Cart_get, MPI_Cart_coords for
/// every rank: local calls, no communication). Throws halox::error when `comm` has no Cartesian
/// topology or one of another dimension count than `ndims`, or when an MPI call fails.
cart_topology read_cart_topology(MPI_Comm comm, int ndims);
}  // namespace detail

/// The global domain `[0, n_0) x ... x [0, n_{D-1})` split into one block per rank.
///
/// ```
/// auto dom = halox::cartesian<3>(world, {512, 512, 512}, halox::periodic{true, true, true});
/// ```
/// Every rank computes every other rank's block from the grid arithmetic: nothing is gathered.
/// Ranks are numbered over the grid in the `rank_order` given: by default row-major (the last
/// dimension varies fastest), like `MPI_Cart_create`; `rank_order::first_fastest` numbers them
/// x-fastest. `from_cart_comm` takes an existing Cartesian communicator's grid, periods and
/// rank placement as they are. Along dimension i, grid coordinate c owns the cells
/// `split(n_i, dims_i, c)`. Collective over `comm`: every rank must construct it, with the same
/// arguments (checked with one all-reduce of their hash, one more to agree on errors).
template <int D>
class cartesian : public domain_base<cartesian<D>, D> {
 public:
  /// Splits `global` cells over `comm`'s ranks with an automatic process grid (smallest halo
  /// surface) or the one given, numbering ranks over it in `order`. Throws halox::error, on
  /// every rank, when the ranks' arguments differ, on extents that are not positive or exceed
  /// max_extent, on more cells than an index counts, or on a grid that does not match the rank
  /// count or would leave a rank without cells.
  /// The same over a raw MPI communicator (codes on plain MPI: PETSc, Fortran drivers). halox
  /// does not take ownership: `comm` must stay valid while the domain and its exchange objects
  /// are built (each exchange object keeps a duplicate of it).
  cartesian(MPI_Comm comm, const extents<D>& global, periodic<D> per = {},
            std::optional<process_grid<D>> grid = std::nullopt,
            rank_order order = rank_order::last_fastest)
      : cartesian(boost::mpi::communicator(comm, boost::mpi::comm_attach), global, per, grid,
                  order) {}

  cartesian(const boost::mpi::communicator& comm, const extents<D>& global, periodic<D> per = {},
            std::optional<process_grid<D>> grid = std::nullopt,
            rank_order order = rank_order::last_fastest)
      : domain_base<cartesian<D>, D>(comm, global, per), order_(order) {
    this->agree_and_check(
        "cartesian",
        [&](detail::settings_hash& h) {
          h.add(grid.has_value());
          if (grid)
            for (int d : grid->dims) h.add(std::uint64_t(std::int64_t(d)));
          h.add(std::uint64_t(order));
        },
        [&](detail::settings_list& l) {
          l.push_back("process grid");
          l.push_back(grid ? detail::format("{}", detail::join(grid->dims, "x")) : "automatic");
          l.push_back("rank order");
          l.push_back(to_string(order));
        },
        [&] {
          detail::require(order == rank_order::last_fastest || order == rank_order::first_fastest,
                          "rank {}: cartesian: rank order {} is not a halox::rank_order", rank_,
                          int(order));
          grid_ = grid ? checked_grid(*grid) : balanced_grid<D>(comm.size(), global);
        });
    local_.push_back(box_of(rank_));
  }

  /// The domain of an existing Cartesian communicator (made by `MPI_Cart_create`), taken as it
  /// is: its process grid (`MPI_Cart_get`), its periods as the domain's periodicity, and its
  /// ranks' places (`MPI_Cart_coords`), whatever order MPI gave them (`reorder`). Collective
  /// over `cart`, which must stay valid while the domain and its exchange objects are built.
  /// Throws halox::error, on every rank, when `cart` has no Cartesian topology, one of another
  /// dimension count, a grid that would leave a rank without cells, or when the ranks' `global`
  /// differ; on a rank whose `cart` is MPI_COMM_NULL (outside the grid), on that rank.
  /// ```
  /// MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 1, &cart);
  /// auto dom = halox::cartesian<2>::from_cart_comm(cart, {nx, ny});
  /// ```
  static cartesian from_cart_comm(MPI_Comm cart, const extents<D>& global) {
    detail::require(cart != MPI_COMM_NULL,
                    "cartesian::from_cart_comm: the communicator is MPI_COMM_NULL (MPI_Cart_create "
                    "gives it to the ranks beyond the grid); build the domain on the grid's ranks "
                    "only");
    const boost::mpi::communicator comm(cart, boost::mpi::comm_attach);
    detail::cart_topology t;
    detail::agree(comm, [&] { t = detail::read_cart_topology(cart, D); });
    return cartesian(comm, global, t);
  }

  const process_grid<D>& grid() const { return grid_; }

  /// Grid coordinates of rank `r`.
  std::array<int, D> coords(int r) const {
    if (!cart_coords_.empty()) return cart_coords_[std::size_t(r)];
    std::array<int, D> c{};
    if (order_ == rank_order::first_fastest)
      for (int i = 0; i < D; ++i) c[i] = r % grid_.dims[i], r /= grid_.dims[i];
    else
      for (int i = D - 1; i >= 0; --i) c[i] = r % grid_.dims[i], r /= grid_.dims[i];
    return c;
  }
  /// Rank at grid coordinates `c`.
  int rank_of(const std::array<int, D>& c) const {
    int r = 0;
    if (!cart_ranks_.empty() || order_ == rank_order::last_fastest) {
      for (int i = 0; i < D; ++i) r = r * grid_.dims[i] + c[i];
      return cart_ranks_.empty() ? r : cart_ranks_[std::size_t(r)];
    }
    for (int i = D - 1; i >= 0; --i) r = r * grid_.dims[i] + c[i];
    return r;
  }
  /// The block of rank `r`.
  box<D> box_of(int r) const {
    const auto c = coords(r);
    box<D> b;
    for (int i = 0; i < D; ++i) {
      const auto s = split(global_.hi[i], grid_.dims[i], c[i]);
      b.lo[i] = s.first, b.hi[i] = s.last;
    }
    return b;
  }
  /// This rank's owned boxes (exactly one).
  const std::vector<box<D>>& local_boxes() const { return local_; }
  /// The owned boxes of rank `r`.
  std::vector<box<D>> boxes_of(int r) const { return {box_of(r)}; }

  /// Calls `f(rank, block, owned_box)` for every block meeting `q` (`q` inside the global box).
  template <class F>
  void for_each_owner(const box<D>& q, F&& f) const {
    if (q.empty()) return;
    std::array<int, D> first{}, last{}, c{};
    for (int i = 0; i < D; ++i) {
      first[i] = split_owner(global_.hi[i], grid_.dims[i], q.lo[i]);
      last[i] = split_owner(global_.hi[i], grid_.dims[i], q.hi[i] - 1);
    }
    c = first;
    for (;;) {
      const int r = rank_of(c);
      f(r, 0, box_of(r));
      int i = D - 1;
      while (i >= 0 && c[i] == last[i]) c[i] = first[i], --i;
      if (i < 0) break;
      ++c[i];
    }
  }

 private:
  /// from_cart_comm's: the grid, periods and rank places of `t`.
  cartesian(const boost::mpi::communicator& comm, const extents<D>& global,
            const detail::cart_topology& t)
      : domain_base<cartesian<D>, D>(comm, global, periods_of(t)) {
    process_grid<D> grid;
    for (int i = 0; i < D; ++i) grid.dims[i] = t.dims[std::size_t(i)];
    this->agree_and_check(
        "cartesian",
        [&](detail::settings_hash& h) {
          h.add("from_cart_comm");
          for (int d : grid.dims) h.add(std::uint64_t(std::int64_t(d)));
        },
        [&](detail::settings_list& l) {
          l.push_back("process grid");
          l.push_back(detail::format("{} (from the communicator)", detail::join(grid.dims, "x")));
        },
        [&] { grid_ = checked_grid(grid); });
    cart_coords_.resize(std::size_t(this->size()));
    cart_ranks_.resize(std::size_t(this->size()));
    for (int r = 0; r < this->size(); ++r) {
      int at = 0;
      for (int i = 0; i < D; ++i) {
        cart_coords_[std::size_t(r)][i] = t.coords[std::size_t(r) * D + std::size_t(i)];
        at = at * grid_.dims[i] + cart_coords_[std::size_t(r)][i];
      }
      cart_ranks_[std::size_t(at)] = r;
    }
    local_.push_back(box_of(rank_));
  }
  static periodic<D> periods_of(const detail::cart_topology& t) {
    periodic<D> p;
    for (int i = 0; i < D; ++i) p.flags[i] = t.periods[std::size_t(i)] != 0;
    return p;
  }

  process_grid<D> checked_grid(const process_grid<D>& grid) const {
    index product = 1;  // at most the global cell count, which fits in an index
    for (int i = 0; i < D; ++i) {
      detail::require(grid.dims[i] > 0 && grid.dims[i] <= global_.hi[i],
                      "rank {}: process grid {} has {} ranks in dimension {} of extent {}", rank_,
                      detail::join(grid.dims, "x"), grid.dims[i], i, global_.hi[i]);
      product *= grid.dims[i];
    }
    detail::require(product == this->size(),
                    "rank {}: process grid {} holds {} ranks but the communicator has {}", rank_,
                    detail::join(grid.dims, "x"), product, this->size());
    return grid;
  }

  using base = domain_base<cartesian<D>, D>;
  using base::global_;
  using base::rank_;
  process_grid<D> grid_{};
  rank_order order_ = rank_order::last_fastest;
  std::vector<std::array<int, D>> cart_coords_;  ///< from_cart_comm: each rank's coordinates
  std::vector<int> cart_ranks_;                  ///< from_cart_comm: the rank at each (row-major)
  std::vector<box<D>> local_;
};

}  // namespace halox
