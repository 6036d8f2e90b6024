// The floor every halo_bench row is compared with: the hardware's own copies of the same bytes,
// measured in the same run (host memcpy; on GPUs the D2D and peer copy bandwidths and an empty
// kernel launch).
#pragma once
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <mpi.h>

#include "setup.hpp"
#ifdef HALOX_BENCH_CUDA
#include <cuda_runtime.h>

#include "region_kernel.hpp"
#endif

namespace halo_bench {

/// A row's floor: its time in us and the JSON fields that say what it counts (each starting
/// with a comma, `floor_us` included, the ratio not).
struct floor_of_row {
  double us = 0;
  std::string fields;
};

/// `fmt` with its arguments, as std::snprintf writes it (the JSON pieces of a row).
template <class... A>
std::string json_piece(const char* fmt, A... a) {
  std::string out(std::size_t(std::max(std::snprintf(nullptr, 0, fmt, a...), 0)), '\0');
  std::snprintf(out.data(), out.size() + 1, fmt, a...);
  return out;
}

/// The fields a row adds for its floor: `floor_us`, then `ratio_to_floor` of the time `of`
/// (named in `ratio_of`), or null where the floor is zero.
inline std::string floor_fields(const floor_of_row& f, const char* of, double us) {
  return f.fields +
         json_piece(",\"ratio_to_floor\":%.3f,\"ratio_of\":\"%s\"", f.us > 0 ? us / f.us : 0.0, of);
}

/// Host memcpy bandwidth for copies of `bytes` (bytes copied per second, in GB/s; the slowest
/// rank's): the median of `reps` copies between two buffers of that size after two untimed
/// ones, every rank of `comm` copying at the same time, as every rank exchanges at once.
inline double memcpy_gbps(const mpi::communicator& comm, std::size_t bytes, int reps) {
  bytes = std::max<std::size_t>(bytes, 64);
  std::vector<unsigned char> a(bytes, 1), b(bytes, 0);
  volatile unsigned char sink = 0;  // reads the copy, so that it is not optimised away
  std::vector<double> t;
  for (int k = 0; k < reps + 2; ++k) {
    comm.barrier();
    const double t0 = MPI_Wtime();
    std::memcpy(b.data(), a.data(), bytes);
    const double dt = MPI_Wtime() - t0;
    sink = sink + b[(std::size_t(k) * 4099) % bytes];
    a[std::size_t(k) % bytes] = static_cast<unsigned char>(k);
    if (k >= 2) t.push_back(dt);
  }
  std::sort(t.begin(), t.end());
  const double mine = double(bytes) / std::max(t[t.size() / 2], 1e-9) / 1e9;
  return mpi::all_reduce(comm, mine, mpi::minimum<double>());
}

/// CPU rows: `bytes` (this rank's halo bytes) copied once at the same run's host memcpy
/// bandwidth for a copy of that size (the slowest rank's).
inline floor_of_row host_floor(const mpi::communicator& comm, std::size_t bytes) {
  const double gbps = memcpy_gbps(comm, bytes, 50);
  const double us = mpi::all_reduce(comm, double(bytes) / (gbps * 1e3), mpi::maximum<double>());
  return {us, json_piece(",\"floor_counts\":\"halo bytes copied once at host memcpy\","
                         "\"floor_bytes\":%zu,\"memcpy_GBps\":%.1f,\"floor_us\":%.3f",
                         bytes, gbps, us)};
}
inline floor_of_row host_floor(const mpi::communicator& comm, const setup& s) {
  return host_floor(comm, s.halo_bytes());
}

#ifdef HALOX_BENCH_CUDA

// Device-to-device copy bandwidth of this GPU (bytes read + written per second).
inline double d2d_bandwidth_gbps() {
  const std::size_t bytes = std::size_t(256) << 20;
  void *a = nullptr, *b = nullptr;
  cuda_check(cudaMalloc(&a, bytes));
  cuda_check(cudaMalloc(&b, bytes));
  gpu_timer timer;
  cuda_check(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
  timer.start();
  const int reps = 20;
  for (int k = 0; k < reps; ++k) cuda_check(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice));
  timer.stop();
  const double us = timer.us();
  cuda_check(cudaFree(a));
  cuda_check(cudaFree(b));
  return 2.0 * double(bytes) * reps / (us * 1e-6) / 1e9;
}

// GPU time alone of the work `enqueue` puts on a stream: median over `iters` runs, each queued
// behind a hold (500 us per exchange) so that the events around it see no host gaps (CUDA
// events, in us).
// With `batch` > 1, each run is `batch` enqueues back to back between the events, divided by
// `batch`: the GPU time per exchange when exchanges follow each other, as the D2D bandwidth
// is measured (20 copies back to back).
inline double kernel_us(int iters, const std::function<void(cudaStream_t)>& enqueue,
                        int batch = 1) {
  cudaStream_t stream;
  cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::vector<double> t;
  {
    gpu_timer timer;
    for (int k = 0; k < iters; ++k) {
      cuda_check(halo_bench::hold(stream, 500 * batch));
      timer.start(stream);
      for (int b = 0; b < batch; ++b) enqueue(stream);
      timer.stop(stream);
      t.push_back(timer.us() / batch);
    }
  }
  cuda_check(cudaStreamDestroy(stream));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Peer copy bandwidth between GPU 0 and GPU 1 of this process (the ceiling for one message of
// `bytes`): median over `reps` copies, in GB/s. Needs both GPUs visible and peer access.
inline double peer_copy_gbps(std::size_t bytes, int reps) {
  int here = 0, can = 0;
  int gpus = 0;
  cuda_check(cudaGetDeviceCount(&gpus));
  if (gpus < 2) return 0;
  cuda_check(cudaGetDevice(&here));
  const int other = here == 0 ? 1 : 0;
  cuda_check(cudaDeviceCanAccessPeer(&can, here, other));
  if (!can) return 0;
  enable_peer_access(other);
  void *src = nullptr, *dst = nullptr;
  cuda_check(cudaMalloc(&src, bytes));
  cuda_check(cudaSetDevice(other));
  cuda_check(cudaMalloc(&dst, bytes));
  cuda_check(cudaSetDevice(here));
  cudaStream_t s;
  cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::vector<double> t;
  {
    gpu_timer timer;
    for (int k = 0; k < reps + 3; ++k) {
      timer.start(s);
      cuda_check(cudaMemcpyPeerAsync(dst, other, src, here, bytes, s));
      timer.stop(s);
      if (k >= 3) t.push_back(timer.us() * 1e-6);
    }
  }
  std::sort(t.begin(), t.end());
  cuda_check(cudaStreamDestroy(s));
  cuda_check(cudaFree(src));
  cuda_check(cudaSetDevice(other));
  cuda_check(cudaFree(dst));
  cuda_check(cudaSetDevice(here));
  return double(bytes) / t[t.size() / 2] / 1e9;
}

// The latency floors of a replayed exchange round between GPU 0 and GPU 1 of this process
// (--sweep --graph, rank 0): the one-way trip of a flag (a store-release into the other GPU's
// memory, seen by its acquire-polling thread: half the round trip of `n` ping-pongs), and what
// one more dependent kernel node costs in a replayed CUDA graph (a chain of `nodes` empty
// kernels, replayed `reps` times). Microseconds; 0 where there is no second GPU with peer access.
struct latency_floors {
  double flag_one_way_us = 0;
  double graph_node_us = 0;
};

inline double flag_one_way_us(int here, int other, int n) {
  unsigned long long *a = nullptr, *b = nullptr;  // a on this GPU, b on the other
  cudaStream_t sa, sb;
  cuda_check(cudaMalloc(&a, sizeof *a));
  cuda_check(cudaMemset(a, 0, sizeof *a));
  cuda_check(cudaStreamCreateWithFlags(&sa, cudaStreamNonBlocking));
  cuda_check(cudaSetDevice(other));
  enable_peer_access(here);
  cuda_check(cudaMalloc(&b, sizeof *b));
  cuda_check(cudaMemset(b, 0, sizeof *b));
  cuda_check(cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking));
  cuda_check(cudaDeviceSynchronize());
  cuda_check(flag_ping(a, b, n, false, sb));  // the answering side first: it only polls
  cuda_check(cudaSetDevice(here));
  double us = 0;
  {
    gpu_timer timer;
    timer.start(sa);
    cuda_check(flag_ping(b, a, n, true, sa));
    timer.stop(sa);
    us = timer.us() / (2.0 * n);
  }
  cuda_check(cudaStreamDestroy(sa));
  cuda_check(cudaFree(a));
  cuda_check(cudaSetDevice(other));
  cuda_check(cudaStreamSynchronize(sb));
  cuda_check(cudaStreamDestroy(sb));
  cuda_check(cudaFree(b));
  cuda_check(cudaSetDevice(here));
  return us;
}

inline double graph_node_us(int nodes, int reps) {
  cudaStream_t s;
  cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t g = nullptr;
  cudaGraphExec_t exec = nullptr;
  cuda_check(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int k = 0; k < nodes; ++k) cuda_check(empty_kernel(s));
  cuda_check(cudaStreamEndCapture(s, &g));
  cuda_check(cudaGraphInstantiate(&exec, g, 0));
  cuda_check(cudaGraphDestroy(g));
  for (int k = 0; k < 3; ++k) cuda_check(cudaGraphLaunch(exec, s));
  double us = 0;
  {
    gpu_timer timer;
    timer.start(s);
    for (int k = 0; k < reps; ++k) cuda_check(cudaGraphLaunch(exec, s));
    timer.stop(s);
    us = timer.us() / (double(reps) * nodes);
  }
  cuda_check(cudaGraphExecDestroy(exec));
  cuda_check(cudaStreamDestroy(s));
  return us;
}

inline latency_floors measure_latency_floors() {
  latency_floors f;
  int here = 0, gpus = 0, can = 0;
  cuda_check(cudaGetDeviceCount(&gpus));
  cuda_check(cudaGetDevice(&here));
  f.graph_node_us = graph_node_us(20, 50);
  if (gpus < 2) return f;
  const int other = here == 0 ? 1 : 0;
  cuda_check(cudaDeviceCanAccessPeer(&can, here, other));
  if (!can) return f;
  enable_peer_access(other);
  f.flag_one_way_us = flag_one_way_us(here, other, 2000);
  return f;
}

/// What the GPU floors are made of, measured once per run on every rank's GPU.
struct gpu_rates {
  double d2d_gbps = 0;   // bytes read + written per second, the slowest rank's GPU
  double launch_us = 0;  // an empty kernel behind an event, timed as kernel_us (the slowest)
};

/// Latency of an empty kernel launch, timed as `kernel_us` times the baselines: queued behind
/// a hold, between two events (median over `iters`, in us).
inline double empty_launch_us(int iters) {
  return kernel_us(iters, [](cudaStream_t s) { cuda_check(empty_kernel(s)); });
}

/// GPU rows. One rank: the halo bytes read and written once at the D2D bandwidth, plus an empty
/// launch. Several ranks: the larger of the bytes from other ranks over the peer link at the
/// peer copy bandwidth (GPU 0 to GPU 1, measured on rank 0 for a copy of the largest rank's
/// peer bytes) and the local bytes read and written at D2D, plus an empty launch; the slowest
/// rank's. For ranks of one node: the peer link measured is NVLink or PCIe, not a network.
/// Where rank 0 sees no second GPU with peer access (ranks sharing a GPU), all the halo bytes
/// count at D2D, and `floor_counts` says so.
/// `peer`: this rank's halo bytes from other ranks, `local`: from itself (periodic images).
inline floor_of_row device_floor(const mpi::communicator& comm, std::size_t peer, std::size_t local,
                                 const gpu_rates& r) {
  const std::size_t most_peer = mpi::all_reduce(comm, peer, mpi::maximum<std::size_t>());
  double peer_gbps = 0;
  if (most_peer > 0) {
    if (comm.rank() == 0) peer_gbps = peer_copy_gbps(most_peer, 20);
    mpi::broadcast(comm, peer_gbps, 0);
  }
  const double d2d = r.d2d_gbps * 1e3;  // bytes per us
  const double mine = peer_gbps > 0
                          ? std::max(double(peer) / (peer_gbps * 1e3), 2 * double(local) / d2d)
                          : 2 * double(peer + local) / d2d;  // one GPU's memory moves it all
  const double copy_us = mpi::all_reduce(comm, mine, mpi::maximum<double>());
  const double us = copy_us + r.launch_us;
  const char* counts =
      comm.size() == 1 ? "halo bytes read and written once at D2D, plus an empty launch"
      : peer_gbps > 0
          ? "max(peer bytes at peer copy, local bytes read and written at D2D), plus an empty "
            "launch"
          : "halo bytes read and written once at D2D (no peer link measured), plus an empty "
            "launch";
  return {us, json_piece(",\"floor_counts\":\"%s\",\"floor_bytes\":%zu,\"peer_bytes\":%zu,"
                         "\"local_bytes\":%zu,\"d2d_GBps\":%.1f,\"peer_copy_GBps\":%.1f,"
                         "\"launch_us\":%.2f,\"floor_copy_us\":%.3f,\"floor_us\":%.3f",
                         counts, peer + local, peer, local, r.d2d_gbps, peer_gbps, r.launch_us,
                         copy_us, us)};
}
inline floor_of_row device_floor(const mpi::communicator& comm, const setup& s,
                                 const gpu_rates& r) {
  return device_floor(comm, s.peer_bytes(), s.halo_bytes() - s.peer_bytes(), r);
}
#endif

}  // namespace halo_bench
