// Builds without CUDA: make_exchange rejects device fields before any boundary rule of theirs
// is compiled, so this is never reached in a correct program; it fails loudly if it is.
#include "boundary/device_boundary.hpp"
#include "halox/core/error.hpp"

namespace halox::detail {

struct device_boundary::impl {};

device_boundary::device_boundary(device_rules, stream_t, int rank) {
  fail("rank {}: boundary rules on device fields requested but this halox was built without CUDA",
       rank);
}
device_boundary::~device_boundary() = default;
void device_boundary::launch_after_unpack(int) {}
bool device_boundary::ready(int) const {
  return true;
}
void device_boundary::complete(stream_t, int) {}

}  // namespace halox::detail
