// Builds without CUDA: there are no device fields, so no exchange runs over CUDA IPC.
#include "transport/peer_ipc.hpp"

namespace halox::detail {

void peer_ipc::unfinished(std::vector<int>&, std::vector<int>&) const {}

struct peer_ipc::impl {};

std::unique_ptr<peer_ipc> peer_ipc::attach(MPI_Comm, const exchange_program&,
                                           const message_buffers&, const route_table&,
                                           std::string&) {
  return nullptr;
}
peer_ipc::peer_ipc(std::unique_ptr<impl> p) : p_(std::move(p)) {}
peer_ipc::~peer_ipc() = default;
bool peer_ipc::device_signalled() const {
  return false;
}
const device_signals& peer_ipc::signals() const {
  static const device_signals none;
  return none;
}
void peer_ipc::start() {}
const device_steps& peer_ipc::steps(int) const {
  static const device_steps none;
  return none;
}
bool peer_ipc::alternates() const {
  return false;
}
bool peer_ipc::carries_all() const {
  return false;
}
const std::vector<int>& peer_ipc::send_peers() const {
  static const std::vector<int> none;
  return none;
}
const std::vector<int>& peer_ipc::recv_peers() const {
  return send_peers();
}
const std::string& peer_ipc::how() const {
  static const std::string none;
  return none;
}
bool peer_ipc::cleared(std::uint64_t, bool) {
  return true;
}
void peer_ipc::signal_ready() {}
void peer_ipc::wait_ready() {}
bool peer_ipc::test_ready() {
  return true;
}
void peer_ipc::wait_sends() {}
bool peer_ipc::test_sends() {
  return true;
}

}  // namespace halox::detail
