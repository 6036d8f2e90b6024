// Shared-memory messages between node-local ranks (see halox/transport/shm_mailbox.hpp).
#include "halox/transport/shm_mailbox.hpp"

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

#include <fmt/format.h>

#include "halox/core/error.hpp"

namespace halox::detail {

namespace {

enum : int { tag_offer = 20, tag_reply = 21 };
constexpr std::size_t slot_bytes = 128;  // ready at +0, consumed at +64: separate cache lines

void check_mpi(int rc, const char* call, int rank) {
  if (rc != MPI_SUCCESS) fail("rank {}: {} failed (shared-memory transport set-up)", rank, call);
}

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
  std::size_t send_size = 0;
  for (const auto& m : prog.sends) send_size = std::max(send_size, m.offset + m.bytes);
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
    check_mpi(MPI_Isend(&out[k], sizeof(T), MPI_BYTE, to[k].peer, tag, comm, &reqs.back()),
              "MPI_Isend(shared-memory set-up)", me);
  }
  for (std::size_t k = 0; k < from.size(); ++k) {
    reqs.emplace_back();
    check_mpi(MPI_Irecv(&in[k], sizeof(T), MPI_BYTE, from[k].peer, tag, comm, &reqs.back()),
              "MPI_Irecv(shared-memory set-up)", me);
  }
  check_mpi(MPI_Waitall(int(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE), what, me);
}

}  // namespace

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
  recv_consumed_[k] = slot + 8;
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
  send_consumed_[k] = slot + 8;
}

std::unique_ptr<shm_mailbox> shm_mailbox::attach(MPI_Comm comm, const exchange_program& prog,
                                                 const locality& here, std::string& problem) {
  // The same on every rank (the peers agreed on their fields): decides who joins the set-up.
  // The environment is per rank and only decides what this rank offers and accepts.
  if (prog.has_device_fields) return nullptr;
  int me = 0;
  check_mpi(MPI_Comm_rank(comm, &me), "MPI_Comm_rank", -1);
  const auto& opt = prog.options;
  // Node-local ranks (of `comm`), optionally restricted by exchange_options::peer_shm_ranks.
  const auto& listed = opt.peer_shm_ranks;
  auto allowed = [&](int r) {
    return !listed || std::find(listed->begin(), listed->end(), r) != listed->end();
  };
  auto candidate = [&](int peer) {
    return opt.host_shared_memory && allowed(me) && allowed(peer) && here.same_node(peer);
  };
  const segment seg = make_segment(
      prog, std::any_of(prog.sends.begin(), prog.sends.end(),
                        [&](const message& m) { return candidate(m.peer); }));

  // Offers to every receiver (valid only where this rank could share), replies back.
  std::vector<offer> out(prog.sends.size()), in(prog.recvs.size());
  for (std::size_t k = 0; k < prog.sends.size(); ++k)
    out[k] = {getpid(), seg.fd, int(k), seg.size, seg.data_at + prog.sends[k].offset,
              prog.sends[k].bytes, seg.stride, seg.mem && candidate(prog.sends[k].peer), 0};
  swap_per_message(comm, me, out, prog.sends, in, prog.recvs, tag_offer, "MPI_Waitall(offers)");

  std::unique_ptr<shm_mailbox> box(new shm_mailbox());
  box->p_ = std::make_unique<impl>();
  box->send_shift_ = seg.stride;
  const std::size_t nr = prog.recvs.size(), ns = prog.sends.size();
  box->recv_slot_.assign(nr, -1);
  box->recv_shift_.assign(nr, 0);
  box->recv_data_.assign(nr, nullptr);
  box->recv_ready_.assign(nr, nullptr);
  box->recv_consumed_.assign(nr, nullptr);
  std::vector<int> reply_out(nr, reply_declined), reply_in(ns, 0);
  for (std::size_t k = 0; k < nr; ++k)
    if (in[k].valid && candidate(prog.recvs[k].peer))
      reply_out[k] = box->take_offer(k, in[k], prog.recvs[k], me, problem);
  swap_per_message(comm, me, reply_out, prog.recvs, reply_in, prog.sends, tag_reply,
                   "MPI_Waitall(replies)");
  if (seg.fd >= 0) close(seg.fd);  // the receivers have mapped it (or given up); mappings stay

  box->send_slot_.assign(ns, -1);
  box->send_ready_.assign(ns, nullptr);
  box->send_consumed_.assign(ns, nullptr);
  for (std::size_t k = 0; k < ns; ++k)
    box->take_reply(k, out[k].valid != 0, reply_in[k], prog.sends[k], seg.mem.get(), me, problem);
  for (std::size_t k = 0; k < nr; ++k)
    if (box->recv_slot_[k] < 0)
      box->mpi_recvs_.push_back(prog.recvs[k]);
    else
      ++box->shared_recvs_;
  const bool any = box->mpi_sends_.size() < ns || box->shared_recvs_ > 0;
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

const std::string& shm_mailbox::path() {
  static const std::string p =
      "shared memory (node-local: packed into a shared send buffer, unpacked straight out of it; "
      "no MPI message per exchange)";
  return p;
}

shm_mailbox::~shm_mailbox() = default;

bool shm_mailbox::consumed(std::size_t send, std::uint64_t g) const {
  return load_acquire(send_consumed_[send]) + 2 >= g;
}
const std::string* shm_mailbox::fallback(int peer) const {
  const auto it = fallback_.find(peer);
  return it == fallback_.end() ? nullptr : &it->second;
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

}  // namespace halox::detail
