// heat3d's GPU side: the stencil update as CUDA kernels, and the few CUDA runtime calls the
// mini-app needs. C++17 with plain types and no CUDA headers: nvcc compiles the .cu as C++17
// (CMake 3.25 has no C++20 flag for it), so it cannot see halox's C++20 headers, and heat3d.cpp
// calls in through these declarations alone.
//
// Every function throws std::runtime_error naming the CUDA call and its error when it fails.
#pragma once

#include <cstddef>
#include <string>

struct CUstream_st;  // CUDA's stream type (cudaStream_t is CUstream_st*), as CUDA declares it

namespace heat3d_device {

/// A 3-D double field in device memory: element of global cell (i, j, k) at
/// `base[(i - lo[0]) * stride[0] + (j - lo[1]) * stride[1] + (k - lo[2]) * stride[2]]`.
struct grid {
  double* base = nullptr;  ///< first allocated element (lowest halo corner)
  long long lo[3] = {};    ///< global cell of `base`: the allocation's lower corner
  long long stride[3] = {};
};

/// Cells [lo, hi) in global indices.
struct box {
  long long lo[3] = {}, hi[3] = {};
};

/// Up to six disjoint boxes updated by one kernel launch (a box, or the slabs of its shell).
struct parts {
  box part[6];
  int count = 0;
};

/// Enqueues on `s` the update of every cell of `p` in `out` from `in` (same layout; every
/// neighbour read must be valid when the kernel runs): heat3d.cpp's `update` formula, in the
/// same order of operations, built without FMA contraction so it rounds as the CPU does.
void sweep(const grid& in, const grid& out, const parts& p, double alpha, CUstream_st* s);

}  // namespace heat3d_device
