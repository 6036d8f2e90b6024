#pragma once
/// @file
/// The index type of global cells and local entities, its limits, and the overflow-checked
/// arithmetic that sizes, volumes, strides and byte counts go through before they are trusted.

#include <cstdint>
#include <limits>
#include <optional>

namespace halox {
/// Global cell index and local entity index (64-bit: extents and counts may exceed 2^31).
using index = std::int64_t;

/// The largest global extent a structured domain accepts (2^61). Below it, every coordinate
/// the plan computes (a box grown by a halo width of up to `INT_MAX` cells, and its periodic
/// images) fits in an `index`.
inline constexpr index max_extent = index(1) << 61;

namespace detail {
/// `a * b`, or nothing when the product does not fit in an `index`.
constexpr std::optional<index> checked_mul(index a, index b) noexcept {
  index r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}
/// `a + b`, or nothing when the sum does not fit in an `index`.
constexpr std::optional<index> checked_add(index a, index b) noexcept {
  index r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
/// `a - b`, or nothing when the difference does not fit in an `index`.
constexpr std::optional<index> checked_sub(index a, index b) noexcept {
  index r = 0;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}
/// The product of `a` (empty when a factor already overflowed) and `b`.
constexpr std::optional<index> checked_mul(std::optional<index> a, index b) noexcept {
  return a ? checked_mul(*a, b) : std::nullopt;
}
/// The sum of `a` (empty when an operand already overflowed) and `b`.
constexpr std::optional<index> checked_add(std::optional<index> a, index b) noexcept {
  return a ? checked_add(*a, b) : std::nullopt;
}
/// The largest `index`, as messages about overflow quote it.
inline constexpr index index_max = std::numeric_limits<index>::max();
}  // namespace detail
}  // namespace halox
