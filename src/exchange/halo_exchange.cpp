#include "halox/exchange/halo_exchange.hpp"

#include <algorithm>
#include <functional>

#include <fmt/format.h>
#include <mpi.h>

#include "exchange/exchange_core.hpp"
#include "halox/core/error.hpp"
#include "mpi/check.hpp"

namespace halox {

namespace detail {

// What every mode shares: one exchange in flight at a time, generations for handles, and an
// error that ends the object. The mode itself is the path (exchange_core.hpp).
struct exchange_state {
  // Taken from the program before the core takes it (members initialise in this order).
  std::vector<std::function<void()>> after_exchange;
  exchange_core core;
  std::unique_ptr<exchange_path> path;
  bool in_flight = false;
  bool rules = true;    // false: completing exchanges runs no boundary rule (user callbacks)
  std::string failure;  // why an exchange of this object failed; then unusable

  // Whether every rank's path can be captured in a CUDA graph (collective, at set-up), and why
  // not on this rank.
  bool capturable = false;
  const char* blocker = nullptr;

  exchange_state(const boost::mpi::communicator& c, exchange_program p)
      : after_exchange(std::move(p.after_exchange)), core(c, std::move(p)), path(make_path(core)) {
    blocker = path->capture_blocker();
    int mine = blocker == nullptr ? 1 : 0, all = 0;
    mpi::check(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, core.communicator()),
               "MPI_Allreduce", core.rank(), "exchange set-up: CUDA graph capture");
    capturable = all != 0;
    require(capturable || !core.program().options.require_capturable,
            "rank {}: exchange_options::require_capturable asks for an exchange a CUDA graph can "
            "capture, but {}",
            core.rank(), why_not_capturable());
  }

  // For errors and describe(): why a CUDA graph cannot capture this object's exchanges.
  std::string why_not_capturable() const {
    if (blocker != nullptr) return format("this rank's cannot be captured: {}", blocker);
    return "another rank's exchange cannot be captured (see that rank's describe())";
  }

  std::uint64_t generation() const { return core.generation(); }

  void start(stream_t after = nullptr) {
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
    if (after != nullptr && core.copier() != nullptr && core.copier()->probe(after, core.rank())) {
      require(capturable,
              "rank {}: schedule_exchange() is being captured into a CUDA graph, but {}. CUDA "
              "graphs capture exchanges of local copies, CUDA IPC with device signals and NCCL "
              "(docs/graphs.md)",
              core.rank(), why_not_capturable());
      path->captured();
    }
    guarded([&] {
      core.next_exchange();
      in_flight = true;
      path->start(after);
    });
  }
  void wait(stream_t before = nullptr) {
    if (!in_flight) return;
    guarded([&] { path->wait(before); });
    in_flight = false;
    finish(before);
  }
  bool test() {
    if (!in_flight) return true;
    bool complete = false;
    guarded([&] { complete = path->test(); });
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
      path->abandon();
      throw;
    }
  }
};

}  // namespace detail

halo_exchange detail::make_halo_exchange(const boost::mpi::communicator& comm,
                                         exchange_program program) {
  return halo_exchange(comm, std::move(program));
}

halo_exchange::halo_exchange(const boost::mpi::communicator& comm, detail::exchange_program p)
    : s_(std::make_unique<detail::exchange_state>(comm, std::move(p))) {}

halo_exchange::~halo_exchange() {
  if (!s_) return;
  // Completing here is not a user's exchange: boundary fills (user callbacks) do not run.
  s_->rules = false;
  try {
    s_->wait();
  } catch (...) {
    // A destructor must not throw: an MPI failure while completing is dropped here. Call
    // wait() on the handle before destruction to see it.
  }
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
  s_->start();
  s_->wait();
}

exchange_handle halo_exchange::start() {
  s_->start();
  return exchange_handle(s_.get(), s_->generation());
}

bool halo_exchange::in_flight() const {
  return s_->in_flight;
}

void halo_exchange::schedule_exchange(stream_t stream) {
  s_->start(stream);
}

void halo_exchange::schedule_wait(stream_t stream) {
  detail::require(s_->in_flight, "rank {}: schedule_wait() without a scheduled exchange in flight",
                  s_->core.rank());
  s_->wait(stream);
}

std::string halo_exchange::describe() const {
  const auto& c = s_->core;
  const auto& p = c.program();
  std::string out = fmt::format("rank {}: {}; {}; mode: {}", c.rank(), p.summary,
                                c.routes().here().describe(), s_->path->name());
  if (c.copier())
    out += s_->capturable ? "; CUDA graphs: capturable"
                          : "; CUDA graphs: not capturable (" + s_->why_not_capturable() + ")";
  // Node-local peers that could not use shared memory say why.
  auto why = [&](int peer) {
    const std::string* w = c.routes().fallback(peer);
    return w ? fmt::format(" [not shared memory: {}]", *w) : std::string();
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
