// Test kernels for GPU exchange tests (C++17, no halox types: compiled by nvcc separately).
#pragma once
#include <cuda_runtime.h>

namespace halox_test {

/// A 3-D double field in device memory: allocation starting at global cell `lo` with extents
/// `ext` and element strides `stride`; owned cells [owned_lo, owned_hi); global extents `n`.
struct geom {
  double* base;
  long long lo[3], ext[3], stride[3], owned_lo[3], owned_hi[3], n[3];
};

/// Writes salt * 1e6 + (linear global index) into every owned cell, on `stream`.
void stamp(const geom& g, double salt, cudaStream_t stream);
/// Counts (atomically, into *errors) allocated cells that do not hold the value stamped into
/// their periodic-wrapped source cell: every cell of a fully periodic box-stencil field.
void verify(const geom& g, double salt, unsigned long long* errors, cudaStream_t stream);

/// A box of cells of a double field of up to 4 dimensions in device memory: the element of
/// global cell g, component c is at base[sum_i (g[i] - origin[i]) * stride[i] + c * comp_stride].
struct box_cells {
  double* base;
  int dims, ncomp;
  long long origin[4], stride[4], comp_stride, lo[4], hi[4];
};

/// Writes the test boundary callback's value into every cell of the box, on `stream`:
/// v = 5000 + c, then v = v * 7 + g[i] for each dimension i (exact in double).
void fill_callback_value(const box_cells& b, cudaStream_t stream);

/// The same with the salt read from device memory when the kernels run (CUDA graph tests: a
/// replayed launch keeps its parameters, so what changes per step lives on the device).
void stamp(const geom& g, const double* salt, cudaStream_t stream);
void verify(const geom& g, const double* salt, unsigned long long* errors, cudaStream_t stream);
/// *salt += 1, on `stream`.
void bump(double* salt, cudaStream_t stream);

/// Writes `v` into `n` doubles at `p`, on `stream`.
void fill_value(double* p, long long n, double v, cudaStream_t stream);

}  // namespace halox_test
