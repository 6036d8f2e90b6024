#pragma once
// Owned device memory: an array of trivially copyable elements, allocated (and filled) through
// the one check, freed with its owner. Movable, not copyable.
#include <cuda_runtime.h>

#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpu/check.hpp"

namespace halox::detail::gpu {

template <class T>
class device_array {
  static_assert(std::is_trivially_copyable_v<T>, "device_array holds plain data");

 public:
  /// No memory.
  device_array() = default;
  /// `n` uninitialised elements (no memory where `n` is 0). `what` names the array in errors:
  /// "cudaMalloc(WHAT) failed"; `rank` is for error messages.
  device_array(std::size_t n, const char* what, int rank) : n_(n) {
    if (n == 0) return;
    void* p = nullptr;
    const cudaError_t rc = cudaMalloc(&p, n * sizeof(T));
    if (rc != cudaSuccess) check(rc, format("cudaMalloc({})", what), rank);
    p_ = static_cast<T*>(p);
  }
  /// A copy of `host` in device memory (blocking; no memory where `host` is empty).
  static device_array upload(const std::vector<T>& host, const char* what, int rank) {
    device_array a(host.size(), what, rank);
    if (a.n_ == 0) return a;
    const cudaError_t rc = cudaMemcpy(a.p_, host.data(), a.n_ * sizeof(T), cudaMemcpyHostToDevice);
    if (rc != cudaSuccess) check(rc, format("cudaMemcpy({})", what), rank);
    return a;
  }
  ~device_array() { reset(); }
  device_array(device_array&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  device_array& operator=(device_array&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  device_array(const device_array&) = delete;
  device_array& operator=(const device_array&) = delete;

  T* get() const noexcept { return p_; }
  std::size_t size() const noexcept { return n_; }

 private:
  // A destructor cannot report: a failure here means the context is already gone.
  void reset() noexcept {
    if (p_ != nullptr) (void)cudaFree(p_);
    p_ = nullptr;
    n_ = 0;
  }
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

}  // namespace halox::detail::gpu
