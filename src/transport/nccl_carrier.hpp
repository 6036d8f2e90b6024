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

#include "gpu/stream_source.hpp"
#include "program/program.hpp"
#include "transport/carrier.hpp"
#include "transport/nccl_comm.hpp"

namespace halox::detail {

/// One rank's NCCL messages of an exchange, over its device send and receive buffers.
///
/// `sends[i]` is `bytes` bytes at `offset` in the send buffer for rank `peer` of the
/// communicator; `recvs[i]` lands at its offset in the receive buffer. Between two ranks the
/// k-th message one sends the other matches the k-th the other receives from it, and the two
/// must have the same size (halox's peers agree on sizes at set-up); empty messages are dropped
/// on both sides. A message may travel as several calls (zero-copy pieces), cut alike on both
/// sides. connect() makes NCCL's connections at set-up.
class nccl_carrier final : public carrier {
 public:
  /// Collective over `comm` (every rank calls it, whether or not it has messages): the shared
  /// NCCL communicator for `comm` (nccl_comm::shared) and this rank's messages over the device
  /// buffers `send_buf`/`recv_buf` at the messages' offsets. With `zero_copy`, each pair of
  /// ranks tells each other how the program's device steps (`prog`) lay out each message, and
  /// both cut it alike (src/transport/nccl_pieces.hpp): a side whose regions are contiguous in
  /// its fields hands NCCL the fields' memory, and its pack (unpack) steps of that message are
  /// dropped (send_direct / recv_direct). Throws halox::error (on every rank) when NCCL fails to
  /// set up, or when two ranks of `comm` on one node share a GPU (`gpu_shared`, which NCCL does
  /// not allow).
  static std::unique_ptr<nccl_carrier> attach(MPI_Comm comm, bool gpu_shared,
                                              const exchange_program& prog,
                                              const std::vector<message>& sends,
                                              const std::byte* send_buf,
                                              const std::vector<message>& recvs,
                                              std::byte* recv_buf, bool zero_copy);

  /// Local: checks every message (peer inside the communicator, range inside its buffer of
  /// `send_bytes`/`recv_bytes`) and that a buffer with messages is memory the communicator's GPU
  /// can reach (its device memory, managed or pinned host memory), then prepares the calls:
  /// enqueue() allocates nothing. Throws halox::error naming the message, the peer and the rank.
  nccl_carrier(std::shared_ptr<nccl_comm> comm, const std::vector<message>& sends,
               const std::vector<message>& recvs, const void* send_buf, std::size_t send_bytes,
               void* recv_buf, std::size_t recv_bytes);
  /// A carrier whose calls change from one group to the next (a chain's rounds, whose sizes are
  /// known only when they are posted): its messages go to and come from `peers`, at most
  /// `capacity` sends and as many receives per group, each group's calls set by assign()
  /// before its enqueue(). connect() connects `peers`.
  nccl_carrier(std::shared_ptr<nccl_comm> comm, const std::vector<int>& peers,
               std::size_t capacity);
  /// Variable carriers: the calls of the next group (their memory on the communicator's GPU; the
  /// caller checked it). Allocates nothing. Throws halox::error on more calls than the capacity
  /// or a peer the carrier was not made for.
  void assign(const nccl_call* sends, std::size_t n_sends, const nccl_call* recvs,
              std::size_t n_recvs);
  /// Pairwise collective at set-up (attach calls it with exchange_options::nccl_register):
  /// registers this carrier's calls of at least nccl_register_min_bytes with NCCL where this rank
  /// and the message's peer both `want` it and both sides' memory CUDA IPC can export.
  void register_large(MPI_Comm comm, bool want);
  /// Deregisters what register_large registered.
  ~nccl_carrier() override;
  nccl_carrier(const nccl_carrier&) = delete;
  nccl_carrier& operator=(const nccl_carrier&) = delete;
  nccl_carrier(nccl_carrier&&) = default;

  /// Enqueues this rank's sends and receives on `stream` (a `cudaStream_t` of the
  /// communicator's GPU) as one group (nccl_comm::enqueue_group): the data has moved once the
  /// stream reaches that point. Throws halox::error naming the NCCL call, its error, the rank and
  /// the peer. `capture`: as nccl_comm::enqueue_group's.
  void enqueue(void* stream, unsigned long long capture = nccl_comm::unknown_capture);
  /// Connects NCCL to every peer of this carrier now (nccl_comm::connect): pairwise collective,
  /// called at set-up by every rank with a carrier, in the same order.
  void connect();
  /// Whether this rank's side of its message to (from) `peer` uses the fields' memory itself
  /// (zero-copy): its pack (unpack) steps for that message are not run.
  bool send_direct(int peer) const;
  bool recv_direct(int peer) const;
  /// For describe(): how the message to (from) `peer` travels, e.g. " (zero-copy: 2 NCCL calls
  /// from the fields' memory)"; empty for a packed message in one call.
  std::string note(bool send, int peer) const;
  /// Raises an asynchronous NCCL error (a peer that failed, a broken connection) as
  /// halox::error naming this rank, after aborting the communicator (nccl_comm::check_async);
  /// called where an exchange completes.
  void check_async();
  /// After an exchange gave up waiting: aborts the shared communicator (nccl_comm::abort).
  void abort(const std::string& why);
  /// Makes the communicator's GPU the calling thread's current device (a watchdog thread).
  void bind_thread() const;
  /// For describe(): "NCCL 2.28.3, one communicator shared by N exchange object(s)".
  std::string describe() const;

  /// As an exchange's carrier: each exchange's group goes on `on`'s stream in post_sends(),
  /// stream-ordered between the pack and the unpack kernels, so the host waits for nothing;
  /// progress() and complete() raise an asynchronous NCCL error (check_async).
  void drive_on(const stream_source& on) { on_ = &on; }
  void do_post_receives(std::uint64_t) override {}
  void do_post_sends(std::uint64_t) override { enqueue(on_->stream(), on_->capture()); }
  progress_report do_progress() override {
    check_async();
    return {false, true};
  }
  void do_complete() override { check_async(); }
  /// Every peer this rank receives from: its group has not completed on the GPU.
  void waiting_for(std::vector<std::string>& out) const override;

  const nccl_comm& comm() const noexcept { return *comm_; }
  std::size_t send_count() const noexcept { return sends_.size(); }
  std::size_t recv_count() const noexcept { return recvs_.size(); }

  /// Replaces the calls of this rank's message to (from) `peer` by `calls` (zero-copy pieces,
  /// set-up only); `direct`: they point into the fields.
  void recut(bool send, int peer, std::vector<nccl_call> calls, bool direct);

 private:
  // One message of this carrier: its peer, its calls (sends_/recvs_[first, first + count)), and
  // whether this side uses the fields' memory.
  struct route {
    int peer = 0;
    std::size_t first = 0, count = 0;
    bool direct = false;
    bool registered = false;  // its large calls are registered with NCCL (register_large)
  };
  static const route* find(const std::vector<route>& routes, int peer);

  std::shared_ptr<nccl_comm> comm_;
  std::vector<nccl_call> sends_, recvs_;
  std::vector<route> send_routes_, recv_routes_;
  std::vector<void*> registered_;      // ncclCommRegister handles of the calls' memory
  std::size_t capacity_ = 0;           // variable carriers: calls per group and direction (else 0)
  const stream_source* on_ = nullptr;  // an exchange's carrier: where post_sends() enqueues
};

/// With exchange_options::nccl_register (HALOX_NCCL_REGISTER=1) on both ranks of a message, its
/// calls of at least this many bytes are registered with NCCL (ncclCommRegister) where both sides'
/// memory allows it: NCCL then writes them straight into the receiver's memory over NVLink instead
/// of through its own buffers. Smaller calls are not: there the lookup NCCL makes per call costs
/// more host time than the copy it saves. Off by default: faster alone, slower inside an overlapped
/// solver (docs/nccl.md).
inline constexpr std::size_t nccl_register_min_bytes = std::size_t(1) << 20;

}  // namespace halox::detail
