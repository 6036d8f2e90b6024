#pragma once
/// @file
/// The route table: how each message of an exchange (or a chain) travels, decided once at
/// set-up by one collective step, in one place. The step turns locality (the real or virtual
/// node, the GPUs) and what each rank allows (its options, the environment applied) into one
/// route per message that both ranks of the message agree on. The transports (CUDA IPC, shared
/// memory, NCCL, the MPI channels) carry out what the table says, and describe() reads it.
///
/// The step also settles where device messages are staged (the staging policy, host staging by
/// copies where automatic NCCL is refused, the size MPI messages are cut at), which is what the
/// message buffers are allocated for (program/message_buffers.hpp); the program itself is
/// layout only and never changed.
///
/// Two outcomes are known only once shared memory tries (a receiver may be forbidden to open its
/// sender's memory; a message's fields may allow one copy): the exchange's set-up takes them into
/// the table with settle_shm() before anything reads it (exchange_core.cpp, decide_routes).

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <mpi.h>

#include "halox/core/options.hpp"
#include "program/program.hpp"
#include "transport/locality.hpp"
#include "transport/staging.hpp"

namespace halox::detail {

class shm_mailbox;

/// How one message travels (this rank's side; both sides agree on the family: node-local
/// routes and NCCL are taken by both ranks of a message or by neither).
enum class route : std::uint8_t {
  mpi,            ///< host fields through MPI
  shm,            ///< shared memory: packed into a shared buffer, unpacked out of it
  shm_direct,     ///< shared memory: one copy, owned cells straight into the peer's halo
  ipc,            ///< CUDA IPC into the peer's GPU memory, an MPI handshake per exchange
  ipc_signalled,  ///< CUDA IPC ordered by flags in GPU memory (no host wait)
  nccl,           ///< NCCL send/recv on halox's stream
  gpu_aware,      ///< device messages through MPI (device or mapped pinned memory)
  host_staged,    ///< device messages through MPI from pinned host memory
};
inline constexpr std::size_t route_count = 8;
const char* to_string(route r) noexcept;
/// Whether `r` goes through MPI (mpi, gpu_aware, host_staged): the MPI channels carry it.
bool through_mpi(route r) noexcept;

/// Whether `rank` is in an optional list of ranks (exchange_options::peer_ipc_ranks,
/// peer_shm_ranks); no list allows every rank.
bool listed(const std::optional<std::vector<int>>& ranks, int rank);

/// What one rank wants, from its options (the environment applied) and its program.
struct route_wishes {
  bool device_fields = false, host_fields = false;
  staging asked = staging::automatic;     ///< the option itself
  staging staged = staging::host_staged;  ///< choose_staging's policy for device messages
  bool host_shared_memory = true, ipc_device_signals = true, ordered_device_unpack = false;
  std::optional<std::vector<int>> ipc_ranks, shm_ranks;
  int node_size = 0;  ///< exchange_options::node_size, for the locality decision
  /// An exchange's wishes; `staged`: choose_staging's policy for its device messages.
  static route_wishes of(const exchange_program& prog, staging staged);
};

/// Where a peer is, seen from this rank.
struct peer_site {
  bool same_node = false;      ///< on this rank's (possibly virtual) node
  bool same_gpu = false;       ///< drives this rank's GPU
  bool gpu_reachable = false;  ///< its GPU is another this rank's GPU can access (peer access)
  bool gpu_visible = true;     ///< its GPU is visible to this process (else peer access is unknown)
};

/// The node-local routes a rank offers a peer; a pair takes one only where both offer it.
enum : unsigned { offer_shm = 1, offer_ipc = 2 };
unsigned offer_to(const route_wishes& w, int me, int peer, const peer_site& site);
/// Why a rank offers no CUDA IPC to a node-local peer of a device exchange (0: it offers it, or
/// the exchange has no device fields), sent beside its offer so both ranks can say why.
enum : unsigned {
  no_ipc_policy = 1,       ///< its staging policy is gpu_aware or host_staged
  no_ipc_host_fields = 2,  ///< host fields share the messages
  no_ipc_unlisted = 3,     ///< its peer_ipc_ranks leaves the pair out
  no_ipc_not_visible = 4,  ///< the peer's GPU is not visible to it (a probe may still reach it)
  no_ipc_no_access = 5,    ///< CUDA says its GPU cannot access the peer's
};
unsigned why_no_ipc(const route_wishes& w, int me, int peer, const peer_site& site);
/// describe()'s words for `why` (seen from rank `who`; `other`: the pair's other rank, `bus`
/// its GPU).
std::string no_ipc_text(unsigned why, int who, int other, const std::string& bus);
/// Whether a pair whose ranks gave these reasons (why_no_ipc of each side) tries CUDA IPC with
/// probe_hidden_ipc: some side cannot see the other's GPU, and nothing else stands in the way.
bool probes_hidden(unsigned mine, unsigned theirs);
/// describe()'s words for a pair that tried (`failed`: what failed, empty where it worked);
/// `who` cannot see rank `other`'s GPU `bus`.
std::string hidden_ipc_text(int who, int other, const std::string& bus, const std::string& failed);

/// What the ranks voted, all of them together (reductions), and what locality says of all.
struct route_votes {
  bool nccl_all = false;     ///< every rank wants NCCL for its device messages
  bool nccl_any = false;     ///< some rank wants it
  bool nccl_forced = false;  ///< some rank forced it (staging nccl)
  bool gpu_shared = false;   ///< two ranks of one node drive one GPU (NCCL refuses them)
  bool signals_all = false;  ///< CUDA IPC with device signals is possible on every rank
  bool beyond_ipc = false;   ///< some rank has a device message CUDA IPC does not carry
  bool nccl_usable() const { return nccl_all && !gpu_shared; }
};
/// This rank's votes: NCCL for device messages; device signals, given whether every message
/// of this rank takes CUDA IPC and whether a peer of one drives this rank's GPU.
bool votes_nccl(const route_wishes& w);
bool votes_signals(const route_wishes& w, bool all_ipc, bool shares_gpu);

/// Where device messages are staged, from this rank's wish (choose_staging) and whether every
/// rank agreed on NCCL: host fields in the messages keep the buffers in mapped pinned memory;
/// host staging by copies for messages over one staging chunk, for host_staging_copies, and
/// where automatic NCCL was refused. Pure.
staging_choice decide_staging(const exchange_program& prog, staging_choice wish, bool nccl);

/// The decision: a message's route from the node-local routes both ranks offered (`agreed`)
/// and the votes. Pure: the same inputs give the same route on both ranks of the message.
route decide(const route_wishes& w, unsigned agreed, const route_votes& v);

/// One agreed route per message of this rank (its sends and its receives, as the program
/// lists them), and what describe() says of each route.
class route_table {
 public:
  route_table() = default;
  /// The set-up step for an exchange (collective over `comm`): the locality decision (real or
  /// virtual node, GPUs), one offer per node-local peer and back, the votes (one all-reduce,
  /// with device fields), the decision per message. Throws halox::error on every rank where
  /// staging 'nccl' is forced and cannot be used.
  static route_table agree(MPI_Comm comm, const exchange_program& prog);
  /// The same, with this rank's staging wish given (tests: automatic NCCL on some ranks only).
  static route_table agree(MPI_Comm comm, const exchange_program& prog, staging_choice wish);
  /// The set-up step for a chain (collective): NCCL for its messages to `peers` where every
  /// rank asks for it (`want`), else pinned staging (`device`) or MPI; throws on every rank
  /// where some rank asks and NCCL cannot be used. The locality decision runs only where some
  /// rank asks.
  static route_table agree_chain(MPI_Comm comm, bool want, bool device,
                                 const std::vector<int>& peers);
  /// From decisions already made (tests, and the steps above).
  route_table(std::vector<route> sends, std::vector<route> recvs, const route_votes& v);

  route send(std::size_t m) const { return sends_[m]; }
  route recv(std::size_t m) const { return recvs_[m]; }
  const route_votes& votes() const { return votes_; }
  const locality& here() const { return here_; }
  /// Where device messages are staged outside CUDA IPC (null without device steps), and the
  /// size MPI messages are cut at (0: not; every rank agreed).
  const staging_choice* device_staging() const { return staging_ ? &*staging_ : nullptr; }
  std::size_t chunk() const { return chunk_; }
  /// Every rank agreed that NCCL carries the device messages CUDA IPC does not.
  bool nccl() const { return votes_.nccl_usable(); }
  /// Whether some message of this rank takes `r`; whether every one does (true without any).
  bool any(route r) const;
  bool all_ipc() const;
  /// The messages of `msgs` (this rank's sends or receives) whose route satisfies `keep`.
  template <class Keep>
  std::vector<message> select(const std::vector<message>& msgs, bool sends, Keep&& keep) const {
    std::vector<message> out;
    for (std::size_t m = 0; m < msgs.size(); ++m)
      if (keep(sends ? sends_[m] : recvs_[m])) out.push_back(msgs[m]);
    return out;
  }

  /// The run-time outcome of shared memory (both ranks of each pair learnt it in its
  /// offer/reply round): a message set up for it went through MPI after all (its reason kept
  /// for describe()), or goes in one copy (shm_direct). Null: no message of this rank uses
  /// shared memory.
  void settle_shm(const shm_mailbox* shm);
  /// What describe() adds for a node-local peer, or null: why messages to or from it take no
  /// node-local route ("not shared memory: ...", "not CUDA IPC: ..."), or how CUDA IPC reaches
  /// its GPU although this rank cannot see it.
  const std::string* remark(int peer) const;

  /// For describe(): how messages of route `r` travel (set by whoever carries them).
  const std::string& how(route r) const { return how_[std::size_t(r)]; }
  void set_how(route r, std::string text) { how_[std::size_t(r)] = std::move(text); }

 private:
  std::vector<route> sends_, recvs_;
  route_votes votes_;
  std::optional<staging_choice> staging_;
  std::size_t chunk_ = 0;
  locality here_;
  std::map<int, std::string> remark_;
  std::array<std::string, route_count> how_;
};

}  // namespace halox::detail
