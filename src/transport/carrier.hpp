#pragma once
/// @file
/// The one interface of a transport inside an exchange. A carrier moves the messages the route
/// table gave its transport and owns its state for the exchange in flight; a mode
/// (src/exchange/*_mode.cpp) drives its carriers through the same steps every exchange g:
///
///   post_receives(g)    at start(), before the pack: peers may send to this rank now
///   clear_to_send(g, b) whether the receivers can take exchange g's messages (the pack may
///                       write them); with `b`, waits until they can
///   post_sends(g)       after the pack wrote exchange g's messages: they go
///   progress()          moves the exchange on without blocking (unpacks what arrived)
///   complete()          blocks until the carrier's part of exchange g is done
///
/// A stream-ordered carrier (NCCL) enqueues its work in post_sends and is done on the host once
/// it has; the GPU finishes it before the unpack kernel. Implementations: mpi_carrier,
/// shm_carrier, staging_pipeline (device messages staged through the host over MPI), peer_ipc
/// (CUDA IPC), nccl_carrier.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/nvtx.hpp"

namespace halox::detail {

/// What progress() did: whether anything moved (a message arrived, was copied or sent) and
/// whether the carrier's part of the exchange is done.
struct progress_report {
  bool moved = false;
  bool done = false;
};

/// The exchange's host steps, for carriers that pack and unpack messages themselves as they
/// go (message m: the program's send or receive message m).
class step_runner {
 public:
  virtual void pack(std::size_t m) const = 0;
  virtual void unpack(std::size_t m) const = 0;
  /// Reverse exchanges: every message arrives first, then all are unpacked in peer order (by
  /// the exchange, not the carrier).
  virtual bool ordered() const = 0;
  /// The exchange's NVTX range names, for a carrier that copies message m itself (pack: a send
  /// message) instead of running its steps.
  virtual const nvtx_names& ranges() const = 0;

 protected:
  ~step_runner() = default;
};

class carrier {
 public:
  explicit carrier(nvtx_transport t) : transport_(t) {}
  virtual ~carrier() = default;

  /// The exchange's NVTX names: post_receives, a blocking clear_to_send, post_sends and
  /// complete then run inside ranges "<label>: <transport> <step>" (core/nvtx.hpp).
  void use_nvtx(const nvtx_names* n) { nvtx_ = n != nullptr ? n : &nvtx_off(); }

  void post_receives(std::uint64_t g) {
    const nvtx_range r(*nvtx_, transport_, nvtx_step::post_receives);
    do_post_receives(g);
  }
  bool clear_to_send(std::uint64_t g, bool block) {
    if (!block) return do_clear_to_send(g, false);
    const nvtx_range r(*nvtx_, transport_, nvtx_step::clear_to_send);
    return do_clear_to_send(g, true);
  }
  void post_sends(std::uint64_t g) {
    const nvtx_range r(*nvtx_, transport_, nvtx_step::post_sends);
    do_post_sends(g);
  }
  progress_report progress() { return do_progress(); }
  void complete() {
    const nvtx_range r(*nvtx_, transport_, nvtx_step::complete);
    do_complete();
  }
  /// For a wait that gave up (exchange_options::wait_timeout): what this rank still waits for,
  /// one "rank P (transport: what)" item per wait, in `out`. Never blocks.
  virtual void waiting_for(std::vector<std::string>& out) const = 0;
  /// After an error: forget the exchange in flight (the object will not start another).
  virtual void abandon() {}

 private:
  // The steps, as each transport implements them (see above).
  virtual void do_post_receives(std::uint64_t g) = 0;
  virtual bool do_clear_to_send(std::uint64_t, bool) { return true; }
  virtual void do_post_sends(std::uint64_t g) = 0;
  virtual progress_report do_progress() = 0;
  virtual void do_complete() = 0;

  nvtx_transport transport_;
  const nvtx_names* nvtx_ = &nvtx_off();
};

}  // namespace halox::detail
