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

#include "halox/core/error.hpp"
#include "halox/core/format.hpp"
#include "program/label.hpp"

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

namespace halox::detail {

namespace {

class device_mode : public exchange_mode {
 public:
  explicit device_mode(exchange_core& c)
      : exchange_mode(c),
        gpu_(*c.copier()),
        pipe_(c.pipeline()),
        mpi_(pipe_ ? static_cast<carrier&>(*pipe_) : c.mpi()) {
    carriers_.push_back(&mpi_);
  }
  const char* name() const override { return "device (MPI)"; }
  const char* capture_blocker() const override {
    return "its messages go through MPI (gpu_aware or host_staged): the host waits for the pack "
           "kernel and calls MPI every exchange";
  }

  void start(stream_t after) override {
    const std::uint64_t g = core_.generation();
    core_.reuse_buffers();  // the last unpack read the receive buffer
    mpi_.post_receives(g);
    gpu_.enter(after, core_.rank());
    core_.launch_pack();  // device fields of every message, and their local copies
    if (pipe_) {
      core_.run_local();  // host fields' local copies, if any
      pipe_->post_sends(g);
      return;
    }
    core_.stage_out();
    core_.pack_all();  // host fields
    // MPI reads what the kernel packed; with nothing to send (only local copies) the host
    // does not wait, and a scheduled exchange stays entirely in stream order.
    if (!core_.program().sends.empty()) gpu_.synchronize(core_.rank());
    mpi_.post_sends(g);
    core_.run_local();
  }

  void wait(stream_t before) override {
    mpi_.complete();
    core_.unpack_ordered();
    core_.finish_unpack(before);
  }

  bool test() override {
    if (!mpi_.progress().done) return false;
    core_.unpack_ordered();
    return core_.unpack_ready();
  }

 protected:
  device_copier& gpu_;
  staging_pipeline* const pipe_;  // host staging by copies in pieces, or null
  carrier& mpi_;                  // the pipeline, or the MPI carrier
};

// Device fields and local copies alone (one rank along every periodic dimension): a scheduled
// exchange runs its copies on the user's stream itself, with no stream hops; start()/wait()
// go through halox's stream as the MPI mode does (with no message).
class device_local_mode final : public device_mode {
 public:
  using device_mode::device_mode;
  const char* name() const override { return "device (local copies)"; }
  // A scheduled wait makes the user's stream wait for copies on it: nothing to poll (and a
  // query would invalidate a capture); no peer is ever waited for.
  bool waits_on_host(stream_t before) const override { return before == nullptr; }
  const char* capture_blocker() const override { return nullptr; }

  void start(stream_t after) override {
    on_user_stream_ = after != nullptr;
    if (!on_user_stream_) return device_mode::start(after);
    gpu_.launch_local(after, core_.rank());
  }
  void wait(stream_t before) override {
    if (!on_user_stream_) return device_mode::wait(before);
    gpu_.wait_local(before, core_.rank());
    on_user_stream_ = false;
  }
  bool test() override {
    if (!on_user_stream_) return device_mode::test();
    if (!gpu_.ready(core_.rank())) return false;
    on_user_stream_ = false;
    return true;
  }
  void abandon() override { on_user_stream_ = false; }

 private:
  bool on_user_stream_ = false;
};

// With a timeout, a scheduled NCCL exchange that does not complete in time (a peer that never
// took part) must not hold the user's stream for ever: NCCL's kernels never give up by
// themselves. A thread of the exchange object watches the last enqueued exchange and, once it
// is `timeout` seconds late, aborts the communicator (which ends NCCL's kernels, so the stream
// goes on) and keeps the exchange's number for the next call to raise. The mode enqueues NCCL
// work only under `lock`, so an abort never meets an enqueue.
class nccl_watchdog {
 public:
  nccl_watchdog(exchange_core& core, nccl_carrier& nccl, double timeout)
      : core_(core), nccl_(nccl), timeout_(timeout), thread_([this] { run(); }) {}
  ~nccl_watchdog() {
    {
      const std::lock_guard<std::mutex> hold(lock);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  nccl_watchdog(const nccl_watchdog&) = delete;
  nccl_watchdog& operator=(const nccl_watchdog&) = delete;
  /// Exchange `g` was enqueued (the caller holds `lock`).
  void arm(std::uint64_t g) {
    armed_ = g;
    deadline_ = std::chrono::steady_clock::now() +
                std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                    std::chrono::duration<double>(timeout_));
    wake_.notify_all();
  }
  /// The exchange it gave up on (0: none; the caller holds `lock`).
  std::uint64_t gave_up() const { return gave_up_; }
  std::mutex lock;

 private:
  void run() {
    nccl_.bind_thread();  // (a new thread's current device is 0)
    std::unique_lock<std::mutex> hold(lock);
    while (!stop_) {
      if (armed_ == 0) {
        wake_.wait(hold);
        continue;
      }
      wake_.wait_for(hold, std::chrono::milliseconds(2));
      if (armed_ == 0 || stop_) continue;
      bool done = false;
      try {
        done = core_.copier()->ready(core_.rank());
      } catch (...) {  // an error of the exchange itself: the next call reports it
        done = true;
      }
      if (done) {
        armed_ = 0;
      } else if (std::chrono::steady_clock::now() > deadline_) {
        nccl_.abort(
            "a scheduled exchange over it did not complete within "
            "exchange_options::wait_timeout: a peer never took part");
        gave_up_ = armed_;
        armed_ = 0;
      }
    }
  }
  exchange_core& core_;
  nccl_carrier& nccl_;
  const double timeout_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::uint64_t armed_ = 0, gave_up_ = 0;
  std::chrono::steady_clock::time_point deadline_{};
  std::thread thread_;  // (last: starts once the members above exist)
};

// Device fields whose messages go through NCCL (staging nccl, no CUDA IPC peer): the pack
// kernel, the NCCL group and the unpack kernel follow each other on halox's stream, so neither
// start() nor a scheduled wait waits for anything on the host; buffers are reused in stream
// order. With a timeout, a watchdog (above) ends a scheduled exchange whose peer never came.
class device_nccl_mode final : public exchange_mode {
 public:
  explicit device_nccl_mode(exchange_core& c)
      : exchange_mode(c),
        gpu_(*c.copier()),
        nccl_(*c.nccl()),
        timeout_(c.program().options.wait_timeout),
        watchdog_(timeout_ > 0 ? std::make_unique<nccl_watchdog>(c, nccl_, timeout_) : nullptr) {
    carriers_.push_back(&nccl_);
  }
  // With a timeout, an exchange still running on the GPU at destruction (a scheduled one whose
  // peer never came) gets that long before the communicator is aborted: NCCL's kernels never
  // give up by themselves, and the copier's destructor waits for halox's stream.
  ~device_nccl_mode() override {
    watchdog_.reset();
    if (timeout_ <= 0) return;
    try {
      const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_);
      while (!gpu_.ready(core_.rank()))
        if (std::chrono::steady_clock::now() > until) {
          nccl_.abort(
              "an exchange object was destroyed while its exchange still waited for a "
              "peer, after exchange_options::wait_timeout");
          return;
        } else {
          std::this_thread::yield();
        }
    } catch (...) {  // a destructor must not throw (a CUDA error here is reported elsewhere)
    }
  }
  const char* name() const override { return "device (NCCL)"; }
  // A scheduled wait enqueues only stream work; the watchdog ends one whose peer never came.
  bool waits_on_host(stream_t before) const override { return before == nullptr; }
  // An exchange that failed (gave up waiting) may leave NCCL kernels waiting for a peer on
  // halox's stream: only an abort ends them.
  void abandon() override {
    bool done = true;
    try {
      done = gpu_.ready(core_.rank());
    } catch (...) {
      done = false;
    }
    if (!done) nccl_.abort("an exchange over it gave up waiting (exchange_options::wait_timeout)");
  }
  const char* capture_blocker() const override { return nullptr; }  // NCCL captures its groups

  void start(stream_t after) override {
    if (!watchdog_) return enqueue(after);
    const std::lock_guard<std::mutex> hold(watchdog_->lock);
    if (const std::uint64_t g = watchdog_->gave_up(); g != 0) gave_up(g);
    enqueue(after);
    // (Not inside a CUDA graph capture: nothing runs until a replay, and a query of the
    // capturing stream would invalidate the capture.)
    if (after != nullptr && gpu_.capture() == 0) watchdog_->arm(core_.generation());
  }

  void wait(stream_t before) override {
    core_.finish_unpack(before);
    nccl_.complete();
  }

  bool test() override {
    nccl_.progress();
    return core_.unpack_ready();
  }

 private:
  void enqueue(stream_t after) {
    gpu_.enter(after, core_.rank());
    core_.launch_pack();
    nccl_.post_sends(core_.generation());  // the group, on halox's stream
    core_.buffers_guarded();               // stream order guards the buffers
  }
  // The watchdog ended scheduled exchange `g`: raised at the next call, as a wait would have.
  [[noreturn]] void gave_up(std::uint64_t g) const {
    std::vector<std::string> items;
    waiting_for(items);
    fail(
        "rank {}: exchange '{}' #{} gave up on the GPU after {} s "
        "(exchange_options::wait_timeout / HALOX_WAIT_TIMEOUT): still waiting for {}",
        core_.rank(), object_label(core_.program()), g, timeout_, join(items, ", "));
  }
  device_copier& gpu_;
  nccl_carrier& nccl_;
  const double timeout_;
  std::unique_ptr<nccl_watchdog> watchdog_;  // with a timeout
};

}  // namespace

std::unique_ptr<exchange_mode> make_device_mode(exchange_core& c) {
  return std::make_unique<device_mode>(c);
}
std::unique_ptr<exchange_mode> make_device_nccl_mode(exchange_core& c) {
  return std::make_unique<device_nccl_mode>(c);
}
std::unique_ptr<exchange_mode> make_device_local_mode(exchange_core& c) {
  return std::make_unique<device_local_mode>(c);
}

}  // namespace halox::detail
