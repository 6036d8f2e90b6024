#pragma once
// Whether CUDA IPC can export the allocation holding a device pointer (memory from cudaMalloc;
// not managed, pinned host or stream-ordered pool memory), found by trying what an importer
// needs: the allocation's start (cuMemGetAddressRange) and its IPC handle.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/cuda_driver.hpp"

namespace halox::detail::gpu {

inline bool ipc_exportable(const void* p) {
  using range_fn = CUresult (*)(CUdeviceptr*, std::size_t*, CUdeviceptr);
  static const auto range = driver_function<range_fn>("cuMemGetAddressRange");
  CUdeviceptr base = 0;
  std::size_t size = 0;
  if (range == nullptr ||
      range(&base, &size, CUdeviceptr(reinterpret_cast<std::uintptr_t>(p))) != CUDA_SUCCESS)
    return false;
  cudaIpcMemHandle_t h{};
  const bool ok =
      cudaIpcGetMemHandle(&h, reinterpret_cast<void*>(std::uintptr_t(base))) == cudaSuccess;
  (void)cudaGetLastError();
  return ok;
}

}  // namespace halox::detail::gpu
