#pragma once
// What every part of the Python bindings shares: the element types a Python field may have,
// dispatch from a run-time type code to the C++ type, MPI communicators from mpi4py, and
// collective checks that raise halox.Error on every rank.

#include <pybind11/pybind11.h>

#include <complex>
#include <cstdint>
#include <string>
#include <utility>

#include <mpi.h>

#include <boost/mpi/communicator.hpp>

#include <halox/comm/agree.hpp>
#include <halox/core/error.hpp>

namespace halox::python {

namespace py = pybind11;

/// The element types a field, a chain payload or a boundary value may have: NumPy's numeric
/// dtypes, by the names NumPy gives them.
enum class dtype {
  bool_,
  int8,
  int16,
  int32,
  int64,
  uint8,
  uint16,
  uint32,
  uint64,
  float32,
  float64,
  complex64,
  complex128
};
inline constexpr int dtype_count = 13;

/// NumPy's name of `t` ("float64").
const char* dtype_name(dtype t);
/// Bytes per element.
int dtype_size(dtype t);
/// The array interface's kind letter: 'b', 'i', 'u', 'f' or 'c'.
char dtype_kind(dtype t);
/// The type of kind `kind` ('b', 'i', 'u', 'f', 'c') and `size` bytes; false where there is none.
bool dtype_of(char kind, int size, dtype& out);
/// A dtype given as NumPy's name, a NumPy dtype or type (anything with `.name`, or whose
/// `numpy.dtype(x).name` is one), or a Python type (bool, int, float, complex). Throws
/// halox::error naming the value where it is none of the supported types.
dtype dtype_from(py::handle obj);

/// Calls `f.template operator()<T>()` with the C++ type of `t`.
template <class F>
decltype(auto) with_dtype(dtype t, F&& f) {
  switch (t) {
    case dtype::bool_:
      return f.template operator()<bool>();
    case dtype::int8:
      return f.template operator()<std::int8_t>();
    case dtype::int16:
      return f.template operator()<std::int16_t>();
    case dtype::int32:
      return f.template operator()<std::int32_t>();
    case dtype::int64:
      return f.template operator()<std::int64_t>();
    case dtype::uint8:
      return f.template operator()<std::uint8_t>();
    case dtype::uint16:
      return f.template operator()<std::uint16_t>();
    case dtype::uint32:
      return f.template operator()<std::uint32_t>();
    case dtype::uint64:
      return f.template operator()<std::uint64_t>();
    case dtype::float32:
      return f.template operator()<float>();
    case dtype::float64:
      return f.template operator()<double>();
    case dtype::complex64:
      return f.template operator()<std::complex<float>>();
    case dtype::complex128:
      return f.template operator()<std::complex<double>>();
  }
  throw error("unknown element type code");
}

/// Calls `f.template operator()<D>()` for D = `dim` (1 to 4).
template <class F>
decltype(auto) with_dim(int dim, F&& f) {
  switch (dim) {
    case 1:
      return f.template operator()<1>();
    case 2:
      return f.template operator()<2>();
    case 3:
      return f.template operator()<3>();
    case 4:
      return f.template operator()<4>();
  }
  throw error(detail::format("halox supports 1 to 4 dimensions, not {}", dim));
}

/// The MPI communicator of `comm`: an mpi4py communicator (through its Fortran handle, so no
/// mpi4py header is needed), or None for MPI_COMM_WORLD. Initialises MPI where nothing has
/// (no mpi4py imported); halox then finalises it at exit.
MPI_Comm communicator_of(py::handle comm);
/// `communicator_of` as the Boost.MPI communicator halox takes (attached, not owned).
boost::mpi::communicator boost_comm(py::handle comm);

/// Runs `check` on every rank of `comm`; if it throws on any rank (a halox::error, a Python
/// exception, a conversion error), every rank raises halox.Error (detail::agree).
template <class F>
void collective(const boost::mpi::communicator& comm, F&& check) {
  detail::agree(comm, std::forward<F>(check));
}

/// halox::error with "rank r: " in front of the formatted message.
template <class... Args>
[[noreturn]] void fail_on(int rank, std::string_view f, const Args&... args) {
  throw error(detail::format("rank {}: ", rank) + detail::format(f, args...));
}

}  // namespace halox::python
