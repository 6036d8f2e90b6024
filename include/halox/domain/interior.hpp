#pragma once
/// @file
/// Splitting an owned box for overlap: the cells a stencil can update without its halo, and
/// the rest, so the first can be computed while the exchange is in flight.

#include <algorithm>
#include <vector>

#include "halox/core/box.hpp"
#include "halox/pattern/halo_pattern.hpp"
#include "halox/pattern/stencil.hpp"

namespace halox {

/// An owned box split for overlapping computation with the exchange.
template <int D>
struct interior_split {
  box<D> interior;            ///< cells whose stencil reads no halo cell (may be empty)
  std::vector<box<D>> shell;  ///< the rest of the box, as at most 2·D disjoint slabs
};

/// Splits `b` for stencil `st`: the interior is `b` shrunk by the stencil's reach on each side
/// (`lo` widths from below, `hi` from above); the shell covers the remaining cells exactly once.
/// ```
/// const auto parts = halox::split_interior(u.owned_box(), st);
/// auto h = ex.start();
/// update(parts.interior);
/// h.wait();
/// for (const auto& slab : parts.shell) update(slab);
/// ```
template <int D>
interior_split<D> split_interior(const box<D>& b, const stencil<D>& st) {
  interior_split<D> s;
  const box<D> inner = interior_rule<D>{st.lo, st.hi}(b);  // the rule halo_pattern uses
  box<D> rest = b;
  for (int d = 0; d < D && !rest.empty(); ++d) {
    box<D> low = rest, high = rest;
    low.hi[d] = inner.lo[d];
    high.lo[d] = inner.hi[d];
    if (!low.empty()) s.shell.push_back(low);
    if (!high.empty()) s.shell.push_back(high);
    rest.lo[d] = inner.lo[d];
    rest.hi[d] = inner.hi[d];
  }
  s.interior = rest.empty() ? box<D>{b.lo, b.lo} : rest;
  return s;
}

}  // namespace halox
