// The exchange's host messages through shared memory (see transport/shm_carrier.hpp).
#include "transport/shm_carrier.hpp"

#include <algorithm>

#include "halox/core/format.hpp"

namespace halox::detail {

shm_carrier::shm_carrier(const shm_mailbox& box, const step_runner& steps,
                         const exchange_program& prog)
    : carrier(nvtx_transport::shm),
      box_(box),
      steps_(steps),
      prog_(prog),
      shared_(box.shared_recv_count() - box.direct_recv_count()),
      taken_(prog.recvs.size(), 0),
      send_pending_(prog.sends.size(), 0),
      in_direct_(prog.recvs.size(), 0),
      out_direct_(prog.sends.size(), 0) {}

void shm_carrier::do_post_receives(std::uint64_t g) {
  g_ = g;
  std::fill(taken_.begin(), taken_.end(), 0);
  arrived_ = 0;
  idle_ = 0;
  announce();
}

// Direct messages: this rank's owned cells hold exchange g's values (`ready`) and its halos
// may be written (`started`). Before anything else in start(), so that peers go on at once.
void shm_carrier::announce() {
  if (box_.direct_send_count() + box_.direct_recv_count() == 0) return;
  for (std::size_t m = 0; m < out_direct_.size(); ++m)
    if (box_.send_direct(m)) {
      box_.post_ready(m, g_);
      out_direct_[m] = 1;
      ++out_direct_left_;
    }
  for (std::size_t m = 0; m < in_direct_.size(); ++m)
    if (box_.recv_direct(m)) {
      box_.post_started(m, g_);
      in_direct_[m] = 1;
      ++in_direct_left_;
    }
}

void shm_carrier::do_post_sends(std::uint64_t) {
  for (std::size_t m = 0; m < send_pending_.size(); ++m)
    if (box_.send_shared(m) && !box_.send_direct(m)) {  // packed once its receiver is done
      send_pending_[m] = 1;
      ++sends_pending_;
    }
  push_sends();
}

// Direct messages into this rank's halos whose senders have started: copies each one not
// taken yet (or sees the sender's copy done). True when any finished.
bool shm_carrier::pull_direct() {
  bool moved = false;
  for (std::size_t m = 0; in_direct_left_ > 0 && m < in_direct_.size(); ++m) {
    if (!in_direct_[m]) continue;
    if (!box_.copied_recv(m, g_)) {
      if (!box_.ready(m, g_) || !box_.claim_recv(m, g_)) continue;
      if (!pulled(m)) steps_.unpack(m);  // the sender's owned cells into this rank's halo
      box_.post_consumed(m, g_);
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
bool shm_carrier::push_direct(bool copy) {
  bool moved = false;
  for (std::size_t m = 0; out_direct_left_ > 0 && m < out_direct_.size(); ++m) {
    if (!out_direct_[m]) continue;
    if (!box_.copied_send(m, g_)) {
      if (!copy || !box_.receiver_started(m, g_) || !box_.claim_send(m, g_)) continue;
      if (!pushed(m)) steps_.pack(m);  // this rank's owned cells into the receiver's halo
      box_.post_copied_send(m, g_);
    }
    out_direct_[m] = 0;
    --out_direct_left_;
    moved = true;
  }
  return moved;
}

// Packs the messages of this exchange whose receivers have unpacked the last one; true when
// any was packed. Never waits: start() must not depend on a peer's progress.
bool shm_carrier::push_sends() {
  if (sends_pending_ == 0) return false;
  bool moved = false;
  for (std::size_t m = 0; m < send_pending_.size(); ++m) {
    if (!send_pending_[m] || !box_.consumed(m, g_)) continue;
    steps_.pack(m);
    box_.post_ready(m, g_);
    send_pending_[m] = 0;
    --sends_pending_;
    moved = true;
  }
  return moved;
}

// Receives through the buffers that have arrived; true when any did.
bool shm_carrier::take_shared() {
  bool moved = false;
  for (std::size_t m = 0; arrived_ < shared_ && m < taken_.size(); ++m) {
    if (!box_.recv_shared(m) || box_.recv_direct(m) || taken_[m] || !box_.ready(m, g_)) continue;
    if (!steps_.ordered()) {
      steps_.unpack(m);
      box_.post_consumed(m, g_);
    }
    taken_[m] = 1;
    ++arrived_;
    moved = true;
  }
  return moved;
}

// Cross-memory copies of direct messages (shm_mailbox::pull/push), each in the message's NVTX
// range as its steps would be; false, having done nothing, where the steps copy it.
bool shm_carrier::pulled(std::size_t m) const {
  if (!box_.cross_recv(m)) return false;
  const nvtx_range range(steps_.ranges(), false, m);
  return box_.pull(m);
}

bool shm_carrier::pushed(std::size_t m) const {
  if (!box_.cross_send(m)) return false;
  const nvtx_range range(steps_.ranges(), true, m);
  return box_.push(m);
}

bool shm_carrier::done() const {
  return arrived_ == shared_ && sends_pending_ == 0 && in_direct_left_ == 0 &&
         out_direct_left_ == 0;
}

progress_report shm_carrier::do_progress() {
  bool moved = push_sends();
  moved = take_shared() || moved;
  // Copies into this rank's halos first; copies for receivers only after a while with nothing
  // else to do (a receiver that has just started is about to copy its own: each rank of a pair
  // then copies its halos, both at once, instead of one rank both ways).
  moved = pull_direct() || moved;
  moved = push_direct(!moved && idle_ >= push_patience) || moved;
  idle_ = moved ? 0 : idle_ + 1;
  return {moved, done()};
}

void shm_carrier::do_complete() {
  for (int spins = 0;;) {
    const progress_report r = progress();
    if (r.done) return;
    if (!r.moved) spin_pause(spins);
  }
}

void shm_carrier::consumed_all() {
  for (std::size_t m = 0; m < taken_.size(); ++m)
    if (box_.recv_shared(m)) box_.post_consumed(m, g_);
}

void shm_carrier::abandon() {
  std::fill(send_pending_.begin(), send_pending_.end(), 0);
  sends_pending_ = 0;
  std::fill(in_direct_.begin(), in_direct_.end(), 0);
  std::fill(out_direct_.begin(), out_direct_.end(), 0);
  in_direct_left_ = out_direct_left_ = 0;
}

void shm_carrier::waiting_for(std::vector<std::string>& out) const {
  for (std::size_t m = 0; m < taken_.size(); ++m)
    if (box_.recv_shared(m) && !box_.recv_direct(m) && !taken_[m])
      out.push_back(
          format("rank {} (shared memory: its message has not arrived)", prog_.recvs[m].peer));
    else if (in_direct_[m])
      out.push_back(format("rank {} (shared memory, one copy: it has not started this exchange)",
                           prog_.recvs[m].peer));
  for (std::size_t m = 0; m < send_pending_.size(); ++m)
    if (send_pending_[m])
      out.push_back(format("rank {} (shared memory: it has not read this rank's last message)",
                           prog_.sends[m].peer));
    else if (out_direct_[m])
      out.push_back(format("rank {} (shared memory, one copy: it has not started this exchange)",
                           prog_.sends[m].peer));
}

}  // namespace halox::detail
