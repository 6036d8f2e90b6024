#include "halox/exchange/halo_exchange.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <mpi.h>
#ifdef HALOX_ENABLE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "core/nvtx.hpp"
#include "exchange/exchange_core.hpp"
#include "exchange/exchange_stats.hpp"
#include "halox/core/error.hpp"
#include "mpi/check.hpp"
#include "program/label.hpp"

namespace halox {

namespace detail {

namespace {
// The peers of a program's messages, in its order (NVTX names the ranges of each).
std::vector<int> peers_of(const std::vector<message>& msgs) {
  std::vector<int> out;
  for (const message& m : msgs) out.push_back(m.peer);
  return out;
}
}  // namespace

// What every mode shares: one exchange in flight at a time, generations for handles, and an
// error that ends the object. The mode is an exchange_mode (exchange_core.hpp).
struct exchange_state {
  tick born = now();  // (first: set-up's time counts from here)
  // Taken from the program before the core takes it (members initialise in this order).
  std::vector<std::function<void()>> after_exchange;
  std::string label;
  double timeout = 0;  // exchange_options::wait_timeout (0: wait for ever)
  nvtx_names nvtx;
  std::optional<nvtx_range> setup_range{std::in_place, nvtx,
                                        nvtx_phase::setup};  // (to set-up's end)
  exchange_core core;
  std::unique_ptr<exchange_mode> mode;
  bool in_flight = false;
  bool rules = true;    // false: completing exchanges runs no boundary rule (user callbacks)
  std::string failure;  // why an exchange of this object failed; then unusable

  // Whether every rank's mode can be captured in a CUDA graph (collective, at set-up), and why
  // not on this rank.
  bool capturable = false;
  const char* blocker = nullptr;

  // halo_exchange::stats(): always kept; recording allocates nothing.
  time_histogram setup_time, start_time, wait_time, gpu_time;
  std::uint64_t waits_complete = 0;

  exchange_state(const boost::mpi::communicator& c, exchange_program p)
      : after_exchange(std::move(p.after_exchange)),
        label(object_label(p)),
        timeout(p.options.wait_timeout),
        nvtx(label, p.options.nvtx, peers_of(p.sends), peers_of(p.recvs)),
        core(c, std::move(p)),
        mode(make_mode(core)) {
    if (core.copier()) core.copier()->use_nvtx(&nvtx);
    core.use_nvtx(&nvtx);
    blocker = mode->capture_blocker();
    int mine = blocker == nullptr ? 1 : 0, all = 0;
    mpi::check(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, core.communicator()),
               "MPI_Allreduce", core.rank(), "exchange set-up: CUDA graph capture");
    capturable = all != 0;
    require(capturable || !core.program().options.require_capturable,
            "rank {}: exchange_options::require_capturable asks for an exchange a CUDA graph can "
            "capture, but {}",
            core.rank(), why_not_capturable());
    setup_range.reset();
    setup_time.add(seconds_since(born));
  }

  // For errors and describe(): why a CUDA graph cannot capture this object's exchanges.
  std::string why_not_capturable() const {
    if (blocker != nullptr) return format("this rank's cannot be captured: {}", blocker);
    return "another rank's exchange cannot be captured (see that rank's describe())";
  }

  std::uint64_t generation() const { return core.generation(); }

  void start(stream_t after = nullptr) {
    const nvtx_range r(nvtx, after ? nvtx_phase::schedule_exchange : nvtx_phase::start);
    const tick t0 = now();
    require(failure.empty(),
            "rank {}: this exchange object cannot start another exchange: an earlier one failed "
            "({}); build a new exchange object",
            core.rank(), failure);
    require(!in_flight,
            "rank {}: start() called while this object's previous exchange is still in flight; "
            "wait() on its handle first",
            core.rank());
    // Under CUDA graph capture: refused before anything is enqueued, so the capture stays
    // intact (the user ends it and sees halox's error).
    const bool captured =
        after != nullptr && core.copier() != nullptr && core.copier()->probe(after, core.rank());
    if (captured) {
      require(capturable,
              "rank {}: schedule_exchange() is being captured into a CUDA graph, but {}. CUDA "
              "graphs capture exchanges of local copies, CUDA IPC with device signals and NCCL "
              "(docs/graphs.md)",
              core.rank(), why_not_capturable());
      mode->captured();
    }
    guarded([&] {
      core.next_exchange();
      in_flight = true;
      mode->start(after);
    });
    if (!captured) sample_gpu_time();  // (a query inside a capture would invalidate it)
    start_time.add(seconds_since(t0));
  }
  void wait(stream_t before = nullptr) {
    if (!in_flight) return;
    const nvtx_range r(nvtx, before ? nvtx_phase::schedule_wait : nvtx_phase::wait);
    const tick t0 = now();
    guarded([&] {
      // A host wait first asks without blocking whether the exchange is already complete:
      // the overlap the caller achieved (stats()).
      if (before == nullptr && mode->test()) {
        ++waits_complete;
        return;
      }
      if (timeout > 0 && mode->waits_on_host(before)) return wait_bounded();
      mode->wait(before);
    });
    in_flight = false;
    finish(before);
    wait_time.add(seconds_since(t0));
  }
  // exchange_options::wait_timeout: polls the exchange (test() never blocks) until it is
  // complete (then nothing is left for the stream to wait for) or the time is up.
  void wait_bounded() {
    const tick t0 = now();
    while (!mode->test()) {
      if (seconds_since(t0) > timeout) gave_up();
      std::this_thread::yield();
    }
  }
  [[noreturn]] void gave_up() const {
    std::vector<std::string> items;
    mode->waiting_for(items);
    std::sort(items.begin(), items.end());
    items.erase(std::unique(items.begin(), items.end()), items.end());
    fail(
        "rank {}: exchange '{}' #{} gave up after {} s (exchange_options::wait_timeout / "
        "HALOX_WAIT_TIMEOUT): still waiting for {}",
        core.rank(), label, core.generation(), timeout,
        items.empty() ? std::string("its own completion (no peer pending)")
                      : fmt::format("{}", fmt::join(items, ", ")));
  }
  /// The GPU time of an earlier sampled exchange, once its events have completed.
  void sample_gpu_time() {
    float ms = 0;
    if (core.copier() && core.copier()->gpu_sample(ms)) gpu_time.add(double(ms) * 1e-3);
  }
  exchange_stats stats() const;
  bool test() {
    if (!in_flight) return true;
    bool complete = false;
    guarded([&] { complete = mode->test(); });
    if (complete) in_flight = false, finish(nullptr);
    return complete;
  }

 private:
  // The halos are complete: boundary fills of host fields, then device fields' callbacks (and
  // the fills after them) on the scheduled wait's stream, or halox's with a host wait; after
  // the exchange proper, so that an exception from a user's callback leaves the object usable.
  void finish(stream_t before) {
    if (!rules) return;
    for (const auto& fill : after_exchange) fill();
    if (core.boundary()) core.boundary()->complete(before, core.rank());
  }
  // An error while an exchange runs ends it for good: it is no longer in flight, later waits
  // and tests return at once, and the object refuses to start another (its peers may be
  // anywhere in theirs). The destructor then waits for nothing.
  template <class F>
  void guarded(F&& step) {
    try {
      step();
    } catch (const std::exception& e) {
      const std::string what = e.what();
      failure = what.rfind("halox: ", 0) == 0 ? what.substr(7) : what;
      in_flight = false;
      mode->abandon();
      throw;
    }
  }
};

exchange_stats exchange_state::stats() const {
  exchange_stats s;
  s.label = label;
  s.rank = core.rank();
  s.exchanges = core.generation();
  s.setup = setup_time.summary();
  s.start = start_time.summary();
  s.wait = wait_time.summary();
  s.gpu = gpu_time.summary();
  s.waits_already_complete = waits_complete;
  // Bytes per route: every exchange sends the same messages.
  const auto& p = core.program();
  auto slot = [&](route r) -> route_traffic& {
    for (auto& t : s.routes)
      if (t.route == to_string(r)) return t;
    s.routes.push_back({to_string(r)});
    return s.routes.back();
  };
  for (std::size_t m = 0; m < p.sends.size(); ++m) {
    auto& t = slot(core.routes().send(m));
    ++t.sends;
    t.bytes_sent += p.sends[m].bytes * s.exchanges;
  }
  for (std::size_t m = 0; m < p.recvs.size(); ++m) {
    auto& t = slot(core.routes().recv(m));
    ++t.receives;
    t.bytes_received += p.recvs[m].bytes * s.exchanges;
  }
  return s;
}

}  // namespace detail

namespace detail {
// The stream a scheduled exchange orders on: a null stream is CUDA's, the legacy default stream.
stream_t gpu_stream_of(stream_t s) {
#ifdef HALOX_ENABLE_CUDA
  return s ? s : cudaStreamLegacy;
#else
  return s;
#endif
}
}  // namespace detail

halo_exchange detail::make_halo_exchange(const boost::mpi::communicator& comm,
                                         exchange_program program) {
  return halo_exchange(comm, std::move(program));
}

halo_exchange::halo_exchange(const boost::mpi::communicator& comm, detail::exchange_program p)
    : s_(std::make_unique<detail::exchange_state>(comm, std::move(p))) {}

halo_exchange::halo_exchange() noexcept = default;

detail::exchange_state& halo_exchange::live() const {
  if (!s_)
    detail::fail(
        "this halo_exchange is empty (default-constructed or moved from): assign one from "
        "make_exchange before using it");
  return *s_;
}

halo_exchange::~halo_exchange() {
  if (!s_) return;
  if (detail::mpi::finalized()) {
    // Nothing of MPI may be called now: say so, and leak what would need it.
    std::fprintf(stderr,
                 "halox: exchange '%s' destroyed after MPI_Finalize: its MPI requests, "
                 "communicator and buffers are leaked; destroy exchange objects before "
                 "MPI_Finalize (before boost::mpi::environment goes out of scope)\n",
                 s_->label.c_str());
    (void)s_.release();
    return;
  }
  // Completing here is not a user's exchange: boundary fills (user callbacks) do not run.
  s_->rules = false;
  try {
    s_->wait();
    if (detail::report_prefix()) (void)detail::append_report(s_->stats());
  } catch (...) {
    // A destructor must not throw: an MPI failure while completing is dropped here. Call
    // wait() on the handle before destruction to see it.
  }
}

exchange_stats halo_exchange::stats() const {
  return live().stats();
}

halo_exchange::halo_exchange(halo_exchange&&) noexcept = default;
halo_exchange& halo_exchange::operator=(halo_exchange&& o) noexcept {
  if (this != &o) {
    if (s_) s_->rules = false;
    if (s_) try {
        s_->wait();
      } catch (...) {
      }
    s_ = std::move(o.s_);
  }
  return *this;
}

void halo_exchange::exchange() {
  live().start();
  s_->wait();
}

exchange_handle halo_exchange::start() {
  live().start();
  return exchange_handle(s_.get(), s_->generation());
}

bool halo_exchange::in_flight() const {
  return s_ && s_->in_flight;
}

void halo_exchange::schedule_exchange(stream_t stream) {
  live().start(detail::gpu_stream_of(stream));
}

void halo_exchange::schedule_wait(stream_t stream) {
  detail::require(live().in_flight,
                  "rank {}: schedule_wait() without a scheduled exchange in flight",
                  s_->core.rank());
  s_->wait(detail::gpu_stream_of(stream));
}

std::string halo_exchange::describe() const {
  const auto& c = live().core;
  const auto& p = c.program();
  std::string out = fmt::format("rank {}: {}; {}; mode: {}", c.rank(), p.summary,
                                c.routes().here().describe(), s_->mode->name());
  if (c.copier())
    out += s_->capturable ? "; CUDA graphs: capturable"
                          : "; CUDA graphs: not capturable (" + s_->why_not_capturable() + ")";
  // Node-local peers that take no node-local route say why (and hidden GPUs how).
  auto why = [&](int peer) {
    const std::string* w = c.routes().remark(peer);
    return w ? fmt::format(" [{}]", *w) : std::string();
  };
  auto note = [&](bool send, int peer) {
    return c.nccl() ? c.nccl()->note(send, peer) : std::string();
  };
  for (std::size_t m = 0; m < p.sends.size(); ++m)
    out += fmt::format("\n  send to {}: {} B via {}{}{}", p.sends[m].peer, p.sends[m].bytes,
                       c.routes().how(c.routes().send(m)), note(true, p.sends[m].peer),
                       why(p.sends[m].peer));
  for (std::size_t m = 0; m < p.recvs.size(); ++m)
    out += fmt::format("\n  recv from {}: {} B via {}{}{}", p.recvs[m].peer, p.recvs[m].bytes,
                       c.routes().how(c.routes().recv(m)), note(false, p.recvs[m].peer),
                       why(p.recvs[m].peer));
  if (c.pipeline()) out += "\n  " + c.pipeline()->describe();
  if (c.copier()) out += "\n  " + c.copier()->summary();
  return out;
}

void exchange_handle::wait() {
  if (generation_ == s_->generation()) s_->wait();
}
bool exchange_handle::test() {
  return generation_ != s_->generation() || s_->test();
}

}  // namespace halox
