// The program builder's compiled half (see halox/exchange/program_builder.hpp).
#include "exchange/program_builder.hpp"

#include <algorithm>
#include <utility>

#include "halox/core/format.hpp"
#include "transport/staging.hpp"
#include "transport/staging_buffer.hpp"

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
    device_off_[s].push_back(offset_[s]);
    grow(s, bytes, 0, 0);
    return;
  }
  auto& st = s == send ? p_.pack : p_.unpack;
  st.copies.push_back(op);
  copy_off_[s].push_back(offset_[s]);
  grow(s, bytes, 1, 0);
}

void program_builder::add(side s, const gather_op& op, std::size_t bytes, bool on_device) {
  align(s, op.elem);
  if (on_device) {
    (s == send ? p_.device_gather : p_.device_scatter).push_back(op);
    device_gather_off_[s].push_back(offset_[s]);
    grow(s, bytes, 0, 0);
    return;
  }
  auto& st = s == send ? p_.pack : p_.unpack;
  st.gathers.push_back(op);
  gather_off_[s].push_back(offset_[s]);
  grow(s, bytes, 0, 1);
}

exchange_program program_builder::finish(const std::vector<memory_space>& spaces, bool reverse) {
  p_.ordered_unpack = p_.ordered_device_unpack = reverse;
  for (const auto s : spaces)
    (s == memory_space::device ? p_.has_device_fields : p_.has_host_fields) = true;
  // With device steps the kernels write and read the messages in place: in device memory
  // (gpu_aware with a CUDA-aware MPI) or mapped pinned host memory (host_staged).
  const bool gpu = !p_.device_pack.empty() || !p_.device_unpack.empty() ||
                   !p_.device_gather.empty() || !p_.device_scatter.empty() ||
                   !p_.device_local_ordered.empty();
  p_.path = gpu ? decide_staging() : std::string("host fields only: packed on the CPU");
  allocate_buffers(gpu);
  point_steps();
  summarize(spaces.size());
  return std::move(p_);
}

std::string program_builder::decide_staging() {
  const bool host_steps = !p_.pack.copies.empty() || !p_.pack.gathers.empty() ||
                          !p_.unpack.copies.empty() || !p_.unpack.gathers.empty();
  auto choice = detail::choose_staging(p_.options.device_staging, p_.has_host_fields);
  // NCCL is confirmed (or undone) by every rank at the object's set-up (the route table).
  p_.staged = choice.policy;
  if (choice.device_buffers && host_steps) {  // the CPU packs host fields into the buffers
    choice.device_buffers = false;
    choice.why += "; host fields share the messages: buffers in mapped pinned memory";
  }
  // host_staged by copies: the kernels pack into device memory and cudaMemcpyAsync moves the
  // messages through pinned host memory, in pieces overlapping the MPI transfers
  // (transport/staging_pipeline.hpp). Chosen for messages over one chunk, or by
  // host_staging_copies; only without host fields (they pack into the host buffer).
  const std::size_t chunk = p_.options.staging_chunk_bytes;
  std::size_t largest = 0;
  for (const auto* list : {&p_.sends, &p_.recvs})
    for (const auto& m : *list) largest = std::max(largest, m.bytes);
  const bool large = chunk > 0 && largest > chunk;
  if (choice.policy == staging::host_staged && !host_steps &&
      (p_.options.host_staging_copies || large)) {
    p_.copy_staging = true;
    choice.why = large ? detail::format(
                             "pack into device memory, cudaMemcpyAsync through pinned host "
                             "memory in pieces of up to {} B overlapping MPI",
                             chunk)
                       : std::string(
                             "pack into device memory, cudaMemcpyAsync through pinned host "
                             "memory (host_staging_copies)");
  }
  p_.device_buffers = choice.device_buffers;
  return detail::format("{} ({})", to_string(choice.policy), choice.why);
}

void program_builder::allocate_buffers(bool gpu) {
  auto buffer = [&](std::size_t bytes) {
    if (!gpu) return allocate(memory_space::host, bytes);
    return p_.device_buffers ? allocate(memory_space::device, bytes)
                             : allocate_pinned(bytes, "mapped", -1);
  };
  p_.send_buf = buffer(offset_[send]);
  p_.recv_buf = buffer(offset_[recv]);
  if (!p_.copy_staging) return;
  p_.device_send = allocate(memory_space::device, offset_[send]);
  p_.device_recv = allocate(memory_space::device, offset_[recv]);
  p_.send_extent = offset_[send];
  p_.recv_extent = offset_[recv];
}

void program_builder::point_steps() {
  // Where the kernels find the messages: the message buffers, or their device copies.
  std::byte* dsend = p_.copy_staging ? p_.device_send.get() : p_.send_buf.get();
  std::byte* drecv = p_.copy_staging ? p_.device_recv.get() : p_.recv_buf.get();
  // Device pack steps are the first device_off_[send].size() entries (local copies follow).
  for (std::size_t k = 0; k < device_off_[send].size(); ++k)
    p_.device_pack[k].dst = dsend + device_off_[send][k];
  for (std::size_t k = 0; k < device_off_[recv].size(); ++k)
    p_.device_unpack[k].src = drecv + device_off_[recv][k];
  for (std::size_t k = 0; k < p_.device_gather.size(); ++k)
    p_.device_gather[k].buf = dsend + device_gather_off_[send][k];
  for (std::size_t k = 0; k < p_.device_scatter.size(); ++k)
    p_.device_scatter[k].buf = drecv + device_gather_off_[recv][k];
  for (std::size_t k = 0; k < p_.pack.copies.size(); ++k)
    p_.pack.copies[k].dst = p_.send_buf.get() + copy_off_[send][k];
  for (std::size_t k = 0; k < p_.unpack.copies.size(); ++k)
    p_.unpack.copies[k].src = p_.recv_buf.get() + copy_off_[recv][k];
  for (std::size_t k = 0; k < p_.pack.gathers.size(); ++k)
    p_.pack.gathers[k].buf = p_.send_buf.get() + gather_off_[send][k];
  for (std::size_t k = 0; k < p_.unpack.gathers.size(); ++k)
    p_.unpack.gathers[k].buf = p_.recv_buf.get() + gather_off_[recv][k];
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
