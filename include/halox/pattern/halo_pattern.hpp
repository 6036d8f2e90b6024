#pragma once
/// @file
/// The compile-time half of a stencil's halo: its neighbour directions and, for each, the rule
/// that turns an owned box into that direction's halo region; and the rule that turns it into
/// the interior a stencil can update without its halo. The plan (make_plan) and split_interior
/// both use these rules; with the stencil as a template argument (`halo_pattern<st>`,
/// `make_exchange<st>(dom, fields...)`) the directions and rules are `constexpr` values and
/// only the extents are run-time.

#include <algorithm>
#include <array>
#include <type_traits>

#include "halox/core/box.hpp"
#include "halox/pattern/stencil.hpp"

namespace halox {

/// The halo region of one neighbour direction as a function of the owned box: below the box
/// (width `lo`) where the direction points down, above it (width `hi`) where it points up, the
/// box's own extent where it is 0.
template <int D>
struct region_rule {
  direction<D> dir{};
  widths<D> lo{}, hi{};

  constexpr box<D> operator()(const box<D>& b) const {
    box<D> r = b;
    for (int i = 0; i < D; ++i) {
      if (dir[i] < 0) r.hi[i] = b.lo[i], r.lo[i] = b.lo[i] - lo[i];
      if (dir[i] > 0) r.lo[i] = b.hi[i], r.hi[i] = b.hi[i] + hi[i];
    }
    return r;
  }
};

/// The cells of an owned box whose stencil reads no halo cell: the box shrunk by the widths
/// (`lo` from below, `hi` from above); empty where the box is thinner than its two widths.
template <int D>
struct interior_rule {
  widths<D> lo{}, hi{};

  constexpr box<D> operator()(const box<D>& b) const {
    box<D> r = b;
    for (int i = 0; i < D; ++i) {
      r.lo[i] = std::min(b.hi[i], b.lo[i] + lo[i]);
      r.hi[i] = std::max(r.lo[i], b.hi[i] - hi[i]);
    }
    return r;
  }
};

/// The rule of direction `d` of stencil `st`.
template <int D>
constexpr region_rule<D> region_of(const stencil<D>& st,
                                   const std::type_identity_t<direction<D>>& d) {
  return {d, st.lo, st.hi};
}

/// A stencil's halo fixed at compile time: `count` neighbour directions, in slot order
/// (dimension 0 fastest), each with its region rule, and the interior rule.
/// ```
/// constexpr auto st = halox::stencil<3>::box(1);
/// using pat = halox::halo_pattern<st>;
/// static_assert(pat::count == 26);
/// constexpr auto up = pat::regions[25](halox::box<3>{{0, 0, 0}, {8, 8, 8}});  // the +,+,+ corner
/// static_assert(up.lo[0] == 8 && up.hi[0] == 9);
/// ```
template <auto St>
struct halo_pattern {
  static constexpr int dimension = decltype(St)::dimension;
  static_assert(
      [] {
        for (int i = 0; i < dimension; ++i)
          if (St.lo[i] < 0 || St.hi[i] < 0) return false;
        return true;
      }(),
      "stencil widths must not be negative");
  static constexpr int count = St.neighbor_count();
  static constexpr std::array<direction<dimension>, count> directions =
      St.template directions<std::size_t(count)>();
  static constexpr std::array<region_rule<dimension>, count> regions = [] {
    std::array<region_rule<dimension>, count> r{};
    for (int k = 0; k < count; ++k) r[std::size_t(k)] = region_of(St, directions[std::size_t(k)]);
    return r;
  }();
  static constexpr interior_rule<dimension> interior{St.lo, St.hi};
};

}  // namespace halox
