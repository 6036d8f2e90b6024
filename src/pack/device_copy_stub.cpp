// Builds without CUDA: no device field can exist, so these are never reached in a correct
// program; they fail loudly if they are.
#include "halox/core/error.hpp"
#include "pack/device_copy.hpp"

namespace halox::detail {

struct device_copier::impl {};

device_copier::device_copier(const std::vector<copy_op>&, const std::vector<gather_op>&,
                             const std::vector<copy_op>&, const std::vector<gather_op>&,
                             const std::vector<copy_op>&, bool) {
  fail("device copies requested but this halox was built without CUDA (HALOX_ENABLE_CUDA=OFF)");
}
device_copier::~device_copier() = default;
void device_copier::use_signals(const device_signals&) {}
void device_copier::use_alternate(const std::vector<copy_op>&, const std::vector<gather_op>&,
                                  const std::vector<copy_op>&, const std::vector<gather_op>&) {}
void device_copier::count_on_device() {}
bool device_copier::counts_on_device() const {
  return false;
}
void device_copier::launch_pack(int, std::uint64_t) {}
void device_copier::launch_unpack(int, std::uint64_t) {}
void device_copier::launch_local(void*, int) {}
void device_copier::wait_local(void*, int) {}
void device_copier::copy(void*, const void*, std::size_t, int) {}
void device_copier::synchronize(int) {}
void device_copier::check_timeout(int) const {}
void device_copier::use_nvtx(const nvtx_names*) {}
bool device_copier::gpu_sample(float&) {
  return false;
}
void* device_copier::stream() const {
  return nullptr;
}
bool device_copier::ready(int) {
  return true;
}
bool device_copier::probe(void*, int) {
  return false;
}
void device_copier::enter(void*, int) {}
unsigned long long device_copier::capture() const {
  return 0;
}
void device_copier::signal(void*, int) {}
std::string device_copier::summary() const {
  return {};
}

}  // namespace halox::detail
