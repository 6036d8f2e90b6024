#pragma once
/// @file
/// `make_exchange`: validates fields against a domain and stencil, builds the plan, and
/// compiles it into the copies and messages of a `halo_exchange`.

#include <climits>
#include <string>
#include <vector>

#include <boost/mpi/collectives.hpp>
#include <boost/mpi/communicator.hpp>

#include "halox/error.hpp"
#include "halox/exchange/halo_exchange.hpp"
#include "halox/field/field.hpp"
#include "halox/pack/strided_copy.hpp"
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
  return fmt::format("field #{} '{}'", k, f.name);
}

template <int D, class Domain>
void validate_fields(const Domain& dom, const stencil<D>& st,
                     const std::vector<const field_state<D>*>& fields) {
  const int me = dom.rank();
  for (int i = 0; i < D; ++i)
    require(st.lo[i] >= 0 && st.hi[i] >= 0,
            "rank {}: stencil widths {}/{} in dimension {} must not be negative", me, st.lo[i],
            st.hi[i], i);
  const auto& boxes = dom.local_boxes();
  for (int k = 0; k < int(fields.size()); ++k) {
    const auto* f = fields[k];
    require(f != nullptr, "rank {}: field #{} is empty (default-constructed)", me, k);
    const auto label = field_label(k, *f);
    require(f->domain_id == dom.id(), "rank {}: {} belongs to another domain", me, label);
    require(f->space == memory_space::host,
            "rank {}: {} lives in {} memory; this exchange handles host fields only", me, label,
            to_string(f->space));
    require(f->blocks.size() == boxes.size(), "rank {}: {} has {} blocks, the rank owns {} boxes",
            me, label, f->blocks.size(), boxes.size());
    for (std::size_t b = 0; b < boxes.size(); ++b) {
      const auto& m = f->blocks[b];
      require(m.owned == boxes[b], "rank {}: {} block {} covers {}, the domain's box is {}", me,
              label, b, to_string(m.owned), to_string(boxes[b]));
      for (int i = 0; i < D; ++i)
        require(m.pad_lo[i] >= st.lo[i] && m.pad_hi[i] >= st.hi[i],
                "rank {}: {} has padding {}/{} in dimension {} but the stencil's halo is {}/{}",
                me, label, m.pad_lo[i], m.pad_hi[i], i, st.lo[i], st.hi[i]);
    }
  }
}

/// Runs `check` on every rank; if it throws on any rank, every rank throws the message of the
/// lowest failing rank, so no rank goes on to exchange with a rank that gave up.
template <class F>
void agree(const boost::mpi::communicator& comm, F&& check) {
  std::string msg;
  try {
    check();
  } catch (const error& e) {
    msg = e.what();
  }
  const int mine = msg.empty() ? INT_MAX : comm.rank();
  const int first = boost::mpi::all_reduce(comm, mine, boost::mpi::minimum<int>());
  if (first == INT_MAX) return;
  boost::mpi::broadcast(comm, msg, first);
  if (first == comm.rank()) throw error(msg.substr(std::string("halox: ").size()));
  throw error(fmt::format("rank {}: input rejected on rank {}: {}", comm.rank(), first,
                          msg.substr(std::string("halox: ").size())));
}

/// Compiles packing, unpacking and local copies for every field over a plan.
template <int D>
exchange_program compile(const structured_plan<D>& plan,
                         const std::vector<const field_state<D>*>& fields) {
  exchange_program p;
  constexpr int R = D + 1;
  index c[R], fs[R], bs[R], fs2[R];
  // Message layout: for each field, for each transfer, the region row-major with components
  // innermost. Both sides walk the same transfers in the same order.
  auto lay_out = [&](const std::vector<peer_transfers<D>>& peers, bool sending,
                     std::vector<message>& msgs) {
    std::vector<std::pair<std::size_t, field_region<D>>> pending;  // buffer offset, region
    std::size_t offset = 0;
    for (const auto& peer : peers) {
      message m{peer.rank, offset, 0};
      for (const auto* f : fields)
        for (const auto& t : peer.items) {
          const int blk = sending ? t.src_block : t.dst_block;
          field_region<D> fr{f, &f->blocks[blk], sending ? t.src : t.dst};
          pending.emplace_back(offset, fr);
          offset += fr.bytes();
        }
      m.bytes = offset - m.offset;
      offset = (offset + 63) / 64 * 64;  // each message starts on a cache line
      msgs.push_back(m);
    }
    return std::pair{offset, std::move(pending)};
  };
  auto [send_total, send_regions] = lay_out(plan.sends, true, p.sends);
  auto [recv_total, recv_regions] = lay_out(plan.recvs, false, p.recvs);
  p.send_buf = std::make_unique<std::byte[]>(send_total + 64);
  p.recv_buf = std::make_unique<std::byte[]>(recv_total + 64);
  auto emit = [&](const auto& regions, const std::vector<message>& msgs, std::byte* buf,
                  bool pack, std::vector<exchange_program::op_range>& ranges,
                  std::vector<copy_op>& ops) {
    std::size_t k = 0;
    for (const auto& m : msgs) {
      exchange_program::op_range range{ops.size(), 0};
      for (; k < regions.size() && regions[k].first < m.offset + m.bytes; ++k) {
        const auto& [off, fr] = regions[k];
        fr.counts(c);
        fr.strides(fs);
        buffer_strides<D>(c, fr.f->elem_bytes, bs);
        ops.push_back(pack ? make_copy_op(fr.base(), buf + off, R, fr.f->elem_bytes, c, fs, bs,
                                          loop_order::by_src)
                           : make_copy_op(buf + off, fr.base(), R, fr.f->elem_bytes, c, bs, fs,
                                          loop_order::by_dst));
      }
      range.count = ops.size() - range.first;
      ranges.push_back(range);
    }
  };
  emit(send_regions, p.sends, p.send_buf.get(), true, p.pack_range, p.pack_ops);
  emit(recv_regions, p.recvs, p.recv_buf.get(), false, p.unpack_range, p.unpack_ops);
  for (const auto* f : fields)
    for (const auto& t : plan.local) {
      field_region<D> src{f, &f->blocks[t.src_block], t.src}, dst{f, &f->blocks[t.dst_block], t.dst};
      src.counts(c);
      src.strides(fs);
      dst.strides(fs2);
      p.local_ops.push_back(make_copy_op(src.base(), dst.base(), R, f->elem_bytes, c, fs, fs2,
                                         loop_order::by_dst));
    }
  std::size_t sb = 0, rb = 0;
  for (const auto& m : p.sends) sb += m.bytes;
  for (const auto& m : p.recvs) rb += m.bytes;
  p.summary = fmt::format("{} field(s); sends {} message(s) {} B; receives {} message(s) {} B; "
                          "{} local copies; {} pack / {} unpack copies",
                          fields.size(), p.sends.size(), sb, p.recvs.size(), rb,
                          p.local_ops.size(), p.pack_ops.size(), p.unpack_ops.size());
  for (const auto& m : p.sends) p.summary += fmt::format("\n  send to {}: {} B", m.peer, m.bytes);
  for (const auto& m : p.recvs) p.summary += fmt::format("\n  recv from {}: {} B", m.peer, m.bytes);
  return p;
}

}  // namespace detail

/// Builds the communication object that exchanges the halos of `fields` for stencil `st` on
/// domain `dom`. Collective over the domain's communicator.
///
/// Throws halox::error, on every rank, when any rank's input is wrong: a field from another
/// domain, padding narrower than the stencil's halo, negative widths. Nothing is sent and no
/// field is written before that check.
template <class Domain, int D, class... T>
halo_exchange make_exchange(const Domain& dom, const stencil<D>& st, const field<T, D>&... fields) {
  static_assert(sizeof...(T) >= 1, "make_exchange needs at least one field");
  const std::vector<const detail::field_state<D>*> states{fields.state().get()...};
  detail::agree(dom.comm(), [&] { detail::validate_fields<D>(dom, st, states); });
  detail::exchange_program prog = detail::compile<D>(make_plan<D>(dom, st), states);
  (prog.fields.push_back(fields.state()), ...);
  return halo_exchange(boost::mpi::communicator(dom.comm(), boost::mpi::comm_duplicate),
                       std::move(prog));
}

}  // namespace halox
