#pragma once
/// @file
/// How a reverse (ghost-to-owner) exchange combines a ghost's value into the owner's value.

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
}  // namespace halox
