#pragma once
/// @file
/// The communication object: runs a prepared exchange, blocking or split-phase.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <boost/mpi/communicator.hpp>

#include "halox/core/stream.hpp"
#include "halox/exchange/exchange_stats.hpp"

namespace halox {

namespace detail {

struct exchange_state;
struct exchange_program;

}  // namespace detail

class exchange_handle;
class halo_exchange;

namespace detail {
/// Wraps a compiled program in its communication object (the last step of make_exchange).
halo_exchange make_halo_exchange(const boost::mpi::communicator& comm, exchange_program program);
}  // namespace detail

/// Exchanges the halos of a fixed set of fields. Build it with `halox::make_exchange`; every
/// rank of the domain's communicator must build it (collectively, with the same stencil and
/// the same field types in the same order) and run the same exchanges.
///
/// Each object owns a duplicate of the domain's communicator, so several objects may have
/// exchanges in flight at once. After construction an exchange allocates nothing and does no
/// plan work: it packs, posts one message per peer, copies local pieces and unpacks.
class halo_exchange {
 public:
  /// An empty object, to be assigned one from make_exchange (a member built after its domain,
  /// for example). Every call but `in_flight()`, `empty()` and assignment throws halox::error.
  halo_exchange() noexcept;
  /// Completes an exchange still in flight, then releases the MPI requests. Destroy exchange
  /// objects before MPI_Finalize: one destroyed after it says so on stderr and leaks its MPI and
  /// GPU resources instead of crashing.
  ~halo_exchange();
  halo_exchange(halo_exchange&&) noexcept;
  halo_exchange& operator=(halo_exchange&&) noexcept;

  /// Blocking exchange: returns when every halo cell of every field is up to date.
  void exchange();
  /// Starts an exchange: posts receives, packs and sends, copies local pieces. Halo cells are
  /// valid after the handle's `wait()` (or a `test()` that returned true); interior cells must
  /// not change until then. Throws halox::error if this object's previous exchange is still in
  /// flight.
  ///
  /// Device fields: packing runs on halox's own (blocking) CUDA stream, so it sees the work on
  /// the legacy default stream but not that on other streams — synchronise those first, or use
  /// schedule_exchange(). `start()` returns after the pack kernel has finished when there are
  /// messages to send (MPI reads its output); `wait()` returns after the unpack kernel has
  /// finished.
  [[nodiscard]] exchange_handle start();
  /// Stream-ordered exchange, step one: packing waits for the work already on `stream` (an
  /// event, no host wait on the user's stream itself), then the sends are posted. Returns once
  /// they are posted; the host waits only for the pack kernel, whose output MPI must read (not
  /// at all when this rank sends nothing: only local copies).
  /// Host fields in the same object are packed on the CPU as in start().
  ///
  /// Under CUDA stream capture (docs/graphs.md) the exchange's kernels are recorded with the
  /// greatest priority of halox's stream: instantiate the graph with
  /// cudaGraphInstantiateFlagUseNodePriority, or they run at the launch stream's priority and
  /// wait behind the kernels you overlap with them.
  ///
  /// A null `stream` is CUDA's legacy default stream (`cudaStreamLegacy`), in stream order as
  /// for any other stream; code built with `--default-stream per-thread` passes
  /// `cudaStreamPerThread`.
  void schedule_exchange(stream_t stream);
  /// Stream-ordered exchange, step two: waits for the messages, enqueues the unpack kernel and
  /// makes `stream` wait for it (an event). Returns without waiting for the unpack; work
  /// enqueued on `stream` afterwards sees the halos. The next exchange on this object reuses
  /// the buffers only after that unpack has run.
  void schedule_wait(stream_t stream);
  /// Whether an exchange started by `start()` has not completed yet (false for an empty object).
  bool in_flight() const;
  /// Whether this object holds no exchange (default-constructed or moved from).
  bool empty() const noexcept { return s_ == nullptr; }
  /// Peers, message sizes and copy counts of this rank, one line each.
  std::string describe() const;
  /// What this object has done on this rank: exchanges, host time in set-up, start and wait,
  /// sampled GPU time, waits that found the exchange complete, bytes per route. Kept always,
  /// at the cost of two clock readings per call; with `HALOX_REPORT=prefix` every object also
  /// appends it, as one JSON line, to `prefix.<world rank>.jsonl` when destroyed
  /// (tools/halox-report reads them; docs/observing.md).
  exchange_stats stats() const;

 private:
  friend class exchange_handle;
  // Built by make_exchange / make_reverse_exchange (detail::make_halo_exchange).
  halo_exchange(const boost::mpi::communicator& comm, detail::exchange_program program);
  friend halo_exchange detail::make_halo_exchange(const boost::mpi::communicator& comm,
                                                  detail::exchange_program program);
  detail::exchange_state& live() const;
  std::unique_ptr<detail::exchange_state> s_;
};

/// The in-flight part of a split-phase exchange.
class exchange_handle {
 public:
  /// Waits for every message, unpacking each as it arrives. Idempotent; a no-op once this
  /// exchange has completed (even if the object has started a newer one since).
  void wait();
  /// Unpacks what has arrived; true when the exchange is complete. Never blocks.
  bool test();

 private:
  friend class halo_exchange;
  exchange_handle(detail::exchange_state* s, std::uint64_t generation)
      : s_(s), generation_(generation) {}
  detail::exchange_state* s_;  // must not outlive the halo_exchange that made it
  std::uint64_t generation_;
};

}  // namespace halox
