#pragma once
// The kernels layer of the GPU copy engine, between the lowering (device_copy_lowering.hpp: the
// tables) and the launcher (device_copy.cu: uploads, streams, events, signals' set-up). The
// kernels themselves live in device_copy_kernels.cu; these functions enqueue them.
#include <cuda_runtime.h>

#include "pack/device_copy_lowering.hpp"

namespace halox::detail {

// A launch's signals (see device_signals): flag pointers in device memory, the exchange number
// and the launch's block counter (the last block of a launch finds it at gridDim.x - 1 and
// resets it).
//
// `generation` (graph mode, device_copier::count_on_device): where the number of the last
// completed exchange lives in device memory. The launch then numbers its exchange
// max(*generation + 1, exchange) instead of `exchange`, so that a launch captured in a CUDA
// graph gets a new number at every replay (its parameters are frozen), and the host's number,
// stale after replays, never lowers it; the unpack's last block stores the number at the end
// (its post flags include the count).
struct signal_args {
  unsigned long long* const* start = nullptr;
  const unsigned long long* const* wait = nullptr;
  unsigned long long* const* post = nullptr;
  unsigned long long* blocks_done = nullptr;
  const unsigned long long* generation = nullptr;
  unsigned long long exchange = 0;
  int n_start = 0, n_wait = 0, n_post = 0;
  // The only flag posted is graph mode's count (`generation`), which only later launches on the
  // same stream read.
  bool count_only = false;
  // The first `n_lagged` flags of `wait` are waited for until they reach the exchange number
  // minus one (receivers whose buffers alternate: their start of the previous exchange freed
  // this exchange's copy), the others until they reach the number.
  int n_lagged = 0;
  // Odd exchanges run the launch's second list (copy 1 of alternating receive buffers), picked
  // on the device from the exchange number (graph replays freeze the host's).
  bool alternate = false;
  // exchange_options::wait_timeout: a poll for a flag or a flagged word gives up after this many
  // nanoseconds of the GPU's global timer (0: never) and leaves its report in `timeout` (mapped
  // pinned memory the host reads): the first report wins, every other poll of every launch that
  // shares the word then gives up too, and the launch skips its copies and posts.
  unsigned long long timeout_ns = 0;
  unsigned* timeout = nullptr;
  // The report of wait flag k is wait_code + k (see timeout_report).
  unsigned wait_code = 0;
};

// What a poll that gave up reports: its kind in the top byte, the index of its flag (or copy)
// below. 0: nothing gave up.
enum timeout_kind : unsigned {
  timeout_receiver_start = 1u << 24,  // device_signals::pack_wait[k]: a receiver's start
  timeout_sender_ready = 2u << 24,    // device_signals::unpack_wait[k]: a sender's data
  timeout_flagged_words = 3u << 24,   // flagged words of copy k of the unpack list
};

// One uploaded copy list in device memory: its copies and its `n_tiles` tiles, as lower()
// ordered them.
struct copy_list {
  const copy_descriptor* copies = nullptr;
  const tile_entry* tiles = nullptr;
  long long n_tiles = 0;
};

// Enqueues the fused copy kernel on `s`: `grid` blocks of block_threads threads take the tiles
// of `list` grid-stride, each copying its tile of `list.copies[tile.copy]`. First every block
// waits for `sig`'s flags, last the last block posts them. `plain`: the list holds only
// plain_copy() descriptors (the lean kernel). `odd`: with `sig.alternate`, the list of odd
// exchanges. The caller checks the launch.
void launch_copy_kernel(bool plain, int grid, cudaStream_t s, const copy_list& list,
                        const signal_args& sig, const copy_list& odd = {});

// Enqueues a whole exchange as one kernel on `s`: the pack (`pack` with the signals `out`) as
// launch_copy_kernel runs it, then in the same blocks the unpack (`unpack`, waiting for and
// posting `in`). `pack` and `unpack` are two lists each: [even exchanges, odd ones] (the same
// twice where nothing alternates). `out` and `in` need block counters of their own. `grid` must fit
// on the GPU at once beside other work (at most half of exchange_kernel_wave): blocks of the unpack
// wait for the peers while others may still pack. `plain`: both lists are plain. The caller checks
// the launch.
void launch_exchange_kernel(bool plain, int grid, cudaStream_t s, const copy_list* pack,
                            const copy_list* unpack, const signal_args& out, const signal_args& in);

// Enqueues the gate on `s`: one block announces the start and waits for `sig`'s flags, ahead of
// a large copy launch. The caller checks the launch.
void launch_gate_kernel(cudaStream_t s, const signal_args& sig);

// Blocks of the copy kernel (the plain one, or the general one) that fit at once on a GPU of
// `sms` multiprocessors: one wave.
int copy_kernel_wave(bool plain, int sms);
int exchange_kernel_wave(bool plain, int sms);

}  // namespace halox::detail
