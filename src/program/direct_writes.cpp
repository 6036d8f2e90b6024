// Direct writes: one matcher of owned regions to halo regions for shared memory and CUDA IPC
// (see program/direct_writes.hpp).
#include "program/direct_writes.hpp"

#include <cstdint>

#include "program/placement.hpp"

namespace halox::detail {

namespace {

bool is_pack(step_kind k) {
  return k == step_kind::pack;
}

// The two ends of a step: the message (pack: dst, unpack: src) and the field.
const std::byte* message_end(const copy_op& op, step_kind k) {
  return is_pack(k) ? op.dst : op.src;
}
const std::byte* field_end(const copy_op& op, step_kind k) {
  return is_pack(k) ? op.src : op.dst;
}
const std::array<index, max_copy_dims>& message_strides(const copy_op& op, step_kind k) {
  return is_pack(k) ? op.dst_stride : op.src_stride;
}
const std::array<index, max_copy_dims>& field_strides(const copy_op& op, step_kind k) {
  return is_pack(k) ? op.src_stride : op.dst_stride;
}

// Adds a step to `s`: false where it combines into its destination (reverse exchanges), which
// only its own unpack may do. Steps with no dimension copy nothing and are left out.
bool add_step(message_steps& s, const copy_op& op) {
  if (op.ndims == 0) return true;
  if (op.reduce != nullptr || op.dev_reduce.op != 0) return false;
  s.ops.push_back(&op);
  return true;
}

// Whether region `r` covers the same message bytes as step `op`, in the same shape.
bool same_bytes(const copy_op& op, const message_steps& steps, const direct_region& r) {
  const auto at = std::uint64_t(message_end(op, steps.kind) - steps.at);
  if (r.buf_offset != at || r.elem != op.elem || r.ndims != op.ndims) return false;
  const auto& stride = message_strides(op, steps.kind);
  for (std::size_t d = 0; d < std::size_t(op.ndims); ++d)
    if (r.count[d] != op.count[d] || r.buf_stride[d] != stride[d]) return false;
  return true;
}

// Step `op` with its message end moved to the peer's field (region `r` of the block mapped at
// `block`).
copy_op fused(const copy_op& op, step_kind k, const direct_region& r, std::byte* block) {
  copy_op c = op;
  std::byte* to = block + r.block_offset;
  auto& stride = is_pack(k) ? c.dst_stride : c.src_stride;
  if (is_pack(k))
    c.dst = to;
  else
    c.src = to;
  for (std::size_t d = 0; d < std::size_t(op.ndims); ++d) stride[d] = r.field_stride[d];
  return c;
}

}  // namespace

message_steps host_message_steps(const exchange_program& prog, step_kind kind, std::size_t m,
                                 const std::byte* buf) {
  const bool pack = is_pack(kind);
  const exchange_program::steps& st = pack ? prog.pack : prog.unpack;
  const exchange_program::op_range& r = (pack ? prog.pack_range : prog.unpack_range)[m];
  const message& msg = (pack ? prog.sends : prog.recvs)[m];
  message_steps s{kind, buf + msg.offset, {}};
  if (r.gn != 0) return s;
  for (std::size_t k = r.c0; k < r.c0 + r.cn; ++k)
    if (!add_step(s, st.copies[k])) return message_steps{kind, s.at, {}};
  return s;
}

message_steps device_message_steps(const exchange_program& prog, step_kind kind,
                                   const std::byte* buf, const message& m) {
  const bool pack = is_pack(kind);
  message_steps s{kind, buf == nullptr ? nullptr : buf + m.offset, {}};
  for (const auto& g : pack ? prog.device_gather : prog.device_scatter)
    if (in_message(g.buf, buf, m)) return s;
  for (const auto& op : pack ? prog.device_pack : prog.device_unpack)
    if (op.ndims != 0 && in_message(message_end(op, kind), buf, m) && !add_step(s, op))
      return message_steps{kind, s.at, {}};
  return s;
}

std::vector<direct_region> describe_regions(const message_steps& steps, const find_export& find) {
  std::vector<direct_region> out;
  for (const copy_op* op : steps.ops) {
    direct_region r;
    const std::byte* field = field_end(*op, steps.kind);
    const std::byte* base = nullptr;
    if (!find(field, r.block, base)) return {};
    r.block_offset = std::uint64_t(field - base);
    r.buf_offset = std::uint64_t(message_end(*op, steps.kind) - steps.at);
    r.elem = op->elem;
    r.ndims = op->ndims;
    const auto& buf_stride = message_strides(*op, steps.kind);
    const auto& field_stride = field_strides(*op, steps.kind);
    for (std::size_t d = 0; d < std::size_t(op->ndims); ++d) {
      r.count[d] = op->count[d];
      r.buf_stride[d] = buf_stride[d];
      r.field_stride[d] = field_stride[d];
    }
    out.push_back(r);
  }
  return out;
}

std::vector<copy_op> fuse_regions(const message_steps& steps,
                                  const std::vector<direct_region>& peer, const map_export& map) {
  if (steps.ops.empty() || steps.ops.size() != peer.size()) return {};
  std::vector<char> taken(peer.size(), 0);
  std::vector<copy_op> out;
  for (const copy_op* op : steps.ops) {
    std::size_t r = 0;
    while (r < peer.size() && (taken[r] || !same_bytes(*op, steps, peer[r]))) ++r;
    std::byte* block = r < peer.size() ? map(peer[r].block) : nullptr;
    if (block == nullptr) return {};
    taken[r] = 1;
    out.push_back(fused(*op, steps.kind, peer[r], block));
  }
  return out;
}

}  // namespace halox::detail
