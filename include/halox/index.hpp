#pragma once
/// @file
/// The index type of global cells and local entities.

#include <cstdint>

namespace halox {
/// Global cell index and local entity index (64-bit: extents and counts may exceed 2^31).
using index = std::int64_t;
}  // namespace halox
