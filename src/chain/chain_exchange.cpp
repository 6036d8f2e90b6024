// The untyped core of halox::chain<T>, the part that is the chain's own: what a round sends
// and the call/reject protocol its sizes carry, gathers and their context windows, and the
// set-up agreement. One round = sizes to both neighbours, then the data; a round mode moves
// them (chain_round.hpp: the MPI channels and transfers on a duplicated communicator, with
// pinned staging for device payloads, chain_mpi.cpp; or the NCCL carrier on the chain's stream,
// chain_nccl.cpp).
#include "halox/chain/chain_exchange.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <mpi.h>
#include <boost/mpi/collectives.hpp>
#if __has_include(<cxxabi.h>)
#include <cxxabi.h>
#endif

#include "chain/chain_call.hpp"
#include "chain/chain_device.hpp"
#include "chain/chain_round.hpp"
#include "halox/comm/agree.hpp"
#include "halox/core/error.hpp"
#include "halox/core/options.hpp"
#include "mpi/check.hpp"
#include "transport/nccl_comm.hpp"
#include "transport/routes.hpp"
#include "transport/staging_buffer.hpp"

namespace halox::detail {

namespace {

constexpr std::string_view part = "chain";  // for MPI errors
constexpr const char* side_name[2] = {"left", "right"};

// The element type's name as the user wrote it, where the compiler can tell.
std::string readable(const char* name) {
#if __has_include(<cxxabi.h>)
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && d ? d : name;
  std::free(d);
  return out;
#else
  return name;
#endif
}

}  // namespace

struct chain_state final : chain_round {
  boost::mpi::communicator comm;
  MPI_Comm raw = MPI_COMM_NULL;
  int rank = 0, size = 1;
  chain_options opt;
  // Carries the rounds (MPI, or NCCL under staging nccl); declared before `gpu`, so that the
  // stream has drained before its buffers go and before the last user lets NCCL go.
  std::unique_ptr<round_mode> rounds;
  std::unique_ptr<chain_stream> gpu;  // device chains: staging copies on halox's stream
  std::uint64_t generation = 0;
  bool in_flight = false;
  std::uint64_t current_call = 0;  // the call under way (chain_call.hpp), sent with every size
  std::string round_error;         // a neighbour made another call or rejected its payload
  bool round_mismatch = false;     // ... and it was another call (that message wins)
  staging_buffer context;          // gather: the collected elements
  std::size_t context_first = 0, context_count = 0;
  std::string failure;  // a round that gave up waiting: the chain refuses further rounds

  chain_state(const boost::mpi::communicator& c, const chain_options& o, std::size_t e,
              const char* type_name)
      : comm(c, boost::mpi::comm_duplicate), opt(o) {
    elem = e;
    raw = MPI_Comm(comm);
    rank = comm.rank();
    size = comm.size();
    context = context_memory();
    bool want_nccl = false;
    agree_on_setup(type_name, want_nccl);
    if (opt.max_elements == 0) opt.max_elements = (std::size_t(1) << 40) / elem;
    exchange_options env;
    env.wait_timeout = opt.wait_timeout;
    opt.wait_timeout = with_environment(env).wait_timeout;
    mpi::check(MPI_Comm_set_errhandler(raw, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", rank,
               part);
    const bool ends = !opt.periodic;
    side[0].peer = ends && rank == 0 ? -1 : (rank + size - 1) % size;
    side[1].peer = ends && rank == size - 1 ? -1 : (rank + 1) % size;
    agree_on_rounds(want_nccl);
  }

  ~chain_state() {
    int finalized = 1;
    MPI_Finalized(&finalized);
    if (finalized || !in_flight) return;
    try {
      finish(true, nullptr);
    } catch (...) {
      // A destructor must not throw; wait() on the handle first to see a failure.
    }
  }

  // Every rank checks its element type and options against rank 0's; all throw if one differs.
  void agree_on_setup(const char* type_name, bool& want_nccl) {
    std::string ref = fmt::format(
        "{} ({} bytes), periodic = {}, max_elements = {}", readable(type_name), elem, opt.periodic,
        opt.max_elements == 0 ? std::string("default") : std::to_string(opt.max_elements));
    const std::string mine = ref;
    boost::mpi::broadcast(comm, ref, 0);
    agree(comm, [&] {
      require(mine == ref,
              "rank {}: chain built with element type {}, but rank 0 built it with {}; every rank "
              "must use the same element type and options",
              rank, mine, ref);
      require(opt.space == memory_space::host || cuda_enabled(),
              "rank {}: device chain requested but this halox was built without CUDA "
              "(HALOX_ENABLE_CUDA=OFF)",
              rank);
      want_nccl = wants_nccl();
      if (opt.space == memory_space::device) gpu = std::make_unique<chain_stream>(rank);
    });
  }

  // This rank's staging choice: the option, overridden by HALOX_STAGING for device chains.
  bool wants_nccl() const {
    const staging asked = opt.device_staging;
    require(asked == staging::automatic || asked == staging::host_staged || asked == staging::nccl,
            "rank {}: chain_options::device_staging = '{}'; a chain moves device buffers through "
            "pinned host memory (auto, host_staged) or NCCL (nccl)",
            rank, to_string(asked));
    require(asked != staging::nccl || device(),
            "rank {}: chain_options::device_staging = 'nccl' on a host chain; NCCL moves device "
            "memory only: give the chain {{.space = halox::device}} or leave the staging at auto",
            rank);
    if (!device()) return false;
    exchange_options o;
    o.device_staging = asked;
    return with_environment(o).device_staging == staging::nccl;  // any other: pinned staging
  }

  // Collective: the route table's chain step (transport/routes.hpp) says whether NCCL carries
  // this chain (every rank asked for it, halox has NCCL, no two ranks of a node share a GPU),
  // or throws on every rank where some rank asked and it cannot. Ranks that do not want NCCL
  // anywhere do one all-reduce and nothing else.
  void agree_on_rounds(bool want) {
    std::vector<int> peers;
    for (const auto& d : side)
      if (d.peer >= 0) peers.push_back(d.peer);
    if (route_table::agree_chain(raw, want, device(), peers).nccl())
      rounds = make_nccl_rounds(*this, comm, *gpu);
    else
      rounds = make_mpi_rounds(*this, raw, rank, gpu.get());
  }

  bool device() const { return opt.space == memory_space::device; }

  // Memory for a gather's context, in the chain's space.
  staging_buffer context_memory() const {
    return {device() ? staging_buffer::place::device : staging_buffer::place::host, "chain staging",
            rank};
  }

  // Why this payload cannot be sent, or "" if it can.
  std::string reject_reason(chain_bytes b, int s) const {
    if (b.count > opt.max_elements)
      return fmt::format(
          "rank {}: payload for the {} neighbour has {} elements, more than max_elements = {} "
          "(a negative count converted to size_t?)",
          rank, side_name[s], b.count, opt.max_elements);
    if (b.count > 0 && b.data == nullptr)
      return fmt::format("rank {}: payload for the {} neighbour has {} elements but a null pointer",
                         rank, side_name[s], b.count);
    if (!device() || b.count == 0 || side[s].peer < 0) return {};
    int gpu_of = -1;
    if (!is_device_pointer(b.data, rank, &gpu_of))
      return fmt::format(
          "rank {}: payload for the {} neighbour is not device memory, but this chain's space "
          "is device",
          rank, side_name[s]);
    const nccl_comm* nccl = rounds->nccl();
    if (nccl && gpu_of >= 0 && gpu_of != nccl->device())
      return fmt::format(
          "rank {}: payload for the {} neighbour (rank {}) is memory of GPU {}, but this chain's "
          "NCCL communicator is on GPU {}",
          rank, side_name[s], side[s].peer, gpu_of, nccl->device());
    return {};
  }

  // A round of the user's: exchange, start or schedule_exchange.
  void start(chain_bytes to_left, chain_bytes to_right, stream_t after) {
    require(!in_flight,
            "rank {}: chain round started while round {} is still in flight; wait() on its "
            "handle first",
            rank, generation);
    current_call = encode_call(chain_op::round);
    const chain_bytes out[2] = {to_left, to_right};
    std::string bad = reject_reason(out[0], 0);
    if (bad.empty()) bad = reject_reason(out[1], 1);
    const bool both[2] = {true, true}, marked[2] = {!bad.empty(), !bad.empty()};
    post_round(out, both, marked, after);
    if (bad.empty()) return;
    // Nothing of the data goes out; the neighbours learn of it from the size and fail this
    // round too instead of waiting. Complete the round so that the object stays usable. Another
    // call on a neighbour is the error both sides report, so it wins over this rank's own.
    try {
      finish(true, nullptr);
    } catch (const error& e) {
      if (round_mismatch) bad = std::string(e.what()).substr(std::string("halox: ").size());
    }
    throw error(bad);
  }

  // Posts a round on the `active` sides: the sizes, each with the call, then (MPI) the data.
  // A `marked` side announces `chain_rejected` and sends no data.
  void post_round(const chain_bytes* out, const bool* active, const bool* marked, stream_t after) {
    if (!failure.empty())
      fail(
          "rank {}: this chain cannot run another round: an earlier one failed ({}); build a new "
          "chain",
          rank, failure.substr(failure.find(": ") + 2));
    ++generation;
    in_flight = true;
    round_error.clear();
    round_mismatch = false;
    for (int s = 0; s < 2; ++s) {
      auto& d = side[s];
      d.active = d.peer >= 0 && active[s];
      d.recv_count = 0;
      d.mismatch = d.rejected_in = false;
      d.send_count = marked[s] ? chain_rejected : out[s].count;
      d.send_from = out[s].data;
      d.send_head[0] = d.send_count;
      d.send_head[1] = current_call;
    }
    rounds->start(after);
  }

  // The neighbour on side `s` made call `theirs`, not this rank's: the error of this round (the
  // left side's, where both differ, so that the message does not depend on arrival order).
  void note_mismatch(int s, std::uint64_t theirs) {
    side[s].mismatch = true;
    if (round_mismatch && s != 0) return;
    round_mismatch = true;
    round_error = fmt::format(
        "rank {}: chain calls differ: this rank called {}, but its {} neighbour (rank {}) called "
        "{}; every rank must make the same chain calls in the same order (gathers with the same "
        "w)",
        rank, describe_call(current_call), side_name[s], side[s].peer, describe_call(theirs));
  }

  // A size has arrived (chain_round): check the call and the count. Data from a neighbour
  // that made another call is received all the same where the transport has it on its way
  // (MPI) and never handed out, so that no message is left behind to meet a later call.
  void on_size(int s) override {
    auto& d = side[s];
    d.recv_count = d.recv_head[0];
    if (d.recv_head[1] != current_call) note_mismatch(s, d.recv_head[1]);
    if (d.recv_count == chain_rejected) {
      d.recv_count = 0;
      d.rejected_in = true;
      if (round_error.empty())
        round_error = fmt::format(
            "rank {}: the {} neighbour (rank {}) rejected its payload in chain round {}; see its "
            "error",
            rank, side_name[s], d.peer, generation);
      return;
    }
    // Options agree across ranks, so this means a corrupted or foreign message.
    require(d.recv_count <= opt.max_elements,
            "rank {}: the {} neighbour (rank {}) announced {} elements, more than max_elements "
            "= {}",
            rank, side_name[s], d.peer, d.recv_count, opt.max_elements);
  }

  // Progresses the round; with `block`, to its end. Returns whether it is complete. Throws
  // (after completing) if a neighbour made another call or rejected its payload.
  bool finish(bool block, stream_t before) {
    if (!in_flight) return true;
    if (!progress(block, before)) return false;
    if (!round_error.empty()) throw error(round_error);
    return true;
  }

  // As finish, but leaves round_error to the caller (gathers).
  bool progress(bool block, stream_t before) {
    if (block && opt.wait_timeout > 0) return progress_bounded(before);
    if (!rounds->progress(block, before)) return false;
    in_flight = false;
    return true;
  }

  // chain_options::wait_timeout: polls the round until it completes or the time is up.
  bool progress_bounded(stream_t before) {
    const auto t0 = std::chrono::steady_clock::now();
    while (!rounds->progress(false, before)) {
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() >
          opt.wait_timeout)
        gave_up();
      std::this_thread::yield();
    }
    in_flight = false;
    return true;
  }
  [[noreturn]] void gave_up() {
    std::string who;
    for (int s = 0; s < 2; ++s)
      if (side[s].active)
        who += fmt::format("{}rank {} ({} neighbour, {})", who.empty() ? "" : ", ", side[s].peer,
                           s == 0 ? "left" : "right", rounds->nccl() ? "NCCL" : "MPI");
    failure = fmt::format(
        "rank {}: chain round #{} gave up after {} s (chain_options::wait_timeout / "
        "HALOX_WAIT_TIMEOUT): still waiting for {}",
        rank, generation, opt.wait_timeout, who.empty() ? std::string("no neighbour") : who);
    in_flight = false;
    throw error(failure);
  }

  chain_bytes received(int s) const {
    return {rounds->received(s), std::size_t(side[s].recv_count)};
  }

  void copy_bytes(std::byte* dst, const std::byte* src, std::size_t n) {
    if (n == 0) return;
    if (gpu)
      gpu->copy(dst, src, n);
    else
      std::memcpy(dst, src, n);
  }

  // Adds `in` to the context on the side nearest the slice's far end: in front for a left
  // context (it came from further left), at the back for a right context.
  void extend_context(chain_bytes in, bool front) {
    if (in.count == 0) return;
    const std::size_t need = (context_count + in.count) * elem;
    if (need > context.capacity()) {
      staging_buffer bigger = context_memory();
      bigger.reserve(std::max(need, 2 * context.capacity()));
      // Left contexts are kept at the end of the buffer so they grow towards the front.
      const std::size_t first = front ? bigger.capacity() / elem - context_count : 0;
      copy_bytes(bigger.get() + first * elem, context.get() + context_first * elem,
                 context_count * elem);
      if (gpu) gpu->synchronize();  // before the old buffer is freed
      context = std::move(bigger);
      context_first = first;
    } else if (front && context_count == 0) {
      context_first = context.capacity() / elem;
    }
    if (front) {
      context_first -= in.count;
      copy_bytes(context.get() + context_first * elem, in.data, in.count * elem);
    } else {
      copy_bytes(context.get() + (context_first + context_count) * elem, in.data, in.count * elem);
    }
    context_count += in.count;
  }

  // A gather in progress, pair by pair: each rank runs rounds with each neighbour for as long
  // as that pair needs them, deciding from counts both ends know, so no collective step is
  // needed and a neighbour that made another call is told in the first round.
  struct gather_run {
    int from = 0, to = 1;  // the data comes from side `from` and goes on to side `to`
    std::size_t w = 0;
    int reach = 0, next_reach = 0;  // rounds in which this rank / the `to` neighbour take data
    std::size_t sent = 0;           // elements sent on to the `to` neighbour: its context size
    std::size_t last = 0;           // elements the last round added to this context
    bool done[2] = {false, false};  // pair over: no neighbour, another call, or rejected
    bool poisoned = false;          // this context cannot be completed: announce chain_rejected
    std::string error;              // thrown at the end: the first, another call first of all
    bool error_is_mismatch = false;

    void fail(const std::string& why, bool mismatch) {
      if (!error.empty() && (error_is_mismatch || !mismatch)) return;
      error = why;
      error_is_mismatch = mismatch;
    }
  };

  gather_run begin_gather(std::size_t w, bool from_left) const {
    gather_run g;
    g.from = from_left ? 0 : 1;
    g.to = 1 - g.from;
    g.w = w;
    // Data k hops away arrives in round k, so a rank has everything there is after `reach`
    // rounds: the chain's start (non-periodic) or every other rank (periodic).
    auto reach = [&](int r) { return opt.periodic ? size - 1 : (from_left ? r : size - 1 - r); };
    g.reach = reach(rank);
    g.next_reach = reach(from_left ? rank + 1 : rank - 1);
    for (int s = 0; s < 2; ++s) g.done[s] = side[s].peer < 0;
    return g;
  }

  // What my `to` neighbour still lacks, from the elements k hops from it: all of its context so
  // far came through me, `g.sent` elements, and the last round brought me `g.last` more.
  chain_bytes onward(chain_bytes mine, bool from_left, int k, const gather_run& g) const {
    chain_bytes out;
    if (k == 0) {
      out.count = std::min(g.w, mine.count);
      out.data = from_left ? mine.data + (mine.count - out.count) * elem : mine.data;
      return out;
    }
    out.count = std::min(g.w - g.sent, g.last);
    const std::size_t seg = from_left ? context_first : context_first + context_count - g.last;
    const std::size_t at = from_left ? seg + g.last - out.count : seg;
    out.data = context.get() + at * elem;
    return out;
  }

  // One blocking round of a gather on the `active` pairs. Round 0 runs on every pair: its
  // sizes carry the call, so that neighbours making other calls meet there and stop.
  void gather_round(chain_bytes mine, gather_run& g, int k, const bool* active, bool feed) {
    const bool from_left = g.from == 0;
    chain_bytes out[2] = {};
    bool marked[2] = {false, false};
    if (active[g.to] && feed) {
      if (!g.poisoned) out[g.to] = onward(mine, from_left, k, g);
      const std::string bad = g.poisoned ? std::string() : reject_reason(out[g.to], g.to);
      if (!bad.empty()) g.fail(bad, false);
      marked[g.to] = g.poisoned || !bad.empty();
      g.poisoned = marked[g.to];
    }
    post_round(out, active, marked, nullptr);
    progress(true, nullptr);
    if (round_mismatch) g.fail(round_error, true);
    if (active[g.to] && (side[g.to].mismatch || marked[g.to]))
      g.done[g.to] = true;
    else if (active[g.to])
      g.sent += out[g.to].count;
    g.last = 0;
    if (!active[g.from]) return;
    const auto& d = side[g.from];
    if (d.mismatch || d.rejected_in) {
      g.done[g.from] = true;
      g.poisoned = true;
      if (d.rejected_in && !d.mismatch)
        g.fail(fmt::format("rank {}: gather_{}: the {} neighbour (rank {}) failed and passed on "
                           "none of the context this rank needs (round {} of the gather); see "
                           "its error",
                           rank, side_name[g.from], side_name[g.from], d.peer, k),
               false);
    } else if (context_count < g.w && k < g.reach) {
      chain_bytes got = received(g.from);
      const std::size_t all = got.count;
      got.count = std::min(got.count, g.w - context_count);
      if (from_left) got.data += (all - got.count) * elem;
      extend_context(got, from_left);
      g.last = got.count;
    }
  }

  chain_bytes gather(chain_bytes mine, std::size_t w, bool from_left) {
    require(!in_flight,
            "rank {}: gather started while chain round {} is still in flight; wait() on its "
            "handle first",
            rank, generation);
    current_call = encode_call(from_left ? chain_op::gather_left : chain_op::gather_right, w);
    gather_run g = begin_gather(w, from_left);
    context_count = 0;
    context_first = 0;
    for (int k = 0;; ++k) {
      // The pair with my `from` neighbour runs while I need more, the one with my `to`
      // neighbour while it does: it has exactly what I sent it, so both ends agree.
      const bool need = context_count < w && k < g.reach;
      const bool feed = g.sent < w && k < g.next_reach;
      bool active[2];
      active[g.from] = !g.done[g.from] && (k == 0 || need);
      active[g.to] = !g.done[g.to] && (k == 0 || feed);
      if (!active[0] && !active[1]) break;
      gather_round(mine, g, k, active, feed);
    }
    if (gpu) gpu->synchronize();
    if (!g.error.empty()) throw error(g.error);
    return {context.get() ? context.get() + context_first * elem : nullptr, context_count};
  }
};

chain_core::chain_core(const boost::mpi::communicator& comm, const chain_options& o,
                       std::size_t elem, const char* type_name)
    : s_(std::make_unique<chain_state>(comm, o, elem, type_name)) {}
chain_core::~chain_core() = default;
chain_core::chain_core(chain_core&&) noexcept = default;
chain_core& chain_core::operator=(chain_core&&) noexcept = default;

void chain_core::start(chain_bytes to_left, chain_bytes to_right, stream_t after) {
  s_->start(to_left, to_right, after);
}
void chain_core::wait(stream_t before) {
  if (before)
    require(s_->in_flight, "rank {}: schedule_wait() without a chain round in flight", s_->rank);
  s_->finish(true, before);
}
bool chain_core::test() {
  return s_->finish(false, nullptr);
}
bool chain_core::has_neighbor(int side) const {
  return s_->side[side].peer >= 0;
}
chain_bytes chain_core::received(int side) const {
  return s_->received(side);
}
chain_bytes chain_core::gather(chain_bytes mine, std::size_t w, bool from_left) {
  return s_->gather(mine, w, from_left);
}
std::uint64_t chain_core::generation() const {
  return s_->generation;
}
bool chain_core::in_flight() const {
  return s_->in_flight;
}
int chain_core::rank() const {
  return s_->rank;
}
int chain_core::neighbor(int side) const {
  return s_->side[side].peer;
}
bool chain_core::periodic() const {
  return s_->opt.periodic;
}
memory_space chain_core::space() const {
  return s_->opt.space;
}
bool chain_core::uses_nccl() const {
  return s_->rounds->nccl() != nullptr;
}

}  // namespace halox::detail
