#pragma once
/// @file
/// `make_exchange`: validates fields against a domain and stencil, builds the plan, and
/// compiles it into the copies and messages of a `halo_exchange`.

#include <algorithm>
#include <climits>
#include <string>
#include <vector>

#include <boost/mpi/collectives.hpp>
#include <boost/mpi/communicator.hpp>

#include "halox/comm/agree.hpp"
#include "halox/core/error.hpp"
#include "halox/core/options.hpp"
#include "halox/core/reduction.hpp"
#include "halox/exchange/declaration.hpp"
#include "halox/exchange/halo_exchange.hpp"
#include "halox/exchange/program_builder.hpp"
#include "halox/field/field.hpp"
#include "halox/pack/strided_copy.hpp"
#include "halox/plan/centered_plan.hpp"
#include "halox/plan/structured_plan.hpp"

namespace halox {

namespace detail {

/// A view of one field's block for the compiler: where region `r` starts and its strides.
template <int D>
struct field_region {
  const field_state<D>* f;
  const block_memory<D>* m;
  box<D> r;

  std::byte* base() const { return m->data + m->offset(r.lo, 0) * index(f->elem_bytes); }
  void counts(index* c) const {
    for (int i = 0; i < D; ++i) c[i] = r.hi[i] - r.lo[i];
    c[D] = f->components;
  }
  void strides(index* s) const {
    for (int i = 0; i < D; ++i) s[i] = m->stride[i] * index(f->elem_bytes);
    s[D] = m->comp_stride * index(f->elem_bytes);
  }
  std::size_t bytes() const { return std::size_t(r.volume()) * f->components * f->elem_bytes; }
};

/// Byte strides of a contiguous buffer holding `c` (row-major, components innermost).
template <int D>
void buffer_strides(const index* c, std::size_t elem, index* s) {
  index step = index(elem);
  for (int k = D; k >= 0; --k) s[k] = step, step *= c[k];
}

template <int D>
std::string field_label(int k, const field_state<D>& f) {
  return detail::format("field #{} '{}'", k, f.name);
}

/// Checks every field against the domain and its stencil (`stencils[k]` for field k): the
/// stencils first, then the fields in order.
template <int D, class Domain>
void validate_fields(const Domain& dom, const std::vector<const stencil<D>*>& stencils,
                     const std::vector<const field_state<D>*>& fields) {
  const int me = dom.rank();
  for (std::size_t k = 0; k < stencils.size(); ++k) {
    const auto* s = stencils[k];
    for (int i = 0; i < D; ++i)
      require(s->lo[i] >= 0 && s->hi[i] >= 0,
              "rank {}: stencil widths {}/{} in dimension {} must not be negative", me, s->lo[i],
              s->hi[i], i);
    // Checked here too (make_plan checks alone), so that every rank agrees on it.
    const std::string why = periodic_width_problem<D>(dom, s->lo, s->hi);
    require(why.empty(), "rank {}: {}: {}", me,
            fields[k] ? field_label(int(k), *fields[k]) : format("field #{}", k), why);
  }
  const auto& boxes = dom.local_boxes();
  for (int k = 0; k < int(fields.size()); ++k) {
    const auto* f = fields[k];
    const stencil<D>& st = *stencils[std::size_t(k)];
    require(f != nullptr, "rank {}: field #{} is empty (default-constructed)", me, k);
    const auto label = field_label(k, *f);
    require(f->domain_id == dom.id(), "rank {}: {} belongs to another domain", me, label);
    require(f->space == memory_space::host || cuda_enabled(),
            "rank {}: {} lives in {} memory; this halox was built without CUDA", me, label,
            to_string(f->space));
    require(f->blocks.size() == boxes.size(), "rank {}: {} has {} blocks, the rank owns {} boxes",
            me, label, f->blocks.size(), boxes.size());
    for (std::size_t b = 0; b < boxes.size(); ++b) {
      const auto& m = f->blocks[b];
      const box<D> want = f->points.stored(boxes[b]);
      require(m.owned == want,
              "rank {}: {} block {} covers {}, the domain's box is {} (stored as {}, {}-centred)",
              me, label, b, to_string(m.owned), to_string(boxes[b]), to_string(want),
              to_string(f->at));
      for (int i = 0; i < D; ++i)
        require(m.pad_lo[i] >= st.lo[i] && m.pad_hi[i] >= st.hi[i],
                "rank {}: {} has padding {}/{} in dimension {} but the stencil's halo is {}/{}", me,
                label, m.pad_lo[i], m.pad_hi[i], i, st.lo[i], st.hi[i]);
    }
  }
}

/// validate_fields with one stencil for every field.
template <int D, class Domain>
void validate_fields(const Domain& dom, const stencil<D>& st,
                     const std::vector<const field_state<D>*>& fields) {
  validate_fields<D>(dom, std::vector<const stencil<D>*>(fields.size(), &st), fields);
}

/// One plan per distinct pair of stencil and centering, shared by the fields that have it;
/// `per_field[k]` is field k's.
template <int D>
struct field_plans {
  std::vector<structured_plan<D>> plans;
  std::vector<const structured_plan<D>*> per_field;
};

template <int D, class Domain>
field_plans<D> plans_for(const Domain& dom, const std::vector<const stencil<D>*>& sts,
                         const std::vector<const field_state<D>*>& fields) {
  std::vector<std::pair<stencil<D>, std::array<bool, D>>> distinct;
  std::vector<std::size_t> which;
  for (std::size_t k = 0; k < fields.size(); ++k) {
    const auto key = std::make_pair(*sts[k], fields[k]->points.stagger);
    const auto it = std::find(distinct.begin(), distinct.end(), key);
    which.push_back(std::size_t(it - distinct.begin()));
    if (it == distinct.end()) distinct.push_back(key);
  }
  field_plans<D> out;
  for (std::size_t j = 0; j < distinct.size(); ++j) {
    const auto* f = fields[std::size_t(std::find(which.begin(), which.end(), j) - which.begin())];
    out.plans.push_back(make_plan<D>(dom, distinct[j].first, f->points));
  }
  for (const auto w : which) out.per_field.push_back(&out.plans[w]);
  return out;
}

/// Whether every field is cell-centred.
template <int D>
bool all_cells(const std::vector<const field_state<D>*>& fields) {
  for (const auto* f : fields)
    if (f->points.any()) return false;
  return true;
}

/// The transfers of `list` (sorted by rank) with `rank`, or null.
template <int D>
const std::vector<transfer<D>>* transfers_with(const std::vector<peer_transfers<D>>& list,
                                               int rank) {
  auto it = std::lower_bound(list.begin(), list.end(), rank,
                             [](const peer_transfers<D>& pt, int r) { return pt.rank < r; });
  return it != list.end() && it->rank == rank ? &it->items : nullptr;
}

/// Field region `t.src` (`owned_side`) or `t.dst` of transfer `t`, in its block.
template <int D>
field_region<D> transfer_region(const field_state<D>* f, const transfer<D>& t, bool owned_side) {
  return owned_side ? field_region<D>{f, &f->blocks[t.src_block], t.src}
                    : field_region<D>{f, &f->blocks[t.dst_block], t.dst};
}

/// The transfers of plan `p` that leave this rank (`out`) or arrive: forward, sends pack `src`
/// regions and receives unpack into `dst`; a reverse exchange swaps both.
template <int D>
const std::vector<peer_transfers<D>>& transfers_of(const structured_plan<D>& p, bool reverse,
                                                   bool out) {
  return reverse == out ? p.recvs : p.sends;
}

/// The peers that any field's plan sends to (`out`) or receives from, in increasing rank order.
template <int D>
std::vector<int> message_peers(const std::vector<const structured_plan<D>*>& plans,
                               std::size_t nfields, bool reverse, bool out) {
  std::vector<int> ranks;
  for (std::size_t k = 0; k < nfields; ++k)
    for (const auto& pt : transfers_of(*plans[k], reverse, out)) ranks.push_back(pt.rank);
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

/// compile()'s send messages: one per peer, packing each field's transfers with it in turn.
template <int D>
void compile_sends(program_builder& b, const std::vector<const structured_plan<D>*>& plans,
                   const std::vector<const field_state<D>*>& fields, bool reverse) {
  constexpr int R = D + 1;
  index c[R], fs[R], bs[R];
  for (const int peer : message_peers<D>(plans, fields.size(), reverse, true)) {
    b.begin(program_builder::send, peer);
    for (std::size_t k = 0; k < fields.size(); ++k) {
      const auto* f = fields[k];
      if (const auto* items = transfers_with<D>(transfers_of(*plans[k], reverse, true), peer))
        for (const auto& t : *items) {
          const auto fr = transfer_region(f, t, !reverse);
          fr.counts(c);
          fr.strides(fs);
          buffer_strides<D>(c, f->elem_bytes, bs);
          b.add(program_builder::send,
                make_copy_op(fr.base(), nullptr, R, f->elem_bytes, c, fs, bs, loop_order::by_src),
                fr.bytes(), f->space == memory_space::device);
        }
    }
  }
}

/// compile()'s receive messages: one per peer, unpacking (or, reverse with `reduce`,
/// combining) each field's transfers with it in turn.
template <int D>
void compile_recvs(program_builder& b, const std::vector<const structured_plan<D>*>& plans,
                   const std::vector<const field_state<D>*>& fields, bool reverse,
                   const std::vector<combiner>& reduce) {
  constexpr int R = D + 1;
  index c[R], fs[R], bs[R];
  for (const int peer : message_peers<D>(plans, fields.size(), reverse, false)) {
    b.begin(program_builder::recv, peer);
    for (std::size_t k = 0; k < fields.size(); ++k)
      if (const auto* items = transfers_with<D>(transfers_of(*plans[k], reverse, false), peer))
        for (const auto& t : *items) {
          const auto fr = transfer_region(fields[k], t, reverse);
          fr.counts(c);
          fr.strides(fs);
          buffer_strides<D>(c, fields[k]->elem_bytes, bs);
          auto op = make_copy_op(nullptr, fr.base(), R, fields[k]->elem_bytes, c, bs, fs,
                                 loop_order::by_dst);
          if (reverse && !reduce.empty())
            op.reduce = reduce[k].host, op.dev_reduce = reduce[k].device;
          b.add(program_builder::recv, op, fr.bytes(), fields[k]->space == memory_space::device);
        }
  }
}

/// compile()'s copies within this rank (another block, or a periodic image), field by field.
template <int D>
void compile_local(program_builder& b, const std::vector<const structured_plan<D>*>& plans,
                   const std::vector<const field_state<D>*>& fields, bool reverse,
                   const std::vector<combiner>& reduce) {
  constexpr int R = D + 1;
  index c[R], fs[R], fs2[R];
  for (std::size_t k = 0; k < fields.size(); ++k)
    for (const auto& t : plans[k]->local) {
      const auto src = transfer_region(fields[k], t, !reverse);
      const auto dst = transfer_region(fields[k], t, reverse);
      src.counts(c);
      src.strides(fs);
      dst.strides(fs2);
      auto op = make_copy_op(src.base(), dst.base(), R, fields[k]->elem_bytes, c, fs, fs2,
                             loop_order::by_dst);
      if (reverse && !reduce.empty()) op.reduce = reduce[k].host, op.dev_reduce = reduce[k].device;
      if (fields[k]->space != memory_space::device)
        b.program().local_ops.push_back(op);
      else if (reverse)
        b.program().device_local_ordered.push_back(op);
      else
        b.program().device_pack.push_back(op);
    }
}

/// Compiles packing, unpacking and local copies for every field over its plan (`plans[k]` for
/// field k; fields with the same stencil share one). A forward exchange moves owned cells
/// (`src`) into halos (`dst`); a reverse one (`reduce` set, one per field, or `reverse` with
/// `replace`) moves halo cells back and combines them into the owner.
///
/// One message per peer that any field's plan names, in increasing rank order. Its layout:
/// for each field, for each of that field's transfers with the peer, the region row-major
/// with components innermost. Both sides walk the same transfers in the same order.
template <int D>
exchange_program compile(const std::vector<const structured_plan<D>*>& plans,
                         const std::vector<const field_state<D>*>& fields,
                         const exchange_options& options, bool reverse = false,
                         const std::vector<combiner>& reduce = {}) {
  program_builder b(options);
  compile_sends<D>(b, plans, fields, reverse);
  compile_recvs<D>(b, plans, fields, reverse, reduce);
  compile_local<D>(b, plans, fields, reverse, reduce);
  std::vector<memory_space> spaces;
  for (const auto* f : fields) spaces.push_back(f->space);
  return b.finish(spaces, reverse);
}

/// compile() with one plan for every field.
template <int D>
exchange_program compile(const structured_plan<D>& plan,
                         const std::vector<const field_state<D>*>& fields,
                         const exchange_options& options, bool reverse = false,
                         const std::vector<combiner>& reduce = {}) {
  const std::vector<const structured_plan<D>*> plans(fields.size(), &plan);
  return compile<D>(plans, fields, options, reverse, reduce);
}

}  // namespace detail

namespace detail {
/// Where a field's values live (entity fields of unstructured exchanges: cells).
template <class F>
centering centering_of(const F& f) {
  if constexpr (requires { f.where(); })
    return f.where();
  else
    return centering::cell();
}

/// Wraps a compiled program in its communication object, on a duplicate of `comm`.
/// `declared`: what this rank declares (direction, stencil, ...), completed here with one item
/// per field; the object's construction compares it with every peer's.
template <class... F>
halo_exchange finish_exchange(const boost::mpi::communicator& comm, exchange_program prog,
                              declaration declared, const F&... fields) {
  (prog.fields.push_back(fields.state()), ...);
  int k = 0;
  (declare_field<typename F::value_type>(declared, k++, fields.components(), fields.space(),
                                         centering_of(fields)),
   ...);
  prog.declared = std::move(declared);
  return make_halo_exchange(boost::mpi::communicator(comm, boost::mpi::comm_duplicate),
                            std::move(prog));
}

/// Rejects a combining reduction on a non-arithmetic field.
template <class T>
void check_reducible(reduction op, int k, const std::string& name, int rank, memory_space space) {
  require(op == reduction::replace || std::is_arithmetic_v<T>,
          "rank {}: field #{} '{}': reduction '{}' needs an arithmetic value type; use replace",
          rank, k, name, to_string(op));
  require(op == reduction::replace || space == memory_space::host || device_type_code<T>() != 0,
          "rank {}: field #{} '{}': reduction '{}' on device memory supports double, float and "
          "32/64-bit integers",
          rank, k, name, to_string(op));
}
}  // namespace detail

namespace detail {
/// make_exchange's body: validation on every rank, then `plan()` compiled into the object.
template <class Domain, int D, class Plan, class... T>
halo_exchange make_forward(const Domain& dom, const stencil<D>& st, const exchange_options& options,
                           Plan&& plan, const field<T, D>&... fields) {
  const std::vector<const field_state<D>*> states{fields.state().get()...};
  exchange_options opts;
  agree(dom.comm(), [&] {
    opts = with_environment(options);
    validate_fields<D>(dom, st, states);
  });
  // Staggered fields get their own plans (one per centering); cell fields share `plan()`.
  const std::vector<const stencil<D>*> sts(states.size(), &st);
  auto prog = all_cells<D>(states)
                  ? compile<D>(plan(), states, opts)
                  : compile<D>(plans_for<D>(dom, sts, states).per_field, states, opts);
  return finish_exchange(dom.comm(), std::move(prog),
                         declare_structured<D>(st, dom.global_box(), dom.periodicity().flags, false,
                                               reduction::replace, sizeof...(T)),
                         fields...);
}
}  // namespace detail

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
  return detail::make_forward(
      dom, st, options, [&] { return make_plan<D>(dom, st); }, fields...);
}

/// make_exchange with the default options.
template <class Domain, int D, class... T>
halo_exchange make_exchange(const Domain& dom, const stencil<D>& st, const field<T, D>&... fields) {
  return make_exchange(dom, st, exchange_options{}, fields...);
}

/// make_exchange with the stencil fixed at compile time: `make_exchange<st>(dom, fields...)`
/// (`st` a `constexpr` stencil). The plan walks `halo_pattern<st>`'s `constexpr` directions
/// and region rules; negative widths do not compile. The object is the same as
/// `make_exchange(dom, st, fields...)` builds.
template <auto St, class Domain, class... T>
halo_exchange make_exchange(const Domain& dom, const exchange_options& options,
                            const field<T, decltype(St)::dimension>&... fields) {
  static_assert(sizeof...(T) >= 1, "make_exchange needs at least one field");
  return detail::make_forward(
      dom, St, options, [&] { return make_plan<St>(dom); }, fields...);
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
  const std::vector<const detail::field_state<D>*> states{fields.state().get()...};
  const std::vector<const stencil<D>*> sts(states.size(), &st);
  exchange_options opts;
  detail::agree(dom.comm(), [&] {
    opts = detail::with_environment(options);
    detail::validate_fields<D>(dom, st, states);
    int k = 0;
    (detail::check_reducible<T>(op, k++, fields.name(), dom.rank(), fields.space()), ...);
  });
  const std::vector<detail::combiner> fns{detail::combiner_for<T>(op)...};
  return detail::finish_exchange(
      dom.comm(),
      detail::compile<D>(detail::plans_for<D>(dom, sts, states).per_field, states, opts, true, fns),
      detail::declare_structured<D>(st, dom.global_box(), dom.periodicity().flags, true, op,
                                    sizeof...(T)),
      fields...);
}

/// make_reverse_exchange with the default options.
template <class Domain, int D, class... T>
halo_exchange make_reverse_exchange(const Domain& dom, const stencil<D>& st, reduction op,
                                    const field<T, D>&... fields) {
  return make_reverse_exchange(dom, st, op, exchange_options{}, fields...);
}

}  // namespace halox
