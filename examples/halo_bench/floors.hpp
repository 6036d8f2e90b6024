// What halo_bench measures to compare with: the hardware's own copies, in the same run.
#pragma once
#include <algorithm>
#include <functional>
#include <vector>

#include <cuda_runtime.h>

#include "region_kernel.hpp"
#include "setup.hpp"

namespace halo_bench {

// Device-to-device copy bandwidth of this GPU (bytes read + written per second).
inline double d2d_bandwidth_gbps() {
  const std::size_t bytes = std::size_t(256) << 20;
  void *a = nullptr, *b = nullptr;
  cuda_check(cudaMalloc(&a, bytes));
  cuda_check(cudaMalloc(&b, bytes));
  cudaEvent_t t0, t1;
  cuda_check(cudaEventCreate(&t0));
  cuda_check(cudaEventCreate(&t1));
  cuda_check(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
  cuda_check(cudaEventRecord(t0));
  const int reps = 20;
  for (int k = 0; k < reps; ++k) cuda_check(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice));
  cuda_check(cudaEventRecord(t1));
  cuda_check(cudaEventSynchronize(t1));
  float ms = 0;
  cuda_check(cudaEventElapsedTime(&ms, t0, t1));
  cuda_check(cudaFree(a));
  cuda_check(cudaFree(b));
  return 2.0 * double(bytes) * reps / (double(ms) * 1e-3) / 1e9;
}

// GPU time alone of the work `enqueue` puts on a stream: median over `iters` runs, each queued
// behind a hold (500 us per exchange) so that the events around it see no host gaps (CUDA
// events, in us).
// With `batch` > 1, each run is `batch` enqueues back to back between the events, divided by
// `batch`: the GPU time per exchange when exchanges follow each other, as the D2D bandwidth
// is measured (20 copies back to back).
inline double kernel_us(int iters, const std::function<void(cudaStream_t)>& enqueue,
                        int batch = 1) {
  cudaStream_t stream;
  cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t t0, t1;
  cuda_check(cudaEventCreate(&t0));
  cuda_check(cudaEventCreate(&t1));
  std::vector<double> t;
  for (int k = 0; k < iters; ++k) {
    cuda_check(halo_bench::hold(stream, 500 * batch));
    cuda_check(cudaEventRecord(t0, stream));
    for (int b = 0; b < batch; ++b) enqueue(stream);
    cuda_check(cudaEventRecord(t1, stream));
    cuda_check(cudaEventSynchronize(t1));
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, t0, t1));
    t.push_back(double(ms) * 1e3 / batch);
  }
  cuda_check(cudaEventDestroy(t0));
  cuda_check(cudaEventDestroy(t1));
  cuda_check(cudaStreamDestroy(stream));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Peer copy bandwidth between GPU 0 and GPU 1 of this process (the ceiling for one message of
// `bytes`): median over `reps` copies, in GB/s. Needs both GPUs visible and peer access.
inline double peer_copy_gbps(std::size_t bytes, int reps) {
  int here = 0, can = 0;
  cuda_check(cudaGetDevice(&here));
  const int other = here == 0 ? 1 : 0;
  cuda_check(cudaDeviceCanAccessPeer(&can, here, other));
  if (!can) return 0;
  if (cudaDeviceEnablePeerAccess(other, 0) == cudaErrorPeerAccessAlreadyEnabled)
    (void)cudaGetLastError();
  void *src = nullptr, *dst = nullptr;
  cuda_check(cudaMalloc(&src, bytes));
  cuda_check(cudaSetDevice(other));
  cuda_check(cudaMalloc(&dst, bytes));
  cuda_check(cudaSetDevice(here));
  cudaStream_t s;
  cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t t0, t1;
  cuda_check(cudaEventCreate(&t0));
  cuda_check(cudaEventCreate(&t1));
  std::vector<double> t;
  for (int k = 0; k < reps + 3; ++k) {
    cuda_check(cudaEventRecord(t0, s));
    cuda_check(cudaMemcpyPeerAsync(dst, other, src, here, bytes, s));
    cuda_check(cudaEventRecord(t1, s));
    cuda_check(cudaEventSynchronize(t1));
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, t0, t1));
    if (k >= 3) t.push_back(double(ms) * 1e-3);
  }
  std::sort(t.begin(), t.end());
  cuda_check(cudaEventDestroy(t0));
  cuda_check(cudaEventDestroy(t1));
  cuda_check(cudaStreamDestroy(s));
  cuda_check(cudaFree(src));
  cuda_check(cudaSetDevice(other));
  cuda_check(cudaFree(dst));
  cuda_check(cudaSetDevice(here));
  return double(bytes) / t[t.size() / 2] / 1e9;
}

}  // namespace halo_bench
