// Builds without NCCL: the nccl staging policy is refused at make_exchange, and asking for an
// NCCL communicator is an error.
#include "halox/core/error.hpp"
#include "transport/nccl_carrier.hpp"
#include "transport/nccl_comm.hpp"

namespace halox::detail {

namespace {
[[noreturn]] void no_nccl() {
  fail("staging 'nccl': {}", nccl_unavailable_reason());
}
}  // namespace

bool nccl_built() noexcept {
  return false;
}
bool nccl_available() {
  return false;
}
std::string nccl_unavailable_reason() {
  return "this halox was built without NCCL (HALOX_ENABLE_NCCL)";
}

nccl_comm::~nccl_comm() = default;
std::shared_ptr<nccl_comm> nccl_comm::shared(MPI_Comm) {
  no_nccl();
}
std::shared_ptr<nccl_comm> nccl_comm::create(MPI_Comm, int, int, int) {
  no_nccl();
}
void nccl_comm::enqueue_group(void*, const nccl_call*, std::size_t, const nccl_call*, std::size_t,
                              unsigned long long) {
  no_nccl();
}
void nccl_comm::connect(const std::vector<int>&) {
  no_nccl();
}
void nccl_comm::check_async() {}
void nccl_comm::abort(const std::string&) {}
void nccl_comm::require_usable() const {}
long nccl_comm::created_count() noexcept {
  return 0;
}
long nccl_comm::live_count() noexcept {
  return 0;
}

std::unique_ptr<nccl_carrier> nccl_carrier::attach(MPI_Comm, bool, const exchange_program&,
                                                   const std::vector<message>&, const std::byte*,
                                                   const std::vector<message>&, std::byte*, bool) {
  no_nccl();
}
nccl_carrier::nccl_carrier(std::shared_ptr<nccl_comm>, const std::vector<message>&,
                           const std::vector<message>&, const void*, std::size_t, void*,
                           std::size_t)
    : carrier(nvtx_transport::nccl) {
  no_nccl();
}
nccl_carrier::nccl_carrier(std::shared_ptr<nccl_comm>, const std::vector<int>&, std::size_t)
    : carrier(nvtx_transport::nccl) {
  no_nccl();
}
void nccl_carrier::assign(const nccl_call*, std::size_t, const nccl_call*, std::size_t) {}
nccl_carrier::~nccl_carrier() = default;
void nccl_carrier::register_large(MPI_Comm, bool) {}
void nccl_carrier::enqueue(void*, unsigned long long) {}
void nccl_carrier::connect() {}
bool nccl_carrier::send_direct(int) const {
  return false;
}
bool nccl_carrier::recv_direct(int) const {
  return false;
}
std::string nccl_carrier::note(bool, int) const {
  return {};
}
void nccl_carrier::recut(bool, int, std::vector<nccl_call>, bool) {}
void nccl_carrier::check_async() {}
void nccl_carrier::waiting_for(std::vector<std::string>&) const {}
void nccl_carrier::abort(const std::string&) {}
void nccl_carrier::bind_thread() const {}
std::string nccl_carrier::describe() const {
  return {};
}

}  // namespace halox::detail
