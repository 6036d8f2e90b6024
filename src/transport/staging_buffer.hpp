#pragma once
/// @file
/// Staging memory whose size changes from one use to the next (a chain's payloads and received
/// data): host, pinned host or device memory that grows geometrically and never shrinks, so a
/// steady state of similar sizes allocates nothing. Compiles without nvcc.

#include <cstddef>
#include <memory>

namespace halox::detail {

/// `bytes` bytes of page-locked host memory, mapped into the device address space and portable
/// (gpu/pinned.hpp), zero-initialised; the pointer frees itself. The one allocation of pinned
/// staging: an exchange's mapped message buffers (the pack kernel writes them, MPI reads them)
/// and a chain's staging buffers. `what` names it in errors ("cudaHostAlloc(WHAT) failed"),
/// `rank` too (negative: unknown). Throws halox::error in a build without CUDA.
std::shared_ptr<std::byte> allocate_pinned(std::size_t bytes, const char* what, int rank);

/// Memory in one place that grows to what is asked and never shrinks; its contents are not kept
/// when it grows.
class staging_buffer {
 public:
  enum class place { host, pinned, device };

  staging_buffer() = default;
  /// `what` and `rank` name pinned allocations in errors (allocate_pinned).
  staging_buffer(place where, const char* what, int rank)
      : where_(where), what_(what), rank_(rank) {}

  std::byte* get() const { return p_.get(); }
  std::size_t capacity() const { return cap_; }
  /// Room for `bytes` bytes: at least twice the old capacity where it must grow. True when it
  /// had to allocate (the old memory is freed first).
  bool reserve(std::size_t bytes);

 private:
  std::shared_ptr<std::byte> p_;
  std::size_t cap_ = 0;
  place where_ = place::host;
  const char* what_ = "staging";
  int rank_ = -1;
};

}  // namespace halox::detail
