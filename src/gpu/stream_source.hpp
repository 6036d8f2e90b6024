#pragma once
/// @file
/// Where stream-ordered work of an exchange goes: halox's stream, and the CUDA graph capture
/// the exchange is enqueued into (device_copier is one; a stream-ordered carrier such as NCCL's
/// enqueues there). Plain C++: compiles without nvcc.

namespace halox::detail {

class stream_source {
 public:
  /// A `cudaStream_t`.
  virtual void* stream() const = 0;
  /// The capture the exchange in flight is enqueued into (0: none).
  virtual unsigned long long capture() const = 0;

 protected:
  ~stream_source() = default;
};

}  // namespace halox::detail
