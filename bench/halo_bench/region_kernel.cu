#include "region_kernel.hpp"

#include <cuda/atomic>

namespace halo_bench {

namespace {
__global__ void copy_kernel(const double* src, double* dst, long long n0, long long n1,
                            long long n2, long long s0, long long s1) {
  const long long total = n0 * n1 * n2;
  for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < total;
       t += (long long)gridDim.x * blockDim.x) {
    const long long i = t / (n1 * n2), j = (t / n2) % n1, k = t % n2;
    const long long off = i * s0 + j * s1 + k;
    dst[off] = src[off];
  }
}

__global__ void all_regions_kernel(const region_desc* regions, int n, long long total) {
  const long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (t >= total) return;
  int lo = 0, hi = n - 1;  // the last region whose first element is <= t
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (regions[mid].first <= t)
      lo = mid;
    else
      hi = mid - 1;
  }
  const region_desc& r = regions[lo];
  // 32-bit index arithmetic (a region has fewer than 2^32 elements here): the 64-bit divisions
  // would cost more than the copy.
  const unsigned e = unsigned(t - r.first), n1 = unsigned(r.n1), n2 = unsigned(r.n2);
  const unsigned row = e / n2, k = e - row * n2, i = row / n1, j = row - i * n1;
  const long long off = i * r.s0 + j * r.s1 + k;
  r.dst[off] = r.src[off];
}

__device__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void empty() {}

// A release store into the other GPU's memory and acquire loads of its own, both at system
// scope: halox's data-ready flag is such a release (its polls are relaxed, then one acquire).
using sys_flag = cuda::atomic_ref<unsigned long long, cuda::thread_scope_system>;

__global__ void ping_kernel(unsigned long long* theirs, unsigned long long* mine, int n,
                            bool serves) {
  sys_flag out(*theirs), in(*mine);
  for (unsigned long long i = 1; i <= (unsigned long long)n; ++i) {
    if (serves) out.store(i, cuda::memory_order_release);
    while (in.load(cuda::memory_order_acquire) < i) {
    }
    if (!serves) out.store(i, cuda::memory_order_release);
  }
}

__global__ void hold_kernel(unsigned long long ns) {
  const unsigned long long t0 = global_ns();
  while (global_ns() - t0 < ns) {
  }
}
}  // namespace

cudaError_t hold(cudaStream_t stream, int us) {
  hold_kernel<<<1, 1, 0, stream>>>(1000ull * unsigned(us));
  return cudaGetLastError();
}

cudaError_t empty_kernel(cudaStream_t stream) {
  empty<<<1, 1, 0, stream>>>();
  return cudaGetLastError();
}

cudaError_t flag_ping(unsigned long long* theirs, unsigned long long* mine, int n, bool serves,
                      cudaStream_t stream) {
  ping_kernel<<<1, 1, 0, stream>>>(theirs, mine, n, serves);
  return cudaGetLastError();
}

cudaError_t copy_regions_once(const region_desc* regions, int n, long long total,
                              cudaStream_t stream) {
  if (total == 0) return cudaSuccess;
  all_regions_kernel<<<int((total + 255) / 256), 256, 0, stream>>>(regions, n, total);
  return cudaGetLastError();
}

cudaError_t copy_region(const double* src, double* dst, long long n0, long long n1, long long n2,
                        long long s0, long long s1, cudaStream_t stream) {
  const long long total = n0 * n1 * n2;
  const int blocks = int(total / 256 + 1 < 1024 ? total / 256 + 1 : 1024);
  copy_kernel<<<blocks, 256, 0, stream>>>(src, dst, n0, n1, n2, s0, s1);
  return cudaGetLastError();
}

}  // namespace halo_bench
