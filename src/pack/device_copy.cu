// The launcher of the GPU copy engine: device_copier (pack/device_copy.hpp) uploads the
// tables the lowering made (device_copy_lowering.hpp), enqueues the kernels
// (device_copy_kernels.cuh) on its own stream, and orders them with events, users' streams and
// peers' signals. Every resource is owned by a gpu/ wrapper: nothing leaks where a constructor
// throws part-way.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <set>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/nvtx.hpp"
#include "gpu/capture.hpp"
#include "gpu/check.hpp"
#include "gpu/cuda_driver.hpp"
#include "gpu/event.hpp"
#include "gpu/memory.hpp"
#include "gpu/pinned.hpp"
#include "gpu/stream.hpp"
#include "halox/core/error.hpp"
#include "pack/device_copy.hpp"
#include "pack/device_copy_kernels.cuh"
#include "pack/device_copy_lowering.hpp"

namespace halox::detail {

namespace {

using gpu::check;

// One uploaded copy list.
struct table {
  gpu::device_array<long long> indices;  // every index list the gathers/scatters use
  gpu::device_array<copy_descriptor> copies;
  gpu::device_array<tile_entry> tile_of;  // each tile's copy and its place in that copy
  int n = 0;
  int pairs = 0;  // pairs of adjacent narrow copies run as one
  long long tiles = 0;
  bool plain = true;
  int cap = 1;                           // one wave of this table's kernel
  std::size_t bytes = 0;                 // moved per launch
  std::vector<const std::byte*> src_of;  // each copy's source, as the kernels number them

  table() = default;
  // `caps`: one wave of the plain kernel, of the general one.
  table(const std::vector<copy_op>& list, const std::vector<gather_op>& gathers,
        copy_kind gather_as, int rank, std::pair<int, int> caps) {
    copy_table t = lower(list, gathers, gather_as);
    n = int(t.copies.size());
    pairs = t.pairs;
    tiles = static_cast<long long>(t.tiles.size());
    plain = t.plain;
    cap = plain ? caps.first : caps.second;
    bytes = t.bytes;
    for (const auto& d : t.copies) src_of.push_back(reinterpret_cast<const std::byte*>(d.src));
    indices = gpu::device_array<long long>::upload(t.indices, "index lists", rank);
    if (n == 0) return;
    for (auto& d : t.copies)  // index lists: from the host copy to the device copy
      if (d.kind != strided_kind) d.idx = indices.get() + (d.idx - t.indices.data());
    copies = gpu::device_array<copy_descriptor>::upload(t.copies, "copy table", rank);
    tile_of = gpu::device_array<tile_entry>::upload(t.tiles, "tile table", rank);
  }
  // With signals the grid must be the same at every launch (the block counter relies on it).
  // Up to two tiles run in one block: as fast as two blocks for so little data, and a single
  // block posts its signals without the cross-block counter.
  int grid() const {
    if (tiles <= 2) return 1;
    return int(std::max<long long>(1, std::min<long long>(tiles, cap)));
  }
  copy_list list() const { return {copies.get(), tile_of.get(), tiles}; }
  // `odd`: the list the device runs for odd exchanges (sig.alternate), or null.
  void launch(cudaStream_t s, int rank, const char* what, const signal_args& sig = {},
              const table* odd = nullptr) const {
    const bool signals = sig.n_start + sig.n_wait + sig.n_post > 0;
    if (n == 0 && (!odd || odd->n == 0) && !signals) return;
    if (odd)  // one grid for both lists: the block counter relies on it
      launch_copy_kernel(plain && odd->plain, std::max(grid(), odd->grid()), s, list(), sig,
                         odd->list());
    else
      launch_copy_kernel(plain, grid(), s, list(), sig);
    check(cudaGetLastError(), what, rank);
  }
};

// One launch's flags, uploaded once.
struct signal_set {
  gpu::device_array<unsigned long long*> start, wait, post;  // flag pointers
  gpu::device_array<unsigned long long> blocks_done;
  int n_start = 0, n_wait = 0, n_post = 0;
  int n_lagged = 0;                   // (signal_args)
  bool count_only = false;            // (signal_args)
  bool alternate = false;             // (signal_args)
  unsigned long long timeout_ns = 0;  // (signal_args)
  unsigned* timeout = nullptr;        // (signal_args)
  unsigned wait_code = 0;             // (signal_args)

  signal_set() = default;
  signal_set(const std::vector<std::uint64_t*>& st, const std::vector<std::uint64_t*>& w,
             const std::vector<std::uint64_t*>& p, int rank)
      : start(put(st, rank)),
        wait(put(w, rank)),
        post(put(p, rank)),
        n_start(int(st.size())),
        n_wait(int(w.size())),
        n_post(int(p.size())) {
    if (p.empty()) return;  // the block counter only orders the posting of flags
    blocks_done = gpu::device_array<unsigned long long>(1, "block counter", rank);
    check(cudaMemset(blocks_done.get(), 0, sizeof(unsigned long long)), "cudaMemset(block counter)",
          rank);
  }
  // `generation`: graph mode's count in device memory (signal_args), else null.
  signal_args args(unsigned long long exchange, const unsigned long long* generation) const {
    signal_args a;
    a.start = start.get();
    a.n_start = n_start;
    a.wait = wait.get();
    a.post = post.get();
    a.blocks_done = blocks_done.get();
    a.exchange = exchange;
    a.generation = generation;
    a.n_wait = n_wait;
    a.n_post = n_post;
    a.n_lagged = n_lagged;
    a.count_only = count_only;
    a.alternate = alternate;
    a.timeout_ns = timeout_ns;
    a.timeout = timeout;
    a.wait_code = wait_code;
    return a;
  }

 private:
  static gpu::device_array<unsigned long long*> put(const std::vector<std::uint64_t*>& flags,
                                                    int rank) {
    std::vector<unsigned long long*> v;
    for (auto* f : flags) v.push_back(reinterpret_cast<unsigned long long*>(f));
    return gpu::device_array<unsigned long long*>::upload(v, "signal table", rank);
  }
};

}  // namespace

struct device_copier::impl {
  // The highest priority: packing and its signals get SMs ahead of the interior computation
  // a solver overlaps with the exchange on its own streams, so halos arrive in time. (Declared
  // first: destroyed last, after every table and event.)
  gpu::stream stream = gpu::stream::greatest_priority(cudaStreamDefault);
  gpu::event done, incoming;
  table pack, unpack;
  // unpack_counting: graph mode's unpack, whose last block also stores the exchange's number
  // as the count (no kernel of its own).
  signal_set pack_signals, unpack_signals, unpack_counting;
  bool signals = false;
  // Graph mode (count_on_device): the number of the last completed exchange, in device memory.
  gpu::device_array<unsigned long long> generation;
  bool on_device = false;
  const unsigned long long* counter() const { return on_device ? generation.get() : nullptr; }
  // The capture `done` was last recorded in (0: none), so that no stream waits on it across a
  // capture's boundary.
  unsigned long long done_capture = 0;
  std::vector<table> local_steps, unpack_steps;  // one launch each, in order (reverse)
  // use_alternate(): the lists of odd exchanges (copy 1 of the double receive buffers).
  bool alternate = false;
  table pack_alt, unpack_alt;
  std::vector<table> unpack_steps_alt;
  std::pair<int, int> caps{1, 1};  // one wave of the plain kernel, of the general one
  bool ordered = false;
  // The capture this exchange is enqueued into (enter()), and probe()'s answer for the enter()
  // that follows it.
  unsigned long long capture = 0;
  cudaStream_t probed = nullptr;
  unsigned long long probed_capture = 0;
  cudaStream_t s() const { return stream.get(); }
  // With device signals the device picks the list of odd exchanges itself (device_parity).
  bool device_parity = false;
  bool odd(std::uint64_t exchange) const {
    return alternate && !device_parity && exchange % 2 == 1;
  }
  const table* pack_odd() const { return device_parity ? &pack_alt : nullptr; }
  const table* unpack_odd() const { return device_parity ? &unpack_alt : nullptr; }
  // The unpack of one exchange: one fused launch, or one launch per step (ordered).
  void upload_unpack(table& fused, std::vector<table>& steps, const std::vector<copy_op>& unpack,
                     const std::vector<gather_op>& scatter) {
    if (!ordered) {
      fused = table(unpack, scatter, scatter_kind, -1, caps);
      return;
    }
    for (const auto& op : unpack)
      steps.emplace_back(std::vector{op}, std::vector<gather_op>{}, scatter_kind, -1, caps);
    for (const auto& g : scatter)
      steps.emplace_back(std::vector<copy_op>{}, std::vector{g}, scatter_kind, -1, caps);
  }
  cudaStream_t local_on = nullptr;  // the user's stream of the last launch_local() (compared,
                                    // never used: it may be destroyed since)
  int fold_cap = 1;                 // pack grids up to this size wait for their signals themselves
  int sms = 1;                      // multiprocessors of the GPU
  // Device signals: exchanges that run as one launch of exchange_kernel, on this grid (0: as a
  // pack launch and an unpack launch).
  int fused_grid = 0;
  bool fused_plain = false;
  void decide_fusion();
  void launch_fused(int rank, std::uint64_t exchange);
  // Where the driver supports stream memory operations on 64-bit flags: the gate of a large
  // pack, and the wait of an unpack with nothing to copy, as one batch each instead of a kernel.
  CUresult (*batch)(CUstream, unsigned, CUstreamBatchMemOpParams*, unsigned) = nullptr;
  std::vector<CUstreamBatchMemOpParams> gate_ops, wait_ops;
  std::size_t gate_lag_from = 0, gate_lag_to = 0;  // gate_ops waited for at the number - 1
  // Device signals with a timeout: the kernels' report (mapped pinned memory; 0: none), what
  // it names, and the exchange last launched.
  // stats(): every 16th exchange's pack start and unpack end (timing events), and whether a
  // sample is under way (its end recorded, not read yet); NVTX ranges' names (or null).
  gpu::event sample_begin{cudaEventDefault}, sample_end{cudaEventDefault};
  std::uint64_t launches = 0;
  bool sampling = false, sample_pending = false;
  const nvtx_names* nvtx = nullptr;
  std::shared_ptr<std::byte> timeout_word;
  device_signals watched;
  std::uint64_t last_exchange = 0;
  void watch(const device_signals& s);
  std::string timeout_text(unsigned report) const;
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
  p_->caps = {copy_kernel_wave(true, sms), copy_kernel_wave(false, sms)};
  p_->sms = sms;
  p_->ordered = ordered;
  p_->pack = table(pack, gather, gather_kind, -1, p_->caps);
  // Up to half the pack kernel's blocks that fit at once: a pack waiting for a late peer still
  // leaves half the GPU to other streams' kernels.
  p_->fold_cap = std::max(1, p_->pack.cap / 2);
  for (const auto& op : ordered_local)
    p_->local_steps.emplace_back(std::vector{op}, std::vector<gather_op>{}, gather_kind, -1,
                                 p_->caps);
  p_->upload_unpack(p_->unpack, p_->unpack_steps, unpack, scatter);
}

device_copier::~device_copier() {
  if (!p_) return;
  (void)cudaStreamSynchronize(p_->s());
  // launch_local's copies, on a user stream; `done` last recorded inside a CUDA graph capture
  // cannot be waited on (the graph's replays are the user's to complete).
  if (p_->done_capture == 0) (void)cudaEventSynchronize(p_->done.get());
  (void)cudaGetLastError();  // nothing may stay behind for a user's launch check
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
// Enqueues `ops` (their values set to `value`, those in [lag_from, lag_to) to `value` - 1:
// signal_args::n_lagged); false when the driver refuses them.
bool run_mem_ops(batch_fn batch, cudaStream_t stream, std::vector<CUstreamBatchMemOpParams>& ops,
                 std::uint64_t value, std::size_t lag_from = 0, std::size_t lag_to = 0) {
  for (std::size_t k = 0; k < ops.size(); ++k) {
    auto& op = ops[k];
    const std::uint64_t v = k >= lag_from && k < lag_to ? value - 1 : value;
    if (op.operation == CU_STREAM_MEM_OP_WAIT_VALUE_64)
      op.waitValue.value64 = cuuint64_t(v);
    else
      op.writeValue.value64 = cuuint64_t(v);
  }
  return batch(stream, unsigned(ops.size()), ops.data(), 0) == CUDA_SUCCESS;
}
}  // namespace

void device_copier::use_signals(const device_signals& s) {
  if (!p_->unpack_steps.empty() || !p_->local_steps.empty())
    fail("device signals requested for an ordered (reverse) exchange (internal error)");
  p_->pack_signals = signal_set(s.start_post, s.pack_wait, s.pack_post, -1);
  p_->pack_signals.n_lagged = int(s.lagged);
  p_->device_parity = p_->alternate;  // graph replays freeze the host's exchange number
  // A pack that mostly writes into peers' memory is bound by the link, which half the GPU
  // saturates: it runs on at most fold_cap blocks and so always waits in its own blocks,
  // resident before the peers' announcements come (a gate before a later launch costs a few
  // microseconds per exchange: 79% instead of 84% of the peer copy at 8 MiB on two H200s).
  // A pack mostly of local copies keeps the whole GPU (its bandwidth is the memory's).
  if (2 * s.peer_bytes >= p_->pack.bytes) {
    p_->pack.cap = std::min(p_->pack.cap, p_->fold_cap);
    p_->pack_alt.cap = std::min(p_->pack_alt.cap, p_->fold_cap);
  }
  p_->unpack_signals = signal_set({}, s.unpack_wait, {}, -1);
  p_->signals = true;
  p_->generation = gpu::device_array<unsigned long long>(1, "exchange counter", -1);
  check(cudaMemset(p_->generation.get(), 0, sizeof(unsigned long long)),
        "cudaMemset(exchange counter)", -1);
  // Made now: count_on_device() comes under capture, where nothing may be allocated.
  p_->unpack_counting =
      signal_set({}, s.unpack_wait, {reinterpret_cast<std::uint64_t*>(p_->generation.get())}, -1);
  p_->unpack_counting.count_only = true;
  for (auto* set : {&p_->pack_signals, &p_->unpack_signals, &p_->unpack_counting})
    set->alternate = p_->device_parity;
  p_->decide_fusion();
  if (s.timeout > 0) return p_->watch(s);  // kernels that can give up, no stream memory ops
  p_->batch = stream_mem_ops();
  if (!p_->batch) return;
  // Gate of a large pack: announce the start in the senders' memory, then wait for the
  // receivers' announcements in this rank's. Wait of an unpack with nothing to copy.
  for (auto* flag : s.start_post) p_->gate_ops.push_back(write_op(flag));
  p_->gate_lag_from = p_->gate_ops.size();
  p_->gate_lag_to = p_->gate_lag_from + s.lagged;
  for (auto* flag : s.pack_wait) p_->gate_ops.push_back(wait_op(flag));
  if (p_->unpack.n == 0 && (!p_->device_parity || p_->unpack_alt.n == 0) &&
      p_->fused_grid == 0)  // (a fused exchange waits in its kernel)
    for (auto* flag : s.unpack_wait) p_->wait_ops.push_back(wait_op(flag));
}
// Every launch with signals shares one report word; pack_wait's reports name receivers,
// unpack_wait's senders.
void device_copier::impl::watch(const device_signals& s) {
  watched = s;
  timeout_word = gpu::allocate_mapped(sizeof(unsigned), "wait timeout report", -1);
  unsigned* word = nullptr;
  check(cudaHostGetDevicePointer(reinterpret_cast<void**>(&word), timeout_word.get(), 0),
        "cudaHostGetDevicePointer(wait timeout report)", -1);
  const auto ns = static_cast<unsigned long long>(s.timeout * 1e9);
  pack_signals.wait_code = timeout_receiver_start;
  for (auto* set : {&unpack_signals, &unpack_counting}) set->wait_code = timeout_sender_ready;
  for (auto* set : {&pack_signals, &unpack_signals, &unpack_counting}) {
    set->timeout_ns = std::max(1ull, ns);
    set->timeout = word;
  }
}
std::string device_copier::impl::timeout_text(unsigned report) const {
  const unsigned kind = report & 0xff000000u, k = report & 0x00ffffffu;
  auto peer = [&](const std::vector<int>& v) { return k < v.size() ? v[k] : -1; };
  if (kind == timeout_receiver_start)
    return fmt::format(
        "rank {} (CUDA IPC with device signals: it has not started this exchange, "
        "so its halo may not be written)",
        peer(watched.pack_wait_peer));
  if (kind == timeout_sender_ready)
    return fmt::format(
        "rank {} (CUDA IPC with device signals: its data of this exchange has not "
        "arrived)",
        peer(watched.unpack_wait_peer));
  // The peer whose flagged words copy k of the unpack reads (either list of the exchange).
  for (const table* t : {&unpack, &unpack_alt})
    if (k < t->src_of.size())
      for (const auto& r : watched.flagged_from)
        if (t->src_of[k] >= r.lo && t->src_of[k] < r.hi)
          return fmt::format(
              "rank {} (CUDA IPC with device signals: its flagged words of this exchange have "
              "not arrived)",
              r.peer);
  std::set<int> peers;  // copy k lies in no peer's range: name every sender of flagged words
  for (const auto& r : watched.flagged_from) peers.insert(r.peer);
  return fmt::format(
      "flagged words from rank(s) {} (CUDA IPC with device signals: copy {} of the "
      "unpack has not arrived)",
      fmt::join(peers, ", "), k);
}
void device_copier::check_timeout(int rank) const {
  if (!p_->timeout_word) return;
  const unsigned report = *reinterpret_cast<volatile unsigned*>(p_->timeout_word.get());
  if (report == 0) return;
  fail(
      "rank {}: exchange '{}' #{} gave up on the GPU after {} s "
      "(exchange_options::wait_timeout / HALOX_WAIT_TIMEOUT): still waiting for {}",
      rank, p_->watched.name, p_->last_exchange, p_->watched.timeout, p_->timeout_text(report));
}
// Exchanges of up to 1 MiB with device signals run as one launch: between two GPUs a small
// exchange is bound by latencies, and one launch and its wait less is a sixth of an 8 KiB round
// in a replayed CUDA graph (docs/graphs.md). Larger ones keep an unpack launch of its own,
// with a whole wave of blocks for its copies (or a wait on the stream where it has none).
void device_copier::impl::decide_fusion() {
  constexpr std::size_t fuse_max_bytes = std::size_t(1) << 20;
  const table* odd_pack = pack_odd();
  const table* odd_unpack = unpack_odd();
  bool plain_both = pack.plain && unpack.plain;
  int grid = std::max(pack.grid(), unpack.grid());
  std::size_t bytes = pack.bytes + unpack.bytes;
  if (odd_pack) {
    plain_both = plain_both && odd_pack->plain && odd_unpack->plain;
    grid = std::max({grid, odd_pack->grid(), odd_unpack->grid()});
    bytes = std::max(bytes, odd_pack->bytes + odd_unpack->bytes);
  }
  // Every block of exchange_kernel must be resident at once, beside other streams' kernels.
  const int resident = std::max(1, exchange_kernel_wave(plain_both, sms) / 2);
  if (bytes > fuse_max_bytes || grid > resident) return;
  fused_grid = grid;
  fused_plain = plain_both;
}
void device_copier::impl::launch_fused(int rank, std::uint64_t exchange) {
  // Graph mode: the unpack half's last block makes the exchange's number the count.
  const signal_set& in = on_device ? unpack_counting : unpack_signals;
  const copy_list packs[2] = {pack.list(), (device_parity ? pack_alt : pack).list()};
  const copy_list unpacks[2] = {unpack.list(), (device_parity ? unpack_alt : unpack).list()};
  launch_exchange_kernel(fused_plain, fused_grid, s(), packs, unpacks,
                         pack_signals.args(exchange, counter()), in.args(exchange, counter()));
  check(cudaGetLastError(), "exchange kernel launch", rank);
}

void device_copier::use_alternate(const std::vector<copy_op>& pack,
                                  const std::vector<gather_op>& gather,
                                  const std::vector<copy_op>& unpack,
                                  const std::vector<gather_op>& scatter) {
  if (p_->signals) fail("alternate copy lists requested with device signals (internal error)");
  p_->pack_alt = table(pack, gather, gather_kind, -1, p_->caps);
  p_->upload_unpack(p_->unpack_alt, p_->unpack_steps_alt, unpack, scatter);
  p_->alternate = true;
}
void device_copier::use_nvtx(const nvtx_names* n) {
  p_->nvtx = n != nullptr && n->on() ? n : nullptr;
}
bool device_copier::gpu_sample(float& ms) {
  // (No query inside a capture: CUDA would invalidate it.)
  if (!p_->sample_pending || p_->capture != 0) return false;
  if (cudaEventQuery(p_->sample_end.get()) != cudaSuccess) {
    (void)cudaGetLastError();  // not ready (or failed: the next synchronize reports it)
    return false;
  }
  p_->sample_pending = false;
  return cudaEventElapsedTime(&ms, p_->sample_begin.get(), p_->sample_end.get()) == cudaSuccess;
}
void device_copier::launch_pack(int rank, std::uint64_t exchange) {
  const nvtx_range r(p_->nvtx ? *p_->nvtx : nvtx_off(), nvtx_phase::pack);
  // Every 16th exchange outside a capture, while no sample waits to be read, is timed.
  p_->sampling = p_->capture == 0 && !p_->sample_pending && p_->launches++ % 16 == 0;
  if (p_->sampling)
    check(cudaEventRecord(p_->sample_begin.get(), p_->s()), "cudaEventRecord(sample)", rank);
  if (p_->local_on) {  // the last local copies ran on a user's stream: this launch follows them
    if (p_->done_capture == p_->capture)
      check(cudaStreamWaitEvent(p_->s(), p_->done.get(), 0), "cudaStreamWaitEvent", rank);
    p_->local_on = nullptr;
  }
  p_->last_exchange = exchange;
  if (p_->fused_grid > 0) return p_->launch_fused(rank, exchange);  // (the unpack with it)
  signal_args sig = p_->signals ? p_->pack_signals.args(exchange, p_->counter()) : signal_args{};
  // A small pack waits in its own blocks (one launch less per exchange); a large one behind a
  // gate (stream memory operations, else a one-block kernel), so that a whole grid never
  // spins, holding the SMs, while a peer is late. Graph mode gates with the kernel: stream
  // memory operations take their values from the host.
  if (sig.n_start + sig.n_wait > 0 && p_->pack.grid() > p_->fold_cap) {
    const bool ops = p_->batch && !p_->gate_ops.empty() && !p_->on_device;
    if (ops && !run_mem_ops(p_->batch, p_->s(), p_->gate_ops, exchange, p_->gate_lag_from,
                            p_->gate_lag_to))
      p_->gate_ops.clear();  // refused (first use): the kernel gate from now on
    if (!ops || p_->gate_ops.empty()) {
      launch_gate_kernel(p_->s(), sig);
      check(cudaGetLastError(), "pack gate kernel launch", rank);
    }
    sig.n_start = sig.n_wait = 0;
  }
  (p_->odd(exchange) ? p_->pack_alt : p_->pack)
      .launch(p_->s(), rank, "pack kernel launch", sig, p_->pack_odd());
  for (const auto& t : p_->local_steps) t.launch(p_->s(), rank, "local copy launch");
}
void device_copier::launch_unpack(int rank, std::uint64_t exchange) {
  const nvtx_range r(p_->nvtx ? *p_->nvtx : nvtx_off(), nvtx_phase::unpack);
  const bool ops = p_->batch && !p_->wait_ops.empty() && !p_->on_device;
  const bool waited = ops && run_mem_ops(p_->batch, p_->s(), p_->wait_ops, exchange);
  if (ops && !waited) p_->wait_ops.clear();  // refused
  if (!waited && p_->fused_grid == 0) {
    // Graph mode: the exchange's last launch, whose last block makes its number the count.
    const signal_set& set = p_->on_device ? p_->unpack_counting : p_->unpack_signals;
    const signal_args sig = p_->signals ? set.args(exchange, p_->counter()) : signal_args{};
    (p_->odd(exchange) ? p_->unpack_alt : p_->unpack)
        .launch(p_->s(), rank, "unpack kernel launch", sig, p_->unpack_odd());
  }
  for (const auto& t : p_->odd(exchange) ? p_->unpack_steps_alt : p_->unpack_steps)
    t.launch(p_->s(), rank, "unpack step launch");
  check(cudaEventRecord(p_->done.get(), p_->s()), "cudaEventRecord", rank);
  p_->done_capture = p_->capture;
  if (p_->sampling) {
    check(cudaEventRecord(p_->sample_end.get(), p_->s()), "cudaEventRecord(sample)", rank);
    p_->sampling = false;
    p_->sample_pending = true;
  }
}
void device_copier::count_on_device() {
  if (p_->signals) p_->on_device = true;
}
bool device_copier::counts_on_device() const {
  return p_->on_device;
}
void device_copier::launch_local(void* user_stream, int rank) {
  const nvtx_range r(p_->nvtx ? *p_->nvtx : nvtx_off(), nvtx_phase::pack);
  const auto s = static_cast<cudaStream_t>(user_stream);
  // After copies on another stream (halox's, or another user stream) this launch waits for
  // them: launches of a table never overlap, as on a single stream. The last launch on a user
  // stream recorded `done` there already: that stream is never touched again (its owner may
  // have destroyed it since).
  // Inside a capture, only an event recorded in the same capture can be waited on: the work
  // before the capture is ordered by the graph's launch on its stream (docs/graphs.md).
  const unsigned long long capture = gpu::capture_id(s, rank);
  if (s != p_->local_on) {
    if (p_->local_on == nullptr) {
      check(cudaEventRecord(p_->done.get(), p_->s()), "cudaEventRecord", rank);
      p_->done_capture = 0;
    }
    if (p_->done_capture == capture)
      check(cudaStreamWaitEvent(s, p_->done.get(), 0), "cudaStreamWaitEvent(user stream)", rank);
  }
  p_->pack.launch(s, rank, "local copy launch");
  for (const auto& t : p_->local_steps) t.launch(s, rank, "local copy launch");
  check(cudaEventRecord(p_->done.get(), s), "cudaEventRecord(user stream)", rank);
  p_->done_capture = capture;
  p_->local_on = s;
}
void device_copier::wait_local(void* user_stream, int rank) {
  const auto s = static_cast<cudaStream_t>(user_stream);
  if (s != nullptr && p_->done_capture != gpu::capture_id(s, rank)) return;  // (see launch_local)
  if (s == nullptr)
    check(cudaEventSynchronize(p_->done.get()), "cudaEventSynchronize (local copies)", rank);
  else if (s != p_->local_on)
    check(cudaStreamWaitEvent(s, p_->done.get(), 0), "cudaStreamWaitEvent(user stream)", rank);
}
void device_copier::copy(void* dst, const void* src, std::size_t bytes, int rank) {
  if (bytes == 0) return;
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, p_->s()), "cudaMemcpyAsync (staging)",
        rank);
}
void* device_copier::stream() const {
  return p_->s();
}
void device_copier::synchronize(int rank) {
  check(cudaStreamSynchronize(p_->s()), "cudaStreamSynchronize (pack/unpack kernels)", rank);
  check_timeout(rank);
}
bool device_copier::ready(int rank) {
  const cudaError_t rc = cudaEventQuery(p_->done.get());
  if (rc == cudaErrorNotReady) return false;
  check(rc, "cudaEventQuery (pack/unpack kernels)", rank);
  check_timeout(rank);
  return true;
}
bool device_copier::probe(void* user_stream, int rank) {
  p_->probed = static_cast<cudaStream_t>(user_stream);
  p_->probed_capture = p_->probed != nullptr ? gpu::capture_id(p_->probed, rank) : 0;
  return p_->probed_capture != 0;
}
void device_copier::enter(void* user_stream, int rank) {
  const auto u = static_cast<cudaStream_t>(user_stream);
  check_timeout(rank);  // a scheduled exchange that gave up raises at the next one
  p_->capture = u == nullptr ? 0 : u == p_->probed ? p_->probed_capture : gpu::capture_id(u, rank);
  p_->probed = nullptr;
  if (u == nullptr) return;
  check(cudaEventRecord(p_->incoming.get(), u), "cudaEventRecord(user stream)", rank);
  check(cudaStreamWaitEvent(p_->s(), p_->incoming.get(), 0), "cudaStreamWaitEvent", rank);
}
unsigned long long device_copier::capture() const {
  return p_->capture;
}
void device_copier::signal(void* user_stream, int rank) {
  check(cudaEventRecord(p_->done.get(), p_->s()), "cudaEventRecord", rank);
  p_->done_capture = p_->capture;
  check(cudaStreamWaitEvent(static_cast<cudaStream_t>(user_stream), p_->done.get(), 0),
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
  return fmt::format("GPU launches: pack {}; unpack {}{}{}{}", one(p_->pack), one(p_->unpack),
                     steps ? fmt::format("; {} ordered single-copy steps", steps) : std::string(),
                     p_->alternate ? "; a second pair of lists for odd exchanges (copy 1 of "
                                     "the double receive buffers)"
                                   : "",
                     p_->fused_grid > 0 ? "; pack and unpack as one launch (exchanges up to 1 MiB "
                                          "with device signals)"
                                        : "");
}

}  // namespace halox::detail
