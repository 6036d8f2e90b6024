#pragma once
/// @file
/// Host pack/unpack: one copy engine moves an N-dimensional strided block of elements into a
/// contiguous buffer, out of it, or between two strided blocks (local and periodic copies).

#include <array>
#include <cstddef>

#include "halox/index.hpp"
#include "halox/pack/reduction.hpp"

namespace halox::detail {

/// Up to 4 spatial dimensions plus the component dimension.
inline constexpr int max_copy_rank = 5;

/// A copy of `count[0] x ... x count[rank-1]` elements of `elem` bytes each; byte strides per
/// dimension on both sides; dimension `rank-1` is the innermost loop.
struct copy_op {
  const std::byte* src = nullptr;
  std::byte* dst = nullptr;
  int rank = 0;
  std::size_t elem = 0;
  std::array<index, max_copy_rank> count{};
  std::array<index, max_copy_rank> src_stride{};
  std::array<index, max_copy_rank> dst_stride{};
  reduce_fn reduce = nullptr;  ///< combine into dst instead of overwriting it (reverse exchange)
  device_reduce dev_reduce;    ///< the same, for the GPU kernels
};

/// Which side's memory order chooses the loop order (the side that is a user field).
enum class loop_order { by_src, by_dst };

/// Normalises a copy: drops unit dimensions, orders loops by the chosen side's strides
/// (largest outermost), and merges dimensions that are contiguous on both sides.
copy_op make_copy_op(const std::byte* src, std::byte* dst, int rank, std::size_t elem,
                     const index* count, const index* src_stride, const index* dst_stride,
                     loop_order order);

/// Runs the copy. Contiguous runs become one memcpy; other inner loops copy fixed-size elements.
void run(const copy_op& op) noexcept;

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

/// field[idx[e]] → buffer
void gather(const gather_op& op) noexcept;
/// buffer → field[idx[e]] (combined with `reduce` when set)
void scatter(const gather_op& op) noexcept;

}  // namespace halox::detail
