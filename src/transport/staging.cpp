#include "transport/staging.hpp"

#include <string>

#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#include "halox/core/error.hpp"
#include "transport/nccl_carrier.hpp"

namespace halox {

const char* to_string(staging s) noexcept {
  switch (s) {
    case staging::automatic:
      return "auto";
    case staging::gpu_aware:
      return "gpu_aware";
    case staging::host_staged:
      return "host_staged";
    case staging::peer_ipc:
      return "peer_ipc";
    case staging::nccl:
      return "nccl";
  }
  return "?";
}

namespace detail {

bool mpi_cuda_aware() noexcept {
#if defined(MPIX_CUDA_AWARE_SUPPORT)
  // Asked at run time even where the headers halox was built with say 0: the library loaded
  // at run time (a cluster's CUDA-aware Open MPI of the same ABI) is what moves the data.
  return MPIX_Query_cuda_support() == 1;
#elif defined(MPIX_GPU_SUPPORT_CUDA)
  int yes = 0;
  return MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &yes) == MPI_SUCCESS && yes != 0;
#else
  return false;
#endif
}

staging_choice choose_staging(staging s, bool host_fields) {
  const bool aware = mpi_cuda_aware();
  switch (s) {
    case staging::gpu_aware:
      return aware ? staging_choice{staging::gpu_aware, true, "forced; MPI is CUDA-aware"}
                   : staging_choice{staging::gpu_aware, false,
                                    "forced, but MPI is not CUDA-aware: buffers in mapped pinned "
                                    "memory, which it can read"};
    case staging::host_staged:
      return {staging::host_staged, false, "forced; pack kernel writes mapped pinned memory"};
    case staging::nccl:
      return {staging::nccl, true,
              "NCCL: buffers in device memory, sends and receives on halox's stream"};
    case staging::peer_ipc:  // where CUDA IPC cannot serve, messages go as automatic would
    case staging::automatic:
      break;
  }
  if (aware) return {staging::gpu_aware, true, "automatic: MPI is CUDA-aware"};
  // Asked only here, where NCCL would be taken: the library is loaded the first time.
  if (nccl_built() && !host_fields && nccl_available())
    return {staging::nccl, true,
            "automatic: MPI is not CUDA-aware, NCCL is built: buffers in device memory, sends "
            "and receives on halox's stream"};
  staging_choice c{staging::host_staged, false,
                   "automatic: MPI is not CUDA-aware; pack kernel writes mapped pinned memory"};
  if (nccl_built() && !host_fields) c.nccl_note = nccl_unavailable_reason();
  return c;
}

}  // namespace detail
}  // namespace halox
