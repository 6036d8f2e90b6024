#pragma once
/// @file
/// The structured plan: which cells move from which owned box to which halo, per peer rank,
/// derived once by intersecting halo regions (periodic images included) with owned boxes.

#include <algorithm>
#include <climits>
#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include "halox/core/box.hpp"
#include "halox/core/error.hpp"
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

namespace detail {

/// Why widths `lo`/`hi` wrap too often around one of `dom`'s periodic dimensions (see
/// max_periodic_wraps), or "" when they do not.
template <int D, class Domain>
std::string periodic_width_problem(const Domain& dom, const widths<D>& lo, const widths<D>& hi) {
  const auto& n = dom.global_box().hi;
  for (int i = 0; i < D; ++i) {
    if (!dom.periodicity()[i]) continue;
    // Widths are int: the limit is compared without overflow for any extent.
    const index limit = index(max_periodic_wraps) * std::min<index>(n[i], INT_MAX);
    for (const int side : {0, 1}) {
      const int w = side == 0 ? lo[i] : hi[i];
      if (index(w) <= limit) continue;
      return format(
          "halo width {} on the {} side of dimension {} is more than {} times the periodic global "
          "extent {}; a halo may wrap around a periodic dimension at most {} times (here: width "
          "at most {})",
          w, side == 0 ? "low" : "high", i, max_periodic_wraps, n[i], max_periodic_wraps, limit);
    }
  }
  return {};
}

/// Throws halox::error on this rank if `st` wraps too often (periodic_width_problem).
template <int D, class Domain>
void require_periodic_widths(const Domain& dom, const stencil<D>& st) {
  const std::string why = periodic_width_problem<D>(dom, st.lo, st.hi);
  require(why.empty(), "rank {}: {}", dom.rank(), why);
}

/// Calls `f(image_box, shift)` for every periodic image of `r` that meets the global box
/// `[0, n)`: `image_box` is the part of `r` inside the image, moved back into `[0, n)`, and
/// `shift` the translation from there to `r`. Non-periodic dimensions only clip.
template <int D, class Domain, class F>
void for_each_image(const Domain& dom, box<D> r, F&& f) {
  const auto& n = dom.global_box().hi;
  std::array<index, D> k0{}, k1{}, k{};
  for (int i = 0; i < D; ++i) {
    if (dom.periodicity()[i]) {
      if (r.hi[i] <= r.lo[i]) return;
      k0[i] = floor_div(r.lo[i], n[i]);
      k1[i] = floor_div(r.hi[i] - 1, n[i]);
    } else {
      r.lo[i] = std::max<index>(r.lo[i], 0);
      r.hi[i] = std::min<index>(r.hi[i], n[i]);
      if (r.hi[i] <= r.lo[i]) return;
    }
  }
  k = k0;
  for (;;) {
    extents<D> shift{}, back{};
    for (int i = 0; i < D; ++i) shift[i] = k[i] * n[i], back[i] = -shift[i];
    const box<D> img = intersect(r, translate(dom.global_box(), shift));
    if (!img.empty()) f(translate(img, back), shift);
    int i = D - 1;
    while (i >= 0 && k[i] == k1[i]) k[i] = k0[i], --i;
    if (i < 0) break;
    ++k[i];
  }
}

/// The region rules of a stencil known at run time, in slot order (the first `count`).
template <int D>
struct runtime_regions {
  std::array<region_rule<D>, stencil<D>::slots> rules{};
  int count = 0;
  explicit runtime_regions(const stencil<D>& st) {
    const auto dirs = st.directions();
    count = st.neighbor_count();
    for (int k = 0; k < count; ++k) rules[std::size_t(k)] = region_of(st, dirs[std::size_t(k)]);
  }
  const region_rule<D>* begin() const { return rules.data(); }
  const region_rule<D>* end() const { return rules.data() + count; }
};

/// Calls `f(src_rank, transfer)` for every piece rank `r` receives, in a canonical order
/// (block, direction, image, owner) that every rank reproduces for `r`. `regions`: the
/// stencil's region rules in slot order (halo_pattern's at compile time, or runtime_regions).
template <int D, class Domain, class Regions, class F>
void incoming(const Domain& dom, const Regions& regions, int r, F&& f) {
  const auto boxes = dom.boxes_of(r);
  for (int b = 0; b < int(boxes.size()); ++b)
    for (const auto& rule : regions)
      for_each_image<D>(dom, rule(boxes[b]), [&](const box<D>& q, const extents<D>& shift) {
        dom.for_each_owner(q, [&](int owner, int owner_block, const box<D>& ob) {
          const box<D> src = intersect(q, ob);
          if (!src.empty()) f(owner, transfer<D>{owner_block, b, src, translate(src, shift)});
        });
      });
}

/// The plan for a stencil with widths `lo`/`hi` and region rules `regions` (see make_plan).
template <int D, class Domain, class Regions, class W>
structured_plan<D> build_plan(const Domain& dom, const W& lo, const W& hi, const Regions& regions) {
  structured_plan<D> p;
  const int me = dom.rank();
  auto add = [](std::vector<peer_transfers<D>>& list, int rank, const transfer<D>& t) {
    auto it = std::lower_bound(list.begin(), list.end(), rank,
                               [](const peer_transfers<D>& pt, int r) { return pt.rank < r; });
    if (it == list.end() || it->rank != rank) it = list.insert(it, peer_transfers<D>{rank, {}});
    it->items.push_back(t);
  };
  incoming<D>(dom, regions, me, [&](int src, const transfer<D>& t) {
    if (src == me)
      p.local.push_back(t);
    else
      add(p.recvs, src, t);
  });
  // Ranks whose halo can reach a cell of mine own a box meeting my boxes grown by the
  // opposite widths (their low halo reaches my high side and vice versa).
  std::set<int> receivers;
  for (const auto& b : dom.local_boxes())
    for_each_image<D>(dom, grow(b, hi, lo), [&](const box<D>& q, const extents<D>&) {
      dom.for_each_owner(q, [&](int owner, int, const box<D>&) {
        if (owner != me) receivers.insert(owner);
      });
    });
  for (int r : receivers)
    incoming<D>(dom, regions, r, [&](int src, const transfer<D>& t) {
      if (src == me) add(p.sends, r, t);
    });
  return p;
}
}  // namespace detail

/// Builds this rank's plan for `st` on `dom`. Local work only: each rank replays the
/// receive side of the ranks whose halos can reach its boxes, so no message is sent. Throws
/// halox::error (this rank only) for a width more than max_periodic_wraps times a periodic
/// global extent.
template <int D, class Domain>
structured_plan<D> make_plan(const Domain& dom, const stencil<D>& st) {
  detail::require_periodic_widths<D>(dom, st);
  return detail::build_plan<D>(dom, st.lo, st.hi, detail::runtime_regions<D>(st));
}

/// The same plan, with the stencil's directions and region rules fixed at compile time
/// (`halo_pattern<St>`): `make_plan<st>(dom)`.
template <auto St, class Domain>
structured_plan<decltype(St)::dimension> make_plan(const Domain& dom) {
  using pat = halo_pattern<St>;
  detail::require_periodic_widths<pat::dimension>(dom, St);
  return detail::build_plan<pat::dimension>(dom, St.lo, St.hi, pat::regions);
}

}  // namespace halox
