// heat3d: explicit 7-point heat equation on a periodic 3-D grid, halos exchanged by halox,
// checked against a serial run of the same problem on rank 0. With --device (a CUDA build) the
// fields live in GPU memory and CUDA kernels update them, in stream order with the exchange.
// With --scaling, N^3 cells per rank (weak scaling), timed against a 1-rank run in the same job.
//
//   mpirun -np 4 ./heat3d [--n 48] [--steps 40] [--no-overlap] [--device] [--scaling]
//                         [--progress STEPS]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <mpi.h>

#include <boost/mpi.hpp>
#include <halox/halox.hpp>

#include "../common/app.hpp"
#include "../common/cli.hpp"
#include "../common/time_loop.hpp"

#ifdef HALOX_HEAT3D_DEVICE
#include "../common/select_gpu.hpp"
#include "heat3d_device.hpp"
#endif

namespace mpi = boost::mpi;
using idx = halox::index;
using example_app::clock_type;
using example_app::since;
using example_app::timing;

namespace {

struct options {
  idx n = 48;
  int steps = 40;
  bool overlap = true;
  bool device = false;
  bool graph = false;    // --graph: the steps replayed as CUDA graphs
  bool scaling = false;  // weak scaling: n^3 cells per rank, against a 1-rank run
  int progress = 0;      // steps between progress lines on rank 0; 0: none
};

// Progress lines for long runs: rank 0, every `every` steps, host clock. On the GPU the host
// runs at most a step ahead (schedule_exchange waits for its pack kernel), so no
// synchronisation is added for it.
class progress_meter {
 public:
  progress_meter(const options& o, const mpi::communicator& comm, double cells_per_step, int steps)
      : every_(comm.rank() == 0 ? o.progress : 0), cells_(cells_per_step), steps_(steps) {}
  // After step `s`, `elapsed` seconds into the loop.
  void step_done(int s, double elapsed) const {
    if (every_ <= 0 || (s + 1) % every_ != 0) return;
    std::printf("step %d/%d, %.2f s, %.3f Mcell-updates/s\n", s + 1, steps_, elapsed,
                cells_ * (s + 1) / elapsed / 1e6);
    std::fflush(stdout);
  }

 private:
  int every_;
  double cells_;
  int steps_;
};

constexpr double alpha = 0.1;  // diffusion number, stable below 1/6

using extents3 = halox::extents<3>;

double initial(idx i, idx j, idx k, const extents3& n) {
  const double two_pi = 6.283185307179586;
  const double x = double(i) / double(n[0]), y = double(j) / double(n[1]),
               z = double(k) / double(n[2]);
  return std::sin(two_pi * x) * std::cos(2 * two_pi * y) + 0.5 * std::sin(3 * two_pi * z) +
         (i == n[0] / 2 && j == n[1] / 3 && k == n[2] / 4 ? 10.0 : 0.0);
}

// The one update formula both runs use, so both round alike (heat3d_device.cu repeats it for
// the GPU, operation for operation).
inline double update(double c, double xm, double xp, double ym, double yp, double zm, double zp) {
  return c + alpha * ((xm + xp) + (ym + yp) + (zm + zp) - 6.0 * c);
}

// Serial reference: one global array, periodic neighbours by explicit wrap-around, no halox.
// The planes of a step are shared out over the host's cores (each cell is computed exactly as
// in a one-thread loop), so that the large --scaling problems are checked in seconds.
std::vector<double> serial_run(const extents3& n, int steps) {
  std::vector<double> u(std::size_t(n[0] * n[1] * n[2])), v(u.size());
  auto at = [n](idx i, idx j, idx k) { return std::size_t((i * n[1] + j) * n[2] + k); };
  auto wrap = [](idx i, idx len) { return i < 0 ? i + len : i >= len ? i - len : i; };
  const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 64u);
  auto planes = [&](auto&& body) {  // body(i) for every plane i, spread over the threads
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        for (idx i = t; i < n[0]; i += threads) body(i);
      });
    for (auto& th : pool) th.join();
  };
  planes([&](idx i) {
    for (idx j = 0; j < n[1]; ++j)
      for (idx k = 0; k < n[2]; ++k) u[at(i, j, k)] = initial(i, j, k, n);
  });
  for (int s = 0; s < steps; ++s) {
    planes([&](idx i) {
      const idx im = wrap(i - 1, n[0]), ip = wrap(i + 1, n[0]);
      for (idx j = 0; j < n[1]; ++j) {
        const idx jm = wrap(j - 1, n[1]), jp = wrap(j + 1, n[1]);
        for (idx k = 0; k < n[2]; ++k) {
          const idx km = wrap(k - 1, n[2]), kp = wrap(k + 1, n[2]);
          v[at(i, j, k)] = update(u[at(i, j, k)], u[at(im, j, k)], u[at(ip, j, k)], u[at(i, jm, k)],
                                  u[at(i, jp, k)], u[at(i, j, km)], u[at(i, j, kp)]);
        }
      }
    });
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

void fill_initial(const halox::field<double, 3>& u, const extents3& n) {
  const auto b = u.owned_box();
  for (idx i = b.lo[0]; i < b.hi[0]; ++i)
    for (idx j = b.lo[1]; j < b.hi[1]; ++j)
      for (idx k = b.lo[2]; k < b.hi[2]; ++k) u(i, j, k) = initial(i, j, k, n);
}

// CPU run: returns the final state.
halox::field<double, 3> run_host(const halox::cartesian<3>& dom, const halox::stencil<3>& st,
                                 const options& o, const mpi::communicator& world, timing& t) {
  auto u = dom.make_field<double>(st), v = dom.make_field<double>(st);
  fill_initial(u, dom.global_box().hi);
  // One exchange object per field: steps alternate which field holds the current state.
  halox::halo_exchange ex_u = halox::make_exchange(dom, st, u),
                       ex_v = halox::make_exchange(dom, st, v);
  const progress_meter progress(o, world, double(dom.global_box().volume()), o.steps);
  return example_app::run_steps(
      world, o, st, u, v, ex_u, ex_v, sweep,
      [&](int s, double elapsed) { progress.step_done(s, elapsed); }, t);
}

#ifdef HALOX_HEAT3D_DEVICE
[[noreturn]] void abort_run(const mpi::communicator& world, const std::exception& e) {
  example_app::abort_run("heat3d", world, e);
}

int select_gpu(const mpi::communicator& world) {
  return example_gpu::select_gpu(world, "heat3d");
}

heat3d_device::grid grid_of(const halox::field<double, 3>& f) {
  heat3d_device::grid g;
  g.base = f.data();
  const auto a = f.allocated_box();
  for (int d = 0; d < 3; ++d) g.lo[d] = a.lo[d], g.stride[d] = f.strides()[d];
  return g;
}

heat3d_device::parts parts_of(const std::vector<halox::box<3>>& boxes) {
  heat3d_device::parts p;
  if (boxes.size() > 6) throw halox::error("heat3d: more than six parts in one sweep");
  for (const auto& b : boxes) {
    auto& q = p.part[p.count++];
    for (int d = 0; d < 3; ++d) q.lo[d] = b.lo[d], q.hi[d] = b.hi[d];
  }
  return p;
}

// One GPU time step on `stream`: the exchange of the field it reads scheduled after the previous
// step's kernels, the interior beside it (with overlap: it reads no halo), then the rest once
// the halos have arrived. No host synchronisation.
struct device_step {
  const options& o;
  heat3d_device::grid gu, gv;
  halox::halo_exchange &ex_u, &ex_v;
  heat3d_device::parts whole, inner, shell;
  CUstream_st* stream;
  timing& t;

  void operator()(int s) const {
    const bool even = s % 2 == 0;
    const auto& in = even ? gu : gv;
    const auto& out = even ? gv : gu;
    auto& ex = even ? ex_u : ex_v;
    auto e0 = clock_type::now();
    ex.schedule_exchange(stream);  // packs after the previous step's kernels
    t.exchange_s += since(e0);
    if (o.overlap) heat3d_device::sweep(in, out, inner, alpha, stream);  // reads no halo
    e0 = clock_type::now();
    ex.schedule_wait(stream);  // later work on `stream` sees the halos
    t.exchange_s += since(e0);
    heat3d_device::sweep(in, out, o.overlap ? shell : whole, alpha, stream);
  }
};

// The GPU time loop, between two barriers of `world`, timed into `t.seconds`. --graph: steps 0
// and 1 (u to v, v to u) captured once, exchanges included, and replayed; an odd last step runs
// as it is.
void device_loop(const options& o, const mpi::communicator& world, const device_step& step,
                 const progress_meter& progress) {
  CUgraphExec_st* pair = nullptr;
  if (o.graph) {
    example_gpu::begin_capture(step.stream);
    step(0);
    step(1);
    pair = example_gpu::end_capture(step.stream);
    step.t.exchange_s = 0;
  }
  world.barrier();
  const auto t0 = clock_type::now();
  for (int s = 0; s < o.steps; ++s) {
    if (pair != nullptr && s + 1 < o.steps) {
      example_gpu::launch_graph(pair, step.stream);
      progress.step_done(s++, since(t0));
    } else {
      step(s);
    }
    progress.step_done(s, since(t0));
  }
  example_gpu::synchronize(step.stream);
  world.barrier();
  step.t.seconds = since(t0);
  if (pair != nullptr) example_gpu::destroy_graph(pair);
}

// GPU run: fields in device memory, the update as kernels on one stream, ordered with the
// exchange by schedule_exchange/schedule_wait (no host synchronisation inside the loop).
// Returns the final state copied into a host field of the same layout.
halox::field<double, 3> run_device(const halox::cartesian<3>& dom, const halox::stencil<3>& st,
                                   const options& o, const mpi::communicator& world, timing& t) {
  // Host mirror: the same stencil gives the same allocated box and strides, so whole
  // allocations copy as they are.
  auto mirror = dom.make_field<double>(st);
  auto u = dom.make_field<double>(st, halox::device), v = dom.make_field<double>(st, halox::device);
  if (u.allocated_box() != mirror.allocated_box() || u.strides() != mirror.strides())
    throw halox::error("heat3d: device and host fields differ in layout");
  const std::size_t bytes = std::size_t(mirror.allocated_box().volume()) * sizeof(double);
  fill_initial(mirror, dom.global_box().hi);
  example_gpu::copy_to_device(u.data(), mirror.data(), bytes);

  const auto b = u.owned_box();
  const auto split = halox::split_interior(b, st);
  halox::halo_exchange ex_u = halox::make_exchange(dom, st, u),
                       ex_v = halox::make_exchange(dom, st, v);
  // A CUDA failure below ends the job from inside this scope: unwinding would destroy an
  // exchange in flight, whose destructor waits for messages that may never come.
  try {
    CUstream_st* const stream = example_gpu::create_stream();
    const device_step step{.o = o,
                           .gu = grid_of(u),
                           .gv = grid_of(v),
                           .ex_u = ex_u,
                           .ex_v = ex_v,
                           .whole = parts_of({b}),
                           .inner = parts_of({split.interior}),
                           .shell = parts_of(split.shell),
                           .stream = stream,
                           .t = t};
    const progress_meter progress(o, world, double(dom.global_box().volume()), o.steps);
    device_loop(o, world, step, progress);
    example_gpu::copy_to_host(mirror.data(), (o.steps % 2 == 0 ? u : v).data(), bytes);
    example_gpu::destroy_stream(stream);
  } catch (const std::exception& e) {
    abort_run(world, e);
  }
  return mirror;
}
#else
int select_gpu(const mpi::communicator& world) {
  if (world.rank() == 0)
    std::fprintf(
        stderr,
        "heat3d: --device needs a build with CUDA (configure with -DHALOX_ENABLE_CUDA=ON); "
        "this one has none\n");
  return 2;
}

halox::field<double, 3> run_device(const halox::cartesian<3>&, const halox::stencil<3>&,
                                   const options&, const mpi::communicator&, timing&) {
  throw halox::error("heat3d: built without CUDA");
}
#endif

// Reads the options; returns -1 to run, else the exit code (0 after --help, 2 on a bad one).
int parse(int argc, char** argv, options& o, const mpi::communicator& world) {
  CLI::App app(
      "Explicit 7-point heat equation on a periodic N^3 grid, halos exchanged with halox over "
      "the ranks; rank 0 repeats the run serially and compares. Last line: 'verified ...' when "
      "max |distributed - serial| <= 1e-12.",
      "heat3d");
  app.add_option("--n", o.n, "cells per dimension (with --scaling: per rank)")
      ->check(CLI::Range(idx(3), idx(1) << 40))
      ->capture_default_str();
  app.add_option("--steps", o.steps, "time steps")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  bool blocking = false;
  app.add_flag("--no-overlap", blocking,
               "blocking exchanges instead of overlapping the interior update with them");
  example_app::add_device(app, o.device);
  app.add_flag("--graph", o.graph,
               "with --device: capture two time steps (exchange, interior, shell, both fields) "
               "into a CUDA graph once, then replay it");
  app.add_flag("--scaling", o.scaling,
               "weak scaling: N^3 cells per rank; rank 0 first runs N^3 cells alone and the "
               "efficiency printed is its time over the P-rank time");
  example_app::add_progress(app, o.progress);
  const int code = example_app::parse(world, app, argc, argv);
  o.overlap = !blocking;
  if (code < 0 && o.graph && !o.device) throw halox::error("heat3d: --graph needs --device");
  return code;
}

constexpr halox::periodic<3> all_periodic{true, true, true};

// The domain: N^3 cells, or with --scaling the process grid first, then N cells per rank along
// each dimension.
halox::cartesian<3> domain_of(const mpi::communicator& world, const options& o) {
  extents3 global{o.n, o.n, o.n};
  std::optional<halox::process_grid<3>> grid;
  if (o.scaling) {
    grid = halox::balanced_grid<3>(world.size(), global);
    for (int d = 0; d < 3; ++d) global[d] = o.n * grid->dims[d];
  }
  return halox::cartesian<3>(world, global, all_periodic, grid);
}

halox::field<double, 3> solve(const halox::cartesian<3>& dom, const options& o,
                              const mpi::communicator& comm, timing& t) {
  constexpr auto st = halox::stencil<3>::star(1);
  return o.device ? run_device(dom, st, o, comm, t) : run_host(dom, st, o, comm, t);
}

// Rank 0's first line, before any progress line.
void print_header(const mpi::communicator& world, const options& o,
                  const halox::cartesian<3>& dom) {
  if (world.rank() != 0) return;
  const char* mode = o.device ? (o.graph     ? "device, CUDA graphs of two steps"
                                 : o.overlap ? "device, stream-ordered exchange overlapped"
                                             : "device, stream-ordered exchange, no overlap")
                              : (o.overlap ? "overlapped exchange" : "blocking exchange");
  const auto global = dom.global_box().hi;
  std::printf("heat3d: %lldx%lldx%lld cells, %d steps, %d ranks, process grid %dx%dx%d, %s\n",
              static_cast<long long>(global[0]), static_cast<long long>(global[1]),
              static_cast<long long>(global[2]), o.steps, world.size(), dom.grid().dims[0],
              dom.grid().dims[1], dom.grid().dims[2], mode);
  std::fflush(stdout);
}

// Rank 0's timings (`solo`: the 1-rank run of --scaling), printed before the check.
void print_timings(const mpi::communicator& world, const options& o, const halox::cartesian<3>& dom,
                   const timing& t, const timing& solo) {
  if (world.rank() != 0) return;
  const double cells = double(dom.global_box().volume()) * o.steps;
  std::printf(
      "throughput: %.3f Mcell-updates/s (%.4f s total, %.4f s in halo exchange calls on "
      "rank 0)\n",
      cells / t.seconds / 1e6, t.seconds, t.exchange_s);
  if (o.scaling) {
    const double per_rank = double(o.n) * double(o.n) * double(o.n) * o.steps;
    std::printf(
        "weak scaling: %lld^3 cells per rank; 1 rank %.4f s (%.3f Mcell-updates/s), %d ranks "
        "%.4f s (%.3f Mcell-updates/s per rank)\n",
        static_cast<long long>(o.n), solo.seconds, per_rank / solo.seconds / 1e6, world.size(),
        t.seconds, per_rank / t.seconds / 1e6);
    std::printf("efficiency: %.2f\n", 100.0 * solo.seconds / t.seconds);
  }
  std::fflush(stdout);
}

// Owned boxes travel to rank 0 in plain MPI pieces below 2^31 elements: large --scaling runs
// hold over 2 GB in all.
constexpr std::size_t piece = std::size_t(1) << 30;
constexpr int values_tag = 7;

// This rank's owned cells of `f`, in row-major order.
std::vector<double> owned_values(const halox::field<double, 3>& f) {
  const auto b = f.owned_box();
  std::vector<double> out;
  out.reserve(std::size_t(b.volume()));
  for (idx i = b.lo[0]; i < b.hi[0]; ++i)
    for (idx j = b.lo[1]; j < b.hi[1]; ++j)
      for (idx k = b.lo[2]; k < b.hi[2]; ++k) out.push_back(f(i, j, k));
  return out;
}

// Rank 0: max |distributed - serial| over every rank's owned box (its own is `mine`).
double max_difference(const mpi::communicator& world, const options& o,
                      const halox::cartesian<3>& dom, const std::vector<double>& mine) {
  const extents3 global = dom.global_box().hi;
  const auto ref = serial_run(global, o.steps);
  double diff = 0;
  std::vector<double> theirs;
  for (int r = 0; r < world.size(); ++r) {
    const auto rb = dom.box_of(r);
    const std::vector<double>* got = &mine;
    if (r != 0) {
      theirs.resize(std::size_t(rb.volume()));
      for (std::size_t p = 0; p < theirs.size(); p += piece)
        MPI_Recv(theirs.data() + p, int(std::min(piece, theirs.size() - p)), MPI_DOUBLE, r,
                 values_tag, MPI_Comm(world), MPI_STATUS_IGNORE);
      got = &theirs;
    }
    std::size_t p = 0;
    for (idx i = rb.lo[0]; i < rb.hi[0]; ++i)
      for (idx j = rb.lo[1]; j < rb.hi[1]; ++j)
        for (idx k = rb.lo[2]; k < rb.hi[2]; ++k)
          diff = std::max(
              diff, std::abs((*got)[p++] - ref[std::size_t((i * global[1] + j) * global[2] + k)]));
  }
  return diff;
}

// Rank 0 receives the owned boxes one rank at a time and compares with the serial run; returns
// the exit status (rank 0's verdict).
int verify(const mpi::communicator& world, const options& o, const halox::cartesian<3>& dom,
           const halox::field<double, 3>& result) {
  const auto mine = owned_values(result);
  if (world.rank() != 0) {
    for (std::size_t p = 0; p < mine.size(); p += piece)
      MPI_Send(mine.data() + p, int(std::min(piece, mine.size() - p)), MPI_DOUBLE, 0, values_tag,
               MPI_Comm(world));
    return 0;
  }
  const double diff = max_difference(world, o, dom, mine);
  int status = 0;
  if (diff <= 1e-12) {
    std::printf("verified: max |distributed - serial| = %.3e <= 1e-12\n", diff);
  } else {
    std::printf("FAILED: max |distributed - serial| = %.3e > 1e-12\n", diff);
    status = 1;
  }
  std::fflush(stdout);
  return status;
}

int run(const mpi::communicator& world, const options& o) {
  const halox::cartesian<3> dom = domain_of(world, o);
  print_header(world, o, dom);
  if (o.device)
    if (const int code = select_gpu(world); code != 0) return code;
  timing t, solo;
  if (o.scaling) {  // the 1-rank reference: rank 0 alone, N^3 cells, the same steps
    const mpi::communicator alone = world.split(world.rank() == 0 ? 0 : 1);
    if (world.rank() == 0) {
      const halox::cartesian<3> one(alone, {o.n, o.n, o.n}, all_periodic);
      solve(one, o, alone, solo);
    }
    world.barrier();
  }
  const halox::field<double, 3> result = solve(dom, o, world, t);  // the final state, on the host
  print_timings(world, o, dom, t, solo);  // before the check: it does not wait for it
  return verify(world, o, dom, result);
}

}  // namespace

int main(int argc, char** argv) {
  return example_app::run_main<options>("heat3d", argc, argv, parse, run);
}
