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

// A sender's offer for one message: where its buffer can be opened and where the message is.
struct offer {
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

  // This rank's segment: one slot per send message, then the send buffer twice (exchanges
  // alternate between the two copies, `stride` bytes apart).
  std::size_t send_size = 0;
  for (const auto& m : prog.sends) send_size = std::max(send_size, m.offset + m.bytes);
  const std::size_t data_at = (prog.sends.size() * slot_bytes + 63) / 64 * 64;
  const std::size_t stride = (send_size + 63) / 64 * 64;
  const std::size_t seg_size = std::max<std::size_t>(data_at + 2 * stride, 64);
  const bool wants = std::any_of(prog.sends.begin(), prog.sends.end(),
                                 [&](const message& m) { return candidate(m.peer); });
  int fd = -1;
  std::shared_ptr<std::byte> own;
  if (wants) {
    fd = memfd_create("halox-messages", MFD_CLOEXEC);
    if (fd >= 0 && ftruncate(fd, off_t(seg_size)) == 0) own = map_shared(fd, seg_size);
  }

  // Offers to every receiver (valid only where this rank could share), replies back.
  std::vector<offer> out(prog.sends.size()), in(prog.recvs.size());
  std::vector<int> reply_out(prog.recvs.size(), 0), reply_in(prog.sends.size(), 0);
  std::vector<MPI_Request> reqs;
  for (std::size_t k = 0; k < prog.sends.size(); ++k) {
    auto& o = out[k];
    o.pid = getpid();
    o.fd = fd;
    o.slot = int(k);
    o.size = seg_size;
    o.data_at = data_at + prog.sends[k].offset;
    o.bytes = prog.sends[k].bytes;
    o.stride = stride;
    o.valid = own && candidate(prog.sends[k].peer);
    reqs.emplace_back();
    check_mpi(
        MPI_Isend(&o, sizeof(offer), MPI_BYTE, prog.sends[k].peer, tag_offer, comm, &reqs.back()),
        "MPI_Isend(offer)", me);
  }
  for (std::size_t k = 0; k < prog.recvs.size(); ++k) {
    reqs.emplace_back();
    check_mpi(MPI_Irecv(&in[k], sizeof(offer), MPI_BYTE, prog.recvs[k].peer, tag_offer, comm,
                        &reqs.back()),
              "MPI_Irecv(offer)", me);
  }
  check_mpi(MPI_Waitall(int(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE), "MPI_Waitall(offers)",
            me);
  reqs.clear();

  std::unique_ptr<shm_mailbox> box(new shm_mailbox());
  box->p_ = std::make_unique<impl>();
  box->recv_slot_.assign(prog.recvs.size(), -1);
  box->recv_shift_.assign(prog.recvs.size(), 0);
  box->send_shift_ = stride;
  box->recv_ready_.assign(prog.recvs.size(), nullptr);
  box->recv_consumed_.assign(prog.recvs.size(), nullptr);
  std::vector<std::byte*> base(prog.recvs.size(), nullptr);
  for (std::size_t k = 0; k < prog.recvs.size(); ++k) {
    const auto& o = in[k];
    const int peer = prog.recvs[k].peer;
    if (!o.valid || !candidate(peer)) continue;
    if (o.bytes != prog.recvs[k].bytes) {  // the plans disagree: neither path may carry it
      reply_out[k] = reply_size;
      problem = fmt::format(
          "rank {} expects {} bytes per exchange from rank {}, whose shared-memory offer has "
          "{}: do both declare the same domain, stencil and fields in the same order?",
          me, prog.recvs[k].bytes, peer, o.bytes);
      continue;
    }
    // Another process's descriptors can be off limits (ptrace scope, hidepid, containers):
    // then this pair goes through MPI, and describe() says why.
    const std::string path = fmt::format("/proc/{}/fd/{}", o.pid, o.fd);
    const int f =
        testing::deny_peer_segments ? (errno = EACCES, -1) : open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (f < 0) {
      reply_out[k] = -errno;
      box->fallback_[peer] =
          fmt::format("could not open rank {}'s buffer {}: {}", peer, path, std::strerror(errno));
      continue;
    }
    auto seg = map_shared(f, std::size_t(o.size));
    const int map_errno = errno;
    close(f);
    if (!seg) {
      reply_out[k] = -map_errno;
      box->fallback_[peer] =
          fmt::format("could not map rank {}'s buffer: {}", peer, std::strerror(map_errno));
      continue;
    }
    base[k] = seg.get();
    box->p_->mapped.push_back(std::move(seg));
    box->recv_slot_[k] = o.slot;
    box->recv_shift_[k] = std::size_t(o.stride);
    auto* slot = reinterpret_cast<std::uint64_t*>(base[k] + std::size_t(o.slot) * slot_bytes);
    box->recv_ready_[k] = slot;
    box->recv_consumed_[k] = slot + 8;
    reply_out[k] = reply_shared;
  }
  for (std::size_t k = 0; k < prog.recvs.size(); ++k) {
    reqs.emplace_back();
    check_mpi(
        MPI_Isend(&reply_out[k], 1, MPI_INT, prog.recvs[k].peer, tag_reply, comm, &reqs.back()),
        "MPI_Isend(reply)", me);
  }
  for (std::size_t k = 0; k < prog.sends.size(); ++k) {
    reqs.emplace_back();
    check_mpi(
        MPI_Irecv(&reply_in[k], 1, MPI_INT, prog.sends[k].peer, tag_reply, comm, &reqs.back()),
        "MPI_Irecv(reply)", me);
  }
  check_mpi(MPI_Waitall(int(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE), "MPI_Waitall(replies)",
            me);
  if (fd >= 0) close(fd);  // the receivers have mapped it (or given up); mappings stay

  box->send_slot_.assign(prog.sends.size(), -1);
  box->send_ready_.assign(prog.sends.size(), nullptr);
  box->send_consumed_.assign(prog.sends.size(), nullptr);
  for (std::size_t k = 0; k < prog.sends.size(); ++k) {
    const int peer = prog.sends[k].peer;
    if (reply_in[k] == reply_size && problem.empty())
      problem = fmt::format(
          "rank {} will send {} bytes per exchange to rank {}, which expects another size: do "
          "both declare the same domain, stencil and fields in the same order?",
          me, prog.sends[k].bytes, peer);
    if (reply_in[k] < reply_size)
      box->fallback_[peer] = fmt::format("rank {} could not open this rank's buffer: {}", peer,
                                         std::strerror(-reply_in[k]));
    if (!(out[k].valid && reply_in[k] == reply_shared)) {
      box->mpi_sends_.push_back(prog.sends[k]);
      continue;
    }
    box->send_slot_[k] = int(k);
    auto* slot = reinterpret_cast<std::uint64_t*>(own.get() + k * slot_bytes);
    box->send_ready_[k] = slot;
    box->send_consumed_[k] = slot + 8;
  }
  for (std::size_t k = 0; k < prog.recvs.size(); ++k)
    if (box->recv_slot_[k] < 0)
      box->mpi_recvs_.push_back(prog.recvs[k]);
    else
      ++box->shared_recvs_;
  const bool any = box->mpi_sends_.size() < prog.sends.size() || box->shared_recvs_ > 0;
  if (!any && box->fallback_.empty()) return nullptr;

  // The send buffer lives in the segment (MPI messages are sent from there too); shared
  // messages are unpacked straight out of their senders' buffers.
  if (own) {
    box->send_data_ = own.get() + data_at;
    box->p_->own = own;
  }
  box->recv_data_.assign(prog.recvs.size(), nullptr);
  for (std::size_t k = 0; k < prog.recvs.size(); ++k)
    if (box->recv_slot_[k] >= 0) box->recv_data_[k] = base[k] + in[k].data_at;
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
