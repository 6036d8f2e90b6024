// jacobi2d: the problem of NVIDIA's multi-GPU Jacobi benchmark (multi-gpu-programming-models),
// written with halox. 2-D 5-point Jacobi in single precision on an nx x ny grid, rows split
// over the ranks (a P x 1 process grid), the L2 norm of the update reduced over the ranks every
// nccheck iterations. Rank 0 first runs the same problem alone (its own 1-rank communicator and
// domain) for the strong-scaling reference, then every rank runs it together; the distributed
// final field is compared with the single-rank one.
//
// Boundary conditions, as in the benchmark (a[iy * nx + ix], ix fastest):
//   - left/right (columns ix = 0 and ix = nx - 1): Dirichlet, fixed at sin(2 pi iy / (ny - 1));
//   - top/bottom: periodic. The benchmark computes rows iy = 1 .. ny-2 and keeps rows 0 and
//     ny-1 as copies of rows ny-2 and 1. Here halox's dimension 0 (y, periodic, extent ny - 2)
//     holds exactly the computed rows, global row g being the benchmark's iy = g + 1, and
//     halox's periodic halo plays rows 0 and ny-1. Dimension 1 (x, contiguous, extent nx, not
//     periodic) holds every column; columns 0 and nx-1 are owned but never updated.
//   - everything else starts at 0.
// Per iteration: a_new = 0.25 * (a[x+1] + a[x-1] + a[y+1] + a[y-1]) on cells 1 <= x < nx-1,
// and on norm iterations sqrt(allreduce(sum (a_new - a)^2)); then a and a_new swap.
//
//   mpirun -np 4 ./jacobi2d [--nx 16384] [--ny 16384] [--steps 1000] [--nccheck 1]
//                           [--progress 100] [--overlap] [--device [--graph]]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include <mpi.h>

#include <boost/mpi.hpp>
#include <boost/serialization/vector.hpp>
#include <halox/halox.hpp>

#include "../common/app.hpp"
#include "../common/cli.hpp"
#include "../common/time_loop.hpp"

#ifdef HALOX_JACOBI2D_DEVICE
#include "../common/select_gpu.hpp"
#include "jacobi2d_device.hpp"
#endif

namespace mpi = boost::mpi;
using idx = halox::index;
using grid_field = halox::field<float, 2>;
using example_app::clock_type;
using example_app::since;

namespace {

struct options {
  idx nx = 16384, ny = 16384;
  int niter = 1000;
  int nccheck = 1;     // iterations between L2-norm computations
  int progress = 100;  // iterations between progress lines on rank 0; 0: none
  bool overlap = false;
  bool device = false;
  bool graph = false;  // --graph: iterations replayed as CUDA graphs
};

struct result {
  grid_field field;  // the final state, on the host
  double seconds = 0;
  double norm = 0;  // the last L2 norm computed
};

// The one update formula both paths use (jacobi2d_device.cu repeats it for the GPU, operation
// for operation), in the benchmark's order: right, left, below, above.
inline float update(float xp, float xm, float yp, float ym) {
  return 0.25f * (((xp + xm) + yp) + ym);
}

// Initial state: 0 inside, the benchmark's fixed values on the left and right columns (in
// a[] and a_new[] alike, since neither column is ever written).
void fill_initial(const grid_field& a, const options& o) {
  const double pi = 3.14159265358979323846;
  const auto b = a.owned_box();
  for (idx g = b.lo[0]; g < b.hi[0]; ++g) {
    const float edge = float(std::sin(2.0 * pi * double(g + 1) / double(o.ny - 1)));
    for (idx x = b.lo[1]; x < b.hi[1]; ++x) a(g, x) = x == 0 || x == o.nx - 1 ? edge : 0.0f;
  }
}

// The owned box split for overlap (halox::split_interior), each part kept to the updated
// columns 1 <= x < nx-1: the interior, then the first and last owned rows.
struct sweep_parts {
  halox::box<2> whole, interior;
  std::vector<halox::box<2>> shell;
};

sweep_parts parts_of(const grid_field& a, const halox::stencil<2>& st, idx nx) {
  const auto owned = a.owned_box();
  const halox::box<2> updated{{owned.lo[0], 1}, {owned.hi[0], nx - 1}};
  const auto split = halox::split_interior(owned, st);
  sweep_parts p{halox::intersect(owned, updated), halox::intersect(split.interior, updated), {}};
  for (const auto& slab : split.shell)
    if (const auto s = halox::intersect(slab, updated); !s.empty()) p.shell.push_back(s);
  return p;
}

// Updates the cells of `part` of `out` from `in`; returns the sum of the squared residuals
// (0 unless `norm`).
double sweep(const grid_field& in, const grid_field& out, const halox::box<2>& part, bool norm) {
  if (part.empty()) return 0;
  const idx s = in.strides()[0];
  double sum = 0;
  for (idx y = part.lo[0]; y < part.hi[0]; ++y) {
    const float* c = in.pointer({y, part.lo[1]});
    float* o = out.pointer({y, part.lo[1]});
    const idx w = part.hi[1] - part.lo[1];
    if (norm) {
      for (idx k = 0; k < w; ++k) {
        o[k] = update(c[k + 1], c[k - 1], c[k + s], c[k - s]);
        const float residue = o[k] - c[k];
        sum += double(residue) * double(residue);
      }
    } else {
      for (idx k = 0; k < w; ++k) o[k] = update(c[k + 1], c[k - 1], c[k + s], c[k - s]);
    }
  }
  return sum;
}

bool norm_iteration(const options& o, int it) {
  return it % o.nccheck == 0 || it == o.niter - 1;
}

// Rank 0's progress line every o.progress iterations.
void print_progress(const mpi::communicator& comm, const options& o, int it, double norm,
                    clock_type::time_point t0) {
  if (o.progress <= 0 || comm.rank() != 0 || (it + 1) % o.progress != 0) return;
  const double t = since(t0);
  std::printf("  [%d rank%s] iteration %5d/%d  norm %.6e  %.3f s  %.1f iterations/s\n", comm.size(),
              comm.size() == 1 ? "" : "s", it + 1, o.niter, norm, t, double(it + 1) / t);
  std::fflush(stdout);
}

// The computed rows (periodic) by every column, rows split over `comm`'s ranks.
halox::cartesian<2> domain_of(const mpi::communicator& comm, const options& o) {
  return halox::cartesian<2>(comm, {o.ny - 2, o.nx}, halox::periodic{true, false},
                             halox::process_grid<2>{{comm.size(), 1}});
}

// The exchange of field `f` (`name`), labelled with the run's rank count: the report of one job
// (HALOX_REPORT, docs/observing.md) then tells the 1-rank reference's objects from the others.
template <class T>
halox::halo_exchange labelled_exchange(const halox::cartesian<2>& dom, const halox::stencil<2>& st,
                                       const halox::field<T, 2>& f, const char* name) {
  halox::exchange_options o;
  o.label = std::string(name) + " (" + std::to_string(dom.comm().size()) + " rank(s))";
  return halox::make_exchange(dom, st, o, f);
}

// CPU run over `comm`'s ranks.
result run_host(const mpi::communicator& comm, const options& o) {
  constexpr auto st = halox::stencil<2>::star(1);
  const halox::cartesian<2> dom = domain_of(comm, o);
  auto a = dom.make_field<float>(st), a_new = dom.make_field<float>(st);
  fill_initial(a, o);
  fill_initial(a_new, o);
  const auto parts = parts_of(a, st, o.nx);
  halox::halo_exchange ex_a = labelled_exchange(dom, st, a, "jacobi2d a"),
                       ex_new = labelled_exchange(dom, st, a_new, "jacobi2d a_new");

  result r;
  comm.barrier();
  const auto t0 = clock_type::now();
  for (int it = 0; it < o.niter; ++it) {
    const bool even = it % 2 == 0, norm = norm_iteration(o, it);
    const auto& in = even ? a : a_new;
    const auto& out = even ? a_new : a;
    auto& ex = even ? ex_a : ex_new;
    double sum = 0;
    if (o.overlap) {
      auto h = ex.start();
      sum += sweep(in, out, parts.interior, norm);  // reads no halo: overlaps the messages
      h.wait();
      for (const auto& slab : parts.shell) sum += sweep(in, out, slab, norm);
    } else {
      ex.exchange();
      sum = sweep(in, out, parts.whole, norm);
    }
    if (norm) r.norm = std::sqrt(mpi::all_reduce(comm, sum, std::plus<double>()));
    print_progress(comm, o, it, r.norm, t0);
  }
  comm.barrier();
  r.seconds = since(t0);
  r.field = o.niter % 2 == 0 ? a : a_new;
  return r;
}

#ifdef HALOX_JACOBI2D_DEVICE
[[noreturn]] void abort_run(const std::exception& e) {
  example_app::abort_run("jacobi2d", mpi::communicator(), e);
}

int select_gpu(const mpi::communicator& world) {
  return example_gpu::select_gpu(world, "jacobi2d");
}

jacobi2d_device::grid grid_of(const grid_field& f) {
  jacobi2d_device::grid g;
  g.base = f.data();
  const auto al = f.allocated_box();
  for (int d = 0; d < 2; ++d) g.lo[d] = al.lo[d], g.stride[d] = f.strides()[d];
  return g;
}

jacobi2d_device::parts device_parts(const std::vector<halox::box<2>>& boxes) {
  jacobi2d_device::parts p;
  if (boxes.size() > 3) throw halox::error("jacobi2d: more than three parts in one sweep");
  for (const auto& b : boxes) {
    auto& q = p.part[p.count++];
    for (int d = 0; d < 2; ++d) q.lo[d] = b.lo[d], q.hi[d] = b.hi[d];
  }
  return p;
}

// What the GPU loops work on: the two fields as the kernels see them, with their exchanges; the
// parts of a sweep; the stream; the norm's buffers.
struct device_run {
  CUstream_st* stream;
  const jacobi2d_device::norm_buffer& nb;
  jacobi2d_device::grid ga, gnew;
  jacobi2d_device::parts inner, shell;
  halox::halo_exchange &ex_a, &ex_new;
};

// The loop without graphs. An iteration's new field is exchanged as soon as its sweeps are
// enqueued, so the exchange overlaps the norm's readback and host all-reduce (as in the NCCL
// variant of NVIDIA's benchmark) and the next interior sweep (it reads no halo; as in its
// overlap variant). The host waits only for the norm's copy. Returns the loop's seconds; `norm`
// the last norm.
double stream_loop(const mpi::communicator& comm, const options& o, const device_run& d,
                   double& norm) {
  comm.barrier();
  const auto t0 = clock_type::now();
  if (o.niter > 0) d.ex_a.schedule_exchange(d.stream);  // the first iteration's halos
  for (int it = 0; it < o.niter; ++it) {
    const bool even = it % 2 == 0, with_norm = norm_iteration(o, it);
    const auto& in = even ? d.ga : d.gnew;
    const auto& out = even ? d.gnew : d.ga;
    auto& ex_in = even ? d.ex_a : d.ex_new;
    auto& ex_out = even ? d.ex_new : d.ex_a;
    double* const acc = with_norm ? d.nb.device : nullptr;
    jacobi2d_device::sweep(in, out, d.inner, acc, d.stream);  // reads no halo: overlaps
    ex_in.schedule_wait(d.stream);  // later work on the stream sees the halos of `in`
    jacobi2d_device::sweep(in, out, d.shell, acc, d.stream);
    // The next iteration's halos as soon as `out` is complete: the exchange runs while the
    // norm is read back and all-reduced, and while the next interior sweep runs.
    if (it + 1 < o.niter) ex_out.schedule_exchange(d.stream);
    if (with_norm) {
      jacobi2d_device::fetch_norm(d.nb, d.stream);
      const double sum = jacobi2d_device::wait_norm(d.nb);
      norm = std::sqrt(mpi::all_reduce(comm, sum, std::plus<double>()));
    }
    print_progress(comm, o, it, norm, t0);
  }
  example_gpu::synchronize(d.stream);
  comm.barrier();
  return since(t0);
}

// --graph: each iteration as NVIDIA's nccl_graphs runs it, captured once into a CUDA graph per
// parity (which field is read) and per norm (with the norm's accumulation and read-back, or
// without), then replayed. In each graph two branches start together: the first and last owned
// rows of `out` and the whole exchange of `out` on a stream of the greatest priority, and the
// interior (which reads no halo) on the launch stream; the norm's read-back follows both. So
// each graph holds whole exchanges, and the interior waits for neither the edge rows nor the
// exchange. The host launches one graph per iteration and waits only for the norm's copy.
// Returns the loop's seconds; `norm` the last norm.
double graph_loop(const mpi::communicator& comm, const options& o, const device_run& d,
                  double& norm) {
  d.ex_a.schedule_exchange(d.stream);  // the first iteration's halos, outside the graphs
  d.ex_a.schedule_wait(d.stream);
  CUstream_st* const edges = example_gpu::create_priority_stream();
  CUevent_st* const fork = example_gpu::create_event();
  CUevent_st* const join = example_gpu::create_event();
  CUgraphExec_st* graph[2][2] = {};  // [norm][parity of the iteration]
  for (int with_norm = 0; with_norm < 2; ++with_norm)
    for (int parity = 0; parity < 2; ++parity) {
      const auto& in = parity == 0 ? d.ga : d.gnew;
      const auto& out = parity == 0 ? d.gnew : d.ga;
      auto& ex_out = parity == 0 ? d.ex_new : d.ex_a;
      double* const acc = with_norm ? d.nb.device : nullptr;
      example_gpu::begin_capture(d.stream);
      example_gpu::follow(edges, d.stream, fork);
      jacobi2d_device::sweep(in, out, d.shell, acc, edges);
      ex_out.schedule_exchange(edges);
      ex_out.schedule_wait(edges);
      jacobi2d_device::sweep(in, out, d.inner, acc, d.stream);
      example_gpu::follow(d.stream, edges, join);
      if (with_norm) jacobi2d_device::fetch_norm(d.nb, d.stream, true);
      graph[with_norm][parity] = example_gpu::end_capture(d.stream);
    }
  example_gpu::synchronize(d.stream);
  comm.barrier();
  const auto t0 = clock_type::now();
  for (int it = 0; it < o.niter; ++it) {
    const bool with_norm = norm_iteration(o, it);
    example_gpu::launch_graph(graph[with_norm][it % 2], d.stream);
    if (with_norm)
      norm =
          std::sqrt(mpi::all_reduce(comm, jacobi2d_device::wait_norm(d.nb), std::plus<double>()));
    print_progress(comm, o, it, norm, t0);
  }
  example_gpu::synchronize(d.stream);
  comm.barrier();
  const double seconds = since(t0);
  for (auto& row : graph)
    for (auto* g : row) example_gpu::destroy_graph(g);
  example_gpu::destroy_event(join);
  example_gpu::destroy_event(fork);
  example_gpu::destroy_stream(edges);
  return seconds;
}

// GPU run over `comm`'s ranks: fields in device memory, the sweeps as kernels on one stream,
// ordered with the exchange by schedule_exchange/schedule_wait (stream_loop, or graph_loop with
// --graph). Returns the final state copied into a host field of the same layout.
result run_device(const mpi::communicator& comm, const options& o) {
  constexpr auto st = halox::stencil<2>::star(1);
  const halox::cartesian<2> dom = domain_of(comm, o);
  // Host mirror: the same stencil gives the same allocated box and strides, so whole
  // allocations copy as they are.
  auto mirror = dom.make_field<float>(st);
  auto a = dom.make_field<float>(st, halox::device),
       a_new = dom.make_field<float>(st, halox::device);
  if (a.allocated_box() != mirror.allocated_box() || a.strides() != mirror.strides())
    throw halox::error("jacobi2d: device and host fields differ in layout");
  const std::size_t bytes = std::size_t(mirror.allocated_box().volume()) * sizeof(float);
  fill_initial(mirror, o);
  example_gpu::copy_to_device(a.data(), mirror.data(), bytes);
  example_gpu::copy_to_device(a_new.data(), mirror.data(), bytes);

  const auto split = parts_of(a, st, o.nx);
  halox::halo_exchange ex_a = labelled_exchange(dom, st, a, "jacobi2d a"),
                       ex_new = labelled_exchange(dom, st, a_new, "jacobi2d a_new");
  result r;
  // A CUDA failure below ends the job from inside this scope: unwinding would destroy an
  // exchange in flight, whose destructor waits for messages that may never come.
  try {
    CUstream_st* const stream = example_gpu::create_stream();
    jacobi2d_device::norm_buffer nb = jacobi2d_device::make_norm();
    jacobi2d_device::reset_norm(nb, stream);
    const device_run d{.stream = stream,
                       .nb = nb,
                       .ga = grid_of(a),
                       .gnew = grid_of(a_new),
                       .inner = device_parts({split.interior}),
                       .shell = device_parts(split.shell),
                       .ex_a = ex_a,
                       .ex_new = ex_new};
    r.seconds = o.graph ? graph_loop(comm, o, d, r.norm) : stream_loop(comm, o, d, r.norm);
    example_gpu::copy_to_host(mirror.data(), (o.niter % 2 == 0 ? a : a_new).data(), bytes);
    jacobi2d_device::free_norm(nb);
    example_gpu::destroy_stream(stream);
  } catch (const std::exception& e) {
    abort_run(e);
  }
  r.field = mirror;
  return r;
}
#else
int select_gpu(const mpi::communicator& world) {
  if (world.rank() == 0)
    std::fprintf(stderr,
                 "jacobi2d: --device needs a build with CUDA (configure with "
                 "-DHALOX_ENABLE_CUDA=ON); this one has none\n");
  return 2;
}

result run_device(const mpi::communicator&, const options&) {
  throw halox::error("jacobi2d: built without CUDA");
}
#endif

// Reads the options; returns -1 to run, else the exit code (0 after --help, 2 on a bad one).
int parse(int argc, char** argv, options& o, const mpi::communicator& world) {
  CLI::App app(
      "NVIDIA's multi-GPU Jacobi benchmark problem with halox: 5-point Jacobi in float on an "
      "NX x NY grid, the L2 norm of the update reduced over the ranks every C iterations and at "
      "the last; rows split over the ranks (process grid P x 1). Columns x = 0 and NX-1 fixed "
      "at sin(2 pi iy / (NY-1)); rows periodic over the computed rows 1 .. NY-2. Rank 0 first "
      "runs the problem alone, then all ranks run it; prints both runtimes and the efficiency "
      "t1 / (P tP). Last line: 'verified ...' when the distributed field matches the 1-rank one "
      "(max |diff| <= 1e-6 max |a|), else 'FAILED ...' and exit code 1.",
      "jacobi2d");
  app.add_option("--nx", o.nx, "grid columns")
      ->check(CLI::Range(idx(3), idx(1) << 40))
      ->capture_default_str();
  app.add_option("--ny", o.ny, "grid rows (at least ranks + 2)")
      ->check(CLI::Range(idx(3), idx(1) << 40))
      ->capture_default_str();
  app.add_option("--steps,--niter", o.niter, "Jacobi iterations")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--nccheck", o.nccheck, "iterations between L2-norm reductions")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  example_app::add_progress(app, o.progress);
  app.add_flag("--overlap", o.overlap,
               "CPU: start the exchange, update the interior, wait, update the rest");
  example_app::add_device(app, o.device);
  app.add_flag("--graph", o.graph,
               "with --device: capture each iteration (rows at the edges and the exchange beside "
               "the interior, then the norm) into a CUDA graph once, then replay the graphs");
  const int code = example_app::parse(world, app, argc, argv);
  if (code < 0 && o.graph && !o.device) throw halox::error("jacobi2d: --graph needs --device");
  if (code < 0 && o.ny - 2 < world.size())
    throw halox::error("jacobi2d: " + std::to_string(world.size()) + " ranks need --ny >= " +
                       std::to_string(world.size() + 2) + " (a computed row each)");
  return code;
}

void print_header(const mpi::communicator& world, const options& o) {
  if (world.rank() != 0) return;
  const char* mode = o.device ? (o.graph ? "device, CUDA graphs: edge rows and exchange beside "
                                           "the interior, replayed per iteration"
                                         : "device, stream-ordered exchange overlapped with the "
                                           "interior")
                              : (o.overlap ? "CPU, overlapped exchange" : "CPU, blocking exchange");
  std::printf("jacobi2d: %lld x %lld (nx x ny), %d iterations, norm every %d, %s\n",
              static_cast<long long>(o.nx), static_cast<long long>(o.ny), o.niter, o.nccheck, mode);
  std::fflush(stdout);
}

// Rank 0 in a line of its own, then `what`.
void announce(const char* what) {
  std::printf("%s\n", what);
  std::fflush(stdout);
}

// The runs: rank 0 first alone (its own communicator and domain) for the 1-rank reference, and
// with --graph once more without graphs (NVIDIA's nccl_graphs measures against a one-GPU loop
// without graphs: this run too); then every rank together.
struct runs {
  result single, multi, plain;  // plain: --graph's one-rank reference without graphs
};

runs run_all(const mpi::communicator& world, const options& o) {
  auto solve = [&](const mpi::communicator& comm, const options& opt) {
    return opt.device ? run_device(comm, opt) : run_host(comm, opt);
  };
  runs r;
  MPI_Comm solo = MPI_COMM_NULL;
  if (MPI_Comm_split(world, world.rank() == 0 ? 0 : MPI_UNDEFINED, 0, &solo) != MPI_SUCCESS)
    throw halox::error("jacobi2d: MPI_Comm_split failed");
  if (world.rank() == 0) {
    const mpi::communicator solo_comm(solo, mpi::comm_take_ownership);
    announce("single rank reference run:");
    r.single = solve(solo_comm, o);
    if (o.graph) {
      announce("single rank reference run without graphs:");
      options without = o;
      without.graph = false;
      r.plain = solve(solo_comm, without);
    }
    std::printf("%d-rank run:\n", world.size());
    std::fflush(stdout);
  }
  world.barrier();
  r.multi = solve(world, o);
  return r;
}

// Rank 0's report: timings, then the gathered rows (`all`, in rank order: the P x 1 grid's)
// against the 1-rank field; returns the exit status.
int report(const mpi::communicator& world, const options& o, const runs& r,
           const std::vector<std::vector<float>>& all) {
  const int P = world.size();
  double diff = 0, scale = 0;
  idx g = 0;
  for (int k = 0; k < P; ++k)
    for (std::size_t p = 0; p < all[k].size(); ++g)
      for (idx x = 0; x < o.nx; ++x, ++p) {
        const double ref = r.single.field(g, x);
        diff = std::max(diff, std::abs(double(all[k][p]) - ref));
        // --graph: the reference without graphs must agree too.
        if (o.graph) diff = std::max(diff, std::abs(double(r.plain.field(g, x)) - ref));
        scale = std::max(scale, std::abs(ref));
      }
  const double t1 = r.single.seconds, tp = r.multi.seconds;
  const char* plural = P == 1 ? "" : "s";
  std::printf("final L2 norm: 1 rank %.10e, %d rank%s %.10e\n", r.single.norm, P, plural,
              r.multi.norm);
  std::printf("%lldx%lld: 1 rank: %8.4f s, %d rank%s: %8.4f s, speedup: %8.2f\n",
              static_cast<long long>(o.ny), static_cast<long long>(o.nx), t1, P, plural, tp,
              t1 / tp);
  std::printf("efficiency: %.2f\n", t1 / (double(P) * tp) * 100.0);
  if (o.graph)
    std::printf("efficiency against the 1-rank run without graphs (%.4f s): %.2f\n",
                r.plain.seconds, r.plain.seconds / (double(P) * tp) * 100.0);
  const double tol = 1e-6 * scale;
  int status = 0;
  if (g != o.ny - 2) {
    std::printf("FAILED: gathered %lld rows, expected %lld\n", static_cast<long long>(g),
                static_cast<long long>(o.ny - 2));
    status = 1;
  } else if (diff <= tol) {
    std::printf("verified: max |distributed - single rank| = %.3e%s\n", diff,
                diff == 0 ? " (bit-exact)" : " <= 1e-6 max |a|");
  } else {
    std::printf("FAILED: max |distributed - single rank| = %.3e > %.3e\n", diff, tol);
    status = 1;
  }
  std::fflush(stdout);
  return status;
}

int run(const mpi::communicator& world, const options& o) {
  print_header(world, o);
  if (o.device)
    if (const int code = select_gpu(world); code != 0) return code;
  const runs r = run_all(world, o);
  // Gather the owned rows on rank 0 and compare with the single-rank field.
  const auto b = r.multi.field.owned_box();
  std::vector<float> mine;
  mine.reserve(std::size_t(b.volume()));
  for (idx y = b.lo[0]; y < b.hi[0]; ++y)
    for (idx x = b.lo[1]; x < b.hi[1]; ++x) mine.push_back(r.multi.field(y, x));
  std::vector<std::vector<float>> all;
  mpi::gather(world, mine, all, 0);
  return world.rank() == 0 ? report(world, o, r, all) : 0;
}

}  // namespace

int main(int argc, char** argv) {
  return example_app::run_main<options>("jacobi2d", argc, argv, parse, run);
}
