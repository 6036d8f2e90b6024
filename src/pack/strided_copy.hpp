#pragma once
/// @file
/// Host pack/unpack: one copy engine moves an N-dimensional strided block of elements into a
/// contiguous buffer, out of it, or between two strided blocks (local and periodic copies).

#include <cstddef>

#include "halox/core/index.hpp"
#include "program/ops.hpp"

namespace halox::detail {

/// Which side's memory order chooses the loop order (the side that is a user field).
enum class loop_order { by_src, by_dst };

/// Normalises a copy: drops unit dimensions, orders loops by the chosen side's strides
/// (largest outermost), and merges dimensions that are contiguous on both sides.
copy_op make_copy_op(const std::byte* src, std::byte* dst, int ndims, std::size_t elem,
                     const index* count, const index* src_stride, const index* dst_stride,
                     loop_order order);

/// Runs the copy. Contiguous runs become one memcpy; other inner loops copy fixed-size elements.
void run(const copy_op& op) noexcept;

/// field[idx[e]] → buffer
void gather(const gather_op& op) noexcept;
/// buffer → field[idx[e]] (combined with `reduce` when set)
void scatter(const gather_op& op) noexcept;

}  // namespace halox::detail
