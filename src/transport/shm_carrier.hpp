#pragma once
/// @file
/// The exchange's host messages between ranks of one node (shm_mailbox's segments and flags),
/// driven as a carrier: messages packed into a shared buffer and unpacked straight out of it,
/// and direct messages copied from the sender's fields into the receiver's halos by whichever
/// of the two ranks gets there first.
///
/// post_receives() says that this rank has started: its owned cells may be read and its halos
/// written by the direct messages' other rank. post_sends() packs each shared-buffer message
/// whose receiver has consumed the copy of the buffer it reuses (the others later, in
/// progress()); it copies no direct message, so that a peer already waiting copies them while
/// this rank computes. progress() unpacks messages as they arrive, packs the deferred ones,
/// copies the direct messages into this rank's halos whose senders have started, and, where a
/// receiver has started but not copied yet, copies its message for it: a rank's completion
/// never waits for a peer to reach its own wait.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "transport/carrier.hpp"
#include "transport/shm_mailbox.hpp"

namespace halox::detail {

class shm_carrier final : public carrier {
 public:
  /// Over the program's `sends` and `recvs` send and receive messages, those `box` carries.
  shm_carrier(const shm_mailbox& box, const step_runner& steps, const exchange_program& prog);

  void do_post_receives(std::uint64_t g) override;
  void do_post_sends(std::uint64_t g) override;
  progress_report do_progress() override;
  void do_complete() override;
  void waiting_for(std::vector<std::string>& out) const override;
  void abandon() override;
  /// Reverse exchanges: the exchange unpacked every message (in peer order); their buffers are
  /// free for the senders' next exchange.
  void consumed_all();

 private:
  void announce();
  bool pull_direct();
  bool push_direct(bool copy);
  bool push_sends();
  bool take_shared();
  bool pulled(std::size_t m) const;
  bool pushed(std::size_t m) const;
  bool done() const;

  const shm_mailbox& box_;
  const step_runner& steps_;
  const exchange_program& prog_;
  std::uint64_t g_ = 0;  // the exchange in flight
  // shared-memory receives through the buffers (the direct ones are counted apart)
  const std::size_t shared_;
  std::vector<char> taken_;         // shared-memory receives of this exchange already seen
  std::size_t arrived_ = 0;         // shared-memory receive messages complete so far
  std::vector<char> send_pending_;  // shared-memory sends not packed yet this exchange
  std::size_t sends_pending_ = 0;   // (their receivers were still reading the last one)
  std::vector<char> in_direct_, out_direct_;  // direct messages of this exchange not done yet
  std::size_t in_direct_left_ = 0, out_direct_left_ = 0;
  // Polls in a row that moved nothing; a rank copies for a receiver that has started only
  // after push_patience of them.
  static constexpr int push_patience = 32;
  int idle_ = 0;
};

}  // namespace halox::detail
