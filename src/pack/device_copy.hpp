#pragma once
/// @file
/// The GPU seam of the copy engine: fixed lists of copies run as one fused kernel launch each
/// (pack: every region of every device field for every peer, plus local copies; unpack: every
/// region received). Compiles without nvcc. Behind it, in src/pack/: the lowering of a copy
/// list to a kernel table (device_copy_lowering.cpp, plain C++), the kernels
/// (device_copy_kernels.cu) and the launcher (device_copy.cu).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpu/stream_source.hpp"
#include "pack/strided_copy.hpp"

namespace halox::detail {

/// Flags that order the pack and unpack launches with other processes' kernels, in GPU memory.
/// Every flag a launch waits for is in this rank's memory; every flag it posts is in a peer's
/// (mapped through CUDA IPC). Exchange number `g` (from 1): the pack launch first stores g into
/// every `start_post` flag (in its senders' memory: this rank has started exchange g, so
/// everything its stream did before, including every read of the halo and of the receive
/// buffer, is done), then waits until every `pack_wait` flag (its receivers' announcements) is
/// >= g, copies, and after its last block has written its data stores g into every `pack_post`
/// flag (data ready, in the receivers' memory); the unpack launch waits until every
/// `unpack_wait` flag is >= g. No host thread waits for any of it.
struct device_signals {
  std::vector<std::uint64_t*> start_post, pack_wait, pack_post, unpack_wait;
  /// Bytes the pack launch writes into peers' memory (the rest of what it moves is local).
  std::size_t peer_bytes = 0;
  /// The first `lagged` flags of `pack_wait` are those of receivers whose buffers alternate
  /// (exchange g in copy g mod 2, use_alternate()): the pack waits until they are >= g - 1
  /// (their start of g - 1 ended their unpack of g - 2, the last read of copy g mod 2), so it
  /// does not wait for a peer's start in the steady state.
  std::size_t lagged = 0;
  /// exchange_options::wait_timeout in seconds (0: wait for ever): a kernel polling one of
  /// these flags, or a flagged word, gives up after it and the host raises halox::error naming
  /// the peer (check_timeout()). Stream memory operations, which cannot give up, are not used.
  double timeout = 0;
  /// The rank behind each flag of `pack_wait` and of `unpack_wait`, for that error.
  std::vector<int> pack_wait_peer, unpack_wait_peer;
  /// Where each peer's flagged words land in this rank's receive buffer (each copy of it):
  /// names the peer of an unpack copy whose words did not arrive.
  struct flagged_range {
    const std::byte* lo = nullptr;
    const std::byte* hi = nullptr;
    int peer = -1;
  };
  std::vector<flagged_range> flagged_from;
  /// The object's name in that error.
  std::string name;
};

/// Runs two fixed copy lists on the GPU, each as one kernel launch on halox's own stream.
///
/// The stream is a blocking stream of the highest priority: work on the legacy default stream
/// finishes before a launch starts, and halox kernels get SMs ahead of other streams' kernels.
/// Descriptor tables live in device memory, uploaded once here.
class nvtx_names;

class device_copier final : public stream_source {
 public:
  /// Uploads the pack launch (strided copies and index-list gathers) and the unpack launch
  /// (strided copies and index-list scatters; their index lists are copied to the device).
  /// `ordered` (reverse exchanges, where several contributions may combine into one cell): the
  /// unpack steps run one launch each, in list order, and so do `ordered_local` (after the
  /// fused pack launch); each single step never writes a cell twice.
  device_copier(const std::vector<copy_op>& pack, const std::vector<gather_op>& gather,
                const std::vector<copy_op>& unpack, const std::vector<gather_op>& scatter,
                const std::vector<copy_op>& ordered_local = {}, bool ordered = false);
  ~device_copier();
  device_copier(const device_copier&) = delete;
  device_copier& operator=(const device_copier&) = delete;

  /// Makes every later pack and unpack launch wait for and post these flags (not with
  /// `ordered` unpacking).
  void use_signals(const device_signals& s);
  /// Double-buffered receive buffers (CUDA IPC): a second pack list and a second unpack list,
  /// the same copies with every pointer into buffer copy 0 moved to copy 1. Exchanges with an
  /// odd number (exchange g uses copy g mod 2) then run these, even ones the lists given at
  /// construction; with device signals (use_signals() after this) the device picks them from
  /// its exchange number, so that graph replays alternate too. Uploaded once, here.
  void use_alternate(const std::vector<copy_op>& pack, const std::vector<gather_op>& gather,
                     const std::vector<copy_op>& unpack, const std::vector<gather_op>& scatter);
  /// Graph mode (sticky; with signals only): every later launch numbers its exchange after a
  /// count kept in device memory, advanced by the exchange's last launch, instead of by the
  /// host's `exchange` alone (the larger of the two), so that launches captured in a CUDA graph
  /// take a new number at each replay, and exchanges outside the graph keep counting after the
  /// replays. Gates and waits run as kernels then (stream memory operations take their values
  /// from the host).
  void count_on_device();
  bool counts_on_device() const;
  /// Enqueues the pack list (no-op when empty and without signals). `rank` is for error
  /// messages; `exchange` numbers the exchange (from 1) for the signals and the alternate
  /// lists.
  void launch_pack(int rank, std::uint64_t exchange = 0);
  /// For an exchange of local copies alone (no message): enqueues the pack list and the ordered
  /// local steps on `user_stream` itself, then records their completion there. No stream hop
  /// on either side (each costs the GPU a microsecond or two): wait_local() follows.
  void launch_local(void* user_stream, int rank);
  /// After launch_local(): makes `user_stream` wait for the local copies (nothing to do when it
  /// is the stream they run on), or blocks until they have run when `user_stream` is null.
  void wait_local(void* user_stream, int rank);
  /// Enqueues the unpack list (no-op when empty and without signals; with signals and nothing
  /// to copy, only the wait: stream memory operations where the driver has them).
  void launch_unpack(int rank, std::uint64_t exchange = 0);
  /// Enqueues a copy of `bytes` bytes (any direction; pinned host memory on one side).
  void copy(void* dst, const void* src, std::size_t bytes, int rank);
  /// Blocks until everything enqueued has run.
  void synchronize(int rank);
  /// halox's stream (a `cudaStream_t`), for transports that enqueue between the launches.
  void* stream() const override;
  /// True when everything enqueued has run. Never blocks.
  bool ready(int rank);
  /// NVTX ranges around the pack and unpack launches (core/nvtx.hpp), named by `n`, which
  /// must outlive the copier.
  void use_nvtx(const nvtx_names* n);
  /// GPU time from the start of a pack to the end of its exchange's unpack, measured with
  /// events on every 16th exchange outside CUDA graph captures: true, with the milliseconds in
  /// `ms`, once a sample's events have completed (each sample is reported once). Never blocks.
  bool gpu_sample(float& ms);
  /// Device signals with a timeout: throws halox::error, naming the exchange and the peer a
  /// kernel waited for, where a kernel gave up (see device_signals::timeout). synchronize(),
  /// ready() and enter() call it.
  void check_timeout(int rank) const;
  /// Whether `user_stream` is being captured into a CUDA graph now; the answer
  /// is kept for the enter() that follows, so that one exchange asks CUDA once.
  /// Throws halox::error where an earlier call invalidated its capture.
  bool probe(void* user_stream, int rank);
  /// Begins an exchange: halox's stream waits for the work already on `user_stream` (an event,
  /// no host wait; nothing when it is null), and the exchange's capture is noted.
  void enter(void* user_stream, int rank);
  /// The capture this exchange is enqueued into (0: none), as enter() found it.
  unsigned long long capture() const override;
  /// Makes `user_stream` wait for the work enqueued so far (no host wait).
  void signal(void* user_stream, int rank);
  /// One line on the launches, for describe(): copies, tiles, and pairs of adjacent narrow
  /// copies that run as one.
  std::string summary() const;

 private:
  struct impl;
  std::unique_ptr<impl> p_;
};

}  // namespace halox::detail
