#pragma once
/// @file
/// Communication objects for unstructured patterns: the same `halo_exchange`, with index-list
/// gather/scatter steps instead of strided regions.

#include <memory>
#include <optional>
#include <span>

#include "halox/domain/unstructured.hpp"
#include "halox/exchange/make_exchange.hpp"

namespace halox {

/// Builds the communication object of an unstructured pattern for `fields` (any value types):
/// forward, or reverse combining with `reverse`. The entry every overload below, the Python
/// bindings and the C and Fortran interfaces call; compiled in the library.
halo_exchange build_exchange(const unstructured& pat, const exchange_options& options,
                             std::span<const std::shared_ptr<detail::entity_field_state>> fields,
                             std::optional<reduction> reverse = std::nullopt);

/// Builds the forward exchange (owners → ghosts) of `fields` over an unstructured pattern.
/// Collective over the pattern's communicator; one message per peer for all fields. `options`
/// as for the structured make_exchange.
template <class... T>
halo_exchange make_exchange(const unstructured& pat, const exchange_options& options,
                            const entity_field<T>&... fields) {
  static_assert(sizeof...(T) >= 1, "make_exchange needs at least one field");
  const std::shared_ptr<detail::entity_field_state> list[] = {fields.state()...};
  return build_exchange(pat, options, list);
}

/// make_exchange with the default options.
template <class... T>
halo_exchange make_exchange(const unstructured& pat, const entity_field<T>&... fields) {
  return make_exchange(pat, exchange_options{}, fields...);
}

/// Builds the reverse exchange (ghosts → owners): each ghost's value is combined into its
/// owner's value with `op`; ghosts are left as they are. Contributions are combined in a fixed
/// order (peers by increasing rank, each in its list order): deterministic for a fixed
/// decomposition.
template <class... T>
halo_exchange make_reverse_exchange(const unstructured& pat, reduction op,
                                    const exchange_options& options,
                                    const entity_field<T>&... fields) {
  static_assert(sizeof...(T) >= 1, "make_reverse_exchange needs at least one field");
  const std::shared_ptr<detail::entity_field_state> list[] = {fields.state()...};
  return build_exchange(pat, options, list, op);
}

/// make_reverse_exchange with the default options.
template <class... T>
halo_exchange make_reverse_exchange(const unstructured& pat, reduction op,
                                    const entity_field<T>&... fields) {
  return make_reverse_exchange(pat, op, exchange_options{}, fields...);
}

}  // namespace halox
