// The bindings' CUDA runtime calls in a build without CUDA: every one that needs a GPU fails.
#include <halox/core/error.hpp>

#include "device.hpp"

namespace halox::python::gpu {

namespace {
[[noreturn]] void no_cuda(const char* what) {
  throw error(detail::format("{} needs a CUDA build of halox (HALOX_ENABLE_CUDA=ON)", what));
}
}  // namespace

bool enabled() noexcept {
  return false;
}
int device_count() noexcept {
  return 0;
}
int current_device() {
  no_cuda("current_device()");
}
void set_device(int) {
  no_cuda("set_device()");
}
int pointer_device(const void*, bool&) {
  no_cuda("a device array");
}
void copy_to_host(void*, const void*, std::size_t) {
  no_cuda("copying from device memory");
}
void copy_to_device(void*, const void*, std::size_t) {
  no_cuda("copying to device memory");
}
void synchronize(stream_t) {
  no_cuda("synchronize()");
}

}  // namespace halox::python::gpu
