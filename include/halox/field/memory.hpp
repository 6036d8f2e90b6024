#pragma once
/// @file
/// Where a field's memory lives, and the allocation seam between host and device.

#include <cstddef>
#include <memory>
#include <new>
#include <string>

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

/// Host memory the other ranks of the node can map (a `memfd` mapping; ordinary memory where the
/// system has none), zero-initialised, aligned to 64 bytes. Fields wrapped over it exchange between
/// ranks of a node with one copy, straight from a neighbour's owned cells into the halo, as
/// halox's own fields do. Each allocation is a mapping of whole pages: meant for a solver's
/// arrays, allocated once. Throws halox::error when the allocation fails.
void* allocate_node_shared(std::size_t bytes);
/// Frees allocate_node_shared() memory (null: nothing).
void free_node_shared(void* p) noexcept;

/// A standard allocator over allocate_node_shared():
/// `std::vector<double, halox::node_shared_allocator<double>> u(n);` gives an existing code's
/// arrays the one-copy shared-memory path when it wraps them.
template <class T>
struct node_shared_allocator {
  using value_type = T;
  node_shared_allocator() noexcept = default;
  template <class U>
  node_shared_allocator(const node_shared_allocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    if (n > std::size_t(-1) / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(allocate_node_shared(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t) noexcept { free_node_shared(p); }
  template <class U>
  bool operator==(const node_shared_allocator<U>&) const noexcept {
    return true;
  }
};

namespace detail {
/// Allocates `bytes` zero-initialised bytes in `space`, aligned to 64 bytes; the returned
/// pointer frees itself. Throws halox::error when the space is unavailable or allocation fails.
std::shared_ptr<std::byte> allocate(memory_space space, std::size_t bytes);
/// Host memory of an owned field: like allocate(host, bytes), but in a `memfd` mapping that the
/// other ranks of the node can map too (shared-memory exchanges then copy straight from a
/// neighbour's interior into the halo). Falls back to allocate(host, bytes) where the system
/// has no memfd (or no descriptor to spare).
std::shared_ptr<std::byte> allocate_shareable(std::size_t bytes);
/// A block of allocate_shareable() memory: its descriptor (valid while the memory lives), its
/// first byte and its size.
struct shareable_block {
  int fd = -1;
  const std::byte* base = nullptr;
  std::size_t size = 0;
};
/// Whether `p` points into allocate_shareable() memory that is still alive; if so, `out` is its
/// block.
bool find_shareable(const void* p, shareable_block& out);
/// Why `bytes` bytes at `p` cannot be a field's memory in `space` ("" where they can): device
/// memory given as host memory or the other way round, or a device allocation shorter than
/// `bytes`, as far as CUDA can tell (host memory's extent cannot be checked).
std::string memory_problem(const void* p, std::size_t bytes, memory_space space);
/// Whether this build of halox can allocate and use device memory.
bool cuda_enabled() noexcept;
/// Number of CUDA devices this process can use (0 without CUDA or without a GPU).
int device_count() noexcept;
}  // namespace detail

}  // namespace halox
