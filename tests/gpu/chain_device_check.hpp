#pragma once
// What the device chain tests share: device copies of the model's payloads and the check of a
// round's result against the host model (chain_model.hpp).
#include <cuda_runtime.h>
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <algorithm>
#include <span>
#include <vector>

#include "../chain_model.hpp"
#include "gpu_setup.hpp"

namespace chain_model {

using gpu_test::cuda;

// A device copy of a host vector, freed at scope exit.
struct device_vector {
  i64* p = nullptr;
  std::size_t n = 0;
  explicit device_vector(const std::vector<i64>& h) : n(h.size()) {
    cuda(cudaMalloc(&p, std::max<std::size_t>(n, 1) * sizeof(i64)));
    cuda(cudaMemcpy(p, h.data(), n * sizeof(i64), cudaMemcpyHostToDevice));
    // From pageable memory cudaMemcpy may return before the data lands, and the stream-ordered
    // test writes the buffer again on a non-blocking stream: let this copy finish first.
    cuda(cudaDeviceSynchronize());
  }
  ~device_vector() { (void)cudaFree(p); }
  device_vector(const device_vector&) = delete;
  device_vector& operator=(const device_vector&) = delete;
  std::span<const i64> span() const { return {p, n}; }
};

std::vector<i64> download(std::span<const i64> d, cudaStream_t s = nullptr) {
  std::vector<i64> h(d.size());
  if (s) {
    cuda(cudaMemcpyAsync(h.data(), d.data(), d.size() * sizeof(i64), cudaMemcpyDeviceToHost, s));
    cuda(cudaStreamSynchronize(s));
  } else {
    cuda(cudaMemcpy(h.data(), d.data(), d.size() * sizeof(i64), cudaMemcpyDeviceToHost));
  }
  return h;
}

void check_round(const halox::chain<i64>& ch, const halox::chain_result<i64>& res, int round,
                 cudaStream_t s = nullptr) {
  REQUIRE(res.from_left().has_value() == (ch.left() >= 0));
  REQUIRE(res.from_right().has_value() == (ch.right() >= 0));
  if (ch.left() >= 0) REQUIRE(download(*res.from_left(), s) == payload(ch.left(), round, 1));
  if (ch.right() >= 0) REQUIRE(download(*res.from_right(), s) == payload(ch.right(), round, 0));
}

}  // namespace chain_model
