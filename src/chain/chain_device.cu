// The chain exchange's CUDA calls (built only with CUDA): its staging stream and the pointer
// query, each call through the one check.
#include <cuda_runtime.h>

#include "chain/chain_device.hpp"
#include "gpu/check.hpp"
#include "gpu/event.hpp"
#include "gpu/stream.hpp"
#include "halox/core/error.hpp"

namespace halox::detail {

bool is_device_pointer(const void* p, int rank, int* device) {
  cudaPointerAttributes a{};
  gpu::check(cudaPointerGetAttributes(&a, p), "cudaPointerGetAttributes", rank);
  if (device != nullptr) *device = a.type == cudaMemoryTypeDevice ? a.device : -1;
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

struct chain_stream::impl {
  int rank;
  // Declared first: destroyed last, after the events.
  gpu::stream stream;
  gpu::event done, incoming;
  explicit impl(int r)
      : rank(r),
        stream(gpu::stream::greatest_priority(cudaStreamDefault, r)),
        done(cudaEventDisableTiming, r),
        incoming(cudaEventDisableTiming, r) {}
  cudaStream_t s() const { return stream.get(); }
};

chain_stream::chain_stream(int rank) : p_(std::make_unique<impl>(rank)) {}

chain_stream::~chain_stream() {
  // A destructor cannot report: a failure here means the context is already gone.
  (void)cudaStreamSynchronize(p_->s());
  (void)cudaGetLastError();  // nothing may stay behind for a user's launch check
}

void chain_stream::copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  gpu::check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, p_->s()),
             "cudaMemcpyAsync (chain staging)", p_->rank);
}

void chain_stream::record() {
  gpu::check(cudaEventRecord(p_->done.get(), p_->s()), "cudaEventRecord", p_->rank);
}

bool chain_stream::done() {
  const cudaError_t rc = cudaEventQuery(p_->done.get());
  if (rc == cudaErrorNotReady) return false;
  gpu::check(rc, "cudaEventQuery (chain staging)", p_->rank);
  return true;
}

void chain_stream::synchronize() {
  gpu::check(cudaStreamSynchronize(p_->s()), "cudaStreamSynchronize (chain staging)", p_->rank);
}

void chain_stream::wait_for(stream_t user) {
  gpu::check(cudaEventRecord(p_->incoming.get(), user), "cudaEventRecord(user stream)", p_->rank);
  gpu::check(cudaStreamWaitEvent(p_->s(), p_->incoming.get(), 0), "cudaStreamWaitEvent", p_->rank);
}

void chain_stream::signal(stream_t user) {
  record();
  gpu::check(cudaStreamWaitEvent(user, p_->done.get(), 0), "cudaStreamWaitEvent(user stream)",
             p_->rank);
}

stream_t chain_stream::get() const {
  return p_->s();
}

}  // namespace halox::detail
