#pragma once
// CUDA graph capture, as halox's launches see it: whether a stream is being captured, and which
// capture, so that no stream waits on an event recorded in another capture sequence (or outside
// the one it belongs to), which CUDA refuses (cudaErrorStreamCaptureIsolation).
#include <cuda_runtime.h>

#include "gpu/check.hpp"

namespace halox::detail::gpu {

/// The id of the capture `s` belongs to now; 0 when it is not being captured. A capture that
/// CUDA already invalidated (an earlier call broke it) is an error.
inline unsigned long long capture_id(cudaStream_t s, int rank) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  unsigned long long id = 0;
  check(cudaStreamGetCaptureInfo(s, &status, &id), "cudaStreamGetCaptureInfo", rank);
  if (status == cudaStreamCaptureStatusInvalidated)
    check(cudaErrorStreamCaptureInvalidated, "stream capture (invalidated before halox's call)",
          rank);
  return status == cudaStreamCaptureStatusActive ? id : 0;
}

}  // namespace halox::detail::gpu
