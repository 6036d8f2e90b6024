#pragma once
// An owned CUDA stream: created through the one check, destroyed with its owner (the way GHEX's
// device/cuda/stream.hpp does it). Movable, not copyable.
#include <cuda_runtime.h>

#include <utility>

#include "gpu/check.hpp"

namespace halox::detail::gpu {

class stream {
 public:
  /// A stream with `flags` (cudaStreamDefault: ordered after the legacy default stream;
  /// cudaStreamNonBlocking: not) at the default priority. `rank` is for error messages.
  explicit stream(unsigned flags, int rank = -1) {
    check(cudaStreamCreateWithFlags(&s_, flags), "cudaStreamCreateWithFlags", rank);
  }
  /// A stream with `flags` at the highest priority the device offers: its kernels get SMs ahead
  /// of other streams' kernels.
  static stream greatest_priority(unsigned flags, int rank = -1) {
    int least = 0, greatest = 0;
    check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange",
          rank);
    stream s;
    check(cudaStreamCreateWithPriority(&s.s_, flags, greatest), "cudaStreamCreateWithPriority",
          rank);
    return s;
  }
  ~stream() { reset(); }
  stream(stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  stream& operator=(stream&& o) noexcept {
    if (this != &o) {
      reset();
      s_ = std::exchange(o.s_, nullptr);
    }
    return *this;
  }
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;

  cudaStream_t get() const noexcept { return s_; }

 private:
  stream() = default;
  // A destructor cannot report: a failure here means the context is already gone.
  void reset() noexcept {
    if (s_ != nullptr) (void)cudaStreamDestroy(s_);
    s_ = nullptr;
  }
  cudaStream_t s_ = nullptr;
};

}  // namespace halox::detail::gpu
