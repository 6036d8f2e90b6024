// Value types as data: names, GPU type codes and host combining functions per kind.

#include "core/scalar.hpp"

namespace halox {

const char* to_string(scalar_kind k) {
  constexpr const char* names[] = {"other",  "bool",   "int8",       "uint8", "int16",
                                   "uint16", "int32",  "uint32",     "int64", "uint64",
                                   "float",  "double", "long double"};
  return names[std::size_t(k)];
}

namespace detail {

int device_type_code(scalar_kind k) {
  switch (k) {
    case scalar_kind::float64:
      return 1;
    case scalar_kind::float32:
      return 2;
    case scalar_kind::int32:
      return 3;
    case scalar_kind::int64:
      return 4;
    case scalar_kind::uint32:
      return 5;
    case scalar_kind::uint64:
      return 6;
    default:
      return 0;
  }
}

std::string type_label(scalar_kind k, const std::string& other_name) {
  return arithmetic(k) ? std::string(to_string(k)) : other_name;
}

}  // namespace detail
}  // namespace halox
