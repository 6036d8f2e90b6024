// Builds without CUDA: no device fields or device chains, so nothing is ever staged through
// host memory.
#include "halox/core/error.hpp"
#include "transport/staging_buffer.hpp"
#include "transport/staging_copies.hpp"

namespace halox::detail {

std::shared_ptr<std::byte> allocate_pinned(std::size_t, const char* what, int rank) {
  if (rank < 0) fail("{} pinned memory requested but this halox was built without CUDA", what);
  fail("rank {}: pinned {} requested but this halox was built without CUDA", rank, what);
}

struct staging_copies::impl {};

staging_copies::staging_copies(std::vector<stage>, std::vector<piece>, bool, const std::byte*,
                               std::byte*, std::byte*, const std::byte*, int) {
  fail("host staging of device fields: this halox was built without CUDA");
}
staging_copies::~staging_copies() = default;
void staging_copies::copy_out(void*) {}
bool staging_copies::copied_out(std::size_t) {
  return true;
}
void staging_copies::arrived(std::size_t) {}
void staging_copies::join(void*) {}

}  // namespace halox::detail
