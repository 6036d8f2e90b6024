// Device messages through NCCL (see transport/nccl_carrier.hpp).
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "gpu/ipc_export.hpp"
#include "halox/core/error.hpp"
#include "mpi/check.hpp"
#include "transport/nccl_api.hpp"
#include "transport/nccl_carrier.hpp"
#include "transport/nccl_check.hpp"
#include "transport/nccl_pieces.hpp"

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

// A side of a message as it travels to the peer at set-up: direct, edge count, edges.
using side_wire = std::array<std::uint64_t, 3 + nccl_max_pieces>;
constexpr int tag_sender_side = 40, tag_receiver_side = 41;

side_wire to_wire(const nccl_side& s) {
  side_wire w{};
  w[0] = s.direct ? 1 : 0;
  w[1] = s.edges.size();
  std::copy(s.edges.begin(), s.edges.end(), w.begin() + 2);
  return w;
}

nccl_side from_wire(const side_wire& w) {
  nccl_side s;
  const std::size_t n = std::min<std::size_t>(w[1], w.size() - 2);
  s.direct = w[0] != 0 && n >= 2;
  if (s.direct) s.edges.assign(w.begin() + 2, w.begin() + 2 + std::ptrdiff_t(n));
  return s;
}

constexpr std::string_view part = "NCCL zero-copy set-up";  // for MPI errors
constexpr int tag_sender_register = 42, tag_receiver_register = 43;

// This rank's side of each message, told to each peer; the peer's side of the same message
// back. Both ranks of a pair then cut it alike.
struct sides {
  std::vector<nccl_side> mine_send, mine_recv, theirs_send, theirs_recv;
  std::vector<std::vector<nccl_direct_step>> steps_send, steps_recv;
};

sides swap_sides(MPI_Comm comm, const exchange_program& prog, const std::vector<message>& sends,
                 const std::byte* send_buf, const std::vector<message>& recvs,
                 const std::byte* recv_buf, int me) {
  sides s;
  const std::size_t ns = sends.size(), nr = recvs.size();
  s.steps_send.resize(ns);
  s.steps_recv.resize(nr);
  std::vector<side_wire> out_send(ns), out_recv(nr), in_send(nr), in_recv(ns);
  for (std::size_t k = 0; k < ns; ++k) {
    s.mine_send.push_back(describe_side(prog.device_pack, prog.device_gather, true, send_buf,
                                        sends[k], s.steps_send[k]));
    out_send[k] = to_wire(s.mine_send[k]);
  }
  for (std::size_t k = 0; k < nr; ++k) {
    s.mine_recv.push_back(describe_side(prog.device_unpack, prog.device_scatter, false, recv_buf,
                                        recvs[k], s.steps_recv[k]));
    out_recv[k] = to_wire(s.mine_recv[k]);
  }
  std::vector<MPI_Request> reqs(2 * (ns + nr), MPI_REQUEST_NULL);
  const int n = int(sizeof(side_wire));
  std::size_t r = 0;
  for (std::size_t k = 0; k < ns; ++k) {
    const int peer = sends[k].peer;
    mpi::check(MPI_Isend(out_send[k].data(), n, MPI_BYTE, peer, tag_sender_side, comm, &reqs[r++]),
               "MPI_Isend", me, part, peer);
    mpi::check(MPI_Irecv(in_recv[k].data(), n, MPI_BYTE, peer, tag_receiver_side, comm, &reqs[r++]),
               "MPI_Irecv", me, part, peer);
  }
  for (std::size_t k = 0; k < nr; ++k) {
    const int peer = recvs[k].peer;
    mpi::check(
        MPI_Isend(out_recv[k].data(), n, MPI_BYTE, peer, tag_receiver_side, comm, &reqs[r++]),
        "MPI_Isend", me, part, peer);
    mpi::check(MPI_Irecv(in_send[k].data(), n, MPI_BYTE, peer, tag_sender_side, comm, &reqs[r++]),
               "MPI_Irecv", me, part, peer);
  }
  mpi::check(MPI_Waitall(int(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE), "MPI_Waitall", me,
             part);
  for (const auto& w : in_recv) s.theirs_recv.push_back(from_wire(w));
  for (const auto& w : in_send) s.theirs_send.push_back(from_wire(w));
  return s;
}

// The calls of one message cut as `cut` says, on this side (`direct`: from the fields).
std::vector<nccl_call> calls_of(const nccl_cut& cut, bool direct,
                                const std::vector<nccl_direct_step>& steps, int peer,
                                std::byte* at) {
  std::vector<nccl_call> out;
  for (const auto& p : cut.pieces)
    out.push_back({peer, piece_address(p, direct, steps, at), std::size_t(p.bytes)});
  return out;
}

}  // namespace

std::unique_ptr<nccl_carrier> nccl_carrier::attach(MPI_Comm comm, bool gpu_shared,
                                                   const exchange_program& prog,
                                                   const std::vector<message>& sends,
                                                   const std::byte* send_buf,
                                                   const std::vector<message>& recvs,
                                                   std::byte* recv_buf, bool zero_copy) {
  int me = 0;
  mpi::check(MPI_Comm_rank(comm, &me), "MPI_Comm_rank", -1, "NCCL transport");
  require(!gpu_shared,
          "rank {}: staging 'nccl' needs one GPU per rank, but ranks of this communicator on one "
          "node share a GPU, which NCCL does not allow; run one rank per GPU or use another "
          "staging policy",
          me);
  // The exchange's buffers hold its messages (the program sized them so).
  auto carrier = std::make_unique<nccl_carrier>(nccl_comm::shared(comm), sends, recvs, send_buf,
                                                extent_of(sends), recv_buf, extent_of(recvs));
  if (!zero_copy) {
    carrier->register_large(comm, prog.options.nccl_register);
    return carrier;
  }
  const sides s = swap_sides(comm, prog, sends, send_buf, recvs, recv_buf, me);
  auto* sbuf = const_cast<std::byte*>(send_buf);
  for (std::size_t k = 0; k < sends.size(); ++k) {
    if (sends[k].bytes == 0) continue;
    const nccl_cut cut = cut_message(s.mine_send[k], s.theirs_recv[k], sends[k].bytes);
    carrier->recut(
        true, sends[k].peer,
        calls_of(cut, cut.sender_direct, s.steps_send[k], sends[k].peer, sbuf + sends[k].offset),
        cut.sender_direct);
  }
  for (std::size_t k = 0; k < recvs.size(); ++k) {
    if (recvs[k].bytes == 0) continue;
    const nccl_cut cut = cut_message(s.theirs_send[k], s.mine_recv[k], recvs[k].bytes);
    carrier->recut(false, recvs[k].peer,
                   calls_of(cut, cut.receiver_direct, s.steps_recv[k], recvs[k].peer,
                            recv_buf + recvs[k].offset),
                   cut.receiver_direct);
  }
  carrier->register_large(comm, prog.options.nccl_register);
  return carrier;
}

nccl_carrier::nccl_carrier(std::shared_ptr<nccl_comm> comm, const std::vector<message>& sends,
                           const std::vector<message>& recvs, const void* send_buf,
                           std::size_t send_bytes, void* recv_buf, std::size_t recv_bytes)
    : carrier(nvtx_transport::nccl), comm_(std::move(comm)) {
  require(comm_ != nullptr, "an NCCL carrier needs an NCCL communicator");
  comm_->require_usable();
  const int me = comm_->rank(), n = comm_->size();
  // ncclSend only reads its buffer; one call type serves both directions.
  auto* send_base = const_cast<std::byte*>(static_cast<const std::byte*>(send_buf));
  auto* recv_base = static_cast<std::byte*>(recv_buf);
  auto prepare = [&](const std::vector<message>& msgs, std::byte* base, std::size_t extent,
                     const char* what, std::vector<nccl_call>& out, std::vector<route>& routes) {
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
      routes.push_back({m.peer, out.size(), 1, false});
      out.push_back({m.peer, base + m.offset, m.bytes});
    }
    if (!out.empty()) require_reachable(base, comm_->device(), what, me);
  };
  prepare(sends, send_base, send_bytes, "send", sends_, send_routes_);
  prepare(recvs, recv_base, recv_bytes, "receive", recvs_, recv_routes_);
}

nccl_carrier::nccl_carrier(std::shared_ptr<nccl_comm> comm, const std::vector<int>& peers,
                           std::size_t capacity)
    : carrier(nvtx_transport::nccl), comm_(std::move(comm)), capacity_(capacity) {
  require(comm_ != nullptr, "an NCCL carrier needs an NCCL communicator");
  comm_->require_usable();
  for (const int p : peers) {
    require(p >= 0 && p < comm_->size(),
            "rank {}: NCCL carrier to peer {}, outside the communicator of {} ranks", comm_->rank(),
            p, comm_->size());
    send_routes_.push_back({p, 0, 0, false});
    recv_routes_.push_back({p, 0, 0, false});
  }
  sends_.reserve(capacity);
  recvs_.reserve(capacity);
}

void nccl_carrier::assign(const nccl_call* sends, std::size_t n_sends, const nccl_call* recvs,
                          std::size_t n_recvs) {
  const int me = comm_->rank();
  require(
      n_sends <= capacity_ && n_recvs <= capacity_,
      "rank {}: internal error: {} NCCL sends and {} receives in one group of a carrier made for "
      "{}",
      me, n_sends, n_recvs, capacity_);
  auto fill = [&](std::vector<nccl_call>& out, const nccl_call* in, std::size_t n,
                  const std::vector<route>& routes) {
    out.clear();  // keeps the capacity reserved at set-up
    for (std::size_t k = 0; k < n; ++k) {
      require(find(routes, in[k].peer) != nullptr,
              "rank {}: internal error: NCCL call to or from rank {}, not a peer of this carrier",
              me, in[k].peer);
      out.push_back(in[k]);
    }
  };
  fill(sends_, sends, n_sends, send_routes_);
  fill(recvs_, recvs, n_recvs, recv_routes_);
}

const nccl_carrier::route* nccl_carrier::find(const std::vector<route>& routes, int peer) {
  for (const auto& r : routes)
    if (r.peer == peer) return &r;
  return nullptr;
}

void nccl_carrier::recut(bool send, int peer, std::vector<nccl_call> calls, bool direct) {
  auto& list = send ? sends_ : recvs_;
  auto& routes = send ? send_routes_ : recv_routes_;
  auto it =
      std::find_if(routes.begin(), routes.end(), [&](const route& r) { return r.peer == peer; });
  require(it != routes.end() && !calls.empty(),
          "rank {}: internal error: zero-copy cut of a message to or from rank {} it does not have",
          comm_->rank(), peer);
  for (const auto& c : calls)
    require(c.data != nullptr && c.bytes > 0, "rank {}: internal error: empty zero-copy piece",
            comm_->rank());
  if (direct)
    require_reachable(calls.front().data, comm_->device(), send ? "send" : "receive",
                      comm_->rank());
  const std::size_t first = it->first, count = it->count;
  list.erase(list.begin() + std::ptrdiff_t(first), list.begin() + std::ptrdiff_t(first + count));
  list.insert(list.begin() + std::ptrdiff_t(first), calls.begin(), calls.end());
  const std::ptrdiff_t grow = std::ptrdiff_t(calls.size()) - std::ptrdiff_t(count);
  it->count = calls.size();
  it->direct = direct;
  for (auto& r : routes)
    if (r.first > first) r.first = std::size_t(std::ptrdiff_t(r.first) + grow);
}

bool nccl_carrier::send_direct(int peer) const {
  const route* r = find(send_routes_, peer);
  return r != nullptr && r->direct;
}
bool nccl_carrier::recv_direct(int peer) const {
  const route* r = find(recv_routes_, peer);
  return r != nullptr && r->direct;
}

std::string nccl_carrier::note(bool send, int peer) const {
  const route* r = find(send ? send_routes_ : recv_routes_, peer);
  if (r == nullptr) return {};
  const std::string reg =
      r->registered ? " (registered with NCCL: written straight into the receiver's memory)" : "";
  if (!r->direct && r->count == 1) return reg;
  if (!r->direct)
    return format(" (packed, {} NCCL calls cut as the peer's fields lie)", r->count) + reg;
  return format(" (zero-copy: {} NCCL call{} {} the field{} memory, no {} kernel)", r->count,
                r->count == 1 ? "" : "s", send ? "from" : "into", r->count == 1 ? "'s" : "s'",
                send ? "pack" : "unpack") +
         reg;
}

void nccl_carrier::register_large(MPI_Comm comm, bool want) {
  const int me = comm_->rank();
  // This side of each message: 1 where its large calls (if any) can be registered.
  auto can = [&](const std::vector<nccl_call>& calls, const route& r) {
    if (!want) return 0;
    for (std::size_t k = r.first; k < r.first + r.count; ++k)
      if (calls[k].bytes >= nccl_register_min_bytes && !gpu::ipc_exportable(calls[k].data))
        return 0;
    return 1;
  };
  const std::size_t ns = send_routes_.size(), nr = recv_routes_.size();
  std::vector<int> mine(ns + nr), theirs(ns + nr, 0);
  std::vector<MPI_Request> reqs(2 * (ns + nr), MPI_REQUEST_NULL);
  for (std::size_t k = 0; k < ns + nr; ++k) {
    const bool send = k < ns;
    const route& r = send ? send_routes_[k] : recv_routes_[k - ns];
    mine[k] = can(send ? sends_ : recvs_, r);
    const int out = send ? tag_sender_register : tag_receiver_register;
    const int in = send ? tag_receiver_register : tag_sender_register;
    mpi::check(MPI_Isend(&mine[k], 1, MPI_INT, r.peer, out, comm, &reqs[2 * k]), "MPI_Isend", me,
               part, r.peer);
    mpi::check(MPI_Irecv(&theirs[k], 1, MPI_INT, r.peer, in, comm, &reqs[2 * k + 1]), "MPI_Irecv",
               me, part, r.peer);
  }
  mpi::check(MPI_Waitall(int(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE), "MPI_Waitall", me,
             part);
  // Both sides cut a message alike: the same calls of the same sizes register on both. NCCL
  // registers memory from cudaMalloc only with NCCL_LEGACY_CUDA_REGISTER=1 (read when a
  // registered buffer is first used); a user's own setting wins.
  if (want) setenv("NCCL_LEGACY_CUDA_REGISTER", "1", 0);
  for (std::size_t k = 0; k < ns + nr; ++k) {
    if (!mine[k] || !theirs[k]) continue;
    const bool send = k < ns;
    route& r = send ? send_routes_[k] : recv_routes_[k - ns];
    const auto& calls = send ? sends_ : recvs_;
    for (std::size_t c = r.first; c < r.first + r.count; ++c) {
      if (calls[c].bytes < nccl_register_min_bytes) continue;
      void* h = nullptr;
      nccl_check(nccl().CommRegister(comm_->get(), calls[c].data, calls[c].bytes, &h),
                 "ncclCommRegister", me, r.peer, comm_->get());
      registered_.push_back(h);
      r.registered = true;
    }
  }
}

nccl_carrier::~nccl_carrier() {
  if (comm_ && comm_->get() != nullptr)
    for (void* h : registered_) (void)nccl().CommDeregister(comm_->get(), h);
}

void nccl_carrier::connect() {
  std::vector<int> peers;
  for (const auto& r : send_routes_) peers.push_back(r.peer);
  for (const auto& r : recv_routes_) peers.push_back(r.peer);
  comm_->connect(peers);
}

void nccl_carrier::enqueue(void* stream, unsigned long long capture) {
  comm_->enqueue_group(stream, sends_.data(), sends_.size(), recvs_.data(), recvs_.size(), capture);
}

void nccl_carrier::check_async() {
  comm_->check_async();
}

void nccl_carrier::bind_thread() const {
  (void)cudaSetDevice(comm_->device());  // (a failure shows at the next checked call)
}

void nccl_carrier::abort(const std::string& why) {
  comm_->abort(why);
}

std::string nccl_carrier::describe() const {
  const int v = loaded_nccl().version;
  // Less the process's own reference, which keeps it until MPI_Finalize (nccl_comm.hpp).
  return format("NCCL {}.{}.{}, one communicator shared by {} exchange object(s)", v / 10000,
                v / 100 % 100, v % 100, std::max(1L, comm_.use_count() - 1));
}

void nccl_carrier::waiting_for(std::vector<std::string>& out) const {
  for (const route& r : recv_routes_)
    out.push_back(
        fmt::format("rank {} (NCCL: this exchange's group has not completed on the GPU; the NCCL "
                    "communicator is aborted)",
                    r.peer));
}

}  // namespace halox::detail
