// Value types as data: names, GPU type codes and host combining functions per kind.

#include "core/scalar.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "halox/core/error.hpp"

namespace halox {

const char* to_string(scalar_kind k) {
  constexpr const char* names[] = {"other",  "bool",   "int8",       "uint8", "int16",
                                   "uint16", "int32",  "uint32",     "int64", "uint64",
                                   "float",  "double", "long double"};
  return names[std::size_t(k)];
}

namespace detail {
namespace {

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
    else
      a = std::max(a, b);
    std::memcpy(dst, &a, sizeof(T));
  }
}

template <class T>
reduce_fn reducer(reduction r) {
  switch (r) {
    case reduction::sum:
      return &reduce_run<T, reduction::sum>;
    case reduction::min:
      return &reduce_run<T, reduction::min>;
    case reduction::max:
      return &reduce_run<T, reduction::max>;
    case reduction::replace:
      break;
  }
  return nullptr;
}

}  // namespace

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

combiner combiner_for(scalar_kind k, reduction r) {
  const int op = r == reduction::replace ? 0
                 : r == reduction::sum   ? 1
                 : r == reduction::min   ? 2
                                         : 3;
  combiner c{nullptr, {op, device_type_code(k)}};
  c.host = with_scalar(k, [&]<class T>() -> reduce_fn {
    if constexpr (std::is_arithmetic_v<T>)
      return reducer<T>(r);
    else
      return nullptr;
  });
  return c;
}

void check_reducible(reduction op, int k, const std::string& name, int rank, scalar_kind kind,
                     memory_space space) {
  require(op == reduction::replace || arithmetic(kind),
          "rank {}: field #{} '{}': reduction '{}' needs an arithmetic value type; use replace",
          rank, k, name, to_string(op));
  require(op == reduction::replace || space == memory_space::host || device_type_code(kind) != 0,
          "rank {}: field #{} '{}': reduction '{}' on device memory supports double, float and "
          "32/64-bit integers",
          rank, k, name, to_string(op));
}

std::string type_label(scalar_kind k, const std::string& other_name) {
  return arithmetic(k) ? std::string(to_string(k)) : other_name;
}

}  // namespace detail
}  // namespace halox
