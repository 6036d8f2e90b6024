#pragma once
/// @file
/// Placing a compiled program. At set-up the transports decide where each message's bytes live
/// at run time (a shared-memory segment, a receiver's GPU memory through CUDA IPC, one of two
/// copies of a buffer, or nowhere: written straight into the receiver's halo). The program's
/// steps are placed against that decision once, here, into the steps an exchange runs; the
/// program itself is never changed. Plain data, C++17: the CUDA seams read it too.

#include <cstddef>
#include <vector>

#include "program/program.hpp"

namespace halox::detail {

/// Where a transport put the messages of a program (for one copy of its buffers, where the
/// transport alternates between two).
struct placement {
  /// For message k of the program's sends (receives): the address of its first byte at run
  /// time; null, or a vector shorter than k, where the program's own buffer keeps it.
  std::vector<std::byte*> send_at, recv_at;
  /// Messages written straight into the receivers' halos (program/direct_writes.hpp; under
  /// NCCL, moved straight from and into the fields). Device steps: those of a direct message
  /// are dropped, and the fused copies of `fused_send` run in the pack launch (CUDA IPC).
  std::vector<char> send_direct, recv_direct;
  /// Per send (receive) message, the fused copies, field to field, that replace its host pack
  /// (unpack) steps, and the device pack steps of a direct send; empty, or a vector shorter than
  /// the message's index, where the message keeps its steps. Shared memory has both lists: the
  /// sender's copy into the receiver's halo and the same copy as the receiver runs it.
  std::vector<std::vector<copy_op>> fused_send, fused_recv;
  /// Device steps of messages of flagged words (copy_op::flagged; CUDA IPC): the message at
  /// `send_at`/`recv_at` holds twice its bytes, every word in an 8-byte slot beside the
  /// exchange's number. Empty, or shorter than the message's index, where it is plain.
  std::vector<char> send_flagged, recv_flagged;
};

/// Whether every device step of message `m` (of the buffer `buf`; `kind`: pack or unpack) can
/// move flagged words: strided copies of whole 4-byte words (element sizes, strides and addresses
/// multiples of 4), no gather or scatter, no reduction, at least one copy.
bool flaggable(const exchange_program& prog, bool pack, const std::byte* buf, const message& m);

/// Whether `p` points into message `m` of the buffer at `buf`.
bool in_message(const void* p, const std::byte* buf, const message& m);

/// The host steps of the program (prog.pack, prog.unpack) as `where` puts the messages;
/// `buf`: the buffer the program's steps point into (message_buffers' send or recv).
exchange_program::steps place_pack(const exchange_program& prog, const std::byte* buf,
                                   const placement& where);
exchange_program::steps place_unpack(const exchange_program& prog, const std::byte* buf,
                                     const placement& where);

/// The device steps of one exchange: what the fused pack and unpack launches run.
struct device_steps {
  std::vector<copy_op> pack, unpack;
  std::vector<gather_op> gather, scatter;
};

/// The program's device steps as `where` puts the messages. `send_buf` and `recv_buf` are the
/// buffers the program's device steps point into (the device copies under copy staging).
device_steps place_device(const exchange_program& prog, const placement& where,
                          const std::byte* send_buf, const std::byte* recv_buf);

}  // namespace halox::detail
