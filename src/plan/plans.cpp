// The plan builder compiled once: make_plan for cartesian<D> and box_list<D>, D = 1..4.

#include "halox/domain/box_list.hpp"
#include "halox/domain/cartesian.hpp"
#include "plan/plan_builder.hpp"

namespace halox {

#define HALOX_PLANS(Dom, D)                                                           \
  template structured_plan<D> make_plan<D, Dom<D>>(const Dom<D>&, const stencil<D>&); \
  template structured_plan<D> make_plan<D, Dom<D>>(const Dom<D>&, const stencil<D>&,  \
                                                   const detail::point_grid<D>&);     \
  template structured_plan<D> make_plan<D, Dom<D>>(const Dom<D>&, const stencil<D>&,  \
                                                   std::span<const region_rule<D>>);
HALOX_PLANS(cartesian, 1)
HALOX_PLANS(cartesian, 2)
HALOX_PLANS(cartesian, 3)
HALOX_PLANS(cartesian, 4)
HALOX_PLANS(box_list, 1)
HALOX_PLANS(box_list, 2)
HALOX_PLANS(box_list, 3)
HALOX_PLANS(box_list, 4)
#undef HALOX_PLANS

}  // namespace halox
