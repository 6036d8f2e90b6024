// Cartesian and BoxList for Python (see domains.hpp): arguments parsed on every rank inside one
// agreement, then the domain of their dimension made (collective, as in C++).
#include "domains.hpp"

#include <pybind11/stl.h>

namespace halox::python {

namespace {

struct structured_args {
  std::vector<index> extents;
  std::vector<bool> periodic;
};

structured_args parse(py::handle extents, py::handle periodic) {
  structured_args a;
  a.extents = extents.cast<std::vector<index>>();
  if (a.extents.empty() || a.extents.size() > 4)
    throw error(detail::format("extents has {} entries; halox supports 1 to 4 dimensions",
                               a.extents.size()));
  if (PyBool_Check(periodic.ptr()) || periodic.is_none())
    a.periodic.assign(a.extents.size(), periodic.is_none() ? false : periodic.cast<bool>());
  else
    a.periodic = periodic.cast<std::vector<bool>>();
  if (a.periodic.size() != a.extents.size())
    throw error(
        detail::format("periodic has {} entries, extents {}", a.periodic.size(), a.extents.size()));
  return a;
}

py::tuple tuple_of_bools(const std::vector<bool>& v) {
  py::tuple t(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) t[i] = py::bool_(v[i]);
  return t;
}

field_args args_of(py::object stencil, py::object dtype, int components, py::object pad,
                   bool device, py::object centering, std::string order,
                   std::string component_layout, py::object name, py::object shared) {
  field_args a;
  a.stencil = std::move(stencil);
  a.dtype = std::move(dtype);
  a.components = components;
  a.pad = std::move(pad);
  a.device = device;
  a.centering = std::move(centering);
  a.order = std::move(order);
  a.component_layout = std::move(component_layout);
  a.name = name.is_none() ? std::string() : name.cast<std::string>();
  a.shared_points = std::move(shared);
  return a;
}

constexpr const char* make_field_doc = R"doc(
A field halox allocates (zeroed), padded for ``stencil`` (or ``pad``: an integer, D integers,
or a pair of D-tuples below/above): a NumPy array (host) or a DeviceArray (``device=True``,
exporting __cuda_array_interface__ and DLPack) over the owned box plus its halo, axis i being
dimension i and components the last axis (when ``components > 1``). Element ``a[i, j, ...]``
holds global cell ``(lo[0] - pad_lo[0] + i, ...)``. ``order`` ('C' or 'F') and
``component_layout`` ('interleaved' or 'planar') choose the memory layout; ``centering`` a
staggered field (one more point along its staggered non-periodic dimensions);
``shared_points`` ('owner_overwrites', the default, or 'keep') whether the exchange writes the
owner's value over the points a staggered field's blocks share or leaves each block its own
(docs/staggered.md). Host fields live
in memory the other ranks of the node can map: shared-memory exchanges copy straight from a
neighbour's owned cells into the halo. Collective.)doc";

py_cartesian make_cartesian(py::handle comm, py::handle extents, py::handle periodic,
                            py::handle grid) {
  const auto bc = boost_comm(comm);
  structured_args a;
  std::vector<int> g;
  collective(bc, [&] {
    a = parse(extents, periodic);
    if (!grid.is_none()) {
      g = grid.cast<std::vector<int>>();
      if (g.size() != a.extents.size())
        throw error(detail::format("grid has {} entries, extents {}", g.size(), a.extents.size()));
    }
  });
  return py_cartesian{{with_dim(int(a.extents.size()), [&]<int D>() {
    return cartesian_ops<D>(bc, a.extents, a.periodic, g);
  })}};
}

/// One entry of a BoxList's `boxes`: (lo, hi, owner) or (Box, owner), of the domain's dimension.
std::pair<py_box, int> box_entry(py::handle item, std::size_t k, std::size_t dim) {
  const auto t = py::reinterpret_borrow<py::tuple>(item);
  py_box b;
  if (t.size() == 2 && py::isinstance<py_box>(t[0])) {
    b = t[0].cast<py_box>();
  } else if (t.size() == 3) {
    b = {t[0].cast<std::vector<index>>(), t[1].cast<std::vector<index>>()};
  } else {
    throw error("a BoxList box is (lo, hi, owner) or (Box, owner)");
  }
  if (b.lo.size() != dim || b.hi.size() != dim)
    throw error(detail::format("box {} has {} dimensions, the domain {}", k, b.lo.size(), dim));
  return {b, t[t.size() - 1].cast<int>()};
}

py_box_list make_box_list(py::handle comm, py::handle extents, py::handle periodic,
                          py::handle boxes) {
  const auto bc = boost_comm(comm);
  structured_args a;
  std::vector<py_box> list;
  std::vector<int> owners;
  collective(bc, [&] {
    a = parse(extents, periodic);
    for (const auto& item : boxes) {
      auto [b, owner] = box_entry(item, list.size(), a.extents.size());
      list.push_back(std::move(b));
      owners.push_back(owner);
    }
  });
  return py_box_list{{with_dim(int(a.extents.size()), [&]<int D>() {
    return box_list_ops<D>(bc, a.extents, a.periodic, list, owners);
  })}};
}

/// make_field's arguments after the domain, the same for Cartesian and BoxList.
template <class Dom, class Ret>
auto make_field_of(Ret (*finish)(py_blocks)) {
  return [finish](const Dom& d, py::object stencil, py::object dtype, int components,
                  py::object pad, bool device, py::object centering, std::string order,
                  std::string component_layout, py::object name, py::object shared) {
    return finish(d.ops->make_field(args_of(std::move(stencil), std::move(dtype), components,
                                            std::move(pad), device, std::move(centering),
                                            std::move(order), std::move(component_layout),
                                            std::move(name), std::move(shared))));
  };
}
py::object first_array(py_blocks b) {
  return py::object(b.arrays[0]);
}
py_blocks all_blocks(py_blocks b) {
  return b;
}

/// What Cartesian and BoxList share.
void bind_domain_base(py::module_& m) {
  py::class_<py_domain>(m, "Domain", "What Cartesian and BoxList share.")
      .def_property_readonly("dim", [](const py_domain& d) { return d.ops->dim(); })
      .def_property_readonly("rank", [](const py_domain& d) { return d.ops->comm().rank(); })
      .def_property_readonly("size", [](const py_domain& d) { return d.ops->comm().size(); })
      .def_property_readonly(
          "extents",
          [](const py_domain& d) { return py::tuple(py::cast(d.ops->global_extents())); },
          "The global extents: cells 0 <= x[i] < extents[i].")
      .def_property_readonly("periodic",
                             [](const py_domain& d) { return tuple_of_bools(d.ops->periodic()); })
      .def_property_readonly(
          "local_boxes", [](const py_domain& d) { return d.ops->local_boxes(); },
          "This rank's owned boxes (global indices), in block order.")
      .def(
          "boxes_of", [](const py_domain& d, int r) { return d.ops->boxes_of(r); }, py::arg("rank"))
      .def(
          "_build",
          [](const py_domain& d, const py::list& stencils, const py::list& fields,
             py::handle reverse_op, const py::dict& options, py::handle error) {
            return d.ops->build(stencils, fields, reverse_op, options, error);
          },
          py::arg("stencils"), py::arg("fields"), py::arg("reverse_op"), py::arg("options"),
          py::arg("error") = py::none());
}

void bind_cartesian(py::module_& m) {
  py::class_<py_cartesian, py_domain>(m, "Cartesian", R"doc(
The global box [0, extents[0]) x ... split into one block per rank over a Cartesian process
grid: automatic (smallest halo surface) or the one given. Ranks are numbered row-major over the
grid, like MPI_Cart_create. Collective: every rank passes the same arguments (checked; a
difference raises halox.Error on every rank).

``comm``: an mpi4py communicator, or None for MPI_COMM_WORLD (halox then initialises MPI
itself if nothing has). ``periodic``: one bool for every dimension, or one per dimension.)doc")
      .def(py::init(&make_cartesian), py::arg("comm"), py::arg("extents"),
           py::arg("periodic") = false, py::arg("grid") = py::none())
      .def_property_readonly(
          "grid", [](const py_cartesian& d) { return py::tuple(py::cast(d.ops->grid())); },
          "Ranks along each dimension.")
      .def(
          "coords",
          [](const py_cartesian& d, int r) { return py::tuple(py::cast(d.ops->coords(r))); },
          py::arg("rank"), "Grid coordinates of a rank.")
      .def(
          "rank_of",
          [](const py_cartesian& d, const std::vector<int>& c) { return d.ops->rank_of(c); },
          py::arg("coords"), "The rank at grid coordinates.")
      .def_property_readonly(
          "local_box", [](const py_cartesian& d) { return d.ops->local_boxes().front(); },
          "This rank's block (global indices).")
      .def("make_field", make_field_of<py_cartesian>(&first_array), py::arg("stencil") = py::none(),
           py::arg("dtype") = "float64", py::arg("components") = 1, py::kw_only(),
           py::arg("pad") = py::none(), py::arg("device") = false,
           py::arg("centering") = py::none(), py::arg("order") = "C",
           py::arg("component_layout") = "interleaved", py::arg("name") = py::none(),
           py::arg("shared_points") = py::none(), make_field_doc)
      .def("__repr__", [](const py_cartesian& d) {
        return detail::format("<halox.Cartesian {} grid {} on rank {} of {}>",
                              detail::join(d.ops->global_extents(), "x"),
                              detail::join(d.ops->grid(), "x"), d.ops->comm().rank(),
                              d.ops->comm().size());
      });
}

void bind_box_list(py::module_& m) {
  py::class_<py_box_list, py_domain>(m, "BoxList", R"doc(
A global box tiled by the boxes given, any number per rank (including none): ``boxes`` is a
list of ``(lo, hi, owner)`` or ``(Box, owner)``. Every rank passes the same list; it must tile
the global box exactly. A rank's blocks are its boxes in list order; its fields are lists of
arrays, one per block. Collective.)doc")
      .def(py::init(&make_box_list), py::arg("comm"), py::arg("extents"), py::arg("periodic"),
           py::arg("boxes"))
      .def("make_field", make_field_of<py_box_list>(&all_blocks), py::arg("stencil") = py::none(),
           py::arg("dtype") = "float64", py::arg("components") = 1, py::kw_only(),
           py::arg("pad") = py::none(), py::arg("device") = false,
           py::arg("centering") = py::none(), py::arg("order") = "C",
           py::arg("component_layout") = "interleaved", py::arg("name") = py::none(),
           py::arg("shared_points") = py::none(),
           "As Cartesian.make_field, but a FieldBlocks: a sequence of arrays, one per owned box, "
           "in local_boxes order.")
      .def("__repr__", [](const py_box_list& d) {
        return detail::format("<halox.BoxList {} with {} box(es) on rank {} of {}>",
                              detail::join(d.ops->global_extents(), "x"),
                              d.ops->local_boxes().size(), d.ops->comm().rank(),
                              d.ops->comm().size());
      });
}

}  // namespace

void bind_domains(py::module_& m) {
  bind_domain_base(m);
  bind_cartesian(m);
  bind_box_list(m);
}

}  // namespace halox::python
