// Collective agreement on set-up errors and on the arguments of a domain's constructor.

#include <climits>
#include <exception>
#include <string>

#include <boost/mpi/collectives.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include "halox/comm/agree.hpp"
#include "halox/comm/settings_agreement.hpp"
#include "halox/core/error.hpp"

namespace halox::detail {

void agree(const boost::mpi::communicator& comm, const std::function<void()>& check) {
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

void agree_on_settings(const boost::mpi::communicator& comm, const char* what, std::uint64_t hash,
                       const std::function<settings_list()>& describe) {
  // min(hash) and min(~hash) = ~max(hash) in one reduction
  const std::uint64_t in[2] = {hash, ~hash};
  std::uint64_t out[2] = {0, 0};
  boost::mpi::all_reduce(comm, in, 2, out, boost::mpi::minimum<std::uint64_t>());
  if (out[0] == ~out[1]) return;
  const settings_list mine = describe();
  settings_list ref = mine;
  boost::mpi::broadcast(comm, ref, 0);
  const int differs = mine != ref ? comm.rank() : INT_MAX;
  const int first = boost::mpi::all_reduce(comm, differs, boost::mpi::minimum<int>());
  if (first == INT_MAX)  // different hashes of equal descriptions: a bug in the description
    fail("ranks built {} with different arguments", what);
  settings_list theirs = mine;
  boost::mpi::broadcast(comm, theirs, first);
  std::size_t k = 0;
  while (k + 1 < theirs.size() && k + 1 < ref.size() && theirs[k] == ref[k] &&
         theirs[k + 1] == ref[k + 1])
    k += 2;
  auto item = [k](const settings_list& l) {
    return k + 1 < l.size() ? l[k] + " " + l[k + 1] : std::string("nothing more");
  };
  fail(
      "rank {}: {} built with {}, but rank 0 built it with {}; every rank must pass the same "
      "arguments",
      first, what, item(theirs), item(ref));
}

}  // namespace halox::detail
