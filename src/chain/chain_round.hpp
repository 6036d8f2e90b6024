#pragma once
// A chain round as its round modes see it (private to src/chain). The protocol
// (chain_exchange.cpp) fills in what each side sends and reads each arrived size; a round mode
// (chain_mpi.cpp, chain_nccl.cpp) moves the sizes first, then the data of exactly the announced
// sizes, over the exchanges' own transports in src/transport (mpi_channels for the sizes and
// mpi_transfers for the data; nccl_carrier for both), the way an exchange_mode drives its
// carriers for an exchange.
#include <cstddef>
#include <cstdint>
#include <memory>

#include <boost/mpi/communicator.hpp>

#include "halox/core/stream.hpp"

namespace halox::detail {

class chain_stream;
class nccl_comm;

// A size message carrying this instead of a count: the sender rejected its own payload (or, in
// a gather, has no context to pass on).
inline constexpr std::uint64_t chain_rejected = ~std::uint64_t(0);
// A size message is two words: the count (or `chain_rejected`) and the call (chain_call.hpp).
inline constexpr int chain_head_words = 2;
inline constexpr std::size_t chain_head_bytes = chain_head_words * sizeof(std::uint64_t);

// Messages of a round go in one order on every rank: to the left then to the right; from the
// right (what moves leftwards) then from the left. So the k-th message between two ranks meets
// the k-th receive even when the left and the right neighbour are the same rank (two ranks,
// periodic) or this rank itself (one rank).
inline constexpr int chain_recv_order[2] = {1, 0};

// One neighbour: what goes to it and what comes from it in the current round.
struct chain_side {
  int peer = -1;                         // -1: no neighbour on this side
  bool active = false;                   // takes part in this round (a gather skips finished pairs)
  std::uint64_t send_count = 0;          // elements, or `chain_rejected`
  const std::byte* send_from = nullptr;  // the payload (host or device memory, as the chain's)
  std::uint64_t send_head[chain_head_words] = {0, 0};  // count and call; read until the end
  std::uint64_t recv_head[chain_head_words] = {0, 0};  // written by the round mode
  std::uint64_t recv_count = 0;  // elements announced and received (0 after `chain_rejected`)
  bool mismatch = false;         // the neighbour made another call
  bool rejected_in = false;      // the neighbour announced `chain_rejected`

  // Whether data goes out on this side in this round.
  bool sends_data() const { return active && send_count != chain_rejected && send_count > 0; }
};

// The protocol's side of a round, for its round mode.
class chain_round {
 public:
  chain_side side[2];  // 0: left, 1: right
  std::size_t elem = 1;

  // The size from side `s` is in its recv_head: checks the call and the count and sets
  // recv_count, the elements the round mode receives (0: none). Throws on a count no sender can
  // have announced.
  virtual void on_size(int s) = 0;
  virtual ~chain_round() = default;
};

// Runs a chain's rounds over one transport's carrier, as an exchange_mode runs an exchange's:
// start() posts the round, progress() moves it on. Both sides' heads travel in every round on each
// active side, the data only where sends_data() and recv_count say so.
class round_mode {
 public:
  virtual ~round_mode() = default;
  // Posts the round on the active sides: the sizes, then (MPI) the data. `after`: the user's
  // stream whose work comes first (device chains; null for none).
  virtual void start(stream_t after) = 0;
  // Moves the round on; with `block`, to its end. True once every size and message of the
  // round has arrived and gone and the data has been delivered (`before` set: the user's
  // stream waits for the delivery instead of the host).
  virtual bool progress(bool block, stream_t before) = 0;
  // Where the data from side `s` of the last round lies (the chain's memory space).
  virtual std::byte* received(int s) const = 0;
  // The NCCL communicator that carries the rounds, or null.
  virtual const nccl_comm* nccl() const { return nullptr; }
};

// Plain MPI on `comm` (the chain's duplicate); device chains (`gpu` set) stage payloads and
// received data through pinned memory on its stream.
std::unique_ptr<round_mode> make_mpi_rounds(chain_round& r, MPI_Comm comm, int rank,
                                            chain_stream* gpu);
// NCCL groups between device buffers on `gpu`'s stream. Collective over `comm`: allocates the
// heads' memory (an error on one rank is an error on all), then the shared NCCL communicator,
// connected to the neighbours.
std::unique_ptr<round_mode> make_nccl_rounds(chain_round& r, const boost::mpi::communicator& comm,
                                             chain_stream& gpu);

}  // namespace halox::detail
