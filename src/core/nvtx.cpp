// NVTX v3 ranges (core/nvtx.hpp): CUDA builds, header-only NVTX from the CUDA toolkit.
#include "core/nvtx.hpp"

#include <nvtx3/nvToolsExt.h>

namespace halox::detail {

namespace {
const char* const phase_names[] = {"set-up",        "start", "wait",  "schedule_exchange",
                                   "schedule_wait", "pack",  "unpack"};
static_assert(sizeof phase_names / sizeof *phase_names == int(nvtx_phase::count));

nvtxDomainHandle_t halox_domain() {
  static const nvtxDomainHandle_t d = nvtxDomainCreateA("halox");
  return d;
}
}  // namespace

nvtx_names::nvtx_names(const std::string& label, bool on) {
  if (!on) return;
  const nvtxDomainHandle_t d = halox_domain();
  domain_ = d;
  for (int k = 0; k < int(nvtx_phase::count); ++k)
    names_[k] = nvtxDomainRegisterStringA(d, (label + ": " + phase_names[k]).c_str());
}

void nvtx_names::push(nvtx_phase p) const {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = static_cast<nvtxStringHandle_t>(names_[int(p)]);
  (void)nvtxDomainRangePushEx(static_cast<nvtxDomainHandle_t>(domain_), &a);
}

void nvtx_names::pop() const {
  (void)nvtxDomainRangePop(static_cast<nvtxDomainHandle_t>(domain_));
}

bool nvtx_built() noexcept {
  return true;
}

}  // namespace halox::detail
