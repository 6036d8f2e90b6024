#pragma once
/// @file
/// Fields with their own halos in one exchange: `make_exchange(dom, halo(st_u, u, bc_u),
/// halo(st_p, p))` — each field with its own stencil and physical boundary rules, still one
/// message per peer.

#include <utility>

#include "halox/boundary/boundary.hpp"
#include "halox/exchange/make_exchange.hpp"

namespace halox {

/// One field of an exchange with the halo it needs: its stencil (widths and directions) and
/// the rules for its halo cells beyond non-periodic faces of the global box.
template <class T, int D>
struct field_halo {
  stencil<D> st;
  field<T, D> f;
  boundary<T, D> bc;
};

/// `h` as the type-erased field the builder takes: its field, stencil and boundary rules.
template <class T, int D>
exchange_field<D> as_exchange_field(const field_halo<T, D>& h) {
  exchange_field<D> e(h.f);
  e.st = h.st;
  e.boundary = erase_rules(h.bc, h.f);
  return e;
}

/// `f` exchanged for stencil `st`, with boundary rules `bc` (none by default).
template <class T, int D>
field_halo<T, D> halo(const stencil<D>& st, const field<T, D>& f, boundary<T, D> bc = {}) {
  return field_halo<T, D>{st, f, std::move(bc)};
}

/// Builds the communication object for fields with their own stencils and boundary rules:
/// each field's halo cells receive the owned cells they mirror as its stencil says, one
/// message per peer carries every field, and after each exchange the boundary rules fill the
/// halo cells beyond non-periodic faces (device fields: in stream order, see
/// docs/staggered.md). Collective; every rank passes the same
/// stencils and field types in the same order.
///
/// Throws halox::error, on every rank, when any rank's input is wrong: the errors of the
/// single-stencil make_exchange per field (padding narrower than that field's stencil, ...),
/// a boundary rule on a periodic face, a reflection whose mirror cells lie outside what the
/// exchange fills, reflection signs on a device field of a type the kernels cannot multiply.
/// Nothing is sent and no field is written before.
template <class Domain, int D, class... T>
halo_exchange make_exchange(const Domain& dom, const exchange_options& options,
                            const field_halo<T, D>&... halos) {
  static_assert(sizeof...(T) >= 1, "make_exchange needs at least one field");
  const stencil<D> first[] = {halos.st...};
  const exchange_field<D> list[] = {as_exchange_field(halos)...};
  return build_exchange<Domain, D>(dom, first[0], options, list);
}

/// make_exchange with per-field halos and the default options.
template <class Domain, int D, class... T>
halo_exchange make_exchange(const Domain& dom, const field_halo<T, D>&... halos) {
  return make_exchange(dom, exchange_options{}, halos...);
}

}  // namespace halox
