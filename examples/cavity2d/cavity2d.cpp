// cavity2d: 2-D incompressible lid-driven cavity on a MAC grid (u on x-faces, v on y-faces, p in
// cells), a projection method with Jacobi pressure iterations. Staggered halos and the no-slip
// walls and moving lid come from halox (centerings and boundary rules); rank 0 repeats the run
// on one rank and compares every owned value of u, v and p bit for bit.
//
//   mpirun -np 4 ./cavity2d [--n 48] [--steps 300] [--jacobi 40] [--re 100] [--progress 50]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <vector>

#include <boost/mpi.hpp>
#include <boost/serialization/vector.hpp>
#include <halox/halox.hpp>

#include "../common/app.hpp"
#include "../common/cli.hpp"

namespace mpi = boost::mpi;
using idx = halox::index;
using grid_field = halox::field<double, 2>;
using halox::side;

namespace {

struct options {
  idx n = 48;  // cells per side of the unit square
  int steps = 300;
  int jacobi = 40;  // pressure iterations per step
  double re = 100;  // Reynolds number (lid speed 1, side 1)
  int progress = 50;
};

constexpr auto st = halox::stencil<2>::star(1);

// Calls f(i, j) for every point of b.
template <class F>
void each(const halox::box<2>& b, F&& f) {
  for (idx i = b.lo[0]; i < b.hi[0]; ++i)
    for (idx j = b.lo[1]; j < b.hi[1]; ++j) f(i, j);
}

// The points of `f` this rank computes: its owned points less the wall points (normal velocity
// 0 on the walls, never written).
halox::box<2> interior(const grid_field& f, int normal, idx n) {
  auto b = f.owned_points();
  b.lo[normal] = std::max<idx>(b.lo[normal], 1);
  b.hi[normal] = std::min<idx>(b.hi[normal], n);
  return b;
}

struct state {
  grid_field u, v, p;
};

// Runs the solver on `dom`; returns the final fields.
state run(const halox::cartesian<2>& dom, const options& o, const mpi::communicator& comm) {
  const idx n = o.n;
  const double h = 1.0 / double(n), nu = 1.0 / o.re;
  const double dt = 0.5 * std::min(0.25 * h * h / nu, h);
  auto u = dom.make_field<double>(st, halox::host, halox::centering::face(0));
  auto v = dom.make_field<double>(st, halox::host, halox::centering::face(1));
  auto us = dom.make_field<double>(st, halox::host, halox::centering::face(0));
  auto vs = dom.make_field<double>(st, halox::host, halox::centering::face(1));
  auto p = dom.make_field<double>(st), rhs = dom.make_field<double>(st);
  auto q = dom.make_field<double>(st);

  // No slip: the tangential velocity is mirrored with its sign flipped (zero at the wall), the
  // normal one mirrored about its wall point; the lid (y = 1) moves at speed 1: u = 2 - u.
  halox::boundary<double, 2> bu, bv, bp;
  bu.reflect({0, side::low}, {-1.0}).reflect({0, side::high}, {-1.0});
  bu.reflect({1, side::low}, {-1.0}).callback({1, side::high}, [n](const auto& bf) {
    each(bf.cells, [&](idx i, idx j) { bf.f.at({i, j}) = 2.0 - bf.f.at({i, 2 * n - 1 - j}); });
  });
  bv.reflect({0, side::low}, {-1.0}).reflect({0, side::high}, {-1.0});
  bv.reflect({1, side::low}, {-1.0}).reflect({1, side::high}, {-1.0});
  for (int d = 0; d < 2; ++d) bp.zero_gradient({d, side::low}).zero_gradient({d, side::high});
  auto ex_vel = halox::make_exchange(dom, halox::halo(st, u, bu), halox::halo(st, v, bv));
  auto ex_star = halox::make_exchange(dom, st, us, vs);
  auto ex_p = halox::make_exchange(dom, halox::halo(st, p, bp));
  auto ex_q = halox::make_exchange(dom, halox::halo(st, q, bp));

  const auto iu = interior(u, 0, n), iv = interior(v, 1, n), cells = p.owned_box();
  for (int s = 0; s < o.steps; ++s) {
    ex_vel.exchange();
    // Predictor: advection (centred) and diffusion.
    each(iu, [&](idx i, idx j) {
      const double vb = 0.25 * (v(i - 1, j) + v(i, j) + v(i - 1, j + 1) + v(i, j + 1));
      const double adv = u(i, j) * (u(i + 1, j) - u(i - 1, j)) / (2 * h) +
                         vb * (u(i, j + 1) - u(i, j - 1)) / (2 * h);
      const double lap =
          (u(i + 1, j) + u(i - 1, j) + u(i, j + 1) + u(i, j - 1) - 4 * u(i, j)) / (h * h);
      us(i, j) = u(i, j) + dt * (nu * lap - adv);
    });
    each(iv, [&](idx i, idx j) {
      const double ub = 0.25 * (u(i, j - 1) + u(i + 1, j - 1) + u(i, j) + u(i + 1, j));
      const double adv = ub * (v(i + 1, j) - v(i - 1, j)) / (2 * h) +
                         v(i, j) * (v(i, j + 1) - v(i, j - 1)) / (2 * h);
      const double lap =
          (v(i + 1, j) + v(i - 1, j) + v(i, j + 1) + v(i, j - 1) - 4 * v(i, j)) / (h * h);
      vs(i, j) = v(i, j) + dt * (nu * lap - adv);
    });
    ex_star.exchange();  // the shared face copies of u*, v* for the divergence
    each(cells, [&](idx i, idx j) {
      rhs(i, j) = ((us(i + 1, j) - us(i, j)) + (vs(i, j + 1) - vs(i, j))) / (h * dt);
    });
    // Pressure: Jacobi sweeps, alternating p -> q -> p (an even count ends in p).
    for (int k = 0; k < o.jacobi; ++k) {
      auto& from = k % 2 == 0 ? p : q;
      auto& to = k % 2 == 0 ? q : p;
      (k % 2 == 0 ? ex_p : ex_q).exchange();
      each(cells, [&](idx i, idx j) {
        to(i, j) = 0.25 * (from(i + 1, j) + from(i - 1, j) + from(i, j + 1) + from(i, j - 1) -
                           h * h * rhs(i, j));
      });
    }
    ex_p.exchange();
    // Corrector: subtract the pressure gradient.
    each(iu, [&](idx i, idx j) { u(i, j) = us(i, j) - dt * (p(i, j) - p(i - 1, j)) / h; });
    each(iv, [&](idx i, idx j) { v(i, j) = vs(i, j) - dt * (p(i, j) - p(i, j - 1)) / h; });
    if (o.progress > 0 && (s + 1) % o.progress == 0 && comm.rank() == 0) {
      std::printf("step %d: u at the centre of rank 0's box %.6f\n", s + 1,
                  u(iu.lo[0] + (iu.hi[0] - iu.lo[0]) / 2, iu.lo[1] + (iu.hi[1] - iu.lo[1]) / 2));
      std::fflush(stdout);
    }
  }
  ex_vel.exchange();
  return {u, v, p};
}

// This rank's owned values of u, v, p, each preceded by its field (0, 1, 2) and global point.
std::vector<double> owned_values(const state& s) {
  std::vector<double> out;
  double k = 0;
  for (const auto* f : {&s.u, &s.v, &s.p}) {
    each(f->owned_points(), [&](idx i, idx j) {
      out.insert(out.end(), {k, double(i), double(j), f->at({i, j})});
    });
    k += 1;
  }
  return out;
}

int parse(int argc, char** argv, options& o, const mpi::communicator& world) {
  CLI::App app(
      "2-D incompressible lid-driven cavity (unit square, lid speed 1) on a MAC grid: u on "
      "x-faces, v on y-faces, p in cells, a projection method with Jacobi pressure iterations; "
      "halos, no-slip walls and the lid from halox. Rank 0 repeats the run on one rank and "
      "compares every owned value bit for bit. Last line: 'verified: ...' when identical, else "
      "'FAILED: ...' and exit code 1.",
      "cavity2d");
  app.add_option("--n", o.n, "cells per side")
      ->check(CLI::Range(idx(2), idx(4096)))
      ->capture_default_str();
  app.add_option("--steps", o.steps, "time steps")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--jacobi", o.jacobi, "pressure iterations per step (rounded up to even)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--re", o.re, "Reynolds number")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  example_app::add_progress(app, o.progress);
  return example_app::parse(world, app, argc, argv);
}

}  // namespace

int main(int argc, char** argv) {
  mpi::environment env(argc, argv);
  mpi::communicator world;
  options o;
  if (const int code =
          example_app::read_options(world, [&] { return parse(argc, argv, o, world); });
      code >= 0)
    return code;
  o.jacobi += o.jacobi % 2;

  std::vector<double> mine;
  halox::process_grid<2> grid{};
  try {
    const halox::cartesian<2> dom(world, {o.n, o.n});
    mine = owned_values(run(dom, o, world));
    grid = dom.grid();
  } catch (const std::exception& e) {
    example_app::abort_run("cavity2d", world, e);
  }
  std::vector<std::vector<double>> all;
  mpi::gather(world, mine, all, 0);
  int status = 0;
  if (world.rank() == 0) {
    // The reference: the same solver on one rank.
    options quiet = o;
    quiet.progress = 0;
    const mpi::communicator self(MPI_COMM_SELF, mpi::comm_attach);
    const halox::cartesian<2> one(self, {o.n, o.n});
    const state ref = run(one, quiet, self);
    long long values = 0, differ = 0;
    double ke = 0, umin = 0;
    for (const auto& part : all)
      for (std::size_t k = 0; k < part.size(); k += 4) {
        const int field = int(part[k]);
        const idx i = idx(part[k + 1]), j = idx(part[k + 2]);
        const double got = part[k + 3];
        const grid_field& f = field == 0 ? ref.u : field == 1 ? ref.v : ref.p;
        const double want = f.at({i, j});
        ++values;
        if (std::memcmp(&want, &got, sizeof(double)) != 0) ++differ;
        if (field == 0 && j == o.n / 2) umin = std::min(umin, got);
        if (field < 2) ke += 0.5 * got * got;
      }
    std::printf(
        "cavity2d: %lldx%lld cells, Re %g, %d steps, %d Jacobi iterations, %d ranks, "
        "process grid %dx%d\n",
        static_cast<long long>(o.n), static_cast<long long>(o.n), o.re, o.steps, o.jacobi,
        world.size(), grid.dims[0], grid.dims[1]);
    std::printf("kinetic energy %.9g, smallest u on the horizontal centre line %.6f\n",
                ke / double(o.n * o.n), umin);
    std::printf("values differing from the 1-rank run: %lld of %lld\n", differ, values);
    if (differ == 0 && values == 2 * o.n * (o.n + 1) + o.n * o.n) {
      std::printf("verified: u, v and p identical to the 1-rank run bit for bit (%lld values)\n",
                  values);
    } else {
      std::printf("FAILED: %lld values differ from the 1-rank run (%lld compared)\n", differ,
                  values);
      status = 1;
    }
    std::fflush(stdout);
  }
  mpi::broadcast(world, status, 0);
  return status;
}
