#pragma once
/// @file
/// Checking that every rank constructs a domain from the same arguments: one all-reduce of a
/// hash, and a description of the first difference only when there is one.

#include <climits>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <boost/mpi/collectives.hpp>
#include <boost/mpi/communicator.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include "halox/core/error.hpp"

namespace halox::detail {

/// FNV-1a (64-bit) over the arguments ranks must agree on: halox's one hash, also of an
/// exchange's declaration (peer agreement).
class settings_hash {
 public:
  void add(std::uint64_t v) {
    for (int k = 0; k < 8; ++k, v >>= 8) h_ = (h_ ^ (v & 0xff)) * 0x100000001b3ull;
  }
  void add(std::string_view s) {
    add(s.size());
    for (unsigned char c : s) h_ = (h_ ^ c) * 0x100000001b3ull;
  }
  std::uint64_t value() const { return h_; }

 private:
  std::uint64_t h_ = 0xcbf29ce484222325ull;
};

/// The settings a hash covers, as (name, value) pairs: `{"global extents", "8x8"}`. Equal
/// settings must give equal lists, and different settings different ones.
using settings_list = std::vector<std::string>;  // name, value, name, value, ...

/// Collective over `comm`: returns when every rank passed the same `hash`; otherwise throws, on
/// every rank, the same halox::error naming the lowest rank whose settings differ from rank 0's
/// and the first setting that differs. `describe()` returns the settings the hash covers; it is
/// only called when the hashes differ.
template <class Describe>
void agree_on_settings(const boost::mpi::communicator& comm, const char* what, std::uint64_t hash,
                       Describe&& describe) {
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
