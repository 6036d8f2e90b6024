// Set-up shared by every transport mode, and the choice of the mode (see exchange_core.hpp).
#include "exchange/exchange_core.hpp"

#include <algorithm>
#include <string_view>

#include "exchange/peer_agreement.hpp"
#include "halox/comm/agree.hpp"
#include "halox/core/error.hpp"
#include "mpi/check.hpp"
#include "transport/staging_buffer.hpp"

namespace halox::detail {

namespace {
constexpr std::string_view part = "exchange set-up";  // for MPI errors

// The route table of this object (the one collective step that decides every message's route),
// and the program's buffers following it: where automatic NCCL was refused (not every rank can
// use it), the kernels keep the device buffers and one cudaMemcpyAsync per direction moves the
// messages through pinned host memory for MPI (host staging by copies).
route_table agree_routes(MPI_Comm comm, exchange_program& prog) {
  route_table routes = route_table::agree(comm, prog);
  if (prog.staged != staging::nccl || routes.nccl()) return routes;
  prog.device_send = prog.send_buf;
  prog.device_recv = prog.recv_buf;
  prog.send_extent = extent_of(prog.sends);
  prog.recv_extent = extent_of(prog.recvs);
  prog.send_buf = allocate_pinned(prog.send_extent, "mapped", -1);
  prog.recv_buf = allocate_pinned(prog.recv_extent, "mapped", -1);
  prog.copy_staging = true;
  prog.device_buffers = false;
  prog.staged = staging::host_staged;
  return routes;
}

// Collective whenever the program has device fields: where both sides of a message must cut it
// alike (see chunks.hpp). Ranks that stage through host memory ask for their option; the
// smallest wins, 0 (never cut) included; where no rank stages through host memory, nothing is
// cut.
std::size_t agree_on_chunk(MPI_Comm comm, const exchange_program& prog) {
  if (!prog.has_device_fields) return 0;
  constexpr auto none = ~0ULL;
  unsigned long long mine = prog.device_buffers ? none : prog.options.staging_chunk_bytes, all = 0;
  mpi::check(MPI_Allreduce(&mine, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, comm), "MPI_Allreduce",
             -1, part);
  return all == none ? 0 : std::size_t(all);
}

// Shared memory for the messages the table sends that way; its run-time outcome (receivers
// that could not map their sender's buffer, messages that go in one copy) settles the table.
std::unique_ptr<shm_mailbox> attach_shm(MPI_Comm comm, const exchange_program& prog,
                                        route_table& routes, std::string& problem) {
  auto shm = shm_mailbox::attach(comm, prog, routes, problem);
  routes.settle_shm(shm.get());
  return shm;
}

// NCCL for the messages the table gives it, where every rank agreed on NCCL and some rank has
// such a message or forced NCCL (automatic NCCL on one node with CUDA IPC everywhere makes no
// communicator). Collective (every rank agreed on the same).
std::unique_ptr<nccl_path> attach_nccl(MPI_Comm comm, const route_table& routes,
                                       const exchange_program& prog, const peer_ipc* ipc) {
  if (!routes.nccl() || !(routes.votes().beyond_ipc || routes.votes().nccl_forced)) return nullptr;
  auto by_nccl = [](route r) { return r == route::nccl; };
  // Zero-copy pieces where NCCL carries every message (CUDA IPC places its own).
  return nccl_path::attach(comm, false, prog, routes.select(prog.sends, true, by_nccl),
                           prog.send_buf.get(), routes.select(prog.recvs, false, by_nccl),
                           prog.recv_buf.get(), ipc == nullptr);
}

std::vector<std::size_t> indices_of(const std::vector<message>& subset,
                                    const std::vector<message>& all) {
  std::vector<std::size_t> out;
  for (const auto& m : subset)
    for (std::size_t k = 0; k < all.size(); ++k)
      if (all[k].peer == m.peer) out.push_back(k);
  return out;
}
}  // namespace

exchange_core::exchange_core(const boost::mpi::communicator& c, exchange_program p)
    : comm_(c),
      prog_(std::move(p)),
      agreed_((check_peer_agreement(MPI_Comm(comm_), prog_), true)),
      routes_(agree_routes(MPI_Comm(comm_), prog_)),
      chunk_(agree_on_chunk(MPI_Comm(comm_), prog_)),
      ipc_(peer_ipc::attach(MPI_Comm(comm_), prog_, routes_, transport_problem_)),
      shm_(attach_shm(MPI_Comm(comm_), prog_, routes_, transport_problem_)),
      nccl_(attach_nccl(MPI_Comm(comm_), routes_, prog_, ipc_.get())),
      staging_copies_(prog_.copy_staging && !(ipc_ && ipc_->carries_all())),
      mpi_send_list_(routes_.select(prog_.sends, true, through_mpi)),
      mpi_recv_list_(routes_.select(prog_.recvs, false, through_mpi)),
      channels_(MPI_Comm(comm_), mpi_send_list_,
                shm_ && shm_->send_buffer() ? shm_->send_buffer() : prog_.send_buf.get(),
                mpi_recv_list_, prog_.recv_buf.get(), chunk_),
      recv_message_(indices_of(mpi_recv_list_, prog_.recvs)),
      done_(prog_.recvs.size() + 1) {
  // Every rank leaves set-up together: a transport's size check fails on every rank.
  agree(comm_, [&] {
    if (!transport_problem_.empty()) fail("rank {}: {}", comm_.rank(), transport_problem_);
  });
  place_steps();
  describe_routes();
  // NCCL's connections now, not inside the first exchange (every rank got here: set-up agreed).
  if (nccl_) nccl_->connect();
  // Host staging by copies with every message through MPI: in pieces, copies overlapping MPI.
  if (gpu_ && staging_copies_ && !ipc_ && !nccl_)
    pipe_ = std::make_unique<staging_pipeline>(channels_, chunk_, prog_.device_send.get(),
                                               prog_.send_buf.get(), prog_.device_recv.get(),
                                               prog_.recv_buf.get(), rank());
}

void exchange_core::place_steps() {
  for (int c = 0; c < 2; ++c) {
    const placement where = shm_ ? shm_->placed(prog_, c) : placement{};
    host_pack_[c] = place_pack(prog_, where);
    host_unpack_[c] = place_unpack(prog_, where);
  }
  if (!has_device_steps()) return;
  // Messages NCCL moves straight from or into the fields have no pack or unpack steps.
  placement direct;
  if (nccl_ && !ipc_) {
    for (const auto& m : prog_.sends)
      direct.send_direct.push_back(char(nccl_->send_direct(m.peer)));
    for (const auto& m : prog_.recvs)
      direct.recv_direct.push_back(char(nccl_->recv_direct(m.peer)));
  }
  const device_steps own = place_device(prog_, direct, prog_.send_buf.get(), prog_.recv_buf.get());
  const device_steps& first = ipc_ ? ipc_->steps(0) : own;
  // A rank's own periodic images are copied inside the pack kernel on every path. Under NCCL
  // a second stream for them (beside the messages, at the default priority) lost 2-3% of a
  // solver's step: the copies got SMs only at the end of the user's interior update, which the
  // unpack then waited for (docs/performance.md).
  gpu_ = std::make_unique<device_copier>(first.pack, first.gather, first.unpack, first.scatter,
                                         prog_.device_local_ordered, prog_.ordered_device_unpack);
  if (ipc_ && ipc_->alternates()) {
    const device_steps& second = ipc_->steps(1);
    gpu_->use_alternate(second.pack, second.gather, second.unpack, second.scatter);
  }
  if (!prog_.device_boundary.empty())
    rules_ = std::make_unique<device_boundary>(prog_.device_boundary,
                                               static_cast<stream_t>(gpu_->stream()), rank());
}

void exchange_core::describe_routes() {
  if (!ipc_) return;
  routes_.set_how(route::ipc, ipc_->path());
  routes_.set_how(route::ipc_signalled, ipc_->path());
}

bool exchange_core::has_device_steps() const {
  return !prog_.device_pack.empty() || !prog_.device_unpack.empty() ||
         !prog_.device_gather.empty() || !prog_.device_scatter.empty() ||
         !prog_.device_local_ordered.empty() || !prog_.device_boundary.empty();
}

void exchange_core::pack(std::size_t m) const {
  const exchange_program::steps& st = pack_steps();
  const auto& r = prog_.pack_range[m];
  for (std::size_t k = r.c0; k < r.c0 + r.cn; ++k) run(st.copies[k]);
  for (std::size_t k = r.g0; k < r.g0 + r.gn; ++k) gather(st.gathers[k]);
}

void exchange_core::unpack(std::size_t m) const {
  const exchange_program::steps& st = unpack_steps();
  const auto& r = prog_.unpack_range[m];
  for (std::size_t k = r.c0; k < r.c0 + r.cn; ++k) run(st.copies[k]);
  for (std::size_t k = r.g0; k < r.g0 + r.gn; ++k) scatter(st.gathers[k]);
}

bool exchange_core::receive_mpi(bool block) {
  while (arrived_ < mpi_recv_list_.size()) {
    if (block) {
      const int c = channels_.wait_recv();
      require(c >= 0, "rank {}: internal error: no MPI receive left to wait for", comm_.rank());
      ++arrived_;
      if (!prog_.ordered_unpack) unpack(recv_message_[std::size_t(c)]);
    } else {
      const int n = channels_.test_recvs(done_.data());
      arrived_ += std::size_t(n);
      if (!prog_.ordered_unpack)
        for (int k = 0; k < n; ++k) unpack(recv_message_[std::size_t(done_[k])]);
      if (arrived_ < mpi_recv_list_.size()) return false;
    }
  }
  return true;
}

bool exchange_core::unpack_ordered() {
  if (!prog_.ordered_unpack || ordered_done_) return false;
  for (std::size_t m = 0; m < prog_.recvs.size(); ++m) unpack(m);
  ordered_done_ = true;
  return true;
}

bool mpi_messages::receives_from(int peer) const {
  return std::any_of(c_.mpi_recv_list_.begin(), c_.mpi_recv_list_.end(),
                     [&](const message& m) { return m.peer == peer; });
}

void exchange_core::launch_unpack() {
  if (unpack_pending_) return;
  if (pipe_)
    pipe_->join(gpu_->stream());
  else if (staging_copies_)
    gpu_->copy(prog_.device_recv.get(), prog_.recv_buf.get(), prog_.recv_extent, rank());
  gpu_->launch_unpack(rank(), generation_);
  if (rules_) rules_->launch_after_unpack(rank());  // boundary fills, on halox's stream
  unpack_pending_ = true;
}

void exchange_core::finish_unpack(stream_t before) {
  launch_unpack();
  if (before) {
    gpu_->signal(before, rank());
  } else {
    gpu_->synchronize(rank());
    unpack_pending_ = false;
  }
}

bool exchange_core::unpack_ready() {
  launch_unpack();
  if (!gpu_->ready(rank()) || (rules_ && !rules_->ready(rank()))) return false;
  unpack_pending_ = false;
  return true;
}

void exchange_core::unfinished(std::vector<std::string>& out) const {
  std::vector<int> recv, send;
  channels_.unfinished(recv, send);
  for (int p : recv) out.push_back(format("rank {} (MPI: its message has not arrived)", p));
  for (int p : send)
    out.push_back(format("rank {} (MPI: it has not received this rank's message)", p));
  if (!ipc_ || ipc_->device_signalled()) return;
  recv.clear(), send.clear();
  ipc_->unfinished(recv, send);
  for (int p : recv)
    out.push_back(format("rank {} (CUDA IPC: its data-ready message has not arrived)", p));
  for (int p : send)
    out.push_back(
        format("rank {} (CUDA IPC: it has not freed its receive buffer, clear-to-send "
               "not arrived)",
               p));
}

std::unique_ptr<exchange_path> make_path(exchange_core& c) {
  if (!c.copier()) return make_host_path(c);
  if (c.routes().any(route::ipc_signalled)) return make_ipc_signalled_path(c);
  if (c.routes().any(route::ipc)) return make_ipc_handshake_path(c);
  if (c.nccl()) return make_device_nccl_path(c);
  // Device fields and local copies alone (one rank along every periodic dimension); boundary
  // rules follow the unpack on halox's stream, so not with them.
  const auto& p = c.program();
  if (p.sends.empty() && p.recvs.empty() && p.local_ops.empty() && !c.shm() && !c.boundary())
    return make_device_local_path(c);
  return make_device_path(c);
}

}  // namespace halox::detail
