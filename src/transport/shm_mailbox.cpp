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

// One unpack step of a direct message as its receiver describes it to the sender: where it
// writes (a block of the receiver's field memory, which the sender maps) and where it reads
// the message.
struct region_msg {
  long long pid = 0;
  int fd = -1, pad = 0;
  unsigned long long alloc_size = 0, alloc_offset = 0, buf_offset = 0, elem = 0;
  long long ndims = 0;
  long long count[max_copy_dims]{}, buf_stride[max_copy_dims]{}, field_stride[max_copy_dims]{};
};

// The sender's answer, per region: where the matching pack step reads (a block of the sender's
// field memory, which the receiver maps), with its strides.
struct source_msg {
  long long pid = 0;
  int fd = -1, pad = 0;
  unsigned long long alloc_size = 0, alloc_offset = 0;
  long long stride[max_copy_dims]{};
};

// The non-empty copies of one message's steps; false where it has index-list steps or
// reductions (such a message keeps two copies).
bool plain_steps(const exchange_program::steps& st, const exchange_program::op_range& r,
                 std::vector<const copy_op*>& out) {
  if (r.gn != 0) return false;
  for (std::size_t k = r.c0; k < r.c0 + r.cn; ++k) {
    const copy_op& op = st.copies[k];
    if (op.ndims == 0) continue;  // ((an empty copy))
    if (op.reduce != nullptr) return false;
    out.push_back(&op);
  }
  return !out.empty();
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
std::byte* shm_mailbox::map_peer_field(long long pid, int fd, std::size_t size) {
  auto& at = p_->fields[{pid, fd}];
  if (!at) {
    const std::string path = fmt::format("/proc/{}/fd/{}", pid, fd);
    const int f = testing::deny_peer_segments ? -1 : open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (f < 0) return nullptr;
    at = map_shared(f, size);
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

// Receiver, receive message m: its unpack steps (into `ops`), each described as a region of
// halox's own field memory; empty where the message is too small, its steps are not plain or
// one of them writes elsewhere.
std::vector<region_msg> unpack_regions(const exchange_program& prog, std::size_t m, long long pid,
                                       std::vector<const copy_op*>& ops) {
  if (prog.recvs[m].bytes < prog.options.shm_direct_min_bytes ||
      !plain_steps(prog.unpack, prog.unpack_range[m], ops))
    return {};
  std::vector<region_msg> regions;
  for (const copy_op* op : ops) {
    shareable_block b;
    if (!find_shareable(op->dst, b)) break;
    region_msg r;
    r.pid = pid;
    r.fd = b.fd;
    r.alloc_size = b.size;
    r.alloc_offset = std::uint64_t(op->dst - b.base);
    r.buf_offset = std::uint64_t(op->src - (prog.recv_buf.get() + prog.recvs[m].offset));
    r.elem = op->elem;
    r.ndims = op->ndims;
    for (int d = 0; d < op->ndims; ++d) {
      r.count[d] = op->count[std::size_t(d)];
      r.buf_stride[d] = op->src_stride[std::size_t(d)];
      r.field_stride[d] = op->dst_stride[std::size_t(d)];
    }
    regions.push_back(r);
  }
  if (regions.size() != ops.size()) return {};
  return regions;
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

// Sender, send message m: each pack step matched to the receiver's region of the same message
// bytes and shape, the receiver's field mapped with `map_peer`. Fills `push_out` (the copies
// into the receiver's field) and `sources_out` (where each region's bytes are read, for the
// receiver) and returns true where every step matched; leaves them alone otherwise.
template <class Map>
bool match_pack(const exchange_program& prog, std::size_t m, const std::vector<region_msg>& regions,
                long long pid, Map&& map_peer, std::vector<copy_op>& push_out,
                std::vector<source_msg>& sources_out) {
  std::vector<const copy_op*> ops;
  if (regions.empty() || prog.sends[m].bytes < prog.options.shm_direct_min_bytes ||
      !plain_steps(prog.pack, prog.pack_range[m], ops) || ops.size() != regions.size())
    return false;
  std::vector<source_msg> sources(regions.size());
  std::vector<char> matched(regions.size(), 0);
  std::vector<copy_op> push;
  for (const copy_op* op : ops) {
    const auto at = std::uint64_t(op->dst - (prog.send_buf.get() + prog.sends[m].offset));
    std::size_t r = 0;
    while (r < regions.size() && (matched[r] || regions[r].buf_offset != at)) ++r;
    shareable_block b;
    if (r == regions.size() || regions[r].elem != op->elem || regions[r].ndims != op->ndims ||
        !find_shareable(op->src, b))
      break;
    bool same = true;
    for (int d = 0; d < op->ndims; ++d)
      same = same && regions[r].count[d] == op->count[std::size_t(d)] &&
             regions[r].buf_stride[d] == op->dst_stride[std::size_t(d)];
    std::byte* peer =
        same ? map_peer(regions[r].pid, regions[r].fd, std::size_t(regions[r].alloc_size))
             : nullptr;
    if (peer == nullptr) break;
    matched[r] = 1;
    copy_op c = *op;
    c.dst = peer + regions[r].alloc_offset;
    source_msg& src = sources[r];
    src.pid = pid;
    src.fd = b.fd;
    src.alloc_size = b.size;
    src.alloc_offset = std::uint64_t(op->src - b.base);
    for (int d = 0; d < op->ndims; ++d) {
      c.dst_stride[std::size_t(d)] = regions[r].field_stride[d];
      src.stride[d] = op->src_stride[std::size_t(d)];
    }
    push.push_back(c);
  }
  if (push.size() != regions.size()) return false;
  push_out = std::move(push);
  sources_out = std::move(sources);
  return true;
}

// Receiver: its unpack steps `ops` reading from the senders' fields (`sources`, mapped with
// `map_peer`); shorter than `sources` where one could not be mapped.
template <class Map>
std::vector<copy_op> pull_copies_from(const std::vector<source_msg>& sources,
                                      const std::vector<const copy_op*>& ops, Map&& map_peer) {
  std::vector<copy_op> pull;
  for (std::size_t r = 0; r < sources.size(); ++r) {
    std::byte* peer = map_peer(sources[r].pid, sources[r].fd, std::size_t(sources[r].alloc_size));
    if (peer == nullptr) break;
    copy_op c = *ops[r];
    c.src = peer + sources[r].alloc_offset;
    for (int d = 0; d < c.ndims; ++d) c.src_stride[std::size_t(d)] = sources[r].stride[d];
    pull.push_back(c);
  }
  return pull;
}

}  // namespace

// One copy instead of two, where both sides' fields allow it: receivers describe their unpack
// steps, senders match each with the pack step of the same message bytes and map the
// receiver's memory, receivers map the senders' and say yes. Only messages that go through
// shared memory take part (both ranks of each pair know which those are).
void shm_mailbox::go_direct(MPI_Comm comm, const exchange_program& prog, int me) {
  const shared_messages sh = shared_in(*this, prog);
  const bool allowed = prog.options.shm_into_fields && !prog.ordered_unpack;
  const long long pid = getpid();
  auto map_peer = [this](long long p, int fd, std::size_t size) {
    return map_peer_field(p, fd, size);
  };

  // Receivers: the unpack steps, each into halox's own field memory.
  std::vector<std::vector<const copy_op*>> unpack_ops(sh.recvs.size());
  std::vector<std::vector<region_msg>> regions_out(sh.recvs.size()), regions_in;
  for (std::size_t k = 0; k < sh.recvs.size(); ++k)
    if (allowed) regions_out[k] = unpack_regions(prog, sh.recv_at[k], pid, unpack_ops[k]);
  swap_counted_lists(comm, me, regions_out, sh.recvs, regions_in, sh.sends, tag_regions,
                     "MPI_Waitall(regions)");

  // Senders: each pack step matched to the region of the same message bytes and shape.
  push_.assign(prog.sends.size(), {});
  std::vector<std::vector<source_msg>> sources_out(sh.sends.size()), sources_in;
  for (std::size_t k = 0; k < sh.sends.size(); ++k)
    if (allowed)
      match_pack(prog, sh.send_at[k], regions_in[k], pid, map_peer, push_[sh.send_at[k]],
                 sources_out[k]);
  swap_counted_lists(comm, me, sources_out, sh.sends, sources_in, sh.recvs, tag_sources,
                     "MPI_Waitall(sources)");

  // Receivers: map the senders' memory, and say yes.
  pull_.assign(prog.recvs.size(), {});
  recv_direct_.assign(prog.recvs.size(), 0);
  std::vector<int> yes_out(sh.recvs.size(), 0), yes_in(sh.sends.size(), 0);
  for (std::size_t k = 0; k < sh.recvs.size(); ++k) {
    const auto& sources = sources_in[k];
    if (sources.empty() || sources.size() != unpack_ops[k].size()) continue;
    std::vector<copy_op> pull = pull_copies_from(sources, unpack_ops[k], map_peer);
    if (pull.size() != sources.size()) continue;
    const std::size_t m = sh.recv_at[k];
    pull_[m] = std::move(pull);
    recv_direct_[m] = 1;
    yes_out[k] = 1;
    ++direct_recvs_;
  }
  swap_per_message(comm, me, yes_out, sh.recvs, yes_in, sh.sends, tag_direct,
                   "MPI_Waitall(direct)");

  // Senders: direct where the receiver said yes.
  send_direct_.assign(prog.sends.size(), 0);
  for (std::size_t k = 0; k < sh.sends.size(); ++k) {
    const std::size_t m = sh.send_at[k];
    if (yes_in[k] == 1 && !push_[m].empty()) {
      send_direct_[m] = 1;
      ++direct_sends_;
    } else {
      push_[m].clear();
    }
  }
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
    fallback_[m.peer] = fmt::format("rank {} could not open this rank's buffer: {}", m.peer,
                                    std::strerror(-reply));
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
  if (any) box->go_direct(comm, prog, me);
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
  placement where;
  where.send_at.assign(prog.sends.size(), nullptr);
  where.recv_at.assign(prog.recvs.size(), nullptr);
  for (std::size_t m = 0; send_data_ && m < prog.sends.size(); ++m)
    where.send_at[m] = send_data_ + prog.sends[m].offset +
                       (copy && send_shared(m) ? send_shift_ : 0);  // MPI's message stays put
  for (std::size_t m = 0; m < prog.recvs.size(); ++m)
    if (recv_data_[m]) where.recv_at[m] = recv_data_[m] + (copy ? recv_shift_[m] : 0);
  return where;
}

std::string shm_mailbox::path() const {
  const std::size_t shared = (send_slot_.size() - mpi_sends_.size()) + shared_recvs_;
  const std::size_t direct = direct_sends_ + direct_recvs_;
  const char* how =
      direct == 0 ? "packed into a shared send buffer, unpacked straight out of it"
      : direct == shared
          ? "one copy, straight from the sender's owned cells into the receiver's halo, by "
            "whichever of the two ranks gets to it first"
          : "one copy straight from the sender's owned cells into the receiver's halo where "
            "both fields are halox's own, else packed into a shared send buffer and unpacked "
            "out of it";
  return fmt::format("shared memory (node-local: {}; no MPI message per exchange)", how);
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
