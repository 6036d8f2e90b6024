#pragma once
/// @file
/// The exchange's messages that go through MPI as they are (route mpi, gpu_aware,
/// host_staged): persistent requests over the send and receive buffers (mpi_channels), each
/// receive unpacked by the exchange's host steps as it arrives.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <mpi.h>

#include "program/program.hpp"
#include "transport/carrier.hpp"
#include "transport/mpi_channels.hpp"

namespace halox::detail {

class mpi_carrier final : public carrier {
 public:
  /// `sends`/`recvs`: the messages the route table sends through MPI, a subset of the program's
  /// `all_sends`/`all_recvs` in their order (steps are called with the program's indices);
  /// `chunk`: the agreed piece size (mpi_channels).
  mpi_carrier(MPI_Comm comm, const step_runner& steps, const std::vector<message>& sends,
              const std::vector<message>& all_sends, const std::byte* send_buf,
              const std::vector<message>& recvs, const std::vector<message>& all_recvs,
              std::byte* recv_buf, std::size_t chunk);

  void do_post_receives(std::uint64_t g) override;
  /// Starts every send message (packed already) in the program's order.
  void do_post_sends(std::uint64_t g) override;
  progress_report do_progress() override;
  void do_complete() override;
  void waiting_for(std::vector<std::string>& out) const override;

  /// Packs (host steps) and starts send message m of the program, which must go through MPI:
  /// instead of post_sends(), for a mode that packs each message just before its send.
  void pack_and_send(std::size_t m);
  /// Whether program send message m goes through MPI.
  bool sends(std::size_t m) const { return send_channel_[m] >= 0; }
  /// Whether `peer` sends this rank a message through MPI.
  bool receives_from(int peer) const;
  std::size_t send_count() const { return send_message_.size(); }
  /// The channels, for host staging in pieces (staging_pipeline) over the same requests.
  mpi_channels& channels() { return channels_; }

 private:
  bool receive(bool block);

  const step_runner& steps_;
  mpi_channels channels_;
  std::vector<std::size_t> send_message_;  // program index of each channel send message
  std::vector<int> send_channel_;          // channel index of each program send (-1: not MPI)
  std::vector<std::size_t> recv_message_;  // program index of each channel receive message
  std::vector<int> recv_peer_;             // peer of each channel receive message
  std::vector<int> done_;                  // scratch for test_recvs
  std::size_t arrived_ = 0;                // receive messages complete in this exchange
  int rank_ = 0;                           // for error messages
};

}  // namespace halox::detail
