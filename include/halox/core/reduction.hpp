#pragma once
/// @file
/// How a reverse (ghost-to-owner) exchange combines a ghost's value into the owner's value.

#include <algorithm>
#include <cstring>
#include <type_traits>

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

template <class T, reduction R>
void reduce_run(std::byte* dst, const std::byte* src, index n, index ds, index ss) {
  for (index i = 0; i < n; ++i, dst += ds, src += ss) {
    T a, b;
    std::memcpy(&a, dst, sizeof(T));
    std::memcpy(&b, src, sizeof(T));
    if constexpr (R == reduction::sum)
      a = T(a + b);
    else if constexpr (R == reduction::min)
      a = std::min(a, b);
    else if constexpr (R == reduction::max)
      a = std::max(a, b);
    else
      a = b;
    std::memcpy(dst, &a, sizeof(T));
  }
}

/// How a GPU kernel combines: `op` 0 copy (replace), 1 sum, 2 min, 3 max; `type` 1 double,
/// 2 float, 3 int32, 4 int64, 5 uint32, 6 uint64 (0: no device reduction for this type).
struct device_reduce {
  int op = 0;
  int type = 0;
};

template <class T>
constexpr int device_type_code() {
  if constexpr (std::is_same_v<T, double>)
    return 1;
  else if constexpr (std::is_same_v<T, float>)
    return 2;
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T> && sizeof(T) == 4)
    return 3;
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T> && sizeof(T) == 8)
    return 4;
  else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T> && sizeof(T) == 4)
    return 5;
  else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T> && sizeof(T) == 8)
    return 6;
  else
    return 0;
}

/// The combining function for value type `T` (nullptr for `replace`: a plain copy).
template <class T>
reduce_fn reducer(reduction r) {
  if (r == reduction::replace) return nullptr;
  if constexpr (std::is_arithmetic_v<T>) {
    switch (r) {
      case reduction::sum:
        return &reduce_run<T, reduction::sum>;
      case reduction::min:
        return &reduce_run<T, reduction::min>;
      case reduction::max:
        return &reduce_run<T, reduction::max>;
      default:
        break;
    }
  }
  return nullptr;  // callers reject non-arithmetic types before asking
}

/// Both ways to combine values of `T` under `r`: on the host and in the GPU kernels.
struct combiner {
  reduce_fn host = nullptr;
  device_reduce device;
};
template <class T>
combiner combiner_for(reduction r) {
  const int op = r == reduction::replace ? 0
                 : r == reduction::sum   ? 1
                 : r == reduction::min   ? 2
                                         : 3;
  return {reducer<T>(r), {op, device_type_code<T>()}};
}

}  // namespace detail
}  // namespace halox
