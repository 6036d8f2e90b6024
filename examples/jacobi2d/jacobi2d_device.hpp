// jacobi2d's GPU side: the Jacobi sweep (with its L2-norm reduction) as a CUDA kernel, and the
// few CUDA runtime calls the mini-app needs. C++17 with plain types and no CUDA headers: nvcc
// compiles the .cu as C++17 (CMake 3.25 has no C++20 flag for it), so it cannot see halox's
// C++20 headers, and jacobi2d.cpp calls in through these declarations alone.
//
// Every function throws std::runtime_error naming the CUDA call and its error when it fails.
#pragma once

#include <cstddef>
#include <string>

struct CUstream_st;  // CUDA's stream type (cudaStream_t is CUstream_st*), as CUDA declares it
struct CUevent_st;   // CUDA's event type (cudaEvent_t is CUevent_st*)

namespace jacobi2d_device {

/// A 2-D float field in device memory: element of global cell (y, x) at
/// `base[(y - lo[0]) * stride[0] + (x - lo[1]) * stride[1]]`.
struct grid {
  float* base = nullptr;  ///< first allocated element (lowest halo corner)
  long long lo[2] = {};   ///< global cell of `base`: the allocation's lower corner
  long long stride[2] = {};
};

/// Cells [lo, hi) in global indices.
struct box {
  long long lo[2] = {}, hi[2] = {};
};

/// Up to three disjoint boxes updated by one kernel launch (the interior, or the shell's rows).
struct parts {
  box part[3];
  int count = 0;
};

/// The L2-norm accumulator: one double in device memory that sweeps add squared residuals to,
/// its copy in pinned host memory, and the event recorded when the copy is done.
struct norm_buffer {
  double* device = nullptr;
  double* host = nullptr;
  CUevent_st* fetched = nullptr;
};
norm_buffer make_norm();
void free_norm(norm_buffer& n);
/// Enqueues on `s` the zeroing of the device sum.
void reset_norm(const norm_buffer& n, CUstream_st* s);
/// Enqueues on `s` the copy of the device sum to the host, then its zeroing (ready for the next
/// norm iteration's sweeps), and records `fetched` between the two (`in_graph`: while the stream
/// is captured into a CUDA graph, as an event node the host waits on after each replay).
void fetch_norm(const norm_buffer& n, CUstream_st* s, bool in_graph = false);
/// Waits for the last fetch alone (later work on the stream may still run) and returns it.
double wait_norm(const norm_buffer& n);

/// Enqueues on `s` the update of every cell of `p` in `out` from `in` (same layout; every
/// neighbour read must be valid when the kernel runs): jacobi2d.cpp's `update` formula, in the
/// same order of operations, built without FMA contraction so it rounds as the CPU does.
/// Where `norm` is not null, adds the sum over the cells of (out - in)^2 (in double) to it.
void sweep(const grid& in, const grid& out, const parts& p, double* norm, CUstream_st* s);

}  // namespace jacobi2d_device
