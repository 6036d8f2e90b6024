// cub::DeviceMemcpy::Batched over a fixed list of buffers: the baseline a user reaches for with
// CUB (C++17, no halox types: compiled by nvcc separately from halo_bench.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include <cuda_runtime.h>

namespace halo_bench {
/// One batched copy of many buffers: their sources, destinations and sizes in device memory and
/// CUB's temporary storage, allocated once by `prepare`; `copy` runs the whole batch as one
/// cub::DeviceMemcpy::Batched call on a stream.
class cub_batch {
 public:
  cub_batch() = default;
  ~cub_batch();
  cub_batch(const cub_batch&) = delete;
  cub_batch& operator=(const cub_batch&) = delete;
  /// Copies the buffer lists (of equal length) to the device and allocates CUB's temporary
  /// storage; call once, before `copy`.
  cudaError_t prepare(const std::vector<const void*>& src, const std::vector<void*>& dst,
                      const std::vector<std::size_t>& bytes);
  /// Enqueues every copy on `stream`.
  cudaError_t copy(cudaStream_t stream);

 private:
  const void** src_ = nullptr;
  void** dst_ = nullptr;
  std::size_t* bytes_ = nullptr;
  std::int64_t n_ = 0;
  void* temp_ = nullptr;
  std::size_t temp_bytes_ = 0;
};
}  // namespace halo_bench
