#pragma once
/// @file
/// Set-up-time sparse data exchange: every rank sends a few lists to a few ranks and receives
/// whatever is sent to it, without knowing in advance who sends. Implemented with the
/// non-blocking consensus algorithm (synchronous sends, probe, non-blocking barrier), so no rank
/// holds anything proportional to the number of ranks.

#include <cstddef>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include <mpi.h>

namespace halox::detail {

/// Byte lists to or from one rank.
struct byte_list {
  int rank = 0;
  std::vector<std::byte> data;
};

/// Sends each of `outgoing` to its rank and returns what every other rank sent here, sorted by
/// source rank. Collective over `comm`; `tag` must not be in use by other traffic on `comm`.
std::vector<byte_list> sparse_exchange(MPI_Comm comm, const std::vector<byte_list>& outgoing,
                                       int tag);

/// A list of `T` to or from one rank.
template <class T>
struct typed_list {
  int rank = 0;
  std::vector<T> data;
};

/// `sparse_exchange` for lists of trivially copyable values.
template <class T>
std::vector<typed_list<T>> sparse_exchange(MPI_Comm comm, const std::vector<typed_list<T>>& out,
                                           int tag) {
  static_assert(std::is_trivially_copyable_v<T>);
  std::vector<byte_list> raw(out.size());
  for (std::size_t k = 0; k < out.size(); ++k) {
    raw[k].rank = out[k].rank;
    raw[k].data.resize(out[k].data.size() * sizeof(T));
    if (!out[k].data.empty())
      std::memcpy(raw[k].data.data(), out[k].data.data(), raw[k].data.size());
  }
  auto in = sparse_exchange(comm, raw, tag);
  std::vector<typed_list<T>> result(in.size());
  for (std::size_t k = 0; k < in.size(); ++k) {
    result[k].rank = in[k].rank;
    result[k].data.resize(in[k].data.size() / sizeof(T));
    if (!in[k].data.empty())
      std::memcpy(result[k].data.data(), in[k].data.data(), in[k].data.size());
  }
  return result;
}

}  // namespace halox::detail
