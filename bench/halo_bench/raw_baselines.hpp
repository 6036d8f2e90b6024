// halo_bench --sweep's ceilings, measured in the same run as halox's rows, between the same two
// ranks and for the same message size:
// - raw_nccl: NCCL without halox, one grouped ncclSend/ncclRecv of the message each way per
//   round on one stream (its own communicator): blocking rounds (median of the slower rank) and
//   a loop of rounds with no host synchronisation inside (CUDA events), as halox's rows;
// - raw_nccl_pieces: the same, the message cut into two equal sends and two receives in the
//   group, as halox sends the sweep's message (its two faces, zero-copy): what NCCL itself
//   makes of those pieces;
// - mpi_pinned_host: MPI_Isend/MPI_Irecv of pinned host memory each way (what host staging
//   hands MPI), blocking rounds;
// - pinned_copy: one cudaMemcpyAsync each way between device memory and pinned host memory
//   (host staging's other two legs).
#pragma once
#include <algorithm>
#include <cstdio>
#include <memory>
#include <utility>
#include <string>
#include <vector>

#include <mpi.h>

#include <cuda_runtime.h>
#ifdef HALOX_BENCH_NCCL
#include <nccl.h>
#endif

#include "setup.hpp"
#include "timing.hpp"

namespace halo_bench {

// Whether the ranks of `world` each have a GPU of their own (by PCI bus id).
inline bool distinct_gpus(const mpi::communicator& world) {
  int dev = 0;
  cuda_check(cudaGetDevice(&dev));
  char mine[32] = {};
  cuda_check(cudaDeviceGetPCIBusId(mine, int(sizeof mine), dev));
  std::vector<char> all(sizeof mine * std::size_t(world.size()));
  MPI_Allgather(mine, int(sizeof mine), MPI_CHAR, all.data(), int(sizeof mine), MPI_CHAR,
                MPI_Comm(world));
  for (int a = 0; a < world.size(); ++a)
    for (int b = 0; b < a; ++b)
      if (std::string(&all[sizeof mine * std::size_t(a)]) == &all[sizeof mine * std::size_t(b)])
        return false;
  return true;
}

struct raw_row {
  double median_us = 0, loop_us = 0, loop_host_us = 0;
};

#ifdef HALOX_BENCH_NCCL
inline void nccl_check(ncclResult_t rc) {
  if (rc != ncclSuccess)
    throw halox::error(std::string("halo_bench: NCCL: ") + ncclGetErrorString(rc));
}

// One NCCL communicator over the two ranks of `world`, for the raw rows of every size.
class raw_nccl {
 public:
  explicit raw_nccl(const mpi::communicator& world) : world_(world) {
    ncclUniqueId id{};
    if (world.rank() == 0) nccl_check(ncclGetUniqueId(&id));
    MPI_Bcast(&id, int(sizeof id), MPI_BYTE, 0, MPI_Comm(world));
    nccl_check(ncclCommInitRank(&comm_, world.size(), id, world.rank()));
    cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  ~raw_nccl() {
    (void)cudaStreamSynchronize(stream_);
    (void)ncclCommDestroy(comm_);
    (void)cudaStreamDestroy(stream_);
  }
  raw_nccl(const raw_nccl&) = delete;
  raw_nccl& operator=(const raw_nccl&) = delete;

  // `bytes` to the other rank and `bytes` from it per round, each way as `pieces` equal calls
  // (the sends first, then the receives, as halox groups them).
  raw_row measure(std::size_t bytes, int warmup, int iters, int pieces = 1) {
    char *send = nullptr, *recv = nullptr;
    cuda_check(cudaMalloc(&send, bytes));
    cuda_check(cudaMalloc(&recv, bytes));
    const int peer = 1 - world_.rank();
    const std::size_t piece = bytes / std::size_t(pieces);
    auto round = [&](cudaStream_t s) {
      nccl_check(ncclGroupStart());
      for (int k = 0; k < pieces; ++k)
        nccl_check(ncclSend(send + piece * std::size_t(k), piece, ncclUint8, peer, comm_, s));
      for (int k = 0; k < pieces; ++k)
        nccl_check(ncclRecv(recv + piece * std::size_t(k), piece, ncclUint8, peer, comm_, s));
      nccl_check(ncclGroupEnd());
    };
    raw_row r;
    r.median_us = time_it(world_, warmup, iters, [&] {
                    round(stream_);
                    cuda_check(cudaStreamSynchronize(stream_));
                  }).first;
    r.loop_us = scheduled_loop_us(world_, round, iters, &r.loop_host_us);
    cuda_check(cudaFree(send));
    cuda_check(cudaFree(recv));
    return r;
  }

 private:
  const mpi::communicator& world_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
};
#endif

// MPI_Isend/MPI_Irecv of `bytes` of pinned host memory each way between the two ranks: the
// median blocking round of the slower rank.
inline double mpi_pinned_us(const mpi::communicator& world, std::size_t bytes, int warmup,
                            int iters) {
  void *send = nullptr, *recv = nullptr;
  cuda_check(cudaMallocHost(&send, bytes));
  cuda_check(cudaMallocHost(&recv, bytes));
  const int peer = 1 - world.rank();
  // In pieces of at most 1 GiB (MPI counts are ints).
  const int n = int(bytes);
  const double us = time_it(world, warmup, iters, [&] {
                      MPI_Request r[2];
                      MPI_Irecv(recv, n, MPI_BYTE, peer, 7, MPI_Comm(world), &r[0]);
                      MPI_Isend(send, n, MPI_BYTE, peer, 7, MPI_Comm(world), &r[1]);
                      MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
                    }).first;
  cuda_check(cudaFreeHost(send));
  cuda_check(cudaFreeHost(recv));
  return us;
}

// One cudaMemcpyAsync of `bytes` from device to pinned host memory, and one back: the median
// of each, on this rank (GPU events).
inline std::pair<double, double> pinned_copy_us(std::size_t bytes, int iters) {
  void *dev = nullptr, *host = nullptr;
  cuda_check(cudaMalloc(&dev, bytes));
  cuda_check(cudaMallocHost(&host, bytes));
  cudaStream_t s;
  cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  auto median = [&](void* dst, const void* src) {
    gpu_timer timer;
    std::vector<double> t;
    for (int k = 0; k < iters + 3; ++k) {
      timer.start(s);
      cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s));
      timer.stop(s);
      if (k >= 3) t.push_back(timer.us());
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  const double d2h = median(host, dev), h2d = median(dev, host);
  cuda_check(cudaStreamDestroy(s));
  cuda_check(cudaFree(dev));
  cuda_check(cudaFreeHost(host));
  return {d2h, h2d};
}

// The ceilings' rows for one message size (rank 0 prints).
inline void print_raw_rows(const mpi::communicator& world, std::size_t bytes, int iters,
                           [[maybe_unused]] void* nccl) {
  const std::size_t kib = bytes >> 10;
#ifdef HALOX_BENCH_NCCL
  if (nccl != nullptr)
    for (const int pieces : {1, 2}) {
      const raw_row r = static_cast<raw_nccl*>(nccl)->measure(bytes, 10, iters, pieces);
      if (world.rank() == 0)
        std::printf(
            "{\"impl\":\"%s\",\"case\":\"sweep %zu KiB\",\"ranks\":2,\"message_bytes\":%zu,"
            "\"pieces\":%d,\"iters\":%d,\"median_us\":%.2f,\"loop_us\":%.2f,"
            "\"loop_host_us\":%.2f,\"GBps\":%.1f,\"loop_GBps\":%.1f}\n",
            pieces == 1 ? "raw_nccl" : "raw_nccl_pieces", kib, bytes, pieces, iters, r.median_us,
            r.loop_us, r.loop_host_us, double(bytes) / r.median_us / 1e3,
            double(bytes) / r.loop_us / 1e3);
    }
#endif
  const double mpi_us = mpi_pinned_us(world, bytes, 3, iters);
  const auto [d2h, h2d] = pinned_copy_us(bytes, 20);
  const double d2h_max = mpi::all_reduce(world, d2h, mpi::maximum<double>());
  const double h2d_max = mpi::all_reduce(world, h2d, mpi::maximum<double>());
  if (world.rank() == 0) {
    std::printf(
        "{\"impl\":\"mpi_pinned_host\",\"case\":\"sweep %zu KiB\",\"ranks\":2,"
        "\"message_bytes\":%zu,\"iters\":%d,\"median_us\":%.2f,\"GBps\":%.1f}\n",
        kib, bytes, iters, mpi_us, double(bytes) / mpi_us / 1e3);
    std::printf(
        "{\"impl\":\"pinned_copy\",\"case\":\"sweep %zu KiB\",\"ranks\":2,\"message_bytes\":%zu,"
        "\"d2h_us\":%.2f,\"h2d_us\":%.2f,\"d2h_GBps\":%.1f,\"h2d_GBps\":%.1f}\n",
        kib, bytes, d2h_max, h2d_max, double(bytes) / d2h_max / 1e3,
        double(bytes) / h2d_max / 1e3);
  }
  std::fflush(stdout);
}

}  // namespace halo_bench
