#pragma once
// The one check of every MPI call in halox's sources (beside gpu/check.hpp, its CUDA twin): a
// failed call becomes a halox::error naming the rank, the call, the peer, the part of halox that
// made it and MPI's own text. (A call returns its error only where the communicator's error
// handler is MPI_ERRORS_RETURN, as mpi_channels and the chain set on theirs.)
#include <mpi.h>

#include <string>
#include <string_view>

#include "halox/core/error.hpp"

namespace halox::detail::mpi {

/// MPI's text for error code `rc` ("MPI_ERR_RANK: invalid rank").
inline std::string error_text(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) return format("MPI error code {}", rc);
  return std::string(text, std::size_t(len));
}

/// Throws the halox::error of a failed call (see check).
[[noreturn]] inline void fail_call(int rc, std::string_view call, int rank, std::string_view part,
                                   int peer) {
  const std::string who = rank >= 0 ? format("rank {}: ", rank) : std::string();
  const std::string with = peer >= 0 ? format(" (peer {})", peer) : std::string();
  const std::string in = part.empty() ? std::string() : format(" ({})", part);
  fail("{}{}{} failed{}: {}", who, call, with, in, error_text(rc));
}

/// Throws halox::error unless `rc` is MPI_SUCCESS:
/// "rank R: CALL (peer P) failed (PART): MPI's text". The rank part is left out where `rank` is
/// negative (not known yet), the peer part where `peer` is negative (a call on no single peer),
/// the part where `part` is empty. `part` says which part of halox made the call
/// ("shared-memory transport set-up").
inline void check(int rc, std::string_view call, int rank, std::string_view part = {},
                  int peer = -1) {
  if (rc != MPI_SUCCESS) fail_call(rc, call, rank, part, peer);
}

/// Whether request `r` is active and not complete yet; never blocks (MPI_Request_get_status
/// neither frees nor deactivates it). For reports of what a wait that gave up still waits for.
inline bool pending(MPI_Request r) {
  int flag = 1;
  return r != MPI_REQUEST_NULL &&
         MPI_Request_get_status(r, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && !flag;
}

/// Cancels and completes `r` where it is still pending (a receive an exchange that gave up
/// left posted). For destructors: unchecked, as they cannot report.
inline void cancel_pending(MPI_Request& r) {
  if (pending(r) && MPI_Cancel(&r) == MPI_SUCCESS) (void)MPI_Wait(&r, MPI_STATUS_IGNORE);
}

}  // namespace halox::detail::mpi

namespace halox::detail::mpi {

/// Whether MPI_Finalize has run (MPI_Finalized may be called at any time).
inline bool finalized() {
  int done = 0;
  return MPI_Finalized(&done) == MPI_SUCCESS && done != 0;
}

}  // namespace halox::detail::mpi
