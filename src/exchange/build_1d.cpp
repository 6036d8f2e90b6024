// The exchange builder, its plans and boundary rules for 1-D domains. One translation unit per
// dimension, so that a program links the builders of the dimensions it uses only.

#include "boundary/boundary_compile_impl.hpp"
#include "exchange/structured_build_impl.hpp"

namespace halox {
HALOX_PLANS(cartesian, 1)
HALOX_PLANS(box_list, 1)
HALOX_BUILD(cartesian, 1)
HALOX_BUILD(box_list, 1)
namespace detail {
HALOX_BOUNDARY(1)
}  // namespace detail
}  // namespace halox
