#include "halox/comm/sparse_exchange.hpp"

#include <algorithm>
#include <climits>

#include "halox/core/error.hpp"

namespace halox::detail {

namespace {
void check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  fail("{} failed during set-up: {}", call, std::string(text, len));
}
}  // namespace

std::vector<byte_list> sparse_exchange(MPI_Comm comm, const std::vector<byte_list>& outgoing,
                                       int tag) {
  int me = 0;
  check(MPI_Comm_rank(comm, &me), "MPI_Comm_rank");
  std::vector<MPI_Request> sends(outgoing.size(), MPI_REQUEST_NULL);
  std::vector<byte_list> incoming;
  for (std::size_t k = 0; k < outgoing.size(); ++k) {
    const auto& o = outgoing[k];
    require(o.data.size() <= std::size_t(INT_MAX),
            "rank {}: a set-up list of {} bytes for rank {} exceeds one MPI message", me,
            o.data.size(), o.rank);
    check(MPI_Issend(o.data.data(), int(o.data.size()), MPI_BYTE, o.rank, tag, comm, &sends[k]),
          "MPI_Issend");
  }
  MPI_Request barrier = MPI_REQUEST_NULL;
  bool barrier_started = false;
  for (;;) {
    int flag = 0;
    MPI_Status st;
    check(MPI_Iprobe(MPI_ANY_SOURCE, tag, comm, &flag, &st), "MPI_Iprobe");
    if (flag) {
      int count = 0;
      check(MPI_Get_count(&st, MPI_BYTE, &count), "MPI_Get_count");
      byte_list in{st.MPI_SOURCE, std::vector<std::byte>(std::size_t(count))};
      check(MPI_Recv(in.data.data(), count, MPI_BYTE, st.MPI_SOURCE, tag, comm, MPI_STATUS_IGNORE),
            "MPI_Recv");
      incoming.push_back(std::move(in));
    }
    if (!barrier_started) {
      int all_sent = 0;
      check(MPI_Testall(int(sends.size()), sends.data(), &all_sent, MPI_STATUSES_IGNORE),
            "MPI_Testall");
      if (all_sent) {  // every message of mine has been matched: join the barrier
        check(MPI_Ibarrier(comm, &barrier), "MPI_Ibarrier");
        barrier_started = true;
      }
    } else {
      int done = 0;
      check(MPI_Test(&barrier, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (done) break;
    }
  }
  std::stable_sort(incoming.begin(), incoming.end(),
                   [](const byte_list& a, const byte_list& b) { return a.rank < b.rank; });
  return incoming;
}

}  // namespace halox::detail
