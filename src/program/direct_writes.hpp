#pragma once
/// @file
/// Direct writes: a message copied straight from the sender's owned cells into the receiver's
/// halo, one copy instead of a pack and an unpack. Set up here, once, for both transports that
/// map a peer's memory: shared memory (memfd blocks of host fields) and CUDA IPC (device
/// allocations). The algorithm, for one message:
///
/// 1. the receiver describes each of its unpack steps as a region of the memory it exports
///    (describe_regions);
/// 2. the sender matches each of its pack steps with the region of the same message bytes and
///    shape and fuses the two into one copy from its field into the receiver's, mapped here
///    (fuse_regions). The fused copies go into `placement` (program/placement.hpp) in place of
///    the pack steps; the receiver's unpack steps are dropped.
///
/// Shared memory, where either rank of a pair may run the copy, also runs both steps the other
/// way round: the sender describes its pack steps and the receiver fuses its unpack steps with
/// them (a copy from the sender's field into its own halo).
///
/// The transports find and map the exported memory (the callbacks below) and carry the
/// descriptions between the ranks; nothing here calls MPI or CUDA. C++17: the CUDA seam
/// (transport/peer_ipc.cu) includes it.

#include <cstddef>
#include <functional>
#include <vector>

#include "program/program.hpp"

namespace halox::detail {

/// Where a peer finds a block of exported memory, as its transport writes it (shared memory: a
/// process, a memfd descriptor and the block's size; CUDA IPC: a cudaIpcMemHandle_t). Opaque
/// here.
struct export_handle {
  alignas(8) unsigned char bytes[64];
};

/// One step of a message as a region of exported memory, sent as bytes to the other rank of the
/// message: `count` elements of `elem` bytes, at `block_offset` in the exported block `block`
/// with byte strides `field_stride`, and at `buf_offset` in the message with `buf_stride`.
struct direct_region {
  export_handle block{};
  unsigned long long block_offset = 0, buf_offset = 0, elem = 0;
  long long ndims = 0;
  long long count[max_copy_dims]{}, buf_stride[max_copy_dims]{}, field_stride[max_copy_dims]{};
};

/// Which end of a step is the message: pack steps write it (their `dst`), unpack steps read it
/// (their `src`); the other end is the field.
enum class step_kind { pack, unpack };

/// The steps of one message that may be fused: its non-empty strided copies, in the program's
/// order, and the message's first byte in the buffer they point into. `ops` is empty where the
/// message cannot be written directly: index-list steps, steps that combine (reverse exchanges),
/// or no step at all.
struct message_steps {
  step_kind kind = step_kind::pack;
  const std::byte* at = nullptr;
  std::vector<const copy_op*> ops;
};

/// The host steps of send (pack) or receive (unpack) message `m` of `prog`, in the buffer `buf`
/// its host steps point into (message_buffers' send or recv).
message_steps host_message_steps(const exchange_program& prog, step_kind kind, std::size_t m,
                                 const std::byte* buf);
/// The device steps of message `m` of the buffer at `buf` (the buffer the program's device steps
/// point into: the device copies under copy staging).
message_steps device_message_steps(const exchange_program& prog, step_kind kind,
                                   const std::byte* buf, const message& m);

/// Finds the exported block holding `p`: its handle and its first byte; false where `p` is not
/// in memory this rank can export.
using find_export =
    std::function<bool(const std::byte* p, export_handle& block, const std::byte*& base)>;
/// Maps a peer's exported block here: its first byte, or null where it cannot be mapped.
using map_export = std::function<std::byte*(const export_handle& block)>;

/// Each step of `steps` as a region of exported memory, in their order (the field end: where an
/// unpack step writes, where a pack step reads). Empty where `steps` is, or where any field end
/// is not in exported memory.
std::vector<direct_region> describe_regions(const message_steps& steps, const find_export& find);

/// Each step of `steps` matched with the peer's region of the same message bytes (offset,
/// element size, extents and message strides) and fused with it into one copy whose message end
/// is the peer's field (mapped with `map`), in the order of `steps`. Empty unless every step
/// matches a region, every region a step, and every block maps.
std::vector<copy_op> fuse_regions(const message_steps& steps,
                                  const std::vector<direct_region>& peer, const map_export& map);

}  // namespace halox::detail
