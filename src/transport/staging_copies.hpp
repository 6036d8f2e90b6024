#pragma once
/// @file
/// The GPU side of host staging in pieces: the copies between the device message buffers and
/// their pinned host mirrors, one per stage out and one per piece in, each with an event
/// created at set-up. Compiles without nvcc (the CUDA code is in staging_copies.cu).

#include <cstddef>
#include <memory>
#include <vector>

#include "transport/chunks.hpp"

namespace halox::detail {

/// Copies out (device to pinned host, on halox's stream after the pack kernel) stage by stage
/// and in (pinned host to device, on a stream of its own) piece by piece or all at once.
class staging_copies {
 public:
  /// `out`: the sender's stages in `send`/`device_send`; `in`: the receive pieces in
  /// `recv`/`device_recv`, each copied as it arrives (`in_pieces`) or all together at join().
  staging_copies(std::vector<stage> out, std::vector<piece> in, bool in_pieces,
                 const std::byte* device_send, std::byte* send, std::byte* device_recv,
                 const std::byte* recv, int rank);
  ~staging_copies();
  staging_copies(const staging_copies&) = delete;
  staging_copies& operator=(const staging_copies&) = delete;

  /// Enqueues every stage's copy out on `stream` (a `cudaStream_t`), each followed by its event.
  void copy_out(void* stream);
  /// True once stage `s`'s copy out has run. Never blocks.
  bool copied_out(std::size_t s);
  /// Receive piece `p` has arrived: enqueues its copy in (with `in_pieces`; else nothing yet).
  void arrived(std::size_t p);
  /// Every piece has arrived: enqueues the copy in of all of them (without `in_pieces`) and
  /// makes `stream` wait for every copy in.
  void join(void* stream);

 private:
  struct impl;
  std::unique_ptr<impl> p_;
};

}  // namespace halox::detail
