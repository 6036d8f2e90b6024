#include "kernels.hpp"

#include <cstdio>
#include <cstdlib>

namespace halox_test {

namespace {
__device__ long long wrap(long long x, long long n) {
  return ((x % n) + n) % n;
}

// `salt_dev`: read the salt from device memory (CUDA graph tests: a replayed launch keeps its
// parameters), else `salt`.
__device__ double salt_of(const double* salt_dev, double salt) {
  return salt_dev != nullptr ? *salt_dev : salt;
}

__global__ void stamp_kernel(geom g, const double* salt_dev, double salt_arg) {
  const double salt = salt_of(salt_dev, salt_arg);
  const long long nx = g.owned_hi[0] - g.owned_lo[0], ny = g.owned_hi[1] - g.owned_lo[1],
                  nz = g.owned_hi[2] - g.owned_lo[2];
  for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < nx * ny * nz;
       t += (long long)gridDim.x * blockDim.x) {
    const long long i = g.owned_lo[0] + t / (ny * nz), j = g.owned_lo[1] + (t / nz) % ny,
                    k = g.owned_lo[2] + t % nz;
    g.base[(i - g.lo[0]) * g.stride[0] + (j - g.lo[1]) * g.stride[1] +
           (k - g.lo[2]) * g.stride[2]] = salt * 1e6 + double((i * g.n[1] + j) * g.n[2] + k);
  }
}

__global__ void verify_kernel(geom g, const double* salt_dev, double salt_arg,
                              unsigned long long* errors) {
  const double salt = salt_of(salt_dev, salt_arg);
  const long long total = g.ext[0] * g.ext[1] * g.ext[2];
  for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < total;
       t += (long long)gridDim.x * blockDim.x) {
    const long long a = t / (g.ext[1] * g.ext[2]), b = (t / g.ext[2]) % g.ext[1], c = t % g.ext[2];
    const long long i = wrap(g.lo[0] + a, g.n[0]), j = wrap(g.lo[1] + b, g.n[1]),
                    k = wrap(g.lo[2] + c, g.n[2]);
    const double want = salt * 1e6 + double((i * g.n[1] + j) * g.n[2] + k);
    if (g.base[a * g.stride[0] + b * g.stride[1] + c * g.stride[2]] != want)
      atomicAdd(errors, 1ull);
  }
}

__global__ void bump_kernel(double* salt) {
  *salt += 1;
}

__global__ void fill_kernel(double* p, long long n, double v) {
  for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < n;
       t += (long long)gridDim.x * blockDim.x)
    p[t] = v;
}

__global__ void callback_kernel(box_cells b) {
  long long total = b.ncomp;
  for (int i = 0; i < b.dims; ++i) total *= b.hi[i] - b.lo[i];
  for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < total;
       t += (long long)gridDim.x * blockDim.x) {
    long long r = t, g[4] = {0, 0, 0, 0}, off = 0;
    for (int i = b.dims - 1; i >= 0; --i) {
      g[i] = b.lo[i] + r % (b.hi[i] - b.lo[i]);
      r /= b.hi[i] - b.lo[i];
      off += (g[i] - b.origin[i]) * b.stride[i];
    }
    const long long c = r;
    double v = 5000.0 + double(c);
    for (int i = 0; i < b.dims; ++i) v = v * 7 + double(g[i]);
    b.base[off + c * b.comp_stride] = v;
  }
}

void check(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(rc));
    std::abort();
  }
}
}  // namespace

void stamp(const geom& g, double salt, cudaStream_t stream) {
  stamp_kernel<<<120, 256, 0, stream>>>(g, nullptr, salt);
  check(cudaGetLastError(), "stamp kernel launch");
}

void verify(const geom& g, double salt, unsigned long long* errors, cudaStream_t stream) {
  verify_kernel<<<120, 256, 0, stream>>>(g, nullptr, salt, errors);
  check(cudaGetLastError(), "verify kernel launch");
}

void stamp(const geom& g, const double* salt, cudaStream_t stream) {
  stamp_kernel<<<120, 256, 0, stream>>>(g, salt, 0.0);
  check(cudaGetLastError(), "stamp kernel launch");
}

void verify(const geom& g, const double* salt, unsigned long long* errors, cudaStream_t stream) {
  verify_kernel<<<120, 256, 0, stream>>>(g, salt, 0.0, errors);
  check(cudaGetLastError(), "verify kernel launch");
}

void bump(double* salt, cudaStream_t stream) {
  bump_kernel<<<1, 1, 0, stream>>>(salt);
  check(cudaGetLastError(), "bump kernel launch");
}

void fill_callback_value(const box_cells& b, cudaStream_t stream) {
  callback_kernel<<<64, 256, 0, stream>>>(b);
  check(cudaGetLastError(), "callback kernel launch");
}

void fill_value(double* p, long long n, double v, cudaStream_t stream) {
  fill_kernel<<<264, 256, 0, stream>>>(p, n, v);
  check(cudaGetLastError(), "fill kernel launch");
}

}  // namespace halox_test
