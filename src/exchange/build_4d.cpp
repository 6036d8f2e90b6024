// The exchange builder, its plans and boundary rules for 4-D domains. One translation unit per
// dimension, so that a program links the builders of the dimensions it uses only.

#include "boundary/boundary_compile_impl.hpp"
#include "exchange/structured_build_impl.hpp"

namespace halox {
HALOX_PLANS(cartesian, 4)
HALOX_PLANS(box_list, 4)
HALOX_BUILD(cartesian, 4)
HALOX_BUILD(box_list, 4)
namespace detail {
HALOX_BOUNDARY(4)
}  // namespace detail
}  // namespace halox
