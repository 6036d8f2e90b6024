// The exchange side of the app: C++ (C++20 because it includes halox), CUDA runtime calls only.
// A kernel fills the owned cells, a stream-ordered exchange fills the halo, a second kernel
// checks every cell against the global coordinates.
#include <cstdio>
#include <functional>

#include <boost/mpi/collectives.hpp>
#include <halox/halox.hpp>

#include "kernels.hpp"

static_assert(__cplusplus >= 202002L, "halox gives C++20 to the C++ sources that include it");

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
  launch_fill(u.data(), l, o.lo[0], o.hi[0], o.lo[1], o.hi[1], s);
  ex.schedule_exchange(s);  // packs after fill, in stream order
  ex.schedule_wait(s);      // s waits for the unpack
  launch_verify(u.data(), l, bad, s);
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
