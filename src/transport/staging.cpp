#include "halox/transport/staging.hpp"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#include "halox/core/error.hpp"
#include "halox/transport/chunks.hpp"
#include "halox/transport/nccl_path.hpp"

namespace halox {

const char* to_string(staging s) noexcept {
  switch (s) {
    case staging::automatic:
      return "auto";
    case staging::gpu_aware:
      return "gpu_aware";
    case staging::host_staged:
      return "host_staged";
    case staging::peer_ipc:
      return "peer_ipc";
    case staging::nccl:
      return "nccl";
  }
  return "?";
}

namespace detail {

bool mpi_cuda_aware() noexcept {
#if defined(MPIX_CUDA_AWARE_SUPPORT)
  // Asked at run time even where the headers halox was built with say 0: the library loaded
  // at run time (a cluster's CUDA-aware Open MPI of the same ABI) is what moves the data.
  return MPIX_Query_cuda_support() == 1;
#elif defined(MPIX_GPU_SUPPORT_CUDA)
  int yes = 0;
  return MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &yes) == MPI_SUCCESS && yes != 0;
#else
  return false;
#endif
}

namespace {
// A two-valued switch: `usual` gives `usual_value`, `other` the opposite; unset or empty keeps
// `current`; anything else is an input error naming the variable, its value and both choices.
bool env_switch(const char* name, const char* what, const char* usual, const char* other,
                bool usual_value, bool current) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return current;
  if (std::string(v) == usual) return usual_value;
  if (std::string(v) == other) return !usual_value;
  fail("{}='{}' is not {}; use {} or {}", name, v, what, usual, other);
}

std::optional<std::vector<int>> rank_list(const char* name,
                                          std::optional<std::vector<int>> current) {
  const char* v = std::getenv(name);
  if (v == nullptr) return current;
  std::vector<int> ranks;
  const std::string s = v;
  if (s.empty()) fail("{} is set but empty; list the ranks (e.g. {}=0,1) or unset it", name, name);
  std::size_t at = 0;
  while (at <= s.size()) {
    const std::size_t end = std::min(s.find(',', at), s.size());
    const std::string item = s.substr(at, end - at);
    const bool digits = !item.empty() && item.size() < 10 &&
                        item.find_first_not_of("0123456789") == std::string::npos;
    if (!digits) fail("{}='{}' is not a comma-separated list of ranks (item '{}')", name, s, item);
    ranks.push_back(std::stoi(item));
    at = end + 1;
  }
  return ranks;
}

staging staging_from(const char* v) {
  const std::string s = v;
  if (s == "auto" || s == "automatic") return staging::automatic;
  if (s == "gpu_aware") return staging::gpu_aware;
  if (s == "host_staged") return staging::host_staged;
  if (s == "peer_ipc") return staging::peer_ipc;
  if (s == "nccl") return staging::nccl;
  fail(
      "HALOX_STAGING='{}' is not a staging policy; use auto, gpu_aware, host_staged, peer_ipc or "
      "nccl",
      s);
}
}  // namespace

exchange_options with_environment(exchange_options o) {
  if (const char* v = std::getenv("HALOX_STAGING"); v != nullptr && *v != '\0')
    o.device_staging = staging_from(v);
  o.host_staging_copies = env_switch("HALOX_HOST_STAGING", "a host staging variant", "mapped",
                                     "copy", false, o.host_staging_copies);
  if (const char* v = std::getenv("HALOX_STAGING_CHUNK"); v != nullptr && *v != '\0')
    o.staging_chunk_bytes = parse_bytes("HALOX_STAGING_CHUNK", v);
  o.ipc_device_signals = env_switch("HALOX_IPC_SIGNAL", "a signalling mode", "device", "host", true,
                                    o.ipc_device_signals);
  o.ipc_into_fields =
      env_switch("HALOX_IPC_INTO", "a CUDA IPC target", "field", "buffer", true, o.ipc_into_fields);
  o.host_shared_memory = env_switch("HALOX_HOST_TRANSPORT", "a host transport", "auto", "mpi", true,
                                    o.host_shared_memory);
  o.shm_into_fields = env_switch("HALOX_SHM_INTO", "a shared-memory target", "field", "buffer",
                                 true, o.shm_into_fields);
  if (const char* v = std::getenv("HALOX_SHM_DIRECT_MIN"); v != nullptr && *v != '\0')
    o.shm_direct_min_bytes = parse_bytes("HALOX_SHM_DIRECT_MIN", v);
  o.peer_ipc_ranks = rank_list("HALOX_PEER_IPC_RANKS", std::move(o.peer_ipc_ranks));
  o.peer_shm_ranks = rank_list("HALOX_PEER_SHM_RANKS", std::move(o.peer_shm_ranks));
  if (const char* v = std::getenv("HALOX_NODE_SIZE"); v != nullptr && *v != '\0') {
    const std::string s = v;
    const bool digits = s.size() < 10 && s.find_first_not_of("0123456789") == std::string::npos;
    if (!digits) fail("HALOX_NODE_SIZE='{}' is not a number of ranks (0: the real nodes)", s);
    o.node_size = std::stoi(s);
  }
  require(o.node_size >= 0, "exchange_options::node_size is {}; use 0 (the real nodes) or more",
          o.node_size);
  for (const auto* list : {&o.peer_ipc_ranks, &o.peer_shm_ranks})
    if (*list)
      for (int r : **list)
        require(r >= 0, "exchange_options: rank {} in a peer rank list is negative", r);
  return o;
}

staging_choice choose_staging(staging s, bool host_fields) {
  const bool aware = mpi_cuda_aware();
  switch (s) {
    case staging::gpu_aware:
      return aware ? staging_choice{staging::gpu_aware, true, "forced; MPI is CUDA-aware"}
                   : staging_choice{staging::gpu_aware, false,
                                    "forced, but MPI is not CUDA-aware: buffers in mapped pinned "
                                    "memory, which it can read"};
    case staging::host_staged:
      return {staging::host_staged, false, "forced; pack kernel writes mapped pinned memory"};
    case staging::nccl:
      return {staging::nccl, true,
              "NCCL: buffers in device memory, sends and receives on halox's stream"};
    case staging::peer_ipc:  // where CUDA IPC cannot serve, messages go as automatic would
    case staging::automatic:
      break;
  }
  if (aware) return {staging::gpu_aware, true, "automatic: MPI is CUDA-aware"};
  if (nccl_built() && !host_fields)
    return {staging::nccl, true,
            "automatic: MPI is not CUDA-aware, NCCL is built: buffers in device memory, sends "
            "and receives on halox's stream"};
  return {staging::host_staged, false,
          "automatic: MPI is not CUDA-aware; pack kernel writes mapped pinned memory"};
}

}  // namespace detail
}  // namespace halox
