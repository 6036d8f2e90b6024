// Stencil, Box and Centering for Python (see shapes.hpp).
#include "shapes.hpp"

#include <pybind11/operators.h>
#include <pybind11/stl.h>

#include <halox/domain/interior.hpp>

namespace halox::python {

namespace {

template <class F>
decltype(auto) visit_stencil(const py_stencil& s, F&& f) {
  return with_dim(s.dim(), [&]<int D>() { return f(s.get<D>()); });
}

template <int D>
widths<D> widths_from(const std::vector<int>& v) {
  widths<D> w{};
  for (int i = 0; i < D; ++i) w[std::size_t(i)] = v[std::size_t(i)];
  return w;
}

/// star/box with per-side widths: the dimension is the widths' length.
template <bool Box>
py_stencil sided(const std::vector<int>& lo, const std::vector<int>& hi) {
  if (lo.size() != hi.size())
    throw error(detail::format("stencil widths: lo has {} entries, hi {}", lo.size(), hi.size()));
  return with_dim(int(lo.size()), [&]<int D>() {
    return py_stencil(Box ? stencil<D>::box(widths_from<D>(lo), widths_from<D>(hi))
                          : stencil<D>::star(widths_from<D>(lo), widths_from<D>(hi)));
  });
}

template <bool Box>
py_stencil uniform(int dim, int w) {
  return with_dim(
      dim, [&]<int D>() { return py_stencil(Box ? stencil<D>::box(w) : stencil<D>::star(w)); });
}

/// stencil::from_offsets takes an initializer list; this is the same rule over a vector.
template <int D>
stencil<D> from_offset_list(const std::vector<std::array<int, D>>& offs) {
  stencil<D> s{};
  for (const auto& o : offs)
    for (int i = 0; i < D; ++i) {
      s.lo[i] = std::max(s.lo[i], -o[std::size_t(i)]);
      s.hi[i] = std::max(s.hi[i], o[std::size_t(i)]);
    }
  // Each direction that one offset needs, through from_offsets itself (one offset at a time),
  // so the rule stays halox's.
  for (const auto& o : offs) {
    const stencil<D> one = stencil<D>::from_offsets({o});
    for (int k = 0; k < stencil<D>::slots; ++k) s.used[std::size_t(k)] |= one.used[std::size_t(k)];
  }
  return s;
}

py_stencil offsets(const std::vector<std::vector<int>>& offs) {
  if (offs.empty()) throw error("from_offsets needs at least one offset");
  const int dim = int(offs.front().size());
  for (const auto& o : offs)
    if (int(o.size()) != dim)
      throw error(detail::format("from_offsets: offsets of {} and {} entries", dim, o.size()));
  return with_dim(dim, [&]<int D>() {
    std::vector<std::array<int, D>> a;
    for (const auto& o : offs) {
      std::array<int, D> x{};
      for (int i = 0; i < D; ++i) x[std::size_t(i)] = o[std::size_t(i)];
      a.push_back(x);
    }
    return py_stencil(from_offset_list<D>(a));
  });
}

/// A stencil from its widths and neighbour directions (unpickling).
py_stencil with_stencil_parts(const std::vector<int>& lo, const std::vector<int>& hi,
                              const std::vector<std::vector<int>>& dirs) {
  if (lo.size() != hi.size()) throw error("stencil widths of different lengths");
  return with_dim(int(lo.size()), [&]<int D>() {
    stencil<D> s{};
    s.lo = widths_from<D>(lo);
    s.hi = widths_from<D>(hi);
    for (const auto& d : dirs) {
      direction<D> x{};
      for (int i = 0; i < D; ++i) x[std::size_t(i)] = d.at(std::size_t(i));
      s.used[std::size_t(stencil<D>::encode(x))] = true;
    }
    return py_stencil(s);
  });
}

std::string stencil_repr(const py_stencil& s) {
  return detail::format("halox.Stencil(dim={}, lo=({}), hi=({}), neighbors={})", s.dim(),
                        detail::join(s.lo(), ", "), detail::join(s.hi(), ", "), s.neighbor_count());
}

py::tuple tuple_of(const std::vector<index>& v) {
  py::tuple t(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) t[i] = py::int_(v[i]);
  return t;
}

}  // namespace

std::vector<int> py_stencil::lo() const {
  return visit_stencil(*this,
                       [](const auto& s) { return std::vector<int>(s.lo.begin(), s.lo.end()); });
}
std::vector<int> py_stencil::hi() const {
  return visit_stencil(*this,
                       [](const auto& s) { return std::vector<int>(s.hi.begin(), s.hi.end()); });
}
int py_stencil::neighbor_count() const {
  return visit_stencil(*this, [](const auto& s) { return s.neighbor_count(); });
}
std::vector<std::vector<int>> py_stencil::directions() const {
  return visit_stencil(*this, [](const auto& s) {
    const auto all = s.directions();  // the neighbours first, in slot order
    std::vector<std::vector<int>> out;
    for (int k = 0; k < s.neighbor_count(); ++k)
      out.emplace_back(all[std::size_t(k)].begin(), all[std::size_t(k)].end());
    return out;
  });
}

bool py_box::empty() const {
  for (std::size_t i = 0; i < lo.size(); ++i)
    if (hi[i] <= lo[i]) return true;
  return false;
}
index py_box::volume() const {
  if (empty()) return 0;
  index v = 1;
  for (std::size_t i = 0; i < lo.size(); ++i) v *= hi[i] - lo[i];
  return v;
}
std::string py_box::text() const {
  std::string s;
  for (std::size_t i = 0; i < lo.size(); ++i)
    s += detail::format("{}[{},{})", i ? "x" : "", lo[i], hi[i]);
  return s;
}

template <int D>
std::pair<widths<D>, widths<D>> padding(py::handle obj) {
  if (py::isinstance<py_stencil>(obj)) {
    const auto& s = obj.cast<const py_stencil&>();
    if (s.dim() != D)
      throw error(detail::format("padding: the stencil is {}-D, the domain {}-D", s.dim(), D));
    return {s.get<D>().lo, s.get<D>().hi};
  }
  if (PyLong_Check(obj.ptr())) {
    widths<D> w{};
    w.fill(obj.cast<int>());
    return {w, w};
  }
  const auto seq = py::reinterpret_borrow<py::sequence>(obj);
  if (seq.size() == 2 && !PyLong_Check(seq[0].ptr()))
    return {fixed<D, int>(seq[0], "padding below", true),
            fixed<D, int>(seq[1], "padding above", true)};
  const auto w = fixed<D, int>(obj, "padding");
  return {w, w};
}
template std::pair<widths<1>, widths<1>> padding<1>(py::handle);
template std::pair<widths<2>, widths<2>> padding<2>(py::handle);
template std::pair<widths<3>, widths<3>> padding<3>(py::handle);
template std::pair<widths<4>, widths<4>> padding<4>(py::handle);

centering centering_from(py::handle obj) {
  if (obj.is_none()) return centering::cell();
  return obj.cast<centering>();
}

shared_points shared_points_from(py::handle obj, int me, const std::string& what) {
  if (obj.is_none()) return shared_points::owner_overwrites;
  const std::string s = py::str(obj).cast<std::string>();
  if (py::isinstance<py::str>(obj) && (s == "keep" || s == "owner_overwrites"))
    return s == "keep" ? shared_points::keep : shared_points::owner_overwrites;
  throw error(
      detail::format("rank {}: {}: shared_points {} is neither 'owner_overwrites' nor 'keep'", me,
                     what, py::repr(obj).cast<std::string>()));
}

namespace {

/// Stencil.has: whether `d` (a tuple of -1/0/+1) is one of the stencil's neighbours.
bool stencil_has(const py_stencil& s, const std::vector<int>& d) {
  return with_dim(s.dim(), [&]<int D>() {
    if (int(d.size()) != D)
      throw error(detail::format("direction of {} entries for a {}-D stencil", d.size(), D));
    direction<D> x{};
    for (int i = 0; i < D; ++i) {
      if (d[std::size_t(i)] < -1 || d[std::size_t(i)] > 1) return false;
      x[std::size_t(i)] = d[std::size_t(i)];
    }
    return std::any_of(x.begin(), x.end(), [](int v) { return v != 0; }) && s.get<D>().has(x);
  });
}

py::list stencil_directions(const py_stencil& s) {
  py::list out;
  for (const auto& d : s.directions()) out.append(py::tuple(py::cast(d)));
  return out;
}

py::ssize_t stencil_hash(const py_stencil& s) {
  return py::hash(py::make_tuple(py::tuple(py::cast(s.lo())), py::tuple(py::cast(s.hi())),
                                 py::tuple(py::cast(s.directions()))));
}

/// Stencil's constructors, properties and Python protocol.
void bind_stencil(py::module_& m) {
  py::class_<py_stencil> c(m, "Stencil", R"doc(
The halo a stencil reads: widths below (``lo``) and above (``hi``) the owned box per dimension,
and the neighbour directions (faces, edges, corners) whose halo regions are filled.

``Stencil.star(3, 1)`` (faces only), ``Stencil.box(3, 1)`` (faces, edges, corners), per-side
widths ``Stencil.star(lo=(1, 0), hi=(1, 2))``, or derived from the offsets a stencil reads:
``Stencil.from_offsets([(-1, 0), (1, 0), (0, -1), (0, 1), (1, 1)])``.)doc");
  c.def_static("star", &uniform<false>, py::arg("dim"), py::arg("width"),
               "Faces only (2·dim neighbours), ``width`` cells on every side.")
      .def_static("star", &sided<false>, py::kw_only(), py::arg("lo"), py::arg("hi"),
                  "Faces only, with a width per side (zeros allowed); the dimension is len(lo).")
      .def_static("box", &uniform<true>, py::arg("dim"), py::arg("width"),
                  "Faces, edges and corners (3^dim − 1 neighbours), ``width`` cells on every side.")
      .def_static("box", &sided<true>, py::kw_only(), py::arg("lo"), py::arg("hi"),
                  "Faces, edges and corners, with a width per side.")
      .def_static("from_offsets", &offsets, py::arg("offsets"), R"doc(
Widths and directions from the offsets a stencil reads: the widths are the largest reach per
side, and an offset needs every direction between it and the centre (a diagonal offset needs
its corner and the faces beside it).)doc");
  c.def_property_readonly("dim", &py_stencil::dim)
      .def_property_readonly("lo", [](const py_stencil& s) { return py::tuple(py::cast(s.lo())); })
      .def_property_readonly("hi", [](const py_stencil& s) { return py::tuple(py::cast(s.hi())); })
      .def_property_readonly("neighbor_count", &py_stencil::neighbor_count)
      .def_property_readonly(
          "directions", &stencil_directions,
          "The neighbour directions, each a tuple of -1/0/+1 (dimension 0 varies fastest).")
      .def("has", &stencil_has, py::arg("direction"),
           "Whether ``direction`` (a tuple of -1/0/+1) is a neighbour.")
      .def_property_readonly("max_width", [](const py_stencil& s) {
        return visit_stencil(s, [](const auto& x) { return x.max_width(); });
      });
  c.def(py::pickle(
            [](const py_stencil& s) { return py::make_tuple(s.lo(), s.hi(), s.directions()); },
            [](const py::tuple& t) {
              return with_stencil_parts(t[0].cast<std::vector<int>>(),
                                        t[1].cast<std::vector<int>>(),
                                        t[2].cast<std::vector<std::vector<int>>>());
            }))
      .def(py::self == py::self)
      .def("__hash__", &stencil_hash)
      .def("__repr__", &stencil_repr);
}

py::tuple box_shape(const py_box& b) {
  std::vector<index> s;
  for (std::size_t i = 0; i < b.lo.size(); ++i) s.push_back(std::max<index>(0, b.hi[i] - b.lo[i]));
  return tuple_of(s);
}

py::tuple box_slices(const py_box& b, const std::vector<index>& origin) {
  if (origin.size() != b.lo.size())
    throw error(detail::format("Box.slices: origin has {} entries, the box {}", origin.size(),
                               b.lo.size()));
  py::tuple t(b.lo.size());
  for (std::size_t i = 0; i < b.lo.size(); ++i)
    t[i] = py::slice(py::int_(b.lo[i] - origin[i]),
                     py::int_(std::max(b.lo[i], b.hi[i]) - origin[i]), py::none());
  return t;
}

/// Box: global cells, their shape and slices, and Python's protocol.
void bind_box(py::module_& m) {
  py::class_<py_box>(m, "Box", R"doc(
Cells ``lo[i] <= x[i] < hi[i]`` in global indices. ``box.slices(origin)`` gives the NumPy index
of these cells in an array whose element 0 is global cell ``origin``.)doc")
      .def(py::init([](const std::vector<index>& lo, const std::vector<index>& hi) {
             if (lo.size() != hi.size())
               throw error(detail::format("Box: lo has {} entries, hi {}", lo.size(), hi.size()));
             return py_box{lo, hi};
           }),
           py::arg("lo"), py::arg("hi"))
      .def_property_readonly("lo", [](const py_box& b) { return tuple_of(b.lo); })
      .def_property_readonly("hi", [](const py_box& b) { return tuple_of(b.hi); })
      .def_property_readonly("shape", &box_shape)
      .def_property_readonly("dim", [](const py_box& b) { return b.lo.size(); })
      .def_property_readonly("volume", &py_box::volume)
      .def_property_readonly("empty", &py_box::empty)
      .def(
          "slices", &box_slices, py::arg("origin"),
          "A tuple of slices selecting this box in an array that starts at global cell ``origin``.")
      .def(py::pickle(
          [](const py_box& b) { return py::make_tuple(tuple_of(b.lo), tuple_of(b.hi)); },
          [](const py::tuple& t) {
            return py_box{t[0].cast<std::vector<index>>(), t[1].cast<std::vector<index>>()};
          }))
      .def("__eq__", [](const py_box& a, const py_box& b) { return a.lo == b.lo && a.hi == b.hi; })
      .def("__hash__",
           [](const py_box& b) { return py::hash(py::make_tuple(tuple_of(b.lo), tuple_of(b.hi))); })
      .def("__repr__", [](const py_box& b) {
        return detail::format("halox.Box(lo=({}), hi=({}))", detail::join(b.lo, ", "),
                              detail::join(b.hi, ", "));
      });
}

/// Centering: where a field's values live.
void bind_centering(py::module_& m) {
  py::class_<centering>(m, "Centering", R"doc(
Where a field's values live: ``Centering.cell()`` (the default), ``Centering.face(d)`` (faces
normal to dimension d), ``Centering.edge(d)`` (edges along d) or ``Centering.node()``. A
staggered field has one more point than cells along each staggered non-periodic dimension
(docs/staggered.md).)doc")
      .def_static("cell", &centering::cell)
      .def_static("face", &centering::face, py::arg("dim"))
      .def_static("edge", &centering::edge, py::arg("dim"))
      .def_static("node", &centering::node)
      .def(
          "staggered", [](const centering& c, int i, int dim) { return c.staggered(i, dim); },
          py::arg("i"), py::arg("dim"),
          "Whether the centering is staggered along dimension i of a dim-D field.")
      .def(py::pickle([](const centering& c) { return py::make_tuple(int(c.where), c.dim); },
                      [](const py::tuple& t) {
                        return centering{centering::kind(t[0].cast<int>()), t[1].cast<int>()};
                      }))
      .def(py::self == py::self)
      .def("__hash__",
           [](const centering& c) { return py::hash(py::make_tuple(int(c.where), c.dim)); })
      .def("__repr__", [](const centering& c) {
        return "halox.Centering." + to_string(c) +
               (c.where == centering::kind::cell || c.where == centering::kind::node ? "()" : "");
      });
}

/// split_interior: an owned box as interior and shell, for overlap.
void bind_split_interior(py::module_& m) {
  m.def(
      "split_interior",
      [](const py_box& b, const py_stencil& s) {
        return with_dim(s.dim(), [&]<int D>() {
          if (int(b.lo.size()) != D)
            throw error(detail::format("split_interior: the box is {}-D, the stencil {}-D",
                                       b.lo.size(), D));
          const auto parts = split_interior(b.get<D>(), s.get<D>());
          py::list shell;
          for (const auto& x : parts.shell) shell.append(py_box::of(x));
          return py::make_tuple(py_box::of(parts.interior), shell);
        });
      },
      py::arg("box"), py::arg("stencil"), R"doc(
Splits an owned box for overlap: ``(interior, shell)``, the cells whose stencil reads no halo
cell, and the rest as at most 2·dim disjoint boxes. Update the interior while an exchange is in
flight, the shell after ``wait()``.)doc");
}

}  // namespace

void bind_shapes(py::module_& m) {
  bind_stencil(m);
  bind_box(m);
  bind_centering(m);
  bind_split_interior(m);
}

}  // namespace halox::python
