#pragma once
/// @file
/// Host staging of device messages in pieces (see chunks.hpp): the sender starts each piece's
/// MPI send as soon as its copy out of the device has run, the receiver copies each piece into
/// the device as it arrives, so copies and MPI transfers overlap. Everything (requests, stages,
/// events, streams) is prepared at set-up; an exchange allocates nothing.

#include <cstddef>
#include <string>
#include <vector>

#include "gpu/stream_source.hpp"
#include "transport/carrier.hpp"
#include "transport/chunks.hpp"
#include "transport/mpi_channels.hpp"
#include "transport/staging_copies.hpp"

namespace halox::detail {

/// Device messages staged through pinned host memory over MPI, as a carrier: post_sends()
/// enqueues the copies out of the device on halox's stream (after the pack kernel) and starts
/// each piece's send as soon as its copy has run, taking arrived pieces meanwhile (each copied
/// into the device at once); it returns once every send is started. progress()/complete() take
/// the remaining pieces; join() then orders the unpack after their copies.
class staging_pipeline final : public carrier {
 public:
  /// Over `ch`'s pieces (cut at the agreed chunk size): stages of up to `chunk` bytes out of
  /// `device_send` into `send`, pieces into `device_recv` from `recv` one by one when more than
  /// `chunk` bytes arrive in all (else one copy once all have arrived); copies on `on`'s stream.
  staging_pipeline(mpi_channels& ch, const stream_source& on, std::size_t chunk,
                   const std::byte* device_send, std::byte* send, std::byte* device_recv,
                   const std::byte* recv, int rank);

  void do_post_receives(std::uint64_t g) override;
  void do_post_sends(std::uint64_t g) override;
  progress_report do_progress() override;
  void do_complete() override;
  void waiting_for(std::vector<std::string>& out) const override;
  /// After complete() (or progress() reported done): makes `stream` wait for every copy in
  /// (the unpack follows).
  void join(void* stream) { copies_.join(stream); }
  /// One line for describe().
  std::string describe() const;

 private:
  /// Starts the sends of copied stages, takes arrived pieces and enqueues their copies in.
  /// With `block`, until every send is started and every piece has arrived. True when both are
  /// so.
  bool advance(bool block);
  bool sends_started() const { return next_stage_ == stages_.size(); }

  const stream_source& on_;
  mpi_channels& ch_;
  std::size_t chunk_;
  std::vector<stage> stages_;
  bool in_pieces_;
  staging_copies copies_;
  std::vector<int> done_;  // scratch for test_recv_pieces
  std::size_t next_stage_ = 0, arrived_ = 0;
};

}  // namespace halox::detail
