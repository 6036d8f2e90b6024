#pragma once
/// @file
/// The GPU seam of the chain exchange: a pointer query (src/chain/chain_device.cu; a stub that
/// fails loudly without CUDA). The staging copies themselves run through `device_copier`.
/// C++17-clean and free of CUDA headers.

namespace halox::detail {

/// Whether `p` points into CUDA device (or managed) memory. `rank` is for error messages.
bool is_device_pointer(const void* p, int rank);

}  // namespace halox::detail
