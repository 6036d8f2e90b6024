// Host fields only: messages through MPI and, between ranks of one node, shared memory.
//
// start() posts the MPI receives, packs and sends each MPI message, packs each shared-memory
// message whose receiver has consumed the copy of the buffer it reuses (the others later, in
// wait()/test()), and runs the local copies. wait()/test() unpack messages as they arrive,
// from either transport, and pack the deferred shared-memory messages.
#include "exchange_core.hpp"

#include <algorithm>

#include "halox/core/error.hpp"

namespace halox::detail {

namespace {

class host_path final : public exchange_path {
 public:
  explicit host_path(exchange_core& c)
      : exchange_path(c), taken_(c.prog.recvs.size(), 0), send_pending_(c.prog.sends.size(), 0) {
  }
  const char* name() const override { return "host"; }

  void start(stream_t) override {
    const auto& prog = c_.prog;
    c_.channels.start_recvs();
    for (std::size_t m = 0, k = 0; m < prog.sends.size(); ++m) {
      if (c_.shm && c_.shm->send_shared(m)) {  // packed as soon as its receiver is done
        send_pending_[m] = 1;
        ++sends_pending_;
      } else {
        c_.pack(m, c_.pack_steps());
        c_.channels.start_send(k++);  // channel messages keep the program's order
      }
    }
    for (const auto& op : prog.local_ops) run(op);
    std::fill(taken_.begin(), taken_.end(), 0);
    shm_arrived_ = 0;
    c_.begin_exchange();
    push_sends();
  }

  void wait(stream_t) override {
    receive(true);
    unpack_ordered();
    c_.channels.wait_sends();
  }

  bool test() override {
    if (!receive(false) || !c_.channels.test_sends()) return false;
    unpack_ordered();
    return true;
  }

  void abandon() override {
    std::fill(send_pending_.begin(), send_pending_.end(), 0);
    sends_pending_ = 0;
  }

 private:
  // Packs the shared-memory messages of this exchange whose receivers have unpacked the last
  // one; true when any was packed. Never waits: start() must not depend on a peer's progress.
  bool push_sends() {
    if (sends_pending_ == 0) return false;
    bool moved = false;
    for (std::size_t m = 0; m < send_pending_.size(); ++m) {
      if (!send_pending_[m] || !c_.shm->consumed(m, c_.generation)) continue;
      c_.pack(m, c_.pack_steps());
      c_.shm->post_ready(m, c_.generation);
      send_pending_[m] = 0;
      --sends_pending_;
      moved = true;
    }
    return moved;
  }

  // Shared-memory receives that have arrived; true when any did.
  bool take_shared() {
    const auto& prog = c_.prog;
    bool moved = false;
    for (std::size_t m = 0; shm_arrived_ < shared_ && m < prog.recvs.size(); ++m) {
      if (!c_.shm->recv_shared(m) || taken_[m] || !c_.shm->ready(m, c_.generation)) continue;
      if (!prog.ordered_unpack) {
        c_.unpack(m, c_.unpack_steps());
        c_.shm->post_consumed(m, c_.generation);
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
      const std::size_t before = c_.arrived;
      const bool shm_done = shm_arrived_ == shared_ && sends_pending_ == 0;
      // Block in MPI only when nothing else is left to poll.
      const bool mpi_done = c_.receive_mpi(block && shm_done);
      moved = moved || c_.arrived != before;
      if (mpi_done && shm_done) return true;
      if (!block) {
        if (!moved && c_.shm) yield_processor();
        return false;
      }
      if (!moved) spin_pause(spins);
    }
  }

  void unpack_ordered() {
    if (!c_.prog.ordered_unpack || c_.ordered_done) return;
    c_.unpack_ordered(c_.unpack_steps());
    if (c_.shm)
      for (std::size_t m = 0; m < c_.prog.recvs.size(); ++m)
        if (c_.shm->recv_shared(m)) c_.shm->post_consumed(m, c_.generation);
  }

  const std::size_t shared_ = c_.shm ? c_.shm->shared_recv_count() : 0;
  std::vector<char> taken_;         // shared-memory receives of this exchange already seen
  std::size_t shm_arrived_ = 0;     // shared-memory receive messages complete so far
  std::vector<char> send_pending_;  // shared-memory sends not packed yet this exchange
  std::size_t sends_pending_ = 0;   // (their receivers were still reading the last one)
};

}  // namespace

std::unique_ptr<exchange_path> make_host_path(exchange_core& c) {
  return std::make_unique<host_path>(c);
}

}  // namespace halox::detail
