#pragma once
// The few CUDA driver functions halox calls, looked up through the runtime's entry-point query:
// halox links only the CUDA runtime, so its programs still load on a machine without a driver.
#include <cuda.h>  // driver types
#include <cuda_runtime.h>

namespace halox::detail {

/// The driver function `name` (its CUDA 12 signature `F`), or null where the driver lacks it.
template <class F>
F driver_function(const char* name) {
  void* f = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion(name, &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return reinterpret_cast<F>(f);
}

}  // namespace halox::detail
