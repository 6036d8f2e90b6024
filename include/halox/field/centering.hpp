#pragma once
/// @file
/// Centerings: where a field's values live on the grid (cells, faces, edges or nodes).

#include <array>
#include <string>

#include "halox/core/box.hpp"
#include "halox/core/format.hpp"

namespace halox {

/// Where a field's values live: `halox::centering::cell()` (the default),
/// `centering::face(d)` (faces normal to dimension d), `centering::edge(d)` (edges along
/// dimension d) or `centering::node()`.
///
/// A centering is *staggered* along some dimensions: a face normal to d along d, an edge along d
/// along every dimension but d, a node along all. Along a staggered dimension a field has one
/// point per cell boundary: n + 1 points for n cells when the dimension is not periodic, n when
/// it is (point n is point 0). A block stores every point of its cells (one more than it has
/// cells along each staggered dimension); of the point it shares with the next box, the owner
/// is the box that starts there (the last box also owns the high boundary point n). See
/// docs/staggered.md.
struct centering {
  enum class kind { cell, face, edge, node };
  kind where = kind::cell;
  int dim = 0;  ///< face: the normal; edge: the direction along the edge

  static constexpr centering cell() { return {kind::cell, 0}; }
  static constexpr centering face(int d) { return {kind::face, d}; }
  static constexpr centering edge(int d) { return {kind::edge, d}; }
  static constexpr centering node() { return {kind::node, 0}; }

  /// Whether the centering is staggered along dimension `i` of a D-dimensional field.
  constexpr bool staggered(int i, int D) const {
    (void)D;
    switch (where) {
      case kind::cell:
        return false;
      case kind::face:
        return i == dim;
      case kind::edge:
        return i != dim;
      case kind::node:
        return true;
    }
    return false;
  }
  /// Whether `dim` names a dimension of a D-dimensional field (always true for cell and node).
  constexpr bool fits(int D) const {
    return where == kind::cell || where == kind::node || (dim >= 0 && dim < D);
  }
  friend constexpr bool operator==(const centering&, const centering&) = default;
};

/// Who writes the points that neighbouring blocks of a staggered field share (the point on
/// the boundary between two owned boxes, stored by both). A field option
/// (`field_options::shared`); see docs/staggered.md for when each fits.
enum class shared_points {
  /// The exchange copies the owner's value over every other copy (the default): all copies
  /// agree bitwise after each exchange.
  owner_overwrites,
  /// The exchange leaves every shared point alone and fills only the halo proper (the points
  /// outside the block's stored box): each block keeps the value it computed itself.
  keep
};

inline std::string to_string(shared_points s) {
  return s == shared_points::keep ? "keep" : "owner_overwrites";
}

inline std::string to_string(const centering& c) {
  switch (c.where) {
    case centering::kind::cell:
      return "cell";
    case centering::kind::face:
      return detail::format("face({})", c.dim);
    case centering::kind::edge:
      return detail::format("edge({})", c.dim);
    case centering::kind::node:
      return "node";
  }
  return "?";
}

namespace detail {

/// A centering resolved against a domain: which dimensions are staggered, and the global
/// extents and periodicity that decide how many points each has.
template <int D>
struct point_grid {
  std::array<bool, D> stagger{};
  std::array<bool, D> per{};
  extents<D> cells{};  ///< global cell extents

  point_grid() = default;
  point_grid(const centering& c, const extents<D>& n, const std::array<bool, D>& p)
      : per(p), cells(n) {
    for (int i = 0; i < D; ++i) stagger[std::size_t(i)] = c.staggered(i, D);
  }
  bool any() const {
    for (bool s : stagger)
      if (s) return true;
    return false;
  }
  /// Whether dimension i has an extra boundary point (staggered, not periodic).
  bool extra(int i) const { return stagger[std::size_t(i)] && !per[std::size_t(i)]; }
  /// The global box of points: n + 1 along staggered non-periodic dimensions.
  box<D> global() const {
    box<D> g;
    for (int i = 0; i < D; ++i) g.hi[i] = cells[i] + (extra(i) ? 1 : 0);
    return g;
  }
  /// The points a block of cells `c` stores: one more along every staggered dimension.
  box<D> stored(box<D> c) const {
    for (int i = 0; i < D; ++i) c.hi[i] += stagger[std::size_t(i)] ? 1 : 0;
    return c;
  }
  /// The points a block of cells `c` owns: those where a cell of it starts, plus the high
  /// boundary point where the block ends at a non-periodic high face.
  box<D> owned(box<D> c) const {
    for (int i = 0; i < D; ++i) c.hi[i] += extra(i) && c.hi[i] == cells[i] ? 1 : 0;
    return c;
  }
  /// The stored points of the block whose owned points are `o`.
  box<D> stored_of_owned(box<D> o) const {
    for (int i = 0; i < D; ++i)
      if (stagger[std::size_t(i)] && !(extra(i) && o.hi[i] == cells[i] + 1)) o.hi[i] += 1;
    return o;
  }
  /// The cells whose owners own the points `q` (inside the global box of points).
  box<D> owner_cells(box<D> q) const {
    for (int i = 0; i < D; ++i) {
      q.lo[i] = std::min(q.lo[i], cells[i] - 1);
      q.hi[i] = std::max(std::min(q.hi[i], cells[i]), q.lo[i] + 1);
    }
    return q;
  }
};

}  // namespace detail
}  // namespace halox
