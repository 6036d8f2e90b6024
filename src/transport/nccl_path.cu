// Device messages through NCCL (see halox/transport/nccl_path.hpp).
#include <cuda_runtime.h>
#include <nccl.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "../gpu/check.hpp"
#include "halox/core/error.hpp"
#include "halox/transport/nccl_path.hpp"

namespace halox::detail {

namespace {

void check_mpi(int rc, const char* call, int rank) {
  if (rc != MPI_SUCCESS) fail("rank {}: {} failed (NCCL transport set-up)", rank, call);
}
void check_nccl(ncclResult_t rc, const char* call, int rank, ncclComm_t comm = nullptr) {
  if (rc == ncclSuccess) return;
  const char* last = comm ? ncclGetLastError(comm) : ncclGetLastError(nullptr);
  fail("rank {}: {} failed: {}{}{}", rank, call, ncclGetErrorString(rc), last && *last ? ": " : "",
       last ? last : "");
}

// One NCCL communicator over the ranks of an MPI communicator, shared by every exchange object
// whose communicator is congruent with `rep`, and the event that chains their groups.
struct shared_comm {
  ncclComm_t comm = nullptr;
  cudaEvent_t last = nullptr;  // recorded after the latest group any user enqueued
  bool recorded = false;
  MPI_Comm rep = MPI_COMM_NULL;  // a duplicate, to recognise congruent communicators
  int rank = 0;

  ~shared_comm() {
    if (comm) (void)ncclCommDestroy(comm);
    if (last) (void)cudaEventDestroy(last);
    int finalized = 1;
    MPI_Finalized(&finalized);
    if (!finalized && rep != MPI_COMM_NULL) MPI_Comm_free(&rep);
  }
};

std::mutex registry_mutex;
std::vector<std::weak_ptr<shared_comm>> registry;

// This rank's live communicator congruent with `comm`, or null.
std::shared_ptr<shared_comm> find_congruent(MPI_Comm comm, int me) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  for (auto& w : registry)
    if (auto s = w.lock()) {
      int same = MPI_UNEQUAL;
      check_mpi(MPI_Comm_compare(s->rep, comm, &same), "MPI_Comm_compare", me);
      if (same == MPI_IDENT || same == MPI_CONGRUENT) return s;
    }
  return nullptr;
}

// Collective over `comm`: a new NCCL communicator over its ranks.
std::shared_ptr<shared_comm> create(MPI_Comm comm, int me, int size) {
  auto s = std::make_shared<shared_comm>();
  s->rank = me;
  check_mpi(MPI_Comm_dup(comm, &s->rep), "MPI_Comm_dup", me);
  ncclUniqueId id{};
  int ok = 1;
  if (me == 0) ok = ncclGetUniqueId(&id) == ncclSuccess;
  check_mpi(MPI_Bcast(&ok, 1, MPI_INT, 0, comm), "MPI_Bcast(NCCL id status)", me);
  if (!ok) fail("rank {}: ncclGetUniqueId failed on rank 0", me);
  check_mpi(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm), "MPI_Bcast(ncclUniqueId)", me);
  const ncclResult_t rc = ncclCommInitRank(&s->comm, size, id, me);
  // Every rank leaves set-up together: one rank's failure is every rank's error.
  int mine = rc == ncclSuccess, all = 0;
  check_mpi(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, comm), "MPI_Allreduce", me);
  check_nccl(rc, "ncclCommInitRank", me);
  if (!all) fail("rank {}: ncclCommInitRank failed on another rank", me);
  gpu::check(cudaEventCreateWithFlags(&s->last, cudaEventDisableTiming), "cudaEventCreate", me);
  std::lock_guard<std::mutex> lock(registry_mutex);
  registry.push_back(s);
  return s;
}

}  // namespace

struct nccl_path::impl {
  std::shared_ptr<shared_comm> shared;
  std::vector<message> sends, recvs;
  const std::byte* send_buf = nullptr;
  std::byte* recv_buf = nullptr;
  int rank = 0;
};

bool nccl_built() noexcept {
  return true;
}

std::unique_ptr<nccl_path> nccl_path::attach(MPI_Comm comm, bool gpu_shared,
                                             const std::vector<message>& sends,
                                             const std::byte* send_buf,
                                             const std::vector<message>& recvs,
                                             std::byte* recv_buf) {
  int me = 0, size = 0;
  check_mpi(MPI_Comm_rank(comm, &me), "MPI_Comm_rank", -1);
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size", me);
  require(!gpu_shared,
          "rank {}: staging 'nccl' needs one GPU per rank, but ranks of this communicator on one "
          "node share a GPU, which NCCL does not allow; run one rank per GPU or use another "
          "staging policy",
          me);
  // Reuse only where every rank has a congruent communicator alive (ranks may have destroyed
  // exchange objects at different times); otherwise every rank makes a new one.
  auto s = find_congruent(comm, me);
  int found = s != nullptr, all = 0;
  check_mpi(MPI_Allreduce(&found, &all, 1, MPI_INT, MPI_LAND, comm), "MPI_Allreduce", me);
  if (!all) s = create(comm, me, size);
  auto p = std::make_unique<impl>();
  p->shared = std::move(s);
  p->sends = sends;
  p->recvs = recvs;
  p->send_buf = send_buf;
  p->recv_buf = recv_buf;
  p->rank = me;
  return std::unique_ptr<nccl_path>(new nccl_path(std::move(p)));
}

nccl_path::nccl_path(std::unique_ptr<impl> p) : p_(std::move(p)) {}
nccl_path::~nccl_path() = default;

void nccl_path::enqueue(void* stream) {
  auto& s = *p_->shared;
  const auto st = static_cast<cudaStream_t>(stream);
  const int me = p_->rank;
  if (p_->sends.empty() && p_->recvs.empty()) return;
  // Groups of every user of this communicator run in the order this rank issues them.
  if (s.recorded) gpu::check(cudaStreamWaitEvent(st, s.last, 0), "cudaStreamWaitEvent(NCCL)", me);
  check_nccl(ncclGroupStart(), "ncclGroupStart", me, s.comm);
  for (const auto& m : p_->sends)
    check_nccl(ncclSend(p_->send_buf + m.offset, m.bytes, ncclUint8, m.peer, s.comm, st),
               "ncclSend", me, s.comm);
  for (const auto& m : p_->recvs)
    check_nccl(ncclRecv(p_->recv_buf + m.offset, m.bytes, ncclUint8, m.peer, s.comm, st),
               "ncclRecv", me, s.comm);
  check_nccl(ncclGroupEnd(), "ncclGroupEnd", me, s.comm);
  gpu::check(cudaEventRecord(s.last, st), "cudaEventRecord(NCCL)", me);
  s.recorded = true;
}

void nccl_path::check_async() {
  ncclResult_t async = ncclSuccess;
  check_nccl(ncclCommGetAsyncError(p_->shared->comm, &async), "ncclCommGetAsyncError", p_->rank,
             p_->shared->comm);
  if (async != ncclSuccess && async != ncclInProgress)
    fail("rank {}: NCCL reported an asynchronous error: {} ({})", p_->rank,
         ncclGetErrorString(async), ncclGetLastError(p_->shared->comm));
}

std::string nccl_path::describe() const {
  int v = 0;
  (void)ncclGetVersion(&v);
  return fmt::format("NCCL {}.{}.{}, one communicator shared by {} exchange object(s)", v / 10000,
                     v / 100 % 100, v % 100, p_->shared.use_count());
}

}  // namespace halox::detail
