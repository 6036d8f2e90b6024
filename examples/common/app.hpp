// The frame every mini-app's main shares (run_main): MPI, the options, the exit code, and the
// whole job ended after an error on one rank (options: cli.hpp).
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

/// A mini-app's whole `main`: starts MPI, reads the options into an `Options` with
/// `parse(argc, argv, options, world)` (read_options: -1 to run, else the exit code), then
/// returns `run(world, options)` on every rank: rank 0's value (0 verified, 1 failed; every rank
/// returns the same 77 or 2 when a --device run cannot start). An exception `run` lets out ends
/// the whole job (abort_run, naming `app`).
template <class Options, class Parse, class Run>
int run_main(const char* app, int argc, char** argv, Parse&& parse, Run&& run) {
  boost::mpi::environment env(argc, argv);
  boost::mpi::communicator world;
  Options o;
  if (const int code = read_options(world, [&] { return parse(argc, argv, o, world); }); code >= 0)
    return code;
  int status = 0;
  try {
    status = run(world, o);
  } catch (const std::exception& e) {
    abort_run(app, world, e);
  }
  boost::mpi::broadcast(world, status, 0);
  return status;
}

}  // namespace example_app
