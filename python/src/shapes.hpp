#pragma once
// Stencils, boxes and centerings with their dimension chosen at run time: Python's Stencil,
// Box and Centering, and the conversions to halox's compile-time-dimension types.

#include <pybind11/pybind11.h>

#include <array>
#include <string>
#include <variant>
#include <vector>

#include <halox/core/box.hpp>
#include <halox/field/centering.hpp>
#include <halox/pattern/stencil.hpp>

#include "common.hpp"

namespace halox::python {

/// A stencil of 1 to 4 dimensions.
class py_stencil {
 public:
  template <int D>
  explicit py_stencil(const stencil<D>& s) : s_(s) {}

  int dim() const { return int(s_.index()) + 1; }
  template <int D>
  const stencil<D>& get() const {
    return std::get<std::size_t(D - 1)>(s_);
  }
  std::vector<int> lo() const;
  std::vector<int> hi() const;
  int neighbor_count() const;
  std::vector<std::vector<int>> directions() const;
  bool operator==(const py_stencil& o) const { return s_ == o.s_; }

 private:
  std::variant<stencil<1>, stencil<2>, stencil<3>, stencil<4>> s_;
};

/// A box of global indices, `lo[i] <= x[i] < hi[i]`, of any dimension.
struct py_box {
  std::vector<index> lo, hi;

  template <int D>
  static py_box of(const box<D>& b) {
    return {{b.lo.begin(), b.lo.end()}, {b.hi.begin(), b.hi.end()}};
  }
  template <int D>
  box<D> get() const {
    box<D> b;
    for (int i = 0; i < D; ++i) b.lo[i] = lo[std::size_t(i)], b.hi[i] = hi[std::size_t(i)];
    return b;
  }
  bool empty() const;
  index volume() const;
  std::string text() const;
};

/// Exactly `D` integers from a sequence (or `D` copies of one integer where `scalar_ok`);
/// `what` names the argument in the message.
template <int D, class T = index>
std::array<T, D> fixed(py::handle seq, const char* what, bool scalar_ok = false) {
  std::array<T, D> out{};
  if (scalar_ok && PyLong_Check(seq.ptr())) {
    out.fill(seq.cast<T>());
    return out;
  }
  const auto v = seq.cast<std::vector<T>>();
  if (int(v.size()) != D)
    throw error(
        detail::format("{} has {} entries, the domain has {} dimensions", what, v.size(), D));
  for (int i = 0; i < D; ++i) out[std::size_t(i)] = v[std::size_t(i)];
  return out;
}

/// Halo padding given as in Python: an integer (every side), a sequence of D integers (both
/// sides alike), a pair of such sequences (below, above), or a Stencil (its widths).
template <int D>
std::pair<widths<D>, widths<D>> padding(py::handle obj);

/// A centering from None (cells) or a Centering.
centering centering_from(py::handle obj);

/// A shared-points rule from None (the owner overwrites), 'owner_overwrites' or 'keep'; throws
/// halox::error naming `what` and rank `me` for anything else.
shared_points shared_points_from(py::handle obj, int me, const std::string& what);

void bind_shapes(py::module_& m);

}  // namespace halox::python
