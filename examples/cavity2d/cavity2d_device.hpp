// cavity2d's GPU side: the projection method's sweeps and the walls and lid as CUDA kernels.
// C++17 with plain types and no CUDA headers: nvcc compiles the .cu as C++17 (CMake 3.25 has no
// C++20 flag for it), so it cannot see halox's C++20 headers, and cavity2d.cpp calls in through
// these declarations alone. Every formula repeats cavity2d.cpp's operation for operation, built
// without FMA contraction, so a GPU run rounds as the CPU run does.
//
// Every function enqueues on `s` and throws std::runtime_error naming the launch and its CUDA
// error when the launch fails.
#pragma once

struct CUstream_st;  // CUDA's stream type (cudaStream_t is CUstream_st*), as CUDA declares it

namespace cavity2d_device {

/// A 2-D double field in device memory: element of global point (i, j) at
/// `base[(i - lo[0]) * stride[0] + (j - lo[1]) * stride[1]]`.
struct grid {
  double* base = nullptr;  ///< first allocated element (lowest halo corner)
  long long lo[2] = {};    ///< global point of `base`: the allocation's lower corner
  long long stride[2] = {};
};

/// Points [lo, hi) in global indices.
struct box {
  long long lo[2] = {}, hi[2] = {};
};

/// The solver's constants, computed once on the host (so both runs use the same doubles).
struct constants {
  double h = 0, dt = 0, nu = 0;
};

/// Predictor of u (face(0)) at the points of `b`: us = u + dt (nu lap u - adv u).
void predict_u(const grid& u, const grid& v, const grid& us, const box& b, const constants& c,
               CUstream_st* s);
/// Predictor of v (face(1)) at the points of `b`.
void predict_v(const grid& u, const grid& v, const grid& vs, const box& b, const constants& c,
               CUstream_st* s);
/// rhs = div(us, vs) / dt at the cells of `b`.
void divergence(const grid& us, const grid& vs, const grid& rhs, const box& b, const constants& c,
                CUstream_st* s);
/// One Jacobi sweep of the pressure Poisson equation at the cells of `b`: `to` from `from`.
void jacobi(const grid& from, const grid& to, const grid& rhs, const box& b, const constants& c,
            CUstream_st* s);
/// Corrector of the velocity normal to dimension `d` at the points of `b`:
/// vel = vel_star - dt (p - p[-1 along d]) / h.
void correct(const grid& vel_star, const grid& p, const grid& vel, int d, const box& b,
             const constants& c, CUstream_st* s);

/// The walls and the lid of an n x n cavity, written into the halo points of this rank's blocks
/// beyond the global box, as cavity2d.cpp's halox boundary rules write them (no slip: the
/// tangential velocity mirrored with its sign flipped, the normal one mirrored about its wall
/// point; the lid u = 2 - u). `u_pts` and `v_pts` are the points each rank stores (its owned
/// box of u and v); a face's halo line is written along those points alone, which is every
/// point the solver reads there. One launch, no cell both read and written.
void velocity_walls(const grid& u, const box& u_pts, const grid& v, const box& v_pts, long long n,
                    CUstream_st* s);
/// Zero normal gradient of the pressure at all four walls (the cells of `b`, n x n cells).
void pressure_walls(const grid& p, const box& b, long long n, CUstream_st* s);

}  // namespace cavity2d_device
