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

/// Where each step's buffer side starts in its message buffer (bytes from the buffer's start),
/// in the order of the step lists: the program builder records them, bind_steps() points the
/// steps there once the buffers exist (program/message_buffers.hpp).
struct step_offsets {
  std::vector<std::size_t> copies, gathers;         ///< host steps (pack or unpack)
  std::vector<std::size_t> device, device_gathers;  ///< device steps (the first ones of the list)
};

/// A prepared exchange, independent of dimension and value types: messages, the copies that
/// pack, unpack and copy locally, and where in the message buffers each copy reads or writes.
/// It is layout only: how the messages travel is the route table's decision
/// (transport/routes.hpp), and the buffers are allocated after it (program/message_buffers.hpp).
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
  std::vector<copy_op> ordered_device_local;
  bool ordered_device_unpack = false;
  bool has_device_fields = false;  ///< the same on every rank: same field list everywhere
  bool has_host_fields = false;
  std::vector<std::vector<index>> index_lists;  ///< what gather steps point into
  /// The bytes of the send and receive buffers (every message, cache-line aligned) and where
  /// each step's buffer side lies in them.
  std::size_t send_bytes = 0, recv_bytes = 0;
  step_offsets send_offsets, recv_offsets;
  /// Unpack in peer order after every message arrived (reverse exchanges: deterministic sums).
  bool ordered_host_unpack = false;
  std::vector<std::shared_ptr<void>> fields;  ///< keeps the fields' memory alive
  declaration declared;                       ///< compared with every peer's at set-up
  exchange_options options;  ///< transport choices, the environment applied (same on no rank pair)
  std::string summary;       ///< what describe() prints first
  /// Host work run after every completed exchange, in order (physical boundary fills of host
  /// fields, see boundary/boundary.hpp). Prepared at set-up; running them allocates nothing.
  std::vector<std::function<void()>> after_exchange;
  /// Boundary rules of device fields: built-in fills that halox's kernels run on its stream after
  /// the unpack, and callbacks (see src/boundary/device_boundary.hpp).
  device_rules device_boundary;
};

/// Whether the fused kernels have work: device fields with messages or local copies.
inline bool has_device_steps(const exchange_program& p) {
  return !p.device_pack.empty() || !p.device_unpack.empty() || !p.device_gather.empty() ||
         !p.device_scatter.empty() || !p.ordered_device_local.empty();
}

}  // namespace halox::detail
