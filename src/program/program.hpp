#pragma once
/// @file
/// A prepared exchange, independent of dimension and value types: what the communication
/// object runs. Plain data, C++17, no Boost: the CUDA seams read it too.

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "halox/core/options.hpp"
#include "halox/field/memory.hpp"
#include "program/boundary_ops.hpp"
#include "program/ops.hpp"

namespace halox::detail {

/// One message to or from one peer: `bytes` bytes at `offset` in the send or receive buffer.
struct message {
  int peer = 0;
  std::size_t offset = 0;
  std::size_t bytes = 0;
};

/// The bytes a buffer holding `msgs` spans: the largest end of a message.
inline std::size_t extent_of(const std::vector<message>& msgs) {
  std::size_t e = 0;
  for (const auto& m : msgs)
    if (m.offset + m.bytes > e) e = m.offset + m.bytes;
  return e;
}

/// What a rank declared for an exchange, as (item, value) pairs in a fixed order ("stencil",
/// "field #0", ...): each rank compares it with its peers' at set-up.
using declaration = std::vector<std::pair<std::string, std::string>>;

/// A prepared exchange, independent of dimension and value types: messages, the copies that
/// pack, unpack and copy locally, and the buffers they point into.
struct exchange_program {
  /// Copies of one kind: strided regions (structured) and index lists (unstructured).
  struct steps {
    std::vector<copy_op> copies;
    std::vector<gather_op> gathers;
  };
  /// The steps of one message: `copies[c0, c0 + cn)` and `gathers[g0, g0 + gn)`.
  struct op_range {
    std::size_t c0 = 0, cn = 0, g0 = 0, gn = 0;
  };
  std::vector<message> sends, recvs;
  std::vector<op_range> pack_range;    ///< per send message
  std::vector<op_range> unpack_range;  ///< per receive message
  steps pack, unpack;
  std::vector<copy_op> local_ops;
  /// Copies of device fields: packing and local copies (one fused launch), unpacking (one).
  std::vector<copy_op> device_pack, device_unpack;
  std::vector<gather_op> device_gather, device_scatter;  ///< same launches, index lists
  /// Reverse exchanges of device fields: several contributions may land on one owned cell, so
  /// local copies and unpack steps run one launch each, in the fixed order (deterministic).
  std::vector<copy_op> device_local_ordered;
  bool ordered_device_unpack = false;
  bool device_buffers = false;  ///< message buffers in device memory (gpu_aware, nccl)
  /// How this rank stages device messages outside CUDA IPC (choose_staging: gpu_aware,
  /// host_staged or nccl). NCCL, forced or automatic, needs every rank: the route table
  /// (src/transport/routes.hpp) confirms it at set-up, or falls back to host staging by copies.
  staging staged = staging::host_staged;
  /// host_staged by copies: kernels use device_send/device_recv, copied to/from the host
  /// buffers with cudaMemcpyAsync (`send_extent`/`recv_extent` bytes).
  bool copy_staging = false;
  std::shared_ptr<std::byte> device_send, device_recv;
  std::size_t send_extent = 0, recv_extent = 0;
  bool has_device_fields = false;  ///< the same on every rank: same field list everywhere
  bool has_host_fields = false;
  std::vector<std::vector<index>> index_lists;  ///< what gather steps point into
  /// Unpack in peer order after every message arrived (reverse exchanges: deterministic sums).
  bool ordered_unpack = false;
  std::shared_ptr<std::byte> send_buf, recv_buf;  ///< 64-byte aligned host memory
  std::vector<std::shared_ptr<void>> fields;      ///< keeps the fields' memory alive
  declaration declared;                           ///< compared with every peer's at set-up
  exchange_options options;  ///< transport choices, the environment applied (same on no rank pair)
  std::string summary;       ///< what describe() prints first
  std::string path;          ///< how messages travel, for describe() (as compiled, before the
                             ///< node-local transports take some of them)
  /// Host work run after every completed exchange, in order (physical boundary fills of host
  /// fields, see boundary/boundary.hpp). Prepared at set-up; running them allocates nothing.
  std::vector<std::function<void()>> after_exchange;
  /// Boundary rules of device fields: built-in fills that halox's kernels run on its stream after
  /// the unpack, and callbacks (see src/boundary/device_boundary.hpp).
  device_rules device_boundary;
};

}  // namespace halox::detail
