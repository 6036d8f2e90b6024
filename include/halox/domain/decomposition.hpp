#pragma once
/// @file
/// Block decomposition arithmetic: how `n` cells split over `p` parts, and how a rank count
/// factors into a process grid with a small halo surface.

#include <array>
#include <limits>

#include "halox/core/box.hpp"
#include "halox/core/error.hpp"

namespace halox {

/// Cells [first, last) of part `i` when `n` cells split over `p` parts; the first `n % p`
/// parts get one cell more.
struct block_range {
  index first;
  index last;
};

constexpr block_range split(index n, int p, int i) {
  const index q = n / p, r = n % p;
  const index first = i * q + (i < r ? i : r);
  return {first, first + q + (i < r ? 1 : 0)};
}

/// The part that owns cell `x` (0 <= x < n) under `split(n, p, ·)`.
constexpr int split_owner(index n, int p, index x) {
  const index q = n / p, r = n % p;
  const index big = r * (q + 1);  // cells held by the parts with one extra cell
  return x < big ? int(x / (q + 1)) : int(r + (x - big) / q);
}

/// Number of ranks along each dimension.
template <int D>
struct process_grid {
  std::array<int, D> dims{};
  friend constexpr bool operator==(const process_grid&, const process_grid&) = default;
};

/// How ranks are numbered over a process grid (cartesian's option).
enum class rank_order {
  /// Row-major: the last dimension varies fastest, as `MPI_Cart_create` numbers ranks (the
  /// default). On a 3x2 grid rank 1 is at (0, 1).
  last_fastest,
  /// Column-major: the first dimension varies fastest ("x-fastest"), as Fortran codes and many
  /// others number their chunks. On a 3x2 grid rank 1 is at (1, 0).
  first_fastest,
};

inline const char* to_string(rank_order o) {
  switch (o) {
    case rank_order::last_fastest:
      return "last dimension fastest";
    case rank_order::first_fastest:
      return "first dimension fastest";
  }
  return "not a rank_order";
}

namespace detail {

template <int D>
void grid_search(int remaining, int dim, std::array<int, D>& cur, const extents<D>& n,
                 std::array<int, D>& best, double& best_cost, double& best_spread) {
  if (dim == D - 1) {
    cur[dim] = remaining;
    double surface = 0, lmin = std::numeric_limits<double>::max(), lmax = 0;
    std::array<double, D> local{};
    for (int i = 0; i < D; ++i) {
      if (cur[i] > n[i]) return;                                // would leave a rank without cells
      local[i] = double(n[i] / cur[i] + (n[i] % cur[i] != 0));  // ceil, no n + cur - 1 overflow
      lmin = std::min(lmin, local[i]);
      lmax = std::max(lmax, local[i]);
    }
    for (int i = 0; i < D; ++i) {
      double face = 1;
      for (int j = 0; j < D; ++j)
        if (j != i) face *= local[j];
      if (cur[i] > 1) surface += 2 * face;
    }
    const double spread = lmax / lmin;
    if (surface < best_cost || (surface == best_cost && spread < best_spread)) {
      best = cur, best_cost = surface, best_spread = spread;
    }
    return;
  }
  // Largest factor first: among equal grids the first found has the most ranks along the
  // outer dimensions (as MPI_Dims_create orders them).
  for (int f = remaining; f >= 1; --f)
    if (remaining % f == 0) {
      cur[dim] = f;
      grid_search<D>(remaining / f, dim + 1, cur, n, best, best_cost, best_spread);
    }
}

}  // namespace detail

/// The process grid for `ranks` ranks over a domain of `n` cells that minimises the halo
/// surface a rank exchanges (ties: the most cube-like blocks, then the most ranks along the
/// outer dimensions, so that with row-major fields the split dimensions' faces are made of
/// long contiguous rows: 2 ranks over a cube split dimension 0, 2x1x1).
/// Throws halox::error when no grid gives every rank at least one cell.
template <int D>
process_grid<D> balanced_grid(int ranks, const extents<D>& n) {
  detail::require(ranks > 0, "process grid: rank count must be positive, got {}", ranks);
  std::array<int, D> cur{}, best{};
  double best_cost = std::numeric_limits<double>::max(), best_spread = best_cost;
  detail::grid_search<D>(ranks, 0, cur, n, best, best_cost, best_spread);
  detail::require(best_cost < std::numeric_limits<double>::max(),
                  "process grid: {} ranks cannot each own a cell of a {} domain", ranks,
                  detail::join(n, "x"));
  return {best};
}

}  // namespace halox
