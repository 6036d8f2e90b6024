// The app's kernels, behind plain C++ functions: kernels.cu is compiled in the app's own
// dialect (C++17) and includes no halox header; main.cpp, which uses halox, is C++20.
#pragma once
#include <cuda_runtime.h>

struct layout {
  long long lo0, lo1, n0, n1;  // allocated box (halo included)
  long long s0, s1;            // element strides
  long long g0, g1;            // global extents
};

// Owned cells [o0, o1) x [p0, p1) get their global value; the halo gets -1.
void launch_fill(double* u, const layout& l, long long o0, long long o1, long long p0, long long p1,
                 cudaStream_t s);
// Adds to *bad the number of cells (halo included) whose value is not the global one.
void launch_verify(const double* u, const layout& l, unsigned long long* bad, cudaStream_t s);
