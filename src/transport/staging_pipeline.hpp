#pragma once
/// @file
/// Host staging of device messages in pieces (see chunks.hpp): the sender starts each piece's
/// MPI send as soon as its copy out of the device has run, the receiver copies each piece into
/// the device as it arrives, so copies and MPI transfers overlap. Everything (requests, stages,
/// events, streams) is prepared at set-up; an exchange allocates nothing.

#include <cstddef>
#include <string>
#include <vector>

#include "transport/chunks.hpp"
#include "transport/mpi_channels.hpp"
#include "transport/staging_copies.hpp"

namespace halox::detail {

class staging_pipeline {
 public:
  /// Over `ch`'s pieces (cut at the agreed chunk size): stages of up to `chunk` bytes out of
  /// `device_send` into `send`, pieces into `device_recv` from `recv` one by one when more than
  /// `chunk` bytes arrive in all (else one copy once all have arrived).
  staging_pipeline(mpi_channels& ch, std::size_t chunk, const std::byte* device_send,
                   std::byte* send, std::byte* device_recv, const std::byte* recv, int rank);

  /// Enqueues the copies out on `stream` (after the pack kernel), and starts the sends of
  /// stages already copied; the receives must be started.
  void start(void* stream);
  /// Moves the exchange on: starts the sends of copied stages, takes arrived pieces and
  /// enqueues their copies in. With `block`, until every send is started and every piece has
  /// arrived. True when both are so.
  bool progress(bool block);
  /// True when every send of this exchange is started.
  bool sends_started() const { return next_stage_ == stages_.size(); }
  /// After progress() returned true: makes `stream` wait for every copy in (the unpack follows).
  void join(void* stream) { copies_.join(stream); }
  /// One line for describe().
  std::string describe() const;

 private:
  mpi_channels& ch_;
  std::size_t chunk_;
  std::vector<stage> stages_;
  bool in_pieces_;
  staging_copies copies_;
  std::vector<int> done_;  // scratch for test_recv_pieces
  std::size_t next_stage_ = 0, arrived_ = 0;
};

}  // namespace halox::detail
