// Collective GPU selection for the mini-apps' --device modes (C++20 side; needs gpu_runtime).
#pragma once

#include <mpi.h>

#include <boost/mpi/collectives.hpp>
#include <boost/mpi/communicator.hpp>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "gpu_runtime.hpp"

namespace example_gpu {

/// Checks that every rank has a GPU (returns 0) or says which has none (returns 77, ctest's
/// "skipped"; the message contains "no CUDA device"), then gives each rank of a node its own
/// device, round robin (node-local rank modulo the device count). Collective.
inline int select_gpu(const boost::mpi::communicator& world, const char* app) {
  std::string why;
  const int count = device_count(why);
  const int first_without = boost::mpi::all_reduce(world, count == 0 ? world.rank() : world.size(),
                                                   boost::mpi::minimum<int>());
  if (first_without < world.size()) {
    if (world.rank() == first_without) {
      std::printf("%s: no CUDA device on rank %d (%s): --device skipped\n", app, world.rank(),
                  why.c_str());
      std::fflush(stdout);
    }
    return 77;
  }
  MPI_Comm node;  // the ranks sharing this node's GPUs
  int local = 0;
  if (MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, world.rank(), MPI_INFO_NULL, &node) !=
          MPI_SUCCESS ||
      MPI_Comm_rank(node, &local) != MPI_SUCCESS || MPI_Comm_free(&node) != MPI_SUCCESS)
    throw std::runtime_error(std::string(app) + ": could not find the ranks sharing this node");
  select_device(local % count);
  return 0;
}

}  // namespace example_gpu
