// Boundary rules of device fields: one kernel launch per dimension with built-in fills, over
// a descriptor table uploaded once (see boundary/device_boundary.hpp).
#include "boundary/device_boundary.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include "gpu/capture.hpp"
#include "gpu/check.hpp"
#include "gpu/event.hpp"
#include "gpu/memory.hpp"

namespace halox::detail {

namespace {

using gpu::check;

constexpr int max_dims = max_copy_dims - 1;  // spatial dimensions; the last loop: components
constexpr int threads = 256;

// A fill as the kernel reads it: loops outermost first, the smallest destination stride
// innermost (neighbouring threads write neighbouring elements).
struct dev_fill {
  std::byte* dst;
  const std::byte* src;
  long long count[max_copy_dims], dst_stride[max_copy_dims], src_stride[max_copy_dims];
  long long total;                 // elements
  unsigned long long first_block;  // within its launch
  long long elem, word, constant, signs;
  int ndims, comp_loop, type, has_signs;
};

__device__ void copy_words(std::byte* d, const std::byte* s, long long elem, long long word) {
  switch (word) {
    case 8:
      for (long long i = 0; i < elem; i += 8)
        *reinterpret_cast<std::uint64_t*>(d + i) = *reinterpret_cast<const std::uint64_t*>(s + i);
      break;
    case 4:
      for (long long i = 0; i < elem; i += 4)
        *reinterpret_cast<std::uint32_t*>(d + i) = *reinterpret_cast<const std::uint32_t*>(s + i);
      break;
    case 2:
      for (long long i = 0; i < elem; i += 2)
        *reinterpret_cast<std::uint16_t*>(d + i) = *reinterpret_cast<const std::uint16_t*>(s + i);
      break;
    default:
      for (long long i = 0; i < elem; ++i) d[i] = s[i];
  }
}

// The host's `T(v * sign)` (boundary_copy::run), the same single rounding.
template <class T>
__device__ void multiply(std::byte* d, const std::byte* s, const std::byte* sign) {
  *reinterpret_cast<T*>(d) = T(*reinterpret_cast<const T*>(s) * *reinterpret_cast<const T*>(sign));
}

__global__ void fill_kernel(const dev_fill* fills, int n, const std::byte* data) {
  int lo = 0, hi = n - 1;  // the fill of this block: the last that starts at or before it
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (fills[mid].first_block <= blockIdx.x)
      lo = mid;
    else
      hi = mid - 1;
  }
  const dev_fill& f = fills[lo];
  long long t = (long long)(blockIdx.x - f.first_block) * blockDim.x + threadIdx.x;
  if (t >= f.total) return;
  long long od = 0, os = 0, comp = 0;
  for (int i = f.ndims - 1; i >= 0; --i) {
    const long long k = t % f.count[i];
    t /= f.count[i];
    od += k * f.dst_stride[i];
    os += k * f.src_stride[i];
    if (i == f.comp_loop) comp = k;
  }
  std::byte* d = f.dst + od;
  if (!f.src) return copy_words(d, data + f.constant, f.elem, f.word);
  const std::byte* s = f.src + os;
  if (!f.has_signs) return copy_words(d, s, f.elem, f.word);
  const std::byte* sign = data + f.signs + comp * f.elem;
  switch (f.type) {
    case 1:
      return multiply<double>(d, s, sign);
    case 2:
      return multiply<float>(d, s, sign);
    case 3:
      return multiply<std::int32_t>(d, s, sign);
    case 4:
      return multiply<std::int64_t>(d, s, sign);
    case 5:
      return multiply<std::uint32_t>(d, s, sign);
    case 6:
      return multiply<std::uint64_t>(d, s, sign);
    default:
      return;  // rejected at make_exchange
  }
}

dev_fill lower(const fill_op& op) {
  dev_fill f{};
  f.dst = op.dst;
  f.src = op.src;
  f.elem = (long long)op.elem;
  f.word = (long long)op.word;
  f.constant = (long long)op.constant;
  f.signs = (long long)op.signs;
  f.type = op.type;
  f.has_signs = op.has_signs ? 1 : 0;
  f.ndims = op.ndims;
  // Loops by decreasing destination stride (a fill writes every element once and reads none
  // of them, so any order gives the same result).
  std::vector<int> order(std::size_t(op.ndims));
  std::iota(order.begin(), order.end(), 0);
  auto mag = [](index v) { return v < 0 ? -v : v; };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return mag(op.dst_stride[std::size_t(a)]) > mag(op.dst_stride[std::size_t(b)]);
  });
  f.total = 1;
  for (int i = 0; i < op.ndims; ++i) {
    const auto k = std::size_t(order[std::size_t(i)]);
    f.count[i] = op.count[k];
    f.dst_stride[i] = op.dst_stride[k];
    f.src_stride[i] = op.src_stride[k];
    if (int(k) == op.comp_loop) f.comp_loop = i;
    f.total *= op.count[k];
  }
  return f;
}

}  // namespace

struct device_boundary::impl {
  cudaStream_t halox = nullptr;
  std::vector<device_callback> callbacks;  // stable-sorted by dimension
  // Launch of dimension d: fills [begin[d], begin[d + 1]) of the table, `blocks[d]` blocks.
  std::array<std::size_t, max_dims + 1> begin{};
  std::array<unsigned long long, max_dims> blocks{};
  gpu::device_array<dev_fill> table;
  gpu::device_array<std::byte> data;
  gpu::event done;
  unsigned long long done_capture = 0;  // the CUDA graph capture `done` was recorded in (0: none)
  int first_callback_dim = max_dims;  // dimensions up to here run after the unpack

  void launch(int d, cudaStream_t s, int rank) const {
    const auto b = blocks[std::size_t(d)];
    if (b == 0) return;
    const auto n = int(begin[std::size_t(d) + 1] - begin[std::size_t(d)]);
    fill_kernel<<<unsigned(b), threads, 0, s>>>(table.get() + begin[std::size_t(d)], n, data.get());
    check(cudaGetLastError(), "boundary fill kernel launch", rank);
  }
};

device_boundary::device_boundary(device_rules rules, stream_t halox_stream, int rank)
    : p_(std::make_unique<impl>()) {
  p_->halox = halox_stream;
  std::vector<dev_fill> host;
  for (int d = 0; d < max_dims; ++d) {
    p_->begin[std::size_t(d)] = host.size();
    unsigned long long blocks = 0;
    for (const auto& op : rules.fills) {
      if (op.dim != d) continue;
      dev_fill f = lower(op);
      if (f.total <= 0) continue;
      f.first_block = blocks;
      blocks += (unsigned long long)((f.total + threads - 1) / threads);
      host.push_back(f);
    }
    require(blocks <= (unsigned long long)std::numeric_limits<int>::max(),
            "rank {}: the boundary fills of dimension {} need {} thread blocks, more than one "
            "launch can have",
            rank, d, blocks);
    p_->blocks[std::size_t(d)] = blocks;
  }
  p_->begin[max_dims] = host.size();
  p_->table = gpu::device_array<dev_fill>::upload(host, "boundary fill table", rank);
  p_->data = gpu::device_array<std::byte>::upload(rules.data, "boundary fill values", rank);
  p_->callbacks = std::move(rules.callbacks);
  std::stable_sort(
      p_->callbacks.begin(), p_->callbacks.end(),
      [](const device_callback& a, const device_callback& b) { return a.dim < b.dim; });
  if (!p_->callbacks.empty()) p_->first_callback_dim = p_->callbacks.front().dim;
}

device_boundary::~device_boundary() {
  if (!p_) return;
  // The tables may still be read by a launch in flight.
  // An event last recorded inside a CUDA graph capture cannot be waited on (the graph's replays
  // are the user's to complete).
  if (p_->done_capture == 0) (void)cudaEventSynchronize(p_->done.get());
  if (p_->halox) (void)cudaStreamSynchronize(p_->halox);
  (void)cudaGetLastError();  // nothing may stay behind for a user's launch check
}

void device_boundary::launch_after_unpack(int rank) {
  for (int d = 0; d < max_dims && d <= p_->first_callback_dim; ++d) p_->launch(d, p_->halox, rank);
  check(cudaEventRecord(p_->done.get(), p_->halox), "cudaEventRecord(boundary fills)", rank);
  p_->done_capture = gpu::capture_id(p_->halox, rank);
}

bool device_boundary::ready(int rank) const {
  const cudaError_t rc = cudaEventQuery(p_->done.get());
  if (rc == cudaErrorNotReady) return false;
  check(rc, "cudaEventQuery(boundary fills)", rank);
  return true;
}

void device_boundary::complete(stream_t stream, int rank) {
  const auto& cbs = p_->callbacks;
  if (cbs.empty()) return;
  const cudaStream_t s = stream ? stream : p_->halox;
  for (std::size_t k = 0; k < cbs.size();) {
    const int d = cbs[k].dim;
    for (; k < cbs.size() && cbs[k].dim == d; ++k) cbs[k].fn(s);
    // The fills after these callbacks: dimensions up to the next callback's.
    const int next = k < cbs.size() ? cbs[k].dim : max_dims - 1;
    for (int e = d + 1; e <= next; ++e) p_->launch(e, s, rank);
  }
  // The destructor waits for this before it frees the tables.
  check(cudaEventRecord(p_->done.get(), s), "cudaEventRecord(boundary callbacks)", rank);
  p_->done_capture = gpu::capture_id(s, rank);
  if (!stream) check(cudaStreamSynchronize(s), "cudaStreamSynchronize(boundary callbacks)", rank);
}

}  // namespace halox::detail
