// The route table (src/transport/routes.hpp): the decision as a pure function of what a rank
// allows, where its peer is and what every rank voted; and the collective step, whose table
// both ranks of every message agree on even where ranks allow different things.
#include <catch2/catch.hpp>
#include <halox/core/error.hpp>

#include <boost/mpi/collectives.hpp>
#include <boost/mpi/communicator.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "check.hpp"
#include "transport/nccl_comm.hpp"
#include "transport/routes.hpp"

namespace hx = halox::detail;
using hx::route;

namespace {

hx::route_wishes host_wishes() {
  return {};
}
hx::route_wishes device_wishes(halox::staging asked, halox::staging staged) {
  hx::route_wishes w;
  w.device_fields = true;
  w.asked = asked;
  w.staged = staged;
  return w;
}
hx::peer_site local(bool same_gpu = false, bool reachable = true) {
  return {true, same_gpu, reachable};
}

}  // namespace

TEST_CASE("routes: what a rank offers a peer", "[routes]") {
  const hx::peer_site remote{};
  auto w = host_wishes();
  CHECK(hx::offer_to(w, 0, 1, local()) == hx::offer_shm);
  CHECK(hx::offer_to(w, 0, 1, remote) == 0);  // another node: MPI
  w.shm_ranks = std::vector<int>{0, 2};
  CHECK(hx::offer_to(w, 0, 2, local()) == hx::offer_shm);
  CHECK(hx::offer_to(w, 0, 1, local()) == 0);  // the peer is not listed
  CHECK(hx::offer_to(w, 1, 0, local()) == 0);  // this rank is not listed
  w.shm_ranks.reset();
  w.host_shared_memory = false;
  CHECK(hx::offer_to(w, 0, 1, local()) == 0);

  auto d = device_wishes(halox::staging::automatic, halox::staging::host_staged);
  CHECK(hx::offer_to(d, 0, 1, local()) == hx::offer_ipc);
  CHECK(hx::offer_to(d, 0, 1, local(true, false)) == hx::offer_ipc);  // the same GPU
  CHECK(hx::offer_to(d, 0, 1, local(false, false)) == 0);  // GPUs that cannot reach each other
  CHECK(hx::offer_to(d, 0, 1, remote) == 0);
  for (auto s : {halox::staging::peer_ipc, halox::staging::nccl}) {
    d.asked = s;
    CHECK(hx::offer_to(d, 0, 1, local()) == hx::offer_ipc);
  }
  for (auto s : {halox::staging::gpu_aware, halox::staging::host_staged}) {
    d.asked = s;
    CHECK(hx::offer_to(d, 0, 1, local()) == 0);
  }
  d.asked = halox::staging::automatic;
  d.ipc_ranks = std::vector<int>{1};
  CHECK(hx::offer_to(d, 0, 1, local()) == 0);
  d.ipc_ranks = std::vector<int>{0, 1};
  CHECK(hx::offer_to(d, 0, 1, local()) == hx::offer_ipc);
  d.host_fields = true;  // host fields share the messages: MPI only
  CHECK(hx::offer_to(d, 0, 1, local()) == 0);
}

TEST_CASE("routes: why a rank offers no CUDA IPC, in words", "[routes]") {
  const hx::peer_site remote{};
  auto d = device_wishes(halox::staging::automatic, halox::staging::host_staged);
  CHECK(hx::why_no_ipc(d, 0, 1, local()) == 0u);
  CHECK(hx::why_no_ipc(d, 0, 1, local(true, false)) == 0u);   // the same GPU
  CHECK(hx::why_no_ipc(d, 0, 1, remote) == 0u);               // another node: not a question
  CHECK(hx::why_no_ipc(host_wishes(), 0, 1, local()) == 0u);  // no device fields
  hx::peer_site hidden = local(false, false);
  hidden.gpu_visible = false;
  CHECK(hx::why_no_ipc(d, 0, 1, hidden) == hx::no_ipc_not_visible);
  CHECK(hx::why_no_ipc(d, 0, 1, local(false, false)) == hx::no_ipc_no_access);
  d.ipc_ranks = std::vector<int>{0};
  CHECK(hx::why_no_ipc(d, 0, 1, local()) == hx::no_ipc_unlisted);
  d.asked = halox::staging::gpu_aware;
  CHECK(hx::why_no_ipc(d, 0, 1, local()) == hx::no_ipc_policy);
  d.host_fields = true;
  CHECK(hx::why_no_ipc(d, 0, 1, local()) == hx::no_ipc_host_fields);

  CHECK(hx::no_ipc_text(hx::no_ipc_not_visible, 0, 1, "0000:19:00.0") ==
        "not CUDA IPC: rank 1's GPU 0000:19:00.0 is not visible to rank 0 (CUDA_VISIBLE_DEVICES "
        "or a container hides it), so halox cannot check peer access between the two GPUs; "
        "leave every GPU of the node visible to every rank and select one per rank with "
        "cudaSetDevice");
  CHECK(hx::no_ipc_text(hx::no_ipc_no_access, 2, 3, "0000:1a:00.0") ==
        "not CUDA IPC: CUDA says rank 2's GPU cannot access rank 3's GPU 0000:1a:00.0");
  CHECK(hx::no_ipc_text(hx::no_ipc_unlisted, 1, 0, "") ==
        "not CUDA IPC: rank 1's exchange_options::peer_ipc_ranks leaves out rank 0");
  CHECK(hx::no_ipc_text(0, 1, 0, "").empty());
}

TEST_CASE("routes: a GPU hidden from one side is tried, not given up", "[routes]") {
  const unsigned hidden = hx::no_ipc_not_visible;
  CHECK(hx::probes_hidden(hidden, hidden));  // each rank sees only its own GPU
  CHECK(hx::probes_hidden(hidden, 0));       // one side sees both
  CHECK(hx::probes_hidden(0, hidden));
  CHECK_FALSE(hx::probes_hidden(0, 0));  // nothing hidden: CUDA IPC was offered already
  // Another reason on either side rules CUDA IPC out without a try.
  for (unsigned other : {unsigned(hx::no_ipc_policy), unsigned(hx::no_ipc_host_fields),
                         unsigned(hx::no_ipc_unlisted), unsigned(hx::no_ipc_no_access)}) {
    CHECK_FALSE(hx::probes_hidden(hidden, other));
    CHECK_FALSE(hx::probes_hidden(other, hidden));
    CHECK_FALSE(hx::probes_hidden(other, 0));
  }
  CHECK(hx::hidden_ipc_text(0, 1, "0000:19:00.0", "") ==
        "rank 1's GPU 0000:19:00.0 is not visible to rank 0 (CUDA_VISIBLE_DEVICES or a "
        "container hides it); CUDA IPC between them worked when tried at set-up");
  CHECK(hx::hidden_ipc_text(
            2, 3, "0000:1a:00.0",
            "rank 3 could not open rank 2's memory: cudaErrorMapBufferObjectFailed") ==
        "not CUDA IPC: rank 3's GPU 0000:1a:00.0 is not visible to rank 2 (CUDA_VISIBLE_DEVICES "
        "or a container hides it), and CUDA IPC between them failed when tried at set-up (rank 3 "
        "could not open rank 2's memory: cudaErrorMapBufferObjectFailed); leave every GPU of the "
        "node visible to every rank and select one per rank with cudaSetDevice");
}

TEST_CASE("routes: votes", "[routes]") {
  using halox::staging;
  CHECK(hx::votes_nccl(device_wishes(staging::nccl, staging::nccl)));
  CHECK(hx::votes_nccl(device_wishes(staging::automatic, staging::nccl)));
  CHECK_FALSE(hx::votes_nccl(device_wishes(staging::automatic, staging::host_staged)));
  CHECK_FALSE(hx::votes_nccl(device_wishes(staging::gpu_aware, staging::gpu_aware)));
  auto mixed = device_wishes(staging::nccl, staging::nccl);
  mixed.host_fields = true;
  CHECK_FALSE(hx::votes_nccl(mixed));
  CHECK_FALSE(hx::votes_nccl(host_wishes()));

  auto d = device_wishes(staging::automatic, staging::host_staged);
  CHECK(hx::votes_signals(d, true, false));
  CHECK_FALSE(hx::votes_signals(d, false, false));  // a message not on CUDA IPC
  CHECK_FALSE(hx::votes_signals(d, true, true));    // a peer on this rank's GPU
  d.ordered_device_unpack = true;
  CHECK_FALSE(hx::votes_signals(d, true, false));
  d.ordered_device_unpack = false;
  d.ipc_device_signals = false;
  CHECK_FALSE(hx::votes_signals(d, true, false));
}

TEST_CASE("routes: the decision, one case per route", "[routes]") {
  using halox::staging;
  const hx::route_votes none{};
  CHECK(hx::decide(host_wishes(), hx::offer_shm, none) == route::shm);
  CHECK(hx::decide(host_wishes(), 0, none) == route::mpi);

  const auto automatic = device_wishes(staging::automatic, staging::host_staged);
  hx::route_votes signals;
  signals.signals_all = true;
  CHECK(hx::decide(automatic, hx::offer_ipc, none) == route::ipc);
  CHECK(hx::decide(automatic, hx::offer_ipc, signals) == route::ipc_signalled);
  CHECK(hx::decide(automatic, 0, none) == route::host_staged);
  CHECK(hx::decide(device_wishes(staging::gpu_aware, staging::gpu_aware), 0, none) ==
        route::gpu_aware);
  CHECK(hx::decide(device_wishes(staging::automatic, staging::gpu_aware), 0, none) ==
        route::gpu_aware);

  const auto nccl = device_wishes(staging::automatic, staging::nccl);
  hx::route_votes all;
  all.nccl_all = all.nccl_any = true;
  CHECK(hx::decide(nccl, 0, all) == route::nccl);
  CHECK(hx::decide(nccl, hx::offer_ipc, all) == route::ipc);  // CUDA IPC first
  hx::route_votes shared = all;
  shared.gpu_shared = true;  // NCCL refuses two ranks on one GPU: automatic falls back
  CHECK(hx::decide(nccl, 0, shared) == route::host_staged);
  hx::route_votes some;
  some.nccl_any = true;
  CHECK(hx::decide(nccl, 0, some) == route::host_staged);
  // A rank that did not vote for NCCL keeps its own staging even where all others did.
  CHECK(hx::decide(automatic, 0, all) == route::host_staged);
}

TEST_CASE("routes: where device messages are staged", "[routes]") {
  using halox::staging;
  hx::exchange_program p;  // one message each way, 4 KiB, device steps only
  p.sends = {{1, 0, 4096}};
  p.recvs = {{1, 0, 4096}};
  const hx::staging_choice pinned{staging::host_staged, false, "pinned"};
  const hx::staging_choice aware{staging::gpu_aware, true, "aware"};
  const hx::staging_choice nccl{staging::nccl, true, "nccl"};
  // As wished where nothing says otherwise.
  auto c = hx::decide_staging(p, pinned, false);
  CHECK((c.policy == staging::host_staged && !c.device_buffers && !c.copy_staging));
  c = hx::decide_staging(p, nccl, true);
  CHECK((c.policy == staging::nccl && c.device_buffers && !c.copy_staging));
  // Automatic NCCL refused by some rank: host staging by copies, whatever the sizes.
  c = hx::decide_staging(p, nccl, false);
  CHECK((c.policy == staging::host_staged && !c.device_buffers && c.copy_staging));
  CHECK(c.why.find("not every rank can use NCCL") != std::string::npos);
  // Messages over one chunk, or host_staging_copies: by copies (host_staged only).
  p.options.staging_chunk_bytes = 1024;
  c = hx::decide_staging(p, pinned, false);
  CHECK(c.copy_staging);
  CHECK(c.why.find("pieces of up to 1024 B") != std::string::npos);
  CHECK_FALSE(hx::decide_staging(p, aware, false).copy_staging);
  p.options.staging_chunk_bytes = 0;
  CHECK_FALSE(hx::decide_staging(p, pinned, false).copy_staging);
  p.options.host_staging_copies = true;
  CHECK(hx::decide_staging(p, pinned, false).copy_staging);
  // Host fields pack on the CPU into the same messages: mapped pinned buffers, never by copies.
  std::byte field[64] = {};
  hx::copy_op host_step{};
  host_step.src = field;
  p.pack.copies.push_back(host_step);
  c = hx::decide_staging(p, aware, false);
  CHECK((c.policy == staging::gpu_aware && !c.device_buffers && !c.copy_staging));
  CHECK_FALSE(hx::decide_staging(p, pinned, false).copy_staging);
}

TEST_CASE("routes: names and families", "[routes]") {
  const std::vector<std::pair<route, std::string>> names = {{route::mpi, "mpi"},
                                                            {route::shm, "shm"},
                                                            {route::shm_direct, "shm_direct"},
                                                            {route::ipc, "ipc"},
                                                            {route::ipc_signalled, "ipc_signalled"},
                                                            {route::nccl, "nccl"},
                                                            {route::gpu_aware, "gpu_aware"},
                                                            {route::host_staged, "host_staged"}};
  REQUIRE(names.size() == hx::route_count);
  for (const auto& [r, name] : names) {
    CHECK(hx::to_string(r) == name);
    CHECK(hx::through_mpi(r) == (name == "mpi" || name == "gpu_aware" || name == "host_staged"));
  }
  const hx::route_table t({route::ipc, route::host_staged}, {route::ipc_signalled}, {});
  CHECK(t.any(route::ipc));
  CHECK_FALSE(t.any(route::nccl));
  CHECK_FALSE(t.all_ipc());
  CHECK(hx::route_table({route::ipc}, {route::ipc_signalled}, {}).all_ipc());
  const std::vector<halox::detail::message> msgs = {{1, 0, 8}, {2, 64, 8}};
  const auto mpi = t.select(msgs, true, hx::through_mpi);
  REQUIRE(mpi.size() == 1);
  CHECK(mpi[0].peer == 2);
}

namespace {

// A program of `n` ranks where every rank sends to and receives from every other (8 bytes each).
hx::exchange_program all_to_all(const boost::mpi::communicator& world) {
  hx::exchange_program p;
  for (int q = 0; q < world.size(); ++q)
    if (q != world.rank()) {
      p.sends.push_back({q, p.sends.size() * 64, 8});
      p.recvs.push_back({q, p.recvs.size() * 64, 8});
    }
  return p;
}

// Every message's route as its sender sees it must be the one its receiver sees, node-local
// routes exactly and MPI-borne ones by family (each side stages its own buffers).
void check_both_sides(const boost::mpi::communicator& world, const hx::exchange_program& p,
                      const hx::route_table& t) {
  std::vector<std::vector<int>> sent(std::size_t(world.size()));
  for (std::size_t m = 0; m < p.sends.size(); ++m)
    sent[std::size_t(p.sends[m].peer)] = {int(t.send(m))};
  std::vector<std::vector<int>> got;
  boost::mpi::all_to_all(world, sent, got);
  for (std::size_t m = 0; m < p.recvs.size(); ++m) {
    const auto& theirs = got[std::size_t(p.recvs[m].peer)];
    REQUIRE(theirs.size() == 1);
    const auto their = route(theirs[0]), mine = t.recv(m);
    INFO("rank " << world.rank() << " from " << p.recvs[m].peer << ": " << hx::to_string(mine)
                 << " / sender " << hx::to_string(their));
    if (hx::through_mpi(mine) || hx::through_mpi(their))
      CHECK(hx::through_mpi(mine) == hx::through_mpi(their));
    else
      CHECK(mine == their);
  }
}

// Whether this process can name its GPU (a build without CUDA names none and says so; a CUDA
// build on a machine without a usable GPU throws): the device cases need it.
bool gpu_or_none() {
  try {
    (void)hx::current_gpu_bus_id();
    return true;
  } catch (const halox::error&) {
    return false;
  }
}

// Rank r's list of ranks allowed to share (a different list on different ranks).
std::optional<std::vector<int>> list_of(int r) {
  if (r % 3 == 0) return std::nullopt;  // everyone
  if (r % 3 == 1) return std::vector<int>{0, 1, 2, 3};
  return std::vector<int>{r, r + 1, r - 1};
}
bool pair_allowed(int a, int b) {
  return hx::listed(list_of(a), a) && hx::listed(list_of(a), b) && hx::listed(list_of(b), a) &&
         hx::listed(list_of(b), b);
}

}  // namespace

TEST_CASE("routes: ranks that allow different things agree on one table", "[routes][mpi]") {
  boost::mpi::communicator world;
  const int me = world.rank();
  for (const int node_size : {0, 1, 2}) {
    hx::exchange_program p = all_to_all(world);
    p.options.node_size = node_size;
    p.options.host_shared_memory = me != 3;  // one rank refuses shared memory altogether
    p.options.peer_shm_ranks = list_of(me);
    const hx::route_table t = hx::route_table::agree(MPI_Comm(world), p);
    check_both_sides(world, p, t);
    for (std::size_t m = 0; m < p.sends.size(); ++m) {  // against a reference of its own
      const int q = p.sends[m].peer;
      const bool node = node_size == 0 || me / node_size == q / node_size;
      const bool shm = node && me != 3 && q != 3 && pair_allowed(me, q);
      CHECK(t.send(m) == (shm ? route::shm : route::mpi));
    }
  }
  // Device wishes (a build without GPUs names none, so every rank seems to share one GPU: CUDA
  // IPC with the MPI handshake where both ranks allow it): staging and peer_ipc_ranks per rank.
  if (!gpu_or_none()) return;
  hx::exchange_program p = all_to_all(world);
  p.has_device_fields = true;
  p.options.device_staging = me == 1 ? halox::staging::gpu_aware : halox::staging::automatic;
  const halox::staging staged = me == 1 ? halox::staging::gpu_aware : halox::staging::host_staged;
  p.options.peer_ipc_ranks = list_of(me);
  const hx::route_table t = hx::route_table::agree(MPI_Comm(world), p, {staged, false, ""});
  check_both_sides(world, p, t);
  for (std::size_t m = 0; m < p.sends.size(); ++m) {
    const int q = p.sends[m].peer;
    const bool ipc = me != 1 && q != 1 && pair_allowed(me, q);
    const route r = t.send(m);  // on GPUs of their own, CUDA IPC may take device signals
    const std::string* why = t.remark(q);
    if (ipc) {
      CHECK((r == route::ipc || r == route::ipc_signalled));
      CHECK(why == nullptr);
      continue;
    }
    CHECK(r == (me == 1 ? route::gpu_aware : route::host_staged));
    // Both ranks say why, naming the rank that declined (this one first): rank 1's policy, or
    // a rank's list.
    REQUIRE(why != nullptr);
    INFO("rank " << me << " to " << q << ": " << *why);
    auto lists = [&](int a, int b) {
      return hx::listed(list_of(a), a) && hx::listed(list_of(a), b);
    };
    const int who = me == 1 || !lists(me, q) ? me : q;
    const std::string expected = who == 1
                                     ? "not CUDA IPC: rank 1's staging policy does not take it"
                                     : "not CUDA IPC: rank " + std::to_string(who) +
                                           "'s exchange_options::peer_ipc_ranks leaves out rank " +
                                           std::to_string(who == me ? q : me);
    CHECK(why->rfind(expected, 0) == 0);
  }
}

TEST_CASE("routes: forced NCCL that not every rank asks for fails on every rank", "[routes][mpi]") {
  boost::mpi::communicator world;
  if (!gpu_or_none()) return;
  hx::exchange_program p = all_to_all(world);
  p.has_device_fields = true;
  const bool forced = world.rank() == 0;
  p.options.device_staging = forced ? halox::staging::nccl : halox::staging::host_staged;
  const hx::staging_choice wish{p.options.device_staging, false, ""};
  const std::string e =
      test_support::error_of([&] { (void)hx::route_table::agree(MPI_Comm(world), p, wish); });
  // A halox that cannot use NCCL (built without it, or its library not loaded) says so first.
  // Ranks of one node on one GPU (this program picks none: every rank on the first) are refused
  // for that next, as before the route table.
  const bool usable = hx::nccl_available();
  const bool shared =
      hx::locality::discover(MPI_Comm(world), 0, hx::current_gpu_bus_id()).gpu_shared();
  const std::string why =
      !usable  ? "rank 0: staging 'nccl': " + hx::nccl_unavailable_reason()
      : shared ? "rank 0: staging 'nccl' needs one GPU per rank, but ranks of this communicator on "
                 "one node share a GPU, which NCCL does not allow; run one rank per GPU or use "
                 "another staging policy"
               : "rank 0: staging 'nccl' needs every rank to use NCCL, and another rank chose "
                 "another staging policy";
  if (world.size() == 1 && usable) {  // every rank asked: NCCL gets its messages (none here)
    CHECK(e.empty());
  } else if (forced) {
    CHECK(e == "halox: " + why);
  } else {
    CHECK(e == "halox: rank " + std::to_string(world.rank()) +
                   ": stopped because another rank rejected its input: " + why);
  }
  // Automatic NCCL on some ranks only: no error, host staging by copies on those ranks.
  p.options.device_staging = halox::staging::automatic;
  const hx::staging_choice automatic{forced ? halox::staging::nccl : halox::staging::host_staged,
                                     forced, ""};
  const hx::route_table t = hx::route_table::agree(MPI_Comm(world), p, automatic);
  CHECK(t.nccl() == (world.size() == 1));
  check_both_sides(world, p, t);
}

TEST_CASE("routes: a chain's NCCL needs every rank", "[routes][mpi]") {
  boost::mpi::communicator world;
  const int me = world.rank();
  const std::vector<int> peers = {(me + world.size() - 1) % world.size()};
  CHECK_FALSE(hx::route_table::agree_chain(MPI_Comm(world), false, true, peers).nccl());
  if (!gpu_or_none()) return;
  const std::string e = test_support::error_of(
      [&] { (void)hx::route_table::agree_chain(MPI_Comm(world), me == 0, true, peers); });
  if (world.size() > 1) {
    const std::string want =
        "rank 0: chain staging 'nccl' needs every rank to ask for it (a device chain with "
        "device_staging = nccl, or HALOX_STAGING=nccl), but another rank did not";
    CHECK(e == (me == 0 ? "halox: " + want
                        : "halox: rank " + std::to_string(me) +
                              ": stopped because another rank rejected its input: " + want));
  } else if (!hx::nccl_available()) {
    CHECK(e == "halox: rank 0: chain staging 'nccl': " + hx::nccl_unavailable_reason());
    if (!hx::nccl_built())
      CHECK(hx::nccl_unavailable_reason() ==
            "this halox was built without NCCL (HALOX_ENABLE_NCCL)");
  }
}
