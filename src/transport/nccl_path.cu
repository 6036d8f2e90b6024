// Device messages through NCCL (see halox/transport/nccl_path.hpp).
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <utility>

#include "halox/core/error.hpp"
#include "halox/transport/nccl_path.hpp"
#include "nccl_check.hpp"

namespace halox::detail {

namespace {

// Throws unless `p` is memory GPU `device` can reach: its device memory, managed memory or
// pinned host memory (NCCL's kernels read and write it there).
void require_reachable(const void* p, int device, const char* which, int rank) {
  cudaPointerAttributes a{};
  const cudaError_t rc = cudaPointerGetAttributes(&a, p);
  if (rc != cudaSuccess) {
    (void)cudaGetLastError();
    fail("rank {}: cudaPointerGetAttributes on the NCCL {} buffer failed: {}", rank, which,
         cudaGetErrorString(rc));
  }
  const bool ok = a.type == cudaMemoryTypeManaged || a.type == cudaMemoryTypeHost ||
                  (a.type == cudaMemoryTypeDevice && a.device == device);
  require(ok,
          "rank {}: the NCCL {} buffer is neither device memory of GPU {} (the NCCL "
          "communicator's) nor managed or pinned host memory",
          rank, which, device);
}

std::size_t extent_of(const std::vector<message>& msgs) {
  std::size_t e = 0;
  for (const auto& m : msgs) e = std::max(e, m.offset + m.bytes);
  return e;
}

}  // namespace

std::unique_ptr<nccl_path> nccl_path::attach(MPI_Comm comm, bool gpu_shared,
                                             const std::vector<message>& sends,
                                             const std::byte* send_buf,
                                             const std::vector<message>& recvs,
                                             std::byte* recv_buf) {
  int me = 0;
  if (MPI_Comm_rank(comm, &me) != MPI_SUCCESS) fail("MPI_Comm_rank failed (NCCL transport)");
  require(!gpu_shared,
          "rank {}: staging 'nccl' needs one GPU per rank, but ranks of this communicator on one "
          "node share a GPU, which NCCL does not allow; run one rank per GPU or use another "
          "staging policy",
          me);
  // The exchange's buffers hold its messages (the program sized them so).
  return std::make_unique<nccl_path>(nccl_comm::shared(comm), sends, recvs, send_buf,
                                     extent_of(sends), recv_buf, extent_of(recvs));
}

nccl_path::nccl_path(std::shared_ptr<nccl_comm> comm, const std::vector<message>& sends,
                     const std::vector<message>& recvs, const void* send_buf,
                     std::size_t send_bytes, void* recv_buf, std::size_t recv_bytes)
    : comm_(std::move(comm)) {
  require(comm_ != nullptr, "an NCCL path needs an NCCL communicator");
  comm_->require_usable();
  const int me = comm_->rank(), n = comm_->size();
  // ncclSend only reads its buffer; one call type serves both directions.
  auto* send_base = const_cast<std::byte*>(static_cast<const std::byte*>(send_buf));
  auto* recv_base = static_cast<std::byte*>(recv_buf);
  auto prepare = [&](const std::vector<message>& msgs, std::byte* base, std::size_t extent,
                     const char* what, std::vector<nccl_call>& out) {
    out.reserve(msgs.size());
    for (std::size_t i = 0; i < msgs.size(); ++i) {
      const message& m = msgs[i];
      require(m.peer >= 0 && m.peer < n,
              "rank {}: NCCL {} message #{} names peer {}, outside the communicator of {} ranks",
              me, what, i, m.peer, n);
      require(m.offset <= extent && m.bytes <= extent - m.offset,
              "rank {}: NCCL {} message #{} (peer {}) of {} bytes at offset {} does not fit its "
              "{}-byte buffer",
              me, what, i, m.peer, m.bytes, m.offset, extent);
      if (m.bytes == 0) continue;  // dropped on both sides: the sizes agree
      require(base != nullptr, "rank {}: NCCL {} message #{} (peer {}) has no buffer", me, what, i,
              m.peer);
      out.push_back({m.peer, base + m.offset, m.bytes});
    }
    if (!out.empty()) require_reachable(base, comm_->device(), what, me);
  };
  prepare(sends, send_base, send_bytes, "send", sends_);
  prepare(recvs, recv_base, recv_bytes, "receive", recvs_);
}

void nccl_path::enqueue(void* stream) {
  comm_->enqueue_group(stream, sends_.data(), sends_.size(), recvs_.data(), recvs_.size());
}

void nccl_path::check_async() {
  comm_->check_async();
}

std::string nccl_path::describe() const {
  int v = 0;
  (void)ncclGetVersion(&v);
  return format("NCCL {}.{}.{}, one communicator shared by {} exchange object(s)", v / 10000,
                v / 100 % 100, v % 100, comm_.use_count());
}

}  // namespace halox::detail
