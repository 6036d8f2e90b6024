#pragma once
/// @file
/// How a reverse (ghost-to-owner) exchange combines a ghost's value into the owner's value.

#include <cstddef>

#include "halox/core/index.hpp"

namespace halox {

/// The combination of a reverse exchange: owner = owner ⊕ ghost, per component.
enum class reduction {
  replace,  ///< owner = ghost (any trivially copyable type)
  sum,      ///< owner = owner + ghost (arithmetic types)
  min,      ///< owner = min(owner, ghost) (arithmetic types)
  max       ///< owner = max(owner, ghost) (arithmetic types)
};

constexpr const char* to_string(reduction r) {
  switch (r) {
    case reduction::replace:
      return "replace";
    case reduction::sum:
      return "sum";
    case reduction::min:
      return "min";
    case reduction::max:
      return "max";
  }
  return "?";
}

namespace detail {

/// Combines `n` elements read from `src` (byte stride `ss`) into `dst` (byte stride `ds`).
using reduce_fn = void (*)(std::byte* dst, const std::byte* src, index n, index ds, index ss);

/// How a GPU kernel combines: `op` 0 copy (replace), 1 sum, 2 min, 3 max; `type` 1 double,
/// 2 float, 3 int32, 4 int64, 5 uint32, 6 uint64 (0: no device reduction for this type).
struct device_reduce {
  int op = 0;
  int type = 0;
};

/// Both ways to combine values under a reduction: on the host and in the GPU kernels.
struct combiner {
  reduce_fn host = nullptr;
  device_reduce device;
};

}  // namespace detail
}  // namespace halox
