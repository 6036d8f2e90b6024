// Exchange and Handle for Python, options from keyword arguments, streams (see exchange.hpp).
#include "exchange.hpp"

#include <pybind11/stl.h>

#include <chrono>
#include <string_view>

#include "boundary_rules.hpp"
#include "device.hpp"

namespace halox::python {

namespace {

/// A non-negative integer option.
index non_negative(py::handle v, const std::string& key, int rank) {
  const auto x = v.cast<index>();
  if (x < 0) fail_on(rank, "exchange option {}={} must not be negative", key, x);
  return x;
}

std::optional<std::vector<int>> rank_list(py::handle v) {
  if (v.is_none()) return std::nullopt;
  return v.cast<std::vector<int>>();
}

staging staging_from(py::handle v, int rank) {
  const auto s = v.cast<std::string>();
  if (s == "auto" || s == "automatic") return staging::automatic;
  if (s == "gpu_aware") return staging::gpu_aware;
  if (s == "host_staged") return staging::host_staged;
  if (s == "peer_ipc") return staging::peer_ipc;
  if (s == "nccl") return staging::nccl;
  fail_on(rank, "device_staging='{}' is not one of auto, gpu_aware, host_staged, peer_ipc, nccl",
          s);
}

/// The in-flight part of a split-phase exchange; keeps its Exchange alive.
struct py_handle {
  py::object owner;
  py_exchange* ex = nullptr;
  std::optional<exchange_handle> h;

  void wait() {
    if (ex->closed()) return;  // closing completed it
    py::gil_scoped_release unlocked;
    h->wait();
  }
  bool test() {
    if (ex->closed()) return true;
    return h->test();
  }
};

using clock_type = std::chrono::steady_clock;

}  // namespace

exchange_options options_from(const py::dict& kwargs, int rank) {
  exchange_options o;
  for (const auto& [k, v] : kwargs) {
    const auto key = k.cast<std::string>();
    if (key == "device_staging")
      o.device_staging = staging_from(v, rank);
    else if (key == "host_shared_memory")
      o.host_shared_memory = v.cast<bool>();
    else if (key == "shm_into_fields")
      o.shm_into_fields = v.cast<bool>();
    else if (key == "shm_cross_memory")
      o.shm_cross_memory = v.cast<bool>();
    else if (key == "shm_direct_min_bytes")
      o.shm_direct_min_bytes = std::size_t(non_negative(v, key, rank));
    else if (key == "node_size")
      o.node_size = int(non_negative(v, key, rank));
    else if (key == "ipc_device_signals")
      o.ipc_device_signals = v.cast<bool>();
    else if (key == "ipc_into_fields")
      o.ipc_into_fields = v.cast<bool>();
    else if (key == "ipc_inline_max_bytes")
      o.ipc_inline_max_bytes = std::size_t(non_negative(v, key, rank));
    else if (key == "host_staging_copies")
      o.host_staging_copies = v.cast<bool>();
    else if (key == "staging_chunk_bytes")
      o.staging_chunk_bytes = std::size_t(non_negative(v, key, rank));
    else if (key == "peer_ipc_ranks")
      o.peer_ipc_ranks = rank_list(v);
    else if (key == "peer_shm_ranks")
      o.peer_shm_ranks = rank_list(v);
    else if (key == "require_capturable")
      o.require_capturable = v.cast<bool>();
    else if (key == "nccl_register")
      o.nccl_register = v.cast<bool>();
    else if (key == "wait_timeout")
      o.wait_timeout = v.cast<double>();
    else if (key == "label")
      o.label = v.cast<std::string>();
    else if (key == "nvtx")
      o.nvtx = v.cast<bool>();
    else
      fail_on(
          rank,
          "unknown exchange option '{}' (known: device_staging, host_shared_memory, "
          "shm_into_fields, shm_direct_min_bytes, shm_cross_memory, node_size, ipc_device_signals, "
          "ipc_into_fields, ipc_inline_max_bytes, host_staging_copies, staging_chunk_bytes, "
          "peer_ipc_ranks, "
          "peer_shm_ranks, require_capturable, nccl_register, wait_timeout, label, nvtx)",
          key);
  }
  return o;
}

reduction reduction_from(py::handle op, int rank) {
  if (py::isinstance<reduction>(op)) return op.cast<reduction>();
  const auto s = py::str(op).cast<std::string>();
  for (auto r : {reduction::replace, reduction::sum, reduction::min, reduction::max})
    if (s == to_string(r)) return r;
  fail_on(rank, "reduction '{}' is not one of sum, min, max, replace", s);
}

side side_from(py::handle s) {
  if (PyLong_Check(s.ptr())) {
    const int v = s.cast<int>();
    if (v == 0 || v == 1) return v == 0 ? side::low : side::high;
  } else if (py::isinstance<py::str>(s)) {
    const auto v = s.cast<std::string>();
    if (v == "low" || v == "high") return v == "low" ? side::low : side::high;
  }
  throw error(
      detail::format("a face's side is 'low' or 'high', not {}", py::repr(s).cast<std::string>()));
}

stream_t stream_from(py::handle s) {
  PyObject* p = s.ptr();
  if (p == Py_None) return nullptr;
  auto handle = [](py::handle h) -> stream_t {
    if (h.is_none()) return nullptr;  // Numba's default stream: a c_void_p of None
    void* v = PyLong_AsVoidPtr(h.ptr());
    if (v == nullptr && PyErr_Occurred()) throw py::error_already_set();
    return reinterpret_cast<stream_t>(v);
  };
  if (PyLong_Check(p)) return handle(s);
  // The CUDA stream protocol: __cuda_stream__() gives (version, handle).
  if (py::hasattr(s, "__cuda_stream__")) {
    py::object v = s.attr("__cuda_stream__");
    if (PyCallable_Check(v.ptr())) v = v();
    return handle(py::reinterpret_borrow<py::tuple>(v)[1]);
  }
  if (py::hasattr(s, "ptr")) return handle(s.attr("ptr"));                  // CuPy
  if (py::hasattr(s, "cuda_stream")) return handle(s.attr("cuda_stream"));  // PyTorch
  if (py::hasattr(s, "handle")) {                                           // Numba
    py::object h = s.attr("handle");
    return handle(py::hasattr(h, "value") ? py::object(h.attr("value")) : h);
  }
  throw py::type_error(
      "halox: a stream is None (the legacy default stream), an integer handle, or an object "
      "with __cuda_stream__, .ptr (CuPy), .cuda_stream (PyTorch) or .handle (Numba); got " +
      py::repr(s).cast<std::string>());
}

py_exchange::py_exchange(halo_exchange ex, py::tuple arrays, py::list keep, int rank,
                         std::string kind)
    : arrays_(std::move(arrays)),
      keep_(std::move(keep)),
      ex_(std::move(ex)),
      rank_(rank),
      kind_(std::move(kind)) {}

halo_exchange& py_exchange::get() {
  if (!ex_)
    throw error(detail::format("rank {}: this exchange object is closed; build a new one", rank_));
  return *ex_;
}

void py_exchange::exchange() {
  auto& e = get();
  py::gil_scoped_release unlocked;
  e.exchange();
}

void py_exchange::schedule_exchange(py::handle stream) {
  auto& e = get();
  const stream_t s = stream_from(stream);
  py::gil_scoped_release unlocked;
  e.schedule_exchange(s);
}

void py_exchange::schedule_wait(py::handle stream) {
  auto& e = get();
  const stream_t s = stream_from(stream);
  py::gil_scoped_release unlocked;
  e.schedule_wait(s);
}

bool py_exchange::in_flight() const {
  return ex_ && ex_->in_flight();
}

std::string py_exchange::describe() const {
  if (!ex_) return detail::format("rank {}: closed exchange", rank_);
  return ex_->describe();
}

py::dict py_exchange::stats() const {
  if (!ex_) fail_on(rank_, "stats() of a closed exchange");
  const exchange_stats s = ex_->stats();
  auto phase = [](const phase_times& p) {
    py::dict d;
    d["count"] = p.count, d["mean"] = p.mean, d["p50"] = p.p50, d["p99"] = p.p99, d["max"] = p.max;
    return d;
  };
  py::list routes;
  for (const auto& t : s.routes) {
    py::dict r;
    r["route"] = t.route, r["sends"] = t.sends, r["receives"] = t.receives;
    r["bytes_sent"] = t.bytes_sent, r["bytes_received"] = t.bytes_received;
    routes.append(r);
  }
  py::dict d;
  d["label"] = s.label, d["rank"] = s.rank, d["exchanges"] = s.exchanges;
  d["setup"] = phase(s.setup), d["start"] = phase(s.start), d["wait"] = phase(s.wait);
  d["gpu"] = phase(s.gpu), d["waits_already_complete"] = s.waits_already_complete;
  d["routes"] = routes;
  return d;
}

void py_exchange::close() {
  if (!ex_) return;
  // Completes an exchange in flight (without boundary rules) and frees halox's resources;
  // the GIL is released in case that waits for peers. The boundary callbacks' Python objects
  // take the GIL themselves when released.
  std::optional<halo_exchange> last = std::move(ex_);
  ex_.reset();
  py::gil_scoped_release unlocked;
  last.reset();
}

py::object make_py_exchange(halo_exchange ex, py::tuple arrays, py::list keep, int rank,
                            std::string kind) {
  return py::cast(
      py_exchange(std::move(ex), std::move(arrays), std::move(keep), rank, std::move(kind)));
}

namespace {

/// Exchange.start: the Handle keeps the exchange object alive.
py_handle start_exchange(py::object self) {
  auto& x = self.cast<py_exchange&>();
  auto& e = x.get();
  py_handle h{self, &x, std::nullopt};
  {
    py::gil_scoped_release unlocked;
    h.h.emplace(e.start());
  }
  return h;
}

/// Reduction, the split-phase Handle and the BoundaryFace a boundary callback receives.
void bind_exchange_parts(py::module_& m) {
  py::enum_<reduction>(m, "Reduction",
                       "How a reverse exchange combines a halo value into its owner.")
      .value("replace", reduction::replace)
      .value("sum", reduction::sum)
      .value("min", reduction::min)
      .value("max", reduction::max);

  py::class_<py_handle>(m, "Handle",
                        "The in-flight part of a split-phase exchange (Exchange.start()).")
      .def("wait", &py_handle::wait, R"doc(
Waits for every message and unpacks each as it arrives (the GIL released), then runs the
boundary rules. Idempotent; a no-op once this exchange has completed.)doc")
      .def("test", &py_handle::test,
           "Unpacks what has arrived without blocking; True once the exchange is complete.");

  py::class_<py_face>(m, "BoundaryFace", R"doc(
What a boundary callback receives: ``array`` (the block's array), ``index`` (a tuple of slices:
the halo cells to fill, ``array[face.index] = ...``), ``cells`` (the same cells as a global
Box), ``dim`` and ``side`` ('low' or 'high') of the face, ``block``, and ``stream`` (None for host
fields; for device fields the CUDA stream to enqueue the work on, as an integer).)doc")
      .def_readonly("array", &py_face::array)
      .def_readonly("index", &py_face::index)
      .def_readonly("cells", &py_face::cells)
      .def_readonly("dim", &py_face::dim)
      .def_readonly("side", &py_face::side)
      .def_readonly("block", &py_face::block)
      .def_readonly("stream", &py_face::stream)
      .def("__repr__", [](const py_face& f) {
        return detail::format("halox.BoundaryFace(dim={}, side='{}', block={}, cells={})", f.dim,
                              f.side, f.block, f.cells.text());
      });
}

/// Exchange: the calls that move halos, then its state and Python protocol.
void bind_exchange_class(py::module_& m) {
  py::class_<py_exchange> c(m, "Exchange", R"doc(
Exchanges the halos of a fixed set of fields (made by make_exchange or make_reverse_exchange;
every rank makes it, with the same stencils and field types in the same order). Holds the
fields' arrays while it lives; ``close()`` (or leaving a ``with`` block) frees its MPI and GPU
resources at once.)doc");
  c.def("exchange", &py_exchange::exchange, R"doc(
Blocking exchange: returns when every halo cell of every field is up to date (the GIL released
while it waits). Device fields: packing sees the work on the legacy default stream; use
schedule_exchange for other streams.)doc")
      .def("start", &start_exchange, R"doc(
Starts an exchange and returns its Handle: halo cells are valid after ``handle.wait()`` (or a
``test()`` that returned True); owned cells must not change until then. Raises halox.Error
while this object's previous exchange is still in flight.)doc")
      .def("schedule_exchange", &py_exchange::schedule_exchange, py::arg("stream") = py::none(),
           R"doc(
Stream-ordered exchange, step one: packing waits for the work already on ``stream`` (an
event, no host wait on it), then the messages are posted. ``stream``: an integer handle or an
object with ``__cuda_stream__``, ``.ptr`` (CuPy), ``.cuda_stream`` (PyTorch) or ``.handle``
(Numba); None is the legacy default stream.)doc")
      .def("schedule_wait", &py_exchange::schedule_wait, py::arg("stream") = py::none(), R"doc(
Stream-ordered exchange, step two: waits for the messages (the GIL released), enqueues the
unpack and makes ``stream`` wait for it. Work enqueued on ``stream`` afterwards sees the halos.)doc");
  c.def_property_readonly("in_flight", &py_exchange::in_flight,
                          "Whether an exchange started with start() has not completed.")
      .def("describe", &py_exchange::describe,
           "Peers, message sizes, copy counts and the path each message takes, on this rank.")
      .def("stats", &py_exchange::stats, R"doc(
What this object has done on this rank, as a dict: label, rank, exchanges, host times of
setup/start/wait and sampled GPU time (each a dict of count, mean, p50, p99, max in seconds),
waits_already_complete, and routes (bytes and messages per route). See docs/observing.md.)doc")
      .def("close", &py_exchange::close, R"doc(
Completes an exchange still in flight (without its boundary rules) and frees the object's
communicator, buffers and shared memory. Later calls raise halox.Error. Idempotent.)doc")
      .def_property_readonly("closed", &py_exchange::closed)
      .def_property_readonly(
          "fields", &py_exchange::fields,
          "The fields' arrays, in the order given (a tuple per field of a BoxList).")
      .def_property_readonly("direction", &py_exchange::kind, "'forward' or 'reverse'.")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](py_exchange& x, py::args) { x.close(); })
      .def("__repr__", [](const py_exchange& x) {
        return detail::format("<halox.Exchange {} of {} field(s) on rank {}{}>", x.kind(),
                              x.fields().size(), x.rank(), x.closed() ? ", closed" : "");
      });
}

/// The benchmark's and tests' helpers.
void bind_exchange_timers(py::module_& m) {
  // The benchmark's reference: the same exchange object driven by a C++ loop (no Python in
  // between), for examples/python/bench_overhead.py.
  m.def(
      "_time_exchange",
      [](py_exchange& x, int n) {
        auto& e = x.get();
        py::gil_scoped_release unlocked;
        const auto t0 = clock_type::now();
        for (int i = 0; i < n; ++i) e.exchange();
        return std::chrono::duration<double>(clock_type::now() - t0).count();
      },
      py::arg("exchange"), py::arg("iterations"));
  m.def(
      "_time_scheduled",
      [](py_exchange& x, py::handle stream, int n) {
        auto& e = x.get();
        const stream_t s = stream_from(stream);
        py::gil_scoped_release unlocked;
        const auto t0 = clock_type::now();
        for (int i = 0; i < n; ++i) {
          e.schedule_exchange(s);
          e.schedule_wait(s);
        }
        gpu::synchronize(s);
        return std::chrono::duration<double>(clock_type::now() - t0).count();
      },
      py::arg("exchange"), py::arg("stream"), py::arg("iterations"));
  m.def(
      "_stream_handle",
      [](py::handle s) { return reinterpret_cast<std::uintptr_t>(stream_from(s)); },
      "The integer handle halox reads from a stream object (for tests).");
}

}  // namespace

void bind_exchange(py::module_& m) {
  bind_exchange_parts(m);
  bind_exchange_class(m);
  bind_exchange_timers(m);
}

}  // namespace halox::python
