#pragma once
/// @file
/// The staging policy: how messages of device fields reach MPI.

#include <optional>
#include <string>
#include <vector>

namespace halox {

/// How the packed messages of device fields reach MPI.
enum class staging {
  automatic,    ///< gpu_aware when the MPI library reports CUDA support, else host_staged
  gpu_aware,    ///< message buffers in device memory, handed to MPI as they are
  host_staged,  ///< message buffers in pinned host memory the pack kernel writes (mapped)
  peer_ipc      ///< node-local GPUs: the pack kernel writes into the peer's GPU memory (CUDA IPC)
};

const char* to_string(staging s) noexcept;

namespace detail {
/// Whether the MPI library reports CUDA support: Open MPI's `MPIX_Query_cuda_support()`,
/// MPICH's `MPIX_GPU_query_support()`, else false. Needs MPI initialised.
bool mpi_cuda_aware() noexcept;
/// The policy `HALOX_STAGING` asks for (`auto`, `gpu_aware`, `host_staged`, `peer_ipc`; unset:
/// automatic).
/// Throws halox::error on any other value.
staging staging_from_env();
/// Where the message buffers of an exchange with device fields live under policy `s`, and why,
/// for describe(): device memory only when gpu_aware meets a CUDA-aware MPI; otherwise mapped
/// pinned host memory (which any MPI can read, so a forced gpu_aware still runs, for testing).
struct staging_choice {
  staging policy;       ///< resolved: gpu_aware or host_staged
  bool device_buffers;  ///< buffers in device memory (else mapped pinned host memory)
  std::string why;
};
staging_choice choose_staging(staging s);
/// `HALOX_HOST_STAGING=copy`: host_staged packs into device memory and copies through pinned
/// memory instead of letting the kernels write mapped pinned memory (`mapped`, the default).
/// Throws halox::error on any other value.
bool host_staging_copies();
/// `HALOX_IPC_SIGNAL=host`: CUDA IPC exchanges keep the MPI clear-to-send/data-ready handshake
/// instead of flags the kernels write and poll (`device`, the default where it applies).
/// Throws halox::error on any other value.
bool ipc_device_signals();
/// `HALOX_IPC_INTO=buffer`: with device signals, CUDA IPC senders write into the receiver's
/// receive buffer (then unpacked) instead of straight into its fields' halos (`field`, the
/// default where the regions' layouts allow it). Throws halox::error on any other value.
bool ipc_into_fields();
/// `HALOX_PEER_IPC_RANKS=0,1,...` (for tests and comparisons): only pairs of listed ranks may
/// use CUDA IPC; other pairs of the same exchange go through MPI. Unset: no restriction.
/// Throws halox::error on anything but a comma-separated list of non-negative integers.
std::optional<std::vector<int>> peer_ipc_ranks();
/// `HALOX_HOST_TRANSPORT=auto|mpi`: whether host-only exchanges may use shared memory between
/// node-local ranks (`auto`, the default) or send everything through MPI. Throws on others.
bool host_shared_memory();
/// `HALOX_PEER_SHM_RANKS=0,1,...`: as HALOX_PEER_IPC_RANKS, for the shared-memory transport.
std::optional<std::vector<int>> peer_shm_ranks();
/// Reads every transport environment variable above, so that a bad value is an input error
/// raised where make_exchange validates its input (inside the collective agreement).
void validate_transport_environment();
}  // namespace detail

}  // namespace halox
