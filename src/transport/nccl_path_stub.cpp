// Builds without NCCL: the nccl staging policy is refused at make_exchange.
#include "halox/core/error.hpp"
#include "halox/transport/nccl_path.hpp"

namespace halox::detail {

struct nccl_path::impl {};

bool nccl_built() noexcept {
  return false;
}
std::unique_ptr<nccl_path> nccl_path::attach(MPI_Comm, bool, const std::vector<message>&,
                                             const std::byte*, const std::vector<message>&,
                                             std::byte*) {
  fail("staging 'nccl': this halox was built without NCCL (HALOX_ENABLE_NCCL)");
}
nccl_path::nccl_path(std::unique_ptr<impl> p) : p_(std::move(p)) {}
nccl_path::~nccl_path() = default;
void nccl_path::enqueue(void*) {}
void nccl_path::check_async() {}
std::string nccl_path::describe() const {
  return {};
}

}  // namespace halox::detail
