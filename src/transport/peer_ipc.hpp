#pragma once
/// @file
/// Node-local direct transport for device fields: the pack kernel writes each message straight
/// into the receiving rank's GPU memory through CUDA IPC — with device signals into the
/// receiver's halos where the regions allow, ordered by flags in GPU memory; otherwise into its
/// receive buffer, which exists twice (exchange g writes copy g mod 2), with two empty MPI
/// messages per peer and exchange (clear-to-send, data-ready). Compiles without nvcc.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <mpi.h>

#include "pack/device_copy.hpp"
#include "program/message_buffers.hpp"
#include "program/placement.hpp"
#include "program/program.hpp"
#include "transport/carrier.hpp"

namespace halox::detail {

class route_table;

class peer_ipc final : public carrier {
 public:
  /// Sets up the messages the route table sends through CUDA IPC (route ipc or ipc_signalled:
  /// both ranks of each pair agreed, see transport/routes.hpp). Those messages arrive in a
  /// device buffer whose IPC handle goes to their senders once; steps() places the program's
  /// device steps (pointing into `bufs`) accordingly; the other messages keep going through MPI or
  /// NCCL. Returns null when no message of this rank uses CUDA IPC. Collective over the ranks with
  /// such messages (pairwise). A message whose size differs between the sender's and the receiver's
  /// plan sets `problem`, for the caller to raise on every rank once set-up is complete.
  static std::unique_ptr<peer_ipc> attach(MPI_Comm comm, const exchange_program& prog,
                                          const message_buffers& bufs, const route_table& routes,
                                          std::string& problem);
  ~peer_ipc() override;
  peer_ipc(const peer_ipc&) = delete;
  peer_ipc& operator=(const peer_ipc&) = delete;

  /// Whether the kernels order the exchange themselves (device_signals below): route
  /// ipc_signalled, taken when, on every rank, every message uses CUDA IPC and no peer shares
  /// the rank's GPU, the unpack is not ordered (reverse exchanges) and `ipc_device_signals` is
  /// set. Then no host waits or MPI
  /// messages remain per exchange and the control calls below are not used.
  bool device_signalled() const;
  /// The flags for device_copier::use_signals: this rank's start flag (read by its senders),
  /// its receivers' start flags, the data-ready flags the senders write into the receiver's
  /// memory. With them, messages whose steps allow it are written straight into the receiver's
  /// halo (their pack steps become field-to-field copies and their unpack steps are dropped).
  const device_signals& signals() const;

  /// The program's device steps placed where this transport puts the messages: into copy
  /// `copy` of the receivers' buffers (exchange g uses copy g mod 2 under the MPI handshake,
  /// and with device signals for messages up to 256 KiB; larger ones may go straight into the
  /// halos).
  const device_steps& steps(int copy) const;
  /// Whether exchanges alternate between two placements (steps(0), steps(1)): under the MPI
  /// handshake always, with device signals where some message alternates.
  bool alternates() const;
  /// Whether every message of this rank travels through CUDA IPC (no staging buffer is used).
  bool carries_all() const;
  /// The peers this rank sends to (receives from) through CUDA IPC, and how, for describe().
  const std::vector<int>& send_peers() const;
  const std::vector<int>& recv_peers() const;
  const std::string& how() const;

  /// The MPI handshake as a carrier (not used with device signals):
  /// - post_receives(g), the receiver's side at the start of exchange g (after the unpack of
  ///   g-1 has run): posts the data-ready receives of g and tells every sender that the copy
  ///   of the receive buffer for g+1 is free;
  /// - clear_to_send(g, block), the sender's side: whether every receiver has freed the copy
  ///   of its receive buffer that exchange g writes (exchange 1: at once; g > 1: once the
  ///   receiver has started g-1). Call it for consecutive exchanges, each until it returns
  ///   true, before packing that exchange;
  /// - post_sends(g): tells every receiver that its data is in place (after the pack kernel);
  /// - progress()/complete(): every sender's data-ready message, this rank's control sends;
  /// - waiting_for(): the senders whose data-ready has not arrived, the receivers whose
  ///   clear-to-send has not.
  void do_post_receives(std::uint64_t g) override;
  bool do_clear_to_send(std::uint64_t g, bool block) override;
  void do_post_sends(std::uint64_t g) override;
  progress_report do_progress() override;
  void do_complete() override;
  void waiting_for(std::vector<std::string>& out) const override;

  struct impl;

 private:
  explicit peer_ipc(std::unique_ptr<impl> p);
  std::unique_ptr<impl> p_;
};

}  // namespace halox::detail
