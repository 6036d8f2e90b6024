#pragma once
/// @file
/// NCCL loaded at run time: nothing links libnccl, so a program that never needs an NCCL
/// transport runs where no libnccl is installed. The first use loads the library with dlopen
/// and resolves the functions halox calls into a table (`nccl().Send(...)`); nccl.h is used at
/// build time for the types only. Plain C++ (no nvcc), in builds with NCCL only.

#include <nccl.h>

#include <string>

namespace halox::detail {

/// The NCCL functions halox calls, each resolved from the loaded library.
struct nccl_api {
  decltype(&::ncclGetVersion) GetVersion = nullptr;
  decltype(&::ncclGetErrorString) GetErrorString = nullptr;
  decltype(&::ncclGetLastError) GetLastError = nullptr;
  decltype(&::ncclGetUniqueId) GetUniqueId = nullptr;
  decltype(&::ncclCommInitRankConfig) CommInitRankConfig = nullptr;
  decltype(&::ncclCommGetAsyncError) CommGetAsyncError = nullptr;
  decltype(&::ncclCommAbort) CommAbort = nullptr;
  decltype(&::ncclCommDestroy) CommDestroy = nullptr;
  decltype(&::ncclCommRegister) CommRegister = nullptr;
  decltype(&::ncclCommDeregister) CommDeregister = nullptr;
  decltype(&::ncclGroupStart) GroupStart = nullptr;
  decltype(&::ncclGroupEnd) GroupEnd = nullptr;
  decltype(&::ncclSend) Send = nullptr;
  decltype(&::ncclRecv) Recv = nullptr;
};

/// The outcome of loading libnccl: the table where usable, else why not.
struct nccl_library {
  nccl_api api;       ///< every function set where usable()
  std::string path;   ///< the file loaded (as the dynamic loader resolved it)
  int version = 0;    ///< ncclGetVersion's code, e.g. 22809 for 2.28.9
  std::string error;  ///< why it is not usable, e.g. "libnccl.so.2 could not be loaded: ..."
  bool usable() const noexcept { return error.empty(); }
};

/// The oldest NCCL halox runs with (ncclCommRegister, the newest function it calls, came with
/// 2.19), as a version code; the build requires the same of nccl.h (HaloxFindNCCL.cmake).
inline constexpr int nccl_min_version = NCCL_VERSION(2, 19, 0);

/// Loads libnccl: `path` alone where given and not empty (HALOX_NCCL_LIBRARY); otherwise
/// "libnccl.so.2" through the dynamic loader's search (LD_LIBRARY_PATH, the executable's
/// run path, the ld.so cache), then in `fallback_dir` where not empty (the directory the build
/// found NCCL in), then "libnccl.so" the same two ways. Resolves every function of nccl_api and
/// checks the version: at least nccl_min_version, and the major version of the nccl.h halox was
/// built with. A library found but unusable is closed again. Never throws halox::error.
nccl_library load_nccl(const char* path, const char* fallback_dir);

/// The process's NCCL: load_nccl(HALOX_NCCL_LIBRARY, the build's NCCL directory), run once on
/// first use (thread-safe). Kept loaded until the process exits.
const nccl_library& loaded_nccl();

/// The functions, for the call sites of the NCCL transport. Throws halox::error with the reason
/// where NCCL is not usable (the transport is chosen only where nccl_available() said so).
const nccl_api& nccl();

}  // namespace halox::detail
