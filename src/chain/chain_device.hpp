#pragma once
/// @file
/// The GPU seam of the chain exchange (src/chain/chain_device.cu; a stub that fails loudly
/// without CUDA): the stream a device chain stages its payloads on and a pointer query (its
/// pinned staging memory is transport/staging_buffer.hpp's). C++17-clean and free of CUDA
/// headers.

#include <cstddef>
#include <memory>
#include <string>

#include "halox/core/stream.hpp"

namespace halox::detail {

/// Whether `p` points into CUDA device (or managed) memory. `rank` is for error messages.
/// `device` (optional): the GPU it belongs to, or -1 for managed memory (any GPU reaches it).
bool is_device_pointer(const void* p, int rank, int* device = nullptr);

/// The staging copies of a device chain, in order on one stream of halox's own: a blocking
/// stream (work on the legacy default stream finishes before its copies start) of the highest
/// priority. Every CUDA call goes through the one check, with `rank` in its message.
class chain_stream {
 public:
  /// Creates the stream and its two events. Throws halox::error where there is no usable GPU.
  explicit chain_stream(int rank);
  /// Waits for the copies still enqueued, so that no buffer is freed under them.
  ~chain_stream();
  chain_stream(const chain_stream&) = delete;
  chain_stream& operator=(const chain_stream&) = delete;

  /// Enqueues a copy of `bytes` bytes (any direction; pinned host memory on one side).
  void copy(void* dst, const void* src, std::size_t bytes);
  /// Records the completion of everything enqueued so far, for `done()`.
  void record();
  /// True when the work recorded by the last `record()` has run. Never blocks.
  bool done();
  /// Blocks until everything enqueued has run.
  void synchronize();
  /// Makes this stream wait for the work already on `user` (no host wait).
  void wait_for(stream_t user);
  /// Makes `user` wait for everything enqueued here so far (no host wait).
  void signal(stream_t user);
  /// The stream itself, for NCCL groups enqueued on it.
  stream_t get() const;

 private:
  struct impl;
  std::unique_ptr<impl> p_;
};

}  // namespace halox::detail
