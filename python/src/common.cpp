// Element types by name, and communicators from mpi4py (see common.hpp).
#include "common.hpp"

#include <array>
#include <cstring>
#include <string_view>

namespace halox::python {

namespace {

struct dtype_row {
  dtype type;
  const char* name;
  char kind;
  int size;
};
constexpr std::array<dtype_row, dtype_count> dtypes{{
    {dtype::bool_, "bool", 'b', 1},
    {dtype::int8, "int8", 'i', 1},
    {dtype::int16, "int16", 'i', 2},
    {dtype::int32, "int32", 'i', 4},
    {dtype::int64, "int64", 'i', 8},
    {dtype::uint8, "uint8", 'u', 1},
    {dtype::uint16, "uint16", 'u', 2},
    {dtype::uint32, "uint32", 'u', 4},
    {dtype::uint64, "uint64", 'u', 8},
    {dtype::float32, "float32", 'f', 4},
    {dtype::float64, "float64", 'f', 8},
    {dtype::complex64, "complex64", 'c', 8},
    {dtype::complex128, "complex128", 'c', 16},
}};

const dtype_row& row(dtype t) {
  return dtypes[std::size_t(t)];
}

bool dtype_named(std::string_view name, dtype& out) {
  if (name == "bool_") name = "bool";
  for (const auto& r : dtypes)
    if (name == r.name) return out = r.type, true;
  return false;
}

// MPI initialised by halox (no mpi4py): finalised when the interpreter exits, after every
// Python object is gone (Py_AtExit runs last).
void finalize_mpi() {
  int done = 0;
  MPI_Finalized(&done);
  if (!done) MPI_Finalize();
}

void ensure_mpi() {
  int up = 0;
  MPI_Initialized(&up);
  if (up) return;
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
    throw error("MPI_Init_thread failed");
  Py_AtExit(&finalize_mpi);
}

}  // namespace

const char* dtype_name(dtype t) {
  return row(t).name;
}
int dtype_size(dtype t) {
  return row(t).size;
}
char dtype_kind(dtype t) {
  return row(t).kind;
}

bool dtype_of(char kind, int size, dtype& out) {
  for (const auto& r : dtypes)
    if (r.kind == kind && r.size == size) return out = r.type, true;
  return false;
}

dtype dtype_from(py::handle obj) {
  dtype t{};
  if (py::isinstance<py::str>(obj)) {
    const auto s = obj.cast<std::string>();
    if (dtype_named(s, t)) return t;
    throw error(
        detail::format("element type '{}' is not one halox binds (bool, int8-64, "
                       "uint8-64, float32, float64, complex64, complex128)",
                       s));
  }
  const PyObject* p = obj.ptr();
  if (p == reinterpret_cast<PyObject*>(&PyBool_Type)) return dtype::bool_;
  if (p == reinterpret_cast<PyObject*>(&PyLong_Type)) return dtype::int64;
  if (p == reinterpret_cast<PyObject*>(&PyFloat_Type)) return dtype::float64;
  if (p == reinterpret_cast<PyObject*>(&PyComplex_Type)) return dtype::complex128;
  // A NumPy dtype (its .name) or scalar type (numpy.dtype(x).name), without importing NumPy
  // for anything else.
  if (py::hasattr(obj, "name") && py::isinstance<py::str>(obj.attr("name")))
    return dtype_from(obj.attr("name"));
  if (py::hasattr(obj, "__module__") &&
      py::str(obj.attr("__module__")).cast<std::string>() == "numpy")
    return dtype_from(py::module_::import("numpy").attr("dtype")(obj).attr("name"));
  throw error(
      detail::format("element type {} is not one halox binds (bool, int8-64, uint8-64, "
                     "float32, float64, complex64, complex128)",
                     py::repr(obj).cast<std::string>()));
}

MPI_Comm communicator_of(py::handle comm) {
  if (comm.is_none()) {
    ensure_mpi();
    return MPI_COMM_WORLD;
  }
  if (!py::hasattr(comm, "py2f"))
    throw py::type_error(
        "halox: expected an mpi4py communicator (or None for MPI_COMM_WORLD), got " +
        py::repr(comm).cast<std::string>());
  ensure_mpi();
  const auto f = comm.attr("py2f")().cast<MPI_Fint>();
  const MPI_Comm c = MPI_Comm_f2c(f);
  if (c == MPI_COMM_NULL) throw error("the communicator is MPI_COMM_NULL");
  return c;
}

boost::mpi::communicator boost_comm(py::handle comm) {
  return boost::mpi::communicator(communicator_of(comm), boost::mpi::comm_attach);
}

}  // namespace halox::python
