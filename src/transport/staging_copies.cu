// Host staging in pieces, the GPU side (see staging_copies.hpp): every stream and event is
// created here at set-up; an exchange only enqueues copies, records and queries events. Also
// the pinned memory of staging buffers (staging_buffer.hpp).
#include "transport/staging_copies.hpp"

#include <cuda_runtime.h>

#include <algorithm>

#include "gpu/check.hpp"
#include "gpu/event.hpp"
#include "gpu/pinned.hpp"
#include "gpu/stream.hpp"
#include "transport/staging_buffer.hpp"

namespace halox::detail {

std::shared_ptr<std::byte> allocate_pinned(std::size_t bytes, const char* what, int rank) {
  return gpu::allocate_mapped(bytes, what, rank);
}

struct staging_copies::impl {
  explicit impl(int r)
      : rank(r), in_stream(cudaStreamNonBlocking, r), in_done(cudaEventDisableTiming, r) {}
  std::vector<stage> out;
  std::vector<piece> in;
  bool in_pieces = false;
  const std::byte* device_send = nullptr;
  std::byte* send = nullptr;
  std::byte* device_recv = nullptr;
  const std::byte* recv = nullptr;
  int rank = 0;
  gpu::stream in_stream;            // copies in: beside the copies out, on the other engine
  std::vector<gpu::event> copied;  // one per stage out
  gpu::event in_done;

  void copy_in(const piece& p) {
    gpu::check(cudaMemcpyAsync(device_recv + p.offset, recv + p.offset, p.bytes,
                               cudaMemcpyHostToDevice, in_stream.get()),
               "cudaMemcpyAsync (host staging, in)", rank);
  }
};

staging_copies::staging_copies(std::vector<stage> out, std::vector<piece> in, bool in_pieces,
                               const std::byte* device_send, std::byte* send,
                               std::byte* device_recv, const std::byte* recv, int rank)
    : p_(std::make_unique<impl>(rank)) {
  auto& d = *p_;
  d.out = std::move(out);
  d.in = std::move(in);
  d.in_pieces = in_pieces;
  d.device_send = device_send;
  d.send = send;
  d.device_recv = device_recv;
  d.recv = recv;
  d.copied.reserve(d.out.size());
  for (std::size_t s = 0; s < d.out.size(); ++s) d.copied.emplace_back(cudaEventDisableTiming, rank);
}

staging_copies::~staging_copies() = default;

void staging_copies::copy_out(void* stream) {
  auto& d = *p_;
  const auto s = static_cast<cudaStream_t>(stream);
  for (std::size_t k = 0; k < d.out.size(); ++k) {
    const auto& st = d.out[k];
    if (st.bytes > 0)
      gpu::check(cudaMemcpyAsync(d.send + st.offset, d.device_send + st.offset, st.bytes,
                                 cudaMemcpyDeviceToHost, s),
                 "cudaMemcpyAsync (host staging, out)", d.rank);
    gpu::check(cudaEventRecord(d.copied[k].get(), s), "cudaEventRecord (host staging)", d.rank);
  }
}

bool staging_copies::copied_out(std::size_t s) {
  const cudaError_t rc = cudaEventQuery(p_->copied[s].get());
  if (rc == cudaErrorNotReady) return false;
  gpu::check(rc, "cudaEventQuery (host staging)", p_->rank);
  return true;
}

void staging_copies::arrived(std::size_t p) {
  if (p_->in_pieces && p_->in[p].bytes > 0) p_->copy_in(p_->in[p]);
}

void staging_copies::join(void* stream) {
  auto& d = *p_;
  if (!d.in_pieces && !d.in.empty()) {
    // One copy over every piece (from the lowest to the highest byte, gaps included).
    std::size_t lo = d.in.front().offset, hi = lo;
    for (const auto& p : d.in) {
      lo = std::min(lo, p.offset);
      hi = std::max(hi, p.offset + p.bytes);
    }
    if (hi > lo) d.copy_in({0, lo, hi - lo});
  }
  gpu::check(cudaEventRecord(d.in_done.get(), d.in_stream.get()), "cudaEventRecord (host staging)",
             d.rank);
  gpu::check(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), d.in_done.get(), 0),
             "cudaStreamWaitEvent (host staging)", d.rank);
}

}  // namespace halox::detail
