// Fused GPU pack/unpack: one launch runs every copy of a list. Blocks are dealt tiles of one
// element per thread; a block finds its copy in a per-tile table (one load), then its threads
// copy the tile (consecutive threads, consecutive elements: coalesced where regions are
// contiguous). Grid-stride over tiles, so any halo size works; small tiles and many resident
// blocks keep enough loads in flight (the copy is latency-bound, not bandwidth-bound, otherwise).
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "../gpu/check.hpp"
#include "../gpu/cuda_driver.hpp"
#include "halox/core/error.hpp"
#include "halox/pack/device_copy.hpp"

namespace halox::detail {

namespace {

constexpr int max_rank = max_copy_rank;
constexpr int block_threads = 256;
constexpr long long tile_elems = block_threads;  // one element per thread

enum op_kind : int { strided = 0, gather_kind = 1, scatter_kind = 2 };

// A copy_op or gather_op as the kernel reads it. Strided: `rank` dimensions of `count` with byte
// strides. Gather/scatter: element e is component e % ncomp of entity idx[e / ncomp] of the
// field (`src` for gather, `dst` for scatter), and element e of the contiguous buffer.
struct dev_op {
  const unsigned char* src;
  unsigned char* dst;
  long long total;  // elements
  long long count[max_rank], src_stride[max_rank], dst_stride[max_rank];
  const long long* idx;
  long long ncomp, entity_stride, comp_stride, elem;
  int kind;
  int red_op, red_type;  // device_reduce: combine into dst instead of copying
  int rank;
  int words;  // words of `unit` bytes per element
  int unit;   // 1, 2, 4, 8 or 16
  // Strided copies of fewer than 2^32 elements: division by count[k] as a multiply and shifts
  // (see divide()), precomputed.
  unsigned magic[max_rank];
  unsigned char shift1[max_rank], shift2[max_rank];
};

// Division of 32-bit unsigned numbers by a fixed divisor without a division instruction (the
// round-up method of Granlund and Montgomery, exact for every 32-bit numerator): for divisor d
// >= 1 and l = ceil(log2 d), magic = floor(2^32 (2^l - d) / d) + 1, then
// n / d = (t + ((n - t) >> min(l, 1))) >> max(l - 1, 0) with t = the high half of magic * n.
void set_divisor(dev_op& d, int k, std::uint64_t divisor) {
  int l = 0;
  while ((std::uint64_t(1) << l) < divisor) ++l;
  d.magic[k] =
      unsigned(((std::uint64_t(1) << 32) * ((std::uint64_t(1) << l) - divisor)) / divisor + 1);
  d.shift1[k] = static_cast<unsigned char>(l < 1 ? l : 1);
  d.shift2[k] = static_cast<unsigned char>(l > 1 ? l - 1 : 0);
}
// Every dimension's divisor (strided copies of fewer than 2^32 elements).
void set_divisors(dev_op& d) {
  for (int k = 0; k < d.rank; ++k)
    set_divisor(d, k, std::uint64_t(std::max<long long>(1, d.count[k])));
}
// A copy the lean kernel runs: strided, one word per element, no reduction, fewer than 2^32
// elements.
bool plain_copy(const dev_op& d) {
  return d.kind == strided && d.red_op == 0 && d.words == 1 && d.total <= 0xffffffffLL;
}
__device__ unsigned divide(const dev_op& op, int k, unsigned n) {
  const unsigned t = __umulhi(op.magic[k], n);
  return (t + ((n - t) >> op.shift1[k])) >> op.shift2[k];
}

using gpu::check;

// The widest power of two (<= 16) that divides the element size, every stride and both bases.
int unit_of(const copy_op& op) {
  std::uint64_t bits = op.elem | reinterpret_cast<std::uintptr_t>(op.src) |
                       reinterpret_cast<std::uintptr_t>(op.dst) | 16;
  for (int k = 0; k < op.rank; ++k)
    bits |= std::uint64_t(op.src_stride[k]) | std::uint64_t(op.dst_stride[k]);
  return int(bits & (~bits + 1));  // lowest set bit
}
int unit_of(const gather_op& op) {
  const std::uint64_t bits = op.elem | reinterpret_cast<std::uintptr_t>(op.field) |
                             reinterpret_cast<std::uintptr_t>(op.buf) |
                             std::uint64_t(op.entity_stride) | std::uint64_t(op.comp_stride) | 16;
  return int(bits & (~bits + 1));
}

// A plain copy whose innermost dimension is contiguous on both sides moves that row as bytes,
// in the widest words (<= 16 B) that divide the row, both bases and every outer stride: rows of
// doubles at 16-byte-aligned offsets move as uint4, one word per element of the kernel.
void as_wide_words(const copy_op& op, dev_op& d) {
  const int in = op.rank - 1;
  const auto elem = index(op.elem);
  if (op.src_stride[in] != elem || op.dst_stride[in] != elem) return;
  const index row = op.count[in] * elem;
  std::uint64_t bits = std::uint64_t(row) | reinterpret_cast<std::uintptr_t>(op.src) |
                       reinterpret_cast<std::uintptr_t>(op.dst) | 16;
  for (int k = 0; k < in; ++k)
    bits |= std::uint64_t(op.src_stride[k]) | std::uint64_t(op.dst_stride[k]);
  const auto unit = index(bits & (~bits + 1));
  d.unit = int(unit);
  d.words = 1;
  d.count[in] = row / unit;
  d.src_stride[in] = d.dst_stride[in] = unit;
  d.total = d.total / op.count[in] * d.count[in];
}

// Copies whose rows are narrower than a 32-byte sector (the faces across the contiguous
// dimension: one or two doubles per row, rows 2 KB apart at 256³) read and write a sector per
// row each. Where two such copies of one shape lie next to each other — one's destination
// within 32 bytes of the other's source, as in the periodic wrap of a dimension one rank holds
// entirely: the low halo and the cells that go to the high halo share sectors, and the other
// way round — they become one copy with an innermost dimension of two (its strides: the
// distance between the two). Adjacent threads of a warp then copy the same row of both, so
// each sector is read and written by one instruction pair rather than by two blocks at
// different times (measured in docs/performance.md).
bool narrow_rows(const dev_op& d) {
  const int in = d.rank - 1;
  const bool contiguous = d.src_stride[in] == d.unit && d.dst_stride[in] == d.unit;
  return (contiguous ? d.count[in] * d.unit : d.unit) < 32;
}
// Returns how many pairs it merged.
int pair_adjacent(std::vector<dev_op>& ops) {
  auto eligible = [](const dev_op& d) {
    return plain_copy(d) && d.total <= 0x7fffffffLL && narrow_rows(d);  // (plain once doubled)
  };
  // Copies of one shape: rank, word, extents and strides (a stride counts only where its
  // extent is above one).
  using key_t = std::array<long long, 2 + 3 * max_rank>;
  auto key = [](const dev_op& d) {
    key_t k{};
    k[0] = d.rank;
    k[1] = d.unit;
    for (int i = 0; i < d.rank; ++i) {
      k[std::size_t(2 + 3 * i)] = d.count[i];
      k[std::size_t(3 + 3 * i)] = d.count[i] > 1 ? d.src_stride[i] : 0;
      k[std::size_t(4 + 3 * i)] = d.count[i] > 1 ? d.dst_stride[i] : 0;
    }
    return k;
  };
  // Addresses as integers: the two copies may lie in different allocations.
  auto distance = [](const unsigned char* to, const unsigned char* from) {
    return static_cast<long long>(reinterpret_cast<std::uintptr_t>(to) -
                                  reinterpret_cast<std::uintptr_t>(from));
  };
  auto near = [&](const unsigned char* a, const unsigned char* b) {
    return std::abs(distance(a, b)) < 32;
  };
  std::map<key_t, std::vector<std::size_t>> shapes;
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (eligible(ops[i])) shapes[key(ops[i])].push_back(i);
  std::vector<char> merged(ops.size(), 0);
  int pairs = 0;
  for (const auto& [shape, members] : shapes)
    for (std::size_t x = 0; x < members.size(); ++x) {
      dev_op& a = ops[members[x]];
      if (merged[members[x]]) continue;
      for (std::size_t y = x + 1; y < members.size(); ++y) {
        const dev_op& b = ops[members[y]];
        if (merged[members[y]] || !(near(a.dst, b.src) || near(b.dst, a.src))) continue;
        int in = a.rank - 1;  // the pair dimension: the innermost if it has one element
        if (a.count[in] != 1) {
          if (a.rank == max_rank) break;
          in = a.rank++;
        }
        a.count[in] = 2;
        a.src_stride[in] = distance(b.src, a.src);
        a.dst_stride[in] = distance(b.dst, a.dst);
        a.total *= 2;
        set_divisors(a);
        merged[members[y]] = 1;
        ++pairs;
        break;
      }
    }
  std::size_t kept = 0;
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (!merged[i]) ops[kept++] = ops[i];
  ops.resize(kept);
  return pairs;
}

template <class T>
__device__ void combine(const unsigned char* s, unsigned char* d, int op) {
  const T b = *reinterpret_cast<const T*>(s);
  T& a = *reinterpret_cast<T*>(d);
  a = op == 1 ? T(a + b) : op == 2 ? (b < a ? b : a) : (a < b ? b : a);
}

__device__ void combine_elem(const unsigned char* s, unsigned char* d, int op, int type) {
  switch (type) {
    case 1:
      return combine<double>(s, d, op);
    case 2:
      return combine<float>(s, d, op);
    case 3:
      return combine<int>(s, d, op);
    case 4:
      return combine<long long>(s, d, op);
    case 5:
      return combine<unsigned>(s, d, op);
    default:
      return combine<unsigned long long>(s, d, op);
  }
}

template <class W>
__device__ void copy_words(const unsigned char* s, unsigned char* d, int words) {
  for (int w = 0; w < words; ++w) reinterpret_cast<W*>(d)[w] = reinterpret_cast<const W*>(s)[w];
}

// Where element `e` of a strided copy of fewer than 2^32 elements is read and written: 32-bit
// indices, divisions by multiplication, the loop over dimensions unrolled.
__device__ void locate_small(const dev_op& op, unsigned e, const unsigned char*& s,
                             unsigned char*& d) {
  s = op.src;
  d = op.dst;
#pragma unroll
  for (int k = max_rank - 1; k > 0; --k) {
    if (k >= op.rank) continue;
    const unsigned q = divide(op, k, e), i = e - q * unsigned(op.count[k]);
    e = q;
    s += i * op.src_stride[k];
    d += i * op.dst_stride[k];
  }
  s += e * op.src_stride[0];
  d += e * op.dst_stride[0];
}

// Where element `e` of a strided copy is read and written.
__device__ void locate_strided(const dev_op& op, long long e, const unsigned char*& s,
                               unsigned char*& d) {
  if (op.total <= 0xffffffffLL) return locate_small(op, unsigned(e), s, d);
  s = op.src;
  d = op.dst;
  long long rem = e;
  for (int k = op.rank - 1; k > 0; --k) {
    const long long c = op.count[k], i = rem % c;
    rem /= c;
    s += i * op.src_stride[k];
    d += i * op.dst_stride[k];
  }
  s += rem * op.src_stride[0];
  d += rem * op.dst_stride[0];
}

// Where element `e` of `op` is read and written.
__device__ void locate(const dev_op& op, long long e, const unsigned char*& s, unsigned char*& d) {
  if (op.kind == strided) return locate_strided(op, e, s, d);
  const long long entity = op.idx[e / op.ncomp], c = e % op.ncomp;
  const long long in_field = entity * op.entity_stride + c * op.comp_stride, in_buf = e * op.elem;
  s = op.src + (op.kind == gather_kind ? in_field : in_buf);
  d = op.dst + (op.kind == gather_kind ? in_buf : in_field);
}

// A copy of one word per element: element `e` (the thread's in its tile) if below `end`.
template <bool plain, class W>
__device__ void move_word(const dev_op& op, long long e, long long end) {
  if (e >= end) return;
  const unsigned char* s;
  unsigned char* d;
  if constexpr (plain)
    locate_small(op, unsigned(e), s, d);
  else
    locate(op, e, s, d);
  *reinterpret_cast<W*>(d) = *reinterpret_cast<const W*>(s);
}

// Anything else (several words per element, reductions): element by element.
__device__ void copy_elements(const dev_op& op, long long first, long long end) {
  for (long long e = first; e < end; e += block_threads) {
    const unsigned char* s;
    unsigned char* d;
    locate(op, e, s, d);
    if (op.red_op != 0) {
      combine_elem(s, d, op.red_op, op.red_type);
      continue;
    }
    switch (op.unit) {
      case 16:
        copy_words<uint4>(s, d, op.words);
        break;
      case 8:
        copy_words<unsigned long long>(s, d, op.words);
        break;
      case 4:
        copy_words<unsigned int>(s, d, op.words);
        break;
      case 2:
        copy_words<unsigned short>(s, d, op.words);
        break;
      default:
        copy_words<unsigned char>(s, d, op.words);
        break;
    }
  }
}

// A launch's signals (see device_signals): flag pointers in device memory, the exchange number
// and the launch's block counter (it counts up by gridDim.x per launch).
struct signal_args {
  unsigned long long* const* start = nullptr;
  const unsigned long long* const* wait = nullptr;
  unsigned long long* const* post = nullptr;
  unsigned long long* blocks_done = nullptr;
  unsigned long long exchange = 0, wait_for = 0;
  int n_start = 0, n_wait = 0, n_post = 0;
};

__device__ unsigned long long load_acquire_sys(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ void store_release_sys(unsigned long long* p, unsigned long long v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ unsigned long long atomic_add_acq_rel_gpu(unsigned long long* p, unsigned long long v) {
  unsigned long long old;
  asm volatile("atom.add.acq_rel.gpu.global.u64 %0, [%1], %2;"
               : "=l"(old)
               : "l"(p), "l"(v)
               : "memory");
  return old;
}

// Block 0 announces that this rank has started the exchange (the launch runs after everything
// before it on the stream, so every earlier read of the halo is done); then every block waits
// until its flags allow it to go on (one thread polls, the block follows).
__device__ void wait_signals(const signal_args& sig) {
  if (sig.n_wait + sig.n_start == 0) return;
  if (threadIdx.x == 0) {
    if (blockIdx.x == 0)
      for (int k = 0; k < sig.n_start; ++k) store_release_sys(sig.start[k], sig.exchange);
    for (int k = 0; k < sig.n_wait; ++k)
      while (load_acquire_sys(sig.wait[k]) < sig.wait_for) {
      }
  }
  __syncthreads();
}

// The last block to finish posts the flags, each a release at system scope. The chain that
// makes every block's writes (local, or into a peer GPU's memory) visible to whoever acquires a
// flag: each thread's writes, the block's barrier, thread 0's acquire-release increment of the
// block counter (device scope), the last block's increment that reads it, that thread's release
// of the flags. Release and acquire are cumulative in the PTX memory model, so no
// sequentially consistent system fence (__threadfence_system) is needed: leaving it out took a
// microsecond off every exchange round between two GPUs.
__device__ void post_signals(const signal_args& sig) {
  if (sig.n_post == 0) return;
  __syncthreads();
  if (threadIdx.x != 0) return;
  if (gridDim.x > 1) {  // (a single block is its own last block)
    const unsigned long long before = atomic_add_acq_rel_gpu(sig.blocks_done, 1ull);
    if (before + 1 != sig.exchange * gridDim.x) return;
  }
  for (int k = 0; k < sig.n_post; ++k) store_release_sys(sig.post[k], sig.exchange);
}

// The pack's start announcement (into the senders' memory) and its wait on the receivers'
// announcements, ahead of a large copy launch where stream memory operations are unavailable:
// one block spins instead of a whole grid holding the SMs.
__global__ void gate_kernel(signal_args sig) {
  wait_signals(sig);
}

// `plain`: every copy of the table is strided, one word per element, no reduction, fewer than
// 2^32 elements (a structured exchange's packing and unpacking): the kernel has no other path,
// so it fits in 32 registers and eight blocks share an SM.
template <bool plain>
__global__ void __launch_bounds__(block_threads, plain ? 8 : 1)
    copy_kernel(const dev_op* __restrict__ ops, const int2* __restrict__ tile_of, long long tiles,
                signal_args sig) {
  wait_signals(sig);
  long long tile = blockIdx.x;
  // The table has an entry per tile (its copy, its place in the copy): one load, not a search,
  // and the next tile's is loaded while this one is copied.
  int2 next = tile < tiles ? tile_of[tile] : int2{};
  for (; tile < tiles; tile += gridDim.x) {
    const int2 at = next;
    if (tile + gridDim.x < tiles) next = tile_of[tile + gridDim.x];
    const dev_op& op = ops[at.x];
    const long long base = (long long)at.y * tile_elems;
    const long long end = base + tile_elems < op.total ? base + tile_elems : op.total;
    const long long e = base + threadIdx.x;
    if constexpr (!plain)
      if (op.red_op != 0 || op.words != 1) {
        copy_elements(op, e, end);
        continue;
      }
    switch (op.unit) {
      case 16:
        move_word<plain, uint4>(op, e, end);
        break;
      case 8:
        move_word<plain, unsigned long long>(op, e, end);
        break;
      case 4:
        move_word<plain, unsigned int>(op, e, end);
        break;
      case 2:
        move_word<plain, unsigned short>(op, e, end);
        break;
      default:
        move_word<plain, unsigned char>(op, e, end);
        break;
    }
  }
  post_signals(sig);
}

// Blocks of `kernel` that fit on the GPU at once.
template <class K>
int one_wave(K kernel, int sms) {
  int per_sm = 0;
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, block_threads, 0),
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor", -1);
  return std::max(1, sms * std::max(1, per_sm));
}

// One uploaded copy list.
struct table {
  dev_op* ops = nullptr;
  int2* tile_of = nullptr;       // each tile's copy and its place in that copy
  long long* indices = nullptr;  // every index list the gathers/scatters use, back to back
  int n = 0;
  int pairs = 0;  // pairs of adjacent narrow copies run as one
  long long tiles = 0;
  bool plain = true;
  int cap = 1;            // one wave of this table's kernel
  std::size_t bytes = 0;  // moved per launch

  // `caps`: one wave of the plain kernel, of the general one.
  void upload(const std::vector<copy_op>& list, const std::vector<gather_op>& gathers,
              op_kind gather_as, int rank, std::pair<int, int> caps) {
    std::vector<dev_op> host;
    // Index lists, each uploaded once however many fields use it.
    std::vector<long long> all_idx;
    std::vector<std::pair<const index*, std::size_t>> seen;
    std::vector<std::size_t> idx_at;
    for (const auto& g : gathers) {
      auto it =
          std::find_if(seen.begin(), seen.end(), [&](const auto& p) { return p.first == g.idx; });
      if (it == seen.end()) {
        seen.push_back({g.idx, all_idx.size()});
        all_idx.insert(all_idx.end(), g.idx, g.idx + g.n);
        it = seen.end() - 1;
      }
      idx_at.push_back(it->second);
    }
    if (!all_idx.empty()) {
      check(cudaMalloc(&indices, all_idx.size() * sizeof(long long)), "cudaMalloc(index lists)",
            rank);
      check(cudaMemcpy(indices, all_idx.data(), all_idx.size() * sizeof(long long),
                       cudaMemcpyHostToDevice),
            "cudaMemcpy(index lists)", rank);
    }
    for (std::size_t k = 0; k < gathers.size(); ++k) {
      const auto& g = gathers[k];
      if (g.n == 0) continue;
      dev_op d{};
      d.kind = gather_as;
      d.src = reinterpret_cast<const unsigned char*>(gather_as == gather_kind ? g.field : g.buf);
      d.dst = reinterpret_cast<unsigned char*>(gather_as == gather_kind ? g.buf : g.field);
      d.idx = indices + idx_at[k];
      d.ncomp = g.ncomp;
      d.entity_stride = g.entity_stride;
      d.comp_stride = g.comp_stride;
      d.elem = (long long)g.elem;
      d.total = g.n * g.ncomp;
      d.red_op = g.dev_reduce.op;
      d.red_type = g.dev_reduce.type;
      d.unit = unit_of(g);
      d.words = int(g.elem / std::size_t(d.unit));
      host.push_back(d);
    }
    for (const auto& op : list) {
      if (op.rank == 0) continue;  // empty copy
      dev_op d{};
      d.src = reinterpret_cast<const unsigned char*>(op.src);
      d.dst = reinterpret_cast<unsigned char*>(op.dst);
      d.rank = op.rank;
      d.total = 1;
      for (int k = 0; k < op.rank; ++k) {
        d.count[k] = op.count[k];
        d.src_stride[k] = op.src_stride[k];
        d.dst_stride[k] = op.dst_stride[k];
        d.total *= op.count[k];
      }
      d.unit = unit_of(op);
      d.words = int(op.elem / std::size_t(d.unit));
      if (op.dev_reduce.op == 0) as_wide_words(op, d);
      if (d.total <= 0xffffffffLL) set_divisors(d);
      d.red_op = op.dev_reduce.op;
      d.red_type = op.dev_reduce.type;
      host.push_back(d);
    }
    pairs = pair_adjacent(host);
    std::vector<long long> start{0};  // each copy's first tile
    for (const auto& d : host)
      start.push_back(start.back() + (d.total + tile_elems - 1) / tile_elems);
    n = int(host.size());
    tiles = start.back();
    for (const auto& d : host) bytes += std::size_t(d.total) * std::size_t(d.unit * d.words);
    plain = std::all_of(host.begin(), host.end(), plain_copy);
    cap = plain ? caps.first : caps.second;
    if (n == 0) return;
    check(cudaMalloc(&ops, host.size() * sizeof(dev_op)), "cudaMalloc(copy table)", rank);
    check(cudaMemcpy(ops, host.data(), host.size() * sizeof(dev_op), cudaMemcpyHostToDevice),
          "cudaMemcpy(copy table)", rank);
    // Tiles in order of their relative position in their copy, so that every copy advances at
    // the same rate: each wave of blocks mixes every kind of copy (writes to a peer's GPU over
    // NVLink overlap the local copies instead of all coming last).
    struct slot {
      double at;
      int op, index;
    };
    std::vector<slot> order;
    order.reserve(std::size_t(tiles));
    for (int k = 0; k < n; ++k) {
      const long long count = start[std::size_t(k) + 1] - start[std::size_t(k)];
      for (long long i = 0; i < count; ++i)
        order.push_back({(double(i) + 0.5) / double(count), k, int(i)});
    }
    std::stable_sort(order.begin(), order.end(),
                     [](const slot& a, const slot& b) { return a.at < b.at; });
    std::vector<int2> entries;
    entries.reserve(order.size());
    for (const auto& o : order) entries.push_back(int2{o.op, o.index});
    check(cudaMalloc(&tile_of, entries.size() * sizeof(int2)), "cudaMalloc(tile table)", rank);
    check(
        cudaMemcpy(tile_of, entries.data(), entries.size() * sizeof(int2), cudaMemcpyHostToDevice),
        "cudaMemcpy(tile table)", rank);
  }
  void release() {
    if (indices) (void)cudaFree(indices);
    if (ops) (void)cudaFree(ops);
    if (tile_of) (void)cudaFree(tile_of);
  }
  // With signals the grid must be the same at every launch (the block counter relies on it).
  // Up to two tiles run in one block: as fast as two blocks for so little data, and a single
  // block posts its signals without the cross-block counter.
  int grid() const {
    if (tiles <= 2) return 1;
    return int(std::max<long long>(1, std::min<long long>(tiles, cap)));
  }
  void launch(cudaStream_t s, int rank, const char* what, const signal_args& sig = {}) const {
    const bool signals = sig.n_start + sig.n_wait + sig.n_post > 0;
    if (n == 0 && !signals) return;
    if (plain)
      copy_kernel<true><<<grid(), block_threads, 0, s>>>(ops, tile_of, tiles, sig);
    else
      copy_kernel<false><<<grid(), block_threads, 0, s>>>(ops, tile_of, tiles, sig);
    check(cudaGetLastError(), what, rank);
  }
};

}  // namespace

// One launch's flags, uploaded once.
struct signal_set {
  unsigned long long** start = nullptr;  // device arrays of flag pointers
  unsigned long long** wait = nullptr;
  unsigned long long** post = nullptr;
  unsigned long long* blocks_done = nullptr;
  int n_start = 0, n_wait = 0, n_post = 0;

  void upload(const std::vector<std::uint64_t*>& st, const std::vector<std::uint64_t*>& w,
              const std::vector<std::uint64_t*>& p, int rank) {
    n_start = int(st.size());
    n_wait = int(w.size());
    n_post = int(p.size());
    auto put = [&](unsigned long long**& dst, const std::vector<std::uint64_t*>& v) {
      if (v.empty()) return;
      check(cudaMalloc(&dst, v.size() * sizeof(void*)), "cudaMalloc(signal table)", rank);
      check(cudaMemcpy(dst, v.data(), v.size() * sizeof(void*), cudaMemcpyHostToDevice),
            "cudaMemcpy(signal table)", rank);
    };
    put(start, st);
    put(wait, w);
    put(post, p);
    if (p.empty()) return;  // the block counter only orders the posting of flags
    check(cudaMalloc(&blocks_done, sizeof(unsigned long long)), "cudaMalloc(block counter)", rank);
    check(cudaMemset(blocks_done, 0, sizeof(unsigned long long)), "cudaMemset(block counter)",
          rank);
  }
  void release() {
    if (start) (void)cudaFree(start);
    if (wait) (void)cudaFree(wait);
    if (post) (void)cudaFree(post);
    if (blocks_done) (void)cudaFree(blocks_done);
  }
  signal_args args(unsigned long long exchange, unsigned long long wait_for) const {
    signal_args a;
    a.start = start;
    a.n_start = n_start;
    a.wait = wait;
    a.post = post;
    a.blocks_done = blocks_done;
    a.exchange = exchange;
    a.wait_for = wait_for;
    a.n_wait = n_wait;
    a.n_post = n_post;
    return a;
  }
};

struct device_copier::impl {
  table pack, unpack;
  signal_set pack_signals, unpack_signals;
  bool signals = false;
  std::vector<table> local_steps, unpack_steps;  // one launch each, in order (reverse)
  // use_alternate(): the lists of odd exchanges (copy 1 of the double receive buffers).
  bool alternate = false;
  table pack_alt, unpack_alt;
  std::vector<table> unpack_steps_alt;
  std::pair<int, int> caps{1, 1};  // one wave of the plain kernel, of the general one
  bool ordered = false;
  bool odd(std::uint64_t exchange) const { return alternate && exchange % 2 == 1; }
  // The unpack of one exchange: one fused launch, or one launch per step (ordered).
  void upload_unpack(table& fused, std::vector<table>& steps, const std::vector<copy_op>& unpack,
                     const std::vector<gather_op>& scatter) {
    if (!ordered) {
      fused.upload(unpack, scatter, scatter_kind, -1, caps);
      return;
    }
    for (const auto& op : unpack) {
      steps.emplace_back();
      steps.back().upload({op}, {}, scatter_kind, -1, caps);
    }
    for (const auto& g : scatter) {
      steps.emplace_back();
      steps.back().upload({}, {g}, scatter_kind, -1, caps);
    }
  }
  cudaStream_t stream = nullptr;
  cudaEvent_t done = nullptr, incoming = nullptr;
  cudaStream_t local_on = nullptr;  // the user's stream of the last launch_local()
  int fold_cap = 1;                 // pack grids up to this size wait for their signals themselves
  // Where the driver supports stream memory operations on 64-bit flags: the gate of a large
  // pack, and the wait of an unpack with nothing to copy, as one batch each instead of a kernel.
  CUresult (*batch)(CUstream, unsigned, CUstreamBatchMemOpParams*, unsigned) = nullptr;
  std::vector<CUstreamBatchMemOpParams> gate_ops, wait_ops;
};

device_copier::device_copier(const std::vector<copy_op>& pack, const std::vector<gather_op>& gather,
                             const std::vector<copy_op>& unpack,
                             const std::vector<gather_op>& scatter,
                             const std::vector<copy_op>& ordered_local, bool ordered)
    : p_(std::make_unique<impl>()) {
  int dev = 0, sms = 0;
  check(cudaGetDevice(&dev), "cudaGetDevice", -1);
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "cudaDeviceGetAttribute",
        -1);
  // One wave of blocks (grid-stride over the tiles): a block pays its start-up and, with
  // signals, its release of the data once, not once per tile group.
  const std::pair<int, int> caps{one_wave(copy_kernel<true>, sms),
                                 one_wave(copy_kernel<false>, sms)};
  p_->caps = caps;
  p_->ordered = ordered;
  // The highest priority: packing and its signals get SMs ahead of the interior computation
  // a solver overlaps with the exchange on its own streams, so halos arrive in time.
  int least = 0, greatest = 0;
  check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange",
        -1);
  check(cudaStreamCreateWithPriority(&p_->stream, cudaStreamDefault, greatest),
        "cudaStreamCreateWithPriority", -1);
  check(cudaEventCreateWithFlags(&p_->done, cudaEventDisableTiming), "cudaEventCreate", -1);
  check(cudaEventCreateWithFlags(&p_->incoming, cudaEventDisableTiming), "cudaEventCreate", -1);
  p_->pack.upload(pack, gather, gather_kind, -1, caps);
  // Up to half the pack kernel's blocks that fit at once: a pack waiting for a late peer still
  // leaves half the GPU to other streams' kernels.
  p_->fold_cap = std::max(1, p_->pack.cap / 2);
  for (const auto& op : ordered_local) {
    p_->local_steps.emplace_back();
    p_->local_steps.back().upload({op}, {}, gather_kind, -1, caps);
  }
  p_->upload_unpack(p_->unpack, p_->unpack_steps, unpack, scatter);
}

device_copier::~device_copier() {
  if (!p_) return;
  if (p_->stream) (void)cudaStreamSynchronize(p_->stream);
  if (p_->done) (void)cudaEventSynchronize(p_->done);  // (launch_local's copies, on a user stream)
  p_->pack.release();
  p_->unpack.release();
  p_->pack_alt.release();
  p_->unpack_alt.release();
  for (auto& t : p_->unpack_steps_alt) t.release();
  p_->pack_signals.release();
  p_->unpack_signals.release();
  for (auto& t : p_->local_steps) t.release();
  for (auto& t : p_->unpack_steps) t.release();
  if (p_->done) (void)cudaEventDestroy(p_->done);
  if (p_->incoming) (void)cudaEventDestroy(p_->incoming);
  if (p_->stream) (void)cudaStreamDestroy(p_->stream);
}

namespace {
// Stream memory operations on 64-bit flags, where the driver and the GPU support them.
using batch_fn = CUresult (*)(CUstream, unsigned, CUstreamBatchMemOpParams*, unsigned);
batch_fn stream_mem_ops() {
  using attr_fn = CUresult (*)(int*, CUdevice_attribute, CUdevice);
  using get_fn = CUresult (*)(CUdevice*, int);
  const auto attr = driver_function<attr_fn>("cuDeviceGetAttribute");
  const auto get = driver_function<get_fn>("cuDeviceGet");
  int ordinal = 0, can = 0;
  CUdevice dev{};
  check(cudaGetDevice(&ordinal), "cudaGetDevice", -1);
  if (!attr || !get || get(&dev, ordinal) != CUDA_SUCCESS ||
      attr(&can, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, dev) != CUDA_SUCCESS || !can)
    return nullptr;
  return driver_function<batch_fn>("cuStreamBatchMemOp");
}
CUstreamBatchMemOpParams wait_op(const std::uint64_t* flag) {
  CUstreamBatchMemOpParams w{};
  w.waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_64;
  w.waitValue.address = CUdeviceptr(reinterpret_cast<std::uintptr_t>(flag));
  w.waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
  return w;
}
CUstreamBatchMemOpParams write_op(std::uint64_t* flag) {
  CUstreamBatchMemOpParams w{};
  w.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
  w.writeValue.address = CUdeviceptr(reinterpret_cast<std::uintptr_t>(flag));
  w.writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;  // after earlier work, fully visible
  return w;
}
// Enqueues `ops` (their values set to `value`); false when the driver refuses them.
bool run_mem_ops(batch_fn batch, cudaStream_t stream, std::vector<CUstreamBatchMemOpParams>& ops,
                 std::uint64_t value) {
  for (auto& op : ops) {
    if (op.operation == CU_STREAM_MEM_OP_WAIT_VALUE_64)
      op.waitValue.value64 = cuuint64_t(value);
    else
      op.writeValue.value64 = cuuint64_t(value);
  }
  return batch(stream, unsigned(ops.size()), ops.data(), 0) == CUDA_SUCCESS;
}
}  // namespace

void device_copier::use_signals(const device_signals& s) {
  if (!p_->unpack_steps.empty() || !p_->local_steps.empty())
    fail("device signals requested for an ordered (reverse) exchange (internal error)");
  p_->pack_signals.upload(s.start_post, s.pack_wait, s.pack_post, -1);
  // A pack that mostly writes into peers' memory is bound by the link, which half the GPU
  // saturates: it runs on at most fold_cap blocks and so always waits in its own blocks,
  // resident before the peers' announcements come (a gate before a later launch costs a few
  // microseconds per exchange: 79% instead of 84% of the peer copy at 8 MiB on two H200s).
  // A pack mostly of local copies keeps the whole GPU (its bandwidth is the memory's).
  if (2 * s.peer_bytes >= p_->pack.bytes) p_->pack.cap = std::min(p_->pack.cap, p_->fold_cap);
  p_->unpack_signals.upload({}, s.unpack_wait, {}, -1);
  p_->signals = true;
  p_->batch = stream_mem_ops();
  if (!p_->batch) return;
  // Gate of a large pack: announce the start in the senders' memory, then wait for the
  // receivers' announcements in this rank's. Wait of an unpack with nothing to copy.
  for (auto* flag : s.start_post) p_->gate_ops.push_back(write_op(flag));
  for (auto* flag : s.pack_wait) p_->gate_ops.push_back(wait_op(flag));
  if (p_->unpack.n == 0)
    for (auto* flag : s.unpack_wait) p_->wait_ops.push_back(wait_op(flag));
}
void device_copier::use_alternate(const std::vector<copy_op>& pack,
                                  const std::vector<gather_op>& gather,
                                  const std::vector<copy_op>& unpack,
                                  const std::vector<gather_op>& scatter) {
  if (p_->signals) fail("alternate copy lists requested with device signals (internal error)");
  p_->pack_alt.upload(pack, gather, gather_kind, -1, p_->caps);
  p_->upload_unpack(p_->unpack_alt, p_->unpack_steps_alt, unpack, scatter);
  p_->alternate = true;
}
void device_copier::launch_pack(int rank, std::uint64_t exchange) {
  if (p_->local_on) {  // the last local copies ran on a user's stream: this launch follows them
    check(cudaStreamWaitEvent(p_->stream, p_->done, 0), "cudaStreamWaitEvent", rank);
    p_->local_on = nullptr;
  }
  signal_args sig = p_->signals ? p_->pack_signals.args(exchange, exchange) : signal_args{};
  // A small pack waits in its own blocks (one launch less per exchange); a large one behind a
  // gate (stream memory operations, else a one-block kernel), so that a whole grid never
  // spins, holding the SMs, while a peer is late.
  if (sig.n_start + sig.n_wait > 0 && p_->pack.grid() > p_->fold_cap) {
    if (p_->batch && !p_->gate_ops.empty() &&
        !run_mem_ops(p_->batch, p_->stream, p_->gate_ops, exchange))
      p_->gate_ops.clear();  // refused (first use): the kernel gate from now on
    if (!p_->batch || p_->gate_ops.empty()) {
      gate_kernel<<<1, 32, 0, p_->stream>>>(sig);
      check(cudaGetLastError(), "pack gate kernel launch", rank);
    }
    sig.n_start = sig.n_wait = 0;
  }
  (p_->odd(exchange) ? p_->pack_alt : p_->pack).launch(p_->stream, rank, "pack kernel launch",
                                                       sig);
  for (const auto& t : p_->local_steps) t.launch(p_->stream, rank, "local copy launch");
}
void device_copier::launch_unpack(int rank, std::uint64_t exchange) {
  const bool waited = p_->batch && !p_->wait_ops.empty() &&
                      run_mem_ops(p_->batch, p_->stream, p_->wait_ops, exchange);
  if (p_->batch && !p_->wait_ops.empty() && !waited) p_->wait_ops.clear();  // refused
  if (!waited) {
    const signal_args sig =
        p_->signals ? p_->unpack_signals.args(exchange, exchange) : signal_args{};
    (p_->odd(exchange) ? p_->unpack_alt : p_->unpack)
        .launch(p_->stream, rank, "unpack kernel launch", sig);
  }
  for (const auto& t : p_->odd(exchange) ? p_->unpack_steps_alt : p_->unpack_steps)
    t.launch(p_->stream, rank, "unpack step launch");
  check(cudaEventRecord(p_->done, p_->stream), "cudaEventRecord", rank);
}
void device_copier::launch_local(void* user_stream, int rank) {
  const auto s = static_cast<cudaStream_t>(user_stream);
  // After copies on another stream (halox's, or another user stream) this launch waits for
  // them: launches of a table never overlap, as on a single stream.
  if (s != p_->local_on) {
    check(cudaEventRecord(p_->done, p_->local_on ? p_->local_on : p_->stream), "cudaEventRecord",
          rank);
    check(cudaStreamWaitEvent(s, p_->done, 0), "cudaStreamWaitEvent(user stream)", rank);
  }
  p_->pack.launch(s, rank, "local copy launch");
  for (const auto& t : p_->local_steps) t.launch(s, rank, "local copy launch");
  check(cudaEventRecord(p_->done, s), "cudaEventRecord(user stream)", rank);
  p_->local_on = s;
}
void device_copier::wait_local(void* user_stream, int rank) {
  const auto s = static_cast<cudaStream_t>(user_stream);
  if (s == nullptr)
    check(cudaEventSynchronize(p_->done), "cudaEventSynchronize (local copies)", rank);
  else if (s != p_->local_on)
    check(cudaStreamWaitEvent(s, p_->done, 0), "cudaStreamWaitEvent(user stream)", rank);
}
void device_copier::copy(void* dst, const void* src, std::size_t bytes, int rank) {
  if (bytes == 0) return;
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, p_->stream),
        "cudaMemcpyAsync (staging)", rank);
}
void* device_copier::stream() const {
  return p_->stream;
}
void device_copier::synchronize(int rank) {
  check(cudaStreamSynchronize(p_->stream), "cudaStreamSynchronize (pack/unpack kernels)", rank);
}
bool device_copier::ready(int rank) {
  const cudaError_t rc = cudaEventQuery(p_->done);
  if (rc == cudaErrorNotReady) return false;
  check(rc, "cudaEventQuery (pack/unpack kernels)", rank);
  return true;
}
void device_copier::wait_for(void* user_stream, int rank) {
  check(cudaEventRecord(p_->incoming, static_cast<cudaStream_t>(user_stream)),
        "cudaEventRecord(user stream)", rank);
  check(cudaStreamWaitEvent(p_->stream, p_->incoming, 0), "cudaStreamWaitEvent", rank);
}
void device_copier::signal(void* user_stream, int rank) {
  check(cudaEventRecord(p_->done, p_->stream), "cudaEventRecord", rank);
  check(cudaStreamWaitEvent(static_cast<cudaStream_t>(user_stream), p_->done, 0),
        "cudaStreamWaitEvent(user stream)", rank);
}

std::string device_copier::summary() const {
  auto one = [](const table& t) {
    return fmt::format("{} copies in {} tiles{}", t.n, t.tiles,
                       t.pairs
                           ? fmt::format(" ({} pairs of adjacent narrow copies as one)", t.pairs)
                           : std::string());
  };
  std::size_t steps = p_->local_steps.size() + p_->unpack_steps.size();
  return fmt::format("GPU launches: pack {}; unpack {}{}{}", one(p_->pack), one(p_->unpack),
                     steps ? fmt::format("; {} ordered single-copy steps", steps) : std::string(),
                     p_->alternate ? "; a second pair of lists for odd exchanges (copy 1 of "
                                     "the double receive buffers)"
                                   : "");
}

std::shared_ptr<std::byte> allocate_mapped(std::size_t bytes) {
  void* p = nullptr;
  const std::size_t n = bytes == 0 ? 64 : bytes;
  check(cudaHostAlloc(&p, n, cudaHostAllocMapped | cudaHostAllocPortable), "cudaHostAlloc(mapped)",
        -1);
  std::memset(p, 0, n);
  return std::shared_ptr<std::byte>(static_cast<std::byte*>(p),
                                    [](std::byte* q) { (void)cudaFreeHost(q); });
}

}  // namespace halox::detail
