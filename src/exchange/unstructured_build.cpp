// The unstructured exchange builder: checks the entity fields and compiles the pattern's send
// and receive lists into the program's gather and scatter steps.

#include <optional>
#include <string>
#include <vector>

#include <boost/mpi/communicator.hpp>

#include "core/scalar.hpp"
#include "exchange/declaration.hpp"
#include "exchange/program_builder.hpp"
#include "halox/comm/agree.hpp"
#include "halox/exchange/unstructured_exchange.hpp"
#include "program/combine.hpp"

namespace halox {
namespace detail {
namespace {

void validate_entity_fields(const unstructured& pat,
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

// Forward: owners' values (send lists) go to ghosts (receive lists). Reverse: ghosts' values
// go back to their owners and are combined with `reduce` (per field).
exchange_program compile(const unstructured& pat,
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

}  // namespace
}  // namespace detail

halo_exchange build_exchange(const unstructured& pat, const exchange_options& options,
                             std::span<const std::shared_ptr<detail::entity_field_state>> fields,
                             std::optional<reduction> reverse) {
  std::vector<const detail::entity_field_state*> states;
  for (const auto& f : fields) states.push_back(f.get());
  exchange_options opts;
  detail::agree(pat.comm(), [&] {
    opts = detail::with_environment(options);
    detail::require(!states.empty(), "rank {}: make_exchange needs at least one field", pat.rank());
    detail::validate_entity_fields(pat, states);
    for (std::size_t k = 0; reverse && k < states.size(); ++k)
      detail::check_reducible(*reverse, int(k), states[k]->name, pat.rank(), states[k]->kind,
                              states[k]->space);
  });
  std::vector<detail::combiner> fns;
  for (const auto* f : states)
    if (reverse) fns.push_back(detail::combiner_for(f->kind, *reverse));
  auto prog = detail::compile(pat, states, opts, reverse.has_value(), fns);
  prog.declared = detail::declare_unstructured(reverse.has_value(),
                                               reverse.value_or(reduction::replace), states.size());
  for (std::size_t k = 0; k < states.size(); ++k) {
    const auto& f = *states[k];
    detail::declare_field(prog.declared, int(k),
                          detail::type_label(f.kind, f.type_name ? f.type_name : "?"), f.elem_bytes,
                          f.components, f.space);
    prog.fields.push_back(fields[k]);
  }
  return detail::make_halo_exchange(
      boost::mpi::communicator(pat.comm(), boost::mpi::comm_duplicate), std::move(prog));
}

}  // namespace halox
