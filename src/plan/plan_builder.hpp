#pragma once
// The plan builder: which cells move from which owned box to which halo, per peer, derived by
// intersecting halo regions (periodic images included) with owned boxes. Templates over the
// domain (cartesian and box_list are instantiated in plans.cpp; tests use their own domains).

#include <algorithm>
#include <array>
#include <climits>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "halox/core/box.hpp"
#include "halox/core/error.hpp"
#include "halox/field/centering.hpp"
#include "halox/pattern/halo_pattern.hpp"
#include "halox/plan/structured_plan.hpp"

namespace halox {
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

/// A domain seen through a centering: the global box of points, each box's owned points, and
/// owner lookup by points. Only what build_plan and incoming need.
template <int D, class Domain>
struct point_view {
  const Domain& dom;
  point_grid<D> g;
  box<D> global;
  std::vector<box<D>> local;

  point_view(const Domain& d, const point_grid<D>& grid) : dom(d), g(grid), global(grid.global()) {
    for (const auto& b : d.local_boxes()) local.push_back(g.owned(b));
  }
  int rank() const { return dom.rank(); }
  const box<D>& global_box() const { return global; }
  const auto& periodicity() const { return dom.periodicity(); }
  const std::vector<box<D>>& local_boxes() const { return local; }
  std::vector<box<D>> boxes_of(int r) const {
    auto boxes = dom.boxes_of(r);
    for (auto& b : boxes) b = g.owned(b);
    return boxes;
  }
  template <class F>
  void for_each_owner(const box<D>& q, F&& f) const {
    if (q.empty()) return;
    dom.for_each_owner(g.owner_cells(q),
                       [&](int r, int b, const box<D>& cells) { f(r, b, g.owned(cells)); });
  }
};

/// A region of a staggered block, as a function of its owned points `o`: either a stencil
/// region around the stored points, or (`shared`) the stored points beyond `o` along the
/// dimensions where `dir` is +1 (the copies of points a higher box owns).
template <int D>
struct point_region {
  region_rule<D> rule;
  bool shared = false;
  const point_grid<D>* g = nullptr;

  box<D> operator()(const box<D>& o) const {
    const box<D> s = g->stored_of_owned(o);
    if (!shared) return rule(s);
    box<D> r = o;
    for (int i = 0; i < D; ++i)
      if (rule.dir[i] > 0) r.lo[i] = o.hi[i], r.hi[i] = s.hi[i];
    return r;
  }
};

}  // namespace detail

// Builds this rank's plan for `st` on `dom`. Local work only: each rank replays the
/// receive side of the ranks whose halos can reach its boxes, so no message is sent. Throws
/// halox::error (this rank only) for a width more than max_periodic_wraps times a periodic
/// global extent.
template <int D, class Domain>
structured_plan<D> make_plan(const Domain& dom, const stencil<D>& st) {
  detail::require_periodic_widths<D>(dom, st);
  return detail::build_plan<D>(dom, st.lo, st.hi, detail::runtime_regions<D>(st));
}

// The plan of a field centred as `g` says, for stencil `st`: the stencil's halo around the
/// points each block stores, and (unless `shared` keeps them) the copies of shared points, each
/// filled from its owner. Equal to make_plan(dom, st) for cell-centred fields.
template <int D, class Domain>
structured_plan<D> make_plan(const Domain& dom, const stencil<D>& st,
                             const detail::point_grid<D>& g, shared_points shared) {
  if (!g.any()) return make_plan<D>(dom, st);
  detail::require_periodic_widths<D>(dom, st);  // the widths below grow by one: still bounded
  const detail::point_view<D, Domain> view(dom, g);
  std::vector<detail::point_region<D>> regions;
  for (const auto& rule : detail::runtime_regions<D>(st)) regions.push_back({rule, false, &view.g});
  // Shared copies: every non-empty set of staggered dimensions, in slot order. Kept copies
  // have no region: the halo regions lie outside the stored points, so nothing writes them.
  int stag = 0;
  if (shared == shared_points::owner_overwrites)
    for (int i = 0; i < D; ++i) stag |= g.stagger[std::size_t(i)] ? 1 << i : 0;
  for (int set = 1; set < 1 << D; ++set) {
    if ((set & ~stag) != 0) continue;
    region_rule<D> r;
    for (int i = 0; i < D; ++i) r.dir[i] = (set >> i) & 1;
    regions.push_back({r, true, &view.g});
  }
  widths<D> lo = st.lo, hi = st.hi;
  for (int i = 0; i < D; ++i) lo[i] += 1, hi[i] += 1;
  return detail::build_plan<D>(view, lo, hi, regions);
}

// The plan for `st` walking the region rules `rules` (a compile-time pattern's).
template <int D, class Domain>
structured_plan<D> make_plan(const Domain& dom, const stencil<D>& st,
                             std::span<const region_rule<D>> rules) {
  detail::require_periodic_widths<D>(dom, st);
  return detail::build_plan<D>(dom, st.lo, st.hi, rules);
}

}  // namespace halox
