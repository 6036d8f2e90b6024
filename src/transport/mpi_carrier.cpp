// The exchange's messages through MPI (see transport/mpi_carrier.hpp).
#include "transport/mpi_carrier.hpp"

#include <algorithm>

#include "halox/core/error.hpp"
#include "mpi/check.hpp"

namespace halox::detail {

namespace {

// The program index of each message of `subset` (same peers, same order).
std::vector<std::size_t> indices_of(const std::vector<message>& subset,
                                    const std::vector<message>& all) {
  std::vector<std::size_t> out;
  for (const auto& m : subset)
    for (std::size_t k = 0; k < all.size(); ++k)
      if (all[k].peer == m.peer) out.push_back(k);
  return out;
}

}  // namespace

mpi_carrier::mpi_carrier(MPI_Comm comm, const step_runner& steps, const std::vector<message>& sends,
                         const std::vector<message>& all_sends, const std::byte* send_buf,
                         const std::vector<message>& recvs, const std::vector<message>& all_recvs,
                         std::byte* recv_buf, std::size_t chunk)
    : carrier(nvtx_transport::mpi),
      steps_(steps),
      channels_(comm, sends, send_buf, recvs, recv_buf, chunk),
      send_message_(indices_of(sends, all_sends)),
      send_channel_(all_sends.size(), -1),
      recv_message_(indices_of(recvs, all_recvs)),
      done_(recvs.size() + 1) {
  mpi::check(MPI_Comm_rank(comm, &rank_), "MPI_Comm_rank", -1, "exchange set-up");
  for (std::size_t k = 0; k < send_message_.size(); ++k) send_channel_[send_message_[k]] = int(k);
  for (const auto& m : recvs) recv_peer_.push_back(m.peer);
}

void mpi_carrier::do_post_receives(std::uint64_t) {
  channels_.start_recvs();
  arrived_ = 0;
}

void mpi_carrier::pack_and_send(std::size_t m) {
  steps_.pack(m);
  channels_.start_send(std::size_t(send_channel_[m]));
}

void mpi_carrier::do_post_sends(std::uint64_t) {
  for (std::size_t k = 0; k < send_message_.size(); ++k) channels_.start_send(k);
}

bool mpi_carrier::receive(bool block) {
  while (arrived_ < recv_message_.size()) {
    if (block) {
      const int c = channels_.wait_recv();
      require(c >= 0, "rank {}: internal error: no MPI receive left to wait for", rank_);
      ++arrived_;
      if (!steps_.ordered()) steps_.unpack(recv_message_[std::size_t(c)]);
    } else {
      const int n = channels_.test_recvs(done_.data());
      arrived_ += std::size_t(n);
      if (!steps_.ordered())
        for (int k = 0; k < n; ++k) steps_.unpack(recv_message_[std::size_t(done_[k])]);
      if (arrived_ < recv_message_.size()) return false;
    }
  }
  return true;
}

progress_report mpi_carrier::do_progress() {
  const std::size_t before = arrived_;
  const bool received = receive(false);
  return {arrived_ != before, received && channels_.test_sends()};
}

void mpi_carrier::do_complete() {
  receive(true);
  channels_.wait_sends();
}

bool mpi_carrier::receives_from(int peer) const {
  return std::find(recv_peer_.begin(), recv_peer_.end(), peer) != recv_peer_.end();
}

void mpi_carrier::waiting_for(std::vector<std::string>& out) const {
  channels_.waiting_for(out);
}

}  // namespace halox::detail
