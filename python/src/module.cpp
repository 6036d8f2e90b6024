// The extension module halox._halox; the package halox (python/halox/__init__.py) re-exports
// it with the Python-side helpers.
#include <pybind11/pybind11.h>

#include "arrays.hpp"
#include "common.hpp"
#include "device.hpp"
#include "domains.hpp"
#include "exchange.hpp"
#include "shapes.hpp"

namespace halox::python {
void bind_chain(py::module_& m);
}

PYBIND11_MODULE(_halox, m) {
  namespace hp = halox::python;
  namespace py = pybind11;
  m.doc() = "halox: declarative halo exchange (the compiled core of the halox package)";

  // Every error halox detects, with the C++ message ("halox: rank 0: ...").
  py::register_exception<halox::error>(m, "Error", PyExc_RuntimeError);

  hp::bind_shapes(m);
  hp::bind_arrays(m);
  hp::bind_exchange(m);
  hp::bind_domains(m);
  hp::bind_unstructured(m);
  hp::bind_chain(m);

  m.def("cuda_enabled", &hp::gpu::enabled, "Whether this build of halox has CUDA (device fields).");
  m.def("device_count", &hp::gpu::device_count,
        "GPUs this process can use (0 without CUDA or GPU).");
  m.def("current_device", &hp::gpu::current_device, "The calling thread's current CUDA device.");
  m.def("set_device", &hp::gpu::set_device, py::arg("device"), R"doc(
Makes ``device`` the calling thread's current CUDA device (cudaSetDevice): halox allocates
device fields there and runs its kernels there. With one GPU per rank:
``halox.set_device(rank % halox.device_count())`` before making fields.)doc");
  m.def(
      "synchronize",
      [](py::handle stream) {
        const auto s = hp::stream_from(stream);
        py::gil_scoped_release unlocked;
        hp::gpu::synchronize(s);
      },
      py::arg("stream") = py::none(),
      "Waits for the work on a CUDA stream (any stream object halox takes).");
  m.def(
      "_agree",
      [](py::handle comm, py::handle message) {
        hp::collective(hp::boost_comm(comm), [&] {
          if (!message.is_none()) throw halox::error(message.cast<std::string>());
        });
      },
      py::arg("comm"), py::arg("message"),
      "Raises halox.Error on every rank of comm if any rank passes a message (not None).");
}
