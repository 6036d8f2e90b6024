#pragma once
// What every GPU test program does first, and its CUDA-call check.
#include <cuda_runtime.h>
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <cstdio>
#include <cstdlib>

#include "kernels.hpp"

namespace gpu_test {

// Call once, at namespace scope, so that it runs before Catch's session: a machine without a
// GPU skips the whole program (exit 77); otherwise ranks spread over the node's GPUs
// (node-local rank modulo the GPU count, as mpirun sets it).
inline bool skip_without_gpu() {
  const int gpus = halox::detail::device_count();
  if (gpus == 0) {
    std::printf("SKIP: %s\n",
                halox::detail::cuda_enabled() ? "no CUDA device" : "built without CUDA");
    std::exit(77);
  }
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  if (local == nullptr) local = std::getenv("MPI_LOCALRANKID");
  if (cudaSetDevice(local ? std::atoi(local) % gpus : 0) != cudaSuccess) std::exit(1);
  return true;
}

// Fails the current test case on a CUDA error.
inline void cuda(cudaError_t rc) {
  if (rc != cudaSuccess) FAIL(cudaGetErrorString(rc));
}

// The kernels' view of a device field of doubles (kernels.hpp) with global extents `n`.
inline halox_test::geom geom_of(const halox::field<double, 3>& f, const halox::extents<3>& n) {
  halox_test::geom g{};
  g.base = f.data();
  const auto a = f.allocated_box();
  const auto o = f.owned_box();
  for (int i = 0; i < 3; ++i) {
    g.lo[i] = a.lo[i];
    g.ext[i] = a.hi[i] - a.lo[i];
    g.stride[i] = f.strides()[i];
    g.owned_lo[i] = o.lo[i];
    g.owned_hi[i] = o.hi[i];
    g.n[i] = n[i];
  }
  return g;
}

// Counts wrong cells of `g` after an exchange of stamp `salt` (every halo cell checked against
// its periodic source: global coordinates encoded in the values).
inline unsigned long long wrong_cells(const halox_test::geom& g, double salt, cudaStream_t s) {
  unsigned long long* bad = nullptr;
  cuda(cudaMalloc(&bad, sizeof *bad));
  cuda(cudaMemsetAsync(bad, 0, sizeof *bad, s));
  halox_test::verify(g, salt, bad, s);
  unsigned long long v = 0;
  cuda(cudaMemcpyAsync(&v, bad, sizeof v, cudaMemcpyDeviceToHost, s));
  cuda(cudaStreamSynchronize(s));
  cuda(cudaFree(bad));
  return v;
}

}  // namespace gpu_test
