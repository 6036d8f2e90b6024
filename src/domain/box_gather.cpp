// The gather behind box_list::from_local: every rank's boxes on every rank, in rank order.

#include <limits>
#include <vector>

#include "halox/domain/box_list.hpp"
#include "mpi/check.hpp"

namespace halox::detail {

gathered_boxes all_gather_boxes(const boost::mpi::communicator& comm,
                                const std::vector<index>& mine, int per_box) {
  const int me = comm.rank(), p = comm.size();
  const char* part = "box_list::from_local";
  // Counts first: every rank then sees the same totals and fails, or not, alike.
  const auto count = static_cast<long long>(mine.size());
  std::vector<long long> counts(static_cast<std::size_t>(p), 0);
  mpi::check(MPI_Allgather(&count, 1, MPI_LONG_LONG, counts.data(), 1, MPI_LONG_LONG, comm),
             "MPI_Allgather", me, part);
  long long total = 0;
  for (const long long c : counts) total += c;
  require(total <= std::numeric_limits<int>::max(),
          "rank {}: box_list::from_local: the ranks give {} boxes, more than one gather of "
          "{} coordinates can carry",
          me, total / per_box, std::numeric_limits<int>::max());
  std::vector<int> sizes(static_cast<std::size_t>(p)), displs(sizes.size());
  int at = 0;
  for (int r = 0; r < p; ++r) {
    sizes[std::size_t(r)] = int(counts[std::size_t(r)]);
    displs[std::size_t(r)] = at;
    at += sizes[std::size_t(r)];
  }
  gathered_boxes out;
  out.coords.resize(std::size_t(total));
  static_assert(sizeof(index) == sizeof(std::int64_t));
  mpi::check(MPI_Allgatherv(mine.data(), int(count), MPI_INT64_T, out.coords.data(), sizes.data(),
                            displs.data(), MPI_INT64_T, comm),
             "MPI_Allgatherv", me, part);
  for (int r = 0; r < p; ++r)
    out.owners.insert(out.owners.end(), std::size_t(sizes[std::size_t(r)] / per_box), r);
  return out;
}

}  // namespace halox::detail
