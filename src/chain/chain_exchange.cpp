// The untyped core of halox::chain<T>: one round = sizes to both neighbours, then the data,
// over plain MPI on a duplicated communicator; device payloads staged through pinned memory, or
// (staging nccl) sizes and data as NCCL groups between device buffers on the chain's stream.
#include "halox/chain/chain_exchange.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <mpi.h>
#include <boost/mpi/collectives.hpp>
#if __has_include(<cxxabi.h>)
#include <cxxabi.h>
#endif

#include "chain/chain_call.hpp"
#include "chain/chain_device.hpp"
#include "halox/comm/agree.hpp"
#include "halox/core/error.hpp"
#include "halox/core/options.hpp"
#include "mpi/check.hpp"
#include "transport/nccl_comm.hpp"
#include "transport/routes.hpp"

namespace halox::detail {

namespace {

// Sizes and data in each direction have their own tag, so that with two ranks (periodic) the
// message to my left and the one to my right, both going to the same peer, never mix.
constexpr int tag_size_rightward = 21, tag_size_leftward = 22;
constexpr int tag_data_rightward = 23, tag_data_leftward = 24;
constexpr std::string_view part = "chain";  // for MPI errors
// A size message carrying this instead of a count: the sender rejected its own payload (or, in
// a gather, has no context to pass on).
constexpr std::uint64_t rejected = ~std::uint64_t(0);
// A size message is two words: the count (or `rejected`) and the call (chain_call.hpp).
constexpr int head_words = 2;
constexpr std::size_t head_bytes = head_words * sizeof(std::uint64_t);
// Data messages travel in pieces of at most 1 GiB (MPI counts are int); same tag, in order.
constexpr std::size_t piece_bytes = std::size_t(1) << 30;
constexpr const char* side_name[2] = {"left", "right"};

std::size_t pieces(std::size_t bytes) {
  return (bytes + piece_bytes - 1) / piece_bytes;
}
int piece_size(std::size_t bytes, std::size_t k) {
  return int(std::min(piece_bytes, bytes - k * piece_bytes));
}

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

// Memory in one space that grows geometrically and never shrinks; contents are not kept.
struct growing {
  std::shared_ptr<std::byte> p;
  std::size_t cap = 0;
  std::byte* get() const { return p.get(); }
  // True when it had to allocate. `pinned`: page-locked host memory (device chains' staging).
  bool reserve(std::size_t bytes, memory_space space, bool pinned, int rank) {
    if (bytes <= cap) return false;
    const std::size_t n = std::max(bytes, cap * 2);
    p.reset();  // free first: the old contents are not needed
    p = pinned ? allocate_pinned(n, rank) : allocate(space, n);
    cap = n;
    return true;
  }
};

}  // namespace

// One neighbour: what goes to it and what comes from it in the current round.
struct chain_side {
  int peer = -1;  // -1: no neighbour on this side
  int send_size_tag = 0, send_data_tag = 0, recv_data_tag = 0;
  bool active = false;           // takes part in this round (a gather skips finished pairs)
  std::uint64_t send_count = 0;  // elements, or `rejected`
  std::uint64_t send_head[head_words] = {0, 0};  // count and call; MPI reads it until the end
  std::uint64_t recv_head[head_words] = {0, 0};  // written by the size receive
  std::uint64_t recv_count = 0;                  // elements announced (0 after `rejected`)
  bool size_arrived = false;
  bool mismatch = false;                 // the neighbour made another call
  bool rejected_in = false;              // the neighbour announced `rejected`
  const std::byte* send_from = nullptr;  // host memory MPI sends from
  MPI_Request size_send = MPI_REQUEST_NULL;
  std::vector<MPI_Request> data_send, data_recv;
  growing recv_host;   // host chain: the delivered data; device chain: its pinned staging
  growing recv_dev;    // device chain: the delivered data
  growing send_stage;  // device chain: pinned copy of the payload
};

struct chain_state {
  boost::mpi::communicator comm;
  MPI_Comm raw = MPI_COMM_NULL;
  int rank = 0, size = 1;
  chain_options opt;
  std::size_t elem = 1;
  chain_side side[2];  // 0: left, 1: right
  MPI_Request size_recv[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  // Staging nccl: the communicator shared over these ranks; declared before `gpu`, so that the
  // stream has drained before the last user lets it go.
  std::shared_ptr<nccl_comm> nccl;
  growing sizes_host, sizes_dev;      // nccl: pinned and device heads [send l, send r, recv l, r]
  bool sizes_pending = false;         // nccl: this round's size group is enqueued, not yet read
  std::unique_ptr<chain_stream> gpu;  // device chains: staging copies on halox's stream
  bool delivery_enqueued = false;     // this round's host-to-device copies are enqueued
  bool delivery_pending = false;      // ... and may still be reading the pinned staging
  std::uint64_t generation = 0;
  bool in_flight = false;
  std::uint64_t current_call = 0;  // the call under way (chain_call.hpp), sent with every size
  std::string round_error;         // a neighbour made another call or rejected its payload
  bool round_mismatch = false;     // ... and it was another call (that message wins)
  growing context;                 // gather: the collected elements
  std::size_t context_first = 0, context_count = 0;

  chain_state(const boost::mpi::communicator& c, const chain_options& o, std::size_t e,
              const char* type_name)
      : comm(c, boost::mpi::comm_duplicate), opt(o), elem(e) {
    raw = MPI_Comm(comm);
    rank = comm.rank();
    size = comm.size();
    bool want_nccl = false;
    agree_on_setup(type_name, want_nccl);
    if (opt.max_elements == 0) opt.max_elements = (std::size_t(1) << 40) / elem;
    mpi::check(MPI_Comm_set_errhandler(raw, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", rank,
               part);
    const bool ends = !opt.periodic;
    side[0].peer = ends && rank == 0 ? -1 : (rank + size - 1) % size;
    side[1].peer = ends && rank == size - 1 ? -1 : (rank + 1) % size;
    side[0].send_size_tag = tag_size_leftward;
    side[0].send_data_tag = tag_data_leftward;
    side[0].recv_data_tag = tag_data_rightward;
    side[1].send_size_tag = tag_size_rightward;
    side[1].send_data_tag = tag_data_rightward;
    side[1].recv_data_tag = tag_data_leftward;
    agree_on_nccl(want_nccl);
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
  void agree_on_nccl(bool want) {
    std::vector<int> peers;  // connected now, not in the first round
    for (const auto& d : side)
      if (d.peer >= 0) peers.push_back(d.peer);
    if (!route_table::agree_chain(raw, want, device(), peers).nccl()) return;
    agree(comm, [&] {
      sizes_host.reserve(4 * head_bytes, memory_space::host, true, rank);
      sizes_dev.reserve(4 * head_bytes, memory_space::device, false, rank);
    });
    nccl = nccl_comm::shared(raw);  // collective; fails on every rank together
    nccl->connect(peers);
  }

  bool device() const { return opt.space == memory_space::device; }

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
  // A `marked` side announces `rejected` and sends no data.
  void post_round(const chain_bytes* out, const bool* active, const bool* marked, stream_t after) {
    // The last delivery read the pinned staging (NCCL has none: its stream keeps the order).
    if (gpu && delivery_pending && !nccl) gpu->synchronize();
    delivery_pending = delivery_enqueued = false;
    ++generation;
    in_flight = true;
    round_error.clear();
    round_mismatch = false;
    for (int s = 0; s < 2; ++s) {
      auto& d = side[s];
      d.active = d.peer >= 0 && active[s];
      d.size_arrived = !d.active;
      d.recv_count = 0;
      d.mismatch = d.rejected_in = false;
      d.send_count = marked[s] ? rejected : out[s].count;
      d.send_from = out[s].data;
      d.send_head[0] = d.send_count;
      d.send_head[1] = current_call;
      d.data_recv.clear();
      d.data_send.clear();
    }
    if (nccl) {
      post_sizes_nccl(after);
      return;  // the data group follows the sizes, in finish()
    }
    post_sizes_mpi();
    stage_sends(after);
    for (auto& d : side) send_data(d);
  }

  void post_sizes_mpi() {
    for (int s = 0; s < 2; ++s) {
      auto& d = side[s];
      if (!d.active) continue;
      // Its size comes with the tag of the opposite direction: from my left neighbour, moving
      // rightwards.
      const int recv_tag = s == 0 ? tag_size_rightward : tag_size_leftward;
      mpi::check(
          MPI_Irecv(d.recv_head, head_words, MPI_UINT64_T, d.peer, recv_tag, raw, &size_recv[s]),
          "MPI_Irecv(size)", rank, part, d.peer);
      mpi::check(MPI_Isend(d.send_head, head_words, MPI_UINT64_T, d.peer, d.send_size_tag, raw,
                           &d.size_send),
                 "MPI_Isend(size)", rank, part, d.peer);
    }
  }

  // NCCL sends and receives go in one group per step, in one order on every rank: to the left
  // then to the right; from the right (what moves leftwards) then from the left. So the k-th
  // message between two ranks meets the k-th receive even when the left and the right
  // neighbour are the same rank (two ranks, periodic) or this rank itself (one rank).
  static constexpr int recv_order[2] = {1, 0};

  // Staging nccl: the heads in pinned memory, [send left, send right, recv left, recv right].
  std::uint64_t* head_at(std::size_t k) const {
    return reinterpret_cast<std::uint64_t*>(sizes_host.get()) + k * head_words;
  }

  // Staging nccl: the sizes go device to device as a group, after the work on `after`; their
  // copy back to pinned memory is read once the stream has passed it (finish_nccl).
  void post_sizes_nccl(stream_t after) {
    nccl_call sends[2], recvs[2];
    std::size_t ns = 0, nr = 0;
    auto* dev = reinterpret_cast<std::byte*>(sizes_dev.get());
    for (int s = 0; s < 2; ++s) {
      std::memcpy(head_at(std::size_t(s)), side[s].send_head, head_bytes);
      if (side[s].active) sends[ns++] = {side[s].peer, dev + s * head_bytes, head_bytes};
    }
    for (int s : recv_order)
      if (side[s].active) recvs[nr++] = {side[s].peer, dev + (2 + s) * head_bytes, head_bytes};
    if (after) gpu->wait_for(after);
    if (ns + nr == 0) return;
    gpu->copy(dev, head_at(0), 2 * head_bytes);
    nccl->enqueue_group(gpu->get(), sends, ns, recvs, nr);
    gpu->copy(head_at(2), dev + 2 * head_bytes, 2 * head_bytes);
    gpu->record();
    sizes_pending = true;
  }

  // Staging nccl: true once the work recorded last has run; with `block`, waits for it. Polls
  // NCCL's asynchronous errors meanwhile, so that a failed peer is an error, not a hang.
  bool settle(bool block) {
    while (!gpu->done()) {
      nccl->check_async();
      if (!block) return false;
    }
    return true;
  }

  // Staging nccl, once the sizes are in: the data group, receiving straight into the device
  // buffers. Pairs whose calls differ send nothing either way (both sides know).
  void post_data_nccl() {
    for (int s = 0; s < 2; ++s) {
      if (!side[s].active) continue;
      std::memcpy(side[s].recv_head, head_at(2 + std::size_t(s)), head_bytes);
      on_size(s);
    }
    nccl_call sends[2], recvs[2];
    std::size_t ns = 0, nr = 0;
    for (int s = 0; s < 2; ++s) {
      const auto& d = side[s];
      if (d.active && !d.mismatch && d.send_count != rejected && d.send_count > 0)
        sends[ns++] = {d.peer, const_cast<std::byte*>(d.send_from), d.send_count * elem};
    }
    for (int s : recv_order) {
      const auto& d = side[s];
      if (d.active && d.recv_count > 0)
        recvs[nr++] = {d.peer, d.recv_dev.get(), d.recv_count * elem};
    }
    nccl->enqueue_group(gpu->get(), sends, ns, recvs, nr);
    gpu->record();  // for the polls of test()
    delivery_enqueued = delivery_pending = true;
  }

  // Staging nccl: sizes read, then the data group, then completion: on the host, or by making
  // `before` wait for the chain's stream.
  bool progress_nccl(bool block, stream_t before) {
    if (sizes_pending) {
      if (!settle(block)) return false;
      sizes_pending = false;
      post_data_nccl();
    }
    if (before) {
      gpu->signal(before);  // the user's stream waits; the host does not
    } else {
      if (!settle(block)) return false;
      delivery_pending = false;
    }
    nccl->check_async();
    in_flight = false;
    return true;
  }

  // Points each side's send at host memory: the user's span, or (device) its pinned copy.
  void stage_sends(stream_t after) {
    // Also orders this round's deliveries after the stream's reads of the last round's data.
    if (gpu && after) gpu->wait_for(after);
    bool copied = false;
    for (auto& d : side) {
      if (!gpu || !d.active || d.send_count == rejected || d.send_count == 0) continue;
      const std::size_t bytes = d.send_count * elem;
      d.send_stage.reserve(bytes, memory_space::host, true, rank);
      gpu->copy(d.send_stage.get(), d.send_from, bytes);
      d.send_from = d.send_stage.get();
      copied = true;
    }
    if (copied) gpu->synchronize();
  }

  void send_data(chain_side& d) {
    if (!d.active || d.send_count == rejected || d.send_count == 0) return;
    const std::size_t bytes = d.send_count * elem;
    d.data_send.resize(pieces(bytes));
    for (std::size_t k = 0; k < d.data_send.size(); ++k)
      mpi::check(MPI_Isend(d.send_from + k * piece_bytes, piece_size(bytes, k), MPI_BYTE, d.peer,
                           d.send_data_tag, raw, &d.data_send[k]),
                 "MPI_Isend(data)", rank, part, d.peer);
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

  // A size has arrived: check the call, then post the data receive of exactly that size. Data
  // from a neighbour that made another call is received all the same (MPI: it is on its way)
  // and never handed out, so that no message is left behind to meet a later call.
  void on_size(int s) {
    auto& d = side[s];
    d.size_arrived = true;
    d.recv_count = d.recv_head[0];
    if (d.recv_head[1] != current_call) note_mismatch(s, d.recv_head[1]);
    if (d.recv_count == rejected) {
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
    if (d.mismatch && nccl) d.recv_count = 0;  // over NCCL such a pair sends no data
    if (d.recv_count == 0) return;
    const std::size_t bytes = d.recv_count * elem;
    if (device()) d.recv_dev.reserve(bytes, memory_space::device, false, rank);
    if (nccl) return;  // NCCL receives straight into the device buffer
    d.recv_host.reserve(bytes, memory_space::host, device(), rank);
    d.data_recv.resize(pieces(bytes));
    for (std::size_t k = 0; k < d.data_recv.size(); ++k)
      mpi::check(MPI_Irecv(d.recv_host.get() + k * piece_bytes, piece_size(bytes, k), MPI_BYTE,
                           d.peer, d.recv_data_tag, raw, &d.data_recv[k]),
                 "MPI_Irecv(data)", rank, part, d.peer);
  }

  bool complete(std::vector<MPI_Request>& reqs, bool block, const char* call_name) {
    if (reqs.empty()) return true;
    int flag = 1;
    if (block)
      mpi::check(MPI_Waitall(int(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE), call_name, rank,
                 part);
    else
      mpi::check(MPI_Testall(int(reqs.size()), reqs.data(), &flag, MPI_STATUSES_IGNORE), call_name,
                 rank, part);
    return flag != 0;
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
    if (nccl) return progress_nccl(block, before);
    while (!side[0].size_arrived || !side[1].size_arrived) {
      int idx = MPI_UNDEFINED, flag = 1;
      if (block)
        mpi::check(MPI_Waitany(2, size_recv, &idx, MPI_STATUS_IGNORE), "MPI_Waitany(size)", rank,
                   part);
      else
        mpi::check(MPI_Testany(2, size_recv, &idx, &flag, MPI_STATUS_IGNORE), "MPI_Testany(size)",
                   rank, part);
      if (!flag) return false;
      if (idx == MPI_UNDEFINED) break;  // cannot happen: a side still waits for its size
      on_size(idx);
    }
    for (auto& d : side) {
      if (!complete(d.data_recv, block, "MPI_Waitall(data receives)")) return false;
      if (d.size_send != MPI_REQUEST_NULL) {
        int flag = 1;
        if (block)
          mpi::check(MPI_Wait(&d.size_send, MPI_STATUS_IGNORE), "MPI_Wait(size send)", rank, part,
                     d.peer);
        else
          mpi::check(MPI_Test(&d.size_send, &flag, MPI_STATUS_IGNORE), "MPI_Test(size send)", rank,
                     part, d.peer);
        if (!flag) return false;
      }
      if (!complete(d.data_send, block, "MPI_Waitall(data sends)")) return false;
    }
    // A neighbour's data from another call was only received to be dropped.
    for (auto& d : side)
      if (d.mismatch) d.recv_count = 0;
    if (gpu && !deliver(block, before)) return false;
    in_flight = false;
    return true;
  }

  // Device chains: copies the received data from pinned staging into the device buffers.
  bool deliver(bool block, stream_t before) {
    if (!delivery_enqueued) {
      for (auto& d : side)
        if (d.recv_count > 0) gpu->copy(d.recv_dev.get(), d.recv_host.get(), d.recv_count * elem);
      gpu->record();  // for the polls of test()
      delivery_enqueued = delivery_pending = true;
    }
    if (before) {
      gpu->signal(before);  // the user's stream waits; the host does not
      return true;
    }
    if (block)
      gpu->synchronize();
    else if (!gpu->done())
      return false;
    delivery_pending = false;
    return true;
  }

  chain_bytes received(int s) const {
    const auto& d = side[s];
    return {device() ? d.recv_dev.get() : d.recv_host.get(), std::size_t(d.recv_count)};
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
    if (need > context.cap) {
      growing bigger;
      bigger.reserve(std::max(need, 2 * context.cap), opt.space, false, rank);
      // Left contexts are kept at the end of the buffer so they grow towards the front.
      const std::size_t first = front ? bigger.cap / elem - context_count : 0;
      copy_bytes(bigger.get() + first * elem, context.get() + context_first * elem,
                 context_count * elem);
      if (gpu) gpu->synchronize();  // before the old buffer is freed
      context = std::move(bigger);
      context_first = first;
    } else if (front && context_count == 0) {
      context_first = context.cap / elem;
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
    bool done[2] = {false, false};  // pair over: no neighbour, another call, or `rejected`
    bool poisoned = false;          // this context cannot be completed: announce `rejected`
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
  return s_->nccl != nullptr;
}

}  // namespace halox::detail
