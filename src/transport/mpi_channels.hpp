#pragma once
/// @file
/// Point-to-point transport over MPI: persistent sends and receives per peer, prepared once.
///
/// The communicator comes from Boost.MPI; the steady-state calls are MPI's persistent requests
/// (`MPI_Startall`/`MPI_Waitany`) because Boost.MPI 1.74 heap-allocates a handler for every
/// `isend`/`irecv`, and halox promises no allocation per exchange.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <mpi.h>

#include "program/program.hpp"
#include "transport/chunks.hpp"

namespace halox::detail {

/// The persistent requests of one communication object: one per piece of each message (see
/// chunks.hpp), all under one tag, which MPI delivers in order.
class mpi_channels {
 public:
  mpi_channels() = default;
  /// Prepares the requests (no message moves). Messages are cut as split_messages(`chunk`)
  /// cuts them, which both sides of a message must agree on. `part` names the part of halox
  /// that owns them in MPI errors.
  mpi_channels(MPI_Comm comm, const std::vector<message>& sends, const std::byte* send_buf,
               const std::vector<message>& recvs, std::byte* recv_buf, std::size_t chunk = 0,
               std::string_view part = "MPI transport");
  ~mpi_channels();
  mpi_channels(const mpi_channels&) = delete;
  mpi_channels& operator=(const mpi_channels&) = delete;

  void start_recvs();
  /// Starts every piece of receive message m alone (rounds in which some peers take no part, as
  /// a chain's gathers; the receives not started are ignored by the waits and tests below).
  /// Receives from one peer are matched in the order they are started.
  void start_recv(std::size_t m);
  /// Starts every piece of send message m.
  void start_send(std::size_t m);
  /// Blocks until another receive message has fully arrived and returns its index, or -1 when
  /// every receive of this exchange has already been reported.
  int wait_recv();
  /// Reports (into `done`, room for every message) receive messages that have fully arrived
  /// since the last call, without blocking; returns how many.
  int test_recvs(int* done);
  void wait_sends();
  bool test_sends();

  /// Pieces, for a caller that moves each one as it goes (host staging by copies).
  const std::vector<piece>& send_pieces() const { return send_piece_; }
  const std::vector<piece>& recv_pieces() const { return recv_piece_; }
  void start_send_piece(std::size_t p);
  /// Blocks until another receive piece has arrived and returns its index, or -1 when every
  /// receive of this exchange has already been reported.
  int wait_recv_piece();
  /// Reports (into `done`, room for every piece) receive pieces that have arrived since the
  /// last call, without blocking; returns how many.
  int test_recv_pieces(int* done);
  /// For a wait that gave up (exchange_options::wait_timeout): the peers of the receive
  /// messages not complete and of the send messages MPI has not completed. Never blocks.
  void unfinished(std::vector<int>& recv_peers, std::vector<int>& send_peers) const;
  /// The same as one "rank P (MPI: what)" item per wait (carrier::waiting_for).
  void waiting_for(std::vector<std::string>& out) const;

 private:
  int finish_recv_request(int req, const MPI_Status& st);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  std::string_view part_;
  std::vector<piece> send_piece_, recv_piece_;  // one request each, same index
  std::vector<MPI_Request> send_req_, recv_req_;
  std::vector<int> send_first_;  // first request of send message m (size = messages + 1)
  std::vector<int> recv_first_;  // first request of receive message m (size = messages + 1)
  std::vector<int> recv_peer_;   // peer of each receive message
  std::vector<int> send_peer_;
  std::vector<int> recv_pieces_;  // pieces per receive message
  std::vector<int> recv_left_;    // pieces still to arrive, per receive message
  std::vector<int> scratch_;      // indices for MPI_Testsome
  std::vector<MPI_Status> statuses_;
};

}  // namespace halox::detail
