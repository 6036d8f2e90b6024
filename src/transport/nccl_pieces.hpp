#pragma once
// Zero-copy NCCL messages: where a message's regions are contiguous in a field, NCCL sends
// straight from the sender's owned cells and receives straight into the receiver's halo, with
// no pack or unpack kernel. NCCL moves contiguous bytes only, and between two ranks the k-th
// send meets the k-th receive with the same size, so both sides must cut a message into the
// same pieces. Each side describes its steps to the other at set-up (nccl_side); both compute
// the same cut from the two descriptions (nccl_cut). Plain C++17, no NCCL: tested on the CPU.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "program/program.hpp"

namespace halox::detail {

/// One side of one message, as its peer is told at set-up.
struct nccl_side {
  /// This side's steps read (write) the message's bytes as contiguous ranges of its fields, so
  /// it can hand NCCL the fields' memory itself.
  bool direct = false;
  /// Where its steps start inside the message, ascending, then the message's size (direct only).
  std::vector<std::uint64_t> edges;
};

/// A contiguous range of a message: what one ncclSend / ncclRecv moves.
struct nccl_piece {
  std::uint64_t offset = 0, bytes = 0;
};

/// How both sides move one message: its pieces, and which side uses its fields' memory. A side
/// that is not direct reads (writes) the pieces in its message buffer.
struct nccl_cut {
  std::vector<nccl_piece> pieces;
  bool sender_direct = false, receiver_direct = false;
};

/// Most NCCL calls one message is cut into; a cut that needs more moves the message whole,
/// packed on both sides (each call costs NCCL work on the host and the GPU).
inline constexpr std::size_t nccl_max_pieces = 16;
/// The alignment NCCL's fast copies need (16-byte vector loads on every pointer of a copy).
inline constexpr std::uint64_t nccl_alignment = 16;
/// A direct step that breaks that alignment (a row after one halo column, say) makes NCCL copy
/// it element by element: allowed up to this size, where the saved kernels outweigh it.
inline constexpr std::uint64_t nccl_unaligned_max = 256 << 10;

/// The cut both ranks compute from the two sides of a message of `bytes` bytes: one piece where
/// neither side is direct; otherwise a piece between every two consecutive edges of the direct
/// sides. Falls back to one packed piece where that takes more than nccl_max_pieces pieces.
nccl_cut cut_message(const nccl_side& sender, const nccl_side& receiver, std::uint64_t bytes);

/// A step of a direct side: the message's bytes [offset, offset + bytes) live at `field`.
struct nccl_direct_step {
  std::uint64_t offset = 0, bytes = 0;
  std::byte* field = nullptr;
};

/// This rank's side of message `m` of its message buffer `buf`, from the program's device steps
/// (`copies`: pack steps for a send, unpack steps for a receive; `gathers`: index-list steps).
/// Direct where every step touching the message is a plain copy (no index list, no reduction),
/// contiguous in its field, aligned (or small: nccl_unaligned_max), and the steps tile the
/// message; `steps` receives them.
nccl_side describe_side(const std::vector<copy_op>& copies, const std::vector<gather_op>& gathers,
                        bool sending, const std::byte* buf, const message& m,
                        std::vector<nccl_direct_step>& steps);

/// Where piece `p` of a message lives on this side: in the fields (`steps`, direct) or in the
/// message buffer at `at` (the message's first byte).
std::byte* piece_address(const nccl_piece& p, bool direct,
                         const std::vector<nccl_direct_step>& steps, std::byte* at);

/// Whether copy `op`'s field side (source when `sending`, else destination) is one contiguous
/// range of memory.
bool field_contiguous(const copy_op& op, bool sending);

}  // namespace halox::detail
