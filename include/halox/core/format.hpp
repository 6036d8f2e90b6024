#pragma once
/// @file
/// The message formatting of halox errors and describe() text, without fmt in public headers
/// (a user's `.cu` includes them under nvcc): `format("rank {}: {} cells", r, n)` replaces each
/// `{}` by the next argument as text. Arguments: strings, characters, booleans, integers,
/// floating-point numbers (shortest round trip), `std::array` of those (`[a, b]`), and
/// `join(range, sep)`. The substitution itself is compiled (src/core/format.cpp).

#include <array>
#include <charconv>
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>

namespace halox::detail {

/// `f` with each `{}` replaced by the next of `args[0..n)` (`{{` and `}}` give braces).
std::string vformat(std::string_view f, const std::string* args, std::size_t n);

template <class T>
struct is_std_array : std::false_type {};
template <class T, std::size_t N>
struct is_std_array<std::array<T, N>> : std::true_type {};

/// One argument as text (C++17: the CUDA sources include this header too).
template <class T>
std::string to_text(const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else if constexpr (std::is_same_v<T, char>) {
    return std::string(1, v);
  } else if constexpr (std::is_integral_v<T>) {
    return std::to_string(v);
  } else if constexpr (std::is_enum_v<T>) {
    return std::to_string(static_cast<std::underlying_type_t<T>>(v));
  } else if constexpr (std::is_floating_point_v<T>) {
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
  } else if constexpr (is_std_array<T>::value) {
    std::string s = "[";
    for (std::size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + to_text(v[k]);
    return s + "]";
  } else {
    static_assert(std::is_convertible_v<const T&, std::string_view>,
                  "halox::detail::format: no text for this argument type");
    return std::string(std::string_view(v));
  }
}

/// The elements of `r` as text, separated by `sep`: `join(extents, "x")` gives "8x8".
template <class Range>
std::string join(const Range& r, std::string_view sep) {
  std::string s;
  bool first = true;
  for (const auto& x : r) {
    if (!first) s += sep;
    s += to_text(x);
    first = false;
  }
  return s;
}

/// `f` with its `{}` replaced by `args` as text.
template <class... Args>
std::string format(std::string_view f, const Args&... args) {
  const std::string texts[sizeof...(Args) + 1] = {to_text(args)..., std::string()};
  return vformat(f, texts, sizeof...(Args));
}

}  // namespace halox::detail
