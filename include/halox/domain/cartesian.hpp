#pragma once
/// @file
/// A global box split into one block per rank over a Cartesian process grid.

#include <optional>
#include <vector>

#include <boost/mpi/communicator.hpp>

#include "halox/core/format.hpp"
#include "halox/domain/decomposition.hpp"
#include "halox/domain/domain_base.hpp"

namespace halox {

/// The global domain `[0, n_0) x ... x [0, n_{D-1})` split into one block per rank.
///
/// ```
/// auto dom = halox::cartesian<3>(world, {512, 512, 512}, halox::periodic{true, true, true});
/// ```
/// Every rank computes every other rank's block from the grid arithmetic: nothing is gathered.
/// Ranks are numbered row-major over the grid (the last dimension varies fastest), like
/// `MPI_Cart_create`. Collective over `comm`: every rank must construct it, with the same
/// arguments (checked with one all-reduce of their hash, one more to agree on errors).
template <int D>
class cartesian : public domain_base<cartesian<D>, D> {
 public:
  /// Splits `global` cells over `comm`'s ranks with an automatic process grid (smallest halo
  /// surface) or the one given. Throws halox::error, on every rank, when the ranks' arguments
  /// differ, on extents that are not positive or exceed max_extent, on more cells than an index
  /// counts, or on a grid that does not match the rank count or would leave a rank without cells.
  /// The same over a raw MPI communicator (codes on plain MPI: PETSc, Fortran drivers). halox
  /// does not take ownership: `comm` must stay valid while the domain and its exchange objects
  /// are built (each exchange object keeps a duplicate of it).
  cartesian(MPI_Comm comm, const extents<D>& global, periodic<D> per = {},
            std::optional<process_grid<D>> grid = std::nullopt)
      : cartesian(boost::mpi::communicator(comm, boost::mpi::comm_attach), global, per, grid) {}

  cartesian(const boost::mpi::communicator& comm, const extents<D>& global, periodic<D> per = {},
            std::optional<process_grid<D>> grid = std::nullopt)
      : domain_base<cartesian<D>, D>(comm, global, per) {
    this->agree_and_check(
        "cartesian",
        [&](detail::settings_hash& h) {
          h.add(grid.has_value());
          if (grid)
            for (int d : grid->dims) h.add(std::uint64_t(std::int64_t(d)));
        },
        [&](detail::settings_list& l) {
          l.push_back("process grid");
          l.push_back(grid ? detail::format("{}", detail::join(grid->dims, "x")) : "automatic");
        },
        [&] { grid_ = grid ? checked_grid(*grid) : balanced_grid<D>(comm.size(), global); });
    local_.push_back(box_of(rank_));
  }

  const process_grid<D>& grid() const { return grid_; }

  /// Grid coordinates of rank `r`.
  std::array<int, D> coords(int r) const {
    std::array<int, D> c{};
    for (int i = D - 1; i >= 0; --i) c[i] = r % grid_.dims[i], r /= grid_.dims[i];
    return c;
  }
  /// Rank at grid coordinates `c`.
  int rank_of(const std::array<int, D>& c) const {
    int r = 0;
    for (int i = 0; i < D; ++i) r = r * grid_.dims[i] + c[i];
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
  std::vector<box<D>> local_;
};

}  // namespace halox
