// Set-up shared by every transport mode, and the choice of the mode (see exchange_core.hpp).
#include "exchange/exchange_core.hpp"

#include <algorithm>
#include <iterator>
#include <string_view>

#include "exchange/peer_agreement.hpp"
#include "halox/comm/agree.hpp"
#include "halox/core/error.hpp"
#include "mpi/check.hpp"

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
  prog.send_buf = allocate_mapped(prog.send_extent);
  prog.recv_buf = allocate_mapped(prog.recv_extent);
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

// Local copies of fewer bytes than this stay inside the pack kernel under NCCL: beside it,
// they would cost the host two events and a launch (about 3 us) for less GPU time than that.
constexpr std::size_t local_beside_min_bytes = std::size_t(1) << 20;

std::size_t bytes_of(const std::vector<copy_op>& ops) {
  std::size_t n = 0;
  for (const auto& op : ops) {
    std::size_t b = op.ndims > 0 ? op.elem : 0;
    for (int k = 0; k < op.ndims; ++k) b *= std::size_t(op.count[std::size_t(k)]);
    n += b;
  }
  return n;
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
    : comm(c),
      prog(std::move(p)),
      agreed((check_peer_agreement(MPI_Comm(comm), prog), true)),
      routes(agree_routes(MPI_Comm(comm), prog)),
      chunk(agree_on_chunk(MPI_Comm(comm), prog)),
      ipc(peer_ipc::attach(MPI_Comm(comm), prog, routes, transport_problem)),
      shm(attach_shm(MPI_Comm(comm), prog, routes, transport_problem)),
      nccl(attach_nccl(MPI_Comm(comm), routes, prog, ipc.get())),
      staging_copies(prog.copy_staging && !(ipc && ipc->carries_all())),
      mpi_send_list(routes.select(prog.sends, true, through_mpi)),
      mpi_recv_list(routes.select(prog.recvs, false, through_mpi)),
      channels(MPI_Comm(comm), mpi_send_list,
               shm && shm->send_buffer() ? shm->send_buffer() : prog.send_buf.get(), mpi_recv_list,
               prog.recv_buf.get(), chunk),
      recv_message(indices_of(mpi_recv_list, prog.recvs)),
      done(prog.recvs.size() + 1) {
  // Every rank leaves set-up together: a transport's size check fails on every rank.
  agree(comm, [&] {
    if (!transport_problem.empty()) fail("rank {}: {}", comm.rank(), transport_problem);
  });
  place_steps();
  describe_routes();
  // NCCL's connections now, not inside the first exchange (every rank got here: set-up agreed).
  if (nccl) nccl->connect();
  // Host staging by copies with every message through MPI: in pieces, copies overlapping MPI.
  if (gpu && staging_copies && !ipc && !nccl)
    pipe = std::make_unique<staging_pipeline>(channels, chunk, prog.device_send.get(),
                                              prog.send_buf.get(), prog.device_recv.get(),
                                              prog.recv_buf.get(), rank());
}

void exchange_core::place_steps() {
  for (int c = 0; c < 2; ++c) {
    const placement where = shm ? shm->placed(prog, c) : placement{};
    host_pack[c] = place_pack(prog, where);
    host_unpack[c] = place_unpack(prog, where);
  }
  if (!has_device_steps()) return;
  // Messages NCCL moves straight from or into the fields have no pack or unpack steps.
  placement direct;
  if (nccl && !ipc) {
    for (const auto& m : prog.sends) direct.send_direct.push_back(char(nccl->send_direct(m.peer)));
    for (const auto& m : prog.recvs) direct.recv_direct.push_back(char(nccl->recv_direct(m.peer)));
  }
  const device_steps own =
      place_device(prog, direct, prog.send_buf.get(), prog.recv_buf.get());
  const device_steps& first = ipc ? ipc->steps(0) : own;
  // Under NCCL a rank's own periodic images run beside the messages, on a stream of their own,
  // where they are large enough to be worth the launches that costs (below, inside the pack).
  std::vector<copy_op> pack = first.pack, local;
  if (nccl && !ipc && !prog.ordered_device_unpack) {
    const std::byte* buf = prog.send_buf.get();
    const std::size_t extent = extent_of(prog.sends);
    auto is_local = [&](const copy_op& op) {
      return buf == nullptr || op.dst < buf || op.dst >= buf + extent;
    };
    std::copy_if(pack.begin(), pack.end(), std::back_inserter(local), is_local);
    if (bytes_of(local) >= local_beside_min_bytes)
      pack.erase(std::remove_if(pack.begin(), pack.end(), is_local), pack.end());
    else
      local.clear();
  }
  gpu = std::make_unique<device_copier>(pack, first.gather, first.unpack, first.scatter,
                                        prog.device_local_ordered, prog.ordered_device_unpack);
  if (!local.empty()) gpu->run_local_beside(local);
  if (ipc && ipc->alternates()) {
    const device_steps& second = ipc->steps(1);
    gpu->use_alternate(second.pack, second.gather, second.unpack, second.scatter);
  }
  if (!prog.device_boundary.empty())
    rules = std::make_unique<device_boundary>(prog.device_boundary,
                                              static_cast<stream_t>(gpu->stream()), rank());
}

void exchange_core::describe_routes() {
  if (!ipc) return;
  routes.set_how(route::ipc, ipc->path());
  routes.set_how(route::ipc_signalled, ipc->path());
}

bool exchange_core::has_device_steps() const {
  return !prog.device_pack.empty() || !prog.device_unpack.empty() || !prog.device_gather.empty() ||
         !prog.device_scatter.empty() || !prog.device_local_ordered.empty() ||
         !prog.device_boundary.empty();
}

void exchange_core::pack(std::size_t m, const exchange_program::steps& st) const {
  const auto& r = prog.pack_range[m];
  for (std::size_t k = r.c0; k < r.c0 + r.cn; ++k) run(st.copies[k]);
  for (std::size_t k = r.g0; k < r.g0 + r.gn; ++k) gather(st.gathers[k]);
}

void exchange_core::unpack(std::size_t m, const exchange_program::steps& st) const {
  const auto& r = prog.unpack_range[m];
  for (std::size_t k = r.c0; k < r.c0 + r.cn; ++k) run(st.copies[k]);
  for (std::size_t k = r.g0; k < r.g0 + r.gn; ++k) scatter(st.gathers[k]);
}

bool exchange_core::receive_mpi(bool block) {
  while (arrived < mpi_recv_list.size()) {
    if (block) {
      const int c = channels.wait_recv();
      require(c >= 0, "rank {}: internal error: no MPI receive left to wait for", comm.rank());
      ++arrived;
      if (!prog.ordered_unpack) unpack(recv_message[std::size_t(c)], unpack_steps());
    } else {
      const int n = channels.test_recvs(done.data());
      arrived += std::size_t(n);
      if (!prog.ordered_unpack)
        for (int k = 0; k < n; ++k) unpack(recv_message[std::size_t(done[k])], unpack_steps());
      if (arrived < mpi_recv_list.size()) return false;
    }
  }
  return true;
}

void exchange_core::unpack_ordered(const exchange_program::steps& st) {
  if (!prog.ordered_unpack || ordered_done) return;
  for (std::size_t m = 0; m < prog.recvs.size(); ++m) unpack(m, st);
  ordered_done = true;
}

void exchange_core::launch_unpack() {
  if (unpack_pending) return;
  if (pipe)
    pipe->join(gpu->stream());
  else if (staging_copies)
    gpu->copy(prog.device_recv.get(), prog.recv_buf.get(), prog.recv_extent, rank());
  gpu->launch_unpack(rank(), generation);
  if (rules) rules->launch_after_unpack(rank());  // boundary fills, on halox's stream
  unpack_pending = true;
}

void exchange_core::finish_unpack(stream_t before) {
  launch_unpack();
  if (before) {
    gpu->signal(before, rank());
  } else {
    gpu->synchronize(rank());
    unpack_pending = false;
  }
}

bool exchange_core::unpack_ready() {
  launch_unpack();
  if (!gpu->ready(rank()) || (rules && !rules->ready(rank()))) return false;
  unpack_pending = false;
  return true;
}

std::unique_ptr<exchange_path> make_path(exchange_core& c) {
  if (!c.gpu) return make_host_path(c);
  if (c.routes.any(route::ipc_signalled)) return make_ipc_signalled_path(c);
  if (c.routes.any(route::ipc)) return make_ipc_handshake_path(c);
  if (c.nccl) return make_device_nccl_path(c);
  // Device fields and local copies alone (one rank along every periodic dimension); boundary
  // rules follow the unpack on halox's stream, so not with them.
  if (c.prog.sends.empty() && c.prog.recvs.empty() && c.prog.local_ops.empty() && !c.shm &&
      !c.rules)
    return make_device_local_path(c);
  return make_device_path(c);
}

}  // namespace halox::detail
