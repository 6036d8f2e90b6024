// Polling on oversubscribed ranks: a solver that completes every `--poll-every`-th exchange by
// spinning on test() (`while (!h.test()) {}`) and the others with exchange(). With more ranks
// than cores, a test() that never gives the processor up keeps the peer it waits for off the
// core. Prints one JSON line per run: the host transport, ranks, exchanges and time per
// exchange; verifies every halo cell of the last exchange against the global coordinates.
//
//   mpirun -np 4 --oversubscribe poll_bench [--n 32] [--steps 10000] [--poll-every 4]
//   HALOX_HOST_TRANSPORT=mpi mpirun -np 4 --oversubscribe poll_bench ...   (the MPI transport)
#include <boost/mpi/collectives.hpp>
#include <halox/halox.hpp>

#include "../../examples/common/cli.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace mpi = boost::mpi;

int main(int argc, char** argv) {
  mpi::environment env(argc, argv);
  mpi::communicator world;
  long n = 32, steps = 10000, every = 4;
  CLI::App app(
      "A solver loop that completes every K-th exchange by polling test() and the others with "
      "wait(); prints one JSON object (time per exchange, verified halo).",
      "poll_bench");
  app.add_option("--n", n, "cells per dimension per rank")->capture_default_str();
  app.add_option("--steps", steps, "exchanges")->capture_default_str();
  app.add_option("--poll-every", every, "every K-th exchange completes by polling test()")
      ->capture_default_str();
  if (const int code = example_app::parse(world, app, argc, argv); code >= 0) return code;
  if (n < 1 || steps < 1 || every < 1) {
    if (world.rank() == 0) std::fprintf(stderr, "poll_bench: --n, --steps, --poll-every >= 1\n");
    return 2;
  }
  constexpr auto st = halox::stencil<3>::box(1);
  const halox::cartesian<3> dom(world, {n, n, n}, halox::periodic<3>::all());
  auto u = dom.make_field<double>(st);
  auto global_index = [&](const halox::extents<3>& g) {
    auto w = [&](halox::index x) { return (x % n + n) % n; };
    return double((w(g[0]) * n + w(g[1])) * n + w(g[2]));
  };
  const auto o = u.owned_box();
  for (auto i = o.lo[0]; i < o.hi[0]; ++i)
    for (auto j = o.lo[1]; j < o.hi[1]; ++j)
      for (auto k = o.lo[2]; k < o.hi[2]; ++k) u.at({i, j, k}) = global_index({i, j, k});
  auto ex = halox::make_exchange(dom, st, u);
  world.barrier();
  const auto t0 = std::chrono::steady_clock::now();
  for (long s = 1; s <= steps; ++s) {
    if (s % every == 0) {
      auto h = ex.start();
      while (!h.test()) {
      }
    } else {
      ex.exchange();
    }
  }
  const double local = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double seconds = mpi::all_reduce(world, local, mpi::maximum<double>());
  long bad = 0;
  const auto a = u.allocated_box();
  for (auto i = a.lo[0]; i < a.hi[0]; ++i)
    for (auto j = a.lo[1]; j < a.hi[1]; ++j)
      for (auto k = a.lo[2]; k < a.hi[2]; ++k) bad += u.at({i, j, k}) != global_index({i, j, k});
  bad = mpi::all_reduce(world, bad, std::plus<long>());
  if (world.rank() == 0) {
    const char* t = std::getenv("HALOX_HOST_TRANSPORT");
    std::printf(
        "{\"bench\": \"poll\", \"transport\": \"%s\", \"ranks\": %d, \"n\": %ld, \"steps\": %ld, "
        "\"poll_every\": %ld, \"seconds\": %.4f, \"us_per_exchange\": %.2f, \"verified\": %s}\n",
        t && *t ? t : "auto", world.size(), n, steps, every, seconds, 1e6 * seconds / double(steps),
        bad == 0 ? "true" : "false");
  }
  return bad == 0 ? 0 : 1;
}
