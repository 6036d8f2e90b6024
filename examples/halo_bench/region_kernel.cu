#include "region_kernel.hpp"

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

__device__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
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

cudaError_t copy_region(const double* src, double* dst, long long n0, long long n1, long long n2,
                        long long s0, long long s1, cudaStream_t stream) {
  const long long total = n0 * n1 * n2;
  const int blocks = int(total / 256 + 1 < 1024 ? total / 256 + 1 : 1024);
  copy_kernel<<<blocks, 256, 0, stream>>>(src, dst, n0, n1, n2, s0, s1);
  return cudaGetLastError();
}

}  // namespace halo_bench
