#include "halox/field/memory.hpp"

#include <cstring>
#include <new>

#include "halox/core/error.hpp"

namespace halox::detail {

#ifndef HALOX_ENABLE_CUDA
bool cuda_enabled() noexcept {
  return false;
}
int device_count() noexcept {
  return 0;
}
#endif

std::shared_ptr<std::byte> allocate_host(std::size_t bytes) {
  const std::size_t n = bytes == 0 ? 64 : bytes;
  auto* p = static_cast<std::byte*>(::operator new (n, std::align_val_t{64}, std::nothrow));
  require(p != nullptr, "host allocation of {} bytes failed", bytes);
  std::memset(p, 0, n);
  return std::shared_ptr<std::byte>(
      p, [](std::byte* q) { ::operator delete (q, std::align_val_t{64}); });
}

#ifdef HALOX_ENABLE_CUDA
std::shared_ptr<std::byte> allocate_device(std::size_t bytes);  // src/field/device_memory.cu
#endif

std::shared_ptr<std::byte> allocate(memory_space space, std::size_t bytes) {
  if (space == memory_space::host) return allocate_host(bytes);
#ifdef HALOX_ENABLE_CUDA
  return allocate_device(bytes);
#else
  fail("device memory requested but this halox was built without CUDA (HALOX_ENABLE_CUDA=OFF)");
#endif
}

}  // namespace halox::detail
