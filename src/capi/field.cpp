// Stencils, field descriptions and options of the C interface. A field only records what it
// is given: the exchange build checks it on every rank together (structured_fields.hpp), so a
// setter given a bad value marks the field instead of failing on this rank alone.

#include <cstring>

#include <halox/boundary/boundary.hpp>

#include "capi/handles.hpp"

namespace halox::capi {
namespace {

halox_stencil* new_stencil(int dim, const int* lo, const int* hi, bool box, const char* call) {
  detail::require(dim >= 1 && dim <= max_dim, "{}: dimension {} is not 1 to 4", call, dim);
  need(lo, call, "lo"), need(hi, call, "hi");
  auto st = std::make_unique<halox_stencil>();
  st->spec.dim = dim;
  st->spec.box = box;
  for (int i = 0; i < dim; ++i) st->spec.lo[i] = lo[i], st->spec.hi[i] = hi[i];
  return st.release();
}

/// The field of a setter, and the one place its arguments are judged.
halox_field& field_of(halox_field* f, const char* call) {
  return *need(f, call, "f");
}

void mark(halox_field& f, std::string why) {
  if (f.invalid.empty()) f.invalid = std::move(why);
}

int dim_of(const halox_field& f) {
  return f.domain->ops->dim();
}

void copy_values(std::vector<std::byte>& to, const void* from, std::size_t count, halox_type t) {
  const auto* p = static_cast<const std::byte*>(from);
  to.assign(p, p + count * type_size(t));
}

/// A reflect or mirror rule (`call` names the C function) with `count` signs at `signs`.
halox_status add_mirror_rule(const char* call, boundary_kind kind, halox_field* f, int dim,
                             halox_side side, const void* signs, int count) {
  return guard([&] {
    auto& x = field_of(f, call);
    boundary_spec r{dim, side, int(kind), {}, {}, count, nullptr, nullptr};
    if (count < 0 || (count > 0 && !signs))
      return mark(x, detail::format("{}: {} signs at NULL", call, count));
    if (count > 0) copy_values(r.signs, signs, std::size_t(count), x.type);
    x.rules.push_back(std::move(r));
  });
}

}  // namespace
}  // namespace halox::capi

using namespace halox;
using namespace halox::capi;

extern "C" {

halox_status halox_stencil_star(int dim, const int* lo, const int* hi, halox_stencil** out) {
  return guard([&] {
    *need(out, "halox_stencil_star", "out") = nullptr;
    *out = new_stencil(dim, lo, hi, false, "halox_stencil_star");
  });
}

halox_status halox_stencil_box(int dim, const int* lo, const int* hi, halox_stencil** out) {
  return guard([&] {
    *need(out, "halox_stencil_box", "out") = nullptr;
    *out = new_stencil(dim, lo, hi, true, "halox_stencil_box");
  });
}

halox_status halox_stencil_destroy(halox_stencil* st) {
  return guard([&] { delete st; });
}

halox_status halox_field_wrap(const halox_domain* dom, halox_type type, void* data,
                              const int64_t* extents, const int* pad_lo, const int* pad_hi,
                              halox_field** out) {
  return guard([&] {
    const char* call = "halox_field_wrap";
    *need(out, call, "out") = nullptr;
    auto f = std::make_unique<halox_field>();
    f->domain = need(dom, call, "dom");
    f->type = type;
    f->data.push_back(data);
    const int d = dim_of(*f);
    if (type_size(type) == 0)
      mark(*f, detail::format("element type {} is no halox_type", int(type)));
    if (!extents || !pad_lo || !pad_hi)
      mark(*f, detail::format("{}: the extents or the padding are NULL", call));
    else
      for (int i = 0; i < d; ++i)
        f->extents[i] = extents[i], f->pad_lo[i] = pad_lo[i], f->pad_hi[i] = pad_hi[i];
    *out = f.release();
  });
}

halox_status halox_field_wrap_blocks(const halox_domain* dom, halox_type type, int count,
                                     void* const* data, const int64_t* extents, const int* pad_lo,
                                     const int* pad_hi, halox_field** out) {
  return guard([&] {
    const char* call = "halox_field_wrap_blocks";
    *need(out, call, "out") = nullptr;
    auto f = std::make_unique<halox_field>();
    f->domain = need(dom, call, "dom");
    f->type = type;
    f->per_block = true;
    const int d = dim_of(*f);
    if (type_size(type) == 0)
      mark(*f, detail::format("element type {} is no halox_type", int(type)));
    if (count < 0 || (count > 0 && (!data || !extents)) || !pad_lo || !pad_hi)
      mark(*f, detail::format("{}: {} arrays, the arrays, extents or padding NULL", call, count));
    else
      for (int i = 0; i < d; ++i) f->pad_lo[i] = pad_lo[i], f->pad_hi[i] = pad_hi[i];
    if (f->invalid.empty()) {
      f->data.assign(data, data + count);
      f->block_extents.resize(std::size_t(count));
      for (int b = 0; b < count; ++b)
        for (int i = 0; i < d; ++i)
          f->block_extents[std::size_t(b)][std::size_t(i)] = extents[b * d + i];
    }
    *out = f.release();
  });
}

halox_status halox_field_destroy(halox_field* f) {
  return guard([&] { delete f; });
}

halox_status halox_field_set_order(halox_field* f, halox_order order) {
  return guard([&] {
    auto& x = field_of(f, "halox_field_set_order");
    if (order != HALOX_ROW_MAJOR && order != HALOX_COLUMN_MAJOR)
      mark(x, detail::format("order {} is neither HALOX_ROW_MAJOR nor HALOX_COLUMN_MAJOR",
                             int(order)));
    x.options.order = order == HALOX_COLUMN_MAJOR ? layout::column_major : layout::row_major;
  });
}

halox_status halox_field_set_components(halox_field* f, int count, halox_components_layout l) {
  return guard([&] {
    auto& x = field_of(f, "halox_field_set_components");
    if (l != HALOX_INTERLEAVED && l != HALOX_PLANAR)
      mark(x, detail::format("components layout {} is neither HALOX_INTERLEAVED nor HALOX_PLANAR",
                             int(l)));
    x.options.components = count;  // checked by the wrap (at least one)
    x.options.component_layout =
        l == HALOX_PLANAR ? components_layout::planar : components_layout::interleaved;
  });
}

halox_status halox_field_set_strides(halox_field* f, const int64_t* strides,
                                     int64_t component_stride) {
  return guard([&] {
    auto& x = field_of(f, "halox_field_set_strides");
    if (x.per_block) mark(x, "halox_field_set_strides: fields of several blocks are dense");
    if (!strides) return mark(x, "halox_field_set_strides: the strides are NULL");
    x.strides.emplace();
    for (int i = 0; i < dim_of(x); ++i) (*x.strides)[i] = strides[i];
    x.component_stride = component_stride;
  });
}

halox_status halox_field_set_centering(halox_field* f, halox_centering at, int dim) {
  return guard([&] {
    auto& x = field_of(f, "halox_field_set_centering");
    switch (at) {
      case HALOX_CELL:
        x.options.at = centering::cell();
        return;
      case HALOX_FACE:
        x.options.at = centering::face(dim);
        return;
      case HALOX_EDGE:
        x.options.at = centering::edge(dim);
        return;
      case HALOX_NODE:
        x.options.at = centering::node();
        return;
    }
    mark(x, detail::format("centering {} is no halox_centering", int(at)));
  });
}

halox_status halox_field_set_shared_points(halox_field* f, halox_shared_points rule) {
  return guard([&] {
    auto& x = field_of(f, "halox_field_set_shared_points");
    if (rule != HALOX_SHARED_OWNER_OVERWRITES && rule != HALOX_SHARED_KEEP)
      mark(x, detail::format("shared points rule {} is neither HALOX_SHARED_OWNER_OVERWRITES nor "
                             "HALOX_SHARED_KEEP",
                             int(rule)));
    x.options.shared =
        rule == HALOX_SHARED_KEEP ? shared_points::keep : shared_points::owner_overwrites;
  });
}

halox_status halox_field_set_memory(halox_field* f, halox_memory space) {
  return guard([&] {
    auto& x = field_of(f, "halox_field_set_memory");
    if (space != HALOX_HOST && space != HALOX_DEVICE)
      mark(x, detail::format("memory {} is neither HALOX_HOST nor HALOX_DEVICE", int(space)));
    x.space = space == HALOX_DEVICE ? memory_space::device : memory_space::host;
  });
}

halox_status halox_field_set_name(halox_field* f, const char* name) {
  return guard([&] { field_of(f, "halox_field_set_name").options.name = name ? name : ""; });
}

halox_status halox_field_set_stencil(halox_field* f, const halox_stencil* st) {
  return guard([&] {
    auto& x = field_of(f, "halox_field_set_stencil");
    if (st)
      x.stencil = st->spec;
    else
      x.stencil.reset();
  });
}

halox_status halox_field_boundary_constant(halox_field* f, int dim, halox_side side,
                                           const void* value) {
  return guard([&] {
    auto& x = field_of(f, "halox_field_boundary_constant");
    boundary_spec r{dim, side, int(boundary_kind::constant), {}, {}, 0, nullptr, nullptr};
    if (!value) return mark(x, "halox_field_boundary_constant: the value is NULL");
    copy_values(r.value, value, 1, x.type);
    x.rules.push_back(std::move(r));
  });
}

halox_status halox_field_boundary_zero_gradient(halox_field* f, int dim, halox_side side) {
  return guard([&] {
    field_of(f, "halox_field_boundary_zero_gradient")
        .rules.push_back(
            {dim, side, int(boundary_kind::zero_gradient), {}, {}, 0, nullptr, nullptr});
  });
}

halox_status halox_field_boundary_reflect(halox_field* f, int dim, halox_side side,
                                          const void* signs, int count) {
  return add_mirror_rule("halox_field_boundary_reflect", boundary_kind::reflect, f, dim, side,
                         signs, count);
}

halox_status halox_field_boundary_mirror(halox_field* f, int dim, halox_side side,
                                         const void* signs, int count) {
  return add_mirror_rule("halox_field_boundary_mirror", boundary_kind::mirror, f, dim, side, signs,
                         count);
}

halox_status halox_field_boundary_callback(halox_field* f, int dim, halox_side side,
                                           halox_boundary_fn fn, void* user) {
  return guard([&] {
    auto& x = field_of(f, "halox_field_boundary_callback");
    if (!fn) return mark(x, "halox_field_boundary_callback: the function is NULL");
    x.rules.push_back({dim, side, int(boundary_kind::callback), {}, {}, 0, fn, user});
  });
}

halox_status halox_options_create(halox_options** out) {
  return guard([&] { *need(out, "halox_options_create", "out") = new halox_options; });
}

halox_status halox_options_destroy(halox_options* o) {
  return guard([&] { delete o; });
}

halox_status halox_options_set_label(halox_options* o, const char* label) {
  return guard(
      [&] { need(o, "halox_options_set_label", "o")->options.label = label ? label : ""; });
}

halox_status halox_options_set_staging(halox_options* o, halox_staging s) {
  return guard([&] {
    auto& x = need(o, "halox_options_set_staging", "o")->options;
    detail::require(s >= HALOX_STAGING_AUTO && s <= HALOX_STAGING_NCCL,
                    "halox_options_set_staging: {} is no halox_staging", int(s));
    x.device_staging = staging(int(s));
  });
}

halox_status halox_options_set_wait_timeout(halox_options* o, double seconds) {
  return guard([&] {
    auto& x = need(o, "halox_options_set_wait_timeout", "o")->options;
    detail::require(seconds >= 0 && seconds <= 1e9,
                    "halox_options_set_wait_timeout: {} s; use 0 (wait for ever) or a positive "
                    "number of seconds",
                    seconds);
    x.wait_timeout = seconds;
  });
}

halox_status halox_options_set_host_shared_memory(halox_options* o, int enabled) {
  return guard([&] {
    need(o, "halox_options_set_host_shared_memory", "o")->options.host_shared_memory = enabled != 0;
  });
}

halox_status halox_allocate_node_shared(size_t bytes, void** data) {
  return guard([&] {
    *need(data, "halox_allocate_node_shared", "data") = nullptr;
    *data = halox::allocate_node_shared(bytes);
  });
}

halox_status halox_free_node_shared(void* data) {
  return guard([&] { halox::free_node_shared(data); });
}

}  // extern "C"
