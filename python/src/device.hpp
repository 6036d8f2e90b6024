#pragma once
// The CUDA runtime calls the bindings make themselves (device.cpp with CUDA, device_stub.cpp
// without): which GPU memory belongs to, copies between host and device for DeviceArray, the
// current device. Free of CUDA headers.

#include <cstddef>

#include <halox/core/stream.hpp>

namespace halox::python::gpu {

/// Whether this build has CUDA.
bool enabled() noexcept;
/// GPUs this process can use (0 without CUDA or without a GPU).
int device_count() noexcept;
/// The calling thread's current device. Throws halox::error without CUDA.
int current_device();
/// Makes `device` current for the calling thread (cudaSetDevice).
void set_device(int device);
/// The device `p` lives on, -1 for managed memory; `is_device` false where `p` is no CUDA
/// device or managed memory (ordinary host memory). Throws halox::error without CUDA.
int pointer_device(const void* p, bool& is_device);
/// Blocking copies between host memory and device memory (on the legacy default stream, so
/// after the work already there).
void copy_to_host(void* dst, const void* src, std::size_t bytes);
void copy_to_device(void* dst, const void* src, std::size_t bytes);
/// Waits for the work on `stream`.
void synchronize(stream_t stream);

}  // namespace halox::python::gpu
