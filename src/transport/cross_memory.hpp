#pragma once
/// @file
/// Cross-memory attach: one copy between ranks of a node for memory halox does not own. A
/// peer cannot map the user's own arrays (wrapped fields) the way it maps halox's memfd field
/// memory, but Linux lets a process read and write another's memory with `process_vm_readv` /
/// `process_vm_writev` where it may `ptrace` it (same user; Yama's `ptrace_scope` 0, or 1 for
/// a parent and its descendants only; no seccomp filter refusing the calls). A direct message
/// (program/direct_writes.hpp) whose peer side lies in such memory is copied by one of these
/// calls: the receiver reads the sender's owned cells into its halo, or the sender writes them
/// into the receiver's halo, whichever rank gets to the message first (shm_mailbox.hpp).
///
/// The copies of a message become pairs of runs (`iovec`s of equal length, one here and one in
/// the peer) once, at set-up; an exchange makes one system call per 1024 pairs and allocates
/// nothing.

#include <sys/uio.h>

#include <cstddef>
#include <string>
#include <vector>

#include "program/ops.hpp"

namespace halox::detail {

/// One message's copy between this process and a peer process.
struct cross_copy {
  long long pid = 0;  ///< the peer's process
  int peer = -1;      ///< the peer's rank, for errors
  /// Pairs of runs: `local[k]` here and `remote[k]` in the peer hold the same bytes.
  std::vector<iovec> local, remote;
  std::size_t bytes = 0;
};

/// The fused copies of one message (program/direct_writes.hpp's fuse_regions) as pairs of runs.
/// `remote_dst`: the copies' destination is in the peer (the sender's push), else their source
/// (the receiver's pull). Adjacent runs contiguous on both sides are merged.
cross_copy make_cross_copy(const std::vector<copy_op>& fused, bool remote_dst, long long pid,
                           int peer);

/// Runs `c`: writes the local runs into the peer (`write`) or reads the peer's runs here.
/// Throws halox::error naming the peer where the system refuses or copies part of it.
void run_cross_copy(const cross_copy& c, bool write, int me);

/// Whether this process may read `pid`'s memory at `addr` (one byte, into a scratch byte):
/// empty where it may, else why not.
std::string cross_memory_probe(long long pid, const void* addr);

namespace testing {
/// Test-only: behave as if the system refused cross-memory attach (as Yama's ptrace scope or a
/// seccomp filter can), to exercise the two-copy fallback. Per rank.
extern bool deny_cross_memory;
}  // namespace testing

}  // namespace halox::detail
