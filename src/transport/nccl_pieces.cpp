// Zero-copy NCCL messages: the cut both sides agree on (see nccl_pieces.hpp).
#include "transport/nccl_pieces.hpp"

#include <algorithm>

namespace halox::detail {

namespace {

// Whether `p` points into message `m` of the buffer at `buf` (placement.hpp's in_message, which
// lives in the C++20 library; this file is built into the CUDA one too).
bool in_msg(const void* p, const std::byte* buf, const message& m) {
  const auto* b = static_cast<const std::byte*>(p);
  return b >= buf + m.offset && b < buf + m.offset + m.bytes;
}

bool aligned(std::uint64_t v) {
  return v % nccl_alignment == 0;
}

nccl_cut whole(std::uint64_t bytes) {
  nccl_cut c;
  c.pieces.push_back({0, bytes});
  return c;
}

}  // namespace

bool field_contiguous(const copy_op& op, bool sending) {
  const auto& stride = sending ? op.src_stride : op.dst_stride;
  index expect = index(op.elem);
  for (int k = op.ndims - 1; k >= 0; --k) {
    const auto uk = std::size_t(k);
    if (op.count[uk] == 1) continue;
    if (stride[uk] != expect) return false;
    expect *= op.count[uk];
  }
  return true;
}

nccl_cut cut_message(const nccl_side& sender, const nccl_side& receiver, std::uint64_t bytes) {
  if (!sender.direct && !receiver.direct) return whole(bytes);
  std::vector<std::uint64_t> edges;
  for (const nccl_side* s : {&sender, &receiver})
    if (s->direct) edges.insert(edges.end(), s->edges.begin(), s->edges.end());
  edges.push_back(0);
  edges.push_back(bytes);
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  nccl_cut c;
  if (edges.size() - 1 > nccl_max_pieces) return whole(bytes);  // too many calls: packed
  for (std::size_t k = 0; k + 1 < edges.size(); ++k)
    c.pieces.push_back({edges[k], edges[k + 1] - edges[k]});
  c.sender_direct = sender.direct;
  c.receiver_direct = receiver.direct;
  return c;
}

nccl_side describe_side(const std::vector<copy_op>& copies, const std::vector<gather_op>& gathers,
                        bool sending, const std::byte* buf, const message& m,
                        std::vector<nccl_direct_step>& steps) {
  steps.clear();
  nccl_side side;
  if (buf == nullptr || m.bytes == 0) return side;
  for (const auto& g : gathers)
    if (in_msg(g.buf, buf, m)) return side;  // index lists: packed
  for (const auto& op : copies) {
    const std::byte* in_buf = sending ? op.dst : op.src;
    if (op.ndims == 0 || !in_msg(in_buf, buf, m)) continue;
    std::byte* field = sending ? const_cast<std::byte*>(op.src) : op.dst;
    std::uint64_t n = op.elem;
    for (int k = 0; k < op.ndims; ++k) n *= std::uint64_t(op.count[std::size_t(k)]);
    const auto offset = std::uint64_t(in_buf - (buf + m.offset));
    const bool fast = aligned(reinterpret_cast<std::uintptr_t>(field)) && aligned(offset);
    if (op.reduce != nullptr || op.dev_reduce.op != 0 || !field_contiguous(op, sending) ||
        (!fast && n > nccl_unaligned_max))
      return side;
    steps.push_back({offset, n, field});
  }
  std::sort(steps.begin(), steps.end(),
            [](const nccl_direct_step& a, const nccl_direct_step& b) { return a.offset < b.offset; });
  std::uint64_t at = 0;  // the steps must tile the message
  for (const auto& s : steps) {
    if (s.offset != at) {
      steps.clear();
      return side;
    }
    at += s.bytes;
  }
  if (at != m.bytes || steps.size() > nccl_max_pieces) {
    steps.clear();
    return side;
  }
  side.direct = true;
  for (const auto& s : steps) side.edges.push_back(s.offset);
  side.edges.push_back(m.bytes);
  return side;
}

std::byte* piece_address(const nccl_piece& p, bool direct,
                         const std::vector<nccl_direct_step>& steps, std::byte* at) {
  if (!direct) return at + p.offset;
  for (const auto& s : steps)
    if (p.offset >= s.offset && p.offset < s.offset + s.bytes) return s.field + (p.offset - s.offset);
  return nullptr;  // (not reached: the cut's edges include every step's)
}

}  // namespace halox::detail
