#pragma once
/// @file
/// Collective agreement on set-up errors, so that no rank goes on to exchange with a rank that
/// gave up.

#include <functional>

#include <boost/mpi/communicator.hpp>

namespace halox::detail {

/// Runs `check` on every rank; if it throws on any rank, every rank throws: the lowest failing
/// rank its own message, the others a halox::error that quotes it.
void agree(const boost::mpi::communicator& comm, const std::function<void()>& check);

}  // namespace halox::detail
