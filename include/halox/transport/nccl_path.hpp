#pragma once
/// @file
/// Device messages through NCCL: the messages of an exchange that do not travel through CUDA
/// IPC go as one `ncclGroupStart` / `ncclSend`·`ncclRecv` / `ncclGroupEnd` per exchange,
/// enqueued on halox's stream between the pack and the unpack kernels, so no host thread waits
/// for them. The NCCL communicator is shared by every exchange object over the same ranks
/// (nccl_comm.hpp). Compiles without nvcc and without NCCL (then no exchange uses it).

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <mpi.h>

#include "halox/program/program.hpp"
#include "halox/transport/nccl_comm.hpp"

namespace halox::detail {

/// One rank's NCCL messages of an exchange, over its device send and receive buffers.
///
/// `sends[i]` is `bytes` bytes at `offset` in the send buffer for rank `peer` of the
/// communicator; `recvs[i]` lands at its offset in the receive buffer. Between two ranks the
/// k-th message one sends the other matches the k-th the other receives from it, and the two
/// must have the same size (halox's peers agree on sizes at set-up); empty messages are dropped
/// on both sides. The first group with a peer also connects NCCL to it, and may wait until that
/// peer enqueues its own.
class nccl_path {
 public:
  /// Collective over `comm` (every rank calls it, whether or not it has messages): the shared
  /// NCCL communicator for `comm` (nccl_comm::shared) and this rank's messages over the device
  /// buffers `send_buf`/`recv_buf` at the messages' offsets. Throws halox::error (on every
  /// rank) when NCCL fails to set up, or when two ranks of `comm` on one node share a GPU
  /// (`gpu_shared`, which NCCL does not allow).
  static std::unique_ptr<nccl_path> attach(MPI_Comm comm, bool gpu_shared,
                                           const std::vector<message>& sends,
                                           const std::byte* send_buf,
                                           const std::vector<message>& recvs, std::byte* recv_buf);

  /// Local: checks every message (peer inside the communicator, range inside its buffer of
  /// `send_bytes`/`recv_bytes`) and that a buffer with messages is memory the communicator's GPU
  /// can reach (its device memory, managed or pinned host memory), then prepares the calls:
  /// enqueue() allocates nothing. Throws halox::error naming the message, the peer and the rank.
  nccl_path(std::shared_ptr<nccl_comm> comm, const std::vector<message>& sends,
            const std::vector<message>& recvs, const void* send_buf, std::size_t send_bytes,
            void* recv_buf, std::size_t recv_bytes);

  /// Enqueues this rank's sends and receives on `stream` (a `cudaStream_t` of the
  /// communicator's GPU) as one group (nccl_comm::enqueue_group): the data has moved once the
  /// stream reaches that point. Throws halox::error naming the NCCL call, its error, the rank and
  /// the peer.
  void enqueue(void* stream);
  /// Raises an asynchronous NCCL error (a peer that failed, a broken connection) as
  /// halox::error naming this rank, after aborting the communicator (nccl_comm::check_async);
  /// called where an exchange completes.
  void check_async();
  /// For describe(): "NCCL 2.28.3, one communicator shared by N exchange object(s)".
  std::string describe() const;

  const nccl_comm& comm() const noexcept { return *comm_; }
  std::size_t send_count() const noexcept { return sends_.size(); }
  std::size_t recv_count() const noexcept { return recvs_.size(); }

 private:
  std::shared_ptr<nccl_comm> comm_;
  std::vector<nccl_call> sends_, recvs_;
};

}  // namespace halox::detail
