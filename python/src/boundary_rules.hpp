#pragma once
// Boundary rules from Python: halox::boundary<T, D> built from the (dim, side, kind, payload)
// tuples halox.Boundary collects, with Python callables as callbacks.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include <halox/boundary/boundary.hpp>

#include "common.hpp"
#include "exchange.hpp"
#include "shapes.hpp"

namespace halox::python {

/// How a boundary callback finds a block's array and its indices: the block's Python array,
/// the global cell at its element 0, and the axis of the components (-1: none).
struct callback_target {
  std::vector<py::object> arrays;
  std::vector<std::vector<index>> origins;
  int component_axis = -1;
  int ndim = 0;

  callback_target() = default;
  callback_target(const callback_target&) = delete;
  callback_target& operator=(const callback_target&) = delete;
  ~callback_target() {
    py::gil_scoped_acquire gil;  // halox may drop the last callback anywhere
    arrays.clear();
  }
};

/// What Python's boundary callbacks receive.
struct py_face {
  py::object array;
  int block = 0;
  int dim = 0;
  std::string side;
  py_box cells;
  py::object index;
  py::object stream;
};

/// "low"/"high" (or 0/1) as a side.
side side_from(py::handle s);

/// Calls the Python callable with a py_face for each face halox asks it to fill (the GIL
/// taken; the callable and the targets released with the GIL held, wherever halox drops them).
template <class T, int D>
typename boundary<T, D>::callback_type python_callback(py::object fn,
                                                       std::shared_ptr<callback_target> target) {
  auto held = std::make_shared<held_object>(std::move(fn));
  return [held, t = std::move(target)](const boundary_face<T, D>& f) {
    py::gil_scoped_acquire gil;
    py_face face;
    face.array = t->arrays.at(std::size_t(f.block));
    face.block = f.block;
    face.dim = f.face.dim;
    face.side = f.face.at == side::low ? "low" : "high";
    face.cells = py_box::of(f.cells);
    const auto& origin = t->origins.at(std::size_t(f.block));
    py::tuple index(std::size_t(t->ndim));
    int spatial = 0;
    for (int a = 0; a < t->ndim; ++a) {
      if (a == t->component_axis) {
        index[std::size_t(a)] = py::slice(py::none(), py::none(), py::none());
        continue;
      }
      const auto i = std::size_t(spatial++);
      index[std::size_t(a)] = py::slice(py::int_(f.cells.lo[i] - origin[i]),
                                        py::int_(f.cells.hi[i] - origin[i]), py::none());
    }
    face.index = std::move(index);
    face.stream = f.stream ? py::object(py::int_(reinterpret_cast<std::uintptr_t>(f.stream)))
                           : py::object(py::none());
    held->get()(face);
  };
}

template <class T, int D>
boundary<T, D> boundary_from(const py::list& rules,
                             const std::shared_ptr<callback_target>& target) {
  boundary<T, D> bc;
  for (const auto& r : rules) {
    const auto rule = py::reinterpret_borrow<py::tuple>(r);
    if (rule.size() != 4) throw error("a boundary rule is a (dim, side, kind, payload) tuple");
    const face fc{rule[0].cast<int>(), side_from(rule[1])};
    const auto kind = rule[2].cast<std::string>();
    const py::handle payload = rule[3];
    if (kind == "constant") {
      bc.constant(fc, payload.cast<T>());
    } else if (kind == "zero_gradient") {
      bc.zero_gradient(fc);
    } else if (kind == "reflect") {
      bc.reflect(fc, payload.is_none() ? std::vector<T>{} : payload.cast<std::vector<T>>());
    } else if (kind == "mirror") {
      bc.mirror(fc, payload.is_none() ? std::vector<T>{} : payload.cast<std::vector<T>>());
    } else if (kind == "callback") {
      if (!PyCallable_Check(payload.ptr()))
        throw error(detail::format("the callback for face ({}, {}) is not callable", fc.dim,
                                   to_string(fc.at)));
      bc.callback(fc, python_callback<T, D>(py::reinterpret_borrow<py::object>(payload), target));
    } else {
      throw error(detail::format("unknown boundary rule '{}'", kind));
    }
  }
  return bc;
}

}  // namespace halox::python
