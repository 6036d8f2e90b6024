// Builds without CUDA: no GPU takes part in the locality decision.
#include "transport/locality.hpp"

namespace halox::detail {

std::string current_gpu_bus_id(int) {
  return {};
}
gpu_access gpu_reaches(const std::string&, int) {
  return gpu_access::not_visible;
}

}  // namespace halox::detail
