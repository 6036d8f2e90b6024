#pragma once
// Lowering, the first layer of the GPU copy engine (then device_copy_kernels.cuh, the kernels,
// and device_copy.cu, the launcher): a list of copy_op and gather_op becomes the table the fused
// copy kernel reads. Plain C++ without CUDA, so that the CPU build compiles it and the unit
// tests check it; everything here is decided once, at set-up.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "program/ops.hpp"

namespace halox::detail {

constexpr int block_threads = 256;               // threads of a copy kernel block
constexpr long long tile_elems = block_threads;  // one element per thread

// What a descriptor copies: a strided block, or an index-list gather or scatter.
enum copy_kind : int { strided_kind = 0, gather_kind = 1, scatter_kind = 2 };

// A copy_op or gather_op as the kernel reads it. Strided: `ndims` dimensions of `count` with byte
// strides. Gather/scatter: element e is component e % ncomp of entity idx[e / ncomp] of the
// field (`src` for gather, `dst` for scatter), and element e of the contiguous buffer.
struct copy_descriptor {
  const unsigned char* src;
  unsigned char* dst;
  long long total;  // elements
  long long count[max_copy_dims], src_stride[max_copy_dims], dst_stride[max_copy_dims];
  const long long* idx;
  long long ncomp, entity_stride, comp_stride, elem;
  int kind;
  int red_op, red_type;  // device_reduce: combine into dst instead of copying
  int ndims;
  int words;    // words of `unit` bytes per element
  int unit;     // 1, 2, 4, 8 or 16
  int flagged;  // copy_op::flagged: 0, flagged_write or flagged_read
  // Strided copies of fewer than 2^32 elements: division by count[k] as a multiply and shifts,
  // precomputed (see set_divisor()).
  unsigned magic[max_copy_dims];
  unsigned char shift1[max_copy_dims], shift2[max_copy_dims];
};

// One tile of a table: its descriptor and its place in that descriptor (tile `tile` covers
// elements [tile * tile_elems, (tile + 1) * tile_elems)). The layout of CUDA's int2, so that the
// kernel loads it in one instruction.
struct alignas(8) tile_entry {
  int copy;
  int tile;
};

// A copy list lowered: the descriptors, every tile in the order the kernel's blocks take them,
// and the index lists of the gathers and scatters. Each gather/scatter descriptor's `idx` points
// into `indices` here (the launcher rebases it to the uploaded copy); every other pointer is the
// copy's own, so the table also runs on the host where the memory is the host's.
struct copy_table {
  std::vector<copy_descriptor> copies;
  std::vector<tile_entry> tiles;
  std::vector<long long> indices;  // every index list, each once, back to back
  int pairs = 0;                   // pairs of adjacent narrow copies run as one
  bool plain = true;               // every descriptor a plain_copy()
  std::size_t bytes = 0;           // moved per launch
};

// Lowers strided copies and gathers (`gather_as` gather_kind: field → buffer) or scatters
// (scatter_kind: buffer → field). Empty copies are left out.
copy_table lower(const std::vector<copy_op>& list, const std::vector<gather_op>& gathers,
                 copy_kind gather_as);

// A copy the lean kernel runs: strided, one word per element, no reduction, no flagged words,
// fewer than 2^32 elements.
bool plain_copy(const copy_descriptor& d);

// Sets the multiply-and-shift division by `divisor` (>= 1) for dimension `k` of `d`.
void set_divisor(copy_descriptor& d, int k, std::uint64_t divisor);

// Merges pairs of adjacent narrow copies of one shape into one copy each; returns how many.
int pair_adjacent(std::vector<copy_descriptor>& copies);

}  // namespace halox::detail
