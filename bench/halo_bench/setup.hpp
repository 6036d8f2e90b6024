// halo_bench's cases: the domain, the fields with global coordinates encoded in them, and the
// 26 neighbour regions every implementation moves.
#pragma once
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <boost/mpi.hpp>
#include <halox/halox.hpp>
#ifdef HALOX_BENCH_CUDA
#include <cuda_runtime.h>
#endif

namespace halo_bench {

namespace mpi = boost::mpi;
using idx = halox::index;

#ifdef HALOX_BENCH_CUDA
inline void cuda_check(cudaError_t rc) {
  if (rc != cudaSuccess)
    throw halox::error(std::string("halo_bench: CUDA: ") + cudaGetErrorString(rc));
}

/// Two events around work on a stream: start(), the work, stop(), then us() waits for it.
class gpu_timer {
 public:
  gpu_timer() {
    cuda_check(cudaEventCreate(&t0_));
    cuda_check(cudaEventCreate(&t1_));
  }
  ~gpu_timer() {
    for (cudaEvent_t e : {t0_, t1_})
      if (const cudaError_t rc = cudaEventDestroy(e); rc != cudaSuccess)
        std::fprintf(stderr, "halo_bench: CUDA: cudaEventDestroy: %s\n", cudaGetErrorString(rc));
  }
  gpu_timer(const gpu_timer&) = delete;
  gpu_timer& operator=(const gpu_timer&) = delete;
  void start(cudaStream_t s = nullptr) { cuda_check(cudaEventRecord(t0_, s)); }
  void stop(cudaStream_t s = nullptr) { cuda_check(cudaEventRecord(t1_, s)); }
  /// Microseconds between start() and stop(), once stop() has been reached.
  double us() const {
    float ms = 0;
    cuda_check(cudaEventSynchronize(t1_));
    cuda_check(cudaEventElapsedTime(&ms, t0_, t1_));
    return double(ms) * 1e3;
  }

 private:
  cudaEvent_t t0_ = nullptr, t1_ = nullptr;
};

/// Lets the current GPU access `peer`'s memory (already allowed is fine).
inline void enable_peer_access(int peer) {
  const cudaError_t rc = cudaDeviceEnablePeerAccess(peer, 0);
  if (rc == cudaErrorPeerAccessAlreadyEnabled)
    (void)cudaGetLastError();  // clears the error this call leaves behind
  else
    cuda_check(rc);
}
#endif

// Value of cell g (wrapped into the global box), field f: unique and exact in a double.
inline double encode(const halox::extents<3>& g, const halox::extents<3>& n, int f) {
  idx w[3];
  for (int d = 0; d < 3; ++d) w[d] = ((g[d] % n[d]) + n[d]) % n[d];
  return double(((f * n[0] + w[0]) * n[1] + w[1]) * n[2] + w[2]);
}

// One benchmark case: the domain, the fields and the 26 neighbour regions.
struct setup {
  const halox::cartesian<3>& dom;
  halox::stencil<3> st;
  std::vector<halox::field<double, 3>> f;
  halox::box<3> owned;
  halox::extents<3> global;
  std::vector<halox::field<double, 3>> mirror;  // host copies of device fields (--device)
  std::vector<std::vector<double>> own;         // the arrays of wrapped fields (--wrapped)
  std::vector<std::vector<double, halox::node_shared_allocator<double>>> own_shared;

  // A host field over an array of the benchmark's own, padded by `w` (--wrapped), allocated
  // with halox::node_shared_allocator (--node-shared).
  halox::field<double, 3> wrap_own(int w, bool node_shared) {
    const auto n = dom.local_boxes()[0].size();
    const halox::extents<3> alloc{n[0] + 2 * w, n[1] + 2 * w, n[2] + 2 * w};
    const auto cells = std::size_t(alloc[0] * alloc[1] * alloc[2]);
    double* data = nullptr;
    if (node_shared)
      data = own_shared.emplace_back(cells).data();
    else
      data = own.emplace_back(cells).data();
    return dom.wrap<double>(data, alloc, {w, w, w}, {w, w, w});
  }

  const halox::field<double, 3>& host_view(int k) const {
    return mirror.empty() ? f[k] : mirror[k];
  }
  void fill() {
    for (int k = 0; k < int(f.size()); ++k) {
      const auto& h = host_view(k);
      const auto a = h.allocated_box();
      for (idx i = a.lo[0]; i < a.hi[0]; ++i)
        for (idx j = a.lo[1]; j < a.hi[1]; ++j)
          for (idx l = a.lo[2]; l < a.hi[2]; ++l)
            h.at({i, j, l}) = owned.contains({i, j, l}) ? encode({i, j, l}, global, k) : -1.0;
    }
    transfer(true);
  }
  // True when every halo cell of every field holds its source's value.
  bool check() const {
    transfer(false);
    bool ok = true;
    for (int k = 0; k < int(f.size()); ++k) {
      const auto& h = host_view(k);
      const auto a = h.allocated_box();
      for (idx i = a.lo[0]; i < a.hi[0]; ++i)
        for (idx j = a.lo[1]; j < a.hi[1]; ++j)
          for (idx l = a.lo[2]; l < a.hi[2]; ++l)
            ok = ok && h.at({i, j, l}) == encode({i, j, l}, global, k);
    }
    return mpi::all_reduce(dom.comm(), ok, std::logical_and<bool>());
  }
  // Copies the mirrors to the device fields (or back).
  void transfer(bool up) const {
#ifdef HALOX_BENCH_CUDA
    for (std::size_t k = 0; k < mirror.size(); ++k) {
      const auto bytes = std::size_t(f[k].allocated_box().volume()) * sizeof(double);
      cuda_check(up ? cudaMemcpy(f[k].data(), mirror[k].data(), bytes, cudaMemcpyHostToDevice)
                    : cudaMemcpy(mirror[k].data(), f[k].data(), bytes, cudaMemcpyDeviceToHost));
    }
#else
    (void)up;
#endif
  }
  // Neighbour rank in direction d (periodic).
  int neighbour(const halox::direction<3>& d) const {
    auto c = dom.coords(dom.rank());
    for (int i = 0; i < 3; ++i) c[i] = (c[i] + d[i] + dom.grid().dims[i]) % dom.grid().dims[i];
    return dom.rank_of(c);
  }
  // Cells sent towards direction d (inside the owned box) and received from it (halo).
  halox::box<3> send_region(const halox::direction<3>& d) const {
    halox::box<3> r = owned;
    for (int i = 0; i < 3; ++i) {
      if (d[i] < 0) r.hi[i] = owned.lo[i] + st.lo[i];
      if (d[i] > 0) r.lo[i] = owned.hi[i] - st.hi[i];
    }
    return r;
  }
  halox::box<3> recv_region(const halox::direction<3>& d) const {
    halox::box<3> r = owned;
    for (int i = 0; i < 3; ++i) {
      if (d[i] < 0) r.lo[i] = owned.lo[i] - st.lo[i], r.hi[i] = owned.lo[i];
      if (d[i] > 0) r.lo[i] = owned.hi[i], r.hi[i] = owned.hi[i] + st.hi[i];
    }
    return r;
  }
  // Bytes of the halo that come from other ranks (the rest are this rank's periodic image).
  std::size_t peer_bytes() const {
    std::size_t b = 0;
    for (const auto& d : st.directions()) {
      if (d == halox::direction<3>{} || neighbour(d) == dom.rank()) continue;
      b += std::size_t(recv_region(d).volume()) * f.size() * sizeof(double);
    }
    return b;
  }
  std::size_t halo_bytes() const {
    std::size_t b = 0;
    for (const auto& d : st.directions()) {
      if (d == halox::direction<3>{}) continue;
      b += std::size_t(recv_region(d).volume()) * f.size() * sizeof(double);
    }
    return b;
  }
};

}  // namespace halo_bench
