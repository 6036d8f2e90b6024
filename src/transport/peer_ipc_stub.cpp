// Builds without CUDA: there are no device fields, so no exchange runs over CUDA IPC.
#include "transport/peer_ipc.hpp"

namespace halox::detail {

void peer_ipc::waiting_for(std::vector<std::string>&) const {}

struct peer_ipc::impl {};

std::unique_ptr<peer_ipc> peer_ipc::attach(MPI_Comm, const exchange_program&,
                                           const message_buffers&, const route_table&,
                                           std::string&) {
  return nullptr;
}
peer_ipc::peer_ipc(std::unique_ptr<impl> p) : carrier(nvtx_transport::ipc), p_(std::move(p)) {}
peer_ipc::~peer_ipc() = default;
bool peer_ipc::device_signalled() const {
  return false;
}
const device_signals& peer_ipc::signals() const {
  static const device_signals none;
  return none;
}
void peer_ipc::do_post_receives(std::uint64_t) {}
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
bool peer_ipc::do_clear_to_send(std::uint64_t, bool) {
  return true;
}
void peer_ipc::do_post_sends(std::uint64_t) {}
progress_report peer_ipc::do_progress() {
  return {false, true};
}
void peer_ipc::do_complete() {}

}  // namespace halox::detail
