#pragma once
/// @file
/// Point-to-point MPI messages whose sizes are known only when they are posted (a chain's
/// rounds), beside mpi_channels' persistent requests for messages fixed at set-up.
///
/// A message is cut as chunks.hpp cuts one (`piece_size`: pieces of at most max_piece_bytes,
/// since MPI counts are `int`), every piece under the message's tag, which MPI delivers in
/// order. The request lists grow to the largest round and are kept: a round that needs no more
/// pieces than an earlier one allocates nothing.

#include <cstddef>
#include <string_view>
#include <vector>

#include <mpi.h>

namespace halox::detail {

/// The nonblocking sends and receives of one round on one communicator (MPI_Isend, MPI_Irecv),
/// completed together. Every call goes through the one MPI check (mpi/check.hpp); `what` names
/// the messages in its errors ("MPI_Isend(WHAT)", "MPI_Waitall(WHAT receives)"), `part` the
/// part of halox that owns them.
class mpi_transfers {
 public:
  mpi_transfers(MPI_Comm comm, int rank, std::string_view part, const char* what)
      : comm_(comm), rank_(rank), part_(part), what_(what) {}

  /// Posts `bytes` bytes at `data` to `peer` under `tag`, in pieces. Nothing for 0 bytes.
  void send(const std::byte* data, std::size_t bytes, int peer, int tag);
  /// Posts the receive of `bytes` bytes into `data` from `peer` under `tag`, cut as the
  /// sender's send of the same size is. Nothing for 0 bytes.
  void receive(std::byte* data, std::size_t bytes, int peer, int tag);
  /// Whether every receive (send) posted since clear() has completed; with `block`, waits.
  bool receives_done(bool block) { return complete(recvs_, block, " receives"); }
  bool sends_done(bool block) { return complete(sends_, block, " sends"); }
  /// Forgets the requests of the last round (all complete); keeps the lists' memory.
  void clear() {
    sends_.clear();
    recvs_.clear();
  }

 private:
  void post(std::byte* data, std::size_t bytes, int peer, int tag, bool send);
  bool complete(std::vector<MPI_Request>& reqs, bool block, const char* which);
  void check(int rc, const char* call, const char* which, int peer) const;

  MPI_Comm comm_;
  int rank_;
  std::string_view part_;
  const char* what_;
  std::vector<MPI_Request> sends_, recvs_;
};

}  // namespace halox::detail
