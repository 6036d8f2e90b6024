#include "transport/mpi_transfers.hpp"

#include <algorithm>

#include "halox/core/error.hpp"
#include "mpi/check.hpp"
#include "transport/chunks.hpp"

namespace halox::detail {

void mpi_transfers::send(const std::byte* data, std::size_t bytes, int peer, int tag) {
  // MPI_Isend reads the buffer only; one posting routine serves both directions.
  post(const_cast<std::byte*>(data), bytes, peer, tag, true);
}

void mpi_transfers::receive(std::byte* data, std::size_t bytes, int peer, int tag) {
  post(data, bytes, peer, tag, false);
}

void mpi_transfers::post(std::byte* data, std::size_t bytes, int peer, int tag, bool send) {
  const std::size_t size = piece_size(bytes, 0);
  auto& reqs = send ? sends_ : recvs_;
  for (std::size_t at = 0; at < bytes; at += size) {
    const int n = int(std::min(size, bytes - at));
    MPI_Request r = MPI_REQUEST_NULL;
    if (send)
      check(MPI_Isend(data + at, n, MPI_BYTE, peer, tag, comm_, &r), "MPI_Isend", "", peer);
    else
      check(MPI_Irecv(data + at, n, MPI_BYTE, peer, tag, comm_, &r), "MPI_Irecv", "", peer);
    reqs.push_back(r);
  }
}

bool mpi_transfers::complete(std::vector<MPI_Request>& reqs, bool block, const char* which) {
  if (reqs.empty()) return true;
  int flag = 1;
  const int n = int(reqs.size());
  // Both are named MPI_Waitall in errors, as the chain has always named them.
  if (block)
    check(MPI_Waitall(n, reqs.data(), MPI_STATUSES_IGNORE), "MPI_Waitall", which, -1);
  else
    check(MPI_Testall(n, reqs.data(), &flag, MPI_STATUSES_IGNORE), "MPI_Waitall", which, -1);
  return flag != 0;
}

void mpi_transfers::check(int rc, const char* call, const char* which, int peer) const {
  if (rc != MPI_SUCCESS)
    mpi::fail_call(rc, format("{}({}{})", call, what_, which), rank_, part_, peer);
}

}  // namespace halox::detail
