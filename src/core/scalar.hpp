#pragma once
// Value types as data (halox/core/scalar.hpp) inside the library: dispatch to the C++ type of
// an arithmetic kind, the GPU kernels' type codes, the names of value types.

#include <cstdint>
#include <string>

#include "halox/core/scalar.hpp"

namespace halox::detail {

/// Calls `f.template operator()<T>()` with the C++ type of arithmetic kind `k` (`other`: with
/// `std::byte`).
template <class F>
decltype(auto) with_scalar(scalar_kind k, F&& f) {
  switch (k) {
    case scalar_kind::boolean:
      return f.template operator()<bool>();
    case scalar_kind::int8:
      return f.template operator()<std::int8_t>();
    case scalar_kind::uint8:
      return f.template operator()<std::uint8_t>();
    case scalar_kind::int16:
      return f.template operator()<std::int16_t>();
    case scalar_kind::uint16:
      return f.template operator()<std::uint16_t>();
    case scalar_kind::int32:
      return f.template operator()<std::int32_t>();
    case scalar_kind::uint32:
      return f.template operator()<std::uint32_t>();
    case scalar_kind::int64:
      return f.template operator()<std::int64_t>();
    case scalar_kind::uint64:
      return f.template operator()<std::uint64_t>();
    case scalar_kind::float32:
      return f.template operator()<float>();
    case scalar_kind::float64:
      return f.template operator()<double>();
    case scalar_kind::float_ext:
      return f.template operator()<long double>();
    case scalar_kind::other:
      break;
  }
  return f.template operator()<std::byte>();
}

/// Whether `k` is an arithmetic type (combinable, multipliable).
constexpr bool arithmetic(scalar_kind k) {
  return k != scalar_kind::other;
}

/// The GPU kernels' type code of `k` (see device_reduce): 0 where they cannot combine it.
int device_type_code(scalar_kind k);

/// A name of a value type that is the same on every rank of one program: the kind's name
/// ("double", "int32", ...), or `other_name` for other types.
std::string type_label(scalar_kind k, const std::string& other_name);

}  // namespace halox::detail
