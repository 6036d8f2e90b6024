#pragma once
// The typed work behind a C domain handle for one domain type and dimension: queries, and the
// exchange build that wraps the described fields (checked on every rank together) and calls
// the compiled builder every C++ make_exchange calls.

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include <halox/comm/agree.hpp>
#include <halox/domain/box_list.hpp>
#include <halox/domain/cartesian.hpp>
#include <halox/exchange/make_exchange.hpp>

#include "capi/handles.hpp"

namespace halox::capi {

/// stencil<D> of `s` (its dimension checked by the caller).
template <int D>
stencil<D> stencil_of(const stencil_spec& s) {
  widths<D> lo{}, hi{};
  for (int i = 0; i < D; ++i) lo[i] = s.lo[i], hi[i] = s.hi[i];
  return s.box ? stencil<D>::box(lo, hi) : stencil<D>::star(lo, hi);
}

/// Field `f` (the exchange's field #k) as the builder takes it: wrapped, with its halo and
/// its boundary rules. Throws halox::error naming what is wrong.
template <class Dom, int D>
exchange_field<D> field_of(const Dom& dom, const halox_domain* handle, const halox_field* f, int k);

/// A C domain handle's typed work: `Dom` is cartesian<D> or box_list<D>.
template <class Dom, int D>
class structured_ops final : public domain_ops {
 public:
  explicit structured_ops(Dom d, const halox_domain* self) : dom_(std::move(d)), self_(self) {}

  int dim() const override { return D; }
  const boost::mpi::communicator& comm() const override { return dom_.comm(); }
  int block_count() const override { return int(dom_.local_boxes().size()); }
  void local_box(int block, std::int64_t* lo, std::int64_t* hi) const override {
    const auto& boxes = dom_.local_boxes();
    detail::require(block >= 0 && block < int(boxes.size()),
                    "halox_domain_local_box: block {} of a rank that owns {} box(es)", block,
                    boxes.size());
    for (int i = 0; i < D; ++i) lo[i] = boxes[std::size_t(block)].lo[i];
    for (int i = 0; i < D; ++i) hi[i] = boxes[std::size_t(block)].hi[i];
  }
  void grid(int* dims, int* coords) const override {
    if constexpr (requires { dom_.grid(); }) {
      const auto c = dom_.coords(dom_.rank());
      for (int i = 0; i < D; ++i) dims[i] = dom_.grid().dims[i], coords[i] = c[i];
    } else {
      detail::fail("halox_domain_grid: a box-list domain has no process grid");
    }
  }
  halo_exchange build(const halox_stencil* st, halox_field* const* fields, int count,
                      const halox_options* options, int reverse_op) const override;

 private:
  Dom dom_;
  const halox_domain* self_;
};

template <class Dom, int D>
halo_exchange structured_ops<Dom, D>::build(const halox_stencil* st, halox_field* const* fields,
                                            int count, const halox_options* options,
                                            int reverse_op) const {
  const int me = dom_.rank();
  std::vector<exchange_field<D>> list;
  std::optional<stencil<D>> common;
  std::optional<reduction> reverse;
  detail::agree(dom_.comm(), [&] {
    detail::require(reverse_op >= -1 && reverse_op <= HALOX_MAX,
                    "rank {}: reduction {} is no halox_reduction", me, reverse_op);
    if (reverse_op >= 0) reverse = reduction(reverse_op);
    detail::require(st != nullptr, "rank {}: the exchange's stencil is NULL", me);
    detail::require(st->spec.dim == D, "rank {}: the exchange's stencil is {}-D, the domain {}-D",
                    me, st->spec.dim, D);
    common = stencil_of<D>(st->spec);
    detail::require(count >= 1, "rank {}: an exchange needs at least one field, got {}", me, count);
    detail::require(fields != nullptr, "rank {}: the list of fields is NULL", me);
    for (int k = 0; k < count; ++k) list.push_back(field_of<Dom, D>(dom_, self_, fields[k], k));
  });
  const exchange_options o = options ? options->options : exchange_options{};
  return build_exchange<Dom, D>(dom_, *common, o, list, {reverse, {}});
}

}  // namespace halox::capi
