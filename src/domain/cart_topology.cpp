// What cartesian::from_cart_comm reads from a Cartesian communicator: its grid, its periods and
// every rank's coordinates (MPI_Cart_coords), each call checked.

#include <vector>

#include "halox/domain/cartesian.hpp"
#include "mpi/check.hpp"

namespace halox::detail {

cart_topology read_cart_topology(MPI_Comm comm, int ndims) {
  const char* part = "cartesian::from_cart_comm";
  int me = 0, size = 0, kind = MPI_UNDEFINED, have = 0;
  mpi::check(MPI_Comm_rank(comm, &me), "MPI_Comm_rank", -1, part);
  mpi::check(MPI_Comm_size(comm, &size), "MPI_Comm_size", me, part);
  mpi::check(MPI_Topo_test(comm, &kind), "MPI_Topo_test", me, part);
  require(kind == MPI_CART,
          "rank {}: cartesian::from_cart_comm: the communicator has no Cartesian topology "
          "(MPI_Topo_test gives {}); make it with MPI_Cart_create, or pass the grid to the "
          "cartesian constructor",
          me,
          kind == MPI_GRAPH        ? "MPI_GRAPH"
          : kind == MPI_DIST_GRAPH ? "MPI_DIST_GRAPH"
                                   : "MPI_UNDEFINED");
  mpi::check(MPI_Cartdim_get(comm, &have), "MPI_Cartdim_get", me, part);
  require(have == ndims,
          "rank {}: cartesian::from_cart_comm: the communicator's Cartesian topology has {} "
          "dimension(s) but the domain has {}",
          me, have, ndims);
  cart_topology t;
  t.dims.resize(std::size_t(ndims));
  t.periods.resize(std::size_t(ndims));
  std::vector<int> mine(t.dims.size());
  mpi::check(MPI_Cart_get(comm, ndims, t.dims.data(), t.periods.data(), mine.data()),
             "MPI_Cart_get", me, part);
  t.coords.resize(std::size_t(size) * std::size_t(ndims));
  for (int r = 0; r < size; ++r)
    mpi::check(MPI_Cart_coords(comm, r, ndims, t.coords.data() + std::size_t(r) * ndims),
               "MPI_Cart_coords", me, part, r);
  return t;
}

}  // namespace halox::detail
