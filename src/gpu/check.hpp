#pragma once
// The one check of every CUDA runtime call in halox's CUDA sources: a failed call becomes a
// halox::error naming the call, CUDA's text and name, and the MPI rank when there is one.
// (mpi/check.hpp does the same for MPI calls.)
#include <cuda_runtime.h>

#include <string>
#include <string_view>

#include "halox/core/error.hpp"

namespace halox::detail::gpu {

/// Throws halox::error unless `rc` is cudaSuccess: "rank R: CALL failed: TEXT (NAME)", without
/// the rank part where `rank` is negative (no MPI rank in context).
inline void check(cudaError_t rc, std::string_view call, int rank = -1) {
  if (rc == cudaSuccess) return;
  const std::string who = rank >= 0 ? format("rank {}: ", rank) : std::string();
  fail("{}{} failed: {} ({})", who, call, cudaGetErrorString(rc), cudaGetErrorName(rc));
}

}  // namespace halox::detail::gpu
