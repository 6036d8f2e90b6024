// The C interface's per-thread message, its element types and its communicators.

#include <string>

#include "capi/handles.hpp"

namespace halox::capi {

std::string& last_error() {
  thread_local std::string message;
  return message;
}

std::size_t type_size(halox_type t) {
  std::size_t n = 0;
  try {
    with_type(t, [&]<class T>() { n = sizeof(T); });
  } catch (const error&) {
    return 0;
  }
  return n;
}

boost::mpi::communicator attach(MPI_Comm comm, const char* call) {
  if (comm == MPI_COMM_NULL) throw null_argument(detail::format("{}: comm is MPI_COMM_NULL", call));
  return boost::mpi::communicator(comm, boost::mpi::comm_attach);
}

const char* type_name(halox_type t) {
  static const char* const names[] = {"HALOX_INT8",    "HALOX_UINT8",     "HALOX_INT16",
                                      "HALOX_UINT16",  "HALOX_INT32",     "HALOX_UINT32",
                                      "HALOX_INT64",   "HALOX_UINT64",    "HALOX_FLOAT32",
                                      "HALOX_FLOAT64", "HALOX_COMPLEX64", "HALOX_COMPLEX128"};
  const int k = int(t) - 1;
  return k >= 0 && k < 12 ? names[k] : "(not a halox_type)";
}

}  // namespace halox::capi

extern "C" const char* halox_last_error(void) {
  return halox::capi::last_error().c_str();
}
