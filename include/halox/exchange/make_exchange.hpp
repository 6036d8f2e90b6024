#pragma once
/// @file
/// `make_exchange`: validates fields against a domain and stencil, builds the plan, and
/// compiles it into the copies and messages of a `halo_exchange`. The templates here only
/// erase the fields' value types; the builder is compiled in the library.

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "halox/boundary/boundary.hpp"
#include "halox/core/options.hpp"
#include "halox/core/reduction.hpp"
#include "halox/exchange/halo_exchange.hpp"
#include "halox/field/field.hpp"
#include "halox/pattern/halo_pattern.hpp"
#include "halox/pattern/stencil.hpp"

namespace halox {

/// One field of an exchange, whatever its value type: the field, the stencil of its halo and
/// its boundary rules. Any `field<T, D>` converts to one (the stencil is then the exchange's).
template <int D>
struct exchange_field {
  std::shared_ptr<detail::field_state<D>> state;
  std::optional<stencil<D>> st;        ///< this field's halo; none: the exchange's stencil
  std::vector<face_rule<D>> boundary;  ///< see halox::boundary (forward exchanges only)

  exchange_field() = default;
  template <class T>
  exchange_field(const field<T, D>& f) : state(f.state()) {}  // NOLINT: implicit by design
};

/// What to build: the direction, and (forward) an optional compile-time pattern's rules.
template <int D>
struct exchange_kind {
  std::optional<reduction> reverse;       ///< set: a reverse exchange combining with it
  std::span<const region_rule<D>> rules;  ///< a compile-time pattern's region rules, or empty
};

/// Builds the communication object for `fields` (one message per peer for all of them) on
/// domain `dom` (`cartesian<D>` or `box_list<D>`, D = 1..4), `st` being the stencil of every
/// field without its own. Collective; the entry every make_exchange overload, the Python
/// bindings and the C and Fortran interfaces call. Errors as for make_exchange.
template <class Domain, int D>
halo_exchange build_exchange(const Domain& dom, const stencil<D>& st,
                             const exchange_options& options,
                             std::span<const exchange_field<D>> fields,
                             const exchange_kind<D>& kind = {});

/// Builds the communication object that exchanges the halos of `fields` for stencil `st` on
/// domain `dom`: every halo cell receives the value of the owned cell it mirrors. Collective
/// over the domain's communicator. `options` chooses how messages travel (see
/// exchange_options; the `HALOX_*` environment variables override it).
///
/// Throws halox::error, on every rank, when any rank's input is wrong: a field from another
/// domain, padding narrower than the stencil's halo, negative widths, a bad option or
/// `HALOX_*` value. Nothing is sent and no field is written before that check.
template <class Domain, int D, class... T>
halo_exchange make_exchange(const Domain& dom, const stencil<D>& st,
                            const exchange_options& options, const field<T, D>&... fields) {
  static_assert(sizeof...(T) >= 1, "make_exchange needs at least one field");
  const exchange_field<D> list[] = {fields...};
  return build_exchange<Domain, D>(dom, st, options, list);
}

/// make_exchange with the default options.
template <class Domain, int D, class... T>
halo_exchange make_exchange(const Domain& dom, const stencil<D>& st, const field<T, D>&... fields) {
  return make_exchange(dom, st, exchange_options{}, fields...);
}

/// make_exchange over a list of fields chosen at run time (any mix of value types: a
/// `std::vector<exchange_field<D>>`, or a `std::vector<field<T, D>>`).
template <class Domain, int D, class F>
halo_exchange make_exchange(const Domain& dom, const stencil<D>& st,
                            const exchange_options& options, const std::vector<F>& fields) {
  const std::vector<exchange_field<D>> list(fields.begin(), fields.end());
  return build_exchange<Domain, D>(dom, st, options, list);
}

/// make_exchange with the stencil fixed at compile time: `make_exchange<st>(dom, fields...)`
/// (`st` a `constexpr` stencil). The plan walks `halo_pattern<st>`'s `constexpr` directions
/// and region rules; negative widths do not compile. The object is the same as
/// `make_exchange(dom, st, fields...)` builds.
template <auto St, class Domain, class... T>
halo_exchange make_exchange(const Domain& dom, const exchange_options& options,
                            const field<T, decltype(St)::dimension>&... fields) {
  static_assert(sizeof...(T) >= 1, "make_exchange needs at least one field");
  constexpr int D = decltype(St)::dimension;
  const exchange_field<D> list[] = {fields...};
  return build_exchange<Domain, D>(dom, St, options, list,
                                   {std::nullopt, halo_pattern<St>::regions});
}

/// make_exchange<st> with the default options.
template <auto St, class Domain, class... T>
halo_exchange make_exchange(const Domain& dom, const field<T, decltype(St)::dimension>&... fields) {
  return make_exchange<St>(dom, exchange_options{}, fields...);
}

/// Builds the reverse (halo-to-owner) exchange: every halo cell's value is sent back to the
/// owned cell it mirrors and combined into it with `op` (sum for deposition or assembly).
/// Halo cells are left as they are. An owned cell mirrored by several halo cells (several
/// neighbours, periodic images) receives every contribution, combined in a fixed order
/// (local images first, then peers by increasing rank), so results are deterministic for a
/// fixed decomposition. Collective; errors as for make_exchange, plus a combining `op` on a
/// non-arithmetic value type.
template <class Domain, int D, class... T>
halo_exchange make_reverse_exchange(const Domain& dom, const stencil<D>& st, reduction op,
                                    const exchange_options& options, const field<T, D>&... fields) {
  static_assert(sizeof...(T) >= 1, "make_reverse_exchange needs at least one field");
  const exchange_field<D> list[] = {fields...};
  return build_exchange<Domain, D>(dom, st, options, list, {op, {}});
}

/// make_reverse_exchange with the default options.
template <class Domain, int D, class... T>
halo_exchange make_reverse_exchange(const Domain& dom, const stencil<D>& st, reduction op,
                                    const field<T, D>&... fields) {
  return make_reverse_exchange(dom, st, op, exchange_options{}, fields...);
}

}  // namespace halox
