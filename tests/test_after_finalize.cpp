// An exchange object destroyed after MPI_Finalize (the docs forbid it): halox must say so on
// stderr and must not crash. The program reads back its own stderr and fails without the message.
#include <unistd.h>

#include <boost/mpi/communicator.hpp>
#include <cstdio>
#include <halox/halox.hpp>
#include <memory>
#include <string>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  std::unique_ptr<halox::halo_exchange> leaked;
  {
    boost::mpi::communicator world;
    const auto st = halox::stencil<2>::star(1);
    halox::cartesian<2> dom(world, {8, 6}, halox::periodic<2>::all());
    auto u = dom.make_field<double>(st, halox::host, {1, {}, {}, "u"});
    leaked = std::make_unique<halox::halo_exchange>(halox::make_exchange(dom, st, u));
    leaked->exchange();
  }
  MPI_Finalize();
  std::FILE* caught = std::tmpfile();
  const int saved = dup(2);
  if (caught == nullptr || saved < 0 || dup2(fileno(caught), 2) < 0) return 2;
  leaked.reset();  // after MPI_Finalize: a message, no MPI call, no crash
  std::fflush(stderr);
  if (dup2(saved, 2) < 0) return 2;
  std::rewind(caught);
  std::string said;
  for (int c; (c = std::fgetc(caught)) != EOF;) said += char(c);
  std::fputs(said.c_str(), stderr);
  const bool ok = said.find("destroyed after MPI_Finalize") != std::string::npos;
  std::printf("%s\n", ok ? "the destruction after MPI_Finalize was reported"
                         : "no message for the destruction after MPI_Finalize");
  return ok ? 0 : 1;
}
