// CUDA IPC transport between node-local GPUs (see halox/transport/peer_ipc.hpp).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "halox/error.hpp"
#include "halox/transport/peer_ipc.hpp"
#include "halox/transport/staging.hpp"

namespace halox::detail {

namespace {

enum : int { tag_handle = 10, tag_clear = 11, tag_ready = 12, tag_pair = 13 };

void check_cuda(cudaError_t rc, const char* call, int rank) {
  if (rc != cudaSuccess)
    fail("rank {}: {} failed: {} ({})", rank, call, cudaGetErrorString(rc), cudaGetErrorName(rc));
}
void check_mpi(int rc, const char* call, int rank) {
  if (rc != MPI_SUCCESS) fail("rank {}: {} failed (CUDA IPC transport)", rank, call);
}

struct node_entry {
  int rank;      // in the exchange's communicator
  char bus[32];  // PCI bus id of the rank's current GPU
};

// This rank's view of its peers: which can be reached through CUDA IPC (on this node, with a
// GPU this rank's GPU can access, or the same GPU), and whether any shares this rank's GPU.
struct reach {
  std::map<int, bool> ok;  // every peer of a message
  bool shares_gpu = false;
};

reach peers_reachable(MPI_Comm comm, const exchange_program& prog, int me) {
  MPI_Comm node;
  check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, &node),
            "MPI_Comm_split_type", me);
  int n = 0, dev = 0;
  MPI_Comm_size(node, &n);
  node_entry mine{};
  mine.rank = me;
  check_cuda(cudaGetDevice(&dev), "cudaGetDevice", me);
  check_cuda(cudaDeviceGetPCIBusId(mine.bus, sizeof mine.bus, dev), "cudaDeviceGetPCIBusId", me);
  std::vector<node_entry> all(static_cast<std::size_t>(n));
  check_mpi(MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, node),
            "MPI_Allgather(node)", me);
  MPI_Comm_free(&node);
  reach r;
  auto reachable = [&](int peer) {
    for (const auto& e : all) {
      if (e.rank != peer) continue;
      if (std::strncmp(e.bus, mine.bus, sizeof mine.bus) == 0) {  // the same GPU
        r.shares_gpu = true;
        return true;
      }
      int other = -1, can = 0;
      if (cudaDeviceGetByPCIBusId(&other, e.bus) != cudaSuccess) {
        (void)cudaGetLastError();  // not visible to this process
        return false;
      }
      return cudaDeviceCanAccessPeer(&can, dev, other) == cudaSuccess && can != 0;
    }
    return false;  // not on this node
  };
  // HALOX_PEER_IPC_RANKS: only pairs of listed ranks (tests force mixed exchanges with it).
  const auto listed = peer_ipc_ranks();
  auto allowed = [&](int rank) {
    return !listed || std::find(listed->begin(), listed->end(), rank) != listed->end();
  };
  for (const auto* msgs : {&prog.sends, &prog.recvs})
    for (const auto& m : *msgs)
      if (!r.ok.count(m.peer)) r.ok[m.peer] = allowed(me) && allowed(m.peer) && reachable(m.peer);
  return r;
}

// Both sides of every pair must agree: a pair uses CUDA IPC only if each side can reach the
// other. Every rank sends its view to each of its peers and takes the AND.
void agree_pairs(MPI_Comm comm, std::map<int, bool>& ok, int me) {
  std::vector<int> out, in(ok.size());
  std::vector<MPI_Request> reqs;
  for (const auto& [peer, can] : ok) out.push_back(can ? 1 : 0);
  std::size_t k = 0;
  for (const auto& [peer, can] : ok) {
    reqs.emplace_back();
    check_mpi(MPI_Irecv(&in[k], 1, MPI_INT, peer, tag_pair, comm, &reqs.back()),
              "MPI_Irecv(IPC pair)", me);
    reqs.emplace_back();
    check_mpi(MPI_Isend(&out[k], 1, MPI_INT, peer, tag_pair, comm, &reqs.back()),
              "MPI_Isend(IPC pair)", me);
    ++k;
  }
  if (!reqs.empty())
    check_mpi(MPI_Waitall(int(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE),
              "MPI_Waitall(IPC pairs)", me);
  k = 0;
  for (auto& [peer, can] : ok) can = can && in[k++] != 0;
}

// Rebases `p` from [old_base, old_base + size) into a new buffer; other pointers stay.
template <class P>
bool inside(P p, const std::byte* base, std::size_t size) {
  const auto* b = reinterpret_cast<const std::byte*>(p);
  return base != nullptr && b >= base && b < base + size;
}

std::size_t extent_of(const std::vector<message>& msgs) {
  std::size_t e = 0;
  for (const auto& m : msgs) e = std::max(e, m.offset + m.bytes);
  return e;
}

struct handle_msg {
  cudaIpcMemHandle_t handle;
  unsigned long long offset;  // of the receiver's message from the sender, in its buffer
  cudaIpcMemHandle_t flags;   // device signals: the receiver's flag array
  unsigned long long ready, consumed;  // the sender's two slots in it
};

}  // namespace

struct peer_ipc::impl {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  std::vector<void*> opened;  // remote receive buffers and flag arrays, closed at destruction
  bool device_signalled = false;
  std::shared_ptr<std::byte> flags;  // device signals: [ready per receive, consumed per receive]
  std::shared_ptr<std::byte> recv;   // device memory the IPC senders write into
  device_signals signals;
  std::vector<message> mpi_sends, mpi_recvs;  // the messages that still travel through MPI
  // Persistent empty control messages: clear-to-send from receivers (one per send peer),
  // data-ready from senders (one per receive peer), and this rank's own two kinds.
  std::vector<MPI_Request> clear_in, ready_in, clear_out, ready_out;
  char dummy = 0;

  ~impl() {
    int finalized = 1;
    MPI_Finalized(&finalized);
    for (void* p : opened) (void)cudaIpcCloseMemHandle(p);
    if (finalized) return;
    for (auto* v : {&clear_in, &ready_in, &clear_out, &ready_out})
      for (auto& r : *v) MPI_Request_free(&r);
  }
  void start_all(std::vector<MPI_Request>& v, const char* what) {
    if (!v.empty()) check_mpi(MPI_Startall(int(v.size()), v.data()), what, rank);
  }
  void wait_all(std::vector<MPI_Request>& v, const char* what) {
    if (!v.empty())
      check_mpi(MPI_Waitall(int(v.size()), v.data(), MPI_STATUSES_IGNORE), what, rank);
  }
  bool test_all(std::vector<MPI_Request>& v, const char* what) {
    int flag = 1;
    if (!v.empty())
      check_mpi(MPI_Testall(int(v.size()), v.data(), &flag, MPI_STATUSES_IGNORE), what, rank);
    return flag != 0;
  }
};

std::unique_ptr<peer_ipc> peer_ipc::attach(MPI_Comm comm, exchange_program& prog) {
  const staging policy = staging_from_env();
  // The same on every rank (same fields, same environment): decides who joins the collectives.
  if (!prog.has_device_fields || prog.has_host_fields ||
      (policy != staging::automatic && policy != staging::peer_ipc))
    return nullptr;
  int me = 0;
  MPI_Comm_rank(comm, &me);
  reach r = peers_reachable(comm, prog, me);
  agree_pairs(comm, r.ok, me);
  auto by_ipc = [&](const message& m) { return r.ok.at(m.peer); };
  const bool all_ipc = std::all_of(prog.sends.begin(), prog.sends.end(), by_ipc) &&
                       std::all_of(prog.recvs.begin(), prog.recvs.end(), by_ipc);
  const bool any_ipc = std::any_of(prog.sends.begin(), prog.sends.end(), by_ipc) ||
                       std::any_of(prog.recvs.begin(), prog.recvs.end(), by_ipc);
  // Device signals need every pair of every rank on CUDA IPC and on different GPUs: a kernel
  // polling for a peer on its own GPU could hold the SMs that peer's kernel needs.
  int mine = all_ipc && !r.shares_gpu && !prog.ordered_device_unpack && ipc_device_signals();
  int everywhere = 0;
  check_mpi(MPI_Allreduce(&mine, &everywhere, 1, MPI_INT, MPI_LAND, comm), "MPI_Allreduce", me);
  if (!any_ipc) return nullptr;  // every message of this rank goes through MPI

  auto p = std::make_unique<impl>();
  p->comm = comm;
  p->rank = me;
  p->device_signalled = everywhere != 0;
  std::vector<message> ipc_sends, ipc_recvs;
  for (const auto& m : prog.sends) (by_ipc(m) ? ipc_sends : p->mpi_sends).push_back(m);
  for (const auto& m : prog.recvs) (by_ipc(m) ? ipc_recvs : p->mpi_recvs).push_back(m);
  const std::size_t n_recv = ipc_recvs.size();
  if (p->device_signalled) {
    p->flags = allocate(memory_space::device, std::max<std::size_t>(1, 2 * n_recv) * 8);
    auto* f = reinterpret_cast<std::uint64_t*>(p->flags.get());
    for (std::size_t k = 0; k < n_recv; ++k) {
      p->signals.unpack_wait.push_back(f + k);           // ready, written by sender k
      p->signals.unpack_post.push_back(f + n_recv + k);  // consumed, read by sender k
    }
  }

  // The IPC messages arrive in device memory (a buffer of the whole receive extent, at the
  // same offsets); their unpack steps follow them. The MPI messages keep the staging buffers.
  const std::size_t recv_size = extent_of(prog.recvs), send_size = extent_of(prog.sends);
  // The buffers the kernels use now (device copies under copy staging).
  const std::byte* old_recv = prog.copy_staging ? prog.device_recv.get() : prog.recv_buf.get();
  const std::byte* old_send = prog.copy_staging ? prog.device_send.get() : prog.send_buf.get();
  auto in_message = [](std::size_t off, const std::vector<message>& msgs) -> const message* {
    for (const auto& m : msgs)
      if (off >= m.offset && off < m.offset + m.bytes) return &m;
    return nullptr;
  };
  p->recv = allocate(memory_space::device, recv_size);
  auto rebase_recv = [&](auto*& ptr) {
    if (!inside(ptr, old_recv, recv_size)) return;
    const std::size_t off = std::size_t(reinterpret_cast<const std::byte*>(ptr) - old_recv);
    if (in_message(off, ipc_recvs)) ptr = p->recv.get() + off;
  };
  for (auto& op : prog.device_unpack) rebase_recv(op.src);
  for (auto& op : prog.device_scatter) rebase_recv(op.buf);
  if (all_ipc) {  // nothing else uses the staging buffers
    prog.copy_staging = false;
    prog.recv_buf = p->recv;
  }

  // Each receiver sends its buffer's handle and where each sender's message goes; each sender
  // opens the handles once.
  cudaIpcMemHandle_t h{}, fh{};
  if (!ipc_recvs.empty())
    check_cuda(cudaIpcGetMemHandle(&h, p->recv.get()), "cudaIpcGetMemHandle", me);
  if (!ipc_recvs.empty() && p->device_signalled)
    check_cuda(cudaIpcGetMemHandle(&fh, p->flags.get()), "cudaIpcGetMemHandle(flags)", me);
  std::vector<handle_msg> out(ipc_recvs.size()), in(ipc_sends.size());
  std::vector<MPI_Request> reqs;
  for (std::size_t k = 0; k < ipc_recvs.size(); ++k) {
    out[k] = {h, ipc_recvs[k].offset, fh, k, n_recv + k};
    reqs.emplace_back();
    check_mpi(MPI_Isend(&out[k], sizeof(handle_msg), MPI_BYTE, ipc_recvs[k].peer, tag_handle,
                        comm, &reqs.back()),
              "MPI_Isend(IPC handle)", me);
  }
  for (std::size_t k = 0; k < ipc_sends.size(); ++k) {
    reqs.emplace_back();
    check_mpi(MPI_Irecv(&in[k], sizeof(handle_msg), MPI_BYTE, ipc_sends[k].peer, tag_handle, comm,
                        &reqs.back()),
              "MPI_Irecv(IPC handle)", me);
  }
  if (!reqs.empty())
    check_mpi(MPI_Waitall(int(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE),
              "MPI_Waitall(IPC handles)", me);
  std::vector<std::byte*> remote(ipc_sends.size());
  for (std::size_t k = 0; k < ipc_sends.size(); ++k) {
    void* base = nullptr;
    check_cuda(cudaIpcOpenMemHandle(&base, in[k].handle, cudaIpcMemLazyEnablePeerAccess),
               "cudaIpcOpenMemHandle", me);
    p->opened.push_back(base);
    remote[k] = static_cast<std::byte*>(base) + in[k].offset;
    if (!p->device_signalled) continue;
    void* flags = nullptr;
    check_cuda(cudaIpcOpenMemHandle(&flags, in[k].flags, cudaIpcMemLazyEnablePeerAccess),
               "cudaIpcOpenMemHandle(flags)", me);
    p->opened.push_back(flags);
    auto* f = static_cast<std::uint64_t*>(flags);
    p->signals.pack_wait.push_back(f + in[k].consumed);
    p->signals.pack_post.push_back(f + in[k].ready);
  }
  // Pack steps of IPC messages write straight into the receivers' buffers.
  auto rebase_send = [&](auto*& ptr) {
    if (!inside(ptr, old_send, send_size)) return;
    const std::size_t off = std::size_t(reinterpret_cast<const std::byte*>(ptr) - old_send);
    for (std::size_t k = 0; k < ipc_sends.size(); ++k)
      if (off >= ipc_sends[k].offset && off < ipc_sends[k].offset + ipc_sends[k].bytes) {
        ptr = remote[k] + (off - ipc_sends[k].offset);
        return;
      }
  };
  for (auto& op : prog.device_pack) rebase_send(op.dst);
  for (auto& op : prog.device_gather) rebase_send(op.buf);

  // Control messages, prepared once (IPC peers only).
  auto init = [&](std::vector<MPI_Request>& v, const std::vector<message>& peers, bool send,
                  int tag) {
    for (const auto& m : peers) {
      v.emplace_back();
      check_mpi(send ? MPI_Send_init(&p->dummy, 0, MPI_BYTE, m.peer, tag, comm, &v.back())
                     : MPI_Recv_init(&p->dummy, 0, MPI_BYTE, m.peer, tag, comm, &v.back()),
                "MPI_Send_init/MPI_Recv_init(IPC control)", me);
    }
  };
  const std::string ipc_path =
      std::string(to_string(staging::peer_ipc)) +
      (p->device_signalled
           ? " (node-local GPUs: the pack kernel writes into the receiver's GPU memory through "
             "CUDA IPC, then a data-ready flag; the unpack kernel waits for it and flags its "
             "buffer consumed: no host wait, no MPI message per exchange)"
           : " (node-local GPUs: the pack kernel writes into the receiver's GPU memory through "
             "CUDA IPC; MPI carries clear-to-send and data-ready only)");
  for (const auto& m : ipc_sends) prog.direct_send_peers.push_back(m.peer);
  for (const auto& m : ipc_recvs) prog.direct_recv_peers.push_back(m.peer);
  if (all_ipc)
    prog.path = ipc_path;
  else
    prog.direct_path = ipc_path;
  if (p->device_signalled) return std::unique_ptr<peer_ipc>(new peer_ipc(std::move(p)));
  init(p->clear_in, ipc_sends, false, tag_clear);  // my receivers say: buffer free
  init(p->ready_out, ipc_sends, true, tag_ready);  // I tell my receivers: data in place
  init(p->clear_out, ipc_recvs, true, tag_clear);  // I tell my senders: buffer free
  init(p->ready_in, ipc_recvs, false, tag_ready);  // my senders say: data in place
  return std::unique_ptr<peer_ipc>(new peer_ipc(std::move(p)));
}

peer_ipc::peer_ipc(std::unique_ptr<impl> p) : p_(std::move(p)) {}
peer_ipc::~peer_ipc() = default;

bool peer_ipc::device_signalled() const {
  return p_->device_signalled;
}
const device_signals& peer_ipc::signals() const {
  return p_->signals;
}
const std::vector<message>& peer_ipc::mpi_sends() const {
  return p_->mpi_sends;
}
const std::vector<message>& peer_ipc::mpi_recvs() const {
  return p_->mpi_recvs;
}

void peer_ipc::start() {
  p_->start_all(p_->clear_in, "MPI_Startall(clear-to-send in)");
  p_->start_all(p_->ready_in, "MPI_Startall(data-ready in)");
  p_->start_all(p_->clear_out, "MPI_Startall(clear-to-send out)");
}
void peer_ipc::wait_clear() {
  p_->wait_all(p_->clear_in, "MPI_Waitall(clear-to-send)");
}
void peer_ipc::signal_ready() {
  p_->start_all(p_->ready_out, "MPI_Startall(data-ready out)");
}
void peer_ipc::wait_ready() {
  p_->wait_all(p_->ready_in, "MPI_Waitall(data-ready)");
}
bool peer_ipc::test_ready() {
  return p_->test_all(p_->ready_in, "MPI_Testall(data-ready)");
}
void peer_ipc::wait_sends() {
  p_->wait_all(p_->clear_out, "MPI_Waitall(clear-to-send out)");
  p_->wait_all(p_->ready_out, "MPI_Waitall(data-ready out)");
}
bool peer_ipc::test_sends() {
  return p_->test_all(p_->clear_out, "MPI_Testall(clear-to-send out)") &&
         p_->test_all(p_->ready_out, "MPI_Testall(data-ready out)");
}

}  // namespace halox::detail
