// The locality decision's GPU side (see transport/locality.hpp): which GPU this process uses,
// which GPUs it reaches, and whether CUDA IPC reaches those it cannot see. Alone in its file so
// that anything that decides locality (exchanges, chains) can link it without the transports.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/check.hpp"
#include "gpu/memory.hpp"
#include "gpu/stream.hpp"
#include "halox/core/format.hpp"
#include "mpi/check.hpp"
#include "transport/locality.hpp"

namespace halox::detail {

std::string current_gpu_bus_id(int rank) {
  int dev = 0;
  char bus[32] = {};
  gpu::check(cudaGetDevice(&dev), "cudaGetDevice", rank);
  gpu::check(cudaDeviceGetPCIBusId(bus, sizeof bus, dev), "cudaDeviceGetPCIBusId", rank);
  return bus;
}

gpu_access gpu_reaches(const std::string& bus, int rank) {
  int dev = 0, other = -1, can = 0;
  gpu::check(cudaGetDevice(&dev), "cudaGetDevice", rank);
  // Unchecked on purpose: a GPU this process cannot see or reach is an answer (no), not an error.
  if (cudaDeviceGetByPCIBusId(&other, bus.c_str()) != cudaSuccess) {
    (void)cudaGetLastError();  // not visible to this process
    return gpu_access::not_visible;
  }
  const bool peer = cudaDeviceCanAccessPeer(&can, dev, other) == cudaSuccess && can != 0;
  return peer ? gpu_access::peer : gpu_access::no_peer_access;
}

namespace {

constexpr std::string_view probe_part = "CUDA IPC probe";
constexpr int tag_probe = 31;  // the exchange's own communicator (routes.cpp uses 30)
constexpr int wrong_marker = -1;

std::uint64_t marker_of(int rank) {
  return 0x68616c6f78000000ULL + std::uint64_t(rank);  // "halox" and the rank
}

// Sends `bytes` from `out` (the same for every peer where `stride` is 0, else out + k * stride)
// to each of `peers` and receives `bytes` from each into in + k * bytes.
void trade(MPI_Comm comm, const std::vector<int>& peers, const void* out, std::size_t stride,
           void* in, std::size_t bytes, int me, const char* what) {
  std::vector<MPI_Request> reqs(2 * peers.size());
  for (std::size_t k = 0; k < peers.size(); ++k) {
    mpi::check(MPI_Irecv(static_cast<char*>(in) + k * bytes, int(bytes), MPI_BYTE, peers[k],
                         tag_probe, comm, &reqs[2 * k]),
               "MPI_Irecv", me, probe_part, peers[k]);
    mpi::check(MPI_Isend(static_cast<const char*>(out) + k * stride, int(bytes), MPI_BYTE, peers[k],
                         tag_probe, comm, &reqs[2 * k + 1]),
               "MPI_Isend", me, probe_part, peers[k]);
  }
  mpi::check(MPI_Waitall(int(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE), what, me, probe_part);
}

// Opens rank `owner`'s exported buffer, reads its marker and closes it: 0 where that worked,
// else the CUDA error (wrong_marker: the read gave another value). A failure is an answer, not
// an error, so the calls that may fail are not checked (their error is cleared).
int try_open(const cudaIpcMemHandle_t& h, int owner, int me) {
  void* p = nullptr;
  cudaError_t rc = cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess);
  if (rc != cudaSuccess) {
    (void)cudaGetLastError();
    return int(rc);
  }
  std::uint64_t v = 0;
  rc = cudaMemcpy(&v, p, sizeof v, cudaMemcpyDeviceToHost);
  if (rc != cudaSuccess) (void)cudaGetLastError();
  gpu::check(cudaIpcCloseMemHandle(p), "cudaIpcCloseMemHandle(CUDA IPC probe)", me);
  if (rc != cudaSuccess) return int(rc);
  return v == marker_of(owner) ? 0 : wrong_marker;
}

std::string failed_open(int opener, int owner, int code) {
  const char* what = code == wrong_marker ? "read back another value"
                                          : cudaGetErrorName(static_cast<cudaError_t>(code));
  return format("rank {} could not open rank {}'s memory: {}", opener, owner, what);
}

}  // namespace

std::vector<std::string> probe_hidden_ipc(MPI_Comm comm, const std::vector<int>& peers, int me) {
  const std::size_t n = peers.size();
  std::vector<std::string> why(n);
  if (n == 0) return why;
  // The marker is written on a stream of the probe's own and synchronised: a copy from pageable
  // memory may return before the value is in device memory, and the peers read it next.
  const gpu::device_array<std::uint64_t> buf(32, "CUDA IPC probe", me);
  const std::uint64_t mine = marker_of(me);
  const gpu::stream s(cudaStreamNonBlocking, me);
  gpu::check(cudaMemcpyAsync(buf.get(), &mine, sizeof mine, cudaMemcpyHostToDevice, s.get()),
             "cudaMemcpyAsync(CUDA IPC probe)", me);
  gpu::check(cudaStreamSynchronize(s.get()), "cudaStreamSynchronize(CUDA IPC probe)", me);
  cudaIpcMemHandle_t handle{};
  gpu::check(cudaIpcGetMemHandle(&handle, buf.get()), "cudaIpcGetMemHandle(CUDA IPC probe)", me);
  std::vector<cudaIpcMemHandle_t> theirs(n);
  trade(comm, peers, &handle, 0, theirs.data(), sizeof handle, me, "MPI_Waitall(IPC handles)");
  std::vector<int> opened(n), answers(n);
  for (std::size_t k = 0; k < n; ++k) opened[k] = try_open(theirs[k], peers[k], me);
  // Each peer has closed this rank's buffer once its answer is here (`buf` may go).
  trade(comm, peers, opened.data(), sizeof(int), answers.data(), sizeof(int), me,
        "MPI_Waitall(IPC answers)");
  for (std::size_t k = 0; k < n; ++k)
    if (opened[k] != 0)
      why[k] = failed_open(me, peers[k], opened[k]);
    else if (answers[k] != 0)
      why[k] = failed_open(peers[k], me, answers[k]);
  return why;
}

}  // namespace halox::detail
