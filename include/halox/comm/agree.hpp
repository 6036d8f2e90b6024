#pragma once
/// @file
/// Collective agreement on set-up errors, so that no rank goes on to exchange with a rank that
/// gave up.

#include <climits>
#include <exception>
#include <string>

#include <boost/mpi/collectives.hpp>
#include <boost/mpi/communicator.hpp>
#include <boost/serialization/string.hpp>

#include "halox/core/error.hpp"

namespace halox::detail {

/// Runs `check` on every rank; if it throws on any rank, every rank throws: the lowest failing
/// rank its own message, the others a halox::error that quotes it.
template <class F>
void agree(const boost::mpi::communicator& comm, F&& check) {
  std::string msg;
  try {
    check();
  } catch (const std::exception& e) {
    msg = e.what();  // any failure, so no rank is left waiting in the reduction below
    if (msg.rfind("halox: ", 0) != 0)
      msg = "halox: rank " + std::to_string(comm.rank()) + ": " + msg;
  }
  const int mine = msg.empty() ? INT_MAX : comm.rank();
  const int first = boost::mpi::all_reduce(comm, mine, boost::mpi::minimum<int>());
  if (first == INT_MAX) return;
  boost::mpi::broadcast(comm, msg, first);
  if (first == comm.rank()) throw error(msg.substr(std::string("halox: ").size()));
  throw error(detail::format("rank {}: stopped because another rank rejected its input: {}",
                             comm.rank(), msg.substr(std::string("halox: ").size())));
}

}  // namespace halox::detail
