// jacobi2d's CUDA kernels and runtime calls (C++17, no halox headers; see jacobi2d_device.hpp).
// Built with --fmad=false: the update must round exactly as the CPU's, so no contraction of a
// multiply and an add into an FMA.
#include "jacobi2d_device.hpp"

#include "../common/gpu_runtime.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace jacobi2d_device {

namespace {

using example_gpu::check;

// jacobi2d.cpp's `update`, character for character: the same order of operations.
__device__ float update(float xp, float xm, float yp, float ym) {
  return 0.25f * (((xp + xm) + yp) + ym);
}

__device__ long long volume(const box& b) {
  return (b.hi[0] - b.lo[0]) * (b.hi[1] - b.lo[1]);
}

constexpr int threads = 256;

// One thread per cell of the concatenated parts (grid-stride), x fastest so that neighbouring
// threads touch neighbouring elements. Each block sums its squared residuals in shared memory
// and adds the sum to `norm` once.
__global__ void sweep_kernel(grid in, grid out, parts p, double* norm) {
  long long total = 0;
  for (int q = 0; q < p.count; ++q) total += volume(p.part[q]);
  double sum = 0;
  for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < total;
       t += (long long)gridDim.x * blockDim.x) {
    long long r = t;
    int q = 0;
    while (r >= volume(p.part[q])) r -= volume(p.part[q++]);
    const box& b = p.part[q];
    const long long nx = b.hi[1] - b.lo[1];
    const long long y = b.lo[0] + r / nx, x = b.lo[1] + r % nx;
    const long long s0 = in.stride[0], s1 = in.stride[1];
    const float* c = in.base + (y - in.lo[0]) * s0 + (x - in.lo[1]) * s1;
    const float v = update(c[s1], c[-s1], c[s0], c[-s0]);
    out.base[(y - out.lo[0]) * out.stride[0] + (x - out.lo[1]) * out.stride[1]] = v;
    const float residue = v - c[0];
    sum += double(residue) * double(residue);
  }
  if (norm == nullptr) return;  // uniform over the launch: no thread skips the barriers alone
  __shared__ double partial[threads];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int half = threads / 2; half > 0; half /= 2) {
    if (int(threadIdx.x) < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(norm, partial[0]);
}

long long host_volume(const box& b) {
  long long v = 1;
  for (int d = 0; d < 2; ++d) v *= std::max(0LL, b.hi[d] - b.lo[d]);
  return v;
}

}  // namespace

double* make_norm() {
  void* p = nullptr;
  check(cudaMalloc(&p, sizeof(double)), "cudaMalloc (norm)");
  return static_cast<double*>(p);
}

void free_norm(double* norm) {
  check(cudaFree(norm), "cudaFree (norm)");
}

void reset_norm(double* norm, CUstream_st* s) {
  check(cudaMemsetAsync(norm, 0, sizeof(double), s), "cudaMemsetAsync (norm)");
}

double read_norm(const double* norm, CUstream_st* s) {
  double v = 0;
  check(cudaMemcpyAsync(&v, norm, sizeof(double), cudaMemcpyDeviceToHost, s),
        "cudaMemcpyAsync (norm)");
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize (norm)");
  return v;
}

void sweep(const grid& in, const grid& out, const parts& p, double* norm, CUstream_st* s) {
  if (p.count < 0 || p.count > 3) throw std::runtime_error("jacobi2d sweep: bad part count");
  parts nonempty;  // empty parts would stall the kernel's search for a cell's part
  long long total = 0;
  for (int q = 0; q < p.count; ++q)
    if (const long long v = host_volume(p.part[q]); v > 0) {
      nonempty.part[nonempty.count++] = p.part[q];
      total += v;
    }
  if (total == 0) return;
  const long long blocks = std::min<long long>((total + threads - 1) / threads, 8192);
  sweep_kernel<<<unsigned(blocks), threads, 0, s>>>(in, out, nonempty, norm);
  check(cudaGetLastError(), "jacobi2d sweep kernel launch");
}

}  // namespace jacobi2d_device
