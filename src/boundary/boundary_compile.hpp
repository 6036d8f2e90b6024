#pragma once
// Physical boundary rules compiled at set-up (halox/boundary/boundary.hpp): checked against the
// domain, then turned into host fills run after every exchange, or into the device fills and
// callbacks of src/boundary/device_boundary.hpp.

#include <array>
#include <functional>
#include <vector>

#include "halox/boundary/boundary.hpp"
#include "halox/pattern/stencil.hpp"
#include "program/boundary_ops.hpp"

namespace halox::detail {

/// Checks field #k's rules against the domain (`per` its periodicity) and compiles them, in
/// dimension order, low before high, block by block: into host work for a host field, into
/// fills and callbacks in `device` for a device field. Throws halox::error naming the rank, the
/// field and the face. Along a staggered dimension the field's points run from 0 to n (the
/// boundary points lie on the faces and are owned): the rules fill the points beyond them, and
/// a reflection mirrors about the boundary point (point −k holds point k).
template <int D>
std::vector<std::function<void()>> compile_boundary(const std::vector<face_rule<D>>& rules,
                                                    const field_state<D>& f, const stencil<D>& st,
                                                    const std::array<bool, D>& per, int rank, int k,
                                                    device_rules& device);

}  // namespace halox::detail
