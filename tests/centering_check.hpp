#pragma once
// The reference model of staggered fields (faces, edges, nodes): which global point every
// stored and halo point of a block must hold after a forward exchange, and how many copies a
// reverse sum adds into each owned point. Values encode global point coordinates (check.hpp's
// keys over the global box of points), so a point holding the wrong point's value is caught.
// A field that keeps its shared points (shared_points::keep) starts with its own value there,
// negative and encoding the rank, the block and the point, and must still hold it afterwards.

#include <map>
#include <optional>
#include <sstream>

#include <boost/mpi/communicator.hpp>

#include "check.hpp"

namespace test_support {

/// Whether block b of `f` keeps its copy of point g: a stored point it does not own, of a field
/// with shared_points::keep.
template <class T, int D>
bool kept(const halox::field<T, D>& f, int b, const std::type_identity_t<halox::extents<D>>& g) {
  return f.shared() == halox::shared_points::keep && f.owned_box(b).contains(g) &&
         !f.owned_points(b).contains(g);
}

/// The value block b of this rank computed itself for its kept copy of point g: negative (no
/// owner's value is), and different on every rank and block (exact in float for the small
/// grids of the tests).
template <class T, int D>
T kept_value(const halox::field<T, D>& f, int b, const std::type_identity_t<halox::extents<D>>& g,
             int c, tag t) {
  const int rank = boost::mpi::communicator().rank();
  const auto k = key<D>(f.state()->points.global().hi, g, c, f.components(), t);
  return value_traits<T>::make(-2 - k - std::int64_t(1 + rank * 8 + b) * (std::int64_t(1) << 16));
}

/// Global point extents of field `f`: n + 1 along staggered non-periodic dimensions.
template <class T, int D>
halox::extents<D> point_extents(const halox::field<T, D>& f) {
  return f.state()->points.global().hi;
}

/// The global point (periodic-wrapped) that point g of block b must hold after a forward
/// exchange with stencil `st`: its own value where it owns g, the owner's for a shared copy or
/// a halo point in one of the stencil's directions inside the global box; nothing (the
/// sentinel stays) elsewhere.
template <class T, int D>
std::optional<halox::extents<D>> point_source(const halox::field<T, D>& f, int b,
                                              const halox::stencil<D>& st,
                                              const std::type_identity_t<halox::extents<D>>& g) {
  const auto& pg = f.state()->points;
  const auto s = f.owned_box(b);
  const auto n = pg.global().hi;
  halox::direction<D> d{};
  bool halo = false;
  for (int i = 0; i < D; ++i) {
    d[i] = g[i] < s.lo[i] ? -1 : g[i] >= s.hi[i] ? 1 : 0;
    halo = halo || d[i] != 0;
    if (g[i] < s.lo[i] - st.lo[i] || g[i] >= s.hi[i] + st.hi[i]) return std::nullopt;
  }
  if (halo && !st.has(d)) return std::nullopt;
  halox::extents<D> w = g;
  for (int i = 0; i < D; ++i) {
    if (pg.per[std::size_t(i)])
      w[i] = ((g[i] % n[i]) + n[i]) % n[i];
    else if (g[i] < 0 || g[i] >= n[i])
      return std::nullopt;
  }
  return w;
}

/// Sentinel everywhere, then the owned points of every block hold their encoded value (and
/// kept copies their kept_value).
template <class T, int D>
void fill_points(const halox::field<T, D>& f, tag t) {
  const auto n = point_extents(f);
  for (int b = 0; b < f.block_count(); ++b) {
    for_cells<D>(f.allocated_box(b), [&](const auto& g) {
      for (int c = 0; c < f.components(); ++c)
        f.at(g, c, b) = kept(f, b, g) ? kept_value(f, b, g, c, t) : value_traits<T>::sentinel();
    });
    for_cells<D>(f.owned_points(b), [&](const auto& g) {
      for (int c = 0; c < f.components(); ++c)
        f.at(g, c, b) = value_traits<T>::make(key<D>(n, g, c, f.components(), t));
    });
  }
}

/// Checks every allocated point of every block against point_source (values from host
/// memory `at(g, c, b)`; a GPU test passes a copy of the device data).
template <class T, int D, class At>
result check_points(const halox::field<T, D>& f, const halox::stencil<D>& st, tag t, At&& at) {
  result r;
  const auto n = point_extents(f);
  std::ostringstream rep;
  for (int b = 0; b < f.block_count(); ++b)
    for_cells<D>(f.allocated_box(b), [&](const auto& g) {
      const auto src = point_source(f, b, st, g);
      const bool owned = f.owned_points(b).contains(g), keep = kept(f, b, g);
      if (!owned) ++(src && !keep ? r.filled : r.untouched);
      for (int c = 0; c < f.components(); ++c) {
        const T want = keep  ? kept_value(f, b, g, c, t)
                       : src ? value_traits<T>::make(key<D>(n, *src, c, f.components(), t))
                             : value_traits<T>::sentinel();
        const T got = at(g, c, b);
        if (!(got == want)) {
          if (++r.bad <= 5)
            rep << "field '" << f.name() << "' (" << halox::to_string(f.where()) << ") block " << b
                << " point " << str<D>(g) << " c" << c << ": got " << value_traits<T>::str(got)
                << ", want " << value_traits<T>::str(want) << "\n";
        }
      }
    });
  r.report = rep.str();
  return r;
}

template <class T, int D>
result check_points(const halox::field<T, D>& f, const halox::stencil<D>& st, tag t) {
  return check_points(f, st, t, [&](const auto& g, int c, int b) { return f.at(g, c, b); });
}

/// How many stored or halo copies of each global point (linear index) the forward exchange
/// fills on this rank's blocks (kept copies are not filled): what a reverse sum adds into the
/// point's owner.
template <class T, int D>
std::map<std::int64_t, std::int64_t> copy_counts(const halox::field<T, D>& f,
                                                 const halox::stencil<D>& st) {
  std::map<std::int64_t, std::int64_t> out;
  const auto n = point_extents(f);
  for (int b = 0; b < f.block_count(); ++b)
    for_cells<D>(f.allocated_box(b), [&](const auto& g) {
      if (f.owned_points(b).contains(g) || kept(f, b, g)) return;
      if (const auto src = point_source(f, b, st, g)) ++out[key<D>(n, *src, 0, 1, {})];
    });
  return out;
}

}  // namespace test_support
