#pragma once
/// @file
/// The message buffers of an exchange, allocated once at set-up after the route table decided
/// how the messages travel (transport/routes.hpp; the allocation is in exchange_core.cpp), and
/// the one step that points the program's copies into them. The program is layout only
/// (program/program.hpp); the transports keep their own memory (shared-memory segments, CUDA IPC's
/// receive buffers) beside these.

#include <cstddef>
#include <memory>

#include "program/program.hpp"

namespace halox::detail {

struct message_buffers {
  /// What MPI moves from and into: host memory for host fields, device memory (gpu_aware with
  /// a CUDA-aware MPI, NCCL) or mapped pinned host memory with device fields.
  std::shared_ptr<std::byte> send, recv;
  /// Host staging by copies: the kernels pack into and unpack from these device copies, and
  /// one cudaMemcpyAsync per direction moves the messages to and from `send`/`recv`.
  std::shared_ptr<std::byte> device_send, device_recv;
  bool copy_staging = false;

  /// Where the kernels find the messages.
  std::byte* kernel_send() const { return copy_staging ? device_send.get() : send.get(); }
  std::byte* kernel_recv() const { return copy_staging ? device_recv.get() : recv.get(); }
};

/// The program with every step's buffer side pointed into `b` (its recorded offsets); the
/// program is not changed after this.
exchange_program bind_steps(exchange_program prog, const message_buffers& b);

}  // namespace halox::detail
