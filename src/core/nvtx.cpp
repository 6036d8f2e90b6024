// NVTX v3 ranges (core/nvtx.hpp): CUDA builds, header-only NVTX from the CUDA toolkit.
#include "core/nvtx.hpp"

#include <nvtx3/nvToolsExt.h>

namespace halox::detail {

namespace {
const char* const phase_names[] = {"set-up",        "start", "wait",  "schedule_exchange",
                                   "schedule_wait", "pack",  "unpack"};
static_assert(sizeof phase_names / sizeof *phase_names == int(nvtx_phase::count));
const char* const transport_names[] = {"MPI", "shared memory", "host staging", "CUDA IPC", "NCCL"};
static_assert(sizeof transport_names / sizeof *transport_names == int(nvtx_transport::count));
const char* const step_names[] = {"post receives", "clear to send", "post sends", "complete"};
static_assert(sizeof step_names / sizeof *step_names == int(nvtx_step::count));

nvtxDomainHandle_t halox_domain() {
  static const nvtxDomainHandle_t d = nvtxDomainCreateA("halox");
  return d;
}
}  // namespace

nvtx_names::nvtx_names(const std::string& label, bool on, const std::vector<int>& send_peers,
                       const std::vector<int>& recv_peers) {
  if (!on) return;
  const nvtxDomainHandle_t d = halox_domain();
  domain_ = d;
  auto name = [&](const std::string& what) -> void* {
    return nvtxDomainRegisterStringA(d, (label + ": " + what).c_str());
  };
  for (int k = 0; k < int(nvtx_phase::count); ++k) names_[k] = name(phase_names[k]);
  for (int t = 0; t < int(nvtx_transport::count); ++t)
    for (int k = 0; k < int(nvtx_step::count); ++k)
      step_names_[t][k] = name(std::string(transport_names[t]) + " " + step_names[k]);
  for (int peer : send_peers) pack_names_.push_back(name("pack for rank " + std::to_string(peer)));
  for (int peer : recv_peers)
    unpack_names_.push_back(name("unpack from rank " + std::to_string(peer)));
}

namespace {
void push_registered(void* domain, void* name) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = static_cast<nvtxStringHandle_t>(name);
  (void)nvtxDomainRangePushEx(static_cast<nvtxDomainHandle_t>(domain), &a);
}
}  // namespace

void nvtx_names::push(nvtx_phase p) const {
  push_registered(domain_, names_[int(p)]);
}

void nvtx_names::push_message(bool pack, std::size_t m) const {
  const auto& names = pack ? pack_names_ : unpack_names_;
  push_registered(domain_, m < names.size()
                               ? names[m]
                               : names_[int(pack ? nvtx_phase::pack : nvtx_phase::unpack)]);
}

void nvtx_names::push_step(nvtx_transport t, nvtx_step s) const {
  push_registered(domain_, step_names_[int(t)][int(s)]);
}

void nvtx_names::pop() const {
  (void)nvtxDomainRangePop(static_cast<nvtxDomainHandle_t>(domain_));
}

bool nvtx_built() noexcept {
  return true;
}

}  // namespace halox::detail
