#pragma once
/// @file
/// A field's value type as data: the arithmetic types by kind (halox combines and multiplies
/// them, on the host and in the GPU kernels), every other trivially copyable type as `other`.

#include <cstdint>
#include <type_traits>
#include <typeinfo>

namespace halox {

/// The kind of a field's value type.
enum class scalar_kind : std::uint8_t {
  other,    ///< not arithmetic: copied, never combined
  boolean,  ///< bool
  int8,
  uint8,
  int16,
  uint16,
  int32,
  uint32,
  int64,
  uint64,
  float32,   ///< float
  float64,   ///< double
  float_ext  ///< long double
};

/// The kind of `T` (character types count as the integers of their size and signedness).
template <class T>
constexpr scalar_kind scalar_kind_of() {
  using K = scalar_kind;
  if constexpr (std::is_same_v<T, bool>) {
    return K::boolean;
  } else if constexpr (std::is_floating_point_v<T>) {
    return sizeof(T) == 4 ? K::float32 : sizeof(T) == 8 ? K::float64 : K::float_ext;
  } else if constexpr (std::is_integral_v<T>) {
    constexpr int at = sizeof(T) == 1 ? 0 : sizeof(T) == 2 ? 1 : sizeof(T) == 4 ? 2 : 3;
    constexpr K sig[] = {K::int8, K::int16, K::int32, K::int64};
    constexpr K uns[] = {K::uint8, K::uint16, K::uint32, K::uint64};
    return std::is_signed_v<T> ? sig[at] : uns[at];
  } else {
    return K::other;
  }
}

/// The compiler's name of `T` for types of kind `other` (declarations compare it across ranks),
/// null for arithmetic types.
template <class T>
const char* other_type_name() {
  return scalar_kind_of<T>() == scalar_kind::other ? typeid(T).name() : nullptr;
}

/// The usual spelling of `k` ("double", "int32", "uint8", ...; "other" for `other`).
const char* to_string(scalar_kind k);

}  // namespace halox
