// The kernels of the GPU copy engine (see device_copy_kernels.cuh): the fused copy kernel, the
// gate kernel and the device side of the signals.
//
// Fused GPU pack/unpack: one launch runs every copy of a list. Blocks are dealt tiles of one
// element per thread; a block finds its copy in a per-tile table (one load), then its threads
// copy the tile (consecutive threads, consecutive elements: coalesced where regions are
// contiguous). Grid-stride over tiles, so any halo size works; small tiles and many resident
// blocks keep enough loads in flight (the copy is latency-bound, not bandwidth-bound, otherwise).
#include "pack/device_copy_kernels.cuh"

#include <algorithm>

#include "gpu/check.hpp"

namespace halox::detail {

namespace {

constexpr int max_rank = max_copy_dims;

// n / count[k] by the multiply and shifts set_divisor() precomputed.
__device__ unsigned divide(const copy_descriptor& op, int k, unsigned n) {
  const unsigned t = __umulhi(op.magic[k], n);
  return (t + ((n - t) >> op.shift1[k])) >> op.shift2[k];
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
__device__ void locate_small(const copy_descriptor& op, unsigned e, const unsigned char*& s,
                             unsigned char*& d) {
  s = op.src;
  d = op.dst;
#pragma unroll
  for (int k = max_rank - 1; k > 0; --k) {
    if (k >= op.ndims) continue;
    const unsigned q = divide(op, k, e), i = e - q * unsigned(op.count[k]);
    e = q;
    s += i * op.src_stride[k];
    d += i * op.dst_stride[k];
  }
  s += e * op.src_stride[0];
  d += e * op.dst_stride[0];
}

// Where element `e` of a strided copy is read and written.
__device__ void locate_strided(const copy_descriptor& op, long long e, const unsigned char*& s,
                               unsigned char*& d) {
  if (op.total <= 0xffffffffLL) return locate_small(op, unsigned(e), s, d);
  s = op.src;
  d = op.dst;
  long long rem = e;
  for (int k = op.ndims - 1; k > 0; --k) {
    const long long c = op.count[k], i = rem % c;
    rem /= c;
    s += i * op.src_stride[k];
    d += i * op.dst_stride[k];
  }
  s += rem * op.src_stride[0];
  d += rem * op.dst_stride[0];
}

// Where element `e` of `op` is read and written.
__device__ void locate(const copy_descriptor& op, long long e, const unsigned char*& s,
                       unsigned char*& d) {
  if (op.kind == strided_kind) return locate_strided(op, e, s, d);
  const long long entity = op.idx[e / op.ncomp], c = e % op.ncomp;
  const long long in_field = entity * op.entity_stride + c * op.comp_stride, in_buf = e * op.elem;
  s = op.src + (op.kind == gather_kind ? in_field : in_buf);
  d = op.dst + (op.kind == gather_kind ? in_buf : in_field);
}

// A copy of one word per element: element `e` (the thread's in its tile) if below `end`.
template <bool plain, class W>
__device__ void move_word(const copy_descriptor& op, long long e, long long end) {
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
__device__ void copy_elements(const copy_descriptor& op, long long first, long long end) {
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

__device__ unsigned long long load_acquire_sys(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ unsigned long long load_relaxed_sys(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ void store_release_sys(unsigned long long* p, unsigned long long v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ void store_relaxed_sys(unsigned long long* p, unsigned long long v) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
// Waits until `*flag` >= g: polls without ordering, then one acquire load, which orders what
// follows behind the release that stored the value seen. An acquire on every poll would put a
// system-scope fence in the loop.
//
// With a timeout (signal_args::timeout_ns) every 256th poll also reads the GPU's global timer
// and the shared report word: the poll gives up once the time has passed (and reports `code`,
// unless another poll reported first) or once another poll has given up. False: it gave up.
__device__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ bool gave_up(const signal_args& sig, unsigned long long t0, unsigned code) {
  if (*reinterpret_cast<volatile unsigned*>(sig.timeout) != 0) return true;
  if (global_ns() - t0 < sig.timeout_ns) return false;
  atomicCAS_system(sig.timeout, 0u, code);
  return true;
}
__device__ bool wait_at_least(const unsigned long long* flag, unsigned long long g,
                              const signal_args& sig, unsigned code) {
  if (sig.timeout_ns == 0) {
    while (load_relaxed_sys(flag) < g) {
    }
  } else if (load_relaxed_sys(flag) < g) {
    const unsigned long long t0 = global_ns();
    for (unsigned n = 1; load_relaxed_sys(flag) < g; ++n)
      if ((n & 255) == 0 && gave_up(sig, t0, code)) return false;
  }
  (void)load_acquire_sys(flag);
  return true;
}
__device__ unsigned long long atomic_add_acq_rel_gpu(unsigned long long* p, unsigned long long v) {
  unsigned long long old;
  asm volatile("atom.add.acq_rel.gpu.global.u64 %0, [%1], %2;"
               : "=l"(old)
               : "l"(p), "l"(v)
               : "memory");
  return old;
}

// An element of a copy of flagged words (copy_op::flagged), one thread per element: the pack
// stores each 4-byte word of the element with the exchange's number `seq` beside it, as one
// 8-byte store (single-copy atomic: the receiver sees both or neither); the unpack polls each
// slot until it holds this exchange's number, then writes the word. No fence and no data-ready
// flag: the number in the slot says the word is there. The slots of exchange g are in copy g mod
// 2 of the receive buffer (their sender knows the copy free: device_signals::lagged), so a slot
// never holds a later exchange's word while it is read.
__device__ void flagged_element(const copy_descriptor& op, long long e, long long end, unsigned seq,
                                const signal_args& sig, unsigned code) {
  if (e >= end) return;
  const unsigned char* s;
  unsigned char* d;
  locate(op, e, s, d);
  const int n = op.unit * op.words / 4;
  if (op.flagged == flagged_write) {
    const unsigned long long tag = (unsigned long long)seq << 32;
    for (int j = 0; j < n; ++j)
      store_relaxed_sys(reinterpret_cast<unsigned long long*>(d) + j,
                        tag | reinterpret_cast<const unsigned*>(s)[j]);
    return;
  }
  for (int j = 0; j < n; ++j) {
    const auto* slot = reinterpret_cast<const unsigned long long*>(s) + j;
    unsigned long long v = load_relaxed_sys(slot);
    if (sig.timeout_ns == 0) {
      while (unsigned(v >> 32) != seq) v = load_relaxed_sys(slot);
    } else if (unsigned(v >> 32) != seq) {
      const unsigned long long t0 = global_ns();
      for (unsigned k = 1; unsigned(v >> 32) != seq; ++k) {
        if ((k & 255) == 0 && gave_up(sig, t0, code)) return;
        v = load_relaxed_sys(slot);
      }
    }
    reinterpret_cast<unsigned*>(d)[j] = unsigned(v);
  }
}

// This launch's exchange number (see signal_args): the host's, or in graph mode the one after
// the device's count (which only the exchange's last launch, later on the stream, advances).
__device__ unsigned long long exchange_number(const signal_args& sig) {
  if (sig.generation == nullptr) return sig.exchange;
  const unsigned long long next =
      *reinterpret_cast<const volatile unsigned long long*>(sig.generation) + 1;
  return next > sig.exchange ? next : sig.exchange;
}

// Block 0 announces that this rank has started the exchange (the launch runs after everything
// before it on the stream, so every earlier read of the halo is done); then every block waits
// until its flags allow it to go on (one thread polls, the block follows). The announcement is
// a relaxed store: it orders none of this launch's own accesses (the reads it stands for belong
// to launches that have completed), and a release would put a system-scope fence in front of
// it, 2.3 µs on two H100s before a peer may start writing.
// False: a wait gave up (wait_timeout); the whole block then stops.
__device__ bool wait_signals(const signal_args& sig, unsigned long long g) {
  if (sig.n_wait + sig.n_start == 0) return true;
  bool ok = true;
  if (threadIdx.x == 0) {
    if (blockIdx.x == 0)
      for (int k = 0; k < sig.n_start; ++k) store_relaxed_sys(sig.start[k], g);
    for (int k = 0; k < sig.n_wait && ok; ++k)
      ok = wait_at_least(sig.wait[k], k < sig.n_lagged ? g - 1 : g, sig, sig.wait_code + k);
  }
  if (sig.timeout_ns == 0) {
    __syncthreads();
    return true;
  }
  return __syncthreads_and(ok) != 0;
}

// The last block to finish posts the flags, each a release at system scope (graph mode's
// count alone, `count_only`, as a plain store: a release would wait for the block's writes into
// peers' memory, a microsecond and more per replayed round). The chain that
// makes every block's writes (local, or into a peer GPU's memory) visible to whoever acquires a
// flag: each thread's writes, the block's barrier, thread 0's acquire-release increment of the
// block counter (device scope), the last block's increment that reads it, that thread's release
// of the flags. Release and acquire are cumulative in the PTX memory model, so no
// sequentially consistent system fence (__threadfence_system) is needed: leaving it out took a
// microsecond off every exchange round between two GPUs.
__device__ void post_signals(const signal_args& sig, unsigned long long g) {
  if (sig.n_post == 0) return;
  __syncthreads();
  if (threadIdx.x != 0) return;
  if (gridDim.x > 1) {  // (a single block is its own last block)
    const unsigned long long before = atomic_add_acq_rel_gpu(sig.blocks_done, 1ull);
    if (before + 1 != gridDim.x) return;
    // The last block resets the counter for the next launch, which the stream runs after this
    // one: the count never depends on exchange numbers (graph mode may skip some: a capture
    // that is never replayed still took one).
    *sig.blocks_done = 0;
  }
  if (sig.count_only) {  // read by later launches on the stream only: no fence
    *reinterpret_cast<volatile unsigned long long*>(sig.post[0]) = g;
    return;
  }
  for (int k = 0; k < sig.n_post; ++k) store_release_sys(sig.post[k], g);
}

// The pack's start announcement (into the senders' memory) and its wait on the receivers'
// announcements, ahead of a large copy launch where stream memory operations are unavailable:
// one block spins instead of a whole grid holding the SMs.
__global__ void gate_kernel(signal_args sig) {
  (void)wait_signals(sig, exchange_number(sig));
}

// Every tile of `list`, grid-stride. `plain`: every copy of the table is strided, one word per
// element, no reduction, fewer than 2^32 elements (a structured exchange's packing and
// unpacking): no other path is compiled in.
template <bool plain>
__device__ void copy_tiles(const copy_list list, unsigned seq, const signal_args& sig) {
  long long tile = blockIdx.x;
  // The table has an entry per tile (its copy, its place in the copy): one load, not a search,
  // and the next tile's is loaded while this one is copied.
  tile_entry next = tile < list.n_tiles ? list.tiles[tile] : tile_entry{};
  for (; tile < list.n_tiles; tile += gridDim.x) {
    const tile_entry at = next;
    if (tile + gridDim.x < list.n_tiles) next = list.tiles[tile + gridDim.x];
    const copy_descriptor& op = list.copies[at.copy];
    const long long base = (long long)at.tile * tile_elems;
    const long long end = base + tile_elems < op.total ? base + tile_elems : op.total;
    const long long e = base + threadIdx.x;
    if constexpr (!plain) {
      if (op.flagged != 0) {
        flagged_element(op, e, end, seq, sig, timeout_flagged_words + at.copy);
        continue;
      }
      if (op.red_op != 0 || op.words != 1) {
        copy_elements(op, e, end);
        continue;
      }
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
}

// The list of this launch's exchange: `odd` for odd exchanges where the lists alternate.
__device__ copy_list pick(const copy_list& even, const copy_list& odd, const signal_args& sig,
                          unsigned long long g) {
  if (!sig.alternate || (g & 1) == 0) return even;
  return odd;
}

// The plain kernel has no other path, so it fits in 32 registers and eight blocks share an SM.

template <bool plain>
__global__ void __launch_bounds__(block_threads, plain ? 8 : 1)
    copy_kernel(copy_list list, copy_list odd, signal_args sig) {
  const unsigned long long g = exchange_number(sig);
  if (!wait_signals(sig, g)) return;
  copy_tiles<plain>(pick(list, odd, sig, g), unsigned(g), sig);
  if (sig.timeout_ns != 0 && __syncthreads_or(*(volatile unsigned*)sig.timeout != 0)) return;
  post_signals(sig, g);
}

// A whole exchange in one launch (device_copier's fused exchanges): the pack with its signals,
// then, once this rank's data is on its way, the wait for the senders' data and the unpack.
// Every block takes part in both halves, so every block must be resident at once (the launcher
// keeps the grid within half a wave): blocks waiting for the peers never keep a block of the
// pack from running. The two halves count their blocks with counters of their own.
template <bool plain>
__global__ void __launch_bounds__(block_threads, plain ? 8 : 1)
    exchange_kernel(copy_list pack, copy_list pack_odd, copy_list unpack, copy_list unpack_odd,
                    signal_args out, signal_args in) {
  // One number for both halves: the count only the unpack's last block advances, at the end.
  const unsigned long long g = exchange_number(out);
  if (!wait_signals(out, g)) return;
  copy_tiles<plain>(pick(pack, pack_odd, out, g), unsigned(g), out);
  post_signals(out, g);
  // Every warp of the block has packed before any polls for the peers' flagged words: a warp
  // spinning in the unpack never waits, even under a tool that runs warps one at a time, for
  // words a peer's warp has yet to pack while that warp spins the same way.
  __syncthreads();
  if (!wait_signals(in, g)) return;
  copy_tiles<plain>(pick(unpack, unpack_odd, in, g), unsigned(g), in);
  if (in.timeout_ns != 0 && __syncthreads_or(*(volatile unsigned*)in.timeout != 0)) return;
  post_signals(in, g);
}

}  // namespace

void launch_copy_kernel(bool plain, int grid, cudaStream_t s, const copy_list& list,
                        const signal_args& sig, const copy_list& odd) {
  if (plain)
    copy_kernel<true><<<grid, block_threads, 0, s>>>(list, odd, sig);
  else
    copy_kernel<false><<<grid, block_threads, 0, s>>>(list, odd, sig);
}

void launch_exchange_kernel(bool plain, int grid, cudaStream_t s, const copy_list* pack,
                            const copy_list* unpack, const signal_args& out,
                            const signal_args& in) {
  if (plain)
    exchange_kernel<true>
        <<<grid, block_threads, 0, s>>>(pack[0], pack[1], unpack[0], unpack[1], out, in);
  else
    exchange_kernel<false>
        <<<grid, block_threads, 0, s>>>(pack[0], pack[1], unpack[0], unpack[1], out, in);
}

void launch_gate_kernel(cudaStream_t s, const signal_args& sig) {
  gate_kernel<<<1, 32, 0, s>>>(sig);
}

namespace {
// Blocks of `kernel` that fit on the GPU at once.
template <class K>
int one_wave(K kernel, int sms) {
  int per_sm = 0;
  gpu::check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, block_threads, 0),
             "cudaOccupancyMaxActiveBlocksPerMultiprocessor", -1);
  return std::max(1, sms * std::max(1, per_sm));
}
}  // namespace

int copy_kernel_wave(bool plain, int sms) {
  return plain ? one_wave(copy_kernel<true>, sms) : one_wave(copy_kernel<false>, sms);
}

int exchange_kernel_wave(bool plain, int sms) {
  return plain ? one_wave(exchange_kernel<true>, sms) : one_wave(exchange_kernel<false>, sms);
}

}  // namespace halox::detail
