#pragma once
// An owned CUDA event: created through the one check, destroyed with its owner. Movable, not
// copyable.
#include <cuda_runtime.h>

#include <utility>

#include "gpu/check.hpp"

namespace halox::detail::gpu {

class event {
 public:
  /// An event with `flags` (by default cudaEventDisableTiming: ordering only, the cheapest
  /// kind). `rank` is for error messages.
  explicit event(unsigned flags = cudaEventDisableTiming, int rank = -1) {
    check(cudaEventCreateWithFlags(&e_, flags), "cudaEventCreate", rank);
  }
  ~event() { reset(); }
  event(event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  event& operator=(event&& o) noexcept {
    if (this != &o) {
      reset();
      e_ = std::exchange(o.e_, nullptr);
    }
    return *this;
  }
  event(const event&) = delete;
  event& operator=(const event&) = delete;

  cudaEvent_t get() const noexcept { return e_; }

 private:
  // A destructor cannot report: a failure here means the context is already gone.
  void reset() noexcept {
    if (e_ != nullptr) (void)cudaEventDestroy(e_);
    e_ = nullptr;
  }
  cudaEvent_t e_ = nullptr;
};

}  // namespace halox::detail::gpu
