#pragma once
// Python's Exchange: a halo_exchange, the Python objects whose memory it reads and writes, and
// the calls that run it (GIL released while it waits). And what every builder of one shares:
// exchange options from keyword arguments, reductions, boundary rules as halox's.

#include <pybind11/pybind11.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <halox/core/options.hpp>
#include <halox/core/reduction.hpp>
#include <halox/exchange/halo_exchange.hpp>

#include "common.hpp"
#include "shapes.hpp"

namespace halox::python {

/// `exchange_options` from Python keyword arguments (names as the struct's members; staging
/// policies as strings). Throws halox::error naming `rank` on an unknown name or a bad value.
exchange_options options_from(const py::dict& kwargs, int rank);
/// A reduction from a halox.Reduction or its name ("sum", "min", "max", "replace").
reduction reduction_from(py::handle op, int rank);

/// A stream given as in Python: None (the legacy default stream), an integer handle, or an
/// object with `__cuda_stream__` (the CUDA stream protocol), `.ptr` (CuPy), `.cuda_stream`
/// (PyTorch) or `.handle` (Numba).
stream_t stream_from(py::handle s);

/// A Python object released with the GIL held, wherever the last owner lets go (boundary
/// callbacks live in std::functions halox runs and destroys without knowing of Python).
class held_object {
 public:
  explicit held_object(py::object o) : o_(std::move(o)) {}
  ~held_object() {
    py::gil_scoped_acquire gil;
    o_ = py::object();
  }
  held_object(const held_object&) = delete;
  held_object& operator=(const held_object&) = delete;
  const py::object& get() const { return o_; }

 private:
  py::object o_;
};

/// A built exchange, for Python.
class py_exchange {
 public:
  py_exchange(halo_exchange ex, py::tuple arrays, py::list keep, int rank, std::string kind);
  void exchange();
  void schedule_exchange(py::handle stream);
  void schedule_wait(py::handle stream);
  bool in_flight() const;
  std::string describe() const;
  py::dict stats() const;
  void close();
  bool closed() const { return !ex_.has_value(); }
  halo_exchange& get();
  const py::tuple& fields() const { return arrays_; }
  int rank() const { return rank_; }
  const std::string& kind() const { return kind_; }

 private:
  // Before ex_, so destroyed after it: an exchange completing on destruction still writes
  // into these arrays.
  py::tuple arrays_;
  py::list keep_;
  std::optional<halo_exchange> ex_;
  int rank_ = 0;
  std::string kind_;
};

/// The Python Exchange object for a built exchange. `arrays`: the field arrays (what
/// `Exchange.fields` returns); `keep`: what else must live as long (buffers, DLPack tensors).
py::object make_py_exchange(halo_exchange ex, py::tuple arrays, py::list keep, int rank,
                            std::string kind);

void bind_exchange(py::module_& m);

}  // namespace halox::python
