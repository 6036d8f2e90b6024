#pragma once
// The one check for NCCL calls (nccl_comm.cu, nccl_carrier.cu): a failed call becomes halox::error
// naming the call, NCCL's error string, its last error message, the rank and the peer.
#include <nccl.h>

namespace halox::detail {

/// Throws halox::error for the NCCL result `rc` of `call` on `rank`; `peer` < 0: no peer;
/// `comm` (may be null) is asked for ncclGetLastError.
[[noreturn]] void nccl_fail(ncclResult_t rc, const char* call, int rank, int peer, ncclComm_t comm);

/// Every NCCL call goes through here. halox's communicators are blocking, so ncclInProgress is an
/// error too.
inline void nccl_check(ncclResult_t rc, const char* call, int rank, int peer = -1,
                       ncclComm_t comm = nullptr) {
  if (rc != ncclSuccess) nccl_fail(rc, call, rank, peer, comm);
}

}  // namespace halox::detail
