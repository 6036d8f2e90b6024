// port2d's CUDA kernels (C++17, no halox headers; see port2d_device.hpp).
// Built with --fmad=false: the update must round exactly as the host's, so no contraction of a
// multiply and an add into an FMA.
#include "port2d_device.hpp"

#include "../common/gpu_runtime.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>

namespace port2d_device {

namespace {

using example_gpu::check;

// port2d.cpp's `at()`: local point (i, j), halo at negative indices.
__device__ std::size_t at(const tile_array& a, int i, int j) {
  return std::size_t(i + a.pad) * std::size_t(a.my + 2 * a.pad) + std::size_t(j + a.pad);
}

// One thread per point along x (y walls) and along y (x walls); they read stored points only and
// write disjoint halo points, so the order of port2d.cpp's two loops does not matter.
__global__ void boundaries_kernel(tile_array a) {
  const int k = int(blockIdx.x * blockDim.x + threadIdx.x);
  double* u = a.u;
  if (k < a.my) {
    if (a.x_lo) u[at(a, -1, k)] = a.face ? -u[at(a, 1, k)] : u[at(a, 0, k)];
    if (a.x_hi) u[at(a, a.mx, k)] = a.face ? -u[at(a, a.mx - 2, k)] : u[at(a, a.mx - 1, k)];
  }
  if (k < a.mx) {
    if (a.y_lo) u[at(a, k, -1)] = u[at(a, k, 0)];
    if (a.y_hi) u[at(a, k, a.my)] = u[at(a, k, a.my - 1)];
  }
}

// port2d.cpp's `advance()` for one point, character for character: the same order of
// operations. Threads along y (the fastest index) touch neighbouring elements.
__global__ void advance_kernel(tile_array a) {
  const int j = int(blockIdx.x * blockDim.x + threadIdx.x);
  const int i = int(blockIdx.y * blockDim.y + threadIdx.y);
  if (i >= a.mx || j >= a.my) return;
  if (a.face && ((a.x_lo && i == 0) || (a.x_hi && i == a.mx - 1))) return;  // wall points
  const double* u = a.u;
  const double c = u[at(a, i, j)];
  a.next[at(a, i, j)] = c + 0.125 * (u[at(a, i - 1, j)] + u[at(a, i + 1, j)] + u[at(a, i, j - 1)] +
                                     u[at(a, i, j + 1)] - 4.0 * c);
}

}  // namespace

void boundaries(const tile_array& a, CUstream_st* s) {
  const int n = std::max(a.mx, a.my), threads = 128;
  if (n == 0) return;
  boundaries_kernel<<<unsigned((n + threads - 1) / threads), threads, 0, s>>>(a);
  check(cudaGetLastError(), "port2d boundaries kernel launch");
}

void advance(const tile_array& a, CUstream_st* s) {
  if (a.mx == 0 || a.my == 0) return;
  const dim3 threads(32, 8);
  const dim3 blocks(unsigned((a.my + 31) / 32), unsigned((a.mx + 7) / 8));
  advance_kernel<<<blocks, threads, 0, s>>>(a);
  check(cudaGetLastError(), "port2d advance kernel launch");
  const std::size_t bytes =
      std::size_t(a.mx + 2 * a.pad) * std::size_t(a.my + 2 * a.pad) * sizeof(double);
  check(cudaMemcpyAsync(a.u, a.next, bytes, cudaMemcpyDeviceToDevice, s),
        "cudaMemcpyAsync (port2d next to u)");
}

}  // namespace port2d_device
