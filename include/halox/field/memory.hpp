#pragma once
/// @file
/// Where a field's memory lives, and the allocation seam between host and device.

#include <cstddef>
#include <memory>

namespace halox {

/// Memory space of a field's data.
enum class memory_space { host, device };
/// Shorthand for `memory_space::host`.
inline constexpr memory_space host = memory_space::host;
/// Shorthand for `memory_space::device` (CUDA device memory; needs `HALOX_ENABLE_CUDA`).
inline constexpr memory_space device = memory_space::device;

constexpr const char* to_string(memory_space s) {
  return s == memory_space::host ? "host" : "device";
}

namespace detail {
/// Allocates `bytes` zero-initialised bytes in `space`, aligned to 64 bytes; the returned
/// pointer frees itself. Throws halox::error when the space is unavailable or allocation fails.
std::shared_ptr<std::byte> allocate(memory_space space, std::size_t bytes);
/// Whether this build of halox can allocate and use device memory.
bool cuda_enabled() noexcept;
/// Number of CUDA devices this process can use (0 without CUDA or without a GPU).
int device_count() noexcept;
}  // namespace detail

}  // namespace halox
