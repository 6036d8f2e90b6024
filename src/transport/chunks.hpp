#pragma once
/// @file
/// How host-staged messages are cut for pipelining: plain functions of the message list and the
/// chunk size, so both sides of a message cut it alike, and testable without MPI or a GPU.
///
/// A message travels as MPI *pieces* (one persistent request each). The sender copies its pieces
/// from device to pinned host memory in *stages* (one `cudaMemcpyAsync` and one event each) and
/// starts a piece's send once its stage has run; the receiver copies each piece to the device as
/// it arrives. So the copy of stage i + 1, the MPI transfer of piece i and the receiver's copy of
/// piece i - 1 overlap.

#include <cstddef>
#include <vector>

#include "program/program.hpp"

namespace halox::detail {

/// The largest piece (MPI counts are `int`): messages above it are always cut.
inline constexpr std::size_t max_piece_bytes = std::size_t(1) << 30;

/// One MPI piece: `bytes` bytes at `offset` in the message buffer, part of message `message`.
struct piece {
  std::size_t message = 0;
  std::size_t offset = 0;
  std::size_t bytes = 0;
};

/// One device-to-host copy of the sender: `bytes` bytes at `offset`, after which the pieces
/// `[first, last)` may be sent.
struct stage {
  std::size_t offset = 0;
  std::size_t bytes = 0;
  std::size_t first = 0, last = 0;
};

/// The size of every piece but the last of a message of `bytes` bytes cut at `chunk` (the rule
/// of split_messages): `max_piece_bytes` where `chunk` is 0 or the message fits in one chunk.
std::size_t piece_size(std::size_t bytes, std::size_t chunk);

/// The pieces of `msgs`, message by message, each in order. With `chunk` > 0 a message of more
/// than `chunk` bytes is cut into ceil(bytes / chunk) pieces of equal size rounded up to 4 KiB
/// (the last one shorter); with `chunk` == 0, and always at most `max_piece_bytes`, pieces of
/// `max_piece_bytes`. An empty message is one empty piece.
std::vector<piece> split_messages(const std::vector<message>& msgs, std::size_t chunk);

/// The sender's copies of `pieces` (buffer order): adjacent pieces share one stage up to `chunk`
/// bytes; 0: every adjacent piece in one stage.
std::vector<stage> group_stages(const std::vector<piece>& pieces, std::size_t chunk);

}  // namespace halox::detail
