#pragma once
/// @file
/// Half-open boxes of global cell indices and the arithmetic the plan is built from.

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

#include "halox/core/format.hpp"
#include "halox/core/index.hpp"

namespace halox {

/// Extents or coordinates, one per dimension.
template <int D>
using extents = std::array<index, D>;

/// The cells `lo[i] <= x[i] < hi[i]` in every dimension i.
template <int D>
struct box {
  extents<D> lo{};
  extents<D> hi{};

  /// True when the box holds no cell.
  constexpr bool empty() const {
    for (int i = 0; i < D; ++i)
      if (hi[i] <= lo[i]) return true;
    return false;
  }
  /// Number of cells (0 when empty). Unchecked: for boxes inside a domain or field whose
  /// sizes were checked; use checked_volume() on anything else.
  constexpr index volume() const {
    if (empty()) return 0;
    index v = 1;
    for (int i = 0; i < D; ++i) v *= hi[i] - lo[i];
    return v;
  }
  /// Number of cells (0 when empty), or nothing when it does not fit in an `index`.
  constexpr std::optional<index> checked_volume() const {
    if (empty()) return index(0);
    std::optional<index> v = 1;
    for (int i = 0; i < D; ++i) {
      const auto n = detail::checked_sub(hi[i], lo[i]);
      v = n ? detail::checked_mul(v, *n) : std::nullopt;
    }
    return v;
  }
  /// Extent along every dimension.
  constexpr extents<D> size() const {
    extents<D> e{};
    for (int i = 0; i < D; ++i) e[i] = hi[i] - lo[i];
    return e;
  }
  constexpr bool contains(const extents<D>& x) const {
    for (int i = 0; i < D; ++i)
      if (x[i] < lo[i] || x[i] >= hi[i]) return false;
    return true;
  }
  friend constexpr bool operator==(const box&, const box&) = default;
};

/// The common cells of two boxes (possibly empty).
template <int D>
constexpr box<D> intersect(const box<D>& a, const box<D>& b) {
  box<D> r{};
  for (int i = 0; i < D; ++i) {
    r.lo[i] = std::max(a.lo[i], b.lo[i]);
    r.hi[i] = std::min(a.hi[i], b.hi[i]);
  }
  return r;
}

/// The box moved by `s`.
template <int D>
constexpr box<D> translate(box<D> b, const std::type_identity_t<extents<D>>& s) {
  for (int i = 0; i < D; ++i) b.lo[i] += s[i], b.hi[i] += s[i];
  return b;
}

/// The box grown by `below[i]` cells below and `above[i]` cells above in every dimension.
template <int D, class W>
constexpr box<D> grow(box<D> b, const W& below, const W& above) {
  for (int i = 0; i < D; ++i) b.lo[i] -= below[i], b.hi[i] += above[i];
  return b;
}

/// "[lo0,hi0)x[lo1,hi1)..." for error messages.
template <int D>
std::string to_string(const box<D>& b) {
  std::string s;
  for (int i = 0; i < D; ++i) s += detail::format("{}[{},{})", i ? "x" : "", b.lo[i], b.hi[i]);
  return s;
}

/// Floor division (towards −∞), for periodic image arithmetic.
constexpr index floor_div(index a, index b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

}  // namespace halox
