#pragma once
/// @file
/// The GPU seam of physical boundary rules: runs the device fields' rules of one exchange
/// object, stream-ordered. Compiles without nvcc; the kernel lives in
/// src/boundary/device_boundary.cu (builds without CUDA have a stub that fails, unreachable:
/// such builds reject device fields first).
///
/// The rules run as the host's do: dimension by dimension, the low face before the high one,
/// one kernel launch per dimension that has built-in fills (every field, block and side of that
/// dimension in the launch; none of them reads what another writes). Callbacks split the
/// sequence: with the lowest dimension that has a callback k, the launches of dimensions
/// 0..k follow the unpack on halox's stream (launch_after_unpack); complete() then runs the
/// callbacks of dimension k, the launches of the dimensions up to the next callback's, its
/// callbacks, and so on, on the stream it is given. The descriptor tables are uploaded once, at
/// construction, and never written again, so launches on any stream read them safely.

#include <memory>

#include "halox/core/stream.hpp"
#include "program/boundary_ops.hpp"

namespace halox::detail {

class device_boundary {
 public:
  /// Uploads the fills of `rules` (checked: grid sizes, CUDA calls); `halox_stream` is the
  /// stream of the exchange's kernels (blocking completions run callbacks there).
  device_boundary(device_rules rules, stream_t halox_stream, int rank);
  ~device_boundary();
  device_boundary(const device_boundary&) = delete;
  device_boundary& operator=(const device_boundary&) = delete;

  /// Enqueues the fills that need no callback first on halox's stream (right after the
  /// unpack), and records their completion for ready().
  void launch_after_unpack(int rank);
  /// True once what launch_after_unpack() enqueued has run. Never blocks.
  bool ready(int rank) const;
  /// After the exchange proper completed: the callbacks and the fills after them, on `stream`
  /// (a scheduled wait: no host wait), or, with `stream` null, on halox's stream followed by a
  /// host wait for it. Nothing to do without callbacks.
  void complete(stream_t stream, int rank);

 private:
  struct impl;
  std::unique_ptr<impl> p_;
};

}  // namespace halox::detail
