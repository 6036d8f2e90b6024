// The combining functions of a reverse exchange, per value kind.

#include "program/combine.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/scalar.hpp"
#include "halox/core/error.hpp"

namespace halox::detail {
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

}  // namespace halox::detail
