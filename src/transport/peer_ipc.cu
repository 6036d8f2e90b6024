// CUDA IPC transport between node-local GPUs (see transport/peer_ipc.hpp).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "gpu/check.hpp"
#include "gpu/ipc_export.hpp"
#include "halox/core/error.hpp"
#include "halox/core/options.hpp"
#include "mpi/check.hpp"
#include "program/direct_writes.hpp"
#include "program/label.hpp"
#include "transport/peer_ipc.hpp"
#include "transport/routes.hpp"

namespace halox::detail {

namespace {

enum : int {
  tag_handle = 10,
  tag_clear = 11,
  tag_ready = 12,
  tag_regions = 14,
  tag_direct = 15,
  tag_start = 16
};

constexpr std::string_view part = "CUDA IPC transport";  // for MPI errors

bool by_ipc(route r) {
  return r == route::ipc || r == route::ipc_signalled;
}

struct handle_msg {
  cudaIpcMemHandle_t handle;
  unsigned long long offset;  // of the receiver's message from the sender, in its buffer
  cudaIpcMemHandle_t flags;   // device signals: the receiver's flag array
  unsigned long long ready;   // the sender's data-ready slot in it
  long long regions;          // halo regions the sender may write straight into (-1: it may not)
  unsigned long long bytes;   // of the message, as the receiver's plan has it
  unsigned long long second;  // from copy 0 of the receive buffer to copy 1 (0: one copy)
  int flagged;                // device signals: the receiver can take flagged words
};

// Device signals, from a sender to its receiver: where the receiver says it has started an
// exchange (a slot of the sender's flag array), and whether the sender can pack the message as
// flagged words.
struct start_msg {
  cudaIpcMemHandle_t flags;
  unsigned long long started;
  int flagged;
};

// CUDA IPC's exported memory (program/direct_writes.hpp's find_export): the device allocation
// holding `p`, by its IPC handle; false where CUDA IPC cannot export it (managed, pinned host or
// stream-ordered pool memory).
bool find_allocation(const std::byte* p, export_handle& block, const std::byte*& base) {
  static_assert(sizeof(cudaIpcMemHandle_t) <= sizeof(export_handle::bytes));
  cudaIpcMemHandle_t h{};
  if (!gpu::allocation_start(p, base) ||
      cudaIpcGetMemHandle(&h, const_cast<std::byte*>(base)) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  std::memcpy(block.bytes, &h, sizeof h);
  return true;
}

}  // namespace

struct peer_ipc::impl {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  std::vector<void*> opened;  // remote receive buffers and flag arrays, closed at destruction
  bool device_signalled = false;
  bool carries_all = false;
  bool alternating = false;  // exchange g into and out of copy g mod 2 (some or all messages)
  std::shared_ptr<std::byte> flags;  // device signals: [ready per receive, started per send]
  std::shared_ptr<std::byte> recv;   // device memory the IPC senders write into
  device_signals signals;
  std::vector<int> send_peers, recv_peers;  // the IPC peers
  std::string how;                          // how the IPC messages travel, for describe()
  device_steps steps[2];                    // placed into copy 0 and (alternating) copy 1
  // Persistent empty control messages: clear-to-send from receivers (one per send peer),
  // data-ready from senders (one per receive peer), and this rank's own two kinds.
  // The receivers' clear-to-send is always posted (for the next exchange to be cleared), so
  // that a receiver's own announcement completes whatever this rank does.
  std::vector<MPI_Request> clear_in, ready_in, clear_out, ready_out;
  std::uint64_t cleared = 1;  // the last exchange every receiver has cleared (1: from the start)
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
    for (auto& r : ready_in) mpi::cancel_pending(r);  // left by an exchange that gave up
    for (auto* v : {&clear_in, &ready_in, &clear_out, &ready_out})
      for (auto& r : *v) MPI_Request_free(&r);
  }
  void start_all(std::vector<MPI_Request>& v, const char* what) {
    if (!v.empty()) mpi::check(MPI_Startall(int(v.size()), v.data()), what, rank, part);
  }
  void wait_all(std::vector<MPI_Request>& v, const char* what) {
    if (!v.empty())
      mpi::check(MPI_Waitall(int(v.size()), v.data(), MPI_STATUSES_IGNORE), what, rank, part);
  }
  bool test_all(std::vector<MPI_Request>& v, const char* what) {
    int flag = 1;
    if (!v.empty())
      mpi::check(MPI_Testall(int(v.size()), v.data(), &flag, MPI_STATUSES_IGNORE), what, rank,
                 part);
    return flag != 0;
  }
};

namespace {

// One rank's set-up of its CUDA IPC messages, in the order attach() runs the steps: buffers and
// flags, the handles (and the size check), the halo regions written directly, the placement of
// the program's device steps, the control messages.
class ipc_setup {
 public:
  ipc_setup(MPI_Comm comm, const exchange_program& prog, const message_buffers& bufs,
            const route_table& routes, peer_ipc::impl& p)
      : comm_(comm), prog_(prog), p_(p), me_(p.rank) {
    for (std::size_t k = 0; k < prog.sends.size(); ++k)
      if (by_ipc(routes.send(k))) sends_.push_back(k);
    for (std::size_t k = 0; k < prog.recvs.size(); ++k)
      if (by_ipc(routes.recv(k))) recvs_.push_back(k);
    for (std::size_t k : sends_) p.send_peers.push_back(prog.sends[k].peer);
    for (std::size_t k : recvs_) p.recv_peers.push_back(prog.recvs[k].peer);
    // The buffers the program's device steps point into (device copies under copy staging).
    old_recv_ = bufs.kernel_recv();
    old_send_ = bufs.kernel_send();
    recv_size_ = extent_of(prog.recvs);
  }

  // The IPC messages arrive in device memory (a buffer of the whole receive extent, at the
  // program's offsets) and are unpacked from there, unless their sender writes them straight
  // into this rank's halos (device signals only: the start flag then also says "halo free").
  // Under the MPI handshake the buffer exists twice (exchange g in copy g mod 2): a sender may
  // pack exchange g+1 while this rank still unpacks g, so start() need not wait for it.
  // With device signals, messages up to ipc_inline_max_bytes whose steps allow it travel as
  // flagged words (copy_op::flagged, at twice their offset) into two copies by turns too: the
  // sender's pack of g needs only this rank's start of g-1 (which ended its unpack of g-2, the
  // last read of copy g mod 2), which in the steady state came long before, and the words carry
  // their own data-ready. The buffer is zeroed: no slot holds an exchange's number by chance.
  void make_buffers() {
    const std::size_t n_recv = recvs_.size(), n_send = sends_.size();
    inline_in_.assign(n_recv, 0);
    if (p_.device_signalled) {
      // [data-ready per receive message (written by its sender), started per send message
      // (written by its receiver)]: each side polls only its own memory and writes the peer's.
      p_.flags = allocate(memory_space::device, std::max<std::size_t>(1, n_recv + n_send) * 8);
      for (std::size_t k = 0; k < n_recv; ++k) inline_in_[k] = char(can_flag(false, recv(k)));
    }
    const bool any_inline = std::count(inline_in_.begin(), inline_in_.end(), 1) > 0;
    const bool two = !p_.device_signalled || any_inline;
    copy_bytes_ = any_inline ? (2 * recv_size_ + 255) / 256 * 256 : recv_size_;
    p_.recv = allocate(memory_space::device, (two ? 2 : 1) * copy_bytes_);
    if (any_inline)
      gpu::check(cudaMemset(p_.recv.get(), 0, 2 * copy_bytes_), "cudaMemset(IPC receive buffer)",
                 me_);
    offered_ = inline_in_;
    regions_out_.resize(n_recv);
    if (p_.device_signalled && prog_.options.ipc_into_fields)
      for (std::size_t k = 0; k < n_recv; ++k)
        if (!inline_in_[k])
          regions_out_[k] = describe_regions(
              device_message_steps(prog_, step_kind::unpack, old_recv_, recv(k)), find_allocation);
  }

  // Each receiver sends its buffer's handle, where each sender's message goes, its flags and
  // how many halo regions the sender may write directly; each sender opens the handles once.
  // A message whose sizes differ sets `problem` (the set-up still runs to its end, so that the
  // peers' messages match; the caller raises it on every rank).
  void swap_handles(std::string& problem) {
    const std::size_t n_recv = recvs_.size(), n_send = sends_.size();
    cudaIpcMemHandle_t h{}, fh{};
    if (n_recv > 0) gpu::check(cudaIpcGetMemHandle(&h, p_.recv.get()), "cudaIpcGetMemHandle", me_);
    if (p_.device_signalled)
      gpu::check(cudaIpcGetMemHandle(&fh, p_.flags.get()), "cudaIpcGetMemHandle(flags)", me_);
    std::vector<handle_msg> out(n_recv);
    std::vector<start_msg> start_out(n_send), start_in(n_recv);
    in_.resize(n_send);
    for (std::size_t k = 0; k < n_recv; ++k)
      out[k] = {h,
                (inline_in_[k] ? 2 : 1) * recv(k).offset,
                fh,
                k,
                regions_out_[k].empty() ? -1 : (long long)regions_out_[k].size(),
                recv(k).bytes,
                !p_.device_signalled || inline_in_[k] ? copy_bytes_ : 0,
                int(inline_in_[k])};
    for (std::size_t k = 0; k < n_send; ++k)
      start_out[k] = {fh, n_recv + k, int(can_flag(true, send(k)))};
    const bool signalled = p_.device_signalled;
    std::vector<MPI_Request> reqs;
    for (std::size_t k = 0; k < n_recv; ++k) isend(reqs, &out[k], recv(k).peer, tag_handle);
    for (std::size_t k = 0; k < n_send && signalled; ++k)
      isend(reqs, &start_out[k], send(k).peer, tag_start);
    for (std::size_t k = 0; k < n_send; ++k) irecv(reqs, &in_[k], send(k).peer, tag_handle);
    for (std::size_t k = 0; k < n_recv && signalled; ++k)
      irecv(reqs, &start_in[k], recv(k).peer, tag_start);
    wait(reqs, "MPI_Waitall(IPC handles)");
    // Flagged words where both ends can (each knows both answers now).
    inline_out_.assign(n_send, 0);
    for (std::size_t k = 0; k < n_send; ++k)
      inline_out_[k] = char(signalled && in_[k].flagged && start_out[k].flagged);
    for (std::size_t k = 0; k < n_recv; ++k)
      inline_in_[k] = char(inline_in_[k] && start_in[k].flagged);
    for (std::size_t k = 0; k < n_send; ++k) {
      p_.signals.peer_bytes += send(k).bytes;
      if (in_[k].bytes != send(k).bytes && problem.empty())  // checked as MPI checks sizes
        problem = fmt::format(
            "rank {} will send {} bytes per exchange to rank {}, which expects {} (CUDA IPC "
            "set-up): do both declare the same domain, stencil and fields in the same order?",
            me_, send(k).bytes, send(k).peer, in_[k].bytes);
      remote_.push_back(open(in_[k].handle, "cudaIpcOpenMemHandle") + in_[k].offset);
      if (signalled && !inline_out_[k])
        p_.signals.pack_post.push_back(flag_array(in_[k].flags, "cudaIpcOpenMemHandle(flags)") +
                                       in_[k].ready);
    }
    for (std::size_t k = 0; k < n_recv && signalled; ++k)
      p_.signals.start_post.push_back(flag_array(start_in[k].flags, "cudaIpcOpenMemHandle(flags)") +
                                      start_in[k].started);
  }

  // Device signals: the data-ready flags this rank's unpack waits for (messages not of flagged
  // words), and its flags for its receivers' starts, those of flagged messages first (waited
  // for at g - 1: device_signals::lagged).
  void order_waits() {
    if (!p_.device_signalled) return;
    auto* f = reinterpret_cast<std::uint64_t*>(p_.flags.get());
    auto& sig = p_.signals;
    for (std::size_t k = 0; k < recvs_.size(); ++k) {
      const int peer = prog_.recvs[recvs_[k]].peer;
      if (!inline_in_[k]) sig.unpack_wait.push_back(f + k), sig.unpack_wait_peer.push_back(peer);
    }
    for (const bool lagged : {true, false})
      for (std::size_t k = 0; k < sends_.size(); ++k)
        if (bool(inline_out_[k]) == lagged) {
          sig.pack_wait.push_back(f + recvs_.size() + k);
          sig.pack_wait_peer.push_back(prog_.sends[sends_[k]].peer);
        }
    sig.lagged = std::size_t(std::count(inline_out_.begin(), inline_out_.end(), 1));
    sig.timeout = prog_.options.wait_timeout;
    sig.name = object_label(prog_);
  }

  std::size_t n_inline() const {
    return std::size_t(std::count(inline_in_.begin(), inline_in_.end(), 1) +
                       std::count(inline_out_.begin(), inline_out_.end(), 1));
  }
  // Whether the program's device steps are placed twice (exchange g into and out of copy
  // g mod 2): always under the MPI handshake; with device signals where a message is flagged.
  bool alternates() const { return !p_.device_signalled || n_inline() > 0; }

  // Halo regions written directly: the receivers describe their unpack steps, the senders fuse
  // each with the matching pack step and say which messages go that way.
  void go_direct() {
    const std::size_t n_recv = recvs_.size(), n_send = sends_.size();
    std::vector<std::vector<direct_region>> regions_in(n_send);
    for (std::size_t k = 0; k < n_send; ++k)
      regions_in[k].resize(std::size_t(std::max(0LL, in_[k].regions)));
    std::vector<MPI_Request> reqs;
    for (std::size_t k = 0; k < n_recv; ++k)
      if (!regions_out_[k].empty()) isend(reqs, regions_out_[k], recv(k).peer, tag_regions);
    for (std::size_t k = 0; k < n_send; ++k)
      if (!regions_in[k].empty()) irecv(reqs, regions_in[k], send(k).peer, tag_regions);
    wait(reqs, "MPI_Waitall(IPC halo regions)");
    direct_out_.assign(n_send, 0);
    direct_in_.assign(n_recv, 0);
    fused_.assign(prog_.sends.size(), {});
    const map_export map = [this](const export_handle& block) {
      cudaIpcMemHandle_t h{};
      std::memcpy(&h, block.bytes, sizeof h);
      return open(h, "cudaIpcOpenMemHandle(field)");
    };
    for (std::size_t k = 0; k < n_send; ++k) {
      if (regions_in[k].empty()) continue;
      auto ops = fuse_regions(device_message_steps(prog_, step_kind::pack, old_send_, send(k)),
                              regions_in[k], map);
      if (ops.empty()) continue;
      direct_out_[k] = 1;
      fused_[sends_[k]] = std::move(ops);
    }
    reqs.clear();
    for (std::size_t k = 0; k < n_send; ++k)
      if (!regions_in[k].empty()) isend(reqs, &direct_out_[k], send(k).peer, tag_direct);
    for (std::size_t k = 0; k < n_recv; ++k)
      if (!regions_out_[k].empty()) irecv(reqs, &direct_in_[k], recv(k).peer, tag_direct);
    wait(reqs, "MPI_Waitall(IPC direct replies)");
  }

  // The program's device steps placed into each copy of the receivers' buffers: messages
  // written directly replaced by the fused copies (copy 0, device signals only), the others
  // packed into the receiver's buffer and unpacked out of this rank's.
  void place() {
    for (int c = 0; c < (alternates() ? 2 : 1); ++c) {
      placement where;
      where.send_at.assign(prog_.sends.size(), nullptr);
      where.recv_at.assign(prog_.recvs.size(), nullptr);
      where.send_direct.assign(prog_.sends.size(), 0);
      where.recv_direct.assign(prog_.recvs.size(), 0);
      where.send_flagged.assign(prog_.sends.size(), 0);
      where.recv_flagged.assign(prog_.recvs.size(), 0);
      for (std::size_t k = 0; k < sends_.size(); ++k) {
        const bool two = !p_.device_signalled || inline_out_[k];
        where.send_at[sends_[k]] = remote_[k] + std::size_t(two ? c : 0) * in_[k].second;
        where.send_direct[sends_[k]] = char(direct_out_[k]);
        where.send_flagged[sends_[k]] = inline_out_[k];
      }
      for (std::size_t k = 0; k < recvs_.size(); ++k) {
        const bool two = !p_.device_signalled || inline_in_[k];
        // (offered flagged words: at twice its offset, whatever the sender answered)
        const std::size_t offset = (offered_[k] ? 2 : 1) * recv(k).offset;
        where.recv_at[recvs_[k]] = p_.recv.get() + std::size_t(two ? c : 0) * copy_bytes_ + offset;
        where.recv_direct[recvs_[k]] = char(direct_in_[k]);
        where.recv_flagged[recvs_[k]] = inline_in_[k];
        if (p_.device_signalled && inline_in_[k]) {  // (twice its bytes: flagged words)
          const std::byte* at = where.recv_at[recvs_[k]];
          p_.signals.flagged_from.push_back({at, at + 2 * recv(k).bytes, recv(k).peer});
        }
      }
      where.fused_send = fused_;
      p_.steps[c] = place_device(prog_, where, old_send_, old_recv_);
    }
  }

  // Where and how the pack kernel writes (device signals), for describe().
  std::string signalled_target() const {
    const auto n_direct = std::size_t(std::count(direct_out_.begin(), direct_out_.end(), 1) +
                                      std::count(direct_in_.begin(), direct_in_.end(), 1));
    const std::size_t n_ipc = sends_.size() + recvs_.size(), n_flagged = n_inline();
    std::string out;
    if (n_flagged > 0)
      out = fmt::format(
          "{} as flagged words (each 4-byte word beside the exchange's number, which the "
          "receiver polls: no data-ready flag) into one of two copies of the receiver's receive "
          "buffer by turns, without waiting for the receiver's start (its start of the exchange "
          "before freed that copy)",
          n_flagged == n_ipc ? "every message"
                             : fmt::format("messages of up to {} bytes whose copies allow it",
                                           prog_.options.ipc_inline_max_bytes));
    if (n_flagged == n_ipc) return out;
    if (!out.empty()) out += "; the others ";
    out += n_direct == 0 ? "into the receiver's GPU memory"
           : n_direct + n_flagged == n_ipc
               ? "straight into the receiver's halo (no unpack)"
               : "straight into the receiver's halo where the regions allow (no unpack), else "
                 "into its receive buffer";
    return out +
           " once the receiver has started the exchange, then a data-ready flag the receiver's "
           "stream waits for";
  }

  std::string describe() const {
    return std::string(to_string(staging::peer_ipc)) +
           (p_.device_signalled
                ? fmt::format(" (node-local GPUs: the pack kernel writes {} through CUDA IPC: no "
                              "host wait, no MPI message per exchange)",
                              signalled_target())
                : std::string(" (node-local GPUs: the pack kernel writes into the receiver's GPU "
                              "memory through CUDA IPC, into one of two copies of its receive "
                              "buffer by turns; MPI carries clear-to-send and data-ready only)"));
  }

  // Control messages of the MPI handshake, prepared once (IPC peers only).
  void control_messages() {
    init(p_.clear_in, sends_, prog_.sends, false, tag_clear);  // my receivers say: buffer free
    init(p_.ready_out, sends_, prog_.sends, true, tag_ready);  // I tell them: data in place
    init(p_.clear_out, recvs_, prog_.recvs, true, tag_clear);  // I tell my senders: buffer free
    init(p_.ready_in, recvs_, prog_.recvs, false, tag_ready);  // my senders say: data in place
    p_.start_all(p_.clear_in, "MPI_Startall(clear-to-send in)");
  }

 private:
  const message& send(std::size_t k) const { return prog_.sends[sends_[k]]; }
  // Whether this end can move message `m` (a send: `pack`) as flagged words.
  bool can_flag(bool pack, const message& m) const {
    return m.bytes <= prog_.options.ipc_inline_max_bytes &&
           flaggable(prog_, pack, pack ? old_send_ : old_recv_, m);
  }
  const message& recv(std::size_t k) const { return prog_.recvs[recvs_[k]]; }

  std::byte* open(const cudaIpcMemHandle_t& handle, const char* what) {
    void* base = nullptr;
    gpu::check(cudaIpcOpenMemHandle(&base, handle, cudaIpcMemLazyEnablePeerAccess), what, me_);
    p_.opened.push_back(base);
    return static_cast<std::byte*>(base);
  }
  std::uint64_t* flag_array(const cudaIpcMemHandle_t& handle, const char* what) {
    return reinterpret_cast<std::uint64_t*>(open(handle, what));
  }
  template <class T>
  void isend(std::vector<MPI_Request>& reqs, const T* data, int peer, int tag) {
    post(reqs, data, sizeof(T), peer, tag, true);
  }
  template <class T>
  void irecv(std::vector<MPI_Request>& reqs, T* data, int peer, int tag) {
    post(reqs, data, sizeof(T), peer, tag, false);
  }
  template <class T>
  void isend(std::vector<MPI_Request>& reqs, const std::vector<T>& v, int peer, int tag) {
    post(reqs, v.data(), v.size() * sizeof(T), peer, tag, true);
  }
  template <class T>
  void irecv(std::vector<MPI_Request>& reqs, std::vector<T>& v, int peer, int tag) {
    post(reqs, v.data(), v.size() * sizeof(T), peer, tag, false);
  }
  void post(std::vector<MPI_Request>& reqs, const void* data, std::size_t bytes, int peer, int tag,
            bool send) {
    reqs.emplace_back();
    mpi::check(send ? MPI_Isend(data, int(bytes), MPI_BYTE, peer, tag, comm_, &reqs.back())
                    : MPI_Irecv(const_cast<void*>(data), int(bytes), MPI_BYTE, peer, tag, comm_,
                                &reqs.back()),
               send ? "MPI_Isend(CUDA IPC set-up)" : "MPI_Irecv(CUDA IPC set-up)", me_, part, peer);
  }
  void wait(std::vector<MPI_Request>& reqs, const char* what) {
    if (!reqs.empty())
      mpi::check(MPI_Waitall(int(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE), what, me_, part);
  }
  void init(std::vector<MPI_Request>& v, const std::vector<std::size_t>& which,
            const std::vector<message>& msgs, bool send, int tag) {
    for (std::size_t k : which) {
      v.emplace_back();
      mpi::check(send ? MPI_Send_init(&p_.dummy, 0, MPI_BYTE, msgs[k].peer, tag, comm_, &v.back())
                      : MPI_Recv_init(&p_.dummy, 0, MPI_BYTE, msgs[k].peer, tag, comm_, &v.back()),
                 send ? "MPI_Send_init(IPC control)" : "MPI_Recv_init(IPC control)", me_, part,
                 msgs[k].peer);
    }
  }

  MPI_Comm comm_;
  const exchange_program& prog_;
  peer_ipc::impl& p_;
  int me_;
  std::vector<std::size_t> sends_, recvs_;  // the program's messages that use CUDA IPC
  const std::byte* old_send_ = nullptr;
  const std::byte* old_recv_ = nullptr;
  std::size_t recv_size_ = 0;
  std::vector<std::vector<direct_region>> regions_out_;  // per IPC receive
  std::vector<handle_msg> in_;                           // per IPC send: the receiver's handle
  std::vector<std::byte*> remote_;                       // per IPC send: copy 0 of its message
  std::vector<int> direct_out_, direct_in_;
  std::size_t copy_bytes_ = 0;  // from one copy of the receive buffer to the next
  // Flagged words (device signals): per IPC receive, offered by this rank (make_buffers) and
  // agreed with its sender (swap_handles); per IPC send, agreed with its receiver.
  std::vector<char> offered_, inline_in_, inline_out_;
  std::vector<std::vector<copy_op>> fused_;  // per send message of the program: direct writes
};

}  // namespace

std::unique_ptr<peer_ipc> peer_ipc::attach(MPI_Comm comm, const exchange_program& prog,
                                           const message_buffers& bufs, const route_table& routes,
                                           std::string& problem) {
  // Only ranks with a message over CUDA IPC set it up (the route table paired them).
  if (!routes.any(route::ipc) && !routes.any(route::ipc_signalled)) return nullptr;
  int me = 0;
  mpi::check(MPI_Comm_rank(comm, &me), "MPI_Comm_rank", -1, part);
  auto p = std::make_unique<impl>();
  p->comm = comm;
  p->rank = me;
  p->device_signalled = routes.any(route::ipc_signalled);
  p->carries_all = routes.all_ipc();
  ipc_setup s(comm, prog, bufs, routes, *p);
  s.make_buffers();
  s.swap_handles(problem);
  s.order_waits();
  s.go_direct();
  s.place();
  p->alternating = s.alternates();
  p->how = s.describe();
  if (!p->device_signalled) s.control_messages();
  return std::unique_ptr<peer_ipc>(new peer_ipc(std::move(p)));
}

peer_ipc::peer_ipc(std::unique_ptr<impl> p) : carrier(nvtx_transport::ipc), p_(std::move(p)) {}
peer_ipc::~peer_ipc() = default;

bool peer_ipc::device_signalled() const {
  return p_->device_signalled;
}
const device_signals& peer_ipc::signals() const {
  return p_->signals;
}

const device_steps& peer_ipc::steps(int copy) const {
  return p_->steps[copy];
}
bool peer_ipc::alternates() const {
  return p_->alternating;
}
bool peer_ipc::carries_all() const {
  return p_->carries_all;
}
const std::vector<int>& peer_ipc::send_peers() const {
  return p_->send_peers;
}
const std::vector<int>& peer_ipc::recv_peers() const {
  return p_->recv_peers;
}
const std::string& peer_ipc::how() const {
  return p_->how;
}

void peer_ipc::do_post_receives(std::uint64_t) {
  p_->start_all(p_->ready_in, "MPI_Startall(data-ready in)");
  p_->start_all(p_->clear_out, "MPI_Startall(clear-to-send out)");
}
bool peer_ipc::do_clear_to_send(std::uint64_t g, bool block) {
  if (g <= p_->cleared) return true;
  // Exchange g is cleared by each receiver's announcement at its start of g-1: the next one.
  if (block)
    p_->wait_all(p_->clear_in, "MPI_Waitall(clear-to-send)");
  else if (!p_->test_all(p_->clear_in, "MPI_Testall(clear-to-send)"))
    return false;
  p_->start_all(p_->clear_in, "MPI_Startall(clear-to-send in)");
  ++p_->cleared;
  return g <= p_->cleared;
}
void peer_ipc::do_post_sends(std::uint64_t) {
  p_->start_all(p_->ready_out, "MPI_Startall(data-ready out)");
}
progress_report peer_ipc::do_progress() {
  const bool done = p_->test_all(p_->ready_in, "MPI_Testall(data-ready)") &&
                    p_->test_all(p_->clear_out, "MPI_Testall(clear-to-send out)") &&
                    p_->test_all(p_->ready_out, "MPI_Testall(data-ready out)");
  return {false, done};
}
void peer_ipc::do_complete() {
  p_->wait_all(p_->ready_in, "MPI_Waitall(data-ready)");
  p_->wait_all(p_->clear_out, "MPI_Waitall(clear-to-send out)");
  p_->wait_all(p_->ready_out, "MPI_Waitall(data-ready out)");
}

void peer_ipc::waiting_for(std::vector<std::string>& out) const {
  if (p_->device_signalled) return;  // the kernels' flags: device_copier::check_timeout names them
  for (std::size_t k = 0; k < p_->ready_in.size() && k < p_->recv_peers.size(); ++k)
    if (mpi::pending(p_->ready_in[k]))
      out.push_back(fmt::format("rank {} (CUDA IPC: its data-ready message has not arrived)",
                                p_->recv_peers[k]));
  for (std::size_t k = 0; k < p_->clear_in.size() && k < p_->send_peers.size(); ++k)
    if (mpi::pending(p_->clear_in[k]))
      out.push_back(
          fmt::format("rank {} (CUDA IPC: it has not freed its receive buffer, clear-to-send "
                      "not arrived)",
                      p_->send_peers[k]));
}

}  // namespace halox::detail
