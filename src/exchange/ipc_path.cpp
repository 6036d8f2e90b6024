// Device fields whose node-local messages travel through CUDA IPC (the pack kernel writes into
// the receiver's GPU memory); messages to other peers of the same exchange go through MPI.
#include "exchange/exchange_core.hpp"

#include <algorithm>

namespace halox::detail {

namespace {

// With an MPI handshake per peer and exchange: each receiver says "clear to send" when it
// starts, each sender says "data ready" after its pack kernel. The receive buffer exists twice
// (exchange g in copy g mod 2): a receiver's clear at its start of g frees the copy of g+1,
// which its unpack of g-1 has finished reading.
//
// start() posts the receives and this rank's clear-to-send, then packs into the receivers' GPU
// memory and says data ready once every receiver has cleared this exchange. A receiver that
// also sends to this rank has cleared it already (its message of the previous exchange, which
// this rank's last wait() received, came after its clear): the wait for it is one that MPI
// completes without the receiver's help. A receiver that only receives from this rank may be
// two exchanges behind: then the pack waits for wait()/test(), so start() never waits for a
// peer's progress. wait() waits for the senders' data-ready and the MPI messages, and unpacks as
// the MPI mode does.
class ipc_handshake_path final : public exchange_path {
 public:
  explicit ipc_handshake_path(exchange_core& c) : exchange_path(c), receivers_reply_(replies(c)) {}
  const char* name() const override { return "CUDA IPC (MPI handshake)"; }
  const char* capture_blocker() const override {
    return "its CUDA IPC messages are ordered by an MPI handshake (ranks sharing a GPU, reverse "
           "exchanges, HALOX_IPC_SIGNAL=host, or other peers beside them through MPI or NCCL): the "
           "host sends clear-to-send and data-ready messages every exchange";
  }

  void start(stream_t after) override {
    const int me = c_.rank();
    if (c_.unpack_pending) c_.gpu->synchronize(me);  // the last unpack read the other copy
    c_.unpack_pending = false;
    c_.channels.start_recvs();  // peers not reached through CUDA IPC
    c_.ipc->start();            // our IPC senders may now write into the next copy
    c_.gpu->enter(after, me);
    c_.begin_exchange();
    packed_ = false;
    if (c_.ipc->cleared(c_.generation, receivers_reply_)) pack_and_send();
  }

  void wait(stream_t before) override {
    if (!packed_) {
      c_.ipc->cleared(c_.generation, true);
      pack_and_send();
    }
    c_.ipc->wait_ready();
    c_.receive_mpi(true);
    c_.unpack_ordered(c_.unpack_steps());
    c_.finish_unpack(before);
    c_.channels.wait_sends();
    c_.ipc->wait_sends();
    if (c_.nccl) c_.nccl->check_async();
  }

  bool test() override {
    if (!packed_) {
      if (!c_.ipc->cleared(c_.generation, false)) return false;
      pack_and_send();
    }
    if (!c_.ipc->test_ready() || !c_.ipc->test_sends()) return false;
    if (!c_.receive_mpi(false) || !c_.channels.test_sends()) return false;
    c_.unpack_ordered(c_.unpack_steps());
    return c_.unpack_ready();
  }

 private:
  // Whether every IPC receiver of this rank also sends to it through CUDA IPC or MPI (messages
  // whose arrival a wait() sees on the host).
  static bool replies(const exchange_core& c) {
    auto heard = [&](int peer) {
      const auto& ipc = c.ipc->recv_peers();
      return std::find(ipc.begin(), ipc.end(), peer) != ipc.end() ||
             std::any_of(c.mpi_recv_list.begin(), c.mpi_recv_list.end(),
                         [&](const message& m) { return m.peer == peer; });
    };
    const auto& to = c.ipc->send_peers();
    return std::all_of(to.begin(), to.end(), heard);
  }

  // Every receiver has cleared this exchange: the pack writes into their buffers (and into the
  // MPI staging buffer), then they hear "data ready" and the MPI messages go.
  void pack_and_send() {
    const int me = c_.rank();
    const auto& prog = c_.prog;
    c_.gpu->launch_pack(me, c_.generation);  // (the generation picks the copy)
    if (c_.staging_copies)
      c_.gpu->copy(prog.send_buf.get(), prog.device_send.get(), prog.send_extent, me);
    c_.gpu->synchronize(me);
    c_.ipc->signal_ready();
    for (std::size_t k = 0; k < c_.mpi_send_list.size(); ++k) c_.channels.start_send(k);
    // Staging nccl: the other peers' messages, on halox's stream before the unpack.
    if (c_.nccl) c_.nccl->enqueue(c_.gpu->stream(), c_.gpu->capture());
    packed_ = true;
  }

  const bool receivers_reply_;
  bool packed_ = false;  // this exchange's pack has run
};

// Every message of every rank through CUDA IPC, no two ranks on one GPU: the kernels order the
// exchange among themselves with flags in GPU memory (see device_signals). The host enqueues
// the pack and the unpack and waits for nothing but, for a blocking wait, the unpack.
class ipc_signalled_path final : public exchange_path {
 public:
  explicit ipc_signalled_path(exchange_core& c) : exchange_path(c) {
    c.gpu->use_signals(c.ipc->signals());
  }
  const char* name() const override { return "CUDA IPC (device signals)"; }
  const char* capture_blocker() const override { return nullptr; }
  // Replays of a graph number their exchanges on the device from now on.
  void captured() override { c_.gpu->count_on_device(); }

  void start(stream_t after) override {
    const int me = c_.rank();
    // Buffer reuse is guarded on the GPU (consumed flags): the host waits for nothing.
    c_.gpu->enter(after, me);
    c_.gpu->launch_pack(me, c_.generation);
    c_.unpack_pending = false;  // flags in GPU memory guard the buffers
    c_.begin_exchange();
  }

  // The unpack kernel waits for the senders' data-ready flags itself.
  void wait(stream_t before) override { c_.finish_unpack(before); }
  bool test() override { return c_.unpack_ready(); }
};

}  // namespace

std::unique_ptr<exchange_path> make_ipc_handshake_path(exchange_core& c) {
  return std::make_unique<ipc_handshake_path>(c);
}
std::unique_ptr<exchange_path> make_ipc_signalled_path(exchange_core& c) {
  return std::make_unique<ipc_signalled_path>(c);
}

}  // namespace halox::detail
