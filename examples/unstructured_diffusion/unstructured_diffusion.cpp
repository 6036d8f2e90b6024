// unstructured_diffusion: explicit diffusion on a 2-D triangular mesh, u += dt * sum over the
// edge neighbours j of (u_j - u_i) (the graph Laplacian), partitioned irregularly over the
// ranks; ghost values exchanged by halox over an unstructured pattern whose owners halox
// discovers. Checked against a serial run of the same problem on rank 0.
//
//   mpirun -np 3 ./unstructured_diffusion [--nx 60] [--ny 40] [--steps 50] [--block 5]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include <boost/mpi.hpp>
#include <boost/serialization/vector.hpp>
#include <halox/halox.hpp>

#include "../common/app.hpp"
#include "../common/cli.hpp"

namespace mpi = boost::mpi;
using idx = halox::index;

namespace {

struct options {
  int nx = 60, ny = 40;  // vertices per side
  int steps = 50;
  int block = 5;  // partition blocks of block x block squares
};

constexpr double dt = 0.1;  // stable: a triangle has at most 3 edge neighbours

// The mesh: every square of the (nx-1) x (ny-1) grid split into two triangles. Triangle t lies
// in square t / 2; triangle 2s is the lower right one, 2s + 1 the upper left one.
struct mesh {
  int sx = 0, sy = 0;                  // squares per side
  std::vector<std::vector<int>> nbrs;  // edge neighbours of each triangle, ascending

  mesh(int nx, int ny) : sx(nx - 1), sy(ny - 1), nbrs(std::size_t(2 * sx * sy)) {
    auto tri = [&](int i, int j, int upper) { return 2 * (i * sy + j) + upper; };
    auto link = [&](int a, int b) {
      nbrs[std::size_t(a)].push_back(b);
      nbrs[std::size_t(b)].push_back(a);
    };
    // lower (i,j,i+1,j),(i+1,j+1); upper (i,j),(i+1,j+1),(i,j+1)
    for (int i = 0; i < sx; ++i)
      for (int j = 0; j < sy; ++j) {
        link(tri(i, j, 0), tri(i, j, 1));                      // the diagonal
        if (i + 1 < sx) link(tri(i, j, 0), tri(i + 1, j, 1));  // lower's right edge
        if (j + 1 < sy) link(tri(i, j, 1), tri(i, j + 1, 0));  // upper's top edge
      }
    for (auto& v : nbrs) std::sort(v.begin(), v.end());
  }
  int triangles() const { return int(nbrs.size()); }
  // A global id that is not the triangle's number (ids need not be dense or ordered).
  static halox::global_id id(int t) { return 5'000'000'000 + 3 * halox::global_id(t); }
  // Centroid in [0,1]^2.
  void centroid(int t, double& x, double& y) const {
    const int s = t / 2, i = s / sy, j = s % sy;
    const double third = (t % 2 == 0) ? 2.0 / 3.0 : 1.0 / 3.0;
    x = (i + third) / sx;
    y = (j + 1.0 - third) / sy;
  }
};

double initial(const mesh& m, int t) {
  double x, y;
  m.centroid(t, x, y);
  return std::sin(6.283185307179586 * x) * std::cos(3.141592653589793 * y) +
         (std::abs(x - 0.3) < 0.05 && std::abs(y - 0.6) < 0.05 ? 5.0 : 0.0);
}

// Owner of each triangle: blocks of b x b squares dealt to ranks in a shuffled order, so that
// partitions are irregular and not contiguous.
std::vector<int> partition(const mesh& m, int block, int ranks) {
  const int bx = (m.sx + block - 1) / block, by = (m.sy + block - 1) / block;
  std::vector<int> order(std::size_t(bx * by));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 rng(2024);  // the same on every rank
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<int> owner(std::size_t(m.triangles()));
  for (int t = 0; t < m.triangles(); ++t) {
    const int s = t / 2, i = s / m.sy, j = s % m.sy;
    owner[std::size_t(t)] = order[std::size_t((i / block) * by + j / block)] % ranks;
  }
  return owner;
}

// The one update both runs use, neighbours in ascending triangle order, so both round alike.
inline double update(double ui, const double* u, const idx* nb, int count) {
  double s = 0;
  for (int k = 0; k < count; ++k) s += u[nb[k]] - ui;
  return ui + dt * s;
}

std::vector<double> serial_run(const mesh& m, int steps) {
  std::vector<double> u(std::size_t(m.triangles())), v(u.size());
  std::vector<std::vector<idx>> nb(u.size());
  for (int t = 0; t < m.triangles(); ++t) {
    u[std::size_t(t)] = initial(m, t);
    nb[std::size_t(t)].assign(m.nbrs[std::size_t(t)].begin(), m.nbrs[std::size_t(t)].end());
  }
  for (int s = 0; s < steps; ++s) {
    for (int t = 0; t < m.triangles(); ++t)
      v[std::size_t(t)] = update(u[std::size_t(t)], u.data(), nb[std::size_t(t)].data(),
                                 int(nb[std::size_t(t)].size()));
    std::swap(u, v);
  }
  return u;
}

// Reads the options; returns -1 to run, else the exit code (0 after --help, 2 on a bad one).
int parse(int argc, char** argv, options& o, const mpi::communicator& world) {
  CLI::App app(
      "Explicit diffusion u += 0.1 * sum_j (u_j - u_i) over the edge neighbours j of each "
      "triangle of a 2-D mesh: an NX x NY grid of vertices, each square split into two "
      "triangles; blocks of B x B squares dealt to the ranks in a shuffled order; ghost "
      "triangles exchanged by halox over an unstructured pattern (owners discovered by halox); "
      "rank 0 repeats the run serially and compares. Last line: 'verified ...' when "
      "max |distributed - serial| <= 1e-12.",
      "unstructured_diffusion");
  app.add_option("--nx", o.nx, "vertices per row")
      ->check(CLI::Range(2, 1 << 20))
      ->capture_default_str();
  app.add_option("--ny", o.ny, "vertices per column")
      ->check(CLI::Range(2, 1 << 20))
      ->capture_default_str();
  app.add_option("--steps", o.steps, "time steps")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--block", o.block, "partition blocks of B x B squares")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  return example_app::parse(world, app, argc, argv);
}

// This rank's part of the mesh. Local entities: owned triangles first (local 0..), then ghosts
// (edge neighbours of its triangles owned elsewhere): halox's default order.
struct local_mesh {
  std::vector<int> mine, ghosts;        // global triangle numbers
  std::vector<std::vector<idx>> nb;     // each owned triangle's neighbours, local numbers
  std::vector<idx> interior, boundary;  // owned triangles without / with a ghost neighbour
};

local_mesh local_part(const mesh& m, const std::vector<int>& owner, int me) {
  local_mesh lm;
  for (int t = 0; t < m.triangles(); ++t)
    if (owner[std::size_t(t)] == me) lm.mine.push_back(t);
  std::map<int, int> ghost_set;
  for (int t : lm.mine)
    for (int n : m.nbrs[std::size_t(t)])
      if (owner[std::size_t(n)] != me) ghost_set.emplace(n, 0);
  for (const auto& [t, unused] : ghost_set) lm.ghosts.push_back(t);
  std::unordered_map<int, idx> local;
  for (std::size_t k = 0; k < lm.mine.size(); ++k) local[lm.mine[k]] = idx(k);
  for (std::size_t k = 0; k < lm.ghosts.size(); ++k) local[lm.ghosts[k]] = idx(lm.mine.size() + k);
  lm.nb.resize(lm.mine.size());
  for (std::size_t k = 0; k < lm.mine.size(); ++k) {
    bool touches_ghost = false;
    for (int n : m.nbrs[std::size_t(lm.mine[k])]) {
      lm.nb[k].push_back(local.at(n));
      touches_ghost = touches_ghost || owner[std::size_t(n)] != me;
    }
    (touches_ghost ? lm.boundary : lm.interior).push_back(idx(k));
  }
  return lm;
}

// The distributed run over pattern `pat`: returns the owned triangles' final values (in
// `lm.mine`'s order); `seconds` the time-step loop's.
std::vector<double> diffuse(const mpi::communicator& world, const halox::unstructured& pat,
                            const mesh& m, const local_mesh& lm, int steps, double& seconds) {
  auto u = pat.make_field<double>(1, halox::entity_layout::entity_major, halox::host, "u");
  auto v = pat.make_field<double>(1, halox::entity_layout::entity_major, halox::host, "v");
  for (std::size_t k = 0; k < lm.mine.size(); ++k) u(idx(k)) = initial(m, lm.mine[k]);
  auto ex_u = halox::make_exchange(pat, u), ex_v = halox::make_exchange(pat, v);

  world.barrier();
  const auto t0 = std::chrono::steady_clock::now();
  for (int s = 0; s < steps; ++s) {
    const bool even = s % 2 == 0;
    const auto& in = even ? u : v;
    const auto& out = even ? v : u;
    auto h = (even ? ex_u : ex_v).start();
    auto sweep = [&](const std::vector<idx>& part) {
      for (idx k : part)
        out(k) = update(in(k), in.data(), lm.nb[std::size_t(k)].data(),
                        int(lm.nb[std::size_t(k)].size()));
    };
    sweep(lm.interior);  // reads no ghost: overlaps the messages
    h.wait();
    sweep(lm.boundary);
  }
  world.barrier();
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto& result = steps % 2 == 0 ? u : v;
  std::vector<double> values(lm.mine.size());
  for (std::size_t k = 0; k < lm.mine.size(); ++k) values[k] = result(idx(k));
  return values;
}

// Rank 0's report: the gathered (triangle, value) pairs against the serial run; returns the
// exit status.
int report(const mpi::communicator& world, const options& o, const mesh& m,
           const std::vector<std::vector<int>>& all_tris,
           const std::vector<std::vector<double>>& all_values, const local_mesh& lm,
           std::size_t peers, double seconds) {
  const auto ref = serial_run(m, o.steps);
  double diff = 0;
  std::size_t seen = 0;
  for (int r = 0; r < world.size(); ++r)
    for (std::size_t k = 0; k < all_tris[std::size_t(r)].size(); ++k, ++seen)
      diff = std::max(diff, std::abs(all_values[std::size_t(r)][k] -
                                     ref[std::size_t(all_tris[std::size_t(r)][k])]));
  std::printf(
      "unstructured_diffusion: %d triangles (%d x %d vertices), %d steps, %d ranks, "
      "blocks of %d x %d squares dealt in shuffled order\n",
      m.triangles(), o.nx, o.ny, o.steps, world.size(), o.block, o.block);
  std::printf("rank 0: %zu owned triangles, %zu ghosts from %zu peer(s); %.4f s\n", lm.mine.size(),
              lm.ghosts.size(), peers, seconds);
  int status = 0;
  if (seen == ref.size() && diff <= 1e-12) {
    std::printf("verified: max |distributed - serial| = %.3e <= 1e-12\n", diff);
  } else {
    std::printf("FAILED: max |distributed - serial| = %.3e, %zu of %zu triangles\n", diff, seen,
                ref.size());
    status = 1;
  }
  std::fflush(stdout);
  return status;
}

int run(const mpi::communicator& world, const options& o) {
  // Every rank builds the mesh and the partition here for brevity; a real code reads its part.
  const mesh m(o.nx, o.ny);
  const local_mesh lm = local_part(m, partition(m, o.block, world.size()), world.rank());
  std::vector<halox::global_id> owned_ids, ghost_ids;
  for (int t : lm.mine) owned_ids.push_back(mesh::id(t));
  for (int t : lm.ghosts) ghost_ids.push_back(mesh::id(t));
  const halox::unstructured pat(world, owned_ids, ghost_ids);
  double seconds = 0;
  const std::vector<double> values = diffuse(world, pat, m, lm, o.steps, seconds);

  // Gather (triangle, value) on rank 0 and compare with the serial run.
  std::vector<std::vector<int>> all_tris;
  std::vector<std::vector<double>> all_values;
  mpi::gather(world, lm.mine, all_tris, 0);
  mpi::gather(world, values, all_values, 0);
  if (world.rank() != 0) return 0;
  return report(world, o, m, all_tris, all_values, lm, pat.recvs().size(), seconds);
}

}  // namespace

int main(int argc, char** argv) {
  return example_app::run_main<options>("unstructured_diffusion", argc, argv, parse, run);
}
