#pragma once
// What the device chain tests share: device copies of the model's payloads and the check of a
// round's result against the host model (chain_model.hpp).
#include <cuda_runtime.h>
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <algorithm>
#include <span>
#include <string>
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

// Even ranks run a round, odd ranks gather_left(w = 2): every rank (at two ranks or more) sits
// next to a rank making the other call and throws, naming it; the data already sent (pinned
// staging) or held back (NCCL) leaves nothing behind: a round afterwards delivers its own.
void check_mismatched_calls(halox::chain<i64>& ch, int me) {
  const device_vector mine(payload(me, 3, 0)), more(std::vector<i64>(9, me));
  std::string msg;
  try {
    if (me % 2 == 0)
      (void)ch.exchange(more.span(), more.span());
    else
      (void)ch.gather_left(mine.span(), 2);
  } catch (const halox::error& e) {
    msg = e.what();
  }
  const int l = ch.left(), nb = l >= 0 && l % 2 != me % 2 ? l : ch.right();
  const char* round = "a round (exchange, start or schedule_exchange)";
  const char* gather = "gather_left(w = 2)";
  CHECK(msg == "halox: rank " + std::to_string(me) + ": chain calls differ: this rank called " +
                   (me % 2 == 0 ? round : gather) + ", but its " + (nb == l ? "left" : "right") +
                   " neighbour (rank " + std::to_string(nb) + ") called " +
                   (me % 2 == 0 ? gather : round) +
                   "; every rank must make the same chain calls in the same order (gathers with "
                   "the same w)");
  const device_vector tl(payload(me, 4, 0)), tr(payload(me, 4, 1));
  check_round(ch, ch.exchange(tl.span(), tr.span()), 4);
}

}  // namespace chain_model
