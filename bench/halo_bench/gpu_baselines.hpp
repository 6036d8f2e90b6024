// halo_bench's one-GPU baselines (1 rank, periodic: every halo is the domain's own image):
// the copies a user could make instead of halox, each moving the same regions.
#pragma once
#include <vector>

#include <cuda_runtime.h>

#include "cub_batched.hpp"
#include "region_kernel.hpp"
#include "setup.hpp"

namespace halo_bench {

// One GPU, one rank, periodic: calls f(field, src, dst) for every region of every field, where
// `src` (owned cells) goes to `dst` (the opposite halo) — the copies the baselines make.
template <class F>
void for_each_region(const setup& s, F&& f) {
  for (const auto& d : s.st.directions()) {
    if (d == halox::direction<3>{}) continue;
    const auto opposite = halox::direction<3>{-d[0], -d[1], -d[2]};
    const auto src = s.send_region(d), dst = s.recv_region(opposite);
    for (const auto& fld : s.f) f(fld, src, dst);
  }
}

// One GPU, one rank, periodic: the halo is the domain's own image, so every region of every
// field is one cudaMemcpy3DAsync from the owned cells to the opposite halo (no pack kernel).
class memcpy3d {
 public:
  explicit memcpy3d(const setup& s) {
    cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    for_each_region(s, [&](const auto& fld, const auto& src, const auto& dst) {
      const auto a = fld.allocated_box();
      const auto e = a.size();
      cudaMemcpy3DParms p{};
      p.srcPtr = make_cudaPitchedPtr(fld.data(), std::size_t(e[2]) * sizeof(double),
                                     std::size_t(e[2]), std::size_t(e[1]));
      p.dstPtr = p.srcPtr;
      p.srcPos = make_cudaPos(std::size_t(src.lo[2] - a.lo[2]) * sizeof(double),
                              std::size_t(src.lo[1] - a.lo[1]), std::size_t(src.lo[0] - a.lo[0]));
      p.dstPos = make_cudaPos(std::size_t(dst.lo[2] - a.lo[2]) * sizeof(double),
                              std::size_t(dst.lo[1] - a.lo[1]), std::size_t(dst.lo[0] - a.lo[0]));
      const auto n = src.size();
      p.extent =
          make_cudaExtent(std::size_t(n[2]) * sizeof(double), std::size_t(n[1]), std::size_t(n[0]));
      p.kind = cudaMemcpyDeviceToDevice;
      copies_.push_back(p);
    });
  }
  ~memcpy3d() { (void)cudaStreamDestroy(stream_); }
  void enqueue(cudaStream_t stream) {
    for (const auto& p : copies_) cuda_check(cudaMemcpy3DAsync(&p, stream));
  }
  void exchange() {
    enqueue(stream_);
    cuda_check(cudaStreamSynchronize(stream_));
  }

 private:
  cudaStream_t stream_{};
  std::vector<cudaMemcpy3DParms> copies_;
};

// One GPU, one rank, periodic, like memcpy3d: one kernel launch per region per field, from the
// owned cells straight to the opposite halo (what a library without fused kernels launches).
class per_region_kernels {
 public:
  explicit per_region_kernels(const setup& s) {
    cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    for_each_region(s, [&](const auto& fld, const auto& src, const auto& dst) {
      regions_.push_back({fld.pointer(src.lo), fld.pointer(dst.lo), src.size(), fld.strides()});
    });
  }
  ~per_region_kernels() { (void)cudaStreamDestroy(stream_); }
  void enqueue(cudaStream_t stream) {
    for (const auto& r : regions_)
      cuda_check(halo_bench::copy_region(r.src, r.dst, r.n[0], r.n[1], r.n[2], r.stride[0],
                                         r.stride[1], stream));
  }
  void exchange() {
    enqueue(stream_);
    cuda_check(cudaStreamSynchronize(stream_));
  }

 private:
  struct region {
    const double* src;
    double* dst;
    halox::extents<3> n, stride;
  };
  cudaStream_t stream_{};
  std::vector<region> regions_;
};

// One GPU, one rank, periodic, like per_region_kernels but every region of every field in one
// launch of a plain kernel (a thread per element, the region found by binary search): the
// straightforward fused kernel that halox's tiled one is measured against.
class single_kernel {
 public:
  explicit single_kernel(const setup& s) {
    cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    std::vector<halo_bench::region_desc> regions;
    for_each_region(s, [&](const auto& fld, const auto& src, const auto& dst) {
      const auto n = src.size();
      const auto st = fld.strides();
      regions.push_back(
          {fld.pointer(src.lo), fld.pointer(dst.lo), n[1], n[2], st[0], st[1], total_});
      total_ += n[0] * n[1] * n[2];
    });
    n_ = int(regions.size());
    cuda_check(cudaMalloc(&regions_, regions.size() * sizeof regions[0]));
    cuda_check(cudaMemcpy(regions_, regions.data(), regions.size() * sizeof regions[0],
                          cudaMemcpyHostToDevice));
  }
  ~single_kernel() {
    (void)cudaFree(regions_);
    (void)cudaStreamDestroy(stream_);
  }
  single_kernel(const single_kernel&) = delete;
  single_kernel& operator=(const single_kernel&) = delete;
  void enqueue(cudaStream_t stream) {
    cuda_check(halo_bench::copy_regions_once(regions_, n_, total_, stream));
  }
  void exchange() {
    enqueue(stream_);
    cuda_check(cudaStreamSynchronize(stream_));
  }

 private:
  cudaStream_t stream_{};
  halo_bench::region_desc* regions_ = nullptr;
  int n_ = 0;
  long long total_ = 0;
};

// The fields' layout the copy-engine baselines rely on: rows contiguous, layers whole rows.
inline void require_row_major(const halox::field<double, 3>& fld, const char* who) {
  const auto st = fld.strides();
  if (st[2] != 1 || st[1] <= 0 || st[0] % st[1] != 0)
    throw halox::error(std::string("halo_bench ") + who +
                       ": a field is not row-major with whole rows per layer");
}

// One GPU, one rank, periodic, like memcpy3d but every region of every field in one
// cudaMemcpy3DBatchAsync call (CUDA 12.8+): the copy engine's own batching, what a user tries
// after one cudaMemcpy3DAsync per region.
class memcpy3d_batch {
 public:
  explicit memcpy3d_batch(const setup& s) {
    cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    for_each_region(s, [&](const auto& fld, const auto& src, const auto& dst) {
      require_row_major(fld, "memcpy3d_batch");
      const auto st = fld.strides();
      const auto n = src.size();
      cudaMemcpy3DBatchOp op{};
      // Pointer operands count in elements of one byte: row length in bytes, layer height in
      // rows; the pointers point at the first element copied.
      op.src.type = cudaMemcpyOperandTypePointer;
      op.src.op.ptr.ptr = fld.pointer(src.lo);
      op.src.op.ptr.rowLength = std::size_t(st[1]) * sizeof(double);
      op.src.op.ptr.layerHeight = std::size_t(st[0] / st[1]);
      op.dst = op.src;
      op.dst.op.ptr.ptr = fld.pointer(dst.lo);
      op.extent =
          make_cudaExtent(std::size_t(n[2]) * sizeof(double), std::size_t(n[1]), std::size_t(n[0]));
      op.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
      op.flags = cudaMemcpyFlagDefault;
      ops_.push_back(op);
    });
  }
  ~memcpy3d_batch() { (void)cudaStreamDestroy(stream_); }
  memcpy3d_batch(const memcpy3d_batch&) = delete;
  memcpy3d_batch& operator=(const memcpy3d_batch&) = delete;
  void enqueue(cudaStream_t stream) {
    cuda_check(cudaMemcpy3DBatchAsync(ops_.size(), ops_.data(), 0, stream));
  }
  void exchange() {
    enqueue(stream_);
    cuda_check(cudaStreamSynchronize(stream_));
  }

 private:
  cudaStream_t stream_{};
  std::vector<cudaMemcpy3DBatchOp> ops_;
};

// One GPU, one rank, periodic: every contiguous row of every region of every field is one
// buffer of cub::DeviceMemcpy::Batched, all of them in one call (CUB ships with the toolkit).
class cub_batched {
 public:
  explicit cub_batched(const setup& s) {
    cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    std::vector<const void*> src;
    std::vector<void*> dst;
    std::vector<std::size_t> bytes;
    for_each_region(s, [&](const auto& fld, const auto& from, const auto& to) {
      require_row_major(fld, "cub_batched");
      const auto n = from.size();
      for (idx i = 0; i < n[0]; ++i)
        for (idx j = 0; j < n[1]; ++j) {
          src.push_back(fld.pointer({from.lo[0] + i, from.lo[1] + j, from.lo[2]}));
          dst.push_back(fld.pointer({to.lo[0] + i, to.lo[1] + j, to.lo[2]}));
          bytes.push_back(std::size_t(n[2]) * sizeof(double));
        }
    });
    cuda_check(batch_.prepare(src, dst, bytes));
  }
  ~cub_batched() { (void)cudaStreamDestroy(stream_); }
  cub_batched(const cub_batched&) = delete;
  cub_batched& operator=(const cub_batched&) = delete;
  void enqueue(cudaStream_t stream) { cuda_check(batch_.copy(stream)); }
  void exchange() {
    enqueue(stream_);
    cuda_check(cudaStreamSynchronize(stream_));
  }

 private:
  cudaStream_t stream_{};
  cub_batch batch_;
};

}  // namespace halo_bench
