// Unstructured patterns of the C interface: the pattern (halox::unstructured over the rank's
// owned and ghost global ids), entity fields over the user's arrays, and their exchanges,
// built by the compiled build_exchange every C++ make_exchange calls. An entity field only
// records what it is given: the build checks it on every rank together.

#include <algorithm>
#include <span>
#include <vector>

#include <halox/comm/agree.hpp>
#include <halox/exchange/unstructured_exchange.hpp>

#include "capi/handles.hpp"

namespace halox::capi {
namespace {

/// The ids of one list, checked on every rank together with the other list (in
/// new_pattern) so that a bad count on one rank cannot leave the others in the pattern's own
/// collective checks.
std::span<const global_id> ids_of(const std::int64_t* ids, std::int64_t count, const char* what,
                                  int me, const char* call) {
  detail::require(count >= 0, "rank {}: {}: {} {} ids", me, call, count, what);
  detail::require(count == 0 || ids != nullptr, "rank {}: {}: {} {} ids at NULL", me, call, count,
                  what);
  return {ids, std::size_t(count)};
}

/// What halox_unstructured_create_local takes beyond the ids (NULL: the default).
struct local_order {
  const int* ghost_owners = nullptr;
  const std::int64_t* owned_local = nullptr;
  const std::int64_t* ghost_local = nullptr;
  std::int64_t local_count = -1;
};

halox_unstructured* new_pattern(MPI_Comm raw, const std::int64_t* owned, std::int64_t n_owned,
                                const std::int64_t* ghosts, std::int64_t n_ghosts,
                                const local_order& order, const char* call) {
  const auto comm = attach(raw, call);
  std::span<const global_id> own, ghost;
  detail::agree(comm, [&] {
    own = ids_of(owned, n_owned, "owned", comm.rank(), call);
    ghost = ids_of(ghosts, n_ghosts, "ghost", comm.rank(), call);
  });
  unstructured_options o;
  if (order.ghost_owners) o.ghost_owners = {order.ghost_owners, ghost.size()};
  if (order.owned_local) o.owned_local = {order.owned_local, own.size()};
  if (order.ghost_local) o.ghost_local = {order.ghost_local, ghost.size()};
  o.local_count = order.local_count;
  return new halox_unstructured{unstructured(comm, own, ghost, o)};
}

const unstructured& pattern_of(const halox_unstructured* p, const char* call) {
  return need(p, call, "pat")->pattern;
}

halox_entity_field& field_of(halox_entity_field* f, const char* call) {
  return *need(f, call, "f");
}

void mark(halox_entity_field& f, std::string why) {
  if (f.invalid.empty()) f.invalid = std::move(why);
}

/// Field `f` (the exchange's field #k) wrapped over its pattern; throws halox::error naming
/// what is wrong.
std::shared_ptr<detail::entity_field_state> state_of(const halox_unstructured* handle,
                                                     const halox_entity_field* f, int k) {
  const auto& pat = handle->pattern;
  const int me = pat.rank();
  detail::require(f != nullptr, "rank {}: field #{} is NULL", me, k);
  const std::string label = f->name.empty() ? "(unnamed)" : f->name;
  detail::require(f->invalid.empty(), "rank {}: field #{} '{}': {}", me, k, label, f->invalid);
  detail::require(f->pattern == handle, "rank {}: field #{} '{}' belongs to another pattern", me, k,
                  label);
  detail::require(f->count == pat.local_count(),
                  "rank {}: field #{} '{}' has {} entities, the pattern has {} local entities", me,
                  k, label, f->count, pat.local_count());
  std::shared_ptr<detail::entity_field_state> s;
  with_type(f->type, [&]<class T>() {
    s = pat.wrap<T>(static_cast<T*>(f->data), f->components, f->layout, f->component_stride,
                    f->space, f->name)
            .state();
  });
  return s;
}

halox_status create(const halox_unstructured* pat, halox_entity_field* const* fields, int count,
                    const halox_options* options, int reverse_op, halox_exchange** out,
                    const char* call) {
  return guard([&] {
    *need(out, call, "out") = nullptr;
    const auto& p = pattern_of(pat, call);
    const int me = p.rank();
    std::vector<std::shared_ptr<detail::entity_field_state>> list;
    std::optional<reduction> reverse;
    detail::agree(p.comm(), [&] {
      detail::require(reverse_op >= -1 && reverse_op <= HALOX_MAX,
                      "rank {}: reduction {} is no halox_reduction", me, reverse_op);
      if (reverse_op >= 0) reverse = reduction(reverse_op);
      detail::require(count >= 1, "rank {}: an exchange needs at least one field, got {}", me,
                      count);
      detail::require(fields != nullptr, "rank {}: the list of fields is NULL", me);
      for (int k = 0; k < count; ++k) list.push_back(state_of(pat, fields[k], k));
    });
    const exchange_options o = options ? options->options : exchange_options{};
    *out = new halox_exchange{build_exchange(p, o, list, reverse), std::nullopt, {}};
  });
}

}  // namespace
}  // namespace halox::capi

using namespace halox;
using namespace halox::capi;

extern "C" {

halox_status halox_unstructured_create(MPI_Comm comm, const int64_t* owned, int64_t owned_count,
                                       const int64_t* ghosts, int64_t ghost_count,
                                       halox_unstructured** out) {
  return guard([&] {
    *need(out, "halox_unstructured_create", "out") = nullptr;
    *out =
        new_pattern(comm, owned, owned_count, ghosts, ghost_count, {}, "halox_unstructured_create");
  });
}

halox_status halox_unstructured_create_local(MPI_Comm comm, const int64_t* owned,
                                             int64_t owned_count, const int64_t* ghosts,
                                             int64_t ghost_count, const int* ghost_owners,
                                             const int64_t* owned_local, const int64_t* ghost_local,
                                             int64_t local_count, halox_unstructured** out) {
  return guard([&] {
    *need(out, "halox_unstructured_create_local", "out") = nullptr;
    *out = new_pattern(comm, owned, owned_count, ghosts, ghost_count,
                       {ghost_owners, owned_local, ghost_local, local_count},
                       "halox_unstructured_create_local");
  });
}

halox_status halox_unstructured_create_local_f(MPI_Fint comm, const int64_t* owned,
                                               int64_t owned_count, const int64_t* ghosts,
                                               int64_t ghost_count, const int* ghost_owners,
                                               const int64_t* owned_local,
                                               const int64_t* ghost_local, int64_t local_count,
                                               halox_unstructured** out) {
  return halox_unstructured_create_local(MPI_Comm_f2c(comm), owned, owned_count, ghosts,
                                         ghost_count, ghost_owners, owned_local, ghost_local,
                                         local_count, out);
}

halox_status halox_unstructured_create_f(MPI_Fint comm, const int64_t* owned, int64_t owned_count,
                                         const int64_t* ghosts, int64_t ghost_count,
                                         halox_unstructured** out) {
  return halox_unstructured_create(MPI_Comm_f2c(comm), owned, owned_count, ghosts, ghost_count,
                                   out);
}

halox_status halox_unstructured_destroy(halox_unstructured* pat) {
  return guard([&] { delete pat; });
}

halox_status halox_unstructured_counts(const halox_unstructured* pat, int64_t* owned,
                                       int64_t* ghosts, int64_t* local) {
  return guard([&] {
    const auto& p = pattern_of(pat, "halox_unstructured_counts");
    if (owned) *owned = p.owned_count();
    if (ghosts) *ghosts = p.ghost_count();
    if (local) *local = p.local_count();
  });
}

halox_status halox_unstructured_ghost_owners(const halox_unstructured* pat, int* owners) {
  return guard([&] {
    const auto& p = pattern_of(pat, "halox_unstructured_ghost_owners");
    const auto& o = p.ghost_owners();
    if (!o.empty())
      std::copy(o.begin(), o.end(), need(owners, "halox_unstructured_ghost_owners", "owners"));
  });
}

halox_status halox_entity_field_wrap(const halox_unstructured* pat, halox_type type, void* data,
                                     int64_t count, halox_entity_field** out) {
  return guard([&] {
    const char* call = "halox_entity_field_wrap";
    *need(out, call, "out") = nullptr;
    auto f = std::make_unique<halox_entity_field>();
    f->pattern = need(pat, call, "pat");
    f->type = type;
    f->data = data;
    f->count = count;
    if (type_size(type) == 0)
      mark(*f, detail::format("element type {} is no halox_type", int(type)));
    *out = f.release();
  });
}

halox_status halox_entity_field_destroy(halox_entity_field* f) {
  return guard([&] { delete f; });
}

halox_status halox_entity_field_set_components(halox_entity_field* f, int count,
                                               halox_components_layout l,
                                               int64_t component_stride) {
  return guard([&] {
    auto& x = field_of(f, "halox_entity_field_set_components");
    if (l != HALOX_INTERLEAVED && l != HALOX_PLANAR)
      mark(x, detail::format("components layout {} is neither HALOX_INTERLEAVED nor HALOX_PLANAR",
                             int(l)));
    x.components = count;  // checked by the wrap (at least one)
    x.layout = l == HALOX_PLANAR ? entity_layout::component_major : entity_layout::entity_major;
    if (component_stride < 0)
      mark(x, detail::format("component stride {} is negative", component_stride));
    x.component_stride = l == HALOX_PLANAR && component_stride > 0 ? component_stride : -1;
  });
}

halox_status halox_entity_field_set_memory(halox_entity_field* f, halox_memory space) {
  return guard([&] {
    auto& x = field_of(f, "halox_entity_field_set_memory");
    if (space != HALOX_HOST && space != HALOX_DEVICE)
      mark(x, detail::format("memory {} is neither HALOX_HOST nor HALOX_DEVICE", int(space)));
    x.space = space == HALOX_DEVICE ? memory_space::device : memory_space::host;
  });
}

halox_status halox_entity_field_set_name(halox_entity_field* f, const char* name) {
  return guard([&] { field_of(f, "halox_entity_field_set_name").name = name ? name : ""; });
}

halox_status halox_unstructured_exchange_create(const halox_unstructured* pat,
                                                halox_entity_field* const* fields, int count,
                                                const halox_options* options,
                                                halox_exchange** out) {
  return create(pat, fields, count, options, -1, out, "halox_unstructured_exchange_create");
}

halox_status halox_unstructured_reverse_exchange_create(const halox_unstructured* pat,
                                                        halox_reduction op,
                                                        halox_entity_field* const* fields,
                                                        int count, const halox_options* options,
                                                        halox_exchange** out) {
  return create(pat, fields, count, options, int(op), out,
                "halox_unstructured_reverse_exchange_create");
}

}  // extern "C"
