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
class ipc_handshake_mode final : public exchange_mode {
 public:
  explicit ipc_handshake_mode(exchange_core& c)
      : exchange_mode(c),
        mpi_(c),
        host_(c),
        dev_(c),
        ipc_(*c.ipc()),
        nccl_(c.nccl()),
        receivers_reply_(replies()) {}
  const char* name() const override { return "CUDA IPC (MPI handshake)"; }
  const char* capture_blocker() const override {
    return "its CUDA IPC messages are ordered by an MPI handshake (ranks sharing a GPU, reverse "
           "exchanges, HALOX_IPC_SIGNAL=host, or other peers beside them through MPI or NCCL): the "
           "host sends clear-to-send and data-ready messages every exchange";
  }

  void start(stream_t after) override {
    dev_.reuse_buffers();  // the last unpack read the other copy
    mpi_.start_recvs();    // peers not reached through CUDA IPC
    ipc_.start();          // our IPC senders may now write into the next copy
    dev_.enter(after);
    clock_.begin();
    packed_ = false;
    if (ipc_.cleared(clock_.generation(), receivers_reply_)) pack_and_send();
  }

  void wait(stream_t before) override {
    if (!packed_) {
      ipc_.cleared(clock_.generation(), true);
      pack_and_send();
    }
    ipc_.wait_ready();
    mpi_.receive(true);
    host_.unpack_ordered();
    dev_.finish_unpack(before);
    mpi_.wait_sends();
    ipc_.wait_sends();
    if (nccl_) nccl_->check_async();
  }

  bool test() override {
    if (!packed_) {
      if (!ipc_.cleared(clock_.generation(), false)) return false;
      pack_and_send();
    }
    if (!ipc_.test_ready() || !ipc_.test_sends()) return false;
    if (!mpi_.receive(false) || !mpi_.test_sends()) return false;
    host_.unpack_ordered();
    return dev_.unpack_ready();
  }

 private:
  // Whether every IPC receiver of this rank also sends to it through CUDA IPC or MPI (messages
  // whose arrival a wait() sees on the host).
  bool replies() const {
    auto heard = [&](int peer) {
      const auto& ipc = ipc_.recv_peers();
      return std::find(ipc.begin(), ipc.end(), peer) != ipc.end() || mpi_.receives_from(peer);
    };
    const auto& to = ipc_.send_peers();
    return std::all_of(to.begin(), to.end(), heard);
  }

  // Every receiver has cleared this exchange: the pack writes into their buffers (and into the
  // MPI staging buffer), then they hear "data ready" and the MPI messages go.
  void pack_and_send() {
    dev_.launch_pack(true);  // (the generation picks the copy)
    dev_.stage_out();
    dev_.synchronize();
    ipc_.signal_ready();
    mpi_.start_sends();
    // Staging nccl: the other peers' messages, on halox's stream before the unpack.
    if (nccl_) dev_.enqueue(*nccl_);
    packed_ = true;
  }

  mpi_messages mpi_;
  host_steps host_;
  device_work dev_;
  peer_ipc& ipc_;
  nccl_carrier* const nccl_;  // staging nccl: the peers CUDA IPC does not reach, or null
  const bool receivers_reply_;
  bool packed_ = false;  // this exchange's pack has run
};

// Every message of every rank through CUDA IPC, no two ranks on one GPU: the kernels order the
// exchange among themselves with flags in GPU memory (see device_signals). The host enqueues
// the pack and the unpack and waits for nothing but, for a blocking wait, the unpack.
class ipc_signalled_mode final : public exchange_mode {
 public:
  explicit ipc_signalled_mode(exchange_core& c) : exchange_mode(c), dev_(c) {
    dev_.use_signals(c.ipc()->signals());
  }
  const char* name() const override { return "CUDA IPC (device signals)"; }
  // The kernels give up by themselves (device_signals::timeout); the host's wait then raises.
  bool waits_on_host(stream_t) const override { return false; }
  const char* capture_blocker() const override { return nullptr; }
  // Replays of a graph number their exchanges on the device from now on.
  void captured() override { dev_.count_on_device(); }

  void start(stream_t after) override {
    // Buffer reuse is guarded on the GPU (consumed flags): the host waits for nothing.
    dev_.enter(after);
    dev_.launch_pack(true);
    dev_.buffers_guarded();  // flags in GPU memory guard the buffers
    clock_.begin();
  }

  // The unpack kernel waits for the senders' data-ready flags itself.
  void wait(stream_t before) override { dev_.finish_unpack(before); }
  bool test() override { return dev_.unpack_ready(); }

 private:
  device_work dev_;
};

}  // namespace

std::unique_ptr<exchange_mode> make_ipc_handshake_mode(exchange_core& c) {
  return std::make_unique<ipc_handshake_mode>(c);
}
std::unique_ptr<exchange_mode> make_ipc_signalled_mode(exchange_core& c) {
  return std::make_unique<ipc_signalled_mode>(c);
}

}  // namespace halox::detail
