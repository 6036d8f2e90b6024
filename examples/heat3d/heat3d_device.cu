// heat3d's CUDA kernels and runtime calls (C++17, no halox headers; see heat3d_device.hpp).
// Built with --fmad=false: the update must round exactly as the CPU's, so no contraction of
// the multiply and add into an FMA.
#include "heat3d_device.hpp"

#include "../common/gpu_runtime.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace heat3d_device {

namespace {

using example_gpu::check;

// heat3d.cpp's `update`, character for character: the same order of operations.
__device__ double update(double alpha, double c, double xm, double xp, double ym, double yp,
                         double zm, double zp) {
  return c + alpha * ((xm + xp) + (ym + yp) + (zm + zp) - 6.0 * c);
}

__device__ long long volume(const box& b) {
  return (b.hi[0] - b.lo[0]) * (b.hi[1] - b.lo[1]) * (b.hi[2] - b.lo[2]);
}

// One thread per cell of the concatenated parts (grid-stride), the last index fastest so that
// neighbouring threads touch neighbouring elements.
__global__ void sweep_kernel(grid in, grid out, parts p, double alpha) {
  long long total = 0;
  for (int q = 0; q < p.count; ++q) total += volume(p.part[q]);
  for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < total;
       t += (long long)gridDim.x * blockDim.x) {
    long long r = t;
    int q = 0;
    while (r >= volume(p.part[q])) r -= volume(p.part[q++]);
    const box& b = p.part[q];
    const long long ny = b.hi[1] - b.lo[1], nz = b.hi[2] - b.lo[2];
    const long long i = b.lo[0] + r / (ny * nz), j = b.lo[1] + (r / nz) % ny, k = b.lo[2] + r % nz;
    const long long s0 = in.stride[0], s1 = in.stride[1], s2 = in.stride[2];
    const double* c = in.base + (i - in.lo[0]) * s0 + (j - in.lo[1]) * s1 + (k - in.lo[2]) * s2;
    out.base[(i - out.lo[0]) * out.stride[0] + (j - out.lo[1]) * out.stride[1] +
             (k - out.lo[2]) * out.stride[2]] =
        update(alpha, c[0], c[-s0], c[s0], c[-s1], c[s1], c[-s2], c[s2]);
  }
}

long long host_volume(const box& b) {
  long long v = 1;
  for (int d = 0; d < 3; ++d) v *= std::max(0LL, b.hi[d] - b.lo[d]);
  return v;
}

}  // namespace

void sweep(const grid& in, const grid& out, const parts& p, double alpha, CUstream_st* s) {
  if (p.count < 0 || p.count > 6) throw std::runtime_error("heat3d sweep: bad part count");
  parts nonempty;  // empty parts would stall the kernel's search for a cell's part
  long long total = 0;
  for (int q = 0; q < p.count; ++q)
    if (const long long v = host_volume(p.part[q]); v > 0) {
      nonempty.part[nonempty.count++] = p.part[q];
      total += v;
    }
  if (total == 0) return;
  constexpr int threads = 256;
  const long long blocks = std::min<long long>((total + threads - 1) / threads, 8192);
  sweep_kernel<<<unsigned(blocks), threads, 0, s>>>(in, out, nonempty, alpha);
  check(cudaGetLastError(), "sweep kernel launch");
}

}  // namespace heat3d_device
