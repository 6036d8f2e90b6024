#pragma once
// The allocation holding a device pointer, and whether CUDA IPC can export it (memory from
// cudaMalloc; not managed, pinned host or stream-ordered pool memory), found by trying what an
// importer needs: the allocation's start (cuMemGetAddressRange) and its IPC handle.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "gpu/cuda_driver.hpp"

namespace halox::detail::gpu {

/// The start of the allocation holding device pointer `p`; false where the driver knows none.
inline bool allocation_start(const void* p, const std::byte*& start) {
  using range_fn = CUresult (*)(CUdeviceptr*, std::size_t*, CUdeviceptr);
  static const auto range = driver_function<range_fn>("cuMemGetAddressRange");
  CUdeviceptr base = 0;
  std::size_t size = 0;
  if (range == nullptr ||
      range(&base, &size, CUdeviceptr(reinterpret_cast<std::uintptr_t>(p))) != CUDA_SUCCESS)
    return false;
  start = reinterpret_cast<const std::byte*>(std::uintptr_t(base));
  return true;
}

/// Whether CUDA IPC can export the allocation holding `p`.
inline bool ipc_exportable(const void* p) {
  const std::byte* start = nullptr;
  if (!allocation_start(p, start)) return false;
  cudaIpcMemHandle_t h{};
  const bool ok = cudaIpcGetMemHandle(&h, const_cast<std::byte*>(start)) == cudaSuccess;
  (void)cudaGetLastError();
  return ok;
}

}  // namespace halox::detail::gpu
