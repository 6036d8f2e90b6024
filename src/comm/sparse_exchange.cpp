#include "comm/sparse_exchange.hpp"

#include <algorithm>
#include <climits>
#include <string_view>

#include "halox/core/error.hpp"
#include "mpi/check.hpp"

namespace halox::detail {

namespace {
constexpr std::string_view part = "set-up";  // for MPI errors
}  // namespace

std::vector<byte_list> sparse_exchange(MPI_Comm comm, const std::vector<byte_list>& outgoing,
                                       int tag) {
  int me = 0;
  mpi::check(MPI_Comm_rank(comm, &me), "MPI_Comm_rank", -1, part);
  std::vector<MPI_Request> sends(outgoing.size(), MPI_REQUEST_NULL);
  std::vector<byte_list> incoming;
  for (std::size_t k = 0; k < outgoing.size(); ++k) {
    const auto& o = outgoing[k];
    require(o.data.size() <= std::size_t(INT_MAX),
            "rank {}: a set-up list of {} bytes for rank {} exceeds one MPI message", me,
            o.data.size(), o.rank);
    mpi::check(
        MPI_Issend(o.data.data(), int(o.data.size()), MPI_BYTE, o.rank, tag, comm, &sends[k]),
        "MPI_Issend", me, part, o.rank);
  }
  MPI_Request barrier = MPI_REQUEST_NULL;
  bool barrier_started = false;
  for (;;) {
    int flag = 0;
    MPI_Status st;
    mpi::check(MPI_Iprobe(MPI_ANY_SOURCE, tag, comm, &flag, &st), "MPI_Iprobe", me, part);
    if (flag) {
      int count = 0;
      mpi::check(MPI_Get_count(&st, MPI_BYTE, &count), "MPI_Get_count", me, part);
      byte_list in{st.MPI_SOURCE, std::vector<std::byte>(std::size_t(count))};
      mpi::check(
          MPI_Recv(in.data.data(), count, MPI_BYTE, st.MPI_SOURCE, tag, comm, MPI_STATUS_IGNORE),
          "MPI_Recv", me, part, st.MPI_SOURCE);
      incoming.push_back(std::move(in));
    }
    if (!barrier_started) {
      int all_sent = 0;
      mpi::check(MPI_Testall(int(sends.size()), sends.data(), &all_sent, MPI_STATUSES_IGNORE),
                 "MPI_Testall", me, part);
      if (all_sent) {  // every message of mine has been matched: join the barrier
        mpi::check(MPI_Ibarrier(comm, &barrier), "MPI_Ibarrier", me, part);
        barrier_started = true;
      }
    } else {
      int done = 0;
      mpi::check(MPI_Test(&barrier, &done, MPI_STATUS_IGNORE), "MPI_Test", me, part);
      if (done) break;
    }
  }
  std::stable_sort(incoming.begin(), incoming.end(),
                   [](const byte_list& a, const byte_list& b) { return a.rank < b.rank; });
  return incoming;
}

}  // namespace halox::detail
