#pragma once
/// @file
/// The steps of a compiled exchange program: an N-dimensional strided copy (structured
/// fields) and an index-list gather/scatter (unstructured fields). Plain data, C++17: the host
/// copy engine (pack/strided_copy.hpp) and the GPU lowering both read it.

#include <array>
#include <cstddef>
#include <cstdint>

#include "halox/core/index.hpp"
#include "halox/core/reduction.hpp"

namespace halox::detail {

/// Combines `n` elements read from `src` (byte stride `ss`) into `dst` (byte stride `ds`).
using reduce_fn = void (*)(std::byte* dst, const std::byte* src, index n, index ds, index ss);

/// How a GPU kernel combines: `op` 0 copy (replace), 1 sum, 2 min, 3 max; `type` 1 double,
/// 2 float, 3 int32, 4 int64, 5 uint32, 6 uint64 (0: no device reduction for this type).
struct device_reduce {
  int op = 0;
  int type = 0;
};

/// Both ways to combine values under a reduction: on the host and in the GPU kernels.
struct combiner {
  reduce_fn host = nullptr;
  device_reduce device;
};

/// Up to 4 spatial dimensions plus the component dimension.
inline constexpr int max_copy_dims = 5;

/// A copy of `count[0] x ... x count[ndims-1]` elements of `elem` bytes each; byte strides per
/// dimension on both sides; dimension `ndims-1` is the innermost loop.
struct copy_op {
  const std::byte* src = nullptr;
  std::byte* dst = nullptr;
  int ndims = 0;
  std::size_t elem = 0;
  std::array<index, max_copy_dims> count{};
  std::array<index, max_copy_dims> src_stride{};
  std::array<index, max_copy_dims> dst_stride{};
  reduce_fn reduce = nullptr;  ///< combine into dst instead of overwriting it (reverse exchange)
  device_reduce dev_reduce;    ///< the same, for the GPU kernels
  /// GPU only: the buffer side is a message of flagged words (CUDA IPC, small messages): each
  /// 4-byte word of the message travels in an 8-byte slot with the exchange's number beside it,
  /// at twice its offset in the message. flagged_write: `dst` is such a buffer (the pack);
  /// flagged_read: `src` is (the unpack, which waits for each word's number).
  int flagged = 0;
};
inline constexpr int flagged_write = 1, flagged_read = 2;

/// The element size, both addresses and every stride of `op`, or-ed: its lowest set bit is the
/// widest word every access of the copy is aligned to.
inline std::uint64_t alignment_bits(const copy_op& op) {
  std::uint64_t bits =
      op.elem | reinterpret_cast<std::uintptr_t>(op.src) | reinterpret_cast<std::uintptr_t>(op.dst);
  for (int k = 0; k < op.ndims; ++k)
    bits |=
        std::uint64_t(op.src_stride[std::size_t(k)]) | std::uint64_t(op.dst_stride[std::size_t(k)]);
  return bits;
}

/// Copies the `ncomp` components of entities `idx[0..n)` of an entity array to or from a
/// contiguous buffer (entity-major, components innermost): unstructured pack and unpack.
struct gather_op {
  std::byte* field = nullptr;  ///< entity 0, component 0
  const index* idx = nullptr;  ///< local entity indices
  index n = 0;
  std::size_t elem = 0;
  int ncomp = 1;
  index entity_stride = 0;  ///< bytes between entities
  index comp_stride = 0;    ///< bytes between components
  std::byte* buf = nullptr;
  reduce_fn reduce = nullptr;  ///< unpack combines instead of overwriting (reverse exchange)
  device_reduce dev_reduce;    ///< the same, for the GPU kernels
};

}  // namespace halox::detail
