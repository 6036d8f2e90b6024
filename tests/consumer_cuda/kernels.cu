// A kernel writes the owned cells of a device field, a second one checks every cell against the
// global coordinates. No halox header here: this file keeps the app's own dialect.
#include "kernels.hpp"

static_assert(__cplusplus == 201703L, "the app's .cu files are C++17; halox must not change that");

namespace {

__device__ double value(long long i, long long j, const layout& l) {
  const long long gi = (i % l.g0 + l.g0) % l.g0, gj = (j % l.g1 + l.g1) % l.g1;  // periodic
  return 1000.0 * double(gi) + double(gj);
}

__global__ void fill(double* u, layout l, long long o0, long long o1, long long p0, long long p1) {
  const long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (k >= l.n0 * l.n1) return;
  const long long i = l.lo0 + k / l.n1, j = l.lo1 + k % l.n1;
  const bool owned = i >= o0 && i < o1 && j >= p0 && j < p1;
  u[(i - l.lo0) * l.s0 + (j - l.lo1) * l.s1] = owned ? value(i, j, l) : -1.0;
}

__global__ void verify(const double* u, layout l, unsigned long long* bad) {
  const long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (k >= l.n0 * l.n1) return;
  const long long i = l.lo0 + k / l.n1, j = l.lo1 + k % l.n1;
  if (u[(i - l.lo0) * l.s0 + (j - l.lo1) * l.s1] != value(i, j, l)) atomicAdd(bad, 1ull);
}

constexpr int threads = 256;
int blocks(const layout& l) {
  return int((l.n0 * l.n1 + threads - 1) / threads);
}

}  // namespace

void launch_fill(double* u, const layout& l, long long o0, long long o1, long long p0, long long p1,
                 cudaStream_t s) {
  fill<<<blocks(l), threads, 0, s>>>(u, l, o0, o1, p0, p1);
}

void launch_verify(const double* u, const layout& l, unsigned long long* bad, cudaStream_t s) {
  verify<<<blocks(l), threads, 0, s>>>(u, l, bad);
}
