#pragma once
// What every transport mode of a communication object shares (the program, the communicator,
// the transports set up for it, the MPI channels, the GPU copier), and the interface of a
// mode: one `exchange_path` per object, chosen once at construction (see make_path).
//
// Private to src/exchange: the public halo_exchange holds an exchange_state (halo_exchange.cpp),
// which owns a core and its path and adds what is the same for every mode (errors end the
// object, one exchange in flight, generations for handles).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <boost/mpi/communicator.hpp>

#include "boundary/device_boundary.hpp"
#include "halox/core/stream.hpp"
#include "halox/program/program.hpp"
#include "pack/device_copy.hpp"
#include "transport/mpi_channels.hpp"
#include "transport/nccl_path.hpp"
#include "transport/peer_ipc.hpp"
#include "transport/routes.hpp"
#include "transport/shm_mailbox.hpp"
#include "transport/staging_pipeline.hpp"

namespace halox::detail {

struct exchange_core {
  /// Collective: agreement with every peer, the locality decision, the node-local transports,
  /// the MPI requests of the remaining messages, the GPU copier. Throws (on every rank) when
  /// peers disagree or a transport found a message of the wrong size.
  exchange_core(const boost::mpi::communicator& c, exchange_program p);

  boost::mpi::communicator comm;
  exchange_program prog;
  bool agreed;                       // every peer plans the same messages (checked first)
  route_table routes;                // each message's route (and the locality it came from)
  std::size_t chunk;                 // MPI messages cut at this size (every rank agreed; 0: not)
  std::string transport_problem;     // a size mismatch a transport found while setting up
  std::unique_ptr<peer_ipc> ipc;     // null unless messages travel through CUDA IPC
  std::unique_ptr<shm_mailbox> shm;  // null unless host messages travel through shared memory
  std::unique_ptr<nccl_path> nccl;   // staging nccl: the messages CUDA IPC does not carry
  /// The program's host steps placed where the transports put the messages, for exchanges
  /// that use copy 0 and copy 1 (g mod 2) of double buffers (shared memory).
  exchange_program::steps host_pack[2], host_unpack[2];
  /// Host staging by copies between the device buffers and the MPI ones (not where CUDA IPC
  /// carries every message).
  bool staging_copies;
  /// The messages the route table sends through MPI (mpi, gpu_aware, host_staged).
  const std::vector<message> mpi_send_list;
  const std::vector<message> mpi_recv_list;
  mpi_channels channels;                  // data messages that go through MPI
  std::vector<std::size_t> recv_message;  // program index of each channel receive message
  std::unique_ptr<device_copier> gpu;     // null without device fields
  /// Host staging by copies in pieces (device fields through MPI alone); null otherwise.
  std::unique_ptr<staging_pipeline> pipe;
  std::vector<int> done;      // scratch for test_recvs
  std::size_t arrived = 0;    // MPI receive messages complete in this exchange
  bool ordered_done = false;  // an ordered exchange has been unpacked
  /// The exchange running now, from 1 (the object counts start()s; a path reads it).
  std::uint64_t generation = 0;

  int rank() const { return comm.rank(); }
  bool has_device_steps() const;
  /// The host steps of this exchange (the copy it uses: generation mod 2).
  const exchange_program::steps& pack_steps() const { return host_pack[generation % 2]; }
  const exchange_program::steps& unpack_steps() const { return host_unpack[generation % 2]; }
  /// Host steps of message m (the program's index), from the given step tables.
  void pack(std::size_t m, const exchange_program::steps& st) const;
  void unpack(std::size_t m, const exchange_program::steps& st) const;
  /// MPI receives of this exchange: unpacks each message as it arrives (host steps; none for
  /// ordered exchanges, see unpack_ordered), blocking until all arrived with `block`. True when
  /// all arrived.
  bool receive_mpi(bool block);
  /// Ordered exchanges (reverse): once every message arrived, unpacks them in peer order.
  void unpack_ordered(const exchange_program::steps& st);
  /// Device fields: enqueues this exchange's unpack once (test() may have done it already),
  /// after the copy into device memory under copy staging.
  void launch_unpack();
  /// Completes the unpack: the user's stream waits for it (scheduled wait, `before` set), or the
  /// host does.
  void finish_unpack(stream_t before);
  /// test(): enqueues the unpack once; true when it has run (never blocks).
  bool unpack_ready();
  bool unpack_pending = false;  // an unpack is enqueued that may still read the receive buffer
  /// Boundary rules of device fields, launched after the unpack (null without them). Declared
  /// after `gpu`: destroyed before the stream its launches use.
  std::unique_ptr<device_boundary> rules;

  /// Set-up: the steps placed where the transports put the messages, the GPU copier; what
  /// describe() says of CUDA IPC's routes (the table holds the others').
  void place_steps();
  void describe_routes();

  /// Resets the per-exchange counters at a start.
  void begin_exchange() {
    arrived = 0;
    ordered_done = false;
  }
};

/// One transport mode of a communication object. start() begins exchange `core.generation`
/// (already counted), wait() completes it, test() polls it; `after`/`before` are the user's
/// streams of a scheduled exchange (null for start()/wait()). None of them waits for a peer's
/// progress in start().
class exchange_path {
 public:
  explicit exchange_path(exchange_core& c) : c_(c) {}
  virtual ~exchange_path() = default;
  exchange_path(const exchange_path&) = delete;
  exchange_path& operator=(const exchange_path&) = delete;

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

 protected:
  exchange_core& c_;
};

/// The mode of this object, from what set-up found: host fields only (MPI and shared memory),
/// device fields through MPI (with any host fields), device local copies only, CUDA IPC with an
/// MPI handshake (NCCL for the other peers under staging nccl), CUDA IPC ordered by device
/// signals, device fields through NCCL.
std::unique_ptr<exchange_path> make_path(exchange_core& c);

std::unique_ptr<exchange_path> make_host_path(exchange_core& c);
std::unique_ptr<exchange_path> make_device_path(exchange_core& c);
std::unique_ptr<exchange_path> make_device_local_path(exchange_core& c);
std::unique_ptr<exchange_path> make_ipc_handshake_path(exchange_core& c);
std::unique_ptr<exchange_path> make_ipc_signalled_path(exchange_core& c);
std::unique_ptr<exchange_path> make_device_nccl_path(exchange_core& c);

}  // namespace halox::detail
