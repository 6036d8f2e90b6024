// The bindings' CUDA runtime calls (built with HALOX_ENABLE_CUDA): plain C++ against the CUDA
// runtime's C API, every call checked.
#include <cuda_runtime_api.h>

#include <halox/core/error.hpp>
#include <halox/field/memory.hpp>

#include "device.hpp"

namespace halox::python::gpu {

namespace {
void check(cudaError_t rc, const char* call) {
  if (rc == cudaSuccess) return;
  throw error(
      detail::format("{} failed: {} ({})", call, cudaGetErrorString(rc), cudaGetErrorName(rc)));
}
}  // namespace

bool enabled() noexcept {
  return true;
}

int device_count() noexcept {
  return detail::device_count();
}

int current_device() {
  int d = -1;
  check(cudaGetDevice(&d), "cudaGetDevice");
  return d;
}

void set_device(int device) {
  check(cudaSetDevice(device), "cudaSetDevice");
}

int pointer_device(const void* p, bool& is_device) {
  cudaPointerAttributes a{};
  const cudaError_t rc = cudaPointerGetAttributes(&a, p);
  if (rc == cudaErrorInvalidValue) {  // not memory CUDA knows of
    (void)cudaGetLastError();
    is_device = false;
    return -1;
  }
  check(rc, "cudaPointerGetAttributes");
  is_device = a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
  return a.type == cudaMemoryTypeManaged ? -1 : a.device;
}

void copy_to_host(void* dst, const void* src, std::size_t bytes) {
  check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy (device to host)");
}

void copy_to_device(void* dst, const void* src, std::size_t bytes) {
  check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy (host to device)");
}

void synchronize(stream_t stream) {
  check(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(stream)), "cudaStreamSynchronize");
}

}  // namespace halox::python::gpu
