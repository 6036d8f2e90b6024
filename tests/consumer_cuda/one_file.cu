// A kernel writes the owned cells of a device field, a stream-ordered exchange fills its halo,
// a second kernel checks every halo cell against the global coordinates: one .cu file, which
// includes halox and so is compiled as C++20 (CUDA_STANDARD 20 on its target).
#include <cuda_runtime.h>

#include <cstdio>

#include <boost/mpi/collectives.hpp>
#include <halox/halox.hpp>

static_assert(__cplusplus >= 202002L, "a .cu that includes halox is C++20 (CUDA_STANDARD 20)");

namespace {

struct layout {
  long long lo0, lo1, n0, n1;  // allocated box (halo included)
  long long s0, s1;            // element strides
  long long g0, g1;            // global extents
};

__device__ double value(long long i, long long j, const layout& l) {
  const long long gi = (i % l.g0 + l.g0) % l.g0, gj = (j % l.g1 + l.g1) % l.g1;  // periodic
  return 1000.0 * double(gi) + double(gj);
}

// Owned cells [o0, o1) x [p0, p1) get their global value; the halo gets -1.
__global__ void fill(double* u, layout l, long long o0, long long o1, long long p0, long long p1) {
  const long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (k >= l.n0 * l.n1) return;
  const long long i = l.lo0 + k / l.n1, j = l.lo1 + k % l.n1;
  const bool owned = i >= o0 && i < o1 && j >= p0 && j < p1;
  u[(i - l.lo0) * l.s0 + (j - l.lo1) * l.s1] = owned ? value(i, j, l) : -1.0;
}

// Counts cells (halo included) whose value is not the global one.
__global__ void verify(const double* u, layout l, unsigned long long* bad) {
  const long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (k >= l.n0 * l.n1) return;
  const long long i = l.lo0 + k / l.n1, j = l.lo1 + k % l.n1;
  if (u[(i - l.lo0) * l.s0 + (j - l.lo1) * l.s1] != value(i, j, l)) atomicAdd(bad, 1ull);
}

}  // namespace

int main(int argc, char** argv) {
  boost::mpi::environment env(argc, argv);
  boost::mpi::communicator world;
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
    std::printf("rank %d: no GPU, nothing to run\n", world.rank());
    return 77;  // skipped
  }
  cudaSetDevice(world.rank() % gpus);
  constexpr auto st = halox::stencil<2>::box(2);
  const halox::cartesian<2> dom(world, {40, 24}, halox::periodic{true, true});
  auto u = dom.make_field<double>(st, halox::device);
  const auto a = u.allocated_box(), o = u.owned_box();
  const layout l{
      a.lo[0], a.lo[1], a.hi[0] - a.lo[0], a.hi[1] - a.lo[1], u.strides()[0], u.strides()[1],
      40,      24};
  auto ex = halox::make_exchange(dom, st, u);
  cudaStream_t s;
  cudaStreamCreate(&s);
  unsigned long long* bad = nullptr;
  cudaMalloc(&bad, sizeof *bad);
  cudaMemsetAsync(bad, 0, sizeof *bad, s);
  const int threads = 256, blocks = int((l.n0 * l.n1 + threads - 1) / threads);
  fill<<<blocks, threads, 0, s>>>(u.data(), l, o.lo[0], o.hi[0], o.lo[1], o.hi[1]);
  ex.schedule_exchange(s);  // packs after fill, in stream order
  ex.schedule_wait(s);      // s waits for the unpack
  verify<<<blocks, threads, 0, s>>>(u.data(), l, bad);
  unsigned long long wrong = 0;
  cudaMemcpyAsync(&wrong, bad, sizeof wrong, cudaMemcpyDeviceToHost, s);
  const cudaError_t rc = cudaStreamSynchronize(s);
  std::printf("rank %d: %llu wrong cells (%s)\n", world.rank(), wrong, cudaGetErrorString(rc));
  cudaFree(bad);
  cudaStreamDestroy(s);
  const unsigned long long all =
      boost::mpi::all_reduce(world, wrong + (rc != cudaSuccess), std::plus<unsigned long long>());
  return all == 0 ? 0 : 1;
}
