#pragma once
/// @file
/// Which ranks share this rank's node, and which GPU each of them drives: the one locality
/// decision every node-local path (shared memory, CUDA IPC) reads. With
/// `exchange_options::node_size` = k, consecutive blocks of k ranks are separate (virtual)
/// nodes, so multi-node paths can be tested on one machine.

#include <map>
#include <string>
#include <vector>

#include <mpi.h>

namespace halox::detail {

class locality {
 public:
  /// Collective over `comm`: the ranks of `comm` on this rank's node (MPI's shared-memory
  /// split), cut into blocks of `node_size` consecutive ranks when `node_size` > 0. `gpu`: this
  /// rank's GPU (its PCI bus id) for device exchanges, empty otherwise.
  static locality discover(MPI_Comm comm, int node_size, const std::string& gpu = {});

  /// Whether `peer` is on this rank's (possibly virtual) node; false for this rank itself.
  bool same_node(int peer) const { return peer != rank_ && node_.count(peer) != 0; }
  /// The GPU of a rank on this node (empty when it did not name one), or null elsewhere.
  const std::string* gpu_of(int peer) const {
    auto it = node_.find(peer);
    return it == node_.end() ? nullptr : &it->second;
  }
  /// For describe(): "node of 2 ranks" or "virtual node of 2 ranks (node_size 2)".
  std::string describe() const;
  /// Whether two ranks of the communicator on one real node drive the same GPU (the same on
  /// every rank; false for host exchanges).
  bool gpu_shared() const { return gpu_shared_; }

 private:
  int rank_ = 0;
  int node_size_ = 0;
  bool gpu_shared_ = false;
  std::map<int, std::string> node_;  // rank -> GPU bus id, every rank of this node
};

/// The PCI bus id of this process's current GPU, which locality::discover compares between
/// ranks (empty in a build without CUDA). `rank` is for error messages.
std::string current_gpu_bus_id(int rank = -1);
/// Whether this process's GPU can access the GPU with PCI bus id `bus` (CUDA peer access, what
/// halox checks before it offers CUDA IPC between them), or why not: that GPU is not visible to
/// this process (CUDA_VISIBLE_DEVICES, a container; always in a build without CUDA), or CUDA
/// says the two GPUs cannot access each other. `rank` is for error messages.
enum class gpu_access { peer, not_visible, no_peer_access };
gpu_access gpu_reaches(const std::string& bus, int rank);

/// Whether CUDA IPC works between this rank's GPU and the GPUs of `peers`: node-local ranks
/// whose GPU one side of the pair cannot see (CUDA_VISIBLE_DEVICES, a container), so that peer
/// access cannot be asked of CUDA. CUDA can still map memory of a GPU the mapping process does
/// not see, and this tries it: every rank exports a small buffer holding a marker, opens each
/// peer's (peer access enabled lazily, as the CUDA IPC transport opens them), reads the marker
/// back and closes it, and the two ranks of each pair trade their outcomes, so both get the same
/// answer. Collective over the pairs (each peer calls it with this rank among its `peers`).
/// Per peer: empty where both directions worked, else what failed ("rank 1 could not open rank
/// 0's memory: cudaErrorPeerAccessUnsupported").
std::vector<std::string> probe_hidden_ipc(MPI_Comm comm, const std::vector<int>& peers, int me);

}  // namespace halox::detail
