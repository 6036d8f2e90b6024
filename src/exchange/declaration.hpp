#pragma once
/// What a rank declares for an exchange, item by item, so that a rank can compare its own
/// declaration with each peer's at set-up (see src/exchange/peer_agreement.hpp).

#include <string>
#include <vector>

#include "halox/core/box.hpp"
#include "halox/core/format.hpp"
#include "halox/core/reduction.hpp"
#include "halox/core/scalar.hpp"
#include "halox/field/centering.hpp"
#include "halox/field/memory.hpp"
#include "halox/pattern/stencil.hpp"
#include "program/program.hpp"

namespace halox::detail {

/// One item per field: its value type (`type`, as type_label names it, of `bytes` bytes),
/// components, memory space, centering and, for a staggered field that keeps them, its shared
/// points (peers that disagree would plan different messages).
inline void declare_field(declaration& d, int k, const std::string& type, std::size_t bytes,
                          int components, memory_space space,
                          const centering& at = centering::cell(),
                          shared_points shared = shared_points::owner_overwrites) {
  d.push_back({detail::format("field #{}", k),
               detail::format(
                   "{} ({} B) x {} component(s) in {} memory{}{}", type, bytes, components,
                   to_string(space), at == centering::cell() ? "" : ", centred " + to_string(at),
                   at != centering::cell() && shared == shared_points::keep ? ", shared points kept"
                                                                            : "")});
}

/// The direction of an exchange: forward, or reverse with its combining operation.
inline std::string direction_label(bool reverse, reduction op) {
  return reverse ? detail::format("reverse ({})", to_string(op)) : std::string("forward");
}

/// The declaration of a structured exchange: direction, stencil, global box, periodicity,
/// field count, then each field.
template <int D>
std::string stencil_label(const stencil<D>& st) {
  std::string slots;
  for (bool u : st.used) slots += u ? '1' : '0';
  return detail::format("halo widths lo {} hi {}, {} neighbour direction(s) (slots {})", st.lo,
                        st.hi, st.neighbor_count(), slots);
}

template <int D>
declaration declare_structured(const stencil<D>& st, const box<D>& global,
                               const std::array<bool, D>& per, bool reverse, reduction op,
                               std::size_t fields) {
  declaration d;
  d.push_back({"direction", direction_label(reverse, op)});
  d.push_back({"dimensions", std::to_string(D)});
  d.push_back({"stencil", stencil_label(st)});
  d.push_back({"global box", to_string(global)});
  d.push_back({"periodicity", detail::format("{}", per)});
  d.push_back({"field count", std::to_string(fields)});
  return d;
}

/// The declaration of a structured exchange with a stencil per field: as above with the
/// stencil item "per field", followed by one "stencil of field #k" item per field; a single
/// shared stencil declares exactly as the single-stencil form.
template <int D>
declaration declare_structured(const std::vector<const stencil<D>*>& sts, const box<D>& global,
                               const std::array<bool, D>& per) {
  bool same = true;
  for (const auto* s : sts) same = same && *s == *sts.front();
  if (same)
    return declare_structured<D>(*sts.front(), global, per, false, reduction::replace, sts.size());
  declaration d =
      declare_structured<D>(*sts.front(), global, per, false, reduction::replace, sts.size());
  d[2].second = "per field";
  for (std::size_t k = 0; k < sts.size(); ++k)
    d.push_back({detail::format("stencil of field #{}", k), stencil_label(*sts[k])});
  return d;
}

/// The declaration of an unstructured exchange: direction and field count, then each field.
inline declaration declare_unstructured(bool reverse, reduction op, std::size_t fields) {
  declaration d;
  d.push_back({"direction", direction_label(reverse, op)});
  d.push_back({"field count", std::to_string(fields)});
  return d;
}

}  // namespace halox::detail
