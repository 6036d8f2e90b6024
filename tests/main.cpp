// Catch2 runner for every halox test: MPI is initialised before any test runs; a failure on
// any rank makes every rank's exit code non-zero.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <boost/mpi/collectives.hpp>
#include <boost/mpi/communicator.hpp>
#include <boost/mpi/environment.hpp>

int main(int argc, char** argv) {
  boost::mpi::environment env(argc, argv);
  boost::mpi::communicator world;
  Catch::Session session;
  if (world.rank() != 0) session.configData().reporterName = "compact";
  const int rc = session.applyCommandLine(argc, argv);
  if (rc != 0) return rc;
  const int failed = session.run();
  const int any = boost::mpi::all_reduce(world, failed, boost::mpi::maximum<int>());
  return any != 0 ? 1 : 0;
}
