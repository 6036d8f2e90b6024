// Shared-memory messages between node-local ranks (see transport/shm_mailbox.hpp).
#include "transport/shm_mailbox.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "halox/core/error.hpp"
#include "halox/field/memory.hpp"
#include "mpi/check.hpp"
#include "transport/cross_memory.hpp"
#include "transport/routes.hpp"

namespace halox::detail {

namespace {

enum : int { tag_offer = 20, tag_reply = 21, tag_regions = 22, tag_sources = 23, tag_direct = 24 };
// One slot per send message, each counter on its own cache line: ready at +0, consumed at +64,
// and for direct messages started at +128 and claim at +192 (see shm_mailbox.hpp).
constexpr std::size_t slot_bytes = 256;
constexpr std::size_t at_consumed = 8, at_started = 16, at_claim = 24;  // in words

constexpr std::string_view part = "shared-memory transport set-up";  // for MPI errors

}  // namespace

// A sender's offer for one message: where its buffer can be opened and where the message is.
struct shm_mailbox::offer {
  long long pid = 0;
  int fd = -1;
  int slot = -1;
  unsigned long long size = 0;     // of the whole segment
  unsigned long long data_at = 0;  // of this message's bytes in the segment
  unsigned long long bytes = 0;    // of this message, checked against the receiver's plan
  unsigned long long stride = 0;   // from the first copy of the send buffer to the second
  int valid = 0;
  int pad = 0;
};

namespace {

// A receiver's reply to an offer: the message goes through shared memory, or why not.
enum reply : int { reply_shared = 1, reply_declined = 0, reply_size = -1 };  // < -1: -errno

// A shared mapping, unmapped when the last owner lets go.
std::shared_ptr<std::byte> map_shared(int fd, std::size_t size) {
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return nullptr;
  return std::shared_ptr<std::byte>(static_cast<std::byte*>(p),
                                    [size](std::byte* q) { munmap(q, size); });
}

std::uint64_t load_acquire(const std::uint64_t* p) {
  return std::atomic_ref<std::uint64_t>(*const_cast<std::uint64_t*>(p))
      .load(std::memory_order_acquire);
}
void store_release(std::uint64_t* p, std::uint64_t v) {
  std::atomic_ref<std::uint64_t>(*p).store(v, std::memory_order_release);
}

}  // namespace

void yield_processor() {
  sched_yield();
}
void spin_pause(int& spins) {
  if (++spins > 64) yield_processor();  // oversubscribed nodes: let the peer run
}

struct shm_mailbox::impl {
  std::shared_ptr<std::byte> own;                  // this rank's segment (send buffer inside)
  std::vector<std::shared_ptr<std::byte>> mapped;  // the senders' segments
  std::map<std::pair<long long, int>, std::shared_ptr<std::byte>> fields;  // peers' fields
  std::map<long long, std::string> cross;  // by process: why cross-memory attach is refused
};

namespace testing {
bool deny_peer_segments = false;
}  // namespace testing

namespace {

// This rank's segment: one slot per send message, then the send buffer twice (exchanges
// alternate between the two copies, `stride` bytes apart). Not made (null) where no receiver
// may share it.
struct segment {
  std::shared_ptr<std::byte> mem;
  int fd = -1;
  std::size_t size = 0, data_at = 0, stride = 0;
};

segment make_segment(const exchange_program& prog, bool wanted) {
  segment s;
  const std::size_t send_size = extent_of(prog.sends);
  s.data_at = (prog.sends.size() * slot_bytes + 63) / 64 * 64;
  s.stride = (send_size + 63) / 64 * 64;
  s.size = std::max<std::size_t>(s.data_at + 2 * s.stride, 64);
  if (!wanted) return s;
  s.fd = memfd_create("halox-messages", MFD_CLOEXEC);
  if (s.fd >= 0 && ftruncate(s.fd, off_t(s.size)) == 0) s.mem = map_shared(s.fd, s.size);
  return s;
}

// One value per message each way: `out[k]` to the peer of message k of `to`, `in[k]` from the
// peer of message k of `from`.
template <class T>
void swap_per_message(MPI_Comm comm, int me, const std::vector<T>& out,
                      const std::vector<message>& to, std::vector<T>& in,
                      const std::vector<message>& from, int tag, const char* what) {
  std::vector<MPI_Request> reqs;
  for (std::size_t k = 0; k < to.size(); ++k) {
    reqs.emplace_back();
    mpi::check(MPI_Isend(&out[k], sizeof(T), MPI_BYTE, to[k].peer, tag, comm, &reqs.back()),
               "MPI_Isend", me, part, to[k].peer);
  }
  for (std::size_t k = 0; k < from.size(); ++k) {
    reqs.emplace_back();
    mpi::check(MPI_Irecv(&in[k], sizeof(T), MPI_BYTE, from[k].peer, tag, comm, &reqs.back()),
               "MPI_Irecv", me, part, from[k].peer);
  }
  mpi::check(MPI_Waitall(int(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE), what, me, part);
}

// Shared memory's exported memory: halox's own field memory (memfd blocks, see
// allocate_shareable), which a peer opens through /proc/<pid>/fd/<fd>; or, with `fd` ==
// cross_fd, any memory of the process, which a peer reads and writes by cross-memory attach
// (transport/cross_memory.hpp): `size` is then the address, one block per region.
struct field_block {
  long long pid = 0;
  int fd = -1, pad = 0;
  unsigned long long size = 0;
};
static_assert(sizeof(field_block) <= sizeof(export_handle::bytes));
constexpr int cross_fd = -2;

field_block block_of(const export_handle& h) {
  field_block b;
  std::memcpy(&b, h.bytes, sizeof b);
  return b;
}

// The block of halox's own field memory that holds `p` (program/direct_writes.hpp's find_export).
bool find_field_block(const std::byte* p, export_handle& h, const std::byte*& base) {
  shareable_block b;
  if (!find_shareable(p, b)) return false;
  const field_block f{getpid(), b.fd, 0, b.size};
  std::memcpy(h.bytes, &f, sizeof f);
  base = b.base;
  return true;
}

// Any memory of this process, for cross-memory attach (find_export).
bool find_cross_block(const std::byte* p, export_handle& h, const std::byte*& base) {
  const field_block f{getpid(), cross_fd, 0, reinterpret_cast<std::uintptr_t>(p)};
  std::memcpy(h.bytes, &f, sizeof f);
  base = p;
  return true;
}

// Whether a peer's regions lie in memory it reaches by cross-memory attach (the same for all
// of a message's regions, see describe_exported).
bool cross_regions(const std::vector<direct_region>& r) {
  return !r.empty() && block_of(r.front().block).fd == cross_fd;
}

// A list per message each way (`in` sized by the counts swapped before; empty ones skipped).
template <class T>
void swap_lists(MPI_Comm comm, int me, const std::vector<std::vector<T>>& out,
                const std::vector<message>& to, std::vector<std::vector<T>>& in,
                const std::vector<message>& from, int tag, const char* what) {
  std::vector<MPI_Request> reqs;
  for (std::size_t k = 0; k < to.size(); ++k) {
    if (out[k].empty()) continue;
    reqs.emplace_back();
    mpi::check(MPI_Isend(out[k].data(), int(out[k].size() * sizeof(T)), MPI_BYTE, to[k].peer, tag,
                         comm, &reqs.back()),
               "MPI_Isend", me, part, to[k].peer);
  }
  for (std::size_t k = 0; k < from.size(); ++k) {
    if (in[k].empty()) continue;
    reqs.emplace_back();
    mpi::check(MPI_Irecv(in[k].data(), int(in[k].size() * sizeof(T)), MPI_BYTE, from[k].peer, tag,
                         comm, &reqs.back()),
               "MPI_Irecv", me, part, from[k].peer);
  }
  mpi::check(MPI_Waitall(int(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE), what, me, part);
}

std::uint64_t* word(std::uint64_t* slot, std::size_t k) {
  return slot + k;
}

}  // namespace

// A block of a peer's field memory, mapped here once per (process, descriptor); null where the
// system does not allow it.
std::byte* shm_mailbox::map_peer_field(const export_handle& block) {
  const field_block b = block_of(block);
  if (b.fd == cross_fd) return cross_address(b.pid, b.size);
  auto& at = p_->fields[{b.pid, b.fd}];
  if (!at) {
    const std::string path = fmt::format("/proc/{}/fd/{}", b.pid, b.fd);
    const int f = testing::deny_peer_segments ? -1 : open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (f < 0) return nullptr;
    at = map_shared(f, std::size_t(b.size));
    close(f);
  }
  return at.get();
}

namespace {

// The messages of a program that go through shared memory, with their indices in the program.
struct shared_messages {
  std::vector<message> sends, recvs;
  std::vector<std::size_t> send_at, recv_at;
};

shared_messages shared_in(const shm_mailbox& box, const exchange_program& prog) {
  shared_messages sh;
  for (std::size_t m = 0; m < prog.sends.size(); ++m)
    if (box.send_shared(m)) {
      sh.sends.push_back(prog.sends[m]);
      sh.send_at.push_back(m);
    }
  for (std::size_t m = 0; m < prog.recvs.size(); ++m)
    if (box.recv_shared(m)) {
      sh.recvs.push_back(prog.recvs[m]);
      sh.recv_at.push_back(m);
    }
  return sh;
}

// A list per message each way, their lengths swapped first (`in` is sized from those).
template <class T>
void swap_counted_lists(MPI_Comm comm, int me, const std::vector<std::vector<T>>& out,
                        const std::vector<message>& to, std::vector<std::vector<T>>& in,
                        const std::vector<message>& from, int tag, const char* what) {
  std::vector<long long> n_out(to.size()), n_in(from.size());
  for (std::size_t k = 0; k < to.size(); ++k) n_out[k] = (long long)out[k].size();
  swap_per_message(comm, me, n_out, to, n_in, from, tag, what);
  in.assign(from.size(), {});
  for (std::size_t k = 0; k < from.size(); ++k) in[k].resize(std::size_t(n_in[k]));
  swap_lists(comm, me, out, to, in, from, tag, what);
}

// A message's regions in exported memory: halox's own field memory where all of it is, else,
// with `cross`, wherever it is (for cross-memory attach); empty where neither applies.
std::vector<direct_region> describe_exported(const message_steps& steps, bool cross) {
  std::vector<direct_region> r = describe_regions(steps, find_field_block);
  if (r.empty() && cross) r = describe_regions(steps, find_cross_block);
  return r;
}

// Sender, send message m: its pack steps fused with the receiver's halo regions (the
// receiver's field mapped here) into `direct.fused_send[m]`; returns its owned regions, for the
// receiver to copy from (empty, and nothing fused, where the message keeps two copies).
std::vector<direct_region> fuse_send(const exchange_program& prog, const std::byte* buf,
                                     std::size_t m, const std::vector<direct_region>& halo,
                                     const map_export& map, bool cross, placement& direct) {
  if (halo.empty()) return {};
  const message_steps steps = host_message_steps(prog, step_kind::pack, m, buf);
  std::vector<direct_region> owned = describe_exported(steps, cross);
  if (owned.empty()) return {};
  std::vector<copy_op> push = fuse_regions(steps, halo, map);
  if (push.empty()) return {};
  direct.fused_send[m] = std::move(push);
  return owned;
}

// Receivers: the same copies as they run them, their unpack steps fused with the senders' owned
// regions (`owned[k]`, the senders' fields mapped here), into `direct.fused_recv`; one yes (1)
// per shared receive message that goes direct.
std::vector<int> fuse_recvs(const exchange_program& prog, const std::byte* buf,
                            const shared_messages& sh,
                            const std::vector<std::vector<direct_region>>& owned,
                            const map_export& map, placement& direct) {
  direct.fused_recv.assign(prog.recvs.size(), {});
  direct.recv_direct.assign(prog.recvs.size(), 0);
  std::vector<int> yes(sh.recvs.size(), 0);
  for (std::size_t k = 0; k < sh.recvs.size(); ++k) {
    const std::size_t m = sh.recv_at[k];
    std::vector<copy_op> pull =
        fuse_regions(host_message_steps(prog, step_kind::unpack, m, buf), owned[k], map);
    if (pull.empty()) continue;
    direct.fused_recv[m] = std::move(pull);
    direct.recv_direct[m] = 1;
    yes[k] = 1;
  }
  return yes;
}

}  // namespace

// One copy instead of two, where both sides' fields allow it (program/direct_writes.hpp):
// receivers describe their halo regions, senders fuse each with the pack step of the same
// message bytes and describe their owned regions back, receivers fuse the other way and say
// yes. Only messages that go through shared memory take part (both ranks of each pair know
// which those are).
void shm_mailbox::go_direct(MPI_Comm comm, const exchange_program& prog,
                            const message_buffers& bufs, int me) {
  const shared_messages sh = shared_in(*this, prog);
  const bool allowed = prog.options.shm_into_fields && !prog.ordered_host_unpack;
  auto wanted = [&](const message& m) {
    return allowed && m.bytes >= prog.options.shm_direct_min_bytes;
  };
  cross_on_ = prog.options.shm_cross_memory;
  me_ = me;
  const map_export map = [this](const export_handle& h) { return map_peer_field(h); };

  std::vector<std::vector<direct_region>> halo_out(sh.recvs.size()), halo_in;
  for (std::size_t k = 0; k < sh.recvs.size(); ++k)
    if (wanted(sh.recvs[k]))
      halo_out[k] = describe_exported(
          host_message_steps(prog, step_kind::unpack, sh.recv_at[k], bufs.recv.get()), cross_on_);
  swap_counted_lists(comm, me, halo_out, sh.recvs, halo_in, sh.sends, tag_regions,
                     "MPI_Waitall(regions)");

  direct_.fused_send.assign(prog.sends.size(), {});
  std::vector<std::vector<direct_region>> owned_out(sh.sends.size()), owned_in;
  for (std::size_t k = 0; k < sh.sends.size(); ++k)
    if (wanted(sh.sends[k]))
      owned_out[k] =
          fuse_send(prog, bufs.send.get(), sh.send_at[k], halo_in[k], map, cross_on_, direct_);
  swap_counted_lists(comm, me, owned_out, sh.sends, owned_in, sh.recvs, tag_sources,
                     "MPI_Waitall(sources)");

  std::vector<int> yes_out = fuse_recvs(prog, bufs.recv.get(), sh, owned_in, map, direct_);
  std::vector<int> yes_in(sh.sends.size(), 0);
  direct_recvs_ = std::size_t(std::count(yes_out.begin(), yes_out.end(), 1));
  swap_per_message(comm, me, yes_out, sh.recvs, yes_in, sh.sends, tag_direct,
                   "MPI_Waitall(direct)");

  // Senders: direct where the receiver said yes.
  direct_.send_direct.assign(prog.sends.size(), 0);
  for (std::size_t k = 0; k < sh.sends.size(); ++k) {
    const std::size_t m = sh.send_at[k];
    if (yes_in[k] == 1 && !direct_.fused_send[m].empty()) {
      direct_.send_direct[m] = 1;
      ++direct_sends_;
    } else {
      direct_.fused_send[m].clear();
    }
  }
  go_cross(prog, sh.sends, sh.send_at, halo_in, true);
  go_cross(prog, sh.recvs, sh.recv_at, owned_in, false);
}

// The direct messages whose peer side is reached by cross-memory attach: their fused copies
// (addresses in the peer) become pairs of runs for process_vm_writev (`send`: the sender's
// copy into the receiver's halo) or process_vm_readv (the receiver's copy out of the sender's
// owned cells), run in place of the placed steps (see push() and pull()).
void shm_mailbox::go_cross(const exchange_program& prog, const std::vector<message>& msgs,
                           const std::vector<std::size_t>& at,
                           const std::vector<std::vector<direct_region>>& peer, bool send) {
  auto& flags = send ? direct_.send_direct : direct_.recv_direct;
  auto& fused = send ? direct_.fused_send : direct_.fused_recv;
  auto& out = send ? cross_send_ : cross_recv_;
  out.assign(send ? prog.sends.size() : prog.recvs.size(), {});
  for (std::size_t k = 0; k < msgs.size(); ++k) {
    const std::size_t m = at[k];
    if (!flags[m] || !cross_regions(peer[k])) continue;
    out[m] = make_cross_copy(fused[m], send, block_of(peer[k].front().block).pid, msgs[k].peer);
    fused[m].clear();
    ++cross_messages_;
  }
}

// The address `addr` of process `pid` as a fused copy's peer end, never dereferenced here
// (cross-memory attach copies to and from it); null where this process may not reach that
// process's memory (probed once per process; the first reason is kept for describe()).
std::byte* shm_mailbox::cross_address(long long pid, unsigned long long addr) {
  if (!cross_on_) return nullptr;
  auto [it, fresh] = p_->cross.try_emplace(pid);
  if (fresh) it->second = cross_memory_probe(pid, reinterpret_cast<const void*>(addr));
  if (!it->second.empty()) {
    if (cross_refused_.empty()) cross_refused_ = it->second;
    return nullptr;
  }
  return reinterpret_cast<std::byte*>(addr);
}

bool shm_mailbox::push(std::size_t send) const {
  if (send >= cross_send_.size() || cross_send_[send].pid == 0) return false;
  run_cross_copy(cross_send_[send], true, me_);
  return true;
}
bool shm_mailbox::pull(std::size_t recv) const {
  if (recv >= cross_recv_.size() || cross_recv_[recv].pid == 0) return false;
  run_cross_copy(cross_recv_[recv], false, me_);
  return true;
}

// The receiver's side of one offer: maps the sender's buffer (or says why not: the plans
// disagree, or the system forbids opening another process's descriptors) and returns the reply.
int shm_mailbox::take_offer(std::size_t k, const offer& o, const message& m, int me,
                            std::string& problem) {
  if (o.bytes != m.bytes) {  // the plans disagree: neither path may carry it
    problem = fmt::format(
        "rank {} expects {} bytes per exchange from rank {}, whose shared-memory offer has "
        "{}: do both declare the same domain, stencil and fields in the same order?",
        me, m.bytes, m.peer, o.bytes);
    return reply_size;
  }
  // Another process's descriptors can be off limits (ptrace scope, hidepid, containers):
  // then this pair goes through MPI, and describe() says why.
  const std::string path = fmt::format("/proc/{}/fd/{}", o.pid, o.fd);
  const int f =
      testing::deny_peer_segments ? (errno = EACCES, -1) : open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (f < 0) {
    const int err = errno;
    fallback_[m.peer] =
        fmt::format("could not open rank {}'s buffer {}: {}", m.peer, path, std::strerror(err));
    return -err;
  }
  auto seg = map_shared(f, std::size_t(o.size));
  const int map_errno = errno;
  close(f);
  if (!seg) {
    fallback_[m.peer] =
        fmt::format("could not map rank {}'s buffer: {}", m.peer, std::strerror(map_errno));
    return -map_errno;
  }
  std::byte* base = seg.get();
  p_->mapped.push_back(std::move(seg));
  recv_slot_[k] = o.slot;
  recv_shift_[k] = std::size_t(o.stride);
  recv_data_[k] = base + o.data_at;
  auto* slot = reinterpret_cast<std::uint64_t*>(base + std::size_t(o.slot) * slot_bytes);
  recv_ready_[k] = slot;
  recv_consumed_[k] = slot + at_consumed;
  return reply_shared;
}

// The sender's side of one reply: message k goes through shared memory (its slot in this
// rank's segment), or through MPI, with the reason where the receiver could not map it.
void shm_mailbox::take_reply(std::size_t k, bool offered, int reply, const message& m,
                             std::byte* segment, int me, std::string& problem) {
  if (reply == reply_size && problem.empty())
    problem = fmt::format(
        "rank {} will send {} bytes per exchange to rank {}, which expects another size: do "
        "both declare the same domain, stencil and fields in the same order?",
        me, m.bytes, m.peer);
  if (reply < reply_size)
    fallback_[m.peer] =
        fmt::format("rank {} could not open this rank's buffer: {}", m.peer, std::strerror(-reply));
  if (!(offered && reply == reply_shared)) {
    mpi_sends_.push_back(m);
    return;
  }
  send_slot_[k] = int(k);
  auto* slot = reinterpret_cast<std::uint64_t*>(segment + k * slot_bytes);
  send_ready_[k] = slot;
  send_consumed_[k] = slot + at_consumed;
}

// Every message through MPI until an offer or a reply says otherwise: no slot, no pointers.
void shm_mailbox::unshared(std::size_t ns, std::size_t nr) {
  recv_slot_.assign(nr, -1);
  recv_shift_.assign(nr, 0);
  recv_data_.assign(nr, nullptr);
  recv_ready_.assign(nr, nullptr);
  recv_consumed_.assign(nr, nullptr);
  send_slot_.assign(ns, -1);
  send_ready_.assign(ns, nullptr);
  send_consumed_.assign(ns, nullptr);
}

std::unique_ptr<shm_mailbox> shm_mailbox::attach(MPI_Comm comm, const exchange_program& prog,
                                                 const message_buffers& bufs,
                                                 const route_table& routes, std::string& problem) {
  // The same on every rank (the peers agreed on their fields): decides who joins the set-up.
  // The route table says which messages try shared memory (both ranks of each agreed).
  if (prog.has_device_fields) return nullptr;
  int me = 0;
  mpi::check(MPI_Comm_rank(comm, &me), "MPI_Comm_rank", -1, part);
  const segment seg = make_segment(prog, routes.any(route::shm));

  // Offers to every receiver (valid only where the table says shared memory and this rank's
  // segment exists), replies back.
  std::vector<offer> out(prog.sends.size()), in(prog.recvs.size());
  for (std::size_t k = 0; k < prog.sends.size(); ++k)
    out[k] = {getpid(),
              seg.fd,
              int(k),
              seg.size,
              seg.data_at + prog.sends[k].offset,
              prog.sends[k].bytes,
              seg.stride,
              seg.mem && routes.send(k) == route::shm,
              0};
  swap_per_message(comm, me, out, prog.sends, in, prog.recvs, tag_offer, "MPI_Waitall(offers)");

  std::unique_ptr<shm_mailbox> box(new shm_mailbox());
  box->p_ = std::make_unique<impl>();
  box->send_shift_ = seg.stride;
  const std::size_t nr = prog.recvs.size(), ns = prog.sends.size();
  box->unshared(ns, nr);
  std::vector<int> reply_out(nr, reply_declined), reply_in(ns, 0);
  for (std::size_t k = 0; k < nr; ++k)
    if (in[k].valid && routes.recv(k) == route::shm)
      reply_out[k] = box->take_offer(k, in[k], prog.recvs[k], me, problem);
  swap_per_message(comm, me, reply_out, prog.recvs, reply_in, prog.sends, tag_reply,
                   "MPI_Waitall(replies)");
  if (seg.fd >= 0) close(seg.fd);  // the receivers have mapped it (or given up); mappings stay

  for (std::size_t k = 0; k < ns; ++k)
    box->take_reply(k, out[k].valid != 0, reply_in[k], prog.sends[k], seg.mem.get(), me, problem);
  for (std::size_t k = 0; k < nr; ++k)
    if (box->recv_slot_[k] < 0)
      box->mpi_recvs_.push_back(prog.recvs[k]);
    else
      ++box->shared_recvs_;
  const bool any = box->mpi_sends_.size() < ns || box->shared_recvs_ > 0;
  if (any) box->go_direct(comm, prog, bufs, me);
  if (!any && box->fallback_.empty()) return nullptr;
  // The send buffer lives in the segment (MPI messages are sent from there too); shared
  // messages are unpacked straight out of their senders' buffers.
  if (seg.mem) {
    box->send_data_ = seg.mem.get() + seg.data_at;
    box->p_->own = seg.mem;
  }
  return box;
}

placement shm_mailbox::placed(const exchange_program& prog, int copy) const {
  placement where = direct_;  // direct messages: their fused copies, in place of their steps
  where.send_at.assign(prog.sends.size(), nullptr);
  where.recv_at.assign(prog.recvs.size(), nullptr);
  for (std::size_t m = 0; send_data_ && m < prog.sends.size(); ++m)
    where.send_at[m] = send_data_ + prog.sends[m].offset +
                       (copy && send_shared(m) ? send_shift_ : 0);  // MPI's message stays put
  for (std::size_t m = 0; m < prog.recvs.size(); ++m)
    if (recv_data_[m]) where.recv_at[m] = recv_data_[m] + (copy ? recv_shift_[m] : 0);
  return where;
}

std::string shm_mailbox::how() const {
  const std::size_t shared = (send_slot_.size() - mpi_sends_.size()) + shared_recvs_;
  const std::size_t direct = direct_sends_ + direct_recvs_;
  const char* how =
      direct == 0 ? "packed into a shared send buffer, unpacked straight out of it"
      : direct == shared
          ? "one copy, straight from the sender's owned cells into the receiver's halo, by "
            "whichever of the two ranks gets to it first"
          : "one copy straight from the sender's owned cells into the receiver's halo where "
            "the fields allow it, else packed into a shared send buffer and unpacked out of it";
  std::string cross;
  if (cross_messages_ > 0)
    cross = fmt::format(
        "; {} of this rank's messages reach memory halox does not own by "
        "cross-memory attach (process_vm_readv/writev)",
        cross_messages_);
  if (!cross_refused_.empty())
    cross += fmt::format(
        "; memory halox does not own takes two copies where the system refuses "
        "cross-memory attach ({})",
        cross_refused_);
  return fmt::format("shared memory (node-local: {}{}; no MPI message per exchange)", how, cross);
}

shm_mailbox::~shm_mailbox() = default;

bool shm_mailbox::consumed(std::size_t send, std::uint64_t g) const {
  return load_acquire(send_consumed_[send]) + 2 >= g;
}
void shm_mailbox::post_ready(std::size_t send, std::uint64_t g) const {
  store_release(send_ready_[send], g);
}
bool shm_mailbox::ready(std::size_t recv, std::uint64_t g) const {
  return load_acquire(recv_ready_[recv]) >= g;
}
void shm_mailbox::post_consumed(std::size_t recv, std::uint64_t g) const {
  store_release(recv_consumed_[recv], g);
}

namespace {
// Exchange g's copy of a direct message: taken by exactly one rank (the counter reads g - 1
// until then: every earlier copy was taken and finished before either rank started g).
bool take(std::uint64_t* claim, std::uint64_t g) {
  std::uint64_t expected = g - 1;
  return std::atomic_ref<std::uint64_t>(*claim).compare_exchange_strong(
      expected, g, std::memory_order_acq_rel, std::memory_order_acquire);
}
}  // namespace

void shm_mailbox::post_started(std::size_t recv, std::uint64_t g) const {
  store_release(word(recv_ready_[recv], at_started), g);
}
bool shm_mailbox::receiver_started(std::size_t send, std::uint64_t g) const {
  return load_acquire(word(send_ready_[send], at_started)) >= g;
}
bool shm_mailbox::claim_send(std::size_t send, std::uint64_t g) const {
  return take(word(send_ready_[send], at_claim), g);
}
bool shm_mailbox::claim_recv(std::size_t recv, std::uint64_t g) const {
  return take(word(recv_ready_[recv], at_claim), g);
}
void shm_mailbox::post_copied_send(std::size_t send, std::uint64_t g) const {
  store_release(send_consumed_[send], g);
}
bool shm_mailbox::copied_send(std::size_t send, std::uint64_t g) const {
  return load_acquire(send_consumed_[send]) >= g;
}
bool shm_mailbox::copied_recv(std::size_t recv, std::uint64_t g) const {
  return load_acquire(recv_consumed_[recv]) >= g;
}

}  // namespace halox::detail
