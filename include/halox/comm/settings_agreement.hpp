#pragma once
/// @file
/// Checking that every rank constructs a domain from the same arguments: one all-reduce of a
/// hash, and a description of the first difference only when there is one.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/mpi/communicator.hpp>

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
void agree_on_settings(const boost::mpi::communicator& comm, const char* what, std::uint64_t hash,
                       const std::function<settings_list()>& describe);

}  // namespace halox::detail
