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
// The program's index of each message in `subset` (matched by peer: one message per peer).
const std::vector<message> no_messages;

constexpr std::string_view part = "exchange set-up";  // for MPI errors

// The messages that go neither through CUDA IPC nor through shared memory.
const std::vector<message>& remaining(const exchange_program& prog, const peer_ipc* ipc,
                                      const shm_mailbox* shm, bool sends) {
  if (ipc) return sends ? ipc->mpi_sends() : ipc->mpi_recvs();
  if (shm) return sends ? shm->mpi_sends() : shm->mpi_recvs();
  return sends ? prog.sends : prog.recvs;
}

// Collective whenever the program has device fields: whether NCCL carries the messages CUDA
// IPC does not. Every rank must want it (forced or automatic) and no two ranks of a node may
// share a GPU (NCCL refuses them); otherwise automatic NCCL falls back to host staging by
// copies (the kernels keep the device buffers, one cudaMemcpyAsync per direction moves the
// messages through pinned host memory for MPI), and forced NCCL is an error on every rank.
bool agree_on_nccl(MPI_Comm comm, exchange_program& prog, const locality& here) {
  if (!prog.has_device_fields) return false;
  int me = 0;
  mpi::check(MPI_Comm_rank(comm, &me), "MPI_Comm_rank", -1, part);
  const bool forced = prog.options.device_staging == staging::nccl;
  int mine = (forced || prog.auto_nccl) && !prog.has_host_fields, all = 0;
  mpi::check(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, comm), "MPI_Allreduce", me, part);
  const bool usable = all != 0 && !here.gpu_shared();
  agree(boost::mpi::communicator(comm, boost::mpi::comm_attach), [&] {
    if (!forced || usable) return;
    require(!prog.has_host_fields,
            "rank {}: staging 'nccl' carries device fields only; exchange host fields with "
            "another exchange object",
            me);
    require(!here.gpu_shared(),
            "rank {}: staging 'nccl' needs one GPU per rank, but ranks of this communicator on "
            "one node share a GPU, which NCCL does not allow; run one rank per GPU or use "
            "another staging policy",
            me);
    fail(
        "rank {}: staging 'nccl' needs every rank to use NCCL, and another rank chose another "
        "staging policy",
        me);
  });
  if (prog.auto_nccl && !usable) {
    prog.device_send = prog.send_buf;
    prog.device_recv = prog.recv_buf;
    prog.send_extent = extent_of(prog.sends);
    prog.recv_extent = extent_of(prog.recvs);
    prog.send_buf = allocate_mapped(prog.send_extent);
    prog.recv_buf = allocate_mapped(prog.recv_extent);
    prog.copy_staging = true;
    prog.device_buffers = false;
    prog.auto_nccl = false;
    prog.path =
        "host_staged (automatic: not every rank can use NCCL; pack into device memory, "
        "cudaMemcpyAsync through pinned host memory)";
  }
  return usable;
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

// NCCL for the messages CUDA IPC does not carry, where agree_on_nccl said so and some rank has
// such a message (automatic NCCL on one node with CUDA IPC everywhere makes no communicator).
std::unique_ptr<nccl_path> attach_nccl(MPI_Comm comm, bool usable, const exchange_program& prog,
                                       const peer_ipc* ipc) {
  if (!usable) return nullptr;
  int me = 0;
  mpi::check(MPI_Comm_rank(comm, &me), "MPI_Comm_rank", -1, part);
  const auto& sends = remaining(prog, ipc, nullptr, true);
  const auto& recvs = remaining(prog, ipc, nullptr, false);
  int mine = !sends.empty() || !recvs.empty(), any = 0;
  mpi::check(MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_LOR, comm), "MPI_Allreduce", me, part);
  if (!any && prog.options.device_staging != staging::nccl) return nullptr;
  // Zero-copy pieces where NCCL carries every message (CUDA IPC places its own).
  return nccl_path::attach(comm, false, prog, sends, prog.send_buf.get(), recvs,
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
      here(locality::discover(MPI_Comm(comm), prog.options.node_size,
                              prog.has_device_fields ? current_gpu_bus_id() : "")),
      nccl_usable(agree_on_nccl(MPI_Comm(comm), prog, here)),
      chunk(agree_on_chunk(MPI_Comm(comm), prog)),
      ipc(peer_ipc::attach(MPI_Comm(comm), prog, here, transport_problem)),
      shm(shm_mailbox::attach(MPI_Comm(comm), prog, here, transport_problem)),
      nccl(attach_nccl(MPI_Comm(comm), nccl_usable, prog, ipc.get())),
      staging_copies(prog.copy_staging && !(ipc && ipc->carries_all())),
      mpi_send_list(nccl ? no_messages : remaining(prog, ipc.get(), shm.get(), true)),
      mpi_recv_list(nccl ? no_messages : remaining(prog, ipc.get(), shm.get(), false)),
      channels(MPI_Comm(comm), mpi_send_list,
               shm && shm->send_buffer() ? shm->send_buffer() : prog.send_buf.get(),
               mpi_recv_list, prog.recv_buf.get(), chunk),
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
  path = prog.path;
  if (ipc) {
    (ipc->carries_all() ? path : direct_path) = ipc->path();
    direct_send_peers = ipc->send_peers();
    direct_recv_peers = ipc->recv_peers();
  }
  if (!shm) return;
  for (std::size_t m = 0; m < prog.sends.size(); ++m)
    if (shm->send_shared(m)) direct_send_peers.push_back(prog.sends[m].peer);
  for (std::size_t m = 0; m < prog.recvs.size(); ++m)
    if (shm->recv_shared(m)) direct_recv_peers.push_back(prog.recvs[m].peer);
  if (!direct_send_peers.empty() || !direct_recv_peers.empty()) direct_path = shm->path();
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
  if (c.ipc)
    return c.ipc->device_signalled() ? make_ipc_signalled_path(c) : make_ipc_handshake_path(c);
  if (c.nccl) return make_device_nccl_path(c);
  // Device fields and local copies alone (one rank along every periodic dimension); boundary
  // rules follow the unpack on halox's stream, so not with them.
  if (c.prog.sends.empty() && c.prog.recvs.empty() && c.prog.local_ops.empty() && !c.shm &&
      !c.rules)
    return make_device_local_path(c);
  return make_device_path(c);
}

}  // namespace halox::detail
