#pragma once
/// @file
/// How a reverse (ghost-to-owner) exchange combines a ghost's value into the owner's value.

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "halox/index.hpp"

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
    case reduction::replace: return "replace";
    case reduction::sum: return "sum";
    case reduction::min: return "min";
    case reduction::max: return "max";
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
    if constexpr (R == reduction::sum) a = T(a + b);
    else if constexpr (R == reduction::min) a = std::min(a, b);
    else if constexpr (R == reduction::max) a = std::max(a, b);
    else a = b;
    std::memcpy(dst, &a, sizeof(T));
  }
}

/// The combining function for value type `T` (nullptr for `replace`: a plain copy).
template <class T>
reduce_fn reducer(reduction r) {
  if (r == reduction::replace) return nullptr;
  if constexpr (std::is_arithmetic_v<T>) {
    switch (r) {
      case reduction::sum: return &reduce_run<T, reduction::sum>;
      case reduction::min: return &reduce_run<T, reduction::min>;
      case reduction::max: return &reduce_run<T, reduction::max>;
      default: break;
    }
  }
  return nullptr;  // callers reject non-arithmetic types before asking
}

}  // namespace detail
}  // namespace halox
