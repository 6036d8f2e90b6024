#pragma once
/// @file
/// The CUDA stream type, named without including CUDA headers: usable from host-only code.

struct CUstream_st;  // CUDA's stream type, declared as CUDA declares it

namespace halox {

/// A CUDA stream (`cudaStream_t` is `CUstream_st*`).
using stream_t = ::CUstream_st*;

}  // namespace halox
