#pragma once
// How a reverse exchange combines values of a field's kind (halox/core/scalar.hpp): the host
// functions and the GPU kernels' codes of a reduction, and the check that a field can combine.

#include <string>

#include "halox/core/reduction.hpp"
#include "halox/core/scalar.hpp"
#include "halox/field/memory.hpp"
#include "program/ops.hpp"

namespace halox::detail {

/// How values of kind `k` combine under `r` (host function null for `replace`: a copy).
combiner combiner_for(scalar_kind k, reduction r);

/// Throws halox::error where field #k (`name`, of kind `kind` in `space`) cannot be combined
/// with `op`: a non-arithmetic type, or a type the GPU kernels cannot combine.
void check_reducible(reduction op, int k, const std::string& name, int rank, scalar_kind kind,
                     memory_space space);

}  // namespace halox::detail
