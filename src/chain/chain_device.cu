// The chain exchange's CUDA calls that device_copier does not offer (built only with CUDA).
#include <cuda_runtime.h>

#include "../gpu/check.hpp"
#include "halox/chain/chain_device.hpp"
#include "halox/core/error.hpp"

namespace halox::detail {

bool is_device_pointer(const void* p, int rank) {
  cudaPointerAttributes a{};
  gpu::check(cudaPointerGetAttributes(&a, p), "cudaPointerGetAttributes", rank);
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

}  // namespace halox::detail
