#pragma once
// field_of: a C field description made into the builder's exchange_field<D> (included by the
// per-dimension translation units after structured.hpp).

#include <string>

#include <halox/boundary/boundary.hpp>

#include "capi/structured.hpp"

namespace halox::capi {

/// `f`'s array wrapped as a field of `dom` (the checks of domain_base::wrap; the strided form
/// checks the extents as the dense one does).
template <class Dom, int D>
std::shared_ptr<detail::field_state<D>> wrap_of(const Dom& dom, const halox_field& f,
                                                const std::string& label) {
  widths<D> lo{}, hi{};
  extents<D> ext{}, strides{};
  for (int i = 0; i < D; ++i) lo[i] = f.pad_lo[i], hi[i] = f.pad_hi[i], ext[i] = f.extents[i];
  field_options o = f.options;
  o.name = label;
  std::shared_ptr<detail::field_state<D>> s;
  with_type(f.type, [&]<class T>() {
    if (f.per_block) {
      std::vector<T*> ptrs;
      std::vector<extents<D>> sizes(f.block_extents.size());
      for (void* p : f.data) ptrs.push_back(static_cast<T*>(p));
      for (std::size_t b = 0; b < sizes.size(); ++b)
        for (int i = 0; i < D; ++i) sizes[b][i] = f.block_extents[b][std::size_t(i)];
      s = dom.template wrap<T>(ptrs, sizes, lo, hi, o, f.space).state();
    } else if (f.strides) {
      for (int i = 0; i < D; ++i) strides[i] = (*f.strides)[i];
      s = dom.template wrap_strided<T>(static_cast<T*>(f.data[0]), lo, hi, strides,
                                       f.component_stride, o, f.space)
              .state();
      const extents<D> want = s->blocks[0].allocated().size();
      detail::require(want == ext,
                      "rank {}: field '{}' has extents {} but its owned box {} with padding {}/{} "
                      "needs {}",
                      dom.rank(), label, detail::join(ext, "x"), to_string(s->blocks[0].owned),
                      detail::join(lo, ","), detail::join(hi, ","), detail::join(want, "x"));
    } else {
      s = dom.template wrap<T>(static_cast<T*>(f.data[0]), ext, lo, hi, o, f.space).state();
    }
  });
  return s;
}

/// The rules of `f` as the builder takes them.
template <int D>
std::vector<face_rule<D>> rules_of(const halox_field& f, int me, const std::string& label) {
  std::vector<face_rule<D>> out;
  for (const auto& r : f.rules) {
    detail::require(r.dim >= 0 && r.dim < D,
                    "rank {}: field '{}' has a boundary rule on dimension {} of a {}-D domain", me,
                    label, r.dim, D);
    face_rule<D> e;
    e.face = face{r.dim, r.side == HALOX_HIGH ? side::high : side::low};
    e.kind = boundary_kind(r.kind);
    e.value = r.value;
    e.signs = r.signs;
    e.sign_count = std::size_t(r.sign_count);
    if (r.fn)
      e.fn = [fn = r.fn, user = r.user](int b, const box<D>& cells, stream_t on) {
        fn(user, b, cells.lo.data(), cells.hi.data(), static_cast<void*>(on));
      };
    out.push_back(std::move(e));
  }
  return out;
}

template <class Dom, int D>
exchange_field<D> field_of(const Dom& dom, const halox_domain* handle, const halox_field* f,
                           int k) {
  const int me = dom.rank();
  detail::require(f != nullptr, "rank {}: field #{} is NULL", me, k);
  const std::string label =
      f->options.name.empty() ? detail::format("field #{}", k) : f->options.name;
  detail::require(f->invalid.empty(), "rank {}: field '{}': {}", me, label, f->invalid);
  detail::require(f->domain == handle,
                  "rank {}: field '{}' describes an array of another domain than the exchange's",
                  me, label);
  exchange_field<D> out;
  out.state = wrap_of<Dom, D>(dom, *f, label);
  if (f->stencil) {
    detail::require(f->stencil->dim == D,
                    "rank {}: field '{}' has a {}-D stencil, the domain is {}-D", me, label,
                    f->stencil->dim, D);
    out.st = stencil_of<D>(*f->stencil);
  }
  out.boundary = rules_of<D>(*f, me, label);
  return out;
}

}  // namespace halox::capi
