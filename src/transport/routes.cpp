// The route table (see transport/routes.hpp): the one place where a message's route is decided.
#include "transport/routes.hpp"

#include <algorithm>
#include <string_view>

#include <boost/mpi/communicator.hpp>

#include "halox/comm/agree.hpp"
#include "halox/core/error.hpp"
#include "halox/core/format.hpp"
#include "mpi/check.hpp"
#include "transport/nccl_comm.hpp"
#include "transport/shm_mailbox.hpp"

namespace halox::detail {

namespace {
constexpr std::string_view part = "route table";  // for MPI errors
constexpr int tag_offer = 30;                     // the exchange's own communicator

int rank_of(MPI_Comm comm) {
  int me = 0;
  mpi::check(MPI_Comm_rank(comm, &me), "MPI_Comm_rank", -1, part);
  return me;
}
}  // namespace

const char* to_string(route r) noexcept {
  switch (r) {
    case route::mpi:
      return "mpi";
    case route::shm:
      return "shm";
    case route::shm_direct:
      return "shm_direct";
    case route::ipc:
      return "ipc";
    case route::ipc_signalled:
      return "ipc_signalled";
    case route::nccl:
      return "nccl";
    case route::gpu_aware:
      return "gpu_aware";
    case route::host_staged:
      return "host_staged";
  }
  return "?";
}

bool through_mpi(route r) noexcept {
  return r == route::mpi || r == route::gpu_aware || r == route::host_staged;
}

bool listed(const std::optional<std::vector<int>>& ranks, int rank) {
  return !ranks || std::find(ranks->begin(), ranks->end(), rank) != ranks->end();
}

route_wishes route_wishes::of(const exchange_program& prog, staging staged) {
  route_wishes w;
  w.device_fields = prog.has_device_fields;
  w.host_fields = prog.has_host_fields;
  w.asked = prog.options.device_staging;
  w.staged = staged;
  w.host_shared_memory = prog.options.host_shared_memory;
  w.ipc_device_signals = prog.options.ipc_device_signals;
  w.ordered_device_unpack = prog.ordered_device_unpack;
  w.ipc_ranks = prog.options.peer_ipc_ranks;
  w.shm_ranks = prog.options.peer_shm_ranks;
  w.node_size = prog.options.node_size;
  return w;
}

// Shared memory serves host-only exchanges; CUDA IPC device-only ones under staging auto,
// peer_ipc or nccl (NCCL then carries the other messages), between GPUs that reach each other
// (or one GPU). exchange_options::peer_*_ranks: only pairs of listed ranks (tests force mixed
// exchanges).
unsigned offer_to(const route_wishes& w, int me, int peer, const peer_site& site) {
  unsigned o = 0;
  if (!site.same_node) return o;
  if (!w.device_fields && w.host_shared_memory && listed(w.shm_ranks, me) &&
      listed(w.shm_ranks, peer))
    o |= offer_shm;
  const bool ipc_policy =
      w.asked == staging::automatic || w.asked == staging::peer_ipc || w.asked == staging::nccl;
  if (w.device_fields && !w.host_fields && ipc_policy && listed(w.ipc_ranks, me) &&
      listed(w.ipc_ranks, peer) && (site.same_gpu || site.gpu_reachable))
    o |= offer_ipc;
  return o;
}

unsigned why_no_ipc(const route_wishes& w, int me, int peer, const peer_site& site) {
  if (!w.device_fields || !site.same_node) return 0;
  if (w.host_fields) return no_ipc_host_fields;
  if (!(w.asked == staging::automatic || w.asked == staging::peer_ipc || w.asked == staging::nccl))
    return no_ipc_policy;
  if (!listed(w.ipc_ranks, me) || !listed(w.ipc_ranks, peer)) return no_ipc_unlisted;
  if (site.same_gpu || site.gpu_reachable) return 0;
  return site.gpu_visible ? no_ipc_no_access : no_ipc_not_visible;
}

std::string no_ipc_text(unsigned why, int who, int other, const std::string& bus) {
  switch (why) {
    case no_ipc_policy:
      return format(
          "not CUDA IPC: rank {}'s staging policy does not take it (auto, peer_ipc and nccl do)",
          who);
    case no_ipc_host_fields:
      return "not CUDA IPC: host fields share this exchange's messages";
    case no_ipc_unlisted:
      return format("not CUDA IPC: rank {}'s exchange_options::peer_ipc_ranks leaves out rank {}",
                    who, other);
    case no_ipc_not_visible:
      return format(
          "not CUDA IPC: rank {}'s GPU {} is not visible to rank {} (CUDA_VISIBLE_DEVICES or a "
          "container hides it), so halox cannot check peer access between the two GPUs; leave "
          "every GPU of the node visible to every rank and select one per rank with "
          "cudaSetDevice",
          other, bus, who);
    case no_ipc_no_access:
      return format("not CUDA IPC: CUDA says rank {}'s GPU cannot access rank {}'s GPU {}", who,
                    other, bus);
    default:
      return {};
  }
}

bool probes_hidden(unsigned mine, unsigned theirs) {
  auto open = [](unsigned why) { return why == 0 || why == no_ipc_not_visible; };
  return open(mine) && open(theirs) && (mine == no_ipc_not_visible || theirs == no_ipc_not_visible);
}

std::string hidden_ipc_text(int who, int other, const std::string& bus, const std::string& failed) {
  if (failed.empty())
    return format(
        "rank {}'s GPU {} is not visible to rank {} (CUDA_VISIBLE_DEVICES or a container hides "
        "it); CUDA IPC between them worked when tried at set-up",
        other, bus, who);
  return format(
      "not CUDA IPC: rank {}'s GPU {} is not visible to rank {} (CUDA_VISIBLE_DEVICES or a "
      "container hides it), and CUDA IPC between them failed when tried at set-up ({}); leave "
      "every GPU of the node visible to every rank and select one per rank with cudaSetDevice",
      other, bus, who, failed);
}

bool votes_nccl(const route_wishes& w) {
  return w.device_fields && !w.host_fields &&
         (w.asked == staging::nccl || w.staged == staging::nccl);
}

// A kernel polling for a peer on its own GPU could hold the SMs that peer's kernel needs; an
// ordered unpack (reverse exchanges) needs the host.
bool votes_signals(const route_wishes& w, bool all_ipc, bool shares_gpu) {
  return all_ipc && !shares_gpu && !w.ordered_device_unpack && w.ipc_device_signals;
}

route decide(const route_wishes& w, unsigned agreed, const route_votes& v) {
  if (!w.device_fields) return (agreed & offer_shm) != 0 ? route::shm : route::mpi;
  if ((agreed & offer_ipc) != 0) return v.signals_all ? route::ipc_signalled : route::ipc;
  if (v.nccl_usable() && votes_nccl(w)) return route::nccl;
  // Automatic NCCL that not every rank can use: host staging by copies (forced NCCL is an
  // error on every rank before any route is taken).
  if (w.staged == staging::gpu_aware) return route::gpu_aware;
  return route::host_staged;
}

namespace {
bool has_host_steps(const exchange_program& p) {
  return !p.pack.copies.empty() || !p.pack.gathers.empty() || !p.unpack.copies.empty() ||
         !p.unpack.gathers.empty();
}
}  // namespace

staging_choice decide_staging(const exchange_program& prog, staging_choice wish, bool nccl) {
  staging_choice c = std::move(wish);
  const bool host_steps = has_host_steps(prog);
  if (c.policy == staging::nccl && !nccl) {  // automatic NCCL that not every rank can use
    c = {staging::host_staged, false,
         "automatic: not every rank can use NCCL; pack into device memory, cudaMemcpyAsync "
         "through pinned host memory"};
    c.copy_staging = true;
    return c;
  }
  if (c.device_buffers && host_steps) {  // the CPU packs host fields into the buffers
    c.device_buffers = false;
    c.why += "; host fields share the messages: buffers in mapped pinned memory";
  }
  // host_staged by copies: the kernels pack into device memory and cudaMemcpyAsync moves the
  // messages through pinned host memory, in pieces overlapping the MPI transfers
  // (transport/staging_pipeline.hpp). Chosen for messages over one chunk, or by
  // host_staging_copies; only without host fields (they pack into the host buffer).
  const std::size_t chunk = prog.options.staging_chunk_bytes;
  std::size_t largest = 0;
  for (const auto* list : {&prog.sends, &prog.recvs})
    for (const auto& m : *list) largest = std::max(largest, m.bytes);
  const bool large = chunk > 0 && largest > chunk;
  if (c.policy == staging::host_staged && !host_steps &&
      (prog.options.host_staging_copies || large)) {
    c.copy_staging = true;
    c.why = large ? format(
                        "pack into device memory, cudaMemcpyAsync through pinned host memory in "
                        "pieces of up to {} B overlapping MPI",
                        chunk)
                  : std::string(
                        "pack into device memory, cudaMemcpyAsync through pinned host memory "
                        "(host_staging_copies)");
  }
  if (!c.nccl_note.empty()) c.why += "; " + c.nccl_note;
  return c;
}

route_table::route_table(std::vector<route> sends, std::vector<route> recvs, const route_votes& v)
    : sends_(std::move(sends)), recvs_(std::move(recvs)), votes_(v) {}

bool route_table::any(route r) const {
  return std::find(sends_.begin(), sends_.end(), r) != sends_.end() ||
         std::find(recvs_.begin(), recvs_.end(), r) != recvs_.end();
}

bool route_table::all_ipc() const {
  auto ipc = [](route r) { return r == route::ipc || r == route::ipc_signalled; };
  return std::all_of(sends_.begin(), sends_.end(), ipc) &&
         std::all_of(recvs_.begin(), recvs_.end(), ipc);
}

const std::string* route_table::remark(int peer) const {
  const auto it = remark_.find(peer);
  return it == remark_.end() ? nullptr : &it->second;
}

void route_table::settle_shm(const shm_mailbox* shm) {
  if (shm != nullptr)
    for (const auto& [peer, why] : shm->fallbacks()) remark_[peer] = "not shared memory: " + why;
  auto settle = [](route& r, bool shared, bool direct) {
    if (r != route::shm) return;
    r = !shared ? route::mpi : direct ? route::shm_direct : route::shm;
  };
  for (std::size_t m = 0; m < sends_.size(); ++m)
    settle(sends_[m], shm && shm->send_shared(m), shm && shm->send_direct(m));
  for (std::size_t m = 0; m < recvs_.size(); ++m)
    settle(recvs_[m], shm && shm->recv_shared(m), shm && shm->recv_direct(m));
  if (shm) how_[std::size_t(route::shm)] = how_[std::size_t(route::shm_direct)] = shm->how();
}

}  // namespace halox::detail

// ---- The collective steps ----

namespace halox::detail {

namespace {

// Where `peer` is from this rank: its node, and with device fields its GPU.
peer_site site_of(const locality& here, int me, int peer, bool gpu) {
  peer_site s;
  s.same_node = here.same_node(peer);
  const std::string* theirs = here.gpu_of(peer);
  if (!gpu || !s.same_node || theirs == nullptr) return s;
  s.same_gpu = *theirs == *here.gpu_of(me);
  const gpu_access a = s.same_gpu ? gpu_access::peer : gpu_reaches(*theirs, me);
  s.gpu_reachable = !s.same_gpu && a == gpu_access::peer;
  s.gpu_visible = a != gpu_access::not_visible;
  return s;
}

// Device exchanges, after the offers: pairs where a GPU was hidden from one side and nothing else
// rules CUDA IPC out try it (probe_hidden_ipc, collective over those pairs) and take it where it
// worked both ways; every other pair without CUDA IPC gets its reason for describe().
void explain_or_probe(MPI_Comm comm, const locality& here, const std::vector<int>& peers,
                      const std::vector<unsigned>& out, const std::vector<unsigned>& in,
                      std::map<int, unsigned>& agreed, std::map<int, std::string>& why_not,
                      int me) {
  std::vector<int> hidden;
  std::vector<std::size_t> at;
  for (std::size_t k = 0; k < peers.size(); ++k)
    if (probes_hidden(out[k] >> 8, in[k] >> 8)) hidden.push_back(peers[k]), at.push_back(k);
  const std::vector<std::string> failed = probe_hidden_ipc(comm, hidden, me);
  for (std::size_t h = 0; h < hidden.size(); ++h) {
    const int peer = hidden[h];
    const bool mine = out[at[h]] >> 8 == no_ipc_not_visible;  // else the peer cannot see mine
    const std::string* g = here.gpu_of(mine ? peer : me);
    const std::string bus = g ? *g : std::string();
    why_not[peer] = mine ? hidden_ipc_text(me, peer, bus, failed[h])
                         : hidden_ipc_text(peer, me, bus, failed[h]);
    if (failed[h].empty()) agreed[peer] |= offer_ipc;
  }
  for (std::size_t k = 0; k < peers.size(); ++k) {
    if ((agreed[peers[k]] & offer_ipc) != 0 || why_not.count(peers[k]) != 0) continue;
    const unsigned mine = out[k] >> 8, theirs = in[k] >> 8;
    // A hidden GPU is the lesser reason where the other side has one of its own.
    const bool use_mine = mine != 0 && (theirs == 0 || mine != no_ipc_not_visible);
    const std::string* bus = here.gpu_of(use_mine ? peers[k] : me);
    why_not[peers[k]] = use_mine ? no_ipc_text(mine, me, peers[k], bus ? *bus : "")
                                 : no_ipc_text(theirs, peers[k], me, bus ? *bus : "");
  }
}

// Both ranks of a pair take a node-local route only where each offers it: every rank sends its
// offer to each node-local peer of its messages and takes the AND with the peer's. Peers on
// other nodes are offered nothing and asked nothing (locality is the same seen from both).
std::map<int, unsigned> agree_offers(MPI_Comm comm, const route_wishes& w, const locality& here,
                                     const exchange_program& prog, int me,
                                     std::map<int, std::string>& why_not) {
  std::map<int, unsigned> agreed;
  for (const auto* msgs : {&prog.sends, &prog.recvs})
    for (const auto& m : *msgs) agreed[m.peer] = 0;
  if (w.device_fields && w.host_fields) {  // the same on every rank: MPI only
    for (const auto& [peer, o] : agreed)
      if (here.same_node(peer)) why_not[peer] = no_ipc_text(no_ipc_host_fields, me, peer, "");
    return agreed;
  }
  std::vector<int> peers;
  std::vector<unsigned> out, in;
  for (const auto& [peer, o] : agreed)
    if (here.same_node(peer)) {
      const peer_site site = site_of(here, me, peer, w.device_fields);
      peers.push_back(peer);
      out.push_back(offer_to(w, me, peer, site) | why_no_ipc(w, me, peer, site) << 8);
    }
  in.resize(peers.size());
  std::vector<MPI_Request> reqs(2 * peers.size());
  for (std::size_t k = 0; k < peers.size(); ++k) {
    mpi::check(MPI_Irecv(&in[k], 1, MPI_UNSIGNED, peers[k], tag_offer, comm, &reqs[2 * k]),
               "MPI_Irecv(route offer)", me, part, peers[k]);
    mpi::check(MPI_Isend(&out[k], 1, MPI_UNSIGNED, peers[k], tag_offer, comm, &reqs[2 * k + 1]),
               "MPI_Isend(route offer)", me, part, peers[k]);
  }
  if (!reqs.empty())
    mpi::check(MPI_Waitall(int(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE),
               "MPI_Waitall(route offers)", me, part);
  for (std::size_t k = 0; k < peers.size(); ++k) agreed[peers[k]] = out[k] & in[k] & 0xffU;
  if (w.device_fields) explain_or_probe(comm, here, peers, out, in, agreed, why_not, me);
  return agreed;
}

// Collective with device fields: whether NCCL carries the messages CUDA IPC does not. Every
// rank must want it (forced or automatic), be able to use it (built with NCCL, its library
// loaded) and no two ranks of a node may share a GPU (NCCL refuses them); otherwise automatic
// NCCL falls back to host staging by copies, and forced NCCL is an error on every rank, before
// any message is sent.
route_votes vote_nccl(MPI_Comm comm, const route_wishes& w, const locality& here, int me) {
  const bool forced = w.asked == staging::nccl;
  // Automatic NCCL was wished for only where it is available (choose_staging); forced NCCL
  // loads the library here, and a rank that cannot use it votes against.
  const bool available = !forced || w.host_fields || nccl_available();
  const int mine = votes_nccl(w) && available ? 1 : 0;
  int in[4] = {mine, -mine, forced ? -1 : 0, available ? 1 : 0}, out[4] = {0, 0, 0, 0};
  mpi::check(MPI_Allreduce(in, out, 4, MPI_INT, MPI_MIN, comm), "MPI_Allreduce(NCCL votes)", me,
             part);
  route_votes v;
  v.nccl_all = out[0] != 0;
  v.nccl_any = out[1] != 0;
  v.nccl_forced = out[2] != 0;
  v.gpu_shared = here.gpu_shared();
  agree(boost::mpi::communicator(comm, boost::mpi::comm_attach), [&] {
    if (!forced || v.nccl_usable()) return;
    require(!w.host_fields,
            "rank {}: staging 'nccl' carries device fields only; exchange host fields with "
            "another exchange object",
            me);
    require(available, "rank {}: staging 'nccl': {}", me, nccl_unavailable_reason());
    if (out[3] == 0) return;  // the ranks that cannot use NCCL say why
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
  return v;
}

// Collective for device-only exchanges: whether the kernels order every exchange themselves
// (device signals: every message of every rank on CUDA IPC, on different GPUs), and whether
// any rank has a message CUDA IPC does not carry (NCCL is set up for those).
void vote_ipc(MPI_Comm comm, const route_wishes& w, const locality& here,
              const exchange_program& prog, const std::map<int, unsigned>& agreed, route_votes& v,
              int me) {
  bool all = true, shares_gpu = false;
  for (const auto* msgs : {&prog.sends, &prog.recvs})
    for (const auto& m : *msgs) {
      const bool ipc = (agreed.at(m.peer) & offer_ipc) != 0;
      all = all && ipc;
      shares_gpu = shares_gpu || (ipc && *here.gpu_of(m.peer) == *here.gpu_of(me));
    }
  int in[2] = {votes_signals(w, all, shares_gpu) ? 1 : 0, all ? 0 : -1}, out[2] = {0, 0};
  mpi::check(MPI_Allreduce(in, out, 2, MPI_INT, MPI_MIN, comm), "MPI_Allreduce(IPC votes)", me,
             part);
  v.signals_all = out[0] != 0;
  v.beyond_ipc = out[1] != 0;
}

}  // namespace

namespace {
// Collective with device fields: where both sides of a message must cut it alike (see
// chunks.hpp). Ranks that stage through host memory ask for their option; the smallest wins, 0
// (never cut) included; where no rank stages through host memory, nothing is cut.
std::size_t agree_on_chunk(MPI_Comm comm, const staging_choice* how, std::size_t option, int me) {
  constexpr auto none = ~0ULL;
  unsigned long long mine = how == nullptr || how->device_buffers ? none : option, all = 0;
  mpi::check(MPI_Allreduce(&mine, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, comm),
             "MPI_Allreduce(staging chunk)", me, part);
  return all == none ? 0 : std::size_t(all);
}
}  // namespace

route_table route_table::agree(MPI_Comm comm, const exchange_program& prog) {
  if (!has_device_steps(prog))
    return agree(comm, prog, {staging::host_staged, false, "host fields only"});
  return agree(comm, prog, choose_staging(prog.options.device_staging, prog.has_host_fields));
}

route_table route_table::agree(MPI_Comm comm, const exchange_program& prog, staging_choice wish) {
  const route_wishes w = route_wishes::of(prog, wish.policy);
  const int me = rank_of(comm);
  route_table t;
  t.here_ = locality::discover(comm, w.node_size, w.device_fields ? current_gpu_bus_id() : "");
  if (w.device_fields) t.votes_ = vote_nccl(comm, w, t.here_, me);
  const std::map<int, unsigned> agreed = agree_offers(comm, w, t.here_, prog, me, t.remark_);
  if (w.device_fields && !w.host_fields) vote_ipc(comm, w, t.here_, prog, agreed, t.votes_, me);
  for (const auto& m : prog.sends) t.sends_.push_back(decide(w, agreed.at(m.peer), t.votes_));
  for (const auto& m : prog.recvs) t.recvs_.push_back(decide(w, agreed.at(m.peer), t.votes_));
  if (has_device_steps(prog)) t.staging_ = decide_staging(prog, std::move(wish), t.nccl());
  if (w.device_fields)  // the same on every rank (the peers agreed on their fields)
    t.chunk_ = agree_on_chunk(comm, t.device_staging(), prog.options.staging_chunk_bytes, me);
  const std::string how = t.staging_
                              ? format("{} ({})", to_string(t.staging_->policy), t.staging_->why)
                              : std::string("host fields only: packed on the CPU");
  for (const route r : {route::mpi, route::gpu_aware, route::host_staged, route::nccl})
    t.set_how(r, how);
  return t;
}

route_table route_table::agree_chain(MPI_Comm comm, bool want, bool device,
                                     const std::vector<int>& peers) {
  const int me = rank_of(comm);
  int in[2] = {want ? 1 : 0, want ? -1 : 0}, out[2] = {0, 0};
  mpi::check(MPI_Allreduce(in, out, 2, MPI_INT, MPI_MIN, comm), "MPI_Allreduce(staging)", me, part);
  route_table t;
  t.votes_.nccl_all = out[0] != 0;
  t.votes_.nccl_any = t.votes_.nccl_forced = out[1] != 0;
  if (t.votes_.nccl_any) {  // ranks that do not want NCCL anywhere did one all-reduce
    const boost::mpi::communicator c(comm, boost::mpi::comm_attach);
    halox::detail::agree(c, [&] {
      require(t.votes_.nccl_all,
              "rank {}: chain staging 'nccl' needs every rank to ask for it (a device chain with "
              "device_staging = nccl, or HALOX_STAGING=nccl), but {} did not",
              me, want ? "another rank" : "this rank");
      require(nccl_available(), "rank {}: chain staging 'nccl': {}", me, nccl_unavailable_reason());
    });
    t.here_ = locality::discover(comm, 0, current_gpu_bus_id(me));
    t.votes_.gpu_shared = t.here_.gpu_shared();
    halox::detail::agree(c, [&] {
      require(!t.votes_.gpu_shared,
              "rank {}: chain staging 'nccl' needs one GPU per rank, but ranks of this "
              "communicator on one node share a GPU, which NCCL does not allow; run one rank per "
              "GPU or use staging auto",
              me);
    });
  }
  const route r = t.nccl() ? route::nccl : device ? route::host_staged : route::mpi;
  t.sends_.assign(peers.size(), r);
  t.recvs_ = t.sends_;
  return t;
}

}  // namespace halox::detail
