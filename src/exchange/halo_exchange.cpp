#include "halox/exchange/halo_exchange.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "halox/comm/agree.hpp"
#include "halox/core/error.hpp"
#include "halox/exchange/peer_agreement.hpp"
#include "halox/pack/device_copy.hpp"
#include "halox/transport/mpi_channels.hpp"
#include "halox/transport/peer_ipc.hpp"
#include "halox/transport/shm_mailbox.hpp"

namespace halox {

namespace detail {

namespace {
// The program's index of each message in `subset` (matched by peer: one message per peer).
std::vector<std::size_t> indices_of(const std::vector<message>& subset,
                                    const std::vector<message>& all) {
  std::vector<std::size_t> out;
  for (const auto& m : subset)
    for (std::size_t k = 0; k < all.size(); ++k)
      if (all[k].peer == m.peer) out.push_back(k);
  return out;
}
}  // namespace

struct exchange_state {
  boost::mpi::communicator comm;
  exchange_program prog;
  bool agreed;                       // every peer plans the same messages (checked first)
  locality here;                     // which peers share this rank's node, and their GPUs
  std::string transport_problem;     // a size mismatch a transport found while setting up
  std::unique_ptr<peer_ipc> ipc;     // null unless messages travel through CUDA IPC
  std::unique_ptr<shm_mailbox> shm;  // null unless host messages travel through shared memory
  const std::vector<message>& mpi_send_list;
  const std::vector<message>& mpi_recv_list;
  mpi_channels channels;                  // data messages that go through MPI
  std::vector<std::size_t> recv_message;  // program index of each channel receive message
  std::unique_ptr<device_copier> gpu;     // null without device fields
  bool unpack_pending = false;            // a scheduled unpack may still read the receive buffer
  std::vector<int> done;                  // scratch for test()
  std::vector<char> taken;                // shared-memory receives of this exchange already seen
  std::size_t arrived = 0;                // MPI receive messages complete so far
  std::size_t shm_arrived = 0;            // shared-memory receive messages complete so far
  bool ordered_done = false;              // test() has unpacked an ordered exchange
  std::vector<char> send_pending;         // shared-memory sends not packed yet this exchange
  std::size_t sends_pending = 0;          // (their receivers were still reading the last one)
  std::uint64_t generation = 0;           // counts start()s, so stale handles know they are done
  bool in_flight = false;
  std::string failure;  // why an exchange of this object failed; then unusable
  // Device fields and local copies alone (one rank along every periodic dimension): a scheduled
  // exchange runs its copies on the user's stream itself (`on_user_stream`), no stream hops.
  bool local_only = false, on_user_stream = false;

  exchange_state(const boost::mpi::communicator& c, exchange_program p)
      : comm(c),
        prog(std::move(p)),
        agreed((check_peer_agreement(MPI_Comm(comm), prog), true)),
        here(locality::discover(MPI_Comm(comm), prog.options.node_size,
                                prog.has_device_fields ? peer_ipc::current_gpu() : "")),
        ipc(peer_ipc::attach(MPI_Comm(comm), prog, here, transport_problem)),
        shm(shm_mailbox::attach(MPI_Comm(comm), prog, here, transport_problem)),
        mpi_send_list(ipc   ? ipc->mpi_sends()
                      : shm ? shm->mpi_sends()
                            : prog.sends),
        mpi_recv_list(ipc   ? ipc->mpi_recvs()
                      : shm ? shm->mpi_recvs()
                            : prog.recvs),
        channels(MPI_Comm(comm), mpi_send_list, prog.send_buf.get(), mpi_recv_list,
                 prog.recv_buf.get()),
        recv_message(indices_of(mpi_recv_list, prog.recvs)),
        done(prog.recvs.size() + 1),
        taken(prog.recvs.size(), 0),
        send_pending(prog.sends.size(), 0) {
    // Every rank leaves set-up together: a transport's size check fails on every rank.
    agree(comm, [&] {
      if (!transport_problem.empty()) fail("rank {}: {}", comm.rank(), transport_problem);
    });
    prepare_odd_steps();
    if (!prog.device_pack.empty() || !prog.device_unpack.empty() || !prog.device_gather.empty() ||
        !prog.device_scatter.empty() || !prog.device_local_ordered.empty())
      gpu = std::make_unique<device_copier>(prog.device_pack, prog.device_gather,
                                            prog.device_unpack, prog.device_scatter,
                                            prog.device_local_ordered, prog.ordered_device_unpack);
    if (signalled()) gpu->use_signals(ipc->signals());
    local_only =
        gpu && prog.sends.empty() && prog.recvs.empty() && prog.local_ops.empty() && !ipc && !shm;
  }
  // CUDA IPC with device signals: the kernels order the exchange among themselves.
  bool signalled() const { return ipc && gpu && ipc->device_signalled(); }

  // Shared-memory messages alternate between two copies of the buffer: odd exchanges run
  // these steps, shifted into the second copy at set-up (MPI messages' steps as they are).
  exchange_program::steps odd_pack, odd_unpack;
  void prepare_odd_steps() {
    if (!shm) return;
    odd_pack = prog.pack;
    odd_unpack = prog.unpack;
    for (std::size_t m = 0; m < prog.sends.size(); ++m) {
      if (!shm->send_shared(m)) continue;
      const auto& r = prog.pack_range[m];
      for (std::size_t k = r.c0; k < r.c0 + r.cn; ++k) odd_pack.copies[k].dst += shm->send_shift();
      for (std::size_t k = r.g0; k < r.g0 + r.gn; ++k) odd_pack.gathers[k].buf += shm->send_shift();
    }
    for (std::size_t m = 0; m < prog.recvs.size(); ++m) {
      if (!shm->recv_shared(m)) continue;
      const auto& r = prog.unpack_range[m];
      for (std::size_t k = r.c0; k < r.c0 + r.cn; ++k)
        odd_unpack.copies[k].src += shm->recv_shift(m);
      for (std::size_t k = r.g0; k < r.g0 + r.gn; ++k)
        odd_unpack.gathers[k].buf += shm->recv_shift(m);
    }
  }
  void pack(std::size_t m) const {
    const auto& r = prog.pack_range[m];
    const auto& st = shm && generation % 2 ? odd_pack : prog.pack;
    for (std::size_t k = r.c0; k < r.c0 + r.cn; ++k) run(st.copies[k]);
    for (std::size_t k = r.g0; k < r.g0 + r.gn; ++k) gather(st.gathers[k]);
  }
  void unpack(std::size_t m) {
    const auto& r = prog.unpack_range[m];
    const auto& st = shm && generation % 2 ? odd_unpack : prog.unpack;
    for (std::size_t k = r.c0; k < r.c0 + r.cn; ++k) run(st.copies[k]);
    for (std::size_t k = r.g0; k < r.g0 + r.gn; ++k) scatter(st.gathers[k]);
  }
  // Packs the shared-memory messages of this exchange whose receivers have unpacked the last
  // one; true when any was packed. Never waits: start() must not depend on a peer's progress.
  bool push_sends() {
    if (sends_pending == 0) return false;
    bool moved = false;
    for (std::size_t m = 0; m < send_pending.size(); ++m) {
      if (!send_pending[m] || !shm->consumed(m, generation)) continue;
      pack(m);
      shm->post_ready(m, generation);
      send_pending[m] = 0;
      --sends_pending;
      moved = true;
    }
    return moved;
  }
  // Unpacks the messages that have arrived (through MPI or shared memory), in arrival order
  // unless the exchange is ordered, and packs deferred shared-memory sends; with `block`, until
  // all is done. True when all is done. Without `block`, yields the processor when nothing
  // moved (ranks may outnumber cores; a polling loop must let its peers run).
  bool receive(bool block) {
    const std::size_t shared = shm ? shm->shared_recv_count() : 0;
    for (int spins = 0;;) {
      bool moved = push_sends();
      for (std::size_t m = 0; shm_arrived < shared && m < prog.recvs.size(); ++m) {
        if (!shm->recv_shared(m) || taken[m] || !shm->ready(m, generation)) continue;
        if (!prog.ordered_unpack) {
          unpack(m);
          shm->post_consumed(m, generation);
        }
        taken[m] = 1;
        ++shm_arrived;
        moved = true;
      }
      if (arrived < mpi_recv_list.size()) {
        if (block && shm_arrived == shared && sends_pending == 0) {  // nothing left to poll
          const int c = channels.wait_recv();
          require(c >= 0, "rank {}: internal error: no MPI receive left to wait for", comm.rank());
          ++arrived;
          if (!prog.ordered_unpack) unpack(recv_message[std::size_t(c)]);
          moved = true;
        } else {
          const int n = channels.test_recvs(done.data());
          arrived += std::size_t(n);
          if (!prog.ordered_unpack)
            for (int k = 0; k < n; ++k) unpack(recv_message[std::size_t(done[k])]);
          moved = moved || n > 0;
        }
      }
      if (arrived == mpi_recv_list.size() && shm_arrived == shared && sends_pending == 0)
        return true;
      if (!block) {
        if (!moved && shm) yield_processor();
        return false;
      }
      if (!moved) spin_pause(spins);
    }
  }
  // Ordered exchanges (reverse): every message has arrived; unpack them in peer order once.
  void unpack_ordered() {
    if (!prog.ordered_unpack || ordered_done) return;
    for (std::size_t m = 0; m < prog.recvs.size(); ++m) unpack(m);
    if (shm)
      for (std::size_t m = 0; m < prog.recvs.size(); ++m)
        if (shm->recv_shared(m)) shm->post_consumed(m, generation);
    ordered_done = true;
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
      in_flight = on_user_stream = false;
      std::fill(send_pending.begin(), send_pending.end(), 0);
      sends_pending = 0;
      throw;
    }
  }
  void start(stream_t after = nullptr) {
    require(failure.empty(),
            "rank {}: this exchange object cannot start another exchange: an earlier one failed "
            "({}); build a new exchange object",
            comm.rank(), failure);
    require(!in_flight,
            "rank {}: start() called while this object's previous exchange is still in flight; "
            "wait() on its handle first",
            comm.rank());
    guarded([&] { run_start(after); });
  }
  void wait(stream_t before = nullptr) {
    if (in_flight) guarded([&] { run_wait(before); });
  }
  bool test() {
    bool complete = !in_flight;
    if (!complete) guarded([&] { complete = run_test(); });
    return complete;
  }

 private:
  void run_start(stream_t after) {
    const int me = comm.rank();
    if (local_only && after) {
      gpu->launch_local(after, me);
      on_user_stream = true;
      ++generation;
      in_flight = true;
      return;
    }
    if (signalled()) {
      // Buffer reuse is guarded on the GPU (consumed flags): the host waits for nothing.
      if (after) gpu->wait_for(after, me);
      gpu->launch_pack(me, generation + 1);
      unpack_pending = false;
      arrived = 0;
      ordered_done = false;
      ++generation;
      in_flight = true;
      return;
    }
    if (gpu && unpack_pending) gpu->synchronize(me);  // the last unpack read the receive buffer
    unpack_pending = false;
    if (ipc) {                 // device fields only: no host packing
      channels.start_recvs();  // peers not reached through CUDA IPC
      ipc->start();            // our IPC senders may now write into our receive buffer
      if (gpu && after) gpu->wait_for(after, me);
      // The pack writes into the receivers' buffers: only once every receiver has started
      // this exchange (clear-to-send), which this path waits for here.
      ipc->wait_clear();
      if (gpu) {
        gpu->launch_pack(me);  // into the IPC receivers' GPU memory, the MPI staging, locally
        if (prog.copy_staging)
          gpu->copy(prog.send_buf.get(), prog.device_send.get(), prog.send_extent, me);
        gpu->synchronize(me);
      }
      ipc->signal_ready();
      for (std::size_t m = 0; m < mpi_send_list.size(); ++m) channels.start_send(m);
    } else if (gpu) {
      channels.start_recvs();
      if (after) gpu->wait_for(after, me);
      gpu->launch_pack(me);  // device fields of every message, and their local copies
      if (prog.copy_staging)
        gpu->copy(prog.send_buf.get(), prog.device_send.get(), prog.send_extent, me);
      for (std::size_t m = 0; m < prog.sends.size(); ++m) pack(m);  // host fields, meanwhile
      // MPI reads what the kernel packed; with nothing to send (only local copies) the host
      // does not wait, and a scheduled exchange stays entirely in stream order.
      if (!prog.sends.empty()) gpu->synchronize(me);
      for (std::size_t c = 0; c < mpi_send_list.size(); ++c) channels.start_send(c);
    } else {
      channels.start_recvs();
      for (std::size_t m = 0, c = 0; m < prog.sends.size(); ++m) {
        if (shm && shm->send_shared(m)) {  // packed as soon as its receiver is done
          send_pending[m] = 1;
          ++sends_pending;
        } else {
          pack(m);
          channels.start_send(c++);  // channel messages keep the program's order
        }
      }
    }
    for (const auto& op : prog.local_ops) run(op);
    std::fill(taken.begin(), taken.end(), 0);
    shm_arrived = 0;
    arrived = 0;
    ordered_done = false;
    ++generation;
    in_flight = true;
    push_sends();
  }
  void run_wait(stream_t before) {
    const int me = comm.rank();
    if (on_user_stream) {
      gpu->wait_local(before, me);
      on_user_stream = in_flight = false;
      return;
    }
    if (signalled()) {
      // The unpack kernel waits for the senders' data-ready flags itself.
    } else {
      if (ipc) ipc->wait_ready();
      receive(true);
      unpack_ordered();
    }
    if (gpu && !unpack_pending) {  // test() may have launched it already
      if (prog.copy_staging)
        gpu->copy(prog.device_recv.get(), prog.recv_buf.get(), prog.recv_extent, me);
      gpu->launch_unpack(me, generation);
      unpack_pending = true;
    }
    if (gpu && before) {
      gpu->signal(before, me);  // the user's stream waits; the host does not
    } else if (gpu) {
      gpu->synchronize(me);
      unpack_pending = false;
    }
    channels.wait_sends();
    if (ipc && !signalled()) ipc->wait_sends();
    in_flight = false;
  }
  bool run_test() {
    if (on_user_stream) {
      if (!gpu->ready(comm.rank())) return false;
      on_user_stream = in_flight = false;
      return true;
    }
    if (ipc && !signalled()) {  // (with signals the unpack kernel waits for the data itself)
      if (!ipc->test_ready()) return false;
      if (!ipc->test_sends()) return false;
    }
    if (!receive(false) || !channels.test_sends()) return false;
    unpack_ordered();
    if (gpu) {
      if (!unpack_pending) {
        if (prog.copy_staging)
          gpu->copy(prog.device_recv.get(), prog.recv_buf.get(), prog.recv_extent, comm.rank());
        gpu->launch_unpack(comm.rank(), generation);
        unpack_pending = true;
      }
      if (!gpu->ready(comm.rank())) return false;
      unpack_pending = false;
    }
    in_flight = false;
    return true;
  }
};

}  // namespace detail

halo_exchange::halo_exchange(const boost::mpi::communicator& comm, detail::exchange_program p)
    : s_(std::make_unique<detail::exchange_state>(comm, std::move(p))) {}

halo_exchange::~halo_exchange() {
  if (!s_) return;
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
  return exchange_handle(s_.get(), s_->generation);
}

bool halo_exchange::in_flight() const {
  return s_->in_flight;
}

void halo_exchange::schedule_exchange(stream_t stream) {
  s_->start(stream);
}

void halo_exchange::schedule_wait(stream_t stream) {
  detail::require(s_->in_flight, "rank {}: schedule_wait() without a scheduled exchange in flight",
                  s_->comm.rank());
  s_->wait(stream);
}

std::string halo_exchange::describe() const {
  const auto& p = s_->prog;
  std::string out = fmt::format("rank {}: {}; {}", s_->comm.rank(), p.summary, s_->here.describe());
  auto path_to = [&](int peer, const std::vector<int>& direct) -> const std::string& {
    const bool d =
        !p.direct_path.empty() && std::find(direct.begin(), direct.end(), peer) != direct.end();
    return d ? p.direct_path : p.path;
  };
  // Node-local peers that could not use shared memory say why.
  auto why = [&](int peer) {
    const std::string* w = s_->shm ? s_->shm->fallback(peer) : nullptr;
    return w ? fmt::format(" [not shared memory: {}]", *w) : std::string();
  };
  for (const auto& m : p.sends)
    out += fmt::format("\n  send to {}: {} B via {}{}", m.peer, m.bytes,
                       path_to(m.peer, p.direct_send_peers), why(m.peer));
  for (const auto& m : p.recvs)
    out += fmt::format("\n  recv from {}: {} B via {}{}", m.peer, m.bytes,
                       path_to(m.peer, p.direct_recv_peers), why(m.peer));
  if (s_->gpu) out += "\n  " + s_->gpu->summary();
  return out;
}

void exchange_handle::wait() {
  if (generation_ == s_->generation) s_->wait();
}
bool exchange_handle::test() {
  return generation_ != s_->generation || s_->test();
}

}  // namespace halox
