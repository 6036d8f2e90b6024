// Set-up shared by every transport mode, and the choice of the mode (see exchange_core.hpp).
#include "exchange_core.hpp"

#include "halox/comm/agree.hpp"
#include "halox/core/error.hpp"
#include "halox/exchange/peer_agreement.hpp"

namespace halox::detail {

namespace {
// The program's index of each message in `subset` (matched by peer: one message per peer).
const std::vector<message> no_messages;

// The messages that go neither through CUDA IPC nor through shared memory.
const std::vector<message>& remaining(const exchange_program& prog, const peer_ipc* ipc,
                                      const shm_mailbox* shm, bool sends) {
  if (ipc) return sends ? ipc->mpi_sends() : ipc->mpi_recvs();
  if (shm) return sends ? shm->mpi_sends() : shm->mpi_recvs();
  return sends ? prog.sends : prog.recvs;
}

// Staging nccl: every rank joins the NCCL communicator; device fields only.
std::unique_ptr<nccl_path> attach_nccl(MPI_Comm comm, const exchange_program& prog,
                                       const locality& here, const peer_ipc* ipc) {
  if (prog.options.device_staging != staging::nccl || !prog.has_device_fields) return nullptr;
  int me = 0;
  MPI_Comm_rank(comm, &me);
  require(!prog.has_host_fields,
          "rank {}: staging 'nccl' carries device fields only; exchange host fields with another "
          "exchange object",
          me);
  return nccl_path::attach(comm, here.gpu_shared(), remaining(prog, ipc, nullptr, true),
                           prog.send_buf.get(), remaining(prog, ipc, nullptr, false),
                           prog.recv_buf.get());
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
                              prog.has_device_fields ? peer_ipc::current_gpu() : "")),
      ipc(peer_ipc::attach(MPI_Comm(comm), prog, here, transport_problem)),
      shm(shm_mailbox::attach(MPI_Comm(comm), prog, here, transport_problem)),
      nccl(attach_nccl(MPI_Comm(comm), prog, here, ipc.get())),
      mpi_send_list(nccl ? no_messages : remaining(prog, ipc.get(), shm.get(), true)),
      mpi_recv_list(nccl ? no_messages : remaining(prog, ipc.get(), shm.get(), false)),
      channels(MPI_Comm(comm), mpi_send_list, prog.send_buf.get(), mpi_recv_list,
               prog.recv_buf.get()),
      recv_message(indices_of(mpi_recv_list, prog.recvs)),
      done(prog.recvs.size() + 1) {
  // Every rank leaves set-up together: a transport's size check fails on every rank.
  agree(comm, [&] {
    if (!transport_problem.empty()) fail("rank {}: {}", comm.rank(), transport_problem);
  });
  if (has_device_steps())
    gpu = std::make_unique<device_copier>(prog.device_pack, prog.device_gather, prog.device_unpack,
                                          prog.device_scatter, prog.device_local_ordered,
                                          prog.ordered_device_unpack);
}

bool exchange_core::has_device_steps() const {
  return !prog.device_pack.empty() || !prog.device_unpack.empty() || !prog.device_gather.empty() ||
         !prog.device_scatter.empty() || !prog.device_local_ordered.empty();
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
      if (!prog.ordered_unpack) unpack(recv_message[std::size_t(c)], prog.unpack);
    } else {
      const int n = channels.test_recvs(done.data());
      arrived += std::size_t(n);
      if (!prog.ordered_unpack)
        for (int k = 0; k < n; ++k) unpack(recv_message[std::size_t(done[k])], prog.unpack);
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
  if (prog.copy_staging)
    gpu->copy(prog.device_recv.get(), prog.recv_buf.get(), prog.recv_extent, rank());
  gpu->launch_unpack(rank(), generation);
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
  if (!gpu->ready(rank())) return false;
  unpack_pending = false;
  return true;
}

std::unique_ptr<exchange_path> make_path(exchange_core& c) {
  if (!c.gpu) return make_host_path(c);
  if (c.ipc)
    return c.ipc->device_signalled() ? make_ipc_signalled_path(c) : make_ipc_handshake_path(c);
  if (c.nccl) return make_device_nccl_path(c);
  // Device fields and local copies alone (one rank along every periodic dimension).
  if (c.prog.sends.empty() && c.prog.recvs.empty() && c.prog.local_ops.empty() && !c.shm)
    return make_device_local_path(c);
  return make_device_path(c);
}

}  // namespace halox::detail
