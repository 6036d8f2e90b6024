#pragma once
/// @file
/// How the messages of one exchange travel: the staging policy and `exchange_options`, set in
/// code and passed to `make_exchange`. The `HALOX_*` environment variables named below, where
/// set, override the options (to compare paths without recompiling).

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace halox {

/// How the packed messages of device fields reach their peers.
enum class staging {
  automatic,    ///< CUDA IPC to node-local GPUs that reach each other; otherwise gpu_aware when
                ///< the MPI library reports CUDA support, else NCCL where halox has it and
                ///< every rank can use it, else host_staged (docs/multi-node.md)
  gpu_aware,    ///< message buffers in device memory, handed to MPI as they are
  host_staged,  ///< message buffers in pinned host memory the pack kernel writes (mapped);
                ///< device fields only: messages over `staging_chunk_bytes` are copied
                ///< through it in pieces, overlapping MPI
  peer_ipc,     ///< node-local GPUs: the pack kernel writes into the peer's GPU memory (CUDA IPC)
  nccl  ///< CUDA IPC to node-local GPUs that reach each other, NCCL to every other peer: device
        ///< buffers, sends and receives enqueued on halox's stream (builds with NCCL; device
        ///< fields only; one GPU per rank)
};

/// `"auto"`, `"gpu_aware"`, `"host_staged"`, `"peer_ipc"` or `"nccl"`.
const char* to_string(staging s) noexcept;

/// Transport choices of one exchange object. The defaults pick the fastest path per peer;
/// every choice is made per pair of ranks, and a pair uses a node-local path only where both
/// ranks allow it (the options may differ between ranks).
struct exchange_options {
  /// Device fields: how messages travel
  /// (`HALOX_STAGING=auto|gpu_aware|host_staged|peer_ipc|nccl`).
  staging device_staging = staging::automatic;
  /// Host fields: messages between ranks of one node go through shared memory where the
  /// system allows it; false sends everything through MPI (`HALOX_HOST_TRANSPORT=auto|mpi`).
  bool host_shared_memory = true;
  /// Shared memory: a message whose fields a peer can map on both ranks (`make_field`, or
  /// wrapped arrays from node_shared_allocator; see also shm_cross_memory) and of at least
  /// `shm_direct_min_bytes` is copied once, straight from the sender's owned cells into the
  /// receiver's halo, by whichever rank gets to it first (true); else packed into a shared buffer
  /// and unpacked out of it
  /// (`HALOX_SHM_INTO=field|buffer`).
  bool shm_into_fields = true;
  /// Smaller messages take the shared buffer: their cells sit in the sender's caches, and one
  /// contiguous buffer crosses between cores faster than the scattered rows of a halo region
  /// (`HALOX_SHM_DIRECT_MIN=bytes`, with an optional K, M or G suffix).
  std::size_t shm_direct_min_bytes = std::size_t(32) << 10;
  /// Shared memory, wrapped memory a peer cannot map (not from node_shared_allocator): one copy
  /// by Linux cross-memory attach (`process_vm_readv` / `process_vm_writev`) where the system
  /// allows it (true), or two copies (false, the default: on the machines measured, each run
  /// of a halo region costs the kernel a page lookup, and two copies were 2-8x faster; see
  /// docs/performance.md) (`HALOX_SHM_CROSS=on|off`).
  bool shm_cross_memory = false;
  /// Treat each block of `node_size` consecutive ranks of the domain's communicator as a node
  /// of its own (inside the real nodes): shared memory and CUDA IPC only inside a block, MPI
  /// between blocks. 0: the real nodes. Tests multi-node paths on one machine
  /// (`HALOX_NODE_SIZE=k`).
  int node_size = 0;
  /// CUDA IPC: the kernels order the exchange with flags in GPU memory where every pair allows
  /// it (true), or an MPI handshake per exchange (`HALOX_IPC_SIGNAL=device|host`).
  bool ipc_device_signals = true;
  /// CUDA IPC with device signals: senders write straight into the receiver's halos where the
  /// regions allow it, else into its receive buffer (`HALOX_IPC_INTO=field|buffer`).
  bool ipc_into_fields = true;
  /// CUDA IPC with device signals: messages of up to this many bytes travel as flagged words
  /// (each 4-byte word stored beside the exchange's number in one 8-byte store) into one of two
  /// copies of the receiver's buffer by turns. The receiver polls the words themselves: no
  /// data-ready flag and its fence, and no wait for the receiver's start, which halves a small
  /// round between two GPUs; the message crosses the link at twice its size and is unpacked
  /// once. 0: never (`HALOX_IPC_INLINE_MAX=bytes`, with an optional K, M or G suffix).
  std::size_t ipc_inline_max_bytes = std::size_t(64) << 10;
  /// host_staged: the kernels pack into device memory and one copy per direction moves the
  /// messages through pinned memory, instead of writing mapped pinned memory
  /// (`HALOX_HOST_STAGING=mapped|copy`).
  bool host_staging_copies = false;
  /// host_staged: messages larger than this many bytes travel in pieces of about this size,
  /// through pinned memory by copies, so that the device-to-host copy of one piece, the MPI
  /// transfer of the one before and the host-to-device copy on the receiver overlap; smaller
  /// messages stay one piece (in mapped pinned memory unless `host_staging_copies`). 0: never
  /// cut. Ranks agree on the smallest value any host-staged rank asks for, 0 winning
  /// (`HALOX_STAGING_CHUNK=bytes`, with an optional K, M or G suffix).
  std::size_t staging_chunk_bytes = std::size_t(1) << 20;
  /// Only pairs of listed ranks may use CUDA IPC (`HALOX_PEER_IPC_RANKS=0,1,...`) or shared
  /// memory (`HALOX_PEER_SHM_RANKS`); the other pairs of the same exchange use MPI. Unset: no
  /// restriction. For tests and comparisons.
  std::optional<std::vector<int>> peer_ipc_ranks, peer_shm_ranks;
  /// NCCL: calls of 1 MiB and more are registered with NCCL where both ranks of the message ask
  /// for it and their memory allows it, so that NCCL writes them straight into the receiver's
  /// memory between GPUs of a node. Faster for exchanges alone, can be slower overlapped with
  /// compute (docs/nccl.md) (`HALOX_NCCL_REGISTER=0|1`).
  bool nccl_register = false;
  /// Require an exchange a CUDA graph can capture (schedule_exchange / schedule_wait inside
  /// `cudaStreamBeginCapture`; docs/graphs.md): make_exchange fails on every rank, naming what
  /// needs the host, where the paths chosen for it need the host in every exchange. Capturable:
  /// local copies, CUDA IPC with device signals, NCCL.
  bool require_capturable = false;
  /// Give up a wait after this many seconds: `wait()`, a blocking `exchange()`, a chain round
  /// and every device-side poll (a kernel waiting for a peer's flag) raise `halox::error` on
  /// the rank that waits, naming the object, the exchange number, the peers that have not
  /// arrived and the route of each; the object then refuses further use and destroys cleanly.
  /// 0: wait for ever, as MPI does (`HALOX_WAIT_TIMEOUT=seconds`; docs/errors.md).
  double wait_timeout = 0;
  /// The object's name in errors, describe(), stats() and profiles; empty: named after its
  /// fields.
  std::string label;
  /// CUDA builds: NVTX ranges named "<label>: <phase>" around set-up, start, wait,
  /// schedule_exchange, schedule_wait and the pack and unpack launches, for Nsight Systems
  /// (`HALOX_NVTX=0|1`; docs/observing.md). Off: no NVTX call at all.
  bool nvtx = false;
};

namespace detail {
/// `o` with every set `HALOX_*` variable named above applied: what make_exchange and the other
/// builders run on every rank (compiled: src/core/environment.cpp). Throws halox::error naming
/// the variable and its value on a value it does not know, and on a negative node size or rank.
exchange_options with_environment(exchange_options o);
}  // namespace detail

}  // namespace halox
