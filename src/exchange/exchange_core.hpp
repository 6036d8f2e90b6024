#pragma once
// What every transport mode of a communication object shares (the program, the communicator,
// the carriers set up for it, the GPU copier), and the interface of a mode: one
// `exchange_mode` per object, chosen once at construction (see make_mode).
//
// Private to src/exchange: the public halo_exchange holds an exchange_state (halo_exchange.cpp),
// which owns a core and its mode and adds what is the same for every mode (errors end the
// object, one exchange in flight, generations for handles).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <boost/mpi/communicator.hpp>

#include "boundary/device_boundary.hpp"
#include "core/nvtx.hpp"
#include "halox/core/stream.hpp"
#include "pack/device_copy.hpp"
#include "program/message_buffers.hpp"
#include "program/program.hpp"
#include "transport/carrier.hpp"
#include "transport/mpi_carrier.hpp"
#include "transport/nccl_carrier.hpp"
#include "transport/peer_ipc.hpp"
#include "transport/routes.hpp"
#include "transport/shm_carrier.hpp"
#include "transport/shm_mailbox.hpp"
#include "transport/staging_pipeline.hpp"

namespace halox::detail {

/// What every mode shares, set up once: the program and its host steps, the route table, the
/// carriers (one per transport: transport/carrier.hpp), the GPU copier. A mode drives the
/// carriers it uses directly and asks the core for the exchange's steps: the host steps of a
/// message (step_runner, which the carriers call as messages arrive) and the device side
/// (the pack and unpack kernels, the staging copies).
class exchange_core final : public step_runner {
 public:
  /// Collective: agreement with every peer, the route table (the one route decision, see
  /// decide_routes), the buffers, the carriers, the GPU copier. `layout`: the compiled program
  /// (program/program.hpp). Throws (on every rank) when peers disagree or a transport found a
  /// message of the wrong size.
  exchange_core(const boost::mpi::communicator& c, exchange_program layout);

  int rank() const { return comm_.rank(); }
  MPI_Comm communicator() const { return MPI_Comm(comm_); }
  const exchange_program& program() const { return prog_; }
  const route_table& routes() const { return routes_; }
  /// The exchange running now, from 1 (the object counts start()s: next_exchange()).
  std::uint64_t generation() const { return generation_; }
  void next_exchange() {
    ++generation_;
    ordered_done_ = false;
  }

  /// The carriers set up for this object (null where it has none; the MPI carrier always
  /// exists, possibly with no message).
  mpi_carrier& mpi() { return mpi_; }
  shm_carrier* shm() const { return shm_.get(); }
  peer_ipc* ipc() const { return ipc_.get(); }
  nccl_carrier* nccl() const { return nccl_.get(); }
  staging_pipeline* pipeline() const { return pipe_.get(); }
  device_copier* copier() const { return gpu_.get(); }
  device_boundary* boundary() const { return rules_.get(); }
  /// The exchange object's NVTX ranges: the host pack and unpack of each message get one, and
  /// every carrier's steps.
  void use_nvtx(const nvtx_names* n);

  /// Host steps of message m (the program's index), in the copy of the buffers this exchange
  /// uses (generation mod 2).
  void pack(std::size_t m) const override;
  void unpack(std::size_t m) const override;
  /// Whether the unpack waits for every message and runs in peer order (reverse exchanges).
  bool ordered() const override { return prog_.ordered_host_unpack; }
  const nvtx_names& ranges() const override { return *nvtx_; }
  /// Packs every send message's host steps (host fields beside device ones).
  void pack_all() const;
  /// The host fields' local copies (periodic images on this rank).
  void run_local() const;
  /// Ordered exchanges: once every message arrived, unpacks them in peer order; true when it
  /// did now (once per exchange).
  bool unpack_ordered();

  /// Device side. The buffers are reused by the host's clock (MPI, the CUDA IPC handshake):
  /// waits for the last unpack, which may still read them.
  void reuse_buffers();
  /// Stream order (NCCL) or flags in GPU memory (device signals) guard the buffers.
  void buffers_guarded() { unpack_pending_ = false; }
  /// The fused pack kernel on halox's stream; `by_generation`: the generation picks the copy
  /// of the receivers' buffers (CUDA IPC).
  void launch_pack(bool by_generation = false);
  /// Host staging by copies: the packed messages to the host buffer MPI sends from.
  void stage_out();
  /// Completes the unpack: the user's stream waits for it (scheduled wait, `before` set), or
  /// the host does.
  void finish_unpack(stream_t before);
  /// test(): enqueues the unpack once; true when it has run (never blocks).
  bool unpack_ready();

 private:
  /// What the route decision produces: the table, the buffers, the program pointed into them,
  /// shared memory (the one transport whose outcome the table takes), a size mismatch found.
  struct routing {
    route_table routes;
    message_buffers buffers;
    exchange_program prog;
    std::unique_ptr<shm_mailbox> shm;
    std::string problem;
  };
  static routing decide_routes(MPI_Comm comm, exchange_program layout);
  exchange_core(const boost::mpi::communicator& c, routing&& r);

  boost::mpi::communicator comm_;
  route_table routes_;                    // each message's route (and the locality it came from)
  message_buffers buffers_;               // allocated once, where the table put the messages
  exchange_program prog_;                 // its steps point into buffers_; never changed
  std::string transport_problem_;         // a size mismatch a transport found while setting up
  std::unique_ptr<peer_ipc> ipc_;         // null unless messages travel through CUDA IPC
  std::unique_ptr<shm_mailbox> mailbox_;  // null unless host messages use shared memory
  std::unique_ptr<shm_carrier> shm_;      // drives mailbox_
  std::unique_ptr<nccl_carrier> nccl_;    // staging nccl: the messages CUDA IPC does not carry
  /// The program's host steps placed where the transports put the messages, for exchanges
  /// that use copy 0 and copy 1 (g mod 2) of double buffers (shared memory).
  exchange_program::steps host_pack_[2], host_unpack_[2];
  /// Host staging by copies between the device buffers and the MPI ones (not where CUDA IPC
  /// carries every message).
  bool staging_copies_;
  mpi_carrier mpi_;                     // the messages the route table sends through MPI
  std::unique_ptr<device_copier> gpu_;  // null without device fields
  /// Host staging by copies in pieces (device fields through MPI alone); null otherwise.
  std::unique_ptr<staging_pipeline> pipe_;
  bool ordered_done_ = false;  // an ordered exchange has been unpacked
  std::uint64_t generation_ = 0;
  const nvtx_names* nvtx_ = &nvtx_off();  // the exchange object's ranges (use_nvtx)
  bool unpack_pending_ = false;  // an unpack is enqueued that may still read the receive buffer
  /// Boundary rules of device fields, launched after the unpack (null without them). Declared
  /// after `gpu_`: destroyed before the stream its launches use.
  std::unique_ptr<device_boundary> rules_;

  const exchange_program::steps& pack_steps() const { return host_pack_[generation_ % 2]; }
  const exchange_program::steps& unpack_steps() const { return host_unpack_[generation_ % 2]; }
  /// Device fields: enqueues this exchange's unpack once (test() may have done it already),
  /// after the copy into device memory under copy staging.
  void launch_unpack();

  /// Set-up: the steps placed where the transports put the messages, the GPU copier; what
  /// describe() says of CUDA IPC's routes (the table holds the others').
  void place_steps();
  void describe_routes();
};

/// One transport mode of a communication object. start() begins exchange `core_.generation()`
/// (already counted), wait() completes it, test() polls it; `after`/`before` are the user's
/// streams of a scheduled exchange (null for start()/wait()). None of them waits for a peer's
/// progress in start(). A mode drives its carriers (`carriers_`, which it fills) and the
/// core's steps.
class exchange_mode {
 public:
  explicit exchange_mode(exchange_core& c) : core_(c) {}
  virtual ~exchange_mode() = default;
  exchange_mode(const exchange_mode&) = delete;
  exchange_mode& operator=(const exchange_mode&) = delete;

  virtual void start(stream_t after) = 0;
  virtual void wait(stream_t before) = 0;
  virtual bool test() = 0;
  /// After an error: forget the exchange in flight (the object will not start another).
  virtual void abandon() {
    for (carrier* c : carriers_) c->abandon();
  }
  /// Why a CUDA graph cannot capture this mode's exchanges (the host must act in every one),
  /// or null where it can: its steady state is stream work alone (docs/graphs.md).
  virtual const char* capture_blocker() const = 0;
  /// The next start() is being captured into a CUDA graph.
  virtual void captured() {}
  /// The mode, for describe().
  virtual const char* name() const = 0;
  /// Whether wait(`before`) waits on the host (a scheduled wait with `before` set may not):
  /// such waits are polled through test() under exchange_options::wait_timeout. Kernels that
  /// wait for peers give up by themselves (device signals).
  virtual bool waits_on_host(stream_t) const { return true; }
  /// For a wait that gave up: what this rank still waits for, one "rank P (transport: what)"
  /// item per wait, from every carrier of the mode.
  void waiting_for(std::vector<std::string>& out) const {
    for (const carrier* c : carriers_) c->waiting_for(out);
  }

 protected:
  exchange_core& core_;
  std::vector<carrier*> carriers_;  // the carriers this mode drives
};

/// The mode of this object, from what set-up found: host fields only (MPI and shared memory),
/// device fields through MPI (with any host fields), device local copies only, CUDA IPC with an
/// MPI handshake (NCCL for the other peers under staging nccl), CUDA IPC ordered by device
/// signals, device fields through NCCL.
std::unique_ptr<exchange_mode> make_mode(exchange_core& c);

std::unique_ptr<exchange_mode> make_host_mode(exchange_core& c);
std::unique_ptr<exchange_mode> make_device_mode(exchange_core& c);
std::unique_ptr<exchange_mode> make_device_local_mode(exchange_core& c);
std::unique_ptr<exchange_mode> make_ipc_handshake_mode(exchange_core& c);
std::unique_ptr<exchange_mode> make_ipc_signalled_mode(exchange_core& c);
std::unique_ptr<exchange_mode> make_device_nccl_mode(exchange_core& c);

}  // namespace halox::detail
