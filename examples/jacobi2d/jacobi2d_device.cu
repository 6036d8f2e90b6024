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

// A block is 32 columns x 8 rows of threads; each thread updates `rows_per_thread` cells of
// its column, 8 rows apart (a warp reads and writes 32 consecutive floats of a row: 128-byte
// coalesced). Block row `blockIdx.y` covers 8 * rows_per_thread consecutive rows of the parts'
// rows laid end to end, so the launch needs no per-cell division. Each block sums its squared
// residuals (warp shuffles, then shared memory) and adds the sum to `norm` once.
constexpr int block_x = 32, block_y = 8, rows_per_thread = 16;
constexpr int rows_per_block = block_y * rows_per_thread;

__global__ void sweep_kernel(grid in, grid out, parts p, double* norm) {
  const long long x0 = blockIdx.x * (long long)block_x + threadIdx.x;
  const long long s0 = in.stride[0], s1 = in.stride[1];
  double sum = 0;
  for (int k = 0; k < rows_per_thread; ++k) {
    long long r = blockIdx.y * (long long)rows_per_block + k * block_y + threadIdx.y;
    int q = 0;  // the part holding row r of the concatenation (at most three)
    for (; q < p.count; ++q) {
      const long long n = p.part[q].hi[0] - p.part[q].lo[0];
      if (r < n) break;
      r -= n;
    }
    if (q == p.count) break;  // past the last row (rows only grow with k)
    const box& b = p.part[q];
    const long long y = b.lo[0] + r, x = b.lo[1] + x0;
    if (x >= b.hi[1]) continue;
    const float* c = in.base + (y - in.lo[0]) * s0 + (x - in.lo[1]) * s1;
    const float v = update(c[s1], c[-s1], c[s0], c[-s0]);
    out.base[(y - out.lo[0]) * out.stride[0] + (x - out.lo[1]) * out.stride[1]] = v;
    const float residue = v - c[0];
    sum += double(residue) * double(residue);
  }
  if (norm == nullptr) return;  // uniform over the launch: no thread skips the barriers alone
  for (int off = 16; off > 0; off /= 2) sum += __shfl_down_sync(0xffffffffu, sum, off);
  __shared__ double partial[block_y];
  if (threadIdx.x == 0) partial[threadIdx.y] = sum;
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    double block_sum = 0;
    for (int w = 0; w < block_y; ++w) block_sum += partial[w];
    atomicAdd(norm, block_sum);
  }
}

long long host_volume(const box& b) {
  long long v = 1;
  for (int d = 0; d < 2; ++d) v *= std::max(0LL, b.hi[d] - b.lo[d]);
  return v;
}

}  // namespace

norm_buffer make_norm() {
  norm_buffer n;
  check(cudaMalloc(&n.device, sizeof(double)), "cudaMalloc (norm)");
  check(cudaMallocHost(&n.host, sizeof(double)), "cudaMallocHost (norm)");
  n.fetched = example_gpu::create_event();
  return n;
}

void free_norm(norm_buffer& n) {
  example_gpu::destroy_event(n.fetched);
  check(cudaFreeHost(n.host), "cudaFreeHost (norm)");
  check(cudaFree(n.device), "cudaFree (norm)");
  n = norm_buffer{};
}

void reset_norm(const norm_buffer& n, CUstream_st* s) {
  check(cudaMemsetAsync(n.device, 0, sizeof(double), s), "cudaMemsetAsync (norm)");
}

void fetch_norm(const norm_buffer& n, CUstream_st* s, bool in_graph) {
  check(cudaMemcpyAsync(n.host, n.device, sizeof(double), cudaMemcpyDeviceToHost, s),
        "cudaMemcpyAsync (norm)");
  // Captured into a graph, the record must be an event node of its own (external), so that the
  // host can wait for it after each replay.
  check(cudaEventRecordWithFlags(n.fetched, s, in_graph ? cudaEventRecordExternal : 0),
        "cudaEventRecord (norm)");
  reset_norm(n, s);
}

double wait_norm(const norm_buffer& n) {
  check(cudaEventSynchronize(n.fetched), "cudaEventSynchronize (norm)");
  return *n.host;
}

void sweep(const grid& in, const grid& out, const parts& p, double* norm, CUstream_st* s) {
  if (p.count < 0 || p.count > 3) throw std::runtime_error("jacobi2d sweep: bad part count");
  parts nonempty;  // empty parts would hold rows of no cells
  long long rows = 0, width = 0;
  for (int q = 0; q < p.count; ++q)
    if (host_volume(p.part[q]) > 0) {
      nonempty.part[nonempty.count++] = p.part[q];
      rows += p.part[q].hi[0] - p.part[q].lo[0];
      width = std::max(width, p.part[q].hi[1] - p.part[q].lo[1]);
    }
  if (rows == 0) return;
  const dim3 blocks(unsigned((width + block_x - 1) / block_x),
                    unsigned((rows + rows_per_block - 1) / rows_per_block));
  sweep_kernel<<<blocks, dim3(block_x, block_y), 0, s>>>(in, out, nonempty, norm);
  check(cudaGetLastError(), "jacobi2d sweep kernel launch");
}

}  // namespace jacobi2d_device
