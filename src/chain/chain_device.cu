// The chain exchange's CUDA calls that device_copier does not offer (built only with CUDA).
#include <cuda_runtime.h>

#include "halox/chain/chain_device.hpp"
#include "halox/core/error.hpp"

namespace halox::detail {

bool is_device_pointer(const void* p, int rank) {
  cudaPointerAttributes a{};
  const cudaError_t rc = cudaPointerGetAttributes(&a, p);
  if (rc != cudaSuccess)
    fail("rank {}: cudaPointerGetAttributes failed: {} ({})", rank, cudaGetErrorString(rc),
         cudaGetErrorName(rc));
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

}  // namespace halox::detail
