// Builds without CUDA have no NVTX: every range is inactive (core/nvtx.hpp).
#include "core/nvtx.hpp"

namespace halox::detail {

nvtx_names::nvtx_names(const std::string&, bool, const std::vector<int>&, const std::vector<int>&) {
}
void nvtx_names::push(nvtx_phase) const {}
void nvtx_names::push_message(bool, std::size_t) const {}
void nvtx_names::push_step(nvtx_transport, nvtx_step) const {}
void nvtx_names::pop() const {}
bool nvtx_built() noexcept {
  return false;
}

}  // namespace halox::detail
