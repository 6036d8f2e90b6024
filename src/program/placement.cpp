// Placing a compiled program's steps where the transports put its messages (see
// program/placement.hpp).
#include "program/placement.hpp"

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace halox::detail {

namespace {

template <class T>
T at_or(const std::vector<T>& v, std::size_t k, T fallback) {
  return k < v.size() ? v[k] : fallback;
}

// Moves `p` from message `m` of `buf` to the same place in the message at `to`.
template <class P>
void move_to(P& p, const std::byte* buf, const message& m, std::byte* to) {
  p = static_cast<P>(to + (static_cast<const std::byte*>(p) - (buf + m.offset)));
}

// A direct message's steps replaced by its fused copies: one for each step that copies
// anything, in order (program/direct_writes.hpp leaves out the steps with no dimension, which
// copy nothing and stay).
void substitute(exchange_program::steps& out, const exchange_program::op_range& r,
                const std::vector<copy_op>& fused) {
  std::size_t j = 0;
  for (std::size_t k = r.c0; k < r.c0 + r.cn && j < fused.size(); ++k)
    if (out.copies[k].ndims != 0) out.copies[k] = fused[j++];
}

// The host steps of every message: those of direct messages replaced by their fused copies,
// those of moved messages re-pointed (`copy_ptr`, `gather_ptr`: the pointer of a step into the
// message buffer).
template <class CopyPtr, class GatherPtr>
exchange_program::steps place_host(const exchange_program::steps& st,
                                   const std::vector<exchange_program::op_range>& ranges,
                                   const std::vector<message>& msgs, const std::byte* buf,
                                   const std::vector<std::byte*>& at,
                                   const std::vector<std::vector<copy_op>>& fused, CopyPtr copy_ptr,
                                   GatherPtr gather_ptr) {
  exchange_program::steps out = st;
  for (std::size_t m = 0; m < msgs.size(); ++m) {
    if (m < fused.size() && !fused[m].empty()) {
      substitute(out, ranges[m], fused[m]);
      continue;
    }
    std::byte* to = at_or<std::byte*>(at, m, nullptr);
    if (to == nullptr) continue;
    const auto& r = ranges[m];
    for (std::size_t k = r.c0; k < r.c0 + r.cn; ++k)
      move_to(copy_ptr(out.copies[k]), buf, msgs[m], to);
    for (std::size_t k = r.g0; k < r.g0 + r.gn; ++k)
      move_to(gather_ptr(out.gathers[k]), buf, msgs[m], to);
  }
  return out;
}

// A copy moved into a message of flagged words at `to`: the buffer side's offset in the message
// and its strides doubled (each 4-byte word in an 8-byte slot).
void to_flagged(copy_op& op, int mode, std::byte* to) {
  auto& strides = mode == flagged_write ? op.dst_stride : op.src_stride;
  const std::byte* p = mode == flagged_write ? op.dst : op.src;
  std::byte* moved = to + 2 * (p - to);
  if (mode == flagged_write)
    op.dst = moved;
  else
    op.src = moved;
  for (int k = 0; k < op.ndims; ++k) strides[std::size_t(k)] *= 2;
  op.flagged = mode;
}

// Device steps: a step belongs to the message its buffer pointer falls into. `flagged`: the
// messages of flagged words, whose copies become `mode` (copy_op::flagged).
template <class Op, class Ptr>
void place_list(std::vector<Op>& list, Ptr ptr, const std::vector<message>& msgs,
                const std::byte* buf, const std::vector<std::byte*>& at,
                const std::vector<char>& direct, const std::vector<char>& flagged = {},
                int mode = 0) {
  list.erase(std::remove_if(list.begin(), list.end(),
                            [&](Op& op) {
                              for (std::size_t m = 0; m < msgs.size(); ++m)
                                if (at_or<char>(direct, m, 0) && in_message(ptr(op), buf, msgs[m]))
                                  return true;
                              return false;
                            }),
             list.end());
  for (auto& op : list)
    for (std::size_t m = 0; m < msgs.size(); ++m) {
      std::byte* to = at_or<std::byte*>(at, m, nullptr);
      if (to != nullptr && in_message(ptr(op), buf, msgs[m])) {
        move_to(ptr(op), buf, msgs[m], to);
        if constexpr (std::is_same_v<Op, copy_op>)
          if (at_or<char>(flagged, m, 0)) to_flagged(op, mode, to);
        break;
      }
    }
}

}  // namespace

bool in_message(const void* p, const std::byte* buf, const message& m) {
  const auto* b = static_cast<const std::byte*>(p);
  return buf != nullptr && b >= buf + m.offset && b < buf + m.offset + m.bytes;
}

exchange_program::steps place_pack(const exchange_program& prog, const std::byte* buf,
                                   const placement& where) {
  return place_host(
      prog.pack, prog.pack_range, prog.sends, buf, where.send_at, where.fused_send,
      [](copy_op& op) -> std::byte*& { return op.dst; },
      [](gather_op& g) -> std::byte*& { return g.buf; });
}

exchange_program::steps place_unpack(const exchange_program& prog, const std::byte* buf,
                                     const placement& where) {
  return place_host(
      prog.unpack, prog.unpack_range, prog.recvs, buf, where.recv_at, where.fused_recv,
      [](copy_op& op) -> const std::byte*& { return op.src; },
      [](gather_op& g) -> std::byte*& { return g.buf; });
}

bool flaggable(const exchange_program& prog, bool pack, const std::byte* buf, const message& m) {
  for (const auto& g : pack ? prog.device_gather : prog.device_scatter)
    if (in_message(g.buf, buf, m)) return false;
  bool any = false;
  for (const auto& op : pack ? prog.device_pack : prog.device_unpack) {
    if (op.ndims == 0 || !in_message(pack ? op.dst : op.src, buf, m)) continue;
    if (alignment_bits(op) % 4 != 0 || op.reduce != nullptr || op.dev_reduce.op != 0) return false;
    any = true;
  }
  return any;
}

device_steps place_device(const exchange_program& prog, const placement& where,
                          const std::byte* send_buf, const std::byte* recv_buf) {
  device_steps s{prog.device_pack, prog.device_unpack, prog.device_gather, prog.device_scatter};
  const auto pack_ptr = [](copy_op& op) -> std::byte*& { return op.dst; };
  const auto unpack_ptr = [](copy_op& op) -> const std::byte*& { return op.src; };
  const auto buf_ptr = [](gather_op& g) -> std::byte*& { return g.buf; };
  place_list(s.pack, pack_ptr, prog.sends, send_buf, where.send_at, where.send_direct,
             where.send_flagged, flagged_write);
  place_list(s.gather, buf_ptr, prog.sends, send_buf, where.send_at, where.send_direct);
  place_list(s.unpack, unpack_ptr, prog.recvs, recv_buf, where.recv_at, where.recv_direct,
             where.recv_flagged, flagged_read);
  place_list(s.scatter, buf_ptr, prog.recvs, recv_buf, where.recv_at, where.recv_direct);
  for (const auto& fused : where.fused_send)
    s.pack.insert(s.pack.end(), fused.begin(), fused.end());
  return s;
}

}  // namespace halox::detail
