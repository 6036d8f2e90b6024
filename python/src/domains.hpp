#pragma once
// Domains for Python: one interface over cartesian<D> and box_list<D> for every D (the typed
// work lives in structured.hpp, one translation unit per dimension), and the unstructured
// pattern.

#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

#include <boost/mpi/communicator.hpp>

#include "arrays.hpp"
#include "common.hpp"
#include "shapes.hpp"

namespace halox::python {

/// What `make_field` was asked for (Python arguments, parsed by the typed code).
struct field_args {
  py::object stencil, dtype, pad, centering, shared_points;
  int components = 1;
  bool device = false;
  std::string order = "C", component_layout = "interleaved", name;
};

/// A structured domain of some dimension: Cartesian or BoxList.
class domain_ops {
 public:
  virtual ~domain_ops() = default;
  virtual int dim() const = 0;
  virtual const boost::mpi::communicator& comm() const = 0;
  virtual std::vector<index> global_extents() const = 0;
  virtual std::vector<bool> periodic() const = 0;
  virtual std::vector<py_box> local_boxes() const = 0;
  virtual std::vector<py_box> boxes_of(int rank) const = 0;
  /// The field's arrays, one per owned box. Collective.
  virtual py_blocks make_field(const field_args& a) const = 0;
  /// An Exchange over `fields` (normalised field tuples, see halox/__init__.py), field k with
  /// stencil `stencils[k]`; reverse with `reverse_op` where it is not None. Collective.
  /// `error` (not None): what the Python layer could not read in the arguments, raised on
  /// every rank.
  virtual py::object build(const py::list& stencils, const py::list& fields, py::handle reverse_op,
                           const py::dict& options, py::handle error) const = 0;
  // Cartesian only.
  virtual std::vector<int> grid() const = 0;
  virtual std::vector<int> coords(int rank) const = 0;
  virtual int rank_of(const std::vector<int>& coords) const = 0;
};

/// Python's Domain: a handle to a domain of any dimension.
struct py_domain {
  std::shared_ptr<const domain_ops> ops;
};
struct py_cartesian : py_domain {};
struct py_box_list : py_domain {};

template <int D>
std::shared_ptr<const domain_ops> cartesian_ops(const boost::mpi::communicator& comm,
                                                const std::vector<index>& extents,
                                                const std::vector<bool>& periodic,
                                                const std::vector<int>& grid);
template <int D>
std::shared_ptr<const domain_ops> box_list_ops(const boost::mpi::communicator& comm,
                                               const std::vector<index>& extents,
                                               const std::vector<bool>& periodic,
                                               const std::vector<py_box>& boxes,
                                               const std::vector<int>& owners);

void bind_domains(py::module_& m);
void bind_unstructured(py::module_& m);

}  // namespace halox::python
