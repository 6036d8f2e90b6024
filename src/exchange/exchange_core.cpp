// Set-up shared by every transport mode, and the choice of the mode (see exchange_core.hpp).
#include "exchange/exchange_core.hpp"

#include <algorithm>
#include <string_view>

#include "exchange/peer_agreement.hpp"
#include "halox/comm/agree.hpp"
#include "halox/core/error.hpp"
#include "halox/field/memory.hpp"
#include "mpi/check.hpp"
#include "transport/staging_buffer.hpp"

namespace halox::detail {

namespace {

// The buffers of `prog`'s messages where the route table put them (`how` is null for host-only
// exchanges: host memory).
message_buffers allocate_buffers(const exchange_program& prog, const staging_choice* how,
                                 int rank) {
  message_buffers b;
  auto buffer = [&](std::size_t bytes) {
    if (how == nullptr) return allocate(memory_space::host, bytes);
    return how->device_buffers ? allocate(memory_space::device, bytes)
                               : allocate_pinned(bytes, "mapped", rank);
  };
  b.send = buffer(prog.send_bytes);
  b.recv = buffer(prog.recv_bytes);
  b.copy_staging = how != nullptr && how->copy_staging;
  if (!b.copy_staging) return b;
  b.device_send = allocate(memory_space::device, prog.send_bytes);
  b.device_recv = allocate(memory_space::device, prog.recv_bytes);
  return b;
}

// NCCL for the messages the table gives it, where every rank agreed on NCCL and some rank has
// such a message or forced NCCL (automatic NCCL on one node with CUDA IPC everywhere makes no
// communicator). Collective (every rank agreed on the same).
std::unique_ptr<nccl_carrier> attach_nccl(MPI_Comm comm, const route_table& routes,
                                          const exchange_program& prog, const message_buffers& bufs,
                                          const peer_ipc* ipc) {
  if (!routes.nccl() || !(routes.votes().beyond_ipc || routes.votes().nccl_forced)) return nullptr;
  auto by_nccl = [](route r) { return r == route::nccl; };
  // Zero-copy pieces where NCCL carries every message (CUDA IPC places its own).
  return nccl_carrier::attach(comm, false, prog, routes.select(prog.sends, true, by_nccl),
                              bufs.send.get(), routes.select(prog.recvs, false, by_nccl),
                              bufs.recv.get(), ipc == nullptr);
}

}  // namespace

// The one route decision of an exchange, in order: every peer plans the same messages; the
// route table (locality, offers, votes, staging); the buffers, allocated once where the table
// put the messages; the program's steps pointed into them; shared memory, whose outcome (one
// copy, or MPI where a receiver cannot map its sender's buffer) the table takes. Nothing
// changes the table or the program after this.
exchange_core::routing exchange_core::decide_routes(MPI_Comm comm, exchange_program layout) {
  check_peer_agreement(comm, layout);
  routing r;
  r.routes = route_table::agree(comm, layout);
  int me = 0;
  mpi::check(MPI_Comm_rank(comm, &me), "MPI_Comm_rank", -1, "exchange set-up");
  r.buffers = allocate_buffers(layout, r.routes.device_staging(), me);
  r.prog = bind_steps(std::move(layout), r.buffers);
  r.shm = shm_mailbox::attach(comm, r.prog, r.buffers, r.routes, r.problem);
  r.routes.settle_shm(r.shm.get());
  return r;
}

exchange_core::exchange_core(const boost::mpi::communicator& c, exchange_program p)
    : exchange_core(c, decide_routes(MPI_Comm(c), std::move(p))) {}

exchange_core::exchange_core(const boost::mpi::communicator& c, routing&& r)
    : comm_(c),
      routes_(std::move(r.routes)),
      buffers_(std::move(r.buffers)),
      prog_(std::move(r.prog)),
      transport_problem_(std::move(r.problem)),
      ipc_(peer_ipc::attach(MPI_Comm(comm_), prog_, buffers_, routes_, transport_problem_)),
      mailbox_(std::move(r.shm)),
      shm_(mailbox_ ? std::make_unique<shm_carrier>(*mailbox_, *this, prog_) : nullptr),
      nccl_(attach_nccl(MPI_Comm(comm_), routes_, prog_, buffers_, ipc_.get())),
      staging_copies_(buffers_.copy_staging && !(ipc_ && ipc_->carries_all())),
      mpi_(MPI_Comm(comm_), *this, routes_.select(prog_.sends, true, through_mpi), prog_.sends,
           mailbox_ && mailbox_->send_buffer() ? mailbox_->send_buffer() : buffers_.send.get(),
           routes_.select(prog_.recvs, false, through_mpi), prog_.recvs, buffers_.recv.get(),
           routes_.chunk()) {
  // Every rank leaves set-up together: a transport's size check fails on every rank.
  agree(comm_, [&] {
    if (!transport_problem_.empty()) fail("rank {}: {}", comm_.rank(), transport_problem_);
  });
  place_steps();
  describe_routes();
  if (nccl_ && gpu_) nccl_->drive_on(*gpu_);
  // NCCL's connections now, not inside the first exchange (every rank got here: set-up agreed).
  if (nccl_) nccl_->connect();
  // Host staging by copies with every message through MPI: in pieces, copies overlapping MPI.
  if (gpu_ && staging_copies_ && !ipc_ && !nccl_)
    pipe_ = std::make_unique<staging_pipeline>(
        mpi_.channels(), *gpu_, routes_.chunk(), buffers_.device_send.get(), buffers_.send.get(),
        buffers_.device_recv.get(), buffers_.recv.get(), rank());
}

void exchange_core::place_steps() {
  for (int c = 0; c < 2; ++c) {
    const placement where = mailbox_ ? mailbox_->placed(prog_, c) : placement{};
    host_pack_[c] = place_pack(prog_, buffers_.send.get(), where);
    host_unpack_[c] = place_unpack(prog_, buffers_.recv.get(), where);
  }
  if (!has_device_steps(prog_) && prog_.device_boundary.empty()) return;
  // Messages NCCL moves straight from or into the fields have no pack or unpack steps.
  placement direct;
  if (nccl_ && !ipc_) {
    for (const auto& m : prog_.sends)
      direct.send_direct.push_back(char(nccl_->send_direct(m.peer)));
    for (const auto& m : prog_.recvs)
      direct.recv_direct.push_back(char(nccl_->recv_direct(m.peer)));
  }
  const device_steps own =
      place_device(prog_, direct, buffers_.kernel_send(), buffers_.kernel_recv());
  const device_steps& first = ipc_ ? ipc_->steps(0) : own;
  // A rank's own periodic images are copied inside the pack kernel on every path. Under NCCL
  // a second stream for them (beside the messages, at the default priority) lost 2-3% of a
  // solver's step: the copies got SMs only at the end of the user's interior update, which the
  // unpack then waited for (docs/performance.md).
  gpu_ = std::make_unique<device_copier>(first.pack, first.gather, first.unpack, first.scatter,
                                         prog_.ordered_device_local, prog_.ordered_device_unpack);
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
  routes_.set_how(route::ipc, ipc_->how());
  routes_.set_how(route::ipc_signalled, ipc_->how());
}

void exchange_core::use_nvtx(const nvtx_names* n) {
  nvtx_ = n;
  for (carrier* c : {static_cast<carrier*>(&mpi_), static_cast<carrier*>(shm_.get()),
                     static_cast<carrier*>(ipc_.get()), static_cast<carrier*>(nccl_.get()),
                     static_cast<carrier*>(pipe_.get())})
    if (c != nullptr) c->use_nvtx(n);
}

void exchange_core::pack(std::size_t m) const {
  const nvtx_range range(*nvtx_, true, m);
  const exchange_program::steps& st = pack_steps();
  const auto& r = prog_.pack_range[m];
  for (std::size_t k = r.c0; k < r.c0 + r.cn; ++k) run(st.copies[k]);
  for (std::size_t k = r.g0; k < r.g0 + r.gn; ++k) gather(st.gathers[k]);
}

void exchange_core::unpack(std::size_t m) const {
  const nvtx_range range(*nvtx_, false, m);
  const exchange_program::steps& st = unpack_steps();
  const auto& r = prog_.unpack_range[m];
  for (std::size_t k = r.c0; k < r.c0 + r.cn; ++k) run(st.copies[k]);
  for (std::size_t k = r.g0; k < r.g0 + r.gn; ++k) scatter(st.gathers[k]);
}

void exchange_core::pack_all() const {
  for (std::size_t m = 0; m < prog_.sends.size(); ++m) pack(m);
}

void exchange_core::run_local() const {
  for (const auto& op : prog_.local_ops) run(op);
}

bool exchange_core::unpack_ordered() {
  if (!prog_.ordered_host_unpack || ordered_done_) return false;
  for (std::size_t m = 0; m < prog_.recvs.size(); ++m) unpack(m);
  ordered_done_ = true;
  return true;
}

void exchange_core::reuse_buffers() {
  if (unpack_pending_) gpu_->synchronize(rank());
  unpack_pending_ = false;
}

void exchange_core::launch_pack(bool by_generation) {
  gpu_->launch_pack(rank(), by_generation ? generation_ : 0);
}

void exchange_core::stage_out() {
  if (staging_copies_)
    gpu_->copy(buffers_.send.get(), buffers_.device_send.get(), prog_.send_bytes, rank());
}

void exchange_core::launch_unpack() {
  if (unpack_pending_) return;
  if (pipe_)
    pipe_->join(gpu_->stream());
  else if (staging_copies_)
    gpu_->copy(buffers_.device_recv.get(), buffers_.recv.get(), prog_.recv_bytes, rank());
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

std::unique_ptr<exchange_mode> make_mode(exchange_core& c) {
  if (!c.copier()) return make_host_mode(c);
  if (c.routes().any(route::ipc_signalled)) return make_ipc_signalled_mode(c);
  if (c.routes().any(route::ipc)) return make_ipc_handshake_mode(c);
  if (c.nccl()) return make_device_nccl_mode(c);
  // Device fields and local copies alone (one rank along every periodic dimension); boundary
  // rules follow the unpack on halox's stream, so not with them.
  const auto& p = c.program();
  if (p.sends.empty() && p.recvs.empty() && p.local_ops.empty() && !c.shm() && !c.boundary())
    return make_device_local_mode(c);
  return make_device_mode(c);
}

}  // namespace halox::detail
