// Builds without CUDA: no device chain can be constructed, so this is never reached in a
// correct program; it fails loudly if it is.
#include "halox/chain/chain_device.hpp"
#include "halox/core/error.hpp"

namespace halox::detail {

bool is_device_pointer(const void*, int rank) {
  fail("rank {}: device chain payload checked but this halox was built without CUDA", rank);
}

}  // namespace halox::detail
