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

enum : int { tag_handle = 10, tag_clear = 11, tag_ready = 12 };

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

struct reach {
  bool all = true;            // every peer on this node, its GPU reachable
  bool shares_gpu = false;    // some peer on this rank's own GPU
};

// Whether every peer of this rank is on its node with a GPU this rank's GPU can reach.
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
  for (const auto& m : prog.sends) r.all = reachable(m.peer) && r.all;
  for (const auto& m : prog.recvs) r.all = reachable(m.peer) && r.all;
  return r;
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
  device_signals signals;
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
  const reach r = peers_reachable(comm, prog, me);
  // Device signals need every peer on another GPU: a kernel polling for a peer on its own GPU
  // could hold the SMs that peer's kernel needs.
  const int mine[2] = {r.all ? 1 : 0,
                       !r.shares_gpu && !prog.ordered_device_unpack && ipc_device_signals()};
  int all[2] = {0, 0};
  check_mpi(MPI_Allreduce(mine, all, 2, MPI_INT, MPI_LAND, comm), "MPI_Allreduce", me);
  if (!all[0]) return nullptr;

  auto p = std::make_unique<impl>();
  p->comm = comm;
  p->rank = me;
  p->device_signalled = all[1] != 0;
  const std::size_t n_recv = prog.recvs.size();
  if (p->device_signalled) {
    p->flags = allocate(memory_space::device, std::max<std::size_t>(1, 2 * n_recv) * 8);
    auto* f = reinterpret_cast<std::uint64_t*>(p->flags.get());
    for (std::size_t k = 0; k < n_recv; ++k) {
      p->signals.unpack_wait.push_back(f + k);           // ready, written by sender k
      p->signals.unpack_post.push_back(f + n_recv + k);  // consumed, read by sender k
    }
  }

  // The receive buffer moves to device memory; unpack steps follow it.
  const std::size_t recv_size = extent_of(prog.recvs), send_size = extent_of(prog.sends);
  // The buffers the kernels use now (device copies under copy staging).
  const std::byte* old_recv = prog.copy_staging ? prog.device_recv.get() : prog.recv_buf.get();
  const std::byte* old_send = prog.copy_staging ? prog.device_send.get() : prog.send_buf.get();
  prog.copy_staging = false;
  auto recv = allocate(memory_space::device, recv_size);
  for (auto& op : prog.device_unpack)
    if (inside(op.src, old_recv, recv_size)) op.src = recv.get() + (op.src - old_recv);
  for (auto& op : prog.device_scatter)
    if (inside(op.buf, old_recv, recv_size)) op.buf = recv.get() + (op.buf - old_recv);
  prog.recv_buf = recv;

  // Each receiver sends its buffer's handle and where each sender's message goes; each sender
  // opens the handles once.
  cudaIpcMemHandle_t h{}, fh{};
  if (!prog.recvs.empty())
    check_cuda(cudaIpcGetMemHandle(&h, recv.get()), "cudaIpcGetMemHandle", me);
  if (!prog.recvs.empty() && p->device_signalled)
    check_cuda(cudaIpcGetMemHandle(&fh, p->flags.get()), "cudaIpcGetMemHandle(flags)", me);
  std::vector<handle_msg> out(prog.recvs.size()), in(prog.sends.size());
  std::vector<MPI_Request> reqs;
  for (std::size_t k = 0; k < prog.recvs.size(); ++k) {
    out[k] = {h, prog.recvs[k].offset, fh, k, n_recv + k};
    reqs.emplace_back();
    check_mpi(MPI_Isend(&out[k], sizeof(handle_msg), MPI_BYTE, prog.recvs[k].peer, tag_handle, comm,
                        &reqs.back()),
              "MPI_Isend(IPC handle)", me);
  }
  for (std::size_t k = 0; k < prog.sends.size(); ++k) {
    reqs.emplace_back();
    check_mpi(MPI_Irecv(&in[k], sizeof(handle_msg), MPI_BYTE, prog.sends[k].peer, tag_handle, comm,
                        &reqs.back()),
              "MPI_Irecv(IPC handle)", me);
  }
  if (!reqs.empty())
    check_mpi(MPI_Waitall(int(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE),
              "MPI_Waitall(IPC handles)", me);
  std::vector<std::byte*> remote(prog.sends.size());
  for (std::size_t k = 0; k < prog.sends.size(); ++k) {
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
  // Pack steps write straight into the receivers' buffers.
  auto rebase = [&](auto* ptr) -> std::byte* {
    const std::size_t off = std::size_t(reinterpret_cast<const std::byte*>(ptr) - old_send);
    for (std::size_t k = 0; k < prog.sends.size(); ++k)
      if (off >= prog.sends[k].offset && off < prog.sends[k].offset + prog.sends[k].bytes)
        return remote[k] + (off - prog.sends[k].offset);
    fail("rank {}: a pack step lies outside every message (internal error)", me);
  };
  for (auto& op : prog.device_pack)
    if (inside(op.dst, old_send, send_size)) op.dst = rebase(op.dst);
  for (auto& op : prog.device_gather)
    if (inside(op.buf, old_send, send_size)) op.buf = rebase(op.buf);

  // Control messages, prepared once.
  auto init = [&](std::vector<MPI_Request>& v, const std::vector<message>& peers, bool send,
                  int tag) {
    for (const auto& m : peers) {
      v.emplace_back();
      check_mpi(send ? MPI_Send_init(&p->dummy, 0, MPI_BYTE, m.peer, tag, comm, &v.back())
                     : MPI_Recv_init(&p->dummy, 0, MPI_BYTE, m.peer, tag, comm, &v.back()),
                "MPI_Send_init/MPI_Recv_init(IPC control)", me);
    }
  };
  init(p->clear_in, prog.sends, false, tag_clear);  // my receivers say: buffer free
  init(p->ready_out, prog.sends, true, tag_ready);  // I tell my receivers: data in place
  init(p->clear_out, prog.recvs, true, tag_clear);  // I tell my senders: buffer free
  init(p->ready_in, prog.recvs, false, tag_ready);  // my senders say: data in place

  prog.path = std::string(to_string(staging::peer_ipc)) +
              (p->device_signalled
                   ? " (node-local GPUs: the pack kernel writes into the receiver's GPU memory "
                     "through CUDA IPC, then a data-ready flag; the unpack kernel waits for it and "
                     "flags its buffer consumed: no host wait, no MPI message per exchange)"
                   : " (node-local GPUs: the pack kernel writes into the receiver's GPU memory "
                     "through CUDA IPC; MPI carries clear-to-send and data-ready only)");
  if (p->device_signalled) return std::unique_ptr<peer_ipc>(new peer_ipc(std::move(p)));
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
