// How halo_bench times a row: the slowest rank's time per blocking exchange, and (CUDA builds)
// the per-iteration time of a loop of stream-ordered exchanges.
#pragma once
#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

#include <mpi.h>

#include "setup.hpp"
#ifdef HALOX_BENCH_CUDA
#include <cuda_runtime.h>
#endif

namespace halo_bench {

// Median and minimum over `iters` exchanges of the slowest rank's time, in microseconds.
inline std::pair<double, double> time_it(const mpi::communicator& comm, int warmup, int iters,
                                         const std::function<void()>& run) {
  for (int k = 0; k < warmup; ++k) run();
  std::vector<double> t;
  for (int k = 0; k < iters; ++k) {
    comm.barrier();
    const double t0 = MPI_Wtime();
    run();
    const double mine = MPI_Wtime() - t0;
    t.push_back(mpi::all_reduce(comm, mine, mpi::maximum<double>()) * 1e6);
  }
  std::sort(t.begin(), t.end());
  return {t[t.size() / 2], t.front()};
}

#ifdef HALOX_BENCH_CUDA
// Per-iteration time of `iters` calls of `launch` on `st` after 10 untimed ones: no host
// synchronisation inside the loop; CUDA events; the slowest rank's. `host_us`, if given: the
// host's time per call of `launch` in the same loop (the slowest rank's): where it is close to
// the result, the host's calls are the bound, not the GPU.
inline double stream_loop_us(const mpi::communicator& world, cudaStream_t st,
                             const std::function<void(cudaStream_t)>& launch, int iters,
                             double* host_us = nullptr) {
  gpu_timer timer;
  for (int k = 0; k < 10; ++k) launch(st);
  cuda_check(cudaStreamSynchronize(st));
  world.barrier();
  timer.start(st);
  const double h0 = MPI_Wtime();
  for (int k = 0; k < iters; ++k) launch(st);
  const double host = (MPI_Wtime() - h0) * 1e6 / iters;
  timer.stop(st);
  const double us = timer.us() / iters;
  if (host_us != nullptr) *host_us = mpi::all_reduce(world, host, mpi::maximum<double>());
  return mpi::all_reduce(world, us, mpi::maximum<double>());
}

// Per-iteration time of a loop of `iters` stream-ordered exchanges (`enqueue`: schedule_exchange
// then schedule_wait on the stream) as a solver's time steps run them: no host synchronisation
// inside the loop; CUDA events; the slowest rank's.
inline double scheduled_loop_us(const mpi::communicator& world,
                                const std::function<void(cudaStream_t)>& enqueue, int iters,
                                double* host_us = nullptr) {
  cudaStream_t st;
  cuda_check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  const double us = stream_loop_us(world, st, enqueue, iters, host_us);
  cuda_check(cudaStreamDestroy(st));
  return us;
}

// Time per exchange of a loop of `per_graph` stream-ordered exchanges (`enqueue`, one each)
// captured once into a CUDA graph, the graph replayed back to back on one stream until
// `iters` exchanges ran (CUDA events; the slowest rank's). As a solver captures its time steps:
// several in one graph, so that a graph's launch is not paid per exchange.
inline double graph_loop_us(const mpi::communicator& world,
                            const std::function<void(cudaStream_t)>& enqueue, int iters,
                            int per_graph = 10) {
  cudaStream_t st;
  cuda_check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  cuda_check(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  for (int k = 0; k < per_graph; ++k) enqueue(st);
  cuda_check(cudaStreamEndCapture(st, &graph));
  cuda_check(cudaGraphInstantiate(&exec, graph, 0));
  cuda_check(cudaGraphDestroy(graph));
  cuda_check(cudaGraphUpload(exec, st));
  const int replays = std::max(1, iters / per_graph);
  const double us =
      stream_loop_us(
          world, st, [&](cudaStream_t s) { cuda_check(cudaGraphLaunch(exec, s)); }, replays) /
      per_graph;
  cuda_check(cudaGraphExecDestroy(exec));
  cuda_check(cudaStreamDestroy(st));
  return us;
}

// One stream-ordered exchange of `ex` on a stream, for scheduled_loop_us and kernel_us.
inline std::function<void(cudaStream_t)> scheduled(halox::halo_exchange& ex) {
  return [&ex](cudaStream_t s) {
    ex.schedule_exchange(s);
    ex.schedule_wait(s);
  };
}
#endif

}  // namespace halo_bench
