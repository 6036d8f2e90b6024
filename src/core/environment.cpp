// The HALOX_* variables applied to exchange_options (see halox/core/options.hpp), read here in
// compiled code so that no public header needs the transports' headers.
#include "core/environment.hpp"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "halox/core/error.hpp"
#include "halox/core/options.hpp"

namespace halox::detail {

std::size_t parse_bytes(const char* name, const char* text) {
  const std::string s = text;
  std::size_t digits = 0;
  while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9') ++digits;
  const std::string unit = s.substr(digits);
  std::size_t shift = 0;
  if (unit == "K" || unit == "k" || unit == "KiB")
    shift = 10;
  else if (unit == "M" || unit == "m" || unit == "MiB")
    shift = 20;
  else if (unit == "G" || unit == "g" || unit == "GiB")
    shift = 30;
  else if (!unit.empty())
    digits = 0;  // an unknown unit
  if (digits == 0 || digits > 12)
    fail("{}='{}' is not a number of bytes; use e.g. 1048576, 512K, 4M or 0", name, s);
  return std::stoull(s.substr(0, digits)) << shift;
}

double parse_seconds(const char* name, const char* text) {
  const std::string s = text;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  const bool whole = end != nullptr && *end == '\0' && !s.empty();
  if (!whole || !(v >= 0) || v > 1e9)
    fail("{}='{}' is not a number of seconds; use e.g. 60, 0.5 or 0 (off)", name, s);
  return v;
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
  o.shm_cross_memory = env_switch("HALOX_SHM_CROSS", "a cross-memory attach switch", "off", "on",
                                  false, o.shm_cross_memory);
  o.nccl_register = env_switch("HALOX_NCCL_REGISTER", "an NCCL registration switch", "0", "1",
                               false, o.nccl_register);
  if (const char* v = std::getenv("HALOX_IPC_INLINE_MAX"); v != nullptr && *v != '\0')
    o.ipc_inline_max_bytes = parse_bytes("HALOX_IPC_INLINE_MAX", v);
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
  o.nvtx = env_switch("HALOX_NVTX", "an NVTX switch", "0", "1", false, o.nvtx);
  auto check_timeout = [](double t) {
    require(t >= 0 && t <= 1e9,
            "exchange_options::wait_timeout is {} s; use 0 (wait for ever) or a positive number "
            "of seconds",
            t);
  };
  check_timeout(o.wait_timeout);  // the option itself, also where the environment replaces it
  if (const char* v = std::getenv("HALOX_WAIT_TIMEOUT"); v != nullptr && *v != '\0')
    o.wait_timeout = parse_seconds("HALOX_WAIT_TIMEOUT", v);
  check_timeout(o.wait_timeout);
  require(o.node_size >= 0, "exchange_options::node_size is {}; use 0 (the real nodes) or more",
          o.node_size);
  for (const auto* list : {&o.peer_ipc_ranks, &o.peer_shm_ranks})
    if (*list)
      for (int r : **list)
        require(r >= 0, "exchange_options: rank {} in a peer rank list is negative", r);
  return o;
}

}  // namespace halox::detail
