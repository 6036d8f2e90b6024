// Device allocation for halox-owned fields (built only with HALOX_ENABLE_CUDA).
#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "gpu/check.hpp"
#include "gpu/cuda_driver.hpp"
#include "gpu/stream.hpp"
#include "halox/core/error.hpp"
#include "halox/field/memory.hpp"

namespace halox::detail {

namespace {
void check_cuda(cudaError_t rc, const char* call, std::size_t bytes) {
  if (rc != cudaSuccess) gpu::check(rc, format("{} ({} bytes)", call, bytes));
}
}  // namespace

bool cuda_enabled() noexcept {
  return true;
}

int device_count() noexcept {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver or no device: clear the sticky error, report none
    return 0;
  }
  return n;
}

std::string memory_problem(const void* p, std::size_t bytes, memory_space space) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver, or a pointer CUDA does not know: host memory
    a.type = cudaMemoryTypeUnregistered;
  }
  const bool on_device = a.type == cudaMemoryTypeDevice;
  if (space == memory_space::host)
    return on_device ? format("it is device memory (of GPU {}), given as host memory", a.device)
                     : std::string();
  if (!on_device && a.type != cudaMemoryTypeManaged)
    return a.type == cudaMemoryTypeHost ? "it is pinned host memory, given as device memory"
                                        : "it is host memory, given as device memory";
  using range_fn = decltype(&cuMemGetAddressRange);
  static const auto range = driver_function<range_fn>("cuMemGetAddressRange");
  CUdeviceptr base = 0;
  std::size_t size = 0;
  if (!on_device || !range || range(&base, &size, CUdeviceptr(p)) != CUDA_SUCCESS) return {};
  const std::size_t left = std::size_t(base + size - CUdeviceptr(p));
  return left < bytes
             ? format("its device allocation holds {} bytes from there, the block needs {}", left,
                      bytes)
             : std::string();
}

std::shared_ptr<std::byte> allocate_device(std::size_t bytes) {
  void* p = nullptr;
  const std::size_t n = bytes == 0 ? 64 : bytes;
  check_cuda(cudaMalloc(&p, n), "cudaMalloc", n);
  // Owned from here: freed if the zeroing below throws. cudaFree's status cannot be reported
  // from a deleter; a failure there means the context is already gone (process teardown),
  // where there is nothing left to free.
  std::shared_ptr<std::byte> owned(static_cast<std::byte*>(p),
                                   [](std::byte* q) { (void)cudaFree(q); });
  // Zero before returning: a cudaMemset alone runs later on the legacy default stream, where
  // the user's first writes on a non-blocking stream could land before it (and be wiped). A
  // stream of its own, so that the zeroing waits for no other work on the GPU (a kernel of an
  // exchange in flight may be waiting there for a peer).
  const gpu::stream zeroing(cudaStreamNonBlocking);
  check_cuda(cudaMemsetAsync(p, 0, n, zeroing.get()), "cudaMemsetAsync (zeroing)", n);
  check_cuda(cudaStreamSynchronize(zeroing.get()), "cudaStreamSynchronize (zeroing)", n);
  return owned;
}

}  // namespace halox::detail
