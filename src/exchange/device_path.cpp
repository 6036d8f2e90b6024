// Device fields whose messages go through MPI (gpu_aware or host_staged buffers), with any
// host fields of the same object; and device fields with local copies alone.
//
// start() posts the MPI receives, enqueues the fused pack kernel on halox's stream (after the
// user's stream for a scheduled exchange), packs host fields meanwhile, waits for the kernel
// only when there is something to send (MPI reads its output), then posts the sends and runs
// host local copies. wait() receives, enqueues the unpack kernel and either makes the user's
// stream wait for it (scheduled) or waits for it.
//
// Host staging by copies (`pipe`): start() enqueues the copies out of the device after the pack
// kernel and starts each piece's send as soon as its copy has run, taking arrived pieces
// meanwhile (each copied into the device at once); it returns once every send is started.
// wait()/test() take the remaining pieces, then the unpack follows their copies.
#include "exchange/exchange_core.hpp"

namespace halox::detail {

namespace {

class device_path : public exchange_path {
 public:
  using exchange_path::exchange_path;
  const char* name() const override { return "device (MPI)"; }
  const char* capture_blocker() const override {
    return "its messages go through MPI (gpu_aware or host_staged): the host waits for the pack "
           "kernel and calls MPI every exchange";
  }

  void start(stream_t after) override {
    const int me = c_.rank();
    auto& gpu = *c_.gpu;
    const auto& prog = c_.prog;
    if (c_.unpack_pending) gpu.synchronize(me);  // the last unpack read the receive buffer
    c_.unpack_pending = false;
    c_.channels.start_recvs();
    gpu.enter(after, me);
    gpu.launch_pack(me);  // device fields of every message, and their local copies
    if (c_.pipe) {
      c_.pipe->start(gpu.stream());
      for (const auto& op : prog.local_ops) run(op);  // host fields' local copies, if any
      while (!c_.pipe->sends_started()) c_.pipe->progress(false);
      c_.begin_exchange();
      return;
    }
    if (c_.staging_copies)
      gpu.copy(prog.send_buf.get(), prog.device_send.get(), prog.send_extent, me);
    for (std::size_t m = 0; m < prog.sends.size(); ++m) c_.pack(m, c_.pack_steps());  // host fields
    // MPI reads what the kernel packed; with nothing to send (only local copies) the host
    // does not wait, and a scheduled exchange stays entirely in stream order.
    if (!prog.sends.empty()) gpu.synchronize(me);
    for (std::size_t k = 0; k < c_.mpi_send_list.size(); ++k) c_.channels.start_send(k);
    for (const auto& op : prog.local_ops) run(op);
    c_.begin_exchange();
  }

  void wait(stream_t before) override {
    if (c_.pipe)
      c_.pipe->progress(true);
    else
      c_.receive_mpi(true);
    c_.unpack_ordered(c_.unpack_steps());
    c_.finish_unpack(before);
    c_.channels.wait_sends();
  }

  bool test() override {
    const bool arrived = c_.pipe ? c_.pipe->progress(false) : c_.receive_mpi(false);
    if (!arrived || !c_.channels.test_sends()) return false;
    c_.unpack_ordered(c_.unpack_steps());
    return c_.unpack_ready();
  }
};

// Device fields and local copies alone (one rank along every periodic dimension): a scheduled
// exchange runs its copies on the user's stream itself, with no stream hops; start()/wait()
// go through halox's stream as the MPI mode does (with no message).
class device_local_path final : public device_path {
 public:
  using device_path::device_path;
  const char* name() const override { return "device (local copies)"; }
  const char* capture_blocker() const override { return nullptr; }

  void start(stream_t after) override {
    on_user_stream_ = after != nullptr;
    if (!on_user_stream_) return device_path::start(after);
    c_.gpu->launch_local(after, c_.rank());
    c_.begin_exchange();
  }
  void wait(stream_t before) override {
    if (!on_user_stream_) return device_path::wait(before);
    c_.gpu->wait_local(before, c_.rank());
    on_user_stream_ = false;
  }
  bool test() override {
    if (!on_user_stream_) return device_path::test();
    if (!c_.gpu->ready(c_.rank())) return false;
    on_user_stream_ = false;
    return true;
  }
  void abandon() override { on_user_stream_ = false; }

 private:
  bool on_user_stream_ = false;
};

// Device fields whose messages go through NCCL (staging nccl, no CUDA IPC peer): the pack
// kernel, the NCCL group and the unpack kernel follow each other on halox's stream, so neither
// start() nor a scheduled wait waits for anything on the host; buffers are reused in stream
// order.
class device_nccl_path final : public exchange_path {
 public:
  using exchange_path::exchange_path;
  const char* name() const override { return "device (NCCL)"; }
  const char* capture_blocker() const override { return nullptr; }  // NCCL captures its groups

  void start(stream_t after) override {
    const int me = c_.rank();
    c_.gpu->enter(after, me);
    c_.gpu->launch_pack(me);
    c_.nccl->enqueue(c_.gpu->stream(), c_.gpu->capture());
    c_.gpu->launch_beside(me);
    c_.unpack_pending = false;  // stream order guards the buffers
    c_.begin_exchange();
  }

  void wait(stream_t before) override {
    c_.finish_unpack(before);
    c_.nccl->check_async();
  }

  bool test() override {
    c_.nccl->check_async();
    return c_.unpack_ready();
  }
};

}  // namespace

std::unique_ptr<exchange_path> make_device_path(exchange_core& c) {
  return std::make_unique<device_path>(c);
}
std::unique_ptr<exchange_path> make_device_nccl_path(exchange_core& c) {
  return std::make_unique<device_nccl_path>(c);
}
std::unique_ptr<exchange_path> make_device_local_path(exchange_core& c) {
  return std::make_unique<device_local_path>(c);
}

}  // namespace halox::detail
