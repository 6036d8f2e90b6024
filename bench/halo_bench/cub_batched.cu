#include <cub/device/device_memcpy.cuh>

#include "cub_batched.hpp"

namespace halo_bench {

namespace {
template <class T>
cudaError_t to_device(const std::vector<T>& host, T** device) {
  if (const auto rc = cudaMalloc(device, host.size() * sizeof(T)); rc != cudaSuccess) return rc;
  return cudaMemcpy(*device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
}
}  // namespace

cub_batch::~cub_batch() {
  (void)cudaFree(temp_);
  (void)cudaFree(bytes_);
  (void)cudaFree(dst_);
  (void)cudaFree(src_);
}

cudaError_t cub_batch::prepare(const std::vector<const void*>& src, const std::vector<void*>& dst,
                               const std::vector<std::size_t>& bytes) {
  if (src.empty() || dst.size() != src.size() || bytes.size() != src.size() || src_)
    return cudaErrorInvalidValue;
  n_ = std::int64_t(src.size());
  cudaError_t rc = to_device(src, &src_);
  if (rc == cudaSuccess) rc = to_device(dst, &dst_);
  if (rc == cudaSuccess) rc = to_device(bytes, &bytes_);
  if (rc == cudaSuccess)  // the first call only sizes the temporary storage
    rc = cub::DeviceMemcpy::Batched(nullptr, temp_bytes_, src_, dst_, bytes_, n_);
  if (rc == cudaSuccess) rc = cudaMalloc(&temp_, temp_bytes_ > 0 ? temp_bytes_ : 1);
  return rc;
}

cudaError_t cub_batch::copy(cudaStream_t stream) {
  if (!temp_) return cudaErrorNotReady;  // not prepared
  const auto rc = cub::DeviceMemcpy::Batched(temp_, temp_bytes_, src_, dst_, bytes_, n_, stream);
  return rc != cudaSuccess ? rc : cudaGetLastError();
}

}  // namespace halo_bench
