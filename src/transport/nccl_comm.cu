// One NCCL communicator per group of ranks, shared (see transport/nccl_comm.hpp).
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <exception>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "gpu/capture.hpp"
#include "gpu/check.hpp"
#include "gpu/memory.hpp"
#include "gpu/stream.hpp"
#include "halox/core/error.hpp"
#include "mpi/check.hpp"
#include "transport/nccl_api.hpp"
#include "transport/nccl_check.hpp"
#include "transport/nccl_comm.hpp"

static_assert(NCCL_VERSION_CODE >= NCCL_VERSION(2, 14, 0), "halox needs NCCL 2.14 or newer");

namespace halox::detail {

namespace {

std::atomic<long> created_comms{0}, live_comms{0};

constexpr std::string_view part = "NCCL communicator set-up";  // for MPI errors

std::string last_error(ncclComm_t comm) {
  const char* last = nccl().GetLastError(comm);
  return last != nullptr ? std::string(last) : std::string();
}

// Every NCCL communicator this process made (each found by the private duplicate it was made
// for), in creation order, kept until MPI_Finalize: a communicator outlives its users, so the
// next exchange object over the same ranks does not pay NCCL's initialisation again. Never
// destroyed at static exit (the pointer is leaked on purpose): after MPI_Finalize it is empty,
// and a process that exits without it must not call NCCL or CUDA from a static destructor.
std::mutex registry_mutex;
std::vector<std::shared_ptr<nccl_comm>>* kept = new std::vector<std::shared_ptr<nccl_comm>>;

// MPI_COMM_SELF's attribute whose deletion (the first thing MPI_Finalize does) releases `kept`,
// in creation order: the same order on every rank, since ranks create communicators together.
int release_at_finalize(MPI_Comm, int, void*, void*) {
  std::vector<std::shared_ptr<nccl_comm>> going;
  {
    std::lock_guard<std::mutex> lock(registry_mutex);
    going.swap(*kept);
  }
  for (auto& c : going) c.reset();  // destroyed here where no user holds it any more
  return MPI_SUCCESS;
}

// Registers release_at_finalize once per process (under registry_mutex).
void keep(const std::shared_ptr<nccl_comm>& c, int rank) {
  static int keyval = MPI_KEYVAL_INVALID;
  if (keyval == MPI_KEYVAL_INVALID) {
    mpi::check(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, release_at_finalize, &keyval, nullptr),
               "MPI_Comm_create_keyval", rank, part);
    mpi::check(MPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr), "MPI_Comm_set_attr", rank, part);
  }
  kept->push_back(c);
}

}  // namespace

void nccl_fail(ncclResult_t rc, const char* call, int rank, int peer, ncclComm_t comm) {
  const std::string last = last_error(comm);
  fail("rank {}: {}{} failed: {}{}", rank, call,
       peer >= 0 ? format(" with peer {}", peer) : std::string(), nccl().GetErrorString(rc),
       last.empty() ? std::string() : "; NCCL's last error: " + last);
}

bool nccl_built() noexcept {
  return true;
}

nccl_comm::~nccl_comm() {
  if (comm_ != nullptr) {
    // Nothing may leave a destructor: with an asynchronous error pending, abort (destroy would
    // wait for operations that never end); otherwise destroy, which finalizes first.
    int current = -1;
    const bool restore = cudaGetDevice(&current) == cudaSuccess;
    ncclResult_t state = ncclSuccess;
    const nccl_api& api = nccl();  // loaded: there is a communicator
    if (api.CommGetAsyncError(comm_, &state) != ncclSuccess ||
        (state != ncclSuccess && state != ncclInProgress))
      (void)api.CommAbort(comm_);
    else
      (void)api.CommDestroy(comm_);
    if (restore) (void)cudaSetDevice(current);
  }
  if (last_ != nullptr) (void)cudaEventDestroy(last_);
  (void)cudaGetLastError();
  int finalized = 1;
  MPI_Finalized(&finalized);
  if (!finalized && key_ != MPI_COMM_NULL) MPI_Comm_free(&key_);
  if (counted_) --live_comms;
}

std::shared_ptr<nccl_comm> nccl_comm::shared(MPI_Comm comm) {
  require(comm != MPI_COMM_NULL, "an NCCL communicator was requested for MPI_COMM_NULL");
  int rank = 0, size = 0, inter = 0;
  mpi::check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank", -1, part);
  mpi::check(MPI_Comm_size(comm, &size), "MPI_Comm_size", rank, part);
  mpi::check(MPI_Comm_test_inter(comm, &inter), "MPI_Comm_test_inter", rank, part);
  require(inter == 0, "rank {}: an NCCL communicator needs an intracommunicator", rank);

  // Local steps first; a failure joins the agreement below, so no rank waits for one that threw.
  // This rank's candidate: the newest live one congruent with `comm` on this device.
  std::exception_ptr problem;
  std::shared_ptr<nccl_comm> live;
  int device = -1;
  try {
    require(nccl_available(), "rank {}: {}", rank, nccl_unavailable_reason());
    gpu::check(cudaGetDevice(&device), "cudaGetDevice", rank);
    std::lock_guard<std::mutex> lock(registry_mutex);
    for (const auto& s : *kept) {
      if (s->device_ != device || s->aborted_.load() || (live && live->id_ > s->id_)) continue;
      int same = MPI_UNEQUAL;
      mpi::check(MPI_Comm_compare(s->key_, comm, &same), "MPI_Comm_compare", rank, part);
      if (same == MPI_IDENT || same == MPI_CONGRUENT) live = s;
    }
  } catch (...) {
    problem = std::current_exception();
  }
  // Reuse only where every rank's candidate is the same communicator (one rank's may have been
  // aborted after an error, or made on another device); otherwise all make a new one.
  // MPI_MIN over {ok, have, id, -id}: all ok, all have, min and max id.
  const long long id = live ? live->id_ : 0;
  long long local[4] = {problem ? 0 : 1, live ? 1 : 0, id, -id}, all[4] = {0, 0, 0, 0};
  mpi::check(MPI_Allreduce(local, all, 4, MPI_LONG_LONG, MPI_MIN, comm), "MPI_Allreduce", rank,
             part);
  if (problem) std::rethrow_exception(problem);
  if (all[0] == 0)
    fail("rank {}: another rank could not look up its NCCL communicator (see that rank's error)",
         rank);
  if (all[1] == 1 && all[2] == -all[3]) return live;
  auto fresh = create(comm, rank, size, device);
  std::lock_guard<std::mutex> lock(registry_mutex);
  keep(fresh, rank);
  return fresh;
}

std::shared_ptr<nccl_comm> nccl_comm::create(MPI_Comm comm, int rank, int size, int device) {
  // Rank 0 (the same process for every communicator congruent with `comm`) numbers the
  // communicators it creates: the number names this one on every rank.
  static long long created_on_this_process = 0;
  struct root_message {
    int result = ncclSuccess;
    long long serial = 0;
    ncclUniqueId id{};
  } msg;
  if (rank == 0) {
    msg.result = int(nccl().GetUniqueId(&msg.id));
    msg.serial = ++created_on_this_process;
  }
  mpi::check(MPI_Bcast(&msg, int(sizeof msg), MPI_BYTE, 0, comm), "MPI_Bcast(ncclUniqueId)", rank,
             part);
  if (msg.result != ncclSuccess)
    nccl_fail(ncclResult_t(msg.result), "ncclGetUniqueId (on rank 0)", rank, -1, nullptr);

  std::shared_ptr<nccl_comm> s(new nccl_comm);  // its destructor releases what is set below
  s->rank_ = rank;
  s->size_ = size;
  s->device_ = device;
  s->id_ = msg.serial;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;  // every call returns done or failed, never ncclInProgress
  config.commName = "halox";
  ncclComm_t c = nullptr;
  const ncclResult_t rc = nccl().CommInitRankConfig(&c, size, msg.id, rank, &config);
  std::exception_ptr problem;
  if (rc != ncclSuccess) {
    try {
      nccl_fail(rc, "ncclCommInitRankConfig", rank, -1, c);
    } catch (...) {
      problem = std::current_exception();
    }
    if (c != nullptr) (void)nccl().CommAbort(c);  // a failed init may still hand out a handle
  } else {
    s->comm_ = c;
  }
  // Every rank leaves together: one rank's failure is every rank's error, and no rank keeps a
  // communicator another lacks.
  int ok = problem ? 0 : 1, all = 0;
  mpi::check(MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce", rank, part);
  if (problem) std::rethrow_exception(problem);
  if (all == 0) {
    (void)nccl().CommAbort(s->comm_);
    s->comm_ = nullptr;
    fail("rank {}: ncclCommInitRankConfig failed on another rank (see that rank's error)", rank);
  }
  mpi::check(MPI_Comm_dup(comm, &s->key_), "MPI_Comm_dup", rank, part);
  gpu::check(cudaEventCreateWithFlags(&s->last_, cudaEventDisableTiming), "cudaEventCreate", rank);
  s->counted_ = true;
  ++created_comms;
  ++live_comms;
  return s;
}

void nccl_comm::enqueue_group(void* stream, const nccl_call* sends, std::size_t n_sends,
                              const nccl_call* recvs, std::size_t n_recvs,
                              unsigned long long known_capture) {
  require_usable();
  if (n_sends == 0 && n_recvs == 0) return;
  const auto st = static_cast<cudaStream_t>(stream);
  // Inside a CUDA graph capture only an event of the same capture may be waited on: the groups
  // enqueued before the capture are ordered by the graph's launch stream (docs/graphs.md). On
  // the stream of the latest group, stream order chains them already.
  const unsigned long long capture =
      known_capture != unknown_capture ? known_capture : gpu::capture_id(st, rank_);
  if (recorded_ && last_capture_ == capture && stream != last_stream_)
    gpu::check(cudaStreamWaitEvent(st, last_, 0), "cudaStreamWaitEvent(NCCL order)", rank_);
  const nccl_api& api = nccl();
  nccl_check(api.GroupStart(), "ncclGroupStart", rank_, -1, comm_);
  ncclResult_t rc = ncclSuccess;
  const char* failed = nullptr;
  int peer = -1;
  for (std::size_t k = 0; k < n_sends && rc == ncclSuccess; ++k) {
    rc = api.Send(sends[k].data, sends[k].bytes, ncclUint8, sends[k].peer, comm_, st);
    failed = "ncclSend";
    peer = sends[k].peer;
  }
  for (std::size_t k = 0; k < n_recvs && rc == ncclSuccess; ++k) {
    rc = api.Recv(recvs[k].data, recvs[k].bytes, ncclUint8, recvs[k].peer, comm_, st);
    failed = "ncclRecv";
    peer = recvs[k].peer;
  }
  const ncclResult_t end = api.GroupEnd();  // closes the group after a failed call too
  if (rc != ncclSuccess) nccl_fail(rc, failed, rank_, peer, comm_);
  nccl_check(end, "ncclGroupEnd", rank_, -1, comm_);
  gpu::check(cudaEventRecord(last_, st), "cudaEventRecord(NCCL order)", rank_);
  recorded_ = true;
  last_capture_ = capture;
  last_stream_ = stream;
}

void nccl_comm::connect(const std::vector<int>& peers) {
  require_usable();
  std::vector<int> p;
  for (const int q : peers)
    if (q != rank_) p.push_back(q);
  std::sort(p.begin(), p.end());
  p.erase(std::unique(p.begin(), p.end()), p.end());
  if (p.empty()) return;
  // 16 bytes each way per peer, each in a 16-byte slot of its own: NCCL's kernel reads and
  // writes whole words, so slots as small as the message would be overrun (compute-sanitizer).
  constexpr std::size_t slot = 16;
  gpu::device_array<std::byte> scratch(2 * slot * p.size(), "NCCL connection bytes", rank_);
  gpu::stream s(cudaStreamNonBlocking, rank_);
  std::vector<nccl_call> sends, recvs;
  for (std::size_t k = 0; k < p.size(); ++k) {
    sends.push_back({p[k], scratch.get() + slot * k, slot});
    recvs.push_back({p[k], scratch.get() + slot * (p.size() + k), slot});
  }
  enqueue_group(s.get(), sends.data(), sends.size(), recvs.data(), recvs.size());
  for (;;) {
    const cudaError_t rc = cudaStreamQuery(s.get());
    if (rc == cudaSuccess) break;
    if (rc != cudaErrorNotReady) gpu::check(rc, "cudaStreamQuery (NCCL connection)", rank_);
    check_async();
    std::this_thread::yield();
  }
}

void nccl_comm::require_usable() const {
  if (aborted_.load(std::memory_order_acquire)) throw error(failure_);
}

void nccl_comm::abort(const std::string& why) {
  if (aborted_.load(std::memory_order_acquire)) return;
  failure_ = format("rank {}: the NCCL communicator was aborted: {}", rank_, why);
  (void)nccl().CommAbort(comm_);  // unchecked: the communicator is gone whatever it says
  comm_ = nullptr;
  aborted_.store(true, std::memory_order_release);
}

void nccl_comm::check_async() {
  require_usable();
  ncclResult_t state = ncclSuccess;
  nccl_check(nccl().CommGetAsyncError(comm_, &state), "ncclCommGetAsyncError", rank_, -1, comm_);
  if (state == ncclSuccess || state == ncclInProgress) return;
  const std::string last = last_error(comm_);
  failure_ = format(
      "rank {}: NCCL reported an asynchronous error: {}{}; the NCCL communicator was aborted",
      rank_, nccl().GetErrorString(state), last.empty() ? std::string() : " (" + last + ")");
  (void)nccl().CommAbort(comm_);
  comm_ = nullptr;
  aborted_.store(true, std::memory_order_release);
  throw error(failure_);
}

long nccl_comm::created_count() noexcept {
  return created_comms.load();
}
long nccl_comm::live_count() noexcept {
  return live_comms.load();
}

}  // namespace halox::detail
