// The program builder's compiled half (see halox/exchange/program_builder.hpp).
#include "exchange/program_builder.hpp"

#include <utility>

#include "halox/core/format.hpp"

namespace halox::detail {

void program_builder::begin(side s, int peer) {
  auto& msgs = s == send ? p_.sends : p_.recvs;
  auto& ranges = s == send ? p_.pack_range : p_.unpack_range;
  auto& st = s == send ? p_.pack : p_.unpack;
  offset_[s] = (offset_[s] + 63) / 64 * 64;  // each message starts on a cache line
  msgs.push_back(message{peer, offset_[s], 0});
  ranges.push_back({st.copies.size(), 0, st.gathers.size(), 0});
}

void program_builder::add(side s, const copy_op& op, std::size_t bytes, bool on_device) {
  align(s, op.elem);
  if (on_device) {
    (s == send ? p_.device_pack : p_.device_unpack).push_back(op);
    at(s).device.push_back(offset_[s]);
    grow(s, bytes, 0, 0);
    return;
  }
  auto& st = s == send ? p_.pack : p_.unpack;
  st.copies.push_back(op);
  at(s).copies.push_back(offset_[s]);
  grow(s, bytes, 1, 0);
}

void program_builder::add(side s, const gather_op& op, std::size_t bytes, bool on_device) {
  align(s, op.elem);
  if (on_device) {
    (s == send ? p_.device_gather : p_.device_scatter).push_back(op);
    at(s).device_gathers.push_back(offset_[s]);
    grow(s, bytes, 0, 0);
    return;
  }
  auto& st = s == send ? p_.pack : p_.unpack;
  st.gathers.push_back(op);
  at(s).gathers.push_back(offset_[s]);
  grow(s, bytes, 0, 1);
}

exchange_program program_builder::finish(const std::vector<memory_space>& spaces, bool reverse) {
  p_.ordered_host_unpack = p_.ordered_device_unpack = reverse;
  for (const auto s : spaces)
    (s == memory_space::device ? p_.has_device_fields : p_.has_host_fields) = true;
  p_.send_bytes = offset_[send];
  p_.recv_bytes = offset_[recv];
  summarize(spaces.size());
  return std::move(p_);
}

void program_builder::summarize(std::size_t field_count) {
  std::size_t sb = 0, rb = 0;
  for (const auto& m : p_.sends) sb += m.bytes;
  for (const auto& m : p_.recvs) rb += m.bytes;
  p_.summary = detail::format(
      "{} field(s); sends {} message(s) {} B; receives {} message(s) {} B; {} local copies; "
      "{} pack / {} unpack steps; {} / {} device copies (fused kernels)",
      field_count, p_.sends.size(), sb, p_.recvs.size(), rb, p_.local_ops.size(),
      p_.pack.copies.size() + p_.pack.gathers.size(),
      p_.unpack.copies.size() + p_.unpack.gathers.size(),
      p_.device_pack.size() + p_.device_gather.size(),
      p_.device_unpack.size() + p_.device_scatter.size());
}

// Every step starts at a multiple of its element's alignment unit (the widest power of two up
// to 16 dividing the element size), so device kernels can copy in whole words. Both sides lay
// out the same steps, so they agree on the padding.
void program_builder::align(side s, std::size_t elem) {
  std::size_t unit = 16;
  while (unit > 1 && elem % unit != 0) unit /= 2;
  const std::size_t pad = (unit - offset_[s] % unit) % unit;
  if (pad != 0) grow(s, pad, 0, 0);
}

void program_builder::grow(side s, std::size_t bytes, std::size_t copies, std::size_t gathers) {
  offset_[s] += bytes;
  auto& msgs = s == send ? p_.sends : p_.recvs;
  auto& ranges = s == send ? p_.pack_range : p_.unpack_range;
  msgs.back().bytes += bytes;
  ranges.back().cn += copies;
  ranges.back().gn += gathers;
}

}  // namespace halox::detail
