// cavity2d: 2-D incompressible lid-driven cavity on a MAC grid (u on x-faces, v on y-faces, p in
// cells), a projection method with Jacobi pressure iterations. Staggered halos and the no-slip
// walls and moving lid come from halox (centerings and boundary rules); rank 0 repeats the run
// on one rank and compares every owned value of u, v and p bit for bit.
//
// With --device (a CUDA build) u, v and p are device fields, the sweeps are CUDA kernels
// (cavity2d_device.cu) on one stream, in stream order with the exchanges (schedule_exchange /
// schedule_wait), and the walls and lid are the app's own kernels run after each exchange (one
// kernel for all four walls, rather than halox's device rules and a lid callback). The
// reference is then a 1-rank --device run; rank 0
// also compares with the 1-rank CPU run and prints how many values differ.
//
//   mpirun -np 4 ./cavity2d [--n 48] [--steps 300] [--jacobi 40] [--re 100] [--progress 50]
//                           [--device]
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <utility>
#include <vector>

#include <boost/mpi.hpp>
#include <boost/serialization/vector.hpp>
#include <halox/halox.hpp>

#include "../common/app.hpp"
#include "../common/cli.hpp"

#ifdef HALOX_CAVITY2D_DEVICE
#include "../common/select_gpu.hpp"
#include "cavity2d_device.hpp"
#endif

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
  bool device = false;
};

// The solver's constants; both runs (CPU and --device) take them from here.
struct constants {
  double h, nu, dt;
};
constants constants_of(const options& o) {
  const double h = 1.0 / double(o.n), nu = 1.0 / o.re;
  return {h, nu, 0.5 * std::min(0.25 * h * h / nu, h)};
}

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

// The walls as halox's boundary rules. No slip: the tangential velocity is mirrored with its
// sign flipped (zero at the wall), the normal one mirrored about its wall point; the lid
// (y = 1) moves at speed 1: u = 2 - u. The pressure has zero gradient across every wall.
struct wall_rules {
  halox::boundary<double, 2> u, v, p;
};

wall_rules walls(idx n) {
  wall_rules w;
  w.u.reflect({0, side::low}, {-1.0}).reflect({0, side::high}, {-1.0});
  w.u.reflect({1, side::low}, {-1.0}).callback({1, side::high}, [n](const auto& bf) {
    each(bf.cells, [&](idx i, idx j) { bf.f.at({i, j}) = 2.0 - bf.f.at({i, 2 * n - 1 - j}); });
  });
  w.v.reflect({0, side::low}, {-1.0}).reflect({0, side::high}, {-1.0});
  w.v.reflect({1, side::low}, {-1.0}).reflect({1, side::high}, {-1.0});
  for (int d = 0; d < 2; ++d) w.p.zero_gradient({d, side::low}).zero_gradient({d, side::high});
  return w;
}

// Predictor: u* and v* from advection (centred) and diffusion, on the points `iu` and `iv`.
void predict(const grid_field& u, const grid_field& v, const grid_field& us, const grid_field& vs,
             const halox::box<2>& iu, const halox::box<2>& iv, const constants& k) {
  const auto [h, nu, dt] = k;
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
}

// Whether rank 0 prints a progress line after step `s`.
bool progress_due(const options& o, const mpi::communicator& comm, int s) {
  return o.progress > 0 && (s + 1) % o.progress == 0 && comm.rank() == 0;
}

// The progress line after step `s`: `centre` is u at the centre of rank 0's box.
void print_progress(int s, double centre) {
  std::printf("step %d: u at the centre of rank 0's box %.6f\n", s + 1, centre);
  std::fflush(stdout);
}

// Runs the solver on `dom`; returns the final fields.
state run(const halox::cartesian<2>& dom, const options& o, const mpi::communicator& comm) {
  const idx n = o.n;
  const auto k = constants_of(o);
  const double h = k.h, dt = k.dt;
  auto u = dom.make_field<double>(st, halox::host, halox::centering::face(0));
  auto v = dom.make_field<double>(st, halox::host, halox::centering::face(1));
  auto us = dom.make_field<double>(st, halox::host, halox::centering::face(0));
  auto vs = dom.make_field<double>(st, halox::host, halox::centering::face(1));
  auto p = dom.make_field<double>(st), rhs = dom.make_field<double>(st);
  auto q = dom.make_field<double>(st);
  const wall_rules w = walls(n);
  auto ex_vel = halox::make_exchange(dom, halox::halo(st, u, w.u), halox::halo(st, v, w.v));
  auto ex_star = halox::make_exchange(dom, st, us, vs);
  auto ex_p = halox::make_exchange(dom, halox::halo(st, p, w.p));
  auto ex_q = halox::make_exchange(dom, halox::halo(st, q, w.p));

  const auto iu = interior(u, 0, n), iv = interior(v, 1, n), cells = p.owned_box();
  for (int s = 0; s < o.steps; ++s) {
    ex_vel.exchange();
    predict(u, v, us, vs, iu, iv, k);
    ex_star.exchange();  // the shared face copies of u*, v* for the divergence
    each(cells, [&](idx i, idx j) {
      rhs(i, j) = ((us(i + 1, j) - us(i, j)) + (vs(i, j + 1) - vs(i, j))) / (h * dt);
    });
    // Pressure: Jacobi sweeps, alternating p -> q -> p (an even count ends in p).
    for (int it = 0; it < o.jacobi; ++it) {
      auto& from = it % 2 == 0 ? p : q;
      auto& to = it % 2 == 0 ? q : p;
      (it % 2 == 0 ? ex_p : ex_q).exchange();
      each(cells, [&](idx i, idx j) {
        to(i, j) = 0.25 * (from(i + 1, j) + from(i - 1, j) + from(i, j + 1) + from(i, j - 1) -
                           h * h * rhs(i, j));
      });
    }
    ex_p.exchange();
    // Corrector: subtract the pressure gradient.
    each(iu, [&](idx i, idx j) { u(i, j) = us(i, j) - dt * (p(i, j) - p(i - 1, j)) / h; });
    each(iv, [&](idx i, idx j) { v(i, j) = vs(i, j) - dt * (p(i, j) - p(i, j - 1)) / h; });
    if (progress_due(o, comm, s))
      print_progress(s,
                     u(iu.lo[0] + (iu.hi[0] - iu.lo[0]) / 2, iu.lo[1] + (iu.hi[1] - iu.lo[1]) / 2));
  }
  ex_vel.exchange();
  return {u, v, p};
}

#ifdef HALOX_CAVITY2D_DEVICE
cavity2d_device::grid grid_of(const grid_field& f) {
  cavity2d_device::grid g;
  g.base = f.data();
  const auto a = f.allocated_box();
  for (int d = 0; d < 2; ++d) g.lo[d] = a.lo[d], g.stride[d] = f.strides()[d];
  return g;
}

cavity2d_device::box box_of(const halox::box<2>& b) {
  return {{b.lo[0], b.lo[1]}, {b.hi[0], b.hi[1]}};
}

// The device solver's time step, enqueued on `stream`: the fields as the kernels see them, the
// points each sweep updates, and the exchanges. The walls and lid are the app's kernels after
// each exchange (no boundary rules: one launch for every wall).
struct device_solver {
  cavity2d_device::grid gu, gv, gus, gvs, gp, gq, grhs;
  cavity2d_device::box iu, iv, cells, u_pts, v_pts;
  cavity2d_device::constants c;
  idx n;
  halox::halo_exchange &ex_vel, &ex_star, &ex_p, &ex_q;
  CUstream_st* stream;

  // The velocity halos, walls and lid included.
  void velocity() const {
    ex_vel.schedule_exchange(stream);
    ex_vel.schedule_wait(stream);
    cavity2d_device::velocity_walls(gu, u_pts, gv, v_pts, n, stream);
  }

  void step(int jacobi) const {
    namespace dev = cavity2d_device;
    velocity();
    dev::predict_u(gu, gv, gus, iu, c, stream);
    dev::predict_v(gu, gv, gvs, iv, c, stream);
    ex_star.schedule_exchange(stream);  // the shared face copies of u*, v*
    ex_star.schedule_wait(stream);
    dev::divergence(gus, gvs, grhs, cells, c, stream);
    for (int k = 0; k < jacobi; ++k) {
      const bool even = k % 2 == 0;
      auto& ex = even ? ex_p : ex_q;
      ex.schedule_exchange(stream);
      ex.schedule_wait(stream);
      dev::pressure_walls(even ? gp : gq, cells, n, stream);
      dev::jacobi(even ? gp : gq, even ? gq : gp, grhs, cells, c, stream);
    }
    ex_p.schedule_exchange(stream);
    ex_p.schedule_wait(stream);
    dev::pressure_walls(gp, cells, n, stream);
    dev::correct(gus, gp, gu, 0, iu, c, stream);
    dev::correct(gvs, gp, gv, 1, iv, c, stream);
  }
};

// The device time loop (and the last velocity halos); rank 0's progress lines read u at the
// centre of `iu`, its box of u points.
void device_steps(const device_solver& solver, const options& o, const mpi::communicator& comm,
                  const grid_field& u, const halox::box<2>& iu) {
  for (int s = 0; s < o.steps; ++s) {
    solver.step(o.jacobi);
    if (!progress_due(o, comm, s)) continue;
    double centre = 0;
    example_gpu::synchronize(solver.stream);
    example_gpu::copy_to_host(
        &centre,
        u.pointer({iu.lo[0] + (iu.hi[0] - iu.lo[0]) / 2, iu.lo[1] + (iu.hi[1] - iu.lo[1]) / 2}),
        sizeof(double));
    print_progress(s, centre);
  }
  solver.velocity();
  example_gpu::synchronize(solver.stream);
}

// The same solver with its fields in device memory: the sweeps as kernels on one stream, the
// exchanges stream-ordered on it, the walls and lid by the app's kernels after each exchange
// (the values halox's rules in run() give every point the solver reads). Returns the final
// u, v, p copied into host fields of the same layouts.
state run_device(const halox::cartesian<2>& dom, const options& o, const mpi::communicator& comm) {
  const idx n = o.n;
  const auto [h, nu, dt] = constants_of(o);
  auto face = [&](int d, halox::memory_space space) {
    return dom.make_field<double>(st, space, halox::centering::face(d));
  };
  auto cell = [&](halox::memory_space space) { return dom.make_field<double>(st, space); };
  auto u = face(0, halox::device), v = face(1, halox::device);
  auto us = face(0, halox::device), vs = face(1, halox::device);
  auto p = cell(halox::device), rhs = cell(halox::device), q = cell(halox::device);
  state out{face(0, halox::host), face(1, halox::host), cell(halox::host)};
  // The host copies have the device fields' layouts, so whole allocations copy as they are.
  const std::array<std::pair<grid_field*, grid_field*>, 3> copies{
      {{&out.u, &u}, {&out.v, &v}, {&out.p, &p}}};
  for (const auto& [dst, src] : copies)
    if (dst->allocated_box() != src->allocated_box() || dst->strides() != src->strides())
      throw halox::error("cavity2d: device and host fields differ in layout");
  auto ex_vel = halox::make_exchange(dom, halox::halo(st, u), halox::halo(st, v));
  auto ex_star = halox::make_exchange(dom, st, us, vs);
  auto ex_p = halox::make_exchange(dom, st, p), ex_q = halox::make_exchange(dom, st, q);
  const auto iu = interior(u, 0, n);
  // A CUDA failure below ends the job from inside this scope: unwinding would destroy an
  // exchange in flight, whose destructor waits for messages that may never come.
  try {
    const device_solver solver{.gu = grid_of(u),
                               .gv = grid_of(v),
                               .gus = grid_of(us),
                               .gvs = grid_of(vs),
                               .gp = grid_of(p),
                               .gq = grid_of(q),
                               .grhs = grid_of(rhs),
                               .iu = box_of(iu),
                               .iv = box_of(interior(v, 1, n)),
                               .cells = box_of(p.owned_box()),
                               .u_pts = box_of(u.owned_box()),
                               .v_pts = box_of(v.owned_box()),
                               .c = {h, dt, nu},
                               .n = n,
                               .ex_vel = ex_vel,
                               .ex_star = ex_star,
                               .ex_p = ex_p,
                               .ex_q = ex_q,
                               .stream = example_gpu::create_stream()};
    device_steps(solver, o, comm, u, iu);
    example_gpu::destroy_stream(solver.stream);
    for (const auto& [dst, src] : copies)
      example_gpu::copy_to_host(dst->data(), src->data(),
                                std::size_t(src->allocated_box().volume()) * sizeof(double));
  } catch (const std::exception& e) {
    example_app::abort_run("cavity2d", comm, e);
  }
  return out;
}

int select_gpu(const mpi::communicator& world) {
  return example_gpu::select_gpu(world, "cavity2d");
}
#else
state run_device(const halox::cartesian<2>&, const options&, const mpi::communicator&) {
  throw halox::error("cavity2d: built without CUDA");
}

int select_gpu(const mpi::communicator& world) {
  if (world.rank() == 0)
    std::fprintf(stderr,
                 "cavity2d: --device needs a build with CUDA (configure with "
                 "-DHALOX_ENABLE_CUDA=ON); this one has none\n");
  return 2;
}
#endif

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
  example_app::add_device(app, o.device);
  const int code = example_app::parse(world, app, argc, argv);
  o.jacobi += o.jacobi % 2;
  return code;
}

state solve(const halox::cartesian<2>& dom, const options& o, const mpi::communicator& comm) {
  return o.device ? run_device(dom, o, comm) : run(dom, o, comm);
}

// What rank 0 finds in the gathered values.
struct comparison {
  long long values = 0, differ = 0, differ_cpu = 0;  // differ_cpu: from the 1-rank CPU run
  double ke = 0, umin = 0;  // kinetic energy; smallest u on the horizontal centre line
};

// The gathered values (owned_values' records) against the same solver on one rank (with
// --device, on the GPU; the CPU run besides, for the count of values that differ from it).
comparison compare(const options& o, const std::vector<std::vector<double>>& all) {
  options quiet = o;
  quiet.progress = 0;
  const mpi::communicator self(MPI_COMM_SELF, mpi::comm_attach);
  const halox::cartesian<2> one(self, {o.n, o.n});
  const state ref = solve(one, quiet, self);
  const state cpu = o.device ? run(one, quiet, self) : ref;
  comparison c;
  for (const auto& part : all)
    for (std::size_t k = 0; k < part.size(); k += 4) {
      const int field = int(part[k]);
      const idx i = idx(part[k + 1]), j = idx(part[k + 2]);
      const double got = part[k + 3];
      auto differs = [&](const state& r) {
        const grid_field& f = field == 0 ? r.u : field == 1 ? r.v : r.p;
        const double want = f.at({i, j});
        return std::memcmp(&want, &got, sizeof(double)) != 0;
      };
      ++c.values;
      c.differ += differs(ref);
      c.differ_cpu += differs(cpu);
      if (field == 0 && j == o.n / 2) c.umin = std::min(c.umin, got);
      if (field < 2) c.ke += 0.5 * got * got;
    }
  return c;
}

// Rank 0's report; returns the exit status.
int report(const mpi::communicator& world, const options& o, const halox::process_grid<2>& grid,
           const comparison& c) {
  std::printf(
      "cavity2d: %lldx%lld cells, Re %g, %d steps, %d Jacobi iterations, %d ranks, "
      "process grid %dx%d%s\n",
      static_cast<long long>(o.n), static_cast<long long>(o.n), o.re, o.steps, o.jacobi,
      world.size(), grid.dims[0], grid.dims[1],
      o.device ? ", device fields, stream-ordered exchanges" : "");
  std::printf("kinetic energy %.9g, smallest u on the horizontal centre line %.6f\n",
              c.ke / double(o.n * o.n), c.umin);
  const char* against = o.device ? "the 1-rank --device run" : "the 1-rank run";
  std::printf("values differing from %s: %lld of %lld\n", against, c.differ, c.values);
  if (o.device)
    std::printf("values differing from the 1-rank CPU run: %lld of %lld\n", c.differ_cpu, c.values);
  int status = 0;
  if (c.differ == 0 && c.values == 2 * o.n * (o.n + 1) + o.n * o.n) {
    std::printf("verified: u, v and p identical to %s bit for bit (%lld values)\n", against,
                c.values);
  } else {
    std::printf("FAILED: %lld values differ from %s (%lld compared)\n", c.differ, against,
                c.values);
    status = 1;
  }
  std::fflush(stdout);
  return status;
}

int run_app(const mpi::communicator& world, const options& o) {
  if (o.device)
    if (const int code = select_gpu(world); code != 0) return code;
  const halox::cartesian<2> dom(world, {o.n, o.n});
  const std::vector<double> mine = owned_values(solve(dom, o, world));
  std::vector<std::vector<double>> all;
  mpi::gather(world, mine, all, 0);
  return world.rank() == 0 ? report(world, o, dom.grid(), compare(o, all)) : 0;
}

}  // namespace

int main(int argc, char** argv) {
  return example_app::run_main<options>("cavity2d", argc, argv, parse, run_app);
}
