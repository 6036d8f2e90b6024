// port2d: an existing-style 2-D MPI code ported to halox (docs/porting.md).
//
// The app keeps everything of its own: its decomposition (chunks numbered x-fastest, uneven
// splits, --tiles chunks per rank), its arrays (a std::vector per tile and field, padded
// by its own `pad`), the fields it advances (chosen with --fields), and its physical boundary
// code. Only the halo exchange is halox's: a box_list from the app's own boxes, its arrays
// wrapped in place, one exchange built from the run-time field list.
//
// Fields: "density" and "energy" in cells, "xvel" on x-faces (nx + 1 points along x, the wall
// points 0 and nx held at zero). Each step is a 5-point diffusion of every field. Every shared
// x-face point is computed on both sides from equal inputs, so both shared-points rules give
// the same result (--shared=keep|owner). --walls=halox hands the walls to halox's boundary
// rules instead of the app's boundaries().
//
// --device (a CUDA build) keeps the same arrays in GPU memory (one cudaMalloc per tile and
// field, padded alike), runs the wall code and the update as kernels (port2d_device.cu) on the
// app's stream (--stream own|default) and schedules the exchange on it.
//
// Verified bit for bit against the same steps on one tile holding the whole domain (on the
// host; --device copies its arrays back first).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <boost/mpi.hpp>
#include <halox/halox.hpp>

#include "../common/app.hpp"
#include "../common/cli.hpp"

#ifdef HALOX_PORT2D_DEVICE
#include "../common/select_gpu.hpp"
#include "port2d_device.hpp"
#endif

namespace {

struct options {
  int nx = 37, ny = 23, steps = 10, tiles = 1;
  std::vector<std::string> fields{"density", "energy", "xvel"};
  std::string shared = "keep";
  std::string walls = "app";  // the app's boundaries() or halox's boundary rules
  bool describe = false;
  bool overlap = false;        // update the points that read no halo while the exchange runs
  bool device = false;         // --device: the arrays in GPU memory, the steps as kernels
  std::string stream = "own";  // --device: the app's own stream or CUDA's legacy default stream
};

constexpr int pad = 2;  // the app's own padding; halox exchanges one layer of it (star(1))

bool is_face(const std::string& name) {
  return name == "xvel";
}

/// An array in GPU memory (cudaMalloc), released by cudaFree.
using gpu_array = std::unique_ptr<double, void (*)(void*) noexcept>;

/// The app's arrays. Allocated by halox's allocator, they are memory the other ranks of the node
/// can map, so halox copies their halos between ranks of a node once instead of twice
/// (docs/porting.md, step 2); a plain std::vector<double> works the same otherwise.
using array = std::vector<double, halox::node_shared_allocator<double>>;

/// One chunk of the app's decomposition: its cells and one padded array per field.
struct tile {
  int x0, x1, y0, y1;                          // cells [x0, x1) x [y0, y1), global
  std::vector<array> u{}, next{};              // per field, row-major (y fastest), padded
  std::vector<gpu_array> gpu_u{}, gpu_next{};  // --device: u and next in GPU memory, alike
};

int points_x(const tile& t, bool face) {
  return t.x1 - t.x0 + (face ? 1 : 0);
}
int alloc_y(const tile& t) {
  return t.y1 - t.y0 + 2 * pad;
}
std::size_t at(const tile& t, int i, int j) {  // local point (i, j), halo at negative indices
  return std::size_t(i + pad) * std::size_t(alloc_y(t)) + std::size_t(j + pad);
}

/// The app's decomposition: `n` chunks on a px x py grid (px the divisor of n closest to
/// sqrt(n * nx / ny)), uneven splits, numbered x-fastest; rank r owns chunks r*tiles...
std::vector<tile> decompose(const options& o, int n, int first, int count) {
  int px = 1;
  for (int d = 1; d <= n; ++d)
    if (n % d == 0 && std::abs(d * d * o.ny - n * o.nx) < std::abs(px * px * o.ny - n * o.nx))
      px = d;
  const int py = n / px;
  std::vector<tile> out;
  for (int c = first; c < first + count; ++c) {
    const int cx = c % px, cy = c / px;
    out.push_back({o.nx * cx / px, o.nx * (cx + 1) / px, o.ny * cy / py, o.ny * (cy + 1) / py});
  }
  return out;
}

/// Initial values from global coordinates; x-face wall points are zero.
void init(tile& t, const options& o) {
  for (std::size_t f = 0; f < o.fields.size(); ++f) {
    const bool face = is_face(o.fields[f]);
    const int nxp = points_x(t, face) + 2 * pad;
    t.u.emplace_back(std::size_t(nxp * alloc_y(t)), 0.0);
    for (int i = 0; i < points_x(t, face); ++i)
      for (int j = 0; j < t.y1 - t.y0; ++j) {
        const int gi = t.x0 + i, gj = t.y0 + j;
        const bool wall = face && (gi == 0 || gi == o.nx);
        t.u[f][at(t, i, j)] = wall ? 0.0 : double((gi * 7 + gj * 13 + int(f)) % 17) / 8.0;
      }
    t.next.push_back(t.u[f]);
  }
}

/// The app's physical boundaries, after the exchange: zero gradient for cell fields at every
/// wall; x-faces mirrored with a sign change beyond the x walls, zero gradient at the y walls.
void boundaries(tile& t, const options& o) {
  for (std::size_t f = 0; f < o.fields.size(); ++f) {
    const bool face = is_face(o.fields[f]);
    auto& a = t.u[f];
    const int mx = points_x(t, face), my = t.y1 - t.y0;
    for (int j = 0; j < my; ++j) {
      if (t.x0 == 0) a[at(t, -1, j)] = face ? -a[at(t, 1, j)] : a[at(t, 0, j)];
      if (t.x1 == o.nx) a[at(t, mx, j)] = face ? -a[at(t, mx - 2, j)] : a[at(t, mx - 1, j)];
    }
    for (int i = 0; i < mx; ++i) {
      if (t.y0 == 0) a[at(t, i, -1)] = a[at(t, i, 0)];
      if (t.y1 == o.ny) a[at(t, i, my)] = a[at(t, i, my - 1)];
    }
  }
}

/// Which points advance() updates: all of them; those that read nothing the exchange writes
/// (halos, and an x-face field's shared points, which their owner may overwrite), while the
/// exchange runs (--overlap); or the rest, once it is done.
enum class part { all, interior, shell };

bool in_part(part p, int i, int j, int mx, int my, bool face) {
  if (p == part::all) return true;
  const int m = face ? 2 : 1;  // an x-face field's first and last points are shared
  const bool interior = i >= m && i < mx - m && j >= 1 && j < my - 1;
  return interior == (p == part::interior);
}

/// One diffusion step of every field of `t` (halos filled, except for part::interior); x-face
/// wall points stay zero. The new values replace the old ones once the step is complete (all,
/// shell): the wrapped arrays stay where they are.
void advance(tile& t, const options& o, part p = part::all) {
  for (std::size_t f = 0; f < o.fields.size(); ++f) {
    const bool face = is_face(o.fields[f]);
    const auto& a = t.u[f];
    auto& b = t.next[f];
    const int mx = points_x(t, face), my = t.y1 - t.y0;
    for (int i = 0; i < mx; ++i)
      for (int j = 0; j < my; ++j) {
        const int gi = t.x0 + i;
        if ((face && (gi == 0 || gi == o.nx)) || !in_part(p, i, j, mx, my, face)) continue;
        const double c = a[at(t, i, j)];
        b[at(t, i, j)] = c + 0.125 * (a[at(t, i - 1, j)] + a[at(t, i + 1, j)] + a[at(t, i, j - 1)] +
                                      a[at(t, i, j + 1)] - 4.0 * c);
      }
    if (p != part::interior) std::copy(b.begin(), b.end(), t.u[f].begin());
  }
}

/// The app's walls as halox's boundary rules (--walls halox): the same values as boundaries().
halox::boundary<double, 2> wall_rules(bool face) {
  using halox::side;
  halox::boundary<double, 2> bc;
  bc.zero_gradient({1, side::low}).zero_gradient({1, side::high});
  if (face) return bc.reflect({0, side::low}, {-1.0}).reflect({0, side::high}, {-1.0});
  return bc.zero_gradient({0, side::low}).zero_gradient({0, side::high});
}

/// halox's exchange of the app's arrays: its own boxes, its arrays wrapped, the fields it runs.
halox::halo_exchange make_halo_exchange(const boost::mpi::communicator& world,
                                        std::vector<tile>& tiles, const options& o) {
  std::vector<halox::box<2>> mine;
  for (const auto& t : tiles) mine.push_back({{t.x0, t.y0}, {t.x1, t.y1}});
  const auto dom = halox::box_list<2>::from_local(world, {o.nx, o.ny}, {false, false}, mine);
  constexpr auto st = halox::stencil<2>::star(1);
  std::vector<halox::exchange_field<2>> fields;
  for (std::size_t f = 0; f < o.fields.size(); ++f) {
    halox::field_options fo;
    fo.name = o.fields[f];
    if (is_face(o.fields[f])) fo.at = halox::centering::face(0);
    fo.shared =
        o.shared == "keep" ? halox::shared_points::keep : halox::shared_points::owner_overwrites;
    std::vector<double*> ptrs;
    std::vector<halox::extents<2>> ext;
    for (auto& t : tiles) {
      ptrs.push_back(o.device ? t.gpu_u[f].get() : t.u[f].data());
      ext.push_back({points_x(t, is_face(o.fields[f])) + 2 * pad, alloc_y(t)});
    }
    const auto space = o.device ? halox::device : halox::host;
    const auto f_wrapped = dom.wrap(ptrs, ext, {pad, pad}, {pad, pad}, fo, space);
    if (o.walls == "halox")
      fields.push_back(
          halox::as_exchange_field(halox::halo(st, f_wrapped, wall_rules(is_face(fo.name)))));
    else
      fields.push_back(f_wrapped);
  }
  auto ex = halox::make_exchange(dom, st, {}, fields);
  if (o.describe && world.rank() == 0) std::printf("%s\n", ex.describe().c_str());
  return ex;
}

/// Whether every stored point of `tiles` equals the same point of `whole` (one tile).
long mismatches(const std::vector<tile>& tiles, const tile& whole, const options& o) {
  long bad = 0;
  for (const auto& t : tiles)
    for (std::size_t f = 0; f < o.fields.size(); ++f)
      for (int i = 0; i < points_x(t, is_face(o.fields[f])); ++i)
        for (int j = 0; j < t.y1 - t.y0; ++j)
          bad += t.u[f][at(t, i, j)] != whole.u[f][at(whole, t.x0 + i, t.y0 + j)];
  return bad;
}

/// Compares `tiles` with the serial run (on every rank) and says so; 0 when every point matches.
int verify(const boost::mpi::communicator& world, const std::vector<tile>& tiles,
           const options& o) {
  tile whole = std::move(decompose(o, 1, 0, 1)[0]);  // the serial run, on every rank
  init(whole, o);
  for (int s = 0; s < o.steps; ++s) boundaries(whole, o), advance(whole, o);
  const long bad = boost::mpi::all_reduce(world, mismatches(tiles, whole, o), std::plus<long>());
  if (world.rank() == 0) {
    std::printf("port2d: %dx%d cells, %d ranks x %d tiles, %zu fields, %d steps%s\n", o.nx, o.ny,
                world.size(), o.tiles, o.fields.size(), o.steps,
                !o.device           ? ""
                : o.stream == "own" ? ", device (own stream)"
                                    : ", device (default stream)");
    if (bad == 0)
      std::printf("verified bit for bit against the serial run\n");
    else
      std::printf("FAILED: %ld points differ from the serial run\n", bad);
  }
  return bad == 0 ? 0 : 1;
}

int run_host(const boost::mpi::communicator& world, const options& o) {
  auto tiles = decompose(o, world.size() * o.tiles, world.rank() * o.tiles, o.tiles);
  for (auto& t : tiles) init(t, o);
  auto ex = make_halo_exchange(world, tiles, o);
  for (int s = 0; s < o.steps; ++s) {
    auto h = ex.start();
    if (o.overlap)
      for (auto& t : tiles) advance(t, o, part::interior);  // reads no halo
    h.wait();
    for (auto& t : tiles) {
      if (o.walls == "app") boundaries(t, o);
      advance(t, o, o.overlap ? part::shell : part::all);
    }
  }
  return verify(world, tiles, o);
}

#ifdef HALOX_PORT2D_DEVICE
/// Gives every array of `tiles` its copy in GPU memory: one cudaMalloc per tile and array.
void to_device(std::vector<tile>& tiles) {
  auto upload = [](const array& host, std::vector<gpu_array>& gpu) {
    const std::size_t bytes = host.size() * sizeof(double);
    gpu.emplace_back(static_cast<double*>(example_gpu::device_alloc(bytes)),
                     example_gpu::device_free);
    example_gpu::copy_to_device(gpu.back().get(), host.data(), bytes);
  };
  for (auto& t : tiles)
    for (std::size_t f = 0; f < t.u.size(); ++f) {
      upload(t.u[f], t.gpu_u);
      upload(t.next[f], t.gpu_next);
    }
}

/// Field `f` of `t` as the kernels see it.
port2d_device::tile_array array_of(const tile& t, std::size_t f, const options& o) {
  const bool face = is_face(o.fields[f]);
  return {.u = t.gpu_u[f].get(),
          .next = t.gpu_next[f].get(),
          .mx = points_x(t, face),
          .my = t.y1 - t.y0,
          .pad = pad,
          .face = face,
          .x_lo = t.x0 == 0,
          .x_hi = t.x1 == o.nx,
          .y_lo = t.y0 == 0,
          .y_hi = t.y1 == o.ny};
}

/// run_host's time loop in stream order on `s`: the exchange scheduled on it, then the app's
/// kernels; returns once `s` has finished, with every u copied back to the host.
void device_steps(std::vector<tile>& tiles, halox::halo_exchange& ex, const options& o,
                  CUstream_st* s) {
  for (int step = 0; step < o.steps; ++step) {
    ex.schedule_exchange(s);  // waits (on the GPU) for the work already on s
    ex.schedule_wait(s);      // s waits for the halos (and halox's walls, with --walls halox)
    for (auto& t : tiles)
      for (std::size_t f = 0; f < o.fields.size(); ++f) {
        if (o.walls == "app") port2d_device::boundaries(array_of(t, f, o), s);
        port2d_device::advance(array_of(t, f, o), s);
      }
  }
  example_gpu::synchronize(s);
  for (auto& t : tiles)
    for (std::size_t f = 0; f < o.fields.size(); ++f)
      example_gpu::copy_to_host(t.u[f].data(), t.gpu_u[f].get(), t.u[f].size() * sizeof(double));
}

int run_device(const boost::mpi::communicator& world, const options& o) {
  if (const int code = example_gpu::select_gpu(world, "port2d"); code != 0) return code;
  auto tiles = decompose(o, world.size() * o.tiles, world.rank() * o.tiles, o.tiles);
  for (auto& t : tiles) init(t, o);
  to_device(tiles);
  {
    auto ex = make_halo_exchange(world, tiles, o);
    // A CUDA failure below ends the job from inside this scope: unwinding would destroy an
    // exchange in flight, whose destructor waits for messages that may never come.
    try {
      // --stream default: a null stream, which halox takes as CUDA's legacy default stream
      // (cudaStreamLegacy), as the app's kernels do in a build without per-thread default streams.
      CUstream_st* s = o.stream == "own" ? example_gpu::create_stream() : nullptr;
      device_steps(tiles, ex, o, s);
      if (s != nullptr) example_gpu::destroy_stream(s);
    } catch (const std::exception& e) {
      example_app::abort_run("port2d", world, e);
    }
  }
  world.barrier();  // no rank's exchange still maps another's arrays when they are freed
  return verify(world, tiles, o);
}
#else
int run_device(const boost::mpi::communicator& world, const options&) {
  if (world.rank() == 0)
    std::fprintf(stderr,
                 "port2d: --device needs a build with CUDA (configure with "
                 "-DHALOX_ENABLE_CUDA=ON); this one has none\n");
  return 2;
}
#endif

int run(const boost::mpi::communicator& world, const options& o) {
  if (o.overlap && o.device) {
    if (world.rank() == 0)
      std::fprintf(stderr,
                   "port2d: --overlap is for host arrays (the device steps are in stream "
                   "order after the exchange)\n");
    return 2;
  }
  return o.device ? run_device(world, o) : run_host(world, o);
}

int parse(int argc, char** argv, options& o, const boost::mpi::communicator& world) {
  CLI::App app{"port2d: a hand-written-style 2-D code whose halo exchange is halox's"};
  app.add_option("--nx", o.nx, "cells along x")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--ny", o.ny, "cells along y")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--steps", o.steps, "time steps")->check(CLI::NonNegativeNumber);
  app.add_option("--tiles", o.tiles, "chunks per rank")->check(CLI::PositiveNumber);
  app.add_option("--fields", o.fields, "fields to advance (density, energy, xvel)")
      ->check(CLI::IsMember({"density", "energy", "xvel"}))
      ->delimiter(',');
  app.add_option("--shared", o.shared, "x-face points shared by two tiles")
      ->check(CLI::IsMember({"keep", "owner"}))
      ->capture_default_str();
  app.add_option("--walls", o.walls, "physical boundaries: the app's code or halox's rules")
      ->check(CLI::IsMember({"app", "halox"}))
      ->capture_default_str();
  app.add_flag("--describe", o.describe, "rank 0 prints the exchange's describe()");
  app.add_flag("--overlap", o.overlap,
               "update the points that read no halo between start() and wait() (host arrays)");
  example_app::add_device(app, o.device, "the arrays (and the steps: CUDA kernels)");
  app.add_option("--stream", o.stream,
                 "with --device: the app's own stream or CUDA's legacy default stream")
      ->check(CLI::IsMember({"own", "default"}))
      ->capture_default_str();
  return example_app::parse(world, app, argc, argv);
}

}  // namespace

int main(int argc, char** argv) {
  return example_app::run_main<options>("port2d", argc, argv, parse, run);
}
