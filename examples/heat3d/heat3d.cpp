// heat3d: explicit 7-point heat equation on a periodic 3-D grid, halos exchanged by halox,
// checked against a serial run of the same problem on rank 0.
//
//   mpirun -np 4 ./heat3d [--n 48] [--steps 40] [--no-overlap]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <boost/mpi.hpp>
#include <boost/serialization/vector.hpp>
#include <halox/halox.hpp>

namespace mpi = boost::mpi;
using idx = halox::index;

namespace {

struct options {
  idx n = 48;
  int steps = 40;
  bool overlap = true;
};

constexpr double alpha = 0.1;  // diffusion number, stable below 1/6

double initial(idx i, idx j, idx k, idx n) {
  const double two_pi = 6.283185307179586;
  const double x = double(i) / double(n), y = double(j) / double(n), z = double(k) / double(n);
  return std::sin(two_pi * x) * std::cos(2 * two_pi * y) + 0.5 * std::sin(3 * two_pi * z) +
         (i == n / 2 && j == n / 3 && k == n / 4 ? 10.0 : 0.0);
}

// The one update formula both runs use, so both round alike.
inline double update(double c, double xm, double xp, double ym, double yp, double zm, double zp) {
  return c + alpha * ((xm + xp) + (ym + yp) + (zm + zp) - 6.0 * c);
}

// Serial reference: plain periodic indexing, no halox.
std::vector<double> serial_run(idx n, int steps) {
  std::vector<double> u(std::size_t(n * n * n)), v(u.size());
  auto at = [n](idx i, idx j, idx k) {
    return std::size_t((((i + n) % n) * n + (j + n) % n) * n + (k + n) % n);
  };
  for (idx i = 0; i < n; ++i)
    for (idx j = 0; j < n; ++j)
      for (idx k = 0; k < n; ++k) u[at(i, j, k)] = initial(i, j, k, n);
  for (int s = 0; s < steps; ++s) {
    for (idx i = 0; i < n; ++i)
      for (idx j = 0; j < n; ++j)
        for (idx k = 0; k < n; ++k)
          v[at(i, j, k)] = update(u[at(i, j, k)], u[at(i - 1, j, k)], u[at(i + 1, j, k)],
                                  u[at(i, j - 1, k)], u[at(i, j + 1, k)], u[at(i, j, k - 1)],
                                  u[at(i, j, k + 1)]);
    std::swap(u, v);
  }
  return u;
}

// Updates the cells of `part` (global indices) of `out` from `in` (same layout, halo valid).
void sweep(const halox::field<double, 3>& in, const halox::field<double, 3>& out,
           const halox::box<3>& part) {
  const auto& s = in.strides();
  for (idx i = part.lo[0]; i < part.hi[0]; ++i)
    for (idx j = part.lo[1]; j < part.hi[1]; ++j) {
      const double* c = in.pointer({i, j, part.lo[2]});
      double* o = out.pointer({i, j, part.lo[2]});
      for (idx k = 0; k < part.hi[2] - part.lo[2]; ++k)
        o[k] = update(c[k], c[k - s[0]], c[k + s[0]], c[k - s[1]], c[k + s[1]], c[k - s[2]],
                      c[k + s[2]]);
    }
}

// The owned box minus a one-cell shell: cells whose update reads no halo.
halox::box<3> interior_of(const halox::box<3>& b) {
  halox::box<3> r = b;
  for (int d = 0; d < 3; ++d) r.lo[d] += 1, r.hi[d] -= 1;
  return r;
}

// Updates the one-cell shell of `b` that `interior_of` leaves out, as up to six slabs.
void sweep_shell(const halox::field<double, 3>& in, const halox::field<double, 3>& out,
                 const halox::box<3>& b) {
  halox::box<3> rest = b;
  for (int d = 0; d < 3; ++d) {
    if (rest.empty()) return;
    halox::box<3> low = rest, high = rest;
    low.hi[d] = std::min(rest.hi[d], rest.lo[d] + 1);
    high.lo[d] = std::max(low.hi[d], rest.hi[d] - 1);
    sweep(in, out, low);
    if (!high.empty()) sweep(in, out, high);
    rest.lo[d] = low.hi[d];
    rest.hi[d] = high.lo[d];
  }
}

bool parse(int argc, char** argv, options& o, int rank) {
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    auto value = [&]() -> const char* {
      if (a + 1 >= argc) throw halox::error("heat3d: " + arg + " needs a value");
      return argv[++a];
    };
    if (arg == "--n") o.n = std::atoll(value());
    else if (arg == "--steps") o.steps = std::atoi(value());
    else if (arg == "--no-overlap") o.overlap = false;
    else {
      if (rank == 0)
        std::printf(
            "usage: mpirun -np P heat3d [--n N] [--steps S] [--no-overlap]\n"
            "  Explicit 7-point heat equation on a periodic N^3 grid (default 48) for S steps\n"
            "  (default 40), halos exchanged with halox over P ranks; rank 0 repeats the run\n"
            "  serially and compares. --no-overlap uses blocking exchanges instead of\n"
            "  overlapping the interior update with the exchange.\n"
            "  Last line: 'verified ...' when max |distributed - serial| <= 1e-12.\n");
      return arg == "--help" || arg == "-h";
    }
  }
  if (o.n < 3 || o.steps < 0) throw halox::error("heat3d: need --n >= 3 and --steps >= 0");
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  mpi::environment env(argc, argv);
  mpi::communicator world;
  options o;
  bool run = false;
  try {
    run = parse(argc, argv, o, world.rank());
  } catch (const halox::error& e) {
    if (world.rank() == 0) std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  if (!run) return argc > 1 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") ? 0 : 2;

  constexpr auto st = halox::stencil<3>::star(1);
  const halox::cartesian<3> dom(world, {o.n, o.n, o.n}, halox::periodic{true, true, true});
  auto u = dom.make_field<double>(st), v = dom.make_field<double>(st);
  const auto b = u.owned_box();
  for (idx i = b.lo[0]; i < b.hi[0]; ++i)
    for (idx j = b.lo[1]; j < b.hi[1]; ++j)
      for (idx k = b.lo[2]; k < b.hi[2]; ++k) u(i, j, k) = initial(i, j, k, o.n);
  // One exchange object per field: steps alternate which field holds the current state.
  halox::halo_exchange ex_u = halox::make_exchange(dom, st, u), ex_v = halox::make_exchange(dom, st, v);

  world.barrier();
  const auto t0 = std::chrono::steady_clock::now();
  double exchange_s = 0;
  for (int s = 0; s < o.steps; ++s) {
    const bool even = s % 2 == 0;
    auto& in = even ? u : v;
    auto& out = even ? v : u;
    auto& ex = even ? ex_u : ex_v;
    auto clock = [] { return std::chrono::steady_clock::now(); };
    auto since = [&](auto t) { return std::chrono::duration<double>(clock() - t).count(); };
    if (o.overlap) {
      auto e0 = clock();
      auto h = ex.start();
      exchange_s += since(e0);
      sweep(in, out, interior_of(b));  // reads no halo: overlaps the messages
      e0 = clock();
      h.wait();
      exchange_s += since(e0);
      sweep_shell(in, out, b);
    } else {
      const auto e0 = clock();
      ex.exchange();
      exchange_s += since(e0);
      sweep(in, out, b);
    }
  }
  world.barrier();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto& result = o.steps % 2 == 0 ? u : v;

  // Gather the owned boxes on rank 0 and compare with the serial run.
  std::vector<double> mine;
  mine.reserve(std::size_t(b.volume()));
  for (idx i = b.lo[0]; i < b.hi[0]; ++i)
    for (idx j = b.lo[1]; j < b.hi[1]; ++j)
      for (idx k = b.lo[2]; k < b.hi[2]; ++k) mine.push_back(result(i, j, k));
  std::vector<std::vector<double>> all;
  mpi::gather(world, mine, all, 0);
  int status = 0;
  if (world.rank() == 0) {
    const auto ref = serial_run(o.n, o.steps);
    double diff = 0;
    for (int r = 0; r < world.size(); ++r) {
      const auto rb = dom.box_of(r);
      std::size_t p = 0;
      for (idx i = rb.lo[0]; i < rb.hi[0]; ++i)
        for (idx j = rb.lo[1]; j < rb.hi[1]; ++j)
          for (idx k = rb.lo[2]; k < rb.hi[2]; ++k)
            diff = std::max(diff, std::abs(all[r][p++] - ref[std::size_t((i * o.n + j) * o.n + k)]));
    }
    const double cells = double(o.n) * double(o.n) * double(o.n) * o.steps;
    std::printf("heat3d: %lld^3 cells, %d steps, %d ranks, process grid %dx%dx%d, %s\n",
                static_cast<long long>(o.n), o.steps, world.size(), dom.grid().dims[0],
                dom.grid().dims[1], dom.grid().dims[2], o.overlap ? "overlapped exchange" : "blocking exchange");
    std::printf("throughput: %.3f Mcell-updates/s (%.4f s total, %.4f s in halo exchange on rank 0)\n",
                cells / seconds / 1e6, seconds, exchange_s);
    if (diff <= 1e-12) {
      std::printf("verified: max |distributed - serial| = %.3e <= 1e-12\n", diff);
    } else {
      std::printf("FAILED: max |distributed - serial| = %.3e > 1e-12\n", diff);
      status = 1;
    }
    std::fflush(stdout);
  }
  mpi::broadcast(world, status, 0);
  return status;
}
