// Pointing a program's steps into its message buffers (see program/message_buffers.hpp).
#include "program/message_buffers.hpp"

namespace halox::detail {

namespace {
template <class Op, class Ptr>
void point(std::vector<Op>& ops, const std::vector<std::size_t>& at, std::byte* base, Ptr ptr) {
  for (std::size_t k = 0; k < at.size(); ++k) ptr(ops[k]) = base + at[k];
}
}  // namespace

exchange_program bind_steps(exchange_program p, const message_buffers& b) {
  const auto dst = [](copy_op& op) -> std::byte*& { return op.dst; };
  const auto src = [](copy_op& op) -> const std::byte*& { return op.src; };
  const auto buf = [](gather_op& g) -> std::byte*& { return g.buf; };
  // Device pack steps are the first entries of device_pack (the local copies follow).
  point(p.device_pack, p.send_offsets.device, b.kernel_send(), dst);
  point(p.device_unpack, p.recv_offsets.device, b.kernel_recv(), src);
  point(p.device_gather, p.send_offsets.device_gathers, b.kernel_send(), buf);
  point(p.device_scatter, p.recv_offsets.device_gathers, b.kernel_recv(), buf);
  point(p.pack.copies, p.send_offsets.copies, b.send.get(), dst);
  point(p.unpack.copies, p.recv_offsets.copies, b.recv.get(), src);
  point(p.pack.gathers, p.send_offsets.gathers, b.send.get(), buf);
  point(p.unpack.gathers, p.recv_offsets.gathers, b.recv.get(), buf);
  return p;
}

}  // namespace halox::detail
