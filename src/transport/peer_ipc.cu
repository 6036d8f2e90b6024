// CUDA IPC transport between node-local GPUs (see halox/transport/peer_ipc.hpp).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "../gpu/check.hpp"
#include "../gpu/cuda_driver.hpp"
#include "halox/core/error.hpp"
#include "halox/transport/locality.hpp"
#include "halox/transport/peer_ipc.hpp"
#include "halox/transport/staging.hpp"

namespace halox::detail {

namespace {

enum : int {
  tag_handle = 10,
  tag_clear = 11,
  tag_ready = 12,
  tag_pair = 13,
  tag_regions = 14,
  tag_direct = 15,
  tag_start = 16
};

void check_mpi(int rc, const char* call, int rank) {
  if (rc != MPI_SUCCESS) fail("rank {}: {} failed (CUDA IPC transport)", rank, call);
}

// This rank's view of its peers: which can be reached through CUDA IPC (on this node, with a
// GPU this rank's GPU can access, or the same GPU), and whether any shares this rank's GPU.
struct reach {
  std::map<int, bool> ok;  // every peer of a message
  bool shares_gpu = false;
};

reach peers_reachable(const locality& here, const exchange_program& prog, int me) {
  int dev = 0;
  gpu::check(cudaGetDevice(&dev), "cudaGetDevice", me);
  const std::string mine = *here.gpu_of(me);
  reach r;
  auto reachable = [&](int peer) {
    const std::string* theirs = here.gpu_of(peer);
    if (!here.same_node(peer) || theirs == nullptr) return false;
    if (*theirs == mine) {  // the same GPU
      r.shares_gpu = true;
      return true;
    }
    int other = -1, can = 0;
    if (cudaDeviceGetByPCIBusId(&other, theirs->c_str()) != cudaSuccess) {
      (void)cudaGetLastError();  // not visible to this process
      return false;
    }
    return cudaDeviceCanAccessPeer(&can, dev, other) == cudaSuccess && can != 0;
  };
  // exchange_options::peer_ipc_ranks: only pairs of listed ranks (tests force mixed exchanges).
  const auto& listed = prog.options.peer_ipc_ranks;
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
  unsigned long long ready;   // the sender's data-ready slot in it
  long long regions;          // halo regions the sender may write straight into (-1: it may not)
  unsigned long long bytes;   // of the message, as the receiver's plan has it
  unsigned long long second;  // MPI handshake: from copy 0 of the receive buffer to copy 1
};

// Device signals, from a sender to its receiver: where the receiver says it has started an
// exchange (a slot of the sender's flag array).
struct start_msg {
  cudaIpcMemHandle_t flags;
  unsigned long long started;
};

// One unpack step of a message as its sender sees it, to write the halo region directly: where
// the step reads the message and where it writes the receiver's field (an allocation the
// sender opens through CUDA IPC).
struct region_msg {
  cudaIpcMemHandle_t alloc;
  unsigned long long alloc_offset;  // of the step's first element in the allocation
  unsigned long long buf_offset;    // of the step's first element in the message
  unsigned long long elem;
  long long rank;
  long long count[max_copy_rank], buf_stride[max_copy_rank], field_stride[max_copy_rank];
};

// The allocation holding device pointer `p` (start), through the driver's cuMemGetAddressRange.
bool allocation_start(const void* p, const std::byte*& start) {
  using range_fn = CUresult (*)(CUdeviceptr*, std::size_t*, CUdeviceptr);
  static const auto fn = driver_function<range_fn>("cuMemGetAddressRange");
  CUdeviceptr base = 0;
  std::size_t size = 0;
  if (fn == nullptr ||
      fn(&base, &size, CUdeviceptr(reinterpret_cast<std::uintptr_t>(p))) != CUDA_SUCCESS)
    return false;
  start = reinterpret_cast<const std::byte*>(std::uintptr_t(base));
  return true;
}

// Whether `p` points into message `m` of the buffer at `buf`.
bool in_message(const void* p, const std::byte* buf, const message& m) {
  const auto* b = static_cast<const std::byte*>(p);
  return b >= buf + m.offset && b < buf + m.offset + m.bytes;
}

// The receiver's side of writing straight into its halos: the unpack steps of the message
// that arrives at `[buf + m.offset, + m.bytes)`, with the IPC handle of each step's field
// allocation. Empty when the message cannot go that way (index-list steps, reductions, or
// memory CUDA IPC cannot export).
std::vector<region_msg> direct_regions(const exchange_program& prog, const std::byte* buf,
                                       const message& m) {
  auto in = [&](const void* p) { return in_message(p, buf, m); };
  for (const auto& g : prog.device_scatter)
    if (in(g.buf)) return {};
  std::vector<region_msg> out;
  for (const auto& op : prog.device_unpack) {
    if (op.rank == 0 || !in(op.src)) continue;  // (rank 0: an empty copy)
    const std::byte* start = nullptr;
    region_msg r{};
    if (op.dev_reduce.op != 0 || !allocation_start(op.dst, start) ||
        cudaIpcGetMemHandle(&r.alloc, const_cast<std::byte*>(start)) != cudaSuccess) {
      (void)cudaGetLastError();
      return {};
    }
    r.alloc_offset = std::uint64_t(op.dst - start);
    r.buf_offset = std::uint64_t(op.src - (buf + m.offset));
    r.elem = op.elem;
    r.rank = op.rank;
    for (int k = 0; k < op.rank; ++k) {
      r.count[k] = op.count[k];
      r.buf_stride[k] = op.src_stride[k];
      r.field_stride[k] = op.dst_stride[k];
    }
    out.push_back(r);
  }
  return out;
}

// The sender's side: its pack steps into the message at `[buf + m.offset, + m.bytes)`, each
// matched to the receiver's unpack step of the same message bytes (same offset, shape and
// message strides) and fused with it into one copy from this rank's field to the receiver's
// (`field[k]`: where region k's allocation is mapped here). Empty when any step fails to match.
std::vector<copy_op> fuse_regions(const exchange_program& prog, const std::byte* buf,
                                  const message& m, const std::vector<region_msg>& regions,
                                  const std::vector<std::byte*>& field) {
  auto in = [&](const void* p) { return in_message(p, buf, m); };
  for (const auto& g : prog.device_gather)
    if (in(g.buf)) return {};
  std::vector<copy_op> out;
  for (const auto& op : prog.device_pack) {
    if (op.rank == 0 || !in(op.dst)) continue;
    const auto at = std::uint64_t(op.dst - (buf + m.offset));
    auto r = std::find_if(regions.begin(), regions.end(),
                          [&](const region_msg& x) { return x.buf_offset == at; });
    if (r == regions.end() || op.dev_reduce.op != 0 || r->elem != op.elem || r->rank != op.rank)
      return {};
    copy_op fused = op;
    fused.dst = field[std::size_t(r - regions.begin())] + r->alloc_offset;
    for (int k = 0; k < op.rank; ++k) {
      if (r->count[k] != op.count[k] || r->buf_stride[k] != op.dst_stride[k]) return {};
      fused.dst_stride[k] = r->field_stride[k];
    }
    out.push_back(fused);
  }
  if (out.size() != regions.size()) return {};
  return out;
}

// The device lists of even exchanges under the MPI handshake: every pointer into copy 0 of
// this rank's IPC receive buffer, or of a receiver's (`remote[k]`: the message of `sends[k]`),
// moved to copy 1 (`in[k].second` further on, in that receiver's buffer).
peer_ipc::alternate_lists second_copy(const exchange_program& prog, const std::byte* recv,
                                      std::size_t recv_size, const std::vector<std::byte*>& remote,
                                      const std::vector<handle_msg>& in,
                                      const std::vector<message>& sends) {
  peer_ipc::alternate_lists a{prog.device_pack, prog.device_unpack, prog.device_gather,
                              prog.device_scatter};
  auto to_second_send = [&](auto*& ptr) {
    for (std::size_t k = 0; k < sends.size(); ++k)
      if (inside(ptr, remote[k], sends[k].bytes)) {
        ptr += in[k].second;
        return;
      }
  };
  auto to_second_recv = [&](auto*& ptr) {
    if (inside(ptr, recv, recv_size)) ptr += recv_size;
  };
  for (auto& op : a.pack) to_second_send(op.dst);
  for (auto& op : a.gather) to_second_send(op.buf);
  for (auto& op : a.unpack) to_second_recv(op.src);
  for (auto& op : a.scatter) to_second_recv(op.buf);
  return a;
}

}  // namespace

struct peer_ipc::impl {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  std::vector<void*> opened;  // remote receive buffers and flag arrays, closed at destruction
  bool device_signalled = false;
  std::shared_ptr<std::byte> flags;  // device signals: [ready per receive, started per send]
  std::shared_ptr<std::byte> recv;   // device memory the IPC senders write into
  device_signals signals;
  std::vector<message> mpi_sends, mpi_recvs;  // the messages that still travel through MPI
  // Persistent empty control messages: clear-to-send from receivers (one per send peer),
  // data-ready from senders (one per receive peer), and this rank's own two kinds.
  // The receivers' clear-to-send is always posted (for the next exchange to be cleared), so
  // that a receiver's own announcement completes whatever this rank does.
  std::vector<MPI_Request> clear_in, ready_in, clear_out, ready_out;
  std::uint64_t cleared = 1;  // the last exchange every receiver has cleared (1: from the start)
  std::optional<alternate_lists> alternate;  // MPI handshake: the lists of even exchanges
  char dummy = 0;

  ~impl() {
    int finalized = 1;
    MPI_Finalized(&finalized);
    for (void* p : opened) (void)cudaIpcCloseMemHandle(p);
    if (finalized) return;
    for (auto& r : clear_in) {  // posted: a receiver's last announcement may never come
      (void)MPI_Cancel(&r);
      (void)MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
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

std::string peer_ipc::current_gpu() {
  int dev = 0;
  char bus[32] = {};
  gpu::check(cudaGetDevice(&dev), "cudaGetDevice", -1);
  gpu::check(cudaDeviceGetPCIBusId(bus, sizeof bus, dev), "cudaDeviceGetPCIBusId", -1);
  return bus;
}

std::unique_ptr<peer_ipc> peer_ipc::attach(MPI_Comm comm, exchange_program& prog,
                                           const locality& here, std::string& problem) {
  // The same on every rank (the peers agreed on their fields): decides who joins the
  // collectives. The options are per rank: a rank whose staging rules CUDA IPC out
  // takes part and declines every pair.
  if (!prog.has_device_fields || prog.has_host_fields) return nullptr;
  const staging policy = prog.options.device_staging;
  const bool enabled =
      policy == staging::automatic || policy == staging::peer_ipc || policy == staging::nccl;
  int me = 0;
  check_mpi(MPI_Comm_rank(comm, &me), "MPI_Comm_rank", -1);
  reach r = peers_reachable(here, prog, me);
  if (!enabled)
    for (auto& [peer, can] : r.ok) can = false;
  agree_pairs(comm, r.ok, me);
  auto by_ipc = [&](const message& m) { return r.ok.at(m.peer); };
  const bool all_ipc = std::all_of(prog.sends.begin(), prog.sends.end(), by_ipc) &&
                       std::all_of(prog.recvs.begin(), prog.recvs.end(), by_ipc);
  const bool any_ipc = std::any_of(prog.sends.begin(), prog.sends.end(), by_ipc) ||
                       std::any_of(prog.recvs.begin(), prog.recvs.end(), by_ipc);
  // Device signals need every pair of every rank on CUDA IPC and on different GPUs: a kernel
  // polling for a peer on its own GPU could hold the SMs that peer's kernel needs.
  int mine =
      all_ipc && !r.shares_gpu && !prog.ordered_device_unpack && prog.options.ipc_device_signals;
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
  const std::size_t n_send = ipc_sends.size();
  if (p->device_signalled) {
    // [data-ready per receive message (written by its sender), started per send message
    // (written by its receiver)]: each side polls only its own memory and writes the peer's.
    p->flags = allocate(memory_space::device, std::max<std::size_t>(1, n_recv + n_send) * 8);
    auto* f = reinterpret_cast<std::uint64_t*>(p->flags.get());
    for (std::size_t k = 0; k < n_recv; ++k) p->signals.unpack_wait.push_back(f + k);
    for (std::size_t k = 0; k < n_send; ++k) p->signals.pack_wait.push_back(f + n_recv + k);
  }

  // The IPC messages arrive in device memory (a buffer of the whole receive extent, at the
  // same offsets) and are unpacked from there, unless their sender writes them straight into
  // this rank's halos (device signals only: the start flag then also says "halo free").
  // The MPI messages keep the staging buffers.
  const std::size_t recv_size = extent_of(prog.recvs), send_size = extent_of(prog.sends);
  // The buffers the kernels use now (device copies under copy staging).
  const std::byte* old_recv = prog.copy_staging ? prog.device_recv.get() : prog.recv_buf.get();
  const std::byte* old_send = prog.copy_staging ? prog.device_send.get() : prog.send_buf.get();
  const bool into_fields = p->device_signalled && prog.options.ipc_into_fields;
  std::vector<std::vector<region_msg>> regions_out(n_recv);
  if (into_fields)
    for (std::size_t k = 0; k < n_recv; ++k)
      regions_out[k] = direct_regions(prog, old_recv, ipc_recvs[k]);
  // Under the MPI handshake the buffer exists twice (exchange g in copy g mod 2): a sender may
  // pack exchange g+1 while this rank still unpacks g, so start() need not wait for it.
  const std::size_t copies = p->device_signalled ? 1 : 2;
  p->recv = allocate(memory_space::device, copies * recv_size);

  // Each receiver sends its buffer's handle, where each sender's message goes, its flags and
  // how many halo regions the sender may write directly; each sender opens the handles once.
  cudaIpcMemHandle_t h{}, fh{};
  if (!ipc_recvs.empty())
    gpu::check(cudaIpcGetMemHandle(&h, p->recv.get()), "cudaIpcGetMemHandle", me);
  if (p->device_signalled)
    gpu::check(cudaIpcGetMemHandle(&fh, p->flags.get()), "cudaIpcGetMemHandle(flags)", me);
  std::vector<handle_msg> out(n_recv), in(n_send);
  std::vector<start_msg> start_out(n_send), start_in(n_recv);
  auto exchange_all = [&](auto&& post_sends, auto&& post_recvs, const char* what) {
    std::vector<MPI_Request> reqs;
    post_sends(reqs);
    post_recvs(reqs);
    if (!reqs.empty())
      check_mpi(MPI_Waitall(int(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE), what, me);
  };
  auto isend = [&](std::vector<MPI_Request>& reqs, const void* data, std::size_t bytes, int peer,
                   int tag) {
    reqs.emplace_back();
    check_mpi(MPI_Isend(data, int(bytes), MPI_BYTE, peer, tag, comm, &reqs.back()),
              "MPI_Isend(CUDA IPC set-up)", me);
  };
  auto irecv = [&](std::vector<MPI_Request>& reqs, void* data, std::size_t bytes, int peer,
                   int tag) {
    reqs.emplace_back();
    check_mpi(MPI_Irecv(data, int(bytes), MPI_BYTE, peer, tag, comm, &reqs.back()),
              "MPI_Irecv(CUDA IPC set-up)", me);
  };
  for (std::size_t k = 0; k < n_recv; ++k)
    out[k] = {h,
              ipc_recvs[k].offset,
              fh,
              k,
              regions_out[k].empty() ? -1 : (long long)regions_out[k].size(),
              ipc_recvs[k].bytes,
              recv_size};
  for (std::size_t k = 0; k < n_send; ++k) start_out[k] = {fh, n_recv + k};
  const bool signalled = p->device_signalled;
  exchange_all(
      [&](auto& reqs) {
        for (std::size_t k = 0; k < n_recv; ++k)
          isend(reqs, &out[k], sizeof(handle_msg), ipc_recvs[k].peer, tag_handle);
        for (std::size_t k = 0; k < n_send && signalled; ++k)
          isend(reqs, &start_out[k], sizeof(start_msg), ipc_sends[k].peer, tag_start);
      },
      [&](auto& reqs) {
        for (std::size_t k = 0; k < n_send; ++k)
          irecv(reqs, &in[k], sizeof(handle_msg), ipc_sends[k].peer, tag_handle);
        for (std::size_t k = 0; k < n_recv && signalled; ++k)
          irecv(reqs, &start_in[k], sizeof(start_msg), ipc_recvs[k].peer, tag_start);
      },
      "MPI_Waitall(IPC handles)");
  auto open = [&](const cudaIpcMemHandle_t& handle, const char* what) {
    void* base = nullptr;
    gpu::check(cudaIpcOpenMemHandle(&base, handle, cudaIpcMemLazyEnablePeerAccess), what, me);
    p->opened.push_back(base);
    return static_cast<std::byte*>(base);
  };
  std::vector<std::byte*> remote(n_send);
  for (const auto& m : ipc_sends) p->signals.peer_bytes += m.bytes;
  for (std::size_t k = 0; k < n_send; ++k)
    if (in[k].bytes != ipc_sends[k].bytes && problem.empty())  // checked as MPI checks sizes
      problem = fmt::format(
          "rank {} will send {} bytes per exchange to rank {}, which expects {} (CUDA IPC "
          "set-up): do both declare the same domain, stencil and fields in the same order?",
          me, ipc_sends[k].bytes, ipc_sends[k].peer, in[k].bytes);
  // (The set-up below still runs to its end, so that the peers' messages match; the caller
  // raises `problem` on every rank before the object can run an exchange.)
  for (std::size_t k = 0; k < n_send; ++k) {
    remote[k] = open(in[k].handle, "cudaIpcOpenMemHandle") + in[k].offset;
    if (!signalled) continue;
    auto* f = reinterpret_cast<std::uint64_t*>(open(in[k].flags, "cudaIpcOpenMemHandle(flags)"));
    p->signals.pack_post.push_back(f + in[k].ready);
  }
  for (std::size_t k = 0; k < n_recv && signalled; ++k) {
    auto* f =
        reinterpret_cast<std::uint64_t*>(open(start_in[k].flags, "cudaIpcOpenMemHandle(flags)"));
    p->signals.start_post.push_back(f + start_in[k].started);
  }

  // Halo regions written directly: the receivers describe their unpack steps, the senders fuse
  // each with the matching pack step and say which messages go that way.
  std::vector<std::vector<region_msg>> regions_in(ipc_sends.size());
  for (std::size_t k = 0; k < ipc_sends.size(); ++k)
    regions_in[k].resize(std::size_t(std::max(0LL, in[k].regions)));
  exchange_all(
      [&](auto& reqs) {
        for (std::size_t k = 0; k < n_recv; ++k)
          if (!regions_out[k].empty())
            isend(reqs, regions_out[k].data(), regions_out[k].size() * sizeof(region_msg),
                  ipc_recvs[k].peer, tag_regions);
      },
      [&](auto& reqs) {
        for (std::size_t k = 0; k < ipc_sends.size(); ++k)
          if (!regions_in[k].empty())
            irecv(reqs, regions_in[k].data(), regions_in[k].size() * sizeof(region_msg),
                  ipc_sends[k].peer, tag_regions);
      },
      "MPI_Waitall(IPC halo regions)");
  std::vector<int> direct_out(ipc_sends.size(), 0), direct_in(n_recv, 0);
  std::vector<copy_op> fused;
  for (std::size_t k = 0; k < ipc_sends.size(); ++k) {
    if (regions_in[k].empty()) continue;
    std::vector<std::byte*> field;
    for (const auto& r : regions_in[k])
      field.push_back(open(r.alloc, "cudaIpcOpenMemHandle(field)"));
    auto ops = fuse_regions(prog, old_send, ipc_sends[k], regions_in[k], field);
    if (ops.empty()) continue;
    direct_out[k] = 1;
    fused.insert(fused.end(), ops.begin(), ops.end());
  }
  exchange_all(
      [&](auto& reqs) {
        for (std::size_t k = 0; k < ipc_sends.size(); ++k)
          if (!regions_in[k].empty())
            isend(reqs, &direct_out[k], sizeof(int), ipc_sends[k].peer, tag_direct);
      },
      [&](auto& reqs) {
        for (std::size_t k = 0; k < n_recv; ++k)
          if (!regions_out[k].empty())
            irecv(reqs, &direct_in[k], sizeof(int), ipc_recvs[k].peer, tag_direct);
      },
      "MPI_Waitall(IPC direct replies)");
  // Direct messages: their pack steps become the fused copies, their unpack steps go.
  auto in_direct = [](const void* ptr, const std::byte* buf, const std::vector<message>& msgs,
                      const std::vector<int>& direct) {
    for (std::size_t k = 0; k < msgs.size(); ++k)
      if (direct[k] && in_message(ptr, buf, msgs[k])) return true;
    return false;
  };
  auto& pk = prog.device_pack;
  pk.erase(std::remove_if(pk.begin(), pk.end(),
                          [&](const copy_op& op) {
                            return in_direct(op.dst, old_send, ipc_sends, direct_out);
                          }),
           pk.end());
  prog.device_pack.insert(prog.device_pack.end(), fused.begin(), fused.end());
  auto& up = prog.device_unpack;
  up.erase(std::remove_if(up.begin(), up.end(),
                          [&](const copy_op& op) {
                            return in_direct(op.src, old_recv, ipc_recvs, direct_in);
                          }),
           up.end());
  const auto n_direct = std::count(direct_out.begin(), direct_out.end(), 1) +
                        std::count(direct_in.begin(), direct_in.end(), 1);

  // Unpack steps of buffered IPC messages read the IPC receive buffer.
  auto rebase_recv = [&](auto*& ptr) {
    if (!inside(ptr, old_recv, recv_size)) return;
    const std::size_t off = std::size_t(reinterpret_cast<const std::byte*>(ptr) - old_recv);
    if (std::any_of(ipc_recvs.begin(), ipc_recvs.end(),
                    [&](const message& m) { return in_message(ptr, old_recv, m); }))
      ptr = p->recv.get() + off;
  };
  for (auto& op : prog.device_unpack) rebase_recv(op.src);
  for (auto& op : prog.device_scatter) rebase_recv(op.buf);
  if (all_ipc) {  // nothing else uses the staging buffers
    prog.copy_staging = false;
    prog.recv_buf = p->recv;
  }
  // Pack steps of buffered IPC messages write straight into the receivers' buffers.
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
  if (!p->device_signalled)
    p->alternate = second_copy(prog, p->recv.get(), recv_size, remote, in, ipc_sends);

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
  const std::size_t n_ipc = ipc_sends.size() + n_recv;
  const char* target = n_direct == 0 ? "into the receiver's GPU memory"
                       : std::size_t(n_direct) == n_ipc
                           ? "straight into the receiver's halo (no unpack)"
                           : "straight into the receiver's halo where the regions allow (no "
                             "unpack), else into its receive buffer";
  const std::string ipc_path =
      std::string(to_string(staging::peer_ipc)) +
      (p->device_signalled
           ? fmt::format(" (node-local GPUs: the pack kernel writes {} through CUDA IPC once the "
                         "receiver has started the exchange, then a data-ready flag the "
                         "receiver's stream waits for: no host wait, no MPI message per "
                         "exchange)",
                         target)
           : std::string(" (node-local GPUs: the pack kernel writes into the receiver's GPU "
                         "memory through CUDA IPC, into one of two copies of its receive buffer "
                         "by turns; MPI carries clear-to-send and data-ready only)"));
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
  p->start_all(p->clear_in, "MPI_Startall(clear-to-send in)");
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

const peer_ipc::alternate_lists* peer_ipc::alternate() const {
  return p_->alternate ? &*p_->alternate : nullptr;
}

void peer_ipc::start() {
  p_->start_all(p_->ready_in, "MPI_Startall(data-ready in)");
  p_->start_all(p_->clear_out, "MPI_Startall(clear-to-send out)");
}
bool peer_ipc::cleared(std::uint64_t exchange, bool block) {
  if (exchange <= p_->cleared) return true;
  // Exchange g is cleared by each receiver's announcement at its start of g-1: the next one.
  if (block)
    p_->wait_all(p_->clear_in, "MPI_Waitall(clear-to-send)");
  else if (!p_->test_all(p_->clear_in, "MPI_Testall(clear-to-send)"))
    return false;
  p_->start_all(p_->clear_in, "MPI_Startall(clear-to-send in)");
  ++p_->cleared;
  return exchange <= p_->cleared;
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
