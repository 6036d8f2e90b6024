#pragma once
/// @file
/// Node-local transport for host fields. A message goes one of two ways:
///
/// - **one copy** where the fields on both sides are memfd memory (`make_field`, or wrapped
///   arrays from node_shared_allocator; see allocate_shareable): each rank maps the other's field
///   memory, and the message is copied straight from the sender's owned cells into the receiver's
///   halo by whichever rank gets to it first once both have started the exchange (`ready`,
///   `started`, `claim`, `copied` counters in the sender's segment; see host_mode.cpp for who
///   copies when). The copies are matched as CUDA IPC's are (program/direct_writes.hpp) and run as
///   the message's placed pack or unpack steps;
/// - **two copies** otherwise: the sender packs into a send buffer that lives in shared memory
///   and the receiver unpacks straight out of it, with `ready` (packed) and `consumed`
///   (unpacked, the slot may be reused).
///
/// Wrapped memory a peer cannot map (the application's own, not from node_shared_allocator)
/// takes two copies, or, with `shm_cross_memory`, one copy by cross-memory attach
/// (transport/cross_memory.hpp) where the system allows it.
///
/// Either way no MPI message per exchange. Set-up is collective: each rank's send buffer
/// becomes a `memfd` mapping; its receivers map it through `/proc/<pid>/fd/<fd>` and say
/// whether that worked, so every message either goes through shared memory on both sides or
/// through MPI on both. Where a system forbids opening another process's descriptors (ptrace
/// scope, `hidepid`, containers) the pair falls back to MPI and describe() says why.
///
/// Each send buffer exists twice in the segment and exchanges alternate between the copies
/// (exchange g uses copy g mod 2), so a sender packs exchange g once its receiver has unpacked
/// exchange g - 2. Where both ranks of a pair send to each other that has always happened when
/// the sender starts g (it has received the receiver's g - 1, so the receiver finished g - 2):
/// starting an exchange never waits for a peer. A one-way pair whose sender runs two exchanges
/// ahead packs later, in its own wait() or test(), without waiting in start().

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <mpi.h>

#include "program/direct_writes.hpp"
#include "program/message_buffers.hpp"
#include "program/placement.hpp"
#include "program/program.hpp"
#include "transport/cross_memory.hpp"

namespace halox::detail {

class route_table;

class shm_mailbox {
 public:
  /// Sets up shared-memory messages for a host-only exchange (no device fields; `bufs`: the
  /// buffers its steps point into): the messages
  /// the route table sends through shared memory (both ranks of the pair allow it, see
  /// routes.hpp), where the receiver can map the sender's buffer (else the pair falls back to
  /// MPI: the set-up's route decision takes that outcome into the table, route_table::settle_shm).
  /// The send buffer then lives in shared memory (every message, MPI ones too, see send_buffer())
  /// and shared-memory messages are unpacked straight out of the senders' buffers (see placed()).
  /// Returns null when no message of this rank goes through shared memory and no pair fell back.
  /// Collective over `comm` whenever the program has no device fields. A message whose size differs
  /// between the two plans goes neither way: `problem` then says so, for the caller to raise on
  /// every rank once set-up is complete.
  static std::unique_ptr<shm_mailbox> attach(MPI_Comm comm, const exchange_program& prog,
                                             const message_buffers& bufs, const route_table& routes,
                                             std::string& problem);
  ~shm_mailbox();
  shm_mailbox(const shm_mailbox&) = delete;
  shm_mailbox& operator=(const shm_mailbox&) = delete;

  /// Whether send / receive message `m` (the program's index) uses shared memory.
  bool send_shared(std::size_t m) const { return send_slot_[m] >= 0; }
  bool recv_shared(std::size_t m) const { return recv_slot_[m] >= 0; }
  /// The messages that still travel through MPI.
  const std::vector<message>& mpi_sends() const { return mpi_sends_; }
  const std::vector<message>& mpi_recvs() const { return mpi_recvs_; }
  std::size_t shared_recv_count() const { return shared_recvs_; }

  /// Sender, exchange `g` (from 1): whether the receiver has consumed exchange g - 2, so that
  /// message `send` of exchange g may be packed into copy g mod 2 (never blocks).
  bool consumed(std::size_t send, std::uint64_t g) const;
  /// Where the messages of exchanges that use copy `copy` (g mod 2) of the buffers are: every
  /// send message in this rank's segment, each shared receive message in its sender's, and the
  /// direct messages in the fields (their fused copies, the same for both copies).
  placement placed(const exchange_program& prog, int copy) const;
  /// The send buffer in shared memory (MPI sends its messages from here too); null when no
  /// message of this rank goes through shared memory.
  std::byte* send_buffer() const { return send_data_; }
  /// How shared-memory messages travel, for describe().
  std::string how() const;
  /// Why messages to or from a node-local peer went through MPI after all (the receiver could
  /// not map its sender's buffer), by peer.
  const std::map<int, std::string>& fallbacks() const { return fallback_; }
  /// Sender: message `send` of exchange `g` is packed.
  void post_ready(std::size_t send, std::uint64_t g) const;
  /// Receiver: whether message `recv` of exchange `g` is packed (never blocks).
  bool ready(std::size_t recv, std::uint64_t g) const;
  /// Receiver: message `recv` of exchange `g` is unpacked; the sender may reuse its buffer.
  void post_consumed(std::size_t recv, std::uint64_t g) const;

  /// One copy instead of two: a message whose fields on both sides are halox's own (node-shared)
  /// memory goes straight from the sender's owned cells into the receiver's halo, copied by
  /// whichever of the two ranks gets to it first. `ready` then says the sender has started the
  /// exchange (its owned cells hold this exchange's values), `started` that the receiver has
  /// (its halo may be written), `claim` which rank copies, and `consumed` that the copy is done.
  /// The copies of a direct message are its placed pack and unpack steps (see placed() and
  /// program/direct_writes.hpp): the sender's from its field into the receiver's (mapped here),
  /// the receiver's from the sender's field (mapped) into its own.
  bool send_direct(std::size_t m) const {
    return m < direct_.send_direct.size() && direct_.send_direct[m];
  }
  bool recv_direct(std::size_t m) const {
    return m < direct_.recv_direct.size() && direct_.recv_direct[m];
  }
  /// Receiver: it has started exchange `g` (its halo may be written).
  void post_started(std::size_t recv, std::uint64_t g) const;
  /// Sender: whether the receiver of `send` has started exchange `g`.
  bool receiver_started(std::size_t send, std::uint64_t g) const;
  /// Either side: takes the copy of exchange `g` of the message; true for exactly one of the
  /// two ranks (the other then waits for `consumed`).
  bool claim_send(std::size_t send, std::uint64_t g) const;
  bool claim_recv(std::size_t recv, std::uint64_t g) const;
  /// Either side: the copy of exchange `g` is done.
  void post_copied_send(std::size_t send, std::uint64_t g) const;
  bool copied_send(std::size_t send, std::uint64_t g) const;
  bool copied_recv(std::size_t recv, std::uint64_t g) const;
  /// Either side, a direct message whose peer side is memory halox does not own (wrapped
  /// fields): runs its copy by cross-memory attach (transport/cross_memory.hpp) and returns
  /// true; false, having done nothing, for any other message (its placed steps copy it).
  /// Whether push(send) / pull(recv) copies that message (cross-memory attach).
  bool cross_send(std::size_t send) const {
    return send < cross_send_.size() && cross_send_[send].pid != 0;
  }
  bool cross_recv(std::size_t recv) const {
    return recv < cross_recv_.size() && cross_recv_[recv].pid != 0;
  }
  bool push(std::size_t send) const;
  bool pull(std::size_t recv) const;
  std::size_t direct_send_count() const { return direct_sends_; }
  std::size_t direct_recv_count() const { return direct_recvs_; }

  struct impl;
  struct offer;

 private:
  shm_mailbox() = default;
  int take_offer(std::size_t k, const offer& o, const message& m, int me, std::string& problem);
  void take_reply(std::size_t k, bool offered, int reply, const message& m, std::byte* segment,
                  int me, std::string& problem);
  void unshared(std::size_t ns, std::size_t nr);
  void go_direct(MPI_Comm comm, const exchange_program& prog, const message_buffers& bufs, int me);
  std::byte* map_peer_field(const export_handle& block);
  std::byte* cross_address(long long pid, unsigned long long addr);
  void go_cross(const exchange_program& prog, const std::vector<message>& msgs,
                const std::vector<std::size_t>& at,
                const std::vector<std::vector<direct_region>>& peer, bool send);
  std::unique_ptr<impl> p_;
  std::vector<int> send_slot_, recv_slot_;  // -1: through MPI
  std::size_t send_shift_ = 0;              // from copy 0 of the send buffer to copy 1
  std::vector<std::size_t> recv_shift_;     // the same, in each sender's buffer
  std::byte* send_data_ = nullptr;          // copy 0 of the send buffer in this rank's segment
  std::vector<std::byte*> recv_data_;       // copy 0 of each shared receive message
  std::vector<std::uint64_t*> send_ready_, send_consumed_, recv_ready_, recv_consumed_;
  placement direct_;  // the direct messages: flags and fused copies (no buffer addresses)
  std::size_t direct_sends_ = 0, direct_recvs_ = 0;
  std::vector<cross_copy> cross_send_, cross_recv_;  // pid 0: not by cross-memory attach
  std::size_t cross_messages_ = 0;
  bool cross_on_ = false;
  int me_ = 0;
  std::string cross_refused_;  // why cross-memory attach was refused, where it was
  std::vector<message> mpi_sends_, mpi_recvs_;
  std::size_t shared_recvs_ = 0;
  std::map<int, std::string> fallback_;
};

namespace testing {
/// Test-only: behave as if the system forbade opening peers' buffers (as `ptrace` scope or
/// `hidepid` can), to exercise the fallback to MPI. Per rank.
extern bool deny_peer_segments;
}  // namespace testing

/// Yields the processor while spinning on shared-memory counters (ranks may outnumber cores).
void spin_pause(int& spins);
/// Lets another runnable process have this core (a polling loop's peer may need it).
void yield_processor();

}  // namespace halox::detail
