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
        gpu_(*c.copier()),
        mpi_(c.mpi()),
        ipc_(*c.ipc()),
        nccl_(c.nccl()),
        receivers_reply_(replies()) {
    // (Not NCCL's: the host never waits for its group, which ends on the GPU before the
    // unpack.)
    carriers_ = {&mpi_, &ipc_};
  }
  const char* name() const override { return "CUDA IPC (MPI handshake)"; }
  const char* capture_blocker() const override {
    return "its CUDA IPC messages are ordered by an MPI handshake (ranks sharing a GPU, reverse "
           "exchanges, HALOX_IPC_SIGNAL=host, or other peers beside them through MPI or NCCL): the "
           "host sends clear-to-send and data-ready messages every exchange";
  }

  void start(stream_t after) override {
    const std::uint64_t g = core_.generation();
    core_.reuse_buffers();  // the last unpack read the other copy
    mpi_.post_receives(g);  // peers not reached through CUDA IPC
    ipc_.post_receives(g);  // our IPC senders may now write into the next copy
    gpu_.enter(after, core_.rank());
    packed_ = false;
    if (ipc_.clear_to_send(g, receivers_reply_)) pack_and_send();
  }

  void wait(stream_t before) override {
    if (!packed_) {
      ipc_.clear_to_send(core_.generation(), true);
      pack_and_send();
    }
    ipc_.complete();
    mpi_.complete();
    core_.unpack_ordered();
    core_.finish_unpack(before);
    if (nccl_) nccl_->complete();
  }

  bool test() override {
    if (!packed_) {
      if (!ipc_.clear_to_send(core_.generation(), false)) return false;
      pack_and_send();
    }
    if (!ipc_.progress().done || !mpi_.progress().done) return false;
    core_.unpack_ordered();
    return core_.unpack_ready();
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
    const std::uint64_t g = core_.generation();
    core_.launch_pack(true);  // (the generation picks the copy)
    core_.stage_out();
    gpu_.synchronize(core_.rank());
    ipc_.post_sends(g);  // data ready
    mpi_.post_sends(g);
    // Staging nccl: the other peers' messages, on halox's stream before the unpack.
    if (nccl_) nccl_->post_sends(g);
    packed_ = true;
  }

  device_copier& gpu_;
  mpi_carrier& mpi_;
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
  explicit ipc_signalled_mode(exchange_core& c) : exchange_mode(c), gpu_(*c.copier()) {
    gpu_.use_signals(c.ipc()->signals());
  }
  const char* name() const override { return "CUDA IPC (device signals)"; }
  // The kernels give up by themselves (device_signals::timeout); the host's wait then raises.
  bool waits_on_host(stream_t) const override { return false; }
  const char* capture_blocker() const override { return nullptr; }
  // Replays of a graph number their exchanges on the device from now on.
  void captured() override { gpu_.count_on_device(); }

  void start(stream_t after) override {
    // Buffer reuse is guarded on the GPU (consumed flags): the host waits for nothing.
    gpu_.enter(after, core_.rank());
    core_.launch_pack(true);
    core_.buffers_guarded();  // flags in GPU memory guard the buffers
  }

  // The unpack kernel waits for the senders' data-ready flags itself.
  void wait(stream_t before) override { core_.finish_unpack(before); }
  bool test() override { return core_.unpack_ready(); }

 private:
  device_copier& gpu_;
};

}  // namespace

std::unique_ptr<exchange_mode> make_ipc_handshake_mode(exchange_core& c) {
  return std::make_unique<ipc_handshake_mode>(c);
}
std::unique_ptr<exchange_mode> make_ipc_signalled_mode(exchange_core& c) {
  return std::make_unique<ipc_signalled_mode>(c);
}

}  // namespace halox::detail
