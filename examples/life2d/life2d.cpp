// life2d: Conway's game of life on a periodic NX x NY torus, halos (corners included) exchanged
// by halox, the final board checked cell for cell against a serial run on rank 0.
//
//   mpirun -np 3 ./life2d [--nx 256] [--ny 192] [--steps 200] [--seed 1] [--progress 50]
//                         [--overlap]
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <system_error>
#include <vector>

#include <boost/mpi.hpp>
#include <boost/serialization/vector.hpp>
#include <halox/halox.hpp>

#include "../common/app.hpp"
#include "../common/cli.hpp"
#include "../common/time_loop.hpp"

namespace mpi = boost::mpi;
using idx = halox::index;
using cell = std::uint8_t;  // 1 alive, 0 dead
using board = halox::field<cell, 2>;
using example_app::timing;

namespace {

struct options {
  idx nx = 256, ny = 192;  // unequal blocks over 3, 5, 6, 7, ... ranks
  int steps = 200;
  std::uint64_t seed = 1;
  int progress = 50;  // steps between progress lines on rank 0; 0: none
  bool overlap = false;
};

std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The initial state of global cell (i, j): alive with probability ~0.3, a function of the
// global coordinates and the seed only, so that every decomposition starts from the same board.
cell initial(idx i, idx j, idx ny, std::uint64_t seed) {
  const std::uint64_t h = splitmix64(splitmix64(seed) ^ std::uint64_t(i * ny + j));
  return (h >> 32) % 100 < 30 ? 1 : 0;
}

// The rule both runs use: birth on 3 live neighbours, survival on 2 or 3.
inline cell next(cell alive, int neighbours) {
  return neighbours == 3 || (alive != 0 && neighbours == 2) ? 1 : 0;
}

// Serial reference: plain periodic (modulo) indexing, no halox.
std::vector<cell> serial_run(idx nx, idx ny, int steps, std::uint64_t seed) {
  std::vector<cell> u(std::size_t(nx * ny)), v(u.size());
  auto at = [nx, ny](idx i, idx j) { return std::size_t(((i + nx) % nx) * ny + (j + ny) % ny); };
  for (idx i = 0; i < nx; ++i)
    for (idx j = 0; j < ny; ++j) u[at(i, j)] = initial(i, j, ny, seed);
  for (int s = 0; s < steps; ++s) {
    for (idx i = 0; i < nx; ++i)
      for (idx j = 0; j < ny; ++j) {
        int n = 0;
        for (idx di = -1; di <= 1; ++di)
          for (idx dj = -1; dj <= 1; ++dj)
            if (di != 0 || dj != 0) n += u[at(i + di, j + dj)];
        v[at(i, j)] = next(u[at(i, j)], n);
      }
    std::swap(u, v);
  }
  return u;
}

// Updates the cells of `part` (global indices) of `out` from `in` (same layout, halo valid
// wherever `part` touches it).
void sweep(const board& in, const board& out, const halox::box<2>& part) {
  if (part.empty()) return;
  const idx sx = in.strides()[0], sy = in.strides()[1];
  for (idx i = part.lo[0]; i < part.hi[0]; ++i) {
    const cell* c = in.pointer({i, part.lo[1]});
    cell* o = out.pointer({i, part.lo[1]});
    for (idx j = 0; j < part.hi[1] - part.lo[1]; ++j) {
      const cell* p = c + j * sy;
      const int n =
          p[-sx - sy] + p[-sx] + p[-sx + sy] + p[-sy] + p[sy] + p[sx - sy] + p[sx] + p[sx + sy];
      o[j * sy] = next(*p, n);
    }
  }
}

// Runs the distributed game; returns the final board.
board play(const halox::cartesian<2>& dom, const options& o, const mpi::communicator& world,
           timing& t) {
  constexpr auto st = halox::stencil<2>::box(1);  // the 8 neighbours: corners matter
  auto u = dom.make_field<cell>(st), v = dom.make_field<cell>(st);
  const auto b = u.owned_box();
  for (idx i = b.lo[0]; i < b.hi[0]; ++i)
    for (idx j = b.lo[1]; j < b.hi[1]; ++j) u(i, j) = initial(i, j, o.ny, o.seed);
  // One exchange object per field: steps alternate which field holds the current board.
  halox::halo_exchange ex_u = halox::make_exchange(dom, st, u),
                       ex_v = halox::make_exchange(dom, st, v);
  const double cells = double(o.nx) * double(o.ny);
  auto progress = [&](int s, double elapsed) {  // rank 0's clock: others may be a step behind
    if (o.progress <= 0 || (s + 1) % o.progress != 0 || world.rank() != 0) return;
    std::printf("step %d, %.4f s, %.3f Mcell-updates/s\n", s + 1, elapsed,
                cells * (s + 1) / elapsed / 1e6);
    std::fflush(stdout);
  };
  return example_app::run_steps(world, o, st, u, v, ex_u, ex_v, sweep, progress, t);
}

// Reads the options; returns -1 to run, else the exit code (0 after --help, 2 on a bad one).
int parse(int argc, char** argv, options& o, const mpi::communicator& world) {
  CLI::App app(
      "Conway's game of life on a periodic NX x NY torus, from a random board with ~30% live "
      "cells drawn from the seed and the global coordinates (every rank count starts alike); "
      "halos (8 neighbours) exchanged with halox; rank 0 repeats the run serially and compares "
      "the boards cell for cell. Last line: 'verified: ...' when identical, else 'FAILED: ...' "
      "and exit code 1.",
      "life2d");
  app.add_option("--nx", o.nx, "board columns")
      ->check(CLI::Range(idx(1), idx(1) << 40))
      ->capture_default_str();
  app.add_option("--ny", o.ny, "board rows")
      ->check(CLI::Range(idx(1), idx(1) << 40))
      ->capture_default_str();
  app.add_option("--steps", o.steps, "generations")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the random board")->capture_default_str();
  example_app::add_progress(app, o.progress);
  app.add_flag("--overlap", o.overlap,
               "start the exchange, update the interior, wait, then update the rim (default: "
               "blocking exchanges)");
  return example_app::parse(world, app, argc, argv);
}

// This rank's final owned cells, row by row.
std::vector<cell> owned_cells(const board& f) {
  const auto b = f.owned_box();
  std::vector<cell> out;
  out.reserve(std::size_t(b.volume()));
  for (idx i = b.lo[0]; i < b.hi[0]; ++i)
    for (idx j = b.lo[1]; j < b.hi[1]; ++j) out.push_back(f(i, j));
  return out;
}

// Rank 0's report: the gathered boards (`all`, owned boxes `dom.box_of(r)`) against the serial
// run; returns the exit status.
int report(const mpi::communicator& world, const options& o, const halox::cartesian<2>& dom,
           const std::vector<std::vector<cell>>& all, const timing& t) {
  const auto ref = serial_run(o.nx, o.ny, o.steps, o.seed);
  long long live = 0, live_ref = 0, differ = 0;
  for (const cell c : ref) live_ref += c;
  for (int r = 0; r < world.size(); ++r) {
    const auto rb = dom.box_of(r);
    std::size_t p = 0;
    for (idx i = rb.lo[0]; i < rb.hi[0]; ++i)
      for (idx j = rb.lo[1]; j < rb.hi[1]; ++j) {
        const cell c = all[std::size_t(r)][p++];
        live += c;
        differ += c != ref[std::size_t(i * o.ny + j)] ? 1 : 0;
      }
  }
  const long long total = static_cast<long long>(o.nx * o.ny);
  const double updates = double(o.nx) * double(o.ny) * o.steps;
  std::printf("life2d: %lldx%lld cells, %d steps, seed %llu, %d ranks, process grid %dx%d, %s\n",
              static_cast<long long>(o.nx), static_cast<long long>(o.ny), o.steps,
              static_cast<unsigned long long>(o.seed), world.size(), dom.grid().dims[0],
              dom.grid().dims[1], o.overlap ? "overlapped exchange" : "blocking exchange");
  std::printf("live cells: distributed %lld, serial %lld (of %lld)\n", live, live_ref, total);
  std::printf("differing cells: %lld\n", differ);
  std::printf(
      "throughput: %.3f Mcell-updates/s (%.4f s total, %.4f s in halo exchange calls on "
      "rank 0)\n",
      t.seconds > 0 ? updates / t.seconds / 1e6 : 0.0, t.seconds, t.exchange_s);
  int status = 0;
  if (differ == 0) {
    std::printf("verified: distributed board identical to the serial run (%lld live cells)\n",
                live);
  } else {
    std::printf("FAILED: %lld of %lld cells differ from the serial run\n", differ, total);
    status = 1;
  }
  std::fflush(stdout);
  return status;
}

int run(const mpi::communicator& world, const options& o) {
  timing t;
  const halox::cartesian<2> dom(world, {o.nx, o.ny}, halox::periodic{true, true});
  const std::vector<cell> mine = owned_cells(play(dom, o, world, t));
  // Gather the owned boxes on rank 0 and compare with the serial run.
  std::vector<std::vector<cell>> all;
  mpi::gather(world, mine, all, 0);
  return world.rank() == 0 ? report(world, o, dom, all, t) : 0;
}

}  // namespace

int main(int argc, char** argv) {
  return example_app::run_main<options>("life2d", argc, argv, parse, run);
}
