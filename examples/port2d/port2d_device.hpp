// port2d's GPU side (--device): its wall code and its update as CUDA kernels on the app's
// stream. C++17 with plain types and no CUDA headers: nvcc compiles the .cu as C++17 (CMake 3.25
// has no C++20 flag for it), so it cannot see halox's C++20 headers, and port2d.cpp calls in
// through these declarations alone.
//
// Every function throws std::runtime_error naming the CUDA call and its error when it fails.
#pragma once

struct CUstream_st;  // CUDA's stream type (cudaStream_t is CUstream_st*), as CUDA declares it

namespace port2d_device {

/// One field of one tile in GPU memory, laid out as port2d.cpp's host arrays: point (i, j) at
/// `(i + pad) * (my + 2 * pad) + (j + pad)`, halo at negative indices.
struct tile_array {
  double* u = nullptr;     ///< the wrapped array (padding included)
  double* next = nullptr;  ///< the update's output, copied back into `u` (as the host does)
  int mx = 0, my = 0;      ///< stored points along x and y (x-faces: one more along x than cells)
  int pad = 0;             ///< the app's padding, on every side
  bool face = false;       ///< an x-face field: wall points fixed, mirrored at the x walls
  bool x_lo = false, x_hi = false, y_lo = false, y_hi = false;  ///< sides on the domain's walls
};

/// Enqueues on `s` port2d.cpp's `boundaries()` for this array: zero gradient at every wall for
/// cells; x-faces mirrored with a sign change beyond the x walls. A null `s` is CUDA's legacy
/// default stream.
void boundaries(const tile_array& a, CUstream_st* s);

/// Enqueues on `s` port2d.cpp's `advance()` for this array (every read halo filled): the same
/// formula in the same order of operations, built without FMA contraction so that it rounds as
/// the host does; then the copy of `next` into `u`.
void advance(const tile_array& a, CUstream_st* s);

}  // namespace port2d_device
