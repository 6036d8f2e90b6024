#pragma once
// The structured exchange builder, compiled once for cartesian<D> and box_list<D> (D = 1..4,
// one translation unit per dimension: src/exchange/build_<D>d.cpp):
// every rank checks its fields, the plans are built (one per distinct stencil and centering),
// compiled into the program's pack, unpack and local steps, and wrapped in the communication
// object (see halox/exchange/make_exchange.hpp).

#include <algorithm>
#include <climits>
#include <string>
#include <tuple>
#include <vector>

#include <boost/mpi/communicator.hpp>

#include "boundary/boundary_compile.hpp"
#include "core/environment.hpp"
#include "core/scalar.hpp"
#include "exchange/declaration.hpp"
#include "exchange/program_builder.hpp"
#include "halox/comm/agree.hpp"
#include "halox/domain/box_list.hpp"
#include "halox/domain/cartesian.hpp"
#include "halox/exchange/make_exchange.hpp"
#include "pack/strided_copy.hpp"
#include "plan/plan_builder.hpp"
#include "program/combine.hpp"

namespace halox {
namespace detail {
namespace {

// A view of one field's block for the compiler: where region `r` starts and its strides.
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

// Byte strides of a contiguous buffer holding `c` (row-major, components innermost).
template <int D>
void buffer_strides(const index* c, std::size_t elem, index* s) {
  index step = index(elem);
  for (int k = D; k >= 0; --k) s[k] = step, step *= c[k];
}

template <int D>
std::string field_label(int k, const field_state<D>& f) {
  return detail::format("field #{} '{}'", k, f.name);
}

// Checks every field against the domain and its stencil (`stencils[k]` for field k): the
// stencils first, then the fields in order.
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

// One plan per distinct stencil, centering and shared-points rule, shared by the fields that have
// it; `per_field[k]` is field k's.
template <int D>
struct field_plans {
  std::vector<structured_plan<D>> plans;
  std::vector<const structured_plan<D>*> per_field;
};

template <int D, class Domain>
field_plans<D> plans_for(const Domain& dom, const std::vector<const stencil<D>*>& sts,
                         const std::vector<const field_state<D>*>& fields) {
  std::vector<std::tuple<stencil<D>, std::array<bool, D>, shared_points>> distinct;
  std::vector<std::size_t> which;
  for (std::size_t k = 0; k < fields.size(); ++k) {
    const auto key = std::make_tuple(*sts[k], fields[k]->points.stagger, fields[k]->shared);
    const auto it = std::find(distinct.begin(), distinct.end(), key);
    which.push_back(std::size_t(it - distinct.begin()));
    if (it == distinct.end()) distinct.push_back(key);
  }
  field_plans<D> out;
  for (std::size_t j = 0; j < distinct.size(); ++j) {
    const auto* f = fields[std::size_t(std::find(which.begin(), which.end(), j) - which.begin())];
    out.plans.push_back(make_plan<D>(dom, std::get<0>(distinct[j]), f->points, f->shared));
  }
  for (const auto w : which) out.per_field.push_back(&out.plans[w]);
  return out;
}

// Whether every field is cell-centred.
template <int D>
bool all_cells(const std::vector<const field_state<D>*>& fields) {
  for (const auto* f : fields)
    if (f->points.any()) return false;
  return true;
}

// The transfers of `list` (sorted by rank) with `rank`, or null.
template <int D>
const std::vector<transfer<D>>* transfers_with(const std::vector<peer_transfers<D>>& list,
                                               int rank) {
  auto it = std::lower_bound(list.begin(), list.end(), rank,
                             [](const peer_transfers<D>& pt, int r) { return pt.rank < r; });
  return it != list.end() && it->rank == rank ? &it->items : nullptr;
}

// Field region `t.src` (`owned_side`) or `t.dst` of transfer `t`, in its block.
template <int D>
field_region<D> transfer_region(const field_state<D>* f, const transfer<D>& t, bool owned_side) {
  return owned_side ? field_region<D>{f, &f->blocks[t.src_block], t.src}
                    : field_region<D>{f, &f->blocks[t.dst_block], t.dst};
}

// The transfers of plan `p` that leave this rank (`out`) or arrive: forward, sends pack `src`
// regions and receives unpack into `dst`; a reverse exchange swaps both.
template <int D>
const std::vector<peer_transfers<D>>& transfers_of(const structured_plan<D>& p, bool reverse,
                                                   bool out) {
  return reverse == out ? p.recvs : p.sends;
}

// The peers that any field's plan sends to (`out`) or receives from, in increasing rank order.
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

// compile()'s send messages: one per peer, packing each field's transfers with it in turn.
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

// compile()'s receive messages: one per peer, unpacking (or, reverse with `reduce`,
// combining) each field's transfers with it in turn.
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

// compile()'s copies within this rank (another block, or a periodic image), field by field.
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
        b.program().ordered_device_local.push_back(op);
      else
        b.program().device_pack.push_back(op);
    }
}

// Compiles packing, unpacking and local copies for every field over its plan (`plans[k]` for
// field k; fields with the same stencil share one). A forward exchange moves owned cells
// (`src`) into halos (`dst`); a reverse one (`reduce` set, one per field, or `reverse` with
// `replace`) moves halo cells back and combines them into the owner.
//
// One message per peer that any field's plan names, in increasing rank order. Its layout:
// for each field, for each of that field's transfers with the peer, the region row-major
// with components innermost. Both sides walk the same transfers in the same order.
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

// compile() with one plan for every field.
template <int D>
exchange_program compile(const structured_plan<D>& plan,
                         const std::vector<const field_state<D>*>& fields,
                         const exchange_options& options, bool reverse = false,
                         const std::vector<combiner>& reduce = {}) {
  const std::vector<const structured_plan<D>*> plans(fields.size(), &plan);
  return compile<D>(plans, fields, options, reverse, reduce);
}

// What build_exchange gathers on every rank inside its agreement, before it compiles.
template <int D>
struct build_inputs {
  exchange_options opts;
  std::vector<const field_state<D>*> states;
  std::vector<const stencil<D>*> sts;
  std::vector<std::function<void()>> fills;  // host boundary rules, after each exchange
  device_rules device_fills;
};

// The checks every rank runs before anything is built: options, fields, then each field's
// reduction (reverse) or boundary rules (forward, compiled into `in`).
template <class Domain, int D>
void check_inputs(const Domain& dom, const exchange_options& options,
                  std::span<const exchange_field<D>> fields, const exchange_kind<D>& kind,
                  build_inputs<D>& in) {
  const int me = dom.rank();
  in.opts = with_environment(options);
  require(!fields.empty(), "rank {}: make_exchange needs at least one field", me);
  validate_fields<D>(dom, in.sts, in.states);
  for (std::size_t k = 0; k < fields.size(); ++k) {
    const auto& f = *in.states[k];
    if (kind.reverse) {
      require(fields[k].boundary.empty(),
              "rank {}: field #{} '{}': a reverse exchange takes no boundary rules", me, k, f.name);
      check_reducible(*kind.reverse, int(k), f.name, me, f.kind, f.space);
      continue;
    }
    for (auto& x : compile_boundary<D>(fields[k].boundary, f, *in.sts[k], dom.periodicity().flags,
                                       me, int(k), in.device_fills))
      in.fills.push_back(std::move(x));
  }
}

// The declaration of the exchange: direction, stencil(s), global box, periodicity, fields.
template <class Domain, int D>
declaration declare(const Domain& dom, const build_inputs<D>& in, const exchange_kind<D>& kind) {
  const auto per = dom.periodicity().flags;
  declaration d = kind.reverse ? declare_structured<D>(*in.sts.front(), dom.global_box(), per, true,
                                                       *kind.reverse, in.states.size())
                               : declare_structured<D>(in.sts, dom.global_box(), per);
  for (std::size_t k = 0; k < in.states.size(); ++k) {
    const auto& f = *in.states[k];
    declare_field(d, int(k), type_label(f.kind, f.type_name ? f.type_name : "?"), f.elem_bytes,
                  f.components, f.space, f.at, f.shared);
  }
  return d;
}

// The program of the checked inputs: plans (a compile-time pattern's rules where every field
// is cell-centred with the exchange's stencil), steps, boundary rules.
template <class Domain, int D>
exchange_program compile_inputs(const Domain& dom, const stencil<D>& st, build_inputs<D>& in,
                                const exchange_kind<D>& kind) {
  std::vector<combiner> fns;
  if (kind.reverse)
    for (const auto* f : in.states) fns.push_back(combiner_for(f->kind, *kind.reverse));
  const bool one_pattern =
      !kind.rules.empty() && all_cells<D>(in.states) &&
      std::all_of(in.sts.begin(), in.sts.end(), [&](const auto* s) { return *s == st; });
  auto prog = one_pattern ? compile<D>(make_plan<D>(dom, st, kind.rules), in.states, in.opts)
                          : compile<D>(plans_for<D>(dom, in.sts, in.states).per_field, in.states,
                                       in.opts, kind.reverse.has_value(), fns);
  prog.after_exchange = std::move(in.fills);
  prog.device_boundary = std::move(in.device_fills);
  return prog;
}

}  // namespace
}  // namespace detail

template <class Domain, int D>
halo_exchange build_exchange(const Domain& dom, const stencil<D>& st,
                             const exchange_options& options,
                             std::span<const exchange_field<D>> fields,
                             const exchange_kind<D>& kind) {
  detail::build_inputs<D> in;
  for (const auto& f : fields) {
    in.states.push_back(f.state.get());
    in.sts.push_back(f.st ? &*f.st : &st);
  }
  detail::agree(dom.comm(),
                [&] { detail::check_inputs<Domain, D>(dom, options, fields, kind, in); });
  auto prog = detail::compile_inputs<Domain, D>(dom, st, in, kind);
  prog.declared = detail::declare<Domain, D>(dom, in, kind);
  for (const auto& f : fields) prog.fields.push_back(f.state);
  return detail::make_halo_exchange(
      boost::mpi::communicator(dom.comm(), boost::mpi::comm_duplicate), std::move(prog));
}

#define HALOX_PLANS(Dom, D)                                                                      \
  template structured_plan<D> make_plan<D, Dom<D>>(const Dom<D>&, const stencil<D>&);            \
  template structured_plan<D> make_plan<D, Dom<D>>(const Dom<D>&, const stencil<D>&,             \
                                                   const detail::point_grid<D>&, shared_points); \
  template structured_plan<D> make_plan<D, Dom<D>>(const Dom<D>&, const stencil<D>&,             \
                                                   std::span<const region_rule<D>>);
#define HALOX_BUILD(Dom, D)                                      \
  template halo_exchange build_exchange<Dom<D>, D>(              \
      const Dom<D>&, const stencil<D>&, const exchange_options&, \
      std::span<const exchange_field<D>>, const exchange_kind<D>&);

}  // namespace halox
