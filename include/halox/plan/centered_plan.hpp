#pragma once
/// @file
/// The plan of a staggered field (faces, edges, nodes): the structured plan over the field's
/// points, where each shared point has one owner and every stored copy of it is a halo point.

#include <vector>

#include "halox/field/centering.hpp"
#include "halox/plan/structured_plan.hpp"

namespace halox {
namespace detail {

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

/// The plan of a field centred as `g` says, for stencil `st`: the stencil's halo around the
/// points each block stores, and the copies of shared points, each filled from its owner.
/// Equal to make_plan(dom, st) for cell-centred fields.
template <int D, class Domain>
structured_plan<D> make_plan(const Domain& dom, const stencil<D>& st,
                             const detail::point_grid<D>& g) {
  if (!g.any()) return make_plan<D>(dom, st);
  detail::require_periodic_widths<D>(dom, st);  // the widths below grow by one: still bounded
  const detail::point_view<D, Domain> view(dom, g);
  std::vector<detail::point_region<D>> regions;
  for (const auto& rule : detail::runtime_regions<D>(st)) regions.push_back({rule, false, &view.g});
  // Shared copies: every non-empty set of staggered dimensions, in slot order.
  int stag = 0;
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

}  // namespace halox
