// Host fields only: messages through MPI and, between ranks of one node, shared memory.
//
// start() says (in shared memory) that this rank has started: its owned cells may be read and
// its halos written by the direct messages' other rank. It posts the MPI receives, packs and
// sends each MPI message, packs each shared-memory message whose receiver has consumed the copy
// of the buffer it reuses (the others later, in wait()/test()), and runs the local copies: it
// copies no direct message, so that a peer already in its wait() copies them while this rank
// computes. wait()/test() unpack messages as they arrive, from either transport, pack the
// deferred shared-memory messages, copy the direct messages into this rank's halos whose
// senders have started, and, where a receiver has started but not copied yet, copy its message
// for it: a rank's completion never waits for a peer to reach its wait().
#include "exchange/exchange_core.hpp"

#include "halox/core/format.hpp"

#include <algorithm>

#include "halox/core/error.hpp"

namespace halox::detail {

namespace {

class host_mode final : public exchange_mode {
 public:
  explicit host_mode(exchange_core& c)
      : exchange_mode(c),
        mpi_(c),
        host_(c),
        shm_(c.shm()),
        taken_(host_.recvs(), 0),
        send_pending_(host_.sends(), 0),
        in_direct_(host_.recvs(), 0),
        out_direct_(host_.sends(), 0) {}
  const char* name() const override { return "host"; }
  void waiting_for(const exchange_core& c, std::vector<std::string>& out) const override {
    c.unfinished(out);  // MPI
    if (!shm_) return;
    const auto& p = c.program();
    for (std::size_t m = 0; m < p.recvs.size(); ++m)
      if (shm_->recv_shared(m) && !shm_->recv_direct(m) && !taken_[m])
        out.push_back(
            format("rank {} (shared memory: its message has not arrived)", p.recvs[m].peer));
      else if (in_direct_[m])
        out.push_back(format("rank {} (shared memory, one copy: it has not started this exchange)",
                             p.recvs[m].peer));
    for (std::size_t m = 0; m < p.sends.size(); ++m)
      if (send_pending_[m])
        out.push_back(format("rank {} (shared memory: it has not read this rank's last message)",
                             p.sends[m].peer));
      else if (out_direct_[m])
        out.push_back(format("rank {} (shared memory, one copy: it has not started this exchange)",
                             p.sends[m].peer));
  }
  const char* capture_blocker() const override {
    return "it exchanges host fields: the host packs and unpacks them and calls MPI or shared "
           "memory every exchange";
  }

  void start(stream_t) override {
    announce();
    mpi_.start_recvs();
    for (std::size_t m = 0, k = 0; m < host_.sends(); ++m) {
      if (shm_ && shm_->send_direct(m)) continue;  // copied by either rank, see announce()
      if (shm_ && shm_->send_shared(m)) {          // packed as soon as its receiver is done
        send_pending_[m] = 1;
        ++sends_pending_;
      } else {
        host_.pack(m);
        mpi_.start_send(k++);  // channel messages keep the program's order
      }
    }
    host_.run_local();
    std::fill(taken_.begin(), taken_.end(), 0);
    shm_arrived_ = 0;
    idle_ = 0;
    clock_.begin();
    push_sends();
  }

  void wait(stream_t) override {
    receive(true);
    unpack_ordered();
    mpi_.wait_sends();
  }

  bool test() override {
    if (!receive(false) || !mpi_.test_sends()) return false;
    unpack_ordered();
    return true;
  }

  void abandon() override {
    std::fill(send_pending_.begin(), send_pending_.end(), 0);
    sends_pending_ = 0;
    std::fill(in_direct_.begin(), in_direct_.end(), 0);
    std::fill(out_direct_.begin(), out_direct_.end(), 0);
    in_direct_left_ = out_direct_left_ = 0;
  }

 private:
  // Direct messages: this rank's owned cells hold exchange g's values (`ready`) and its halos
  // may be written (`started`). Before anything else in start(), so that peers go on at once.
  void announce() {
    if (!shm_ || (shm_->direct_send_count() + shm_->direct_recv_count()) == 0) return;
    const std::uint64_t g = clock_.generation();
    for (std::size_t m = 0; m < out_direct_.size(); ++m)
      if (shm_->send_direct(m)) {
        shm_->post_ready(m, g);
        out_direct_[m] = 1;
        ++out_direct_left_;
      }
    for (std::size_t m = 0; m < in_direct_.size(); ++m)
      if (shm_->recv_direct(m)) {
        shm_->post_started(m, g);
        in_direct_[m] = 1;
        ++in_direct_left_;
      }
  }

  // Direct messages into this rank's halos whose senders have started: copies each one not
  // taken yet (or sees the sender's copy done). True when any finished.
  bool pull_direct() {
    bool moved = false;
    const std::uint64_t g = clock_.generation();
    for (std::size_t m = 0; in_direct_left_ > 0 && m < in_direct_.size(); ++m) {
      if (!in_direct_[m]) continue;
      if (!shm_->copied_recv(m, g)) {
        if (!shm_->ready(m, g) || !shm_->claim_recv(m, g)) continue;
        if (!shm_->pull(m)) host_.unpack(m);  // the sender's owned cells into this rank's halo
        shm_->post_consumed(m, g);
      }
      in_direct_[m] = 0;
      --in_direct_left_;
      moved = true;
    }
    return moved;
  }

  // Direct messages out of this rank's owned cells: done once copied (by either rank); with
  // `copy`, this rank copies those whose receivers have started but not taken them. True when
  // any finished.
  bool push_direct(bool copy) {
    bool moved = false;
    const std::uint64_t g = clock_.generation();
    for (std::size_t m = 0; out_direct_left_ > 0 && m < out_direct_.size(); ++m) {
      if (!out_direct_[m]) continue;
      if (!shm_->copied_send(m, g)) {
        if (!copy || !shm_->receiver_started(m, g) || !shm_->claim_send(m, g)) continue;
        if (!shm_->push(m)) host_.pack(m);  // this rank's owned cells into the receiver's halo
        shm_->post_copied_send(m, g);
      }
      out_direct_[m] = 0;
      --out_direct_left_;
      moved = true;
    }
    return moved;
  }

  // Packs the shared-memory messages of this exchange whose receivers have unpacked the last
  // one; true when any was packed. Never waits: start() must not depend on a peer's progress.
  bool push_sends() {
    if (sends_pending_ == 0) return false;
    bool moved = false;
    for (std::size_t m = 0; m < send_pending_.size(); ++m) {
      if (!send_pending_[m] || !shm_->consumed(m, clock_.generation())) continue;
      host_.pack(m);
      shm_->post_ready(m, clock_.generation());
      send_pending_[m] = 0;
      --sends_pending_;
      moved = true;
    }
    return moved;
  }

  // Shared-memory receives that have arrived; true when any did.
  bool take_shared() {
    const std::uint64_t g = clock_.generation();
    bool moved = false;
    for (std::size_t m = 0; shm_arrived_ < shared_ && m < host_.recvs(); ++m) {
      if (!shm_->recv_shared(m) || shm_->recv_direct(m) || taken_[m] || !shm_->ready(m, g))
        continue;
      if (!host_.ordered()) {
        host_.unpack(m);
        shm_->post_consumed(m, g);
      }
      taken_[m] = 1;
      ++shm_arrived_;
      moved = true;
    }
    return moved;
  }

  // Unpacks the messages that have arrived (through MPI or shared memory), in arrival order
  // unless the exchange is ordered, and packs deferred shared-memory sends; with `block`, until
  // all is done. True when all is done. Without `block`, yields the processor when nothing
  // moved (ranks may outnumber cores; a polling loop must let its peers run).
  bool receive(bool block) {
    for (int spins = 0;;) {
      bool moved = push_sends();
      moved = take_shared() || moved;
      // Copies into this rank's halos first; copies for receivers only after a while with
      // nothing else to do (a receiver that has just started is about to copy its own: each
      // rank of a pair then copies its halos, both at once, instead of one rank both ways).
      moved = pull_direct() || moved;
      moved = push_direct(!moved && idle_ >= push_patience) || moved;
      idle_ = moved ? 0 : idle_ + 1;
      const std::size_t before = mpi_.arrived();
      const bool shm_done = shm_arrived_ == shared_ && sends_pending_ == 0 &&
                            in_direct_left_ == 0 && out_direct_left_ == 0;
      // Block in MPI only when nothing else is left to poll.
      const bool mpi_done = mpi_.receive(block && shm_done);
      moved = moved || mpi_.arrived() != before;
      if (mpi_done && shm_done) return true;
      if (!block) {
        if (!moved && shm_) yield_processor();
        return false;
      }
      if (!moved) spin_pause(spins);
    }
  }

  void unpack_ordered() {
    if (!host_.unpack_ordered() || !shm_) return;
    for (std::size_t m = 0; m < host_.recvs(); ++m)
      if (shm_->recv_shared(m)) shm_->post_consumed(m, clock_.generation());
  }

  mpi_messages mpi_;
  host_steps host_;
  shm_mailbox* const shm_;  // null unless some message goes through shared memory
  // shared-memory receives through the buffers (the direct ones are counted apart)
  const std::size_t shared_ = shm_ ? shm_->shared_recv_count() - shm_->direct_recv_count() : 0;
  std::vector<char> taken_;         // shared-memory receives of this exchange already seen
  std::size_t shm_arrived_ = 0;     // shared-memory receive messages complete so far
  std::vector<char> send_pending_;  // shared-memory sends not packed yet this exchange
  std::size_t sends_pending_ = 0;   // (their receivers were still reading the last one)
  std::vector<char> in_direct_, out_direct_;  // direct messages of this exchange not done yet
  std::size_t in_direct_left_ = 0, out_direct_left_ = 0;
  // Polls in a row (in wait(), or across test() calls) that moved nothing; a rank copies for a
  // receiver that has started only after push_patience of them.
  static constexpr int push_patience = 32;
  int idle_ = 0;
};

}  // namespace

std::unique_ptr<exchange_mode> make_host_mode(exchange_core& c) {
  return std::make_unique<host_mode>(c);
}

}  // namespace halox::detail
