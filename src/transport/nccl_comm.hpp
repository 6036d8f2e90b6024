#pragma once
/// @file
/// One NCCL communicator per group of ranks, shared by every user over those ranks (the NCCL
/// transport, docs/nccl.md). Compiles without nvcc and without nccl.h; in a build without NCCL,
/// or where libnccl cannot be loaded, asking for one throws halox::error.

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <mpi.h>

struct ncclComm;    // NCCL's communicator (ncclComm_t is ncclComm*), declared as nccl.h does
struct CUevent_st;  // CUDA's event type (cudaEvent_t is CUevent_st*)

namespace halox::detail {

/// Whether this halox was built with the NCCL transport.
bool nccl_built() noexcept;
/// Whether this process can use NCCL: built with it, and libnccl loaded and recent enough
/// (transport/nccl_api.hpp; the first call loads it). Local: the ranks agree on it where they
/// vote on NCCL (transport/routes.hpp).
bool nccl_available();
/// Why not, for errors and describe() (empty where it can): "this halox was built without NCCL
/// (HALOX_ENABLE_NCCL)", or "NCCL is built but libnccl.so.2 could not be loaded: ...".
std::string nccl_unavailable_reason();

/// One NCCL send or receive: `bytes` bytes at `data` (device memory), to or from `peer`.
struct nccl_call {
  int peer = 0;
  std::byte* data = nullptr;
  std::size_t bytes = 0;
};

/// A blocking NCCL communicator over the ranks of an MPI communicator, numbered alike.
///
/// Sharing rule: `nccl_comm::shared(comm)` hands every caller whose MPI communicator is
/// congruent with `comm` (`MPI_Comm_compare`: the same ranks in the same order) the same NCCL
/// communicator, created the first time one is needed. halox's exchange objects each hold their
/// own `MPI_Comm_dup` of the domain's communicator: those duplicates are congruent, so all
/// exchanges over one domain (and over any communicator with the same ranks in the same order)
/// share one NCCL communicator, never one per exchange. A communicator over other ranks, or the
/// same ranks in another order, gets its own.
///
/// Lifetime: the process keeps a reference to each communicator it made until MPI_Finalize (an
/// `MPI_COMM_SELF` attribute whose deletion releases them, in creation order on every rank), so
/// an exchange object built after the last one over the same ranks went reuses it: NCCL's
/// initialisation (0.7-1.8 s on two H200s) is paid once per group of ranks and GPU, not once
/// per exchange object. Users still hold `shared_ptr`s: one that is alive at MPI_Finalize is
/// destroyed with its last user.
///
/// Among several live ones congruent with `comm` (a rank whose lookup failed made the ranks
/// create another), the ranks agree on the newest by a number rank 0 gave it, or make a new one.
///
/// The registry keeps a private duplicate of the first communicator as the entry's key: its
/// handle cannot be reused by MPI for another communicator while the entry lives (which a map
/// from users' handles would risk once a user frees theirs).
class nccl_comm {
 public:
  /// The NCCL communicator shared over the ranks of `comm`, on the CUDA device current on this
  /// rank. Collective over `comm`: every rank calls it, including ranks that will send nothing
  /// through NCCL. The ranks first agree (one MPI_Allreduce) whether each holds the same live
  /// one on its current device; if not, all create a new one together: rank 0 calls
  /// ncclGetUniqueId, MPI_Bcast sends the id with rank 0's outcome (so all fail together), each
  /// rank calls ncclCommInitRankConfig with `blocking = 1` (no NCCL call of halox returns
  /// ncclInProgress, whatever NCCL_COMM_BLOCKING says), and a second MPI_Allreduce makes a
  /// failure on one rank an error on all. Each rank needs its own GPU: NCCL refuses two ranks of
  /// one communicator on one GPU. Throws halox::error naming the call, NCCL's error string, its
  /// last error message and the rank.
  static std::shared_ptr<nccl_comm> shared(MPI_Comm comm);

  /// ncclCommDestroy (which finalizes: it may wait for the other ranks, so release the last
  /// user on every rank at matching points, as exchange objects are destroyed), or
  /// ncclCommAbort when an asynchronous error is pending.
  ~nccl_comm();
  nccl_comm(const nccl_comm&) = delete;
  nccl_comm& operator=(const nccl_comm&) = delete;

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  /// The CUDA device it was created on; the streams and buffers given to it belong to it.
  int device() const noexcept { return device_; }
  /// The NCCL handle (an `ncclComm_t`); null once aborted.
  ::ncclComm* get() const noexcept { return comm_; }

  /// Enqueues `ncclGroupStart(); ncclSend(sends)...; ncclRecv(recvs)...; ncclGroupEnd()` on
  /// `stream` (a `cudaStream_t`), after the previous group any user enqueued on this rank (an
  /// event chains them, whatever their streams: every rank issues the groups of all users in
  /// the same order, so the k-th message between two ranks meets its match). Under CUDA graph
  /// capture the chain holds within the capture only (CUDA allows no wait across a capture's
  /// boundary); the graph's launch stream orders it after earlier groups. A failed call still
  /// closes the group. Allocates nothing. Throws halox::error naming the call, the rank and
  /// the peer. `capture`: the id of the capture `stream` is in (0: none), where the caller
  /// knows it (unknown_capture: asked of CUDA here).
  static constexpr unsigned long long unknown_capture = ~0ull;
  void enqueue_group(void* stream, const nccl_call* sends, std::size_t n_sends,
                     const nccl_call* recvs, std::size_t n_recvs,
                     unsigned long long capture = unknown_capture);

  /// Connects NCCL to `peers` now (this rank's peers of one exchange or chain, either
  /// direction; itself and repeats ignored): 16 bytes each way in one group, waited for, so
  /// that the first real group does not pay NCCL's connection set-up. NCCL connects a pair's
  /// channels on their first send or receive, whatever its size; that costs tens to hundreds of
  /// milliseconds, which inside a solver's timed loop reads as a slow transport. Pairwise
  /// collective: each peer calls it with this rank among its peers, at the same point of the
  /// order of NCCL groups (enqueue_group). Waits yielding the processor (NCCL's proxy thread,
  /// which makes the connections, may share its core) and polling asynchronous errors.
  void connect(const std::vector<int>& peers);

  /// Throws halox::error if NCCL reported an asynchronous error (a peer failed, a network
  /// error), checked with ncclCommGetAsyncError. The first such error aborts the communicator
  /// (ncclCommAbort: kernels waiting on a failed peer end) and every later use throws it again.
  /// An exchange calls it where it completes.
  void check_async();
  /// Throws the recorded error once the communicator was aborted; no NCCL call.
  void require_usable() const;
  /// Aborts the communicator (ncclCommAbort: its kernels still waiting for a peer end), for an
  /// exchange that gave up waiting (exchange_options::wait_timeout); `why` becomes the error
  /// every later use throws. Every exchange object sharing it fails from then on.
  void abort(const std::string& why);

  /// Test hooks: NCCL communicators this process has created, and those alive now.
  static long created_count() noexcept;
  static long live_count() noexcept;

 private:
  nccl_comm() = default;
  static std::shared_ptr<nccl_comm> create(MPI_Comm comm, int rank, int size, int device);

  ::ncclComm* comm_ = nullptr;
  int rank_ = 0, size_ = 0, device_ = -1;
  long long id_ = 0;              // the same on every rank: rank 0's serial number for it
  MPI_Comm key_ = MPI_COMM_NULL;  // private duplicate: the registry compares users' with it
  ::CUevent_st* last_ = nullptr;  // recorded after the latest group of any user
  bool recorded_ = false;
  void* last_stream_ = nullptr;          // the stream of the latest group (compared, never used)
  unsigned long long last_capture_ = 0;  // the CUDA graph capture `last_` was recorded in (0: none)
  bool counted_ = false;                 // in the test hooks' counts (set once fully created)
  std::atomic<bool> aborted_{false};
  std::string failure_;  // the asynchronous error that aborted it
};

}  // namespace halox::detail
