// Builds without CUDA: no device chain can be constructed (the constructor of its stream
// fails), so the rest is never reached in a correct program; it fails loudly if it is.
#include "chain/chain_device.hpp"
#include "halox/core/error.hpp"

namespace halox::detail {

bool is_device_pointer(const void*, int rank, int*) {
  fail("rank {}: device chain payload checked but this halox was built without CUDA", rank);
}

struct chain_stream::impl {};

chain_stream::chain_stream(int rank) {
  fail(
      "rank {}: device chain requested but this halox was built without CUDA "
      "(HALOX_ENABLE_CUDA=OFF)",
      rank);
}
chain_stream::~chain_stream() = default;
void chain_stream::copy(void*, const void*, std::size_t) {}
void chain_stream::record() {}
bool chain_stream::done() {
  return true;
}
void chain_stream::synchronize() {}
void chain_stream::wait_for(stream_t) {}
void chain_stream::signal(stream_t) {}
stream_t chain_stream::get() const {
  return nullptr;
}

}  // namespace halox::detail
