#pragma once
/// @file
/// Compile-time description of the halo a stencil needs: halo widths per side and the
/// neighbour directions (faces, edges, corners) whose halo regions must be filled.

#include <array>
#include <cstddef>
#include <initializer_list>

namespace halox {

/// A neighbour direction: one entry per dimension, each -1, 0 or +1; never all zero.
template <int D>
using direction = std::array<int, D>;

/// Per-dimension halo widths (cells).
template <int D>
using widths = std::array<int, D>;

namespace detail {
constexpr int ipow3(int d) {
  return d == 0 ? 1 : 3 * ipow3(d - 1);
}
}  // namespace detail

/// A stencil's halo: widths below (`lo`) and above (`hi`) the owned box in every dimension,
/// and the set of neighbour directions it reads from.
///
/// `stencil<D>` is a literal, structural type: build it in a `constexpr` context and pass it
/// as a template argument if you like.
/// ```
/// constexpr auto st = halox::stencil<3>::box(1);      // 27-point: faces, edges, corners
/// static_assert(st.neighbor_count() == 26);
/// constexpr auto up = halox::stencil<2>::star({0, 0}, {2, 2});  // upwind: high side only
/// ```
/// A direction is only a neighbour when its halo region is non-empty: every non-zero
/// component must point at a side whose width is positive.
template <int D>
struct stencil {
  static_assert(D >= 1 && D <= 4, "halox supports 1 to 4 dimensions");
  static constexpr int dimension = D;
  /// Number of direction slots, the centre included (3^D).
  static constexpr int slots = detail::ipow3(D);

  widths<D> lo{};                  ///< halo width below the owned box, per dimension
  widths<D> hi{};                  ///< halo width above the owned box, per dimension
  std::array<bool, slots> used{};  ///< used[encode(d)]: direction d is a neighbour

  // ---- construction --------------------------------------------------------------------

  /// Faces only (2·D neighbours), width `w` on every side.
  static constexpr stencil star(int w) { return star(uniform(w), uniform(w)); }
  /// Faces only, with its own width on each side (a width may be 0).
  static constexpr stencil star(widths<D> lo, widths<D> hi) {
    return make(lo, hi, [](const direction<D>& d) { return nonzero_count(d) == 1; });
  }
  /// Faces, edges and corners (3^D − 1 neighbours), width `w` on every side.
  static constexpr stencil box(int w) { return box(uniform(w), uniform(w)); }
  /// Faces, edges and corners, with its own width on each side.
  static constexpr stencil box(widths<D> lo, widths<D> hi) {
    return make(lo, hi, [](const direction<D>&) { return true; });
  }
  /// Derives widths and directions from the stencil's offsets: widths are the largest reach
  /// per side; an offset o needs every direction d with d_i ∈ {0, sign(o_i)} (a diagonal
  /// offset needs its corner and the faces beside it).
  static constexpr stencil from_offsets(std::initializer_list<std::array<int, D>> offsets) {
    stencil s{};
    for (const auto& o : offsets)
      for (int i = 0; i < D; ++i) {
        if (-o[i] > s.lo[i]) s.lo[i] = -o[i];
        if (o[i] > s.hi[i]) s.hi[i] = o[i];
      }
    for (int k = 0; k < slots; ++k) {
      const direction<D> d = decode(k);
      if (nonzero_count(d) == 0) continue;
      for (const auto& o : offsets) {
        bool covered = true;
        for (int i = 0; i < D; ++i)
          if (d[i] != 0 && d[i] != sign(o[i])) covered = false;
        if (covered) s.used[k] = true;
      }
    }
    s.prune();
    return s;
  }

  // ---- queries -------------------------------------------------------------------------

  /// Number of neighbour directions (halo regions) this stencil fills.
  constexpr int neighbor_count() const {
    int n = 0;
    for (bool u : used) n += u ? 1 : 0;
    return n;
  }
  /// Whether direction `d` is one of this stencil's neighbours.
  constexpr bool has(const direction<D>& d) const { return used[encode(d)]; }
  /// The neighbour directions in slot order (dimension 0 varies fastest).
  template <std::size_t N = slots>
  constexpr std::array<direction<D>, N> directions() const {
    std::array<direction<D>, N> out{};
    std::size_t n = 0;
    for (int k = 0; k < slots; ++k)
      if (used[k] && n < N) out[n++] = decode(k);
    return out;
  }
  /// Width of the halo region of direction `d` along dimension `i` (0 where d_i == 0,
  /// meaning the region spans the owned box along i).
  constexpr int region_width(const direction<D>& d, int i) const {
    return d[i] < 0 ? lo[i] : d[i] > 0 ? hi[i] : 0;
  }
  /// Extents of direction `d`'s halo region next to an owned box of extents `n`.
  template <class Index>
  constexpr std::array<Index, D> region_extents(const direction<D>& d,
                                                const std::array<Index, D>& n) const {
    std::array<Index, D> e{};
    for (int i = 0; i < D; ++i) e[i] = d[i] == 0 ? n[i] : Index(region_width(d, i));
    return e;
  }
  /// Largest halo width over all sides.
  constexpr int max_width() const {
    int w = 0;
    for (int i = 0; i < D; ++i) w = (lo[i] > w ? lo[i] : w), w = (hi[i] > w ? hi[i] : w);
    return w;
  }

  /// Slot index of a direction (components −1/0/+1, dimension 0 fastest).
  static constexpr int encode(const direction<D>& d) {
    int k = 0;
    for (int i = D - 1; i >= 0; --i) k = 3 * k + (d[i] + 1);
    return k;
  }
  /// Direction of a slot index.
  static constexpr direction<D> decode(int k) {
    direction<D> d{};
    for (int i = 0; i < D; ++i, k /= 3) d[i] = k % 3 - 1;
    return d;
  }

  friend constexpr bool operator==(const stencil&, const stencil&) = default;

 private:
  static constexpr widths<D> uniform(int w) {
    widths<D> a{};
    for (auto& x : a) x = w;
    return a;
  }
  static constexpr int sign(int v) { return (v > 0) - (v < 0); }
  static constexpr int nonzero_count(const direction<D>& d) {
    int n = 0;
    for (int v : d) n += v != 0;
    return n;
  }
  template <class Pred>
  static constexpr stencil make(widths<D> lo, widths<D> hi, Pred want) {
    stencil s{};
    s.lo = lo;
    s.hi = hi;
    for (int k = 0; k < slots; ++k) {
      const direction<D> d = decode(k);
      s.used[k] = nonzero_count(d) > 0 && want(d);
    }
    s.prune();
    return s;
  }
  // A direction whose region has zero width along one of its non-zero components is empty.
  constexpr void prune() {
    for (int k = 0; k < slots; ++k) {
      const direction<D> d = decode(k);
      for (int i = 0; i < D; ++i)
        if (d[i] != 0 && region_width(d, i) == 0) used[k] = false;
    }
  }
};

}  // namespace halox
