#include "halox/transport/staging.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#include "halox/core/error.hpp"

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
  }
  return "?";
}

namespace detail {

bool mpi_cuda_aware() noexcept {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#elif defined(MPIX_GPU_SUPPORT_CUDA)
  int yes = 0;
  return MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &yes) == MPI_SUCCESS && yes != 0;
#else
  return false;
#endif
}

staging staging_from_env() {
  const char* v = std::getenv("HALOX_STAGING");
  if (v == nullptr || *v == '\0') return staging::automatic;
  const std::string s = v;
  if (s == "auto" || s == "automatic") return staging::automatic;
  if (s == "gpu_aware") return staging::gpu_aware;
  if (s == "host_staged") return staging::host_staged;
  if (s == "peer_ipc") return staging::peer_ipc;
  fail("HALOX_STAGING='{}' is not a staging policy; use auto, gpu_aware, host_staged or peer_ipc",
       s);
}

namespace {
// A two-valued environment switch: unset, empty or `usual` gives false, `other` gives true,
// anything else is an input error naming the variable, its value and both choices.
bool env_other(const char* name, const char* what, const char* usual, const char* other) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0' || std::string(v) == usual) return false;
  if (std::string(v) == other) return true;
  fail("{}='{}' is not {}; use {} or {}", name, v, what, usual, other);
}
}  // namespace

bool host_staging_copies() {
  return env_other("HALOX_HOST_STAGING", "a host staging variant", "mapped", "copy");
}
bool ipc_device_signals() {
  return !env_other("HALOX_IPC_SIGNAL", "a signalling mode", "device", "host");
}
bool ipc_into_fields() {
  return !env_other("HALOX_IPC_INTO", "a CUDA IPC target", "field", "buffer");
}
bool host_shared_memory() {
  return !env_other("HALOX_HOST_TRANSPORT", "a host transport", "auto", "mpi");
}

namespace {
std::optional<std::vector<int>> rank_list(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
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
}  // namespace

std::optional<std::vector<int>> peer_ipc_ranks() {
  return rank_list("HALOX_PEER_IPC_RANKS");
}
std::optional<std::vector<int>> peer_shm_ranks() {
  return rank_list("HALOX_PEER_SHM_RANKS");
}

void validate_transport_environment() {
  (void)staging_from_env();
  (void)host_staging_copies();
  (void)ipc_device_signals();
  (void)ipc_into_fields();
  (void)peer_ipc_ranks();
  (void)peer_shm_ranks();
  (void)host_shared_memory();
}

staging_choice choose_staging(staging s) {
  const bool aware = mpi_cuda_aware();
  switch (s) {
    case staging::gpu_aware:
      return aware ? staging_choice{staging::gpu_aware, true, "forced; MPI is CUDA-aware"}
                   : staging_choice{staging::gpu_aware, false,
                                    "forced, but MPI is not CUDA-aware: buffers in mapped pinned "
                                    "memory, which it can read"};
    case staging::host_staged:
      return {staging::host_staged, false, "forced; pack kernel writes mapped pinned memory"};
    case staging::peer_ipc:  // where CUDA IPC cannot serve, messages go as automatic would
    case staging::automatic:
      break;
  }
  return aware ? staging_choice{staging::gpu_aware, true, "automatic: MPI is CUDA-aware"}
               : staging_choice{staging::host_staged, false,
                                "automatic: MPI is not CUDA-aware; pack kernel writes mapped "
                                "pinned memory"};
}

}  // namespace detail
}  // namespace halox
