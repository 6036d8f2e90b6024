// Device allocation for halox-owned fields (built only with HALOX_ENABLE_CUDA).
#include <cuda_runtime.h>

#include <memory>

#include "../gpu/check.hpp"
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

std::shared_ptr<std::byte> allocate_device(std::size_t bytes) {
  void* p = nullptr;
  const std::size_t n = bytes == 0 ? 64 : bytes;
  check_cuda(cudaMalloc(&p, n), "cudaMalloc", n);
  // Zero before returning: a cudaMemset alone runs later on the legacy default stream, where
  // the user's first writes on a non-blocking stream could land before it (and be wiped). A
  // stream of its own, so that the zeroing waits for no other work on the GPU (a kernel of an
  // exchange in flight may be waiting there for a peer).
  cudaStream_t s = nullptr;
  cudaError_t rc = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (rc == cudaSuccess) rc = cudaMemsetAsync(p, 0, n, s);
  if (rc == cudaSuccess) rc = cudaStreamSynchronize(s);
  if (s != nullptr) {
    const cudaError_t destroyed = cudaStreamDestroy(s);
    if (rc == cudaSuccess) rc = destroyed;
  }
  if (rc != cudaSuccess) {
    (void)cudaFree(p);
    check_cuda(rc, "zeroing (cudaStreamCreateWithFlags/cudaMemsetAsync/cudaStreamSynchronize)", n);
  }
  // cudaFree's status cannot be reported from a deleter; a failure here means the context is
  // already gone (process teardown), where there is nothing left to free.
  return std::shared_ptr<std::byte>(static_cast<std::byte*>(p),
                                    [](std::byte* q) { (void)cudaFree(q); });
}

}  // namespace halox::detail
