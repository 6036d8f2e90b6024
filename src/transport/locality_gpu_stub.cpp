// Builds without CUDA: no GPU takes part in the locality decision.
#include "transport/locality.hpp"

namespace halox::detail {

std::string current_gpu_bus_id(int) {
  return {};
}
gpu_access gpu_reaches(const std::string&, int) {
  return gpu_access::not_visible;
}
std::vector<std::string> probe_hidden_ipc(MPI_Comm, const std::vector<int>& peers, int) {
  return std::vector<std::string>(peers.size(), "this build has no CUDA");
}

}  // namespace halox::detail
