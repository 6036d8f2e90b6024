#pragma once
/// @file
/// The staging policy: how messages of device fields reach MPI.

#include <string>

#include "halox/core/options.hpp"

namespace halox {

namespace detail {
/// Whether the MPI library reports CUDA support: Open MPI's `MPIX_Query_cuda_support()`,
/// MPICH's `MPIX_GPU_query_support()`, else false. Needs MPI initialised.
bool mpi_cuda_aware() noexcept;
/// Where the message buffers of an exchange with device fields live under policy `s`, and why,
/// for describe(): device memory when gpu_aware meets a CUDA-aware MPI, and for NCCL (forced,
/// or automatic where MPI is not CUDA-aware, NCCL is available (nccl_available: built and its
/// library loaded) and no host field shares the messages); otherwise mapped pinned host memory
/// (which any MPI can read, so a forced gpu_aware still runs, for testing).
struct staging_choice {
  staging policy;       ///< resolved: gpu_aware, host_staged or nccl
  bool device_buffers;  ///< buffers in device memory (else mapped pinned host memory)
  std::string why;
  /// host_staged by copies: the kernels pack into device memory and cudaMemcpyAsync moves the
  /// messages through pinned host memory (set by the route table, see routes.hpp).
  bool copy_staging = false;
  /// Automatic staging where NCCL is built but cannot be used on this rank: why (its library
  /// could not be loaded), which decide_staging adds to `why`.
  std::string nccl_note{};
};
staging_choice choose_staging(staging s, bool host_fields);
}  // namespace detail

}  // namespace halox
