// cavity2d's CUDA kernels (C++17, no halox headers; see cavity2d_device.hpp). Built with
// --fmad=false: every formula must round exactly as cavity2d.cpp's, so no contraction of a
// multiply and an add into an FMA.
#include "cavity2d_device.hpp"

#include "../common/gpu_runtime.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>

namespace cavity2d_device {

namespace {

using example_gpu::check;

// The element of global point (i, j).
__device__ double& at(const grid& g, long long i, long long j) {
  return g.base[(i - g.lo[0]) * g.stride[0] + (j - g.lo[1]) * g.stride[1]];
}

// Point t of box b (t < its volume), the last index fastest.
__device__ void point(const box& b, long long t, long long& i, long long& j) {
  const long long nj = b.hi[1] - b.lo[1];
  i = b.lo[0] + t / nj;
  j = b.lo[1] + t % nj;
}

long long volume(const box& b) {
  return std::max(0LL, b.hi[0] - b.lo[0]) * std::max(0LL, b.hi[1] - b.lo[1]);
}

constexpr int threads = 256;
unsigned blocks_for(long long n) {
  return unsigned(std::min<long long>((n + threads - 1) / threads, 8192));
}

// Grid-stride loop: thread index t over [0, n).
#define CAVITY2D_EACH_INDEX(n)                                                  \
  for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < (n); \
       t += (long long)gridDim.x * blockDim.x)

// The kernels below repeat cavity2d.cpp's lambdas expression for expression.
__global__ void predict_u_kernel(grid u, grid v, grid us, box b, long long n, constants c) {
  const double h = c.h, dt = c.dt, nu = c.nu;
  CAVITY2D_EACH_INDEX(n) {
    long long i, j;
    point(b, t, i, j);
    const double vb =
        0.25 * (at(v, i - 1, j) + at(v, i, j) + at(v, i - 1, j + 1) + at(v, i, j + 1));
    const double adv = at(u, i, j) * (at(u, i + 1, j) - at(u, i - 1, j)) / (2 * h) +
                       vb * (at(u, i, j + 1) - at(u, i, j - 1)) / (2 * h);
    const double lap =
        (at(u, i + 1, j) + at(u, i - 1, j) + at(u, i, j + 1) + at(u, i, j - 1) - 4 * at(u, i, j)) /
        (h * h);
    at(us, i, j) = at(u, i, j) + dt * (nu * lap - adv);
  }
}

__global__ void predict_v_kernel(grid u, grid v, grid vs, box b, long long n, constants c) {
  const double h = c.h, dt = c.dt, nu = c.nu;
  CAVITY2D_EACH_INDEX(n) {
    long long i, j;
    point(b, t, i, j);
    const double ub =
        0.25 * (at(u, i, j - 1) + at(u, i + 1, j - 1) + at(u, i, j) + at(u, i + 1, j));
    const double adv = ub * (at(v, i + 1, j) - at(v, i - 1, j)) / (2 * h) +
                       at(v, i, j) * (at(v, i, j + 1) - at(v, i, j - 1)) / (2 * h);
    const double lap =
        (at(v, i + 1, j) + at(v, i - 1, j) + at(v, i, j + 1) + at(v, i, j - 1) - 4 * at(v, i, j)) /
        (h * h);
    at(vs, i, j) = at(v, i, j) + dt * (nu * lap - adv);
  }
}

__global__ void divergence_kernel(grid us, grid vs, grid rhs, box b, long long n, constants c) {
  const double h = c.h, dt = c.dt;
  CAVITY2D_EACH_INDEX(n) {
    long long i, j;
    point(b, t, i, j);
    at(rhs, i, j) =
        ((at(us, i + 1, j) - at(us, i, j)) + (at(vs, i, j + 1) - at(vs, i, j))) / (h * dt);
  }
}

__global__ void jacobi_kernel(grid from, grid to, grid rhs, box b, long long n, constants c) {
  const double h = c.h;
  CAVITY2D_EACH_INDEX(n) {
    long long i, j;
    point(b, t, i, j);
    at(to, i, j) = 0.25 * (at(from, i + 1, j) + at(from, i - 1, j) + at(from, i, j + 1) +
                           at(from, i, j - 1) - h * h * at(rhs, i, j));
  }
}

__global__ void correct_kernel(grid star, grid p, grid vel, int d, box b, long long n,
                               constants c) {
  const double h = c.h, dt = c.dt;
  CAVITY2D_EACH_INDEX(n) {
    long long i, j;
    point(b, t, i, j);
    const double below = d == 0 ? at(p, i - 1, j) : at(p, i, j - 1);
    at(vel, i, j) = at(star, i, j) - dt * (at(p, i, j) - below) / h;
  }
}

// One line of halo points beyond a wall: point k of the line is written at (wi, wj) + k (di, dj)
// from the point read at (ri, rj) + k (di, dj).
enum class rule { reflect, lid, copy };  // x * -1.0 (halox's reflect), 2.0 - x, x
struct line {
  grid g;
  long long wi = 0, wj = 0, ri = 0, rj = 0, di = 0, dj = 0, length = 0;
  rule r = rule::copy;
};
struct lines {
  line l[8];
  int count = 0;
  long long total = 0;
  void add(const grid& g, const box& along, int d, long long wall_write, long long wall_read,
           rule r) {
    // Along dimension 1 - d, over the points of `along`; at `wall_write` / `wall_read` along d.
    line x;
    x.g = g;
    x.r = r;
    const int o = 1 - d;
    x.length = std::max(0LL, along.hi[o] - along.lo[o]);
    if (x.length == 0) return;
    (d == 0 ? x.wi : x.wj) = wall_write;
    (d == 0 ? x.ri : x.rj) = wall_read;
    (d == 0 ? x.wj : x.wi) = along.lo[o];
    (d == 0 ? x.rj : x.ri) = along.lo[o];
    (d == 0 ? x.dj : x.di) = 1;
    l[count++] = x;
    total += x.length;
  }
};

__global__ void walls_kernel(lines w) {
  CAVITY2D_EACH_INDEX(w.total) {
    long long k = t;
    int q = 0;
    while (k >= w.l[q].length) k -= w.l[q++].length;
    const line& x = w.l[q];
    const double from = at(x.g, x.ri + k * x.di, x.rj + k * x.dj);
    at(x.g, x.wi + k * x.di, x.wj + k * x.dj) = x.r == rule::reflect ? from * -1.0
                                                : x.r == rule::lid   ? 2.0 - from
                                                                     : from;
  }
}

void run_walls(const lines& w, CUstream_st* s) {
  if (w.total == 0) return;
  walls_kernel<<<blocks_for(w.total), threads, 0, s>>>(w);
  check(cudaGetLastError(), "cavity2d walls kernel launch");
}

}  // namespace

void predict_u(const grid& u, const grid& v, const grid& us, const box& b, const constants& c,
               CUstream_st* s) {
  if (const long long n = volume(b); n > 0) {
    predict_u_kernel<<<blocks_for(n), threads, 0, s>>>(u, v, us, b, n, c);
    check(cudaGetLastError(), "cavity2d predict_u kernel launch");
  }
}

void predict_v(const grid& u, const grid& v, const grid& vs, const box& b, const constants& c,
               CUstream_st* s) {
  if (const long long n = volume(b); n > 0) {
    predict_v_kernel<<<blocks_for(n), threads, 0, s>>>(u, v, vs, b, n, c);
    check(cudaGetLastError(), "cavity2d predict_v kernel launch");
  }
}

void divergence(const grid& us, const grid& vs, const grid& rhs, const box& b, const constants& c,
                CUstream_st* s) {
  if (const long long n = volume(b); n > 0) {
    divergence_kernel<<<blocks_for(n), threads, 0, s>>>(us, vs, rhs, b, n, c);
    check(cudaGetLastError(), "cavity2d divergence kernel launch");
  }
}

void jacobi(const grid& from, const grid& to, const grid& rhs, const box& b, const constants& c,
            CUstream_st* s) {
  if (const long long n = volume(b); n > 0) {
    jacobi_kernel<<<blocks_for(n), threads, 0, s>>>(from, to, rhs, b, n, c);
    check(cudaGetLastError(), "cavity2d jacobi kernel launch");
  }
}

void correct(const grid& vel_star, const grid& p, const grid& vel, int d, const box& b,
             const constants& c, CUstream_st* s) {
  if (d != 0 && d != 1) throw std::runtime_error("cavity2d correct: dimension must be 0 or 1");
  if (const long long n = volume(b); n > 0) {
    correct_kernel<<<blocks_for(n), threads, 0, s>>>(vel_star, p, vel, d, b, n, c);
    check(cudaGetLastError(), "cavity2d correct kernel launch");
  }
}

void velocity_walls(const grid& u, const box& u_pts, const grid& v, const box& v_pts, long long n,
                    CUstream_st* s) {
  lines w;
  // u (x-faces, points 0..n along x): mirrored about its wall points along x (point -1 from
  // point 1, point n + 1 from n - 1); along y a mirror between cells (-1 from 0), the lid
  // u(n) = 2 - u(n - 1).
  if (u_pts.lo[0] == 0) w.add(u, u_pts, 0, -1, 1, rule::reflect);
  if (u_pts.hi[0] == n + 1) w.add(u, u_pts, 0, n + 1, n - 1, rule::reflect);
  if (u_pts.lo[1] == 0) w.add(u, u_pts, 1, -1, 0, rule::reflect);
  if (u_pts.hi[1] == n) w.add(u, u_pts, 1, n, n - 1, rule::lid);
  // v (y-faces): a mirror between cells along x, about its wall points along y.
  if (v_pts.lo[0] == 0) w.add(v, v_pts, 0, -1, 0, rule::reflect);
  if (v_pts.hi[0] == n) w.add(v, v_pts, 0, n, n - 1, rule::reflect);
  if (v_pts.lo[1] == 0) w.add(v, v_pts, 1, -1, 1, rule::reflect);
  if (v_pts.hi[1] == n + 1) w.add(v, v_pts, 1, n + 1, n - 1, rule::reflect);
  run_walls(w, s);
}

void pressure_walls(const grid& p, const box& b, long long n, CUstream_st* s) {
  lines w;
  if (b.lo[0] == 0) w.add(p, b, 0, -1, 0, rule::copy);
  if (b.hi[0] == n) w.add(p, b, 0, n, n - 1, rule::copy);
  if (b.lo[1] == 0) w.add(p, b, 1, -1, 0, rule::copy);
  if (b.hi[1] == n) w.add(p, b, 1, n, n - 1, rule::copy);
  run_walls(w, s);
}

}  // namespace cavity2d_device
