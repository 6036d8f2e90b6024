// Small pieces the mini-apps share: ending the whole job after an error on one rank, and
// turning an input error found after parsing into exit code 2 (options: cli.hpp).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include <boost/mpi.hpp>
#include <halox/core/error.hpp>

namespace example_app {

/// Ends every rank of the job after an error on this one (the others would wait in MPI).
[[noreturn]] inline void abort_run(const char* app, const boost::mpi::communicator& world,
                                   const std::exception& e) {
  std::fprintf(stderr, "%s: rank %d: %s\n", app, world.rank(), e.what());
  std::fflush(stderr);
  boost::mpi::environment::abort(1);
  std::abort();  // not reached: MPI_Abort does not return
}

/// Reads the options with `parse()` (-1: run, else the exit code: 0 after --help, 2 for a bad
/// option). A halox::error it throws is printed once (by rank 0) and gives exit code 2.
template <class Parse>
int read_options(const boost::mpi::communicator& world, Parse&& parse) {
  try {
    return parse();
  } catch (const halox::error& e) {
    if (world.rank() == 0) std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}

}  // namespace example_app
