#pragma once
/// @file
/// Communication objects for unstructured patterns: the same `halo_exchange`, with index-list
/// gather/scatter steps instead of strided regions.

#include <string>
#include <vector>

#include "halox/domain/unstructured.hpp"
#include "halox/exchange/make_exchange.hpp"
#include "halox/exchange/program_builder.hpp"

namespace halox {

namespace detail {

inline void validate_entity_fields(const unstructured& pat,
                                   const std::vector<const entity_field_state*>& fields) {
  const int me = pat.rank();
  for (std::size_t k = 0; k < fields.size(); ++k) {
    const auto* f = fields[k];
    require(f != nullptr, "rank {}: field #{} is empty (default-constructed)", me, k);
    require(f->domain_id == pat.id(), "rank {}: field #{} '{}' belongs to another pattern", me, k,
            f->name);
    require(f->space == memory_space::host || cuda_enabled(),
            "rank {}: field #{} '{}' lives in {} memory; this halox was built without CUDA", me, k,
            f->name, to_string(f->space));
    require(f->count == pat.local_count(),
            "rank {}: field #{} '{}' has {} entities, the pattern has {} local entities", me, k,
            f->name, f->count, pat.local_count());
  }
}

/// Forward: owners' values (send lists) go to ghosts (receive lists). Reverse: ghosts' values
/// go back to their owners and are combined with `reduce` (per field).
inline exchange_program compile(const unstructured& pat,
                                const std::vector<const entity_field_state*>& fields,
                                const exchange_options& options, bool reverse = false,
                                const std::vector<combiner>& reduce = {}) {
  program_builder b(options);
  auto& lists = b.program().index_lists;
  auto add_side = [&](program_builder::side s, const std::vector<index_list>& peers, bool combine) {
    for (const auto& peer : peers) {
      b.begin(s, peer.rank);
      lists.push_back(peer.local);
      const auto& idx = lists.back();
      for (std::size_t k = 0; k < fields.size(); ++k) {
        const auto* f = fields[k];
        gather_op op;
        op.field = f->data;
        op.idx = idx.data();
        op.n = index(idx.size());
        op.elem = f->elem_bytes;
        op.ncomp = f->components;
        op.entity_stride = f->entity_stride * index(f->elem_bytes);
        op.comp_stride = f->comp_stride * index(f->elem_bytes);
        if (combine && !reduce.empty())
          op.reduce = reduce[k].host, op.dev_reduce = reduce[k].device;
        b.add(s, op, idx.size() * std::size_t(f->components) * f->elem_bytes,
              f->space == memory_space::device);
      }
    }
  };
  lists.reserve(pat.sends().size() + pat.recvs().size());  // gather steps point into these
  add_side(program_builder::send, reverse ? pat.recvs() : pat.sends(), false);
  add_side(program_builder::recv, reverse ? pat.sends() : pat.recvs(), reverse);
  std::vector<memory_space> spaces;
  for (const auto* f : fields) spaces.push_back(f->space);
  return b.finish(spaces, reverse);
}

}  // namespace detail

/// Builds the forward exchange (owners → ghosts) of `fields` over an unstructured pattern.
/// Collective over the pattern's communicator; one message per peer for all fields. `options`
/// as for the structured make_exchange.
template <class... T>
halo_exchange make_exchange(const unstructured& pat, const exchange_options& options,
                            const entity_field<T>&... fields) {
  static_assert(sizeof...(T) >= 1, "make_exchange needs at least one field");
  const std::vector<const detail::entity_field_state*> states{fields.state().get()...};
  exchange_options opts;
  detail::agree(pat.comm(), [&] {
    opts = detail::with_environment(options);
    detail::validate_entity_fields(pat, states);
  });
  return detail::finish_exchange(
      pat.comm(), detail::compile(pat, states, opts),
      detail::declare_unstructured(false, reduction::replace, sizeof...(T)), fields...);
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
  const std::vector<const detail::entity_field_state*> states{fields.state().get()...};
  exchange_options opts;
  detail::agree(pat.comm(), [&] {
    opts = detail::with_environment(options);
    detail::validate_entity_fields(pat, states);
    int k = 0;
    (detail::check_reducible<T>(op, k++, fields.name(), pat.rank(), fields.space()), ...);
  });
  const std::vector<detail::combiner> fns{detail::combiner_for<T>(op)...};
  return detail::finish_exchange(pat.comm(), detail::compile(pat, states, opts, true, fns),
                                 detail::declare_unstructured(true, op, sizeof...(T)), fields...);
}

/// make_reverse_exchange with the default options.
template <class... T>
halo_exchange make_reverse_exchange(const unstructured& pat, reduction op,
                                    const entity_field<T>&... fields) {
  return make_reverse_exchange(pat, op, exchange_options{}, fields...);
}

}  // namespace halox
