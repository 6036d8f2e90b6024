#pragma once
/// @file
/// Device messages through NCCL: the messages of an exchange that do not travel through CUDA
/// IPC go as one `ncclGroupStart` / `ncclSend`·`ncclRecv` / `ncclGroupEnd` per exchange,
/// enqueued on halox's stream between the pack and the unpack kernels, so no host thread waits
/// for them. One NCCL communicator serves every exchange object over congruent MPI
/// communicators (the same ranks in the same order: each object's duplicate of one domain's
/// communicator), created collectively the first time one needs it and destroyed with the last;
/// the groups of all those objects run one after another on the GPUs, in the order the ranks
/// issue them (which every rank issues alike), whatever streams they use. Compiles without
/// nvcc and without NCCL (then no exchange uses it).

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <mpi.h>

#include "halox/program/program.hpp"

namespace halox::detail {

/// Whether this halox was built with the NCCL transport.
bool nccl_built() noexcept;

class nccl_path {
 public:
  /// Collective over `comm` (every rank calls it, whether or not it has messages): the NCCL
  /// communicator for `comm` (shared, see above) and this rank's messages over the device
  /// buffers `send_buf`/`recv_buf` at the messages' offsets. Throws halox::error (on every
  /// rank) when NCCL fails to set up, or when two ranks of `comm` on one node share a GPU
  /// (`gpu_shared`, which NCCL does not allow).
  static std::unique_ptr<nccl_path> attach(MPI_Comm comm, bool gpu_shared,
                                           const std::vector<message>& sends,
                                           const std::byte* send_buf,
                                           const std::vector<message>& recvs, std::byte* recv_buf);
  ~nccl_path();
  nccl_path(const nccl_path&) = delete;
  nccl_path& operator=(const nccl_path&) = delete;

  /// Enqueues this rank's sends and receives on `stream` (a `cudaStream_t`) as one group.
  void enqueue(void* stream);
  /// Raises an asynchronous NCCL error (a peer that failed, a broken connection) as
  /// halox::error naming this rank; called where an exchange completes.
  void check_async();
  /// For describe(): "NCCL 2.28.3 (one communicator for N exchange object(s) on this
  /// communicator)".
  std::string describe() const;

  struct impl;

 private:
  explicit nccl_path(std::unique_ptr<impl> p);
  std::unique_ptr<impl> p_;
};

}  // namespace halox::detail
