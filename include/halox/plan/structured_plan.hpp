#pragma once
/// @file
/// The structured plan: which cells move from which owned box to which halo, per peer rank,
/// derived once by intersecting halo regions (periodic images included) with owned boxes.

#include <span>
#include <vector>

#include "halox/core/box.hpp"
#include "halox/field/centering.hpp"
#include "halox/pattern/halo_pattern.hpp"
#include "halox/pattern/stencil.hpp"

namespace halox {

/// One rectangular piece of halo: `src` cells of the sender's block `src_block` land in the
/// `dst` cells (halo, possibly a periodic image) of the receiver's block `dst_block`.
template <int D>
struct transfer {
  int src_block = 0;
  int dst_block = 0;
  box<D> src;
  box<D> dst;
  friend bool operator==(const transfer&, const transfer&) = default;
};

/// The transfers between this rank and one peer, in the order both sides agree on.
template <int D>
struct peer_transfers {
  int rank = 0;
  std::vector<transfer<D>> items;
};

/// Everything one rank sends, receives and copies locally in one exchange.
template <int D>
struct structured_plan {
  std::vector<peer_transfers<D>> sends;  ///< by increasing peer rank
  std::vector<peer_transfers<D>> recvs;  ///< by increasing peer rank
  std::vector<transfer<D>> local;        ///< this rank to itself (other block or periodic image)
};

/// How many times a halo may wrap around a periodic dimension: its width there (each side) may
/// be at most this many times the global extent. A wider halo wraps correctly (every image is a
/// transfer), but set-up and every exchange walk each image, so a width far beyond the
/// domain (a typo, a width meant for another axis) would build for minutes; it is refused with
/// halox::error instead.
inline constexpr int max_periodic_wraps = 16;

/// Builds this rank's plan for `st` on `dom`. Local work only: each rank replays the
/// receive side of the ranks whose halos can reach its boxes, so no message is sent. Throws
/// halox::error (this rank only) for a width more than max_periodic_wraps times a periodic
/// global extent. Compiled in the library for `cartesian<D>` and `box_list<D>`, D = 1..4.
template <int D, class Domain>
structured_plan<D> make_plan(const Domain& dom, const stencil<D>& st);

/// The plan of a field centred as `g` says (docs/staggered.md): the stencil's halo around the
/// points each block stores, and the copies of shared points, each filled from its owner;
/// with `shared` = shared_points::keep the halo alone (no shared copy is written).
/// Equal to make_plan(dom, st) for cell-centred fields.
template <int D, class Domain>
structured_plan<D> make_plan(const Domain& dom, const stencil<D>& st,
                             const detail::point_grid<D>& g,
                             shared_points shared = shared_points::owner_overwrites);

/// make_plan(dom, st) walking the region rules `rules` (a compile-time pattern's) in slot order.
template <int D, class Domain>
structured_plan<D> make_plan(const Domain& dom, const stencil<D>& st,
                             std::span<const region_rule<D>> rules);

/// The same plan, with the stencil's directions and region rules fixed at compile time
/// (`halo_pattern<St>`): `make_plan<st>(dom)`.
template <auto St, class Domain>
structured_plan<decltype(St)::dimension> make_plan(const Domain& dom) {
  using pat = halo_pattern<St>;
  return make_plan<pat::dimension>(dom, St,
                                   std::span<const region_rule<pat::dimension>>(pat::regions));
}

}  // namespace halox
