#pragma once
/// @file
/// Set-up agreement between peers: before any transport is set up, each rank tells each of its
/// peers how many bytes it will send them and expects from them per exchange, and what it
/// declared (direction, stencil, global box, periodicity, fields). Ranks that disagree fail
/// together, with one message naming both ranks and what differs.

#include <mpi.h>

#include "program/program.hpp"

namespace halox::detail {

/// Compares this rank's messages and declaration with every peer's: O(peers) messages, one
/// non-blocking barrier and one all-reduce, nothing proportional to the number of ranks.
/// Collective over `comm`. Throws halox::error on every rank when any pair disagrees (the
/// lowest such rank's message, quoted by the others), before any message of the exchange is
/// sent.
void check_peer_agreement(MPI_Comm comm, const exchange_program& prog);

namespace testing {
/// Test-only: skip check_peer_agreement, so that tests can reach the transports' own size
/// checks and the run-time error paths. Must be the same on every rank.
extern bool skip_peer_agreement;
}  // namespace testing

}  // namespace halox::detail
