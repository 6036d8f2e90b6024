#pragma once
// Owned pinned host memory: page-locked, mapped into the device address space and portable
// (usable from every device), zero-initialised, allocated through the one check and freed with
// the last owner.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstring>
#include <memory>

#include "gpu/check.hpp"

namespace halox::detail::gpu {

/// `bytes` bytes of mapped, portable pinned memory (64 where `bytes` is 0, so the pointer is
/// never null). `what` names it in errors: "cudaHostAlloc(WHAT) failed"; `rank` likewise.
inline std::shared_ptr<std::byte> allocate_mapped(std::size_t bytes, const char* what, int rank) {
  void* p = nullptr;
  const std::size_t n = bytes == 0 ? 64 : bytes;
  const cudaError_t rc = cudaHostAlloc(&p, n, cudaHostAllocMapped | cudaHostAllocPortable);
  if (rc != cudaSuccess) check(rc, format("cudaHostAlloc({})", what), rank);
  std::memset(p, 0, n);
  // A deleter cannot report: a failure here means the context is already gone.
  return std::shared_ptr<std::byte>(static_cast<std::byte*>(p),
                                    [](std::byte* q) { (void)cudaFreeHost(q); });
}

}  // namespace halox::detail::gpu
