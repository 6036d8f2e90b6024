// One kernel per region: the baseline a halo library without fused kernels runs (C++17, no
// halox types: compiled by nvcc separately from halo_bench.cpp).
#pragma once
#include <cuda_runtime.h>

namespace halo_bench {
/// Copies an n0 x n1 x n2 block of doubles from `src` to `dst`, both with element strides
/// s0, s1 (and 1 in the last dimension), in one kernel launch on `stream`.
cudaError_t copy_region(const double* src, double* dst, long long n0, long long n1, long long n2,
                        long long s0, long long s1, cudaStream_t stream);
/// One region of a single-launch copy: an n0 x n1 x n2 block of doubles, element strides s0, s1
/// (1 in the last dimension) on both sides, its elements numbered from `first` in the launch.
struct region_desc {
  const double* src;
  double* dst;
  long long n1, n2, s0, s1, first;
};
/// Copies every region of `regions` (device memory, `n` of them in order of `first`, `total`
/// elements in all) in one launch: a thread per element, finding its region by binary search
/// over `first` and its place by 32-bit division (a plain fused kernel, none of halox's tiling;
/// every region below 2^32 elements).
cudaError_t copy_regions_once(const region_desc* regions, int n, long long total,
                              cudaStream_t stream);
/// Holds `stream` for `us` microseconds (one thread spinning on the GPU's global timer), so that
/// work enqueued behind it is all queued before it starts: events around that work then time
/// the GPU alone, without the host's launch and synchronisation gaps.
cudaError_t hold(cudaStream_t stream, int us);
/// Launches a kernel that does nothing (one thread) on `stream`: the launch latency every
/// kernel pays, the GPU floors' fixed part.
cudaError_t empty_kernel(cudaStream_t stream);
/// `n` round trips of a flag between two GPUs, one thread on each (launch it on both):
/// `mine` is in this GPU's memory, `theirs` in the other's (peer access enabled). The side
/// that `serves` stores i into `theirs` (a release at system scope) and polls `mine` until it
/// reads i (acquire); the other polls first, then answers. Both flags start at 0.
cudaError_t flag_ping(unsigned long long* theirs, unsigned long long* mine, int n, bool serves,
                      cudaStream_t stream);
}  // namespace halo_bench
