#pragma once
// What every transport mode of a communication object shares (the program, the communicator,
// the transports set up for it, the MPI channels, the GPU copier), and the interface of a
// mode: one `exchange_mode` per object, chosen once at construction (see make_mode).
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
#include "transport/mpi_channels.hpp"
#include "transport/nccl_carrier.hpp"
#include "transport/peer_ipc.hpp"
#include "transport/routes.hpp"
#include "transport/shm_mailbox.hpp"
#include "transport/staging_pipeline.hpp"

namespace halox::detail {

class mpi_messages;
class host_steps;
class device_work;
class exchange_clock;

/// What every mode shares, set up once: the program, the route table, the transports, the MPI
/// channels, the GPU copier. Its data is private: the exchange object reads what describe() and
/// its checks need through the accessors below, and each mode runs exchanges
/// through the narrow views declared after this class (mpi_messages, host_steps, device_work,
/// exchange_clock) and the transports it uses.
class exchange_core {
 public:
  /// Collective: agreement with every peer, the route table (the one route decision, see
  /// decide_routes), the buffers, the node-local transports, the MPI requests of the remaining
  /// messages, the GPU copier. `layout`: the compiled program (program/program.hpp). Throws (on
  /// every rank) when peers disagree or a transport found a message of the wrong size.
  exchange_core(const boost::mpi::communicator& c, exchange_program layout);

  int rank() const { return comm_.rank(); }
  MPI_Comm communicator() const { return MPI_Comm(comm_); }
  const exchange_program& program() const { return prog_; }
  const route_table& routes() const { return routes_; }
  /// The exchange running now, from 1 (the object counts start()s: next_exchange()).
  std::uint64_t generation() const { return generation_; }
  void next_exchange() { ++generation_; }

  /// The transports and engines set up for this object (null where it has none).
  peer_ipc* ipc() const { return ipc_.get(); }
  shm_mailbox* shm() const { return shm_.get(); }
  nccl_carrier* nccl() const { return nccl_.get(); }
  staging_pipeline* pipeline() const { return pipe_.get(); }
  device_copier* copier() const { return gpu_.get(); }
  device_boundary* boundary() const { return rules_.get(); }
  /// The exchange object's NVTX ranges: the host pack and unpack of each message get one.
  void use_nvtx(const nvtx_names* n) { nvtx_ = n; }
  /// For a wait that gave up (exchange_options::wait_timeout): what this rank still waits for
  /// through MPI and the CUDA IPC handshake, one "rank P (route: what)" item per wait, in
  /// `out`. Never blocks.
  void unfinished(std::vector<std::string>& out) const;

 private:
  friend class mpi_messages;
  friend class host_steps;
  friend class device_work;
  friend class exchange_clock;

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
  route_table routes_;                  // each message's route (and the locality it came from)
  message_buffers buffers_;             // allocated once, where the table put the messages
  exchange_program prog_;               // its steps point into buffers_; never changed
  std::string transport_problem_;       // a size mismatch a transport found while setting up
  std::unique_ptr<peer_ipc> ipc_;       // null unless messages travel through CUDA IPC
  std::unique_ptr<shm_mailbox> shm_;    // null unless host messages travel through shared memory
  std::unique_ptr<nccl_carrier> nccl_;  // staging nccl: the messages CUDA IPC does not carry
  /// The program's host steps placed where the transports put the messages, for exchanges
  /// that use copy 0 and copy 1 (g mod 2) of double buffers (shared memory).
  exchange_program::steps host_pack_[2], host_unpack_[2];
  /// Host staging by copies between the device buffers and the MPI ones (not where CUDA IPC
  /// carries every message).
  bool staging_copies_;
  /// The messages the route table sends through MPI (mpi, gpu_aware, host_staged).
  const std::vector<message> mpi_send_list_;
  const std::vector<message> mpi_recv_list_;
  mpi_channels channels_;                  // data messages that go through MPI
  std::vector<std::size_t> recv_message_;  // program index of each channel receive message
  std::unique_ptr<device_copier> gpu_;     // null without device fields
  /// Host staging by copies in pieces (device fields through MPI alone); null otherwise.
  std::unique_ptr<staging_pipeline> pipe_;
  std::vector<int> done_;      // scratch for test_recvs
  std::size_t arrived_ = 0;    // MPI receive messages complete in this exchange
  bool ordered_done_ = false;  // an ordered exchange has been unpacked
  std::uint64_t generation_ = 0;
  const nvtx_names* nvtx_ = &nvtx_off();  // the exchange object's ranges (use_nvtx)
  bool unpack_pending_ = false;  // an unpack is enqueued that may still read the receive buffer
  /// Boundary rules of device fields, launched after the unpack (null without them). Declared
  /// after `gpu_`: destroyed before the stream its launches use.
  std::unique_ptr<device_boundary> rules_;

  /// The host steps of this exchange (the copy it uses: generation mod 2).
  const exchange_program::steps& pack_steps() const { return host_pack_[generation_ % 2]; }
  const exchange_program::steps& unpack_steps() const { return host_unpack_[generation_ % 2]; }
  /// Host steps of message m (the program's index), from this exchange's step tables.
  void pack(std::size_t m) const;
  void unpack(std::size_t m) const;
  /// MPI receives of this exchange: unpacks each message as it arrives (host steps; none for
  /// ordered exchanges, see unpack_ordered), blocking until all arrived with `block`. True when
  /// all arrived.
  bool receive_mpi(bool block);
  /// Ordered exchanges (reverse): once every message arrived, unpacks them in peer order; true
  /// when it did now (once per exchange).
  bool unpack_ordered();
  /// Device fields: enqueues this exchange's unpack once (test() may have done it already),
  /// after the copy into device memory under copy staging.
  void launch_unpack();
  /// Completes the unpack: the user's stream waits for it (scheduled wait, `before` set), or the
  /// host does.
  void finish_unpack(stream_t before);
  /// test(): enqueues the unpack once; true when it has run (never blocks).
  bool unpack_ready();

  /// Set-up: the steps placed where the transports put the messages, the GPU copier; what
  /// describe() says of CUDA IPC's routes (the table holds the others').
  void place_steps();
  void describe_routes();
};

/// A mode's view of the messages that go through MPI (the channels, in the program's order).
class mpi_messages {
 public:
  explicit mpi_messages(exchange_core& c) : c_(c) {}
  void start_recvs() { c_.channels_.start_recvs(); }
  /// Starts channel send k, or every one.
  void start_send(std::size_t k) { c_.channels_.start_send(k); }
  void start_sends() {
    for (std::size_t k = 0; k < c_.mpi_send_list_.size(); ++k) c_.channels_.start_send(k);
  }
  void wait_sends() { c_.channels_.wait_sends(); }
  bool test_sends() { return c_.channels_.test_sends(); }
  /// Receives of this exchange, each unpacked (host steps) as it arrives unless the exchange
  /// is ordered; blocks until all arrived with `block`. True when all arrived.
  bool receive(bool block) { return c_.receive_mpi(block); }
  /// Receive messages complete in this exchange.
  std::size_t arrived() const { return c_.arrived_; }
  /// Whether `peer` sends this rank a message through MPI.
  bool receives_from(int peer) const;

 private:
  exchange_core& c_;
};

/// A mode's view of the program's host steps, in the copy of the buffers this exchange uses.
class host_steps {
 public:
  explicit host_steps(exchange_core& c) : c_(c) {}
  std::size_t sends() const { return c_.prog_.sends.size(); }
  std::size_t recvs() const { return c_.prog_.recvs.size(); }
  void pack(std::size_t m) const { c_.pack(m); }
  void unpack(std::size_t m) const { c_.unpack(m); }
  /// Packs every send message's host steps (host fields beside device ones).
  void pack_all() const {
    for (std::size_t m = 0; m < sends(); ++m) c_.pack(m);
  }
  /// The host fields' local copies (periodic images on this rank).
  void run_local() const {
    for (const auto& op : c_.prog_.local_ops) run(op);
  }
  /// Whether the unpack waits for every message and runs in peer order (reverse exchanges).
  bool ordered() const { return c_.prog_.ordered_unpack; }
  /// Ordered exchanges: unpacks every message in peer order, once per exchange; true when it
  /// did now.
  bool unpack_ordered() const { return c_.unpack_ordered(); }

 private:
  exchange_core& c_;
};

/// A mode's view of the device side: the GPU copier on halox's stream, the staging copies and
/// the unpack that may still read the receive buffer.
class device_work {
 public:
  explicit device_work(exchange_core& c) : c_(c) {}
  /// The buffers are reused by the host's clock (MPI, the CUDA IPC handshake): waits for the
  /// last unpack, which may still read them.
  void reuse_buffers() {
    if (c_.unpack_pending_) c_.gpu_->synchronize(c_.rank());
    c_.unpack_pending_ = false;
  }
  /// Stream order (NCCL) or flags in GPU memory (device signals) guard the buffers.
  void buffers_guarded() { c_.unpack_pending_ = false; }
  void enter(stream_t after) { c_.gpu_->enter(after, c_.rank()); }
  /// The fused pack kernel; `by_generation`: the generation picks the copy of the receivers'
  /// buffers (CUDA IPC).
  void launch_pack(bool by_generation = false) {
    c_.gpu_->launch_pack(c_.rank(), by_generation ? c_.generation_ : 0);
  }
  /// Host staging by copies: the packed messages to the host buffer MPI sends from.
  void stage_out() {
    const auto& b = c_.buffers_;
    if (c_.staging_copies_)
      c_.gpu_->copy(b.send.get(), b.device_send.get(), c_.prog_.send_bytes, c_.rank());
  }
  void synchronize() { c_.gpu_->synchronize(c_.rank()); }
  void* stream() const { return c_.gpu_->stream(); }
  /// NCCL's group for this exchange, on halox's stream.
  void enqueue(nccl_carrier& n) { n.enqueue(c_.gpu_->stream(), c_.gpu_->capture()); }
  void finish_unpack(stream_t before) { c_.finish_unpack(before); }
  bool unpack_ready() { return c_.unpack_ready(); }
  /// Device signals (CUDA IPC) and graph replays that count exchanges on the device.
  void use_signals(const device_signals& s) { c_.gpu_->use_signals(s); }
  void count_on_device() { c_.gpu_->count_on_device(); }
  /// Local copies alone, on the user's stream.
  void launch_local(stream_t after) { c_.gpu_->launch_local(after, c_.rank()); }
  void wait_local(stream_t before) { c_.gpu_->wait_local(before, c_.rank()); }
  bool ready() { return c_.gpu_->ready(c_.rank()); }

 private:
  exchange_core& c_;
};

/// A mode's view of the exchange running now.
class exchange_clock {
 public:
  explicit exchange_clock(exchange_core& c) : c_(c) {}
  int rank() const { return c_.rank(); }
  std::uint64_t generation() const { return c_.generation_; }
  /// Resets the per-exchange counters at a start.
  void begin() {
    c_.arrived_ = 0;
    c_.ordered_done_ = false;
  }

 private:
  exchange_core& c_;
};

/// One transport mode of a communication object. start() begins exchange `clock_.generation()`
/// (already counted), wait() completes it, test() polls it; `after`/`before` are the user's
/// streams of a scheduled exchange (null for start()/wait()). None of them waits for a peer's
/// progress in start(). A mode holds the views of the core it uses, and its transports.
class exchange_mode {
 public:
  explicit exchange_mode(exchange_core& c) : clock_(c) {}
  virtual ~exchange_mode() = default;
  exchange_mode(const exchange_mode&) = delete;
  exchange_mode& operator=(const exchange_mode&) = delete;

  virtual void start(stream_t after) = 0;
  virtual void wait(stream_t before) = 0;
  virtual bool test() = 0;
  /// After an error: forget the exchange in flight (the object will not start another).
  virtual void abandon() {}
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
  /// For a wait that gave up: what this rank still waits for, one item per wait (see
  /// exchange_core::unfinished, which modes extend).
  virtual void waiting_for(const exchange_core& c, std::vector<std::string>& out) const {
    c.unfinished(out);
  }

 protected:
  exchange_clock clock_;
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
