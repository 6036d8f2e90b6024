#pragma once
/// @file
/// The index type of global cells and local entities.

#include <cstdint>

namespace halox {
/// Global cell index and local entity index (64-bit: extents and counts may exceed 2^31).
using index = std::int64_t;

/// The most cells (and bytes of one allocation) halox accepts along one dimension, in a global
/// box or in a field: 2^62, so that coordinates plus halo widths and sums of volumes stay
/// inside `index` without overflow.
inline constexpr index max_cells = index(1) << 62;

namespace detail {
/// `out = a * b` and true, or false when the product would exceed `max_cells` (a, b >= 0).
constexpr bool checked_mul(index a, index b, index& out) {
  return !__builtin_mul_overflow(a, b, &out) && out <= max_cells;
}
}  // namespace detail
}  // namespace halox
