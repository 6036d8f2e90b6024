// Arrays in and out of halox without copies (see arrays.hpp).
#include "arrays.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>
#include <string_view>

#include "device.hpp"
#include "dlpack.hpp"

namespace halox::python {

namespace {

/// What a NumPy array over owned memory has as its base: the owner, kept alive by the array.
struct memory_owner {
  std::shared_ptr<owned_field> field;
};

[[noreturn]] void bad(int rank, const std::string& what, const std::string& why) {
  fail_on(rank, "{}: {}", what, why);
}

// ---- the buffer protocol (host arrays) --------------------------------------------------

/// The element type of a buffer's struct-module format ("d", "<i8", "Zf", ...).
bool dtype_of_format(std::string_view f, int itemsize, dtype& out) {
  if (!f.empty() && (f[0] == '@' || f[0] == '=' || f[0] == '<')) f.remove_prefix(1);
  if (f.size() == 2 && f[0] == 'Z' && (f[1] == 'f' || f[1] == 'd'))
    return dtype_of('c', itemsize, out);
  if (f.size() != 1) return false;
  switch (f[0]) {
    case '?':
      return dtype_of('b', itemsize, out);
    case 'b':
    case 'h':
    case 'i':
    case 'l':
    case 'q':
    case 'n':
      return dtype_of('i', itemsize, out);
    case 'B':
    case 'H':
    case 'I':
    case 'L':
    case 'Q':
    case 'N':
      return dtype_of('u', itemsize, out);
    case 'f':
    case 'd':
      return dtype_of('f', itemsize, out);
    default:
      return false;
  }
}

bool view_of_buffer(py::handle obj, const std::string& what, int rank, array_view& v) {
  if (!PyObject_CheckBuffer(obj.ptr())) return false;
  auto* buf = new Py_buffer{};
  if (PyObject_GetBuffer(obj.ptr(), buf, PyBUF_RECORDS) != 0) {
    delete buf;
    PyErr_Clear();
    Py_buffer probe{};
    if (PyObject_GetBuffer(obj.ptr(), &probe, PyBUF_RECORDS_RO) == 0) {
      PyBuffer_Release(&probe);
      bad(rank, what, "the array is read-only; halox writes its halo cells");
    }
    PyErr_Clear();
    bad(rank, what, "its buffer cannot be read with strides (PyBUF_RECORDS)");
  }
  // Owned from here: the capsule releases the buffer (which keeps a NumPy array from being
  // resized under halox) when the last holder lets go.
  v.keep = py::reinterpret_steal<py::object>(PyCapsule_New(buf, "halox.buffer", [](PyObject* c) {
    auto* b = static_cast<Py_buffer*>(PyCapsule_GetPointer(c, "halox.buffer"));
    PyBuffer_Release(b);
    delete b;
  }));
  const std::string format = buf->format ? buf->format : "B";
  if (!dtype_of_format(format, int(buf->itemsize), v.type))
    bad(rank, what,
        detail::format("its element format '{}' ({} bytes) is not one halox binds (bool, "
                       "int8-64, uint8-64, float32, float64, complex64, complex128; native "
                       "byte order)",
                       format, buf->itemsize));
  v.data = static_cast<std::byte*>(buf->buf);
  v.space = memory_space::host;
  for (int i = 0; i < buf->ndim; ++i) {
    v.shape.push_back(index(buf->shape[i]));
    v.strides.push_back(index(buf->strides[i]));
  }
  return true;
}

// ---- __cuda_array_interface__ (device arrays) ----------------------------------------------

bool dtype_of_typestr(std::string_view s, dtype& out) {
  if (s.size() < 3 || (s[0] != '<' && s[0] != '|' && s[0] != '=')) return false;
  int size = 0;
  for (char c : s.substr(2)) {
    if (c < '0' || c > '9') return false;
    size = size * 10 + (c - '0');
  }
  return dtype_of(s[1], size, out);
}

void check_device_memory(array_view& v, const std::string& what, int rank) {
  if (v.data == nullptr) return;
  bool on_device = false;
  v.device = gpu::pointer_device(v.data, on_device);
  if (!on_device)
    bad(rank, what, "its memory is not CUDA device memory (cudaPointerGetAttributes)");
}

bool view_of_cai(py::handle obj, const std::string& what, int rank, array_view& v) {
  if (!py::hasattr(obj, "__cuda_array_interface__")) return false;
  const py::dict cai = obj.attr("__cuda_array_interface__");
  const auto typestr = cai["typestr"].cast<std::string>();
  if (!dtype_of_typestr(typestr, v.type))
    bad(rank, what,
        detail::format("its __cuda_array_interface__ typestr '{}' is not one halox binds",
                       typestr));
  if (cai.contains("mask") && !cai["mask"].is_none())
    bad(rank, what, "masked arrays (__cuda_array_interface__ 'mask') are not supported");
  const py::tuple data = cai["data"];
  if (data[1].cast<bool>()) bad(rank, what, "the array is read-only; halox writes its halo cells");
  v.data = reinterpret_cast<std::byte*>(data[0].cast<std::uintptr_t>());
  v.shape = cai["shape"].cast<std::vector<index>>();
  const index item = dtype_size(v.type);
  if (cai.contains("strides") && !cai["strides"].is_none()) {
    v.strides = cai["strides"].cast<std::vector<index>>();
  } else {  // C-contiguous
    v.strides.assign(v.shape.size(), item);
    for (int i = int(v.shape.size()) - 2; i >= 0; --i)
      v.strides[std::size_t(i)] = v.strides[std::size_t(i) + 1] * v.shape[std::size_t(i) + 1];
  }
  v.space = memory_space::device;
  check_device_memory(v, what, rank);
  // Version 3: the producer's work on `stream` must be complete before the data is used.
  if (cai.contains("stream") && !cai["stream"].is_none())
    gpu::synchronize(reinterpret_cast<stream_t>(cai["stream"].cast<std::uintptr_t>()));
  v.keep = py::reinterpret_borrow<py::object>(obj);
  return true;
}

// ---- DLPack (either side) ---------------------------------------------------------------

bool view_of_dlpack(py::handle obj, const std::string& what, int rank, array_view& v) {
  if (!py::hasattr(obj, "__dlpack__")) return false;
  py::object cap = obj.attr("__dlpack__")();
  auto* m =
      static_cast<dlpack::managed_tensor*>(PyCapsule_GetPointer(cap.ptr(), dlpack::capsule_name));
  if (m == nullptr) {
    PyErr_Clear();
    bad(rank, what, "__dlpack__() did not return a 'dltensor' capsule");
  }
  // Consumed: the capsule is renamed and halox calls the deleter when it lets go.
  PyCapsule_SetName(cap.ptr(), dlpack::used_capsule_name);
  v.keep = py::reinterpret_steal<py::object>(PyCapsule_New(m, "halox.dlpack", [](PyObject* c) {
    auto* t = static_cast<dlpack::managed_tensor*>(PyCapsule_GetPointer(c, "halox.dlpack"));
    if (t && t->deleter) t->deleter(t);
  }));
  const auto& t = m->dl_tensor;
  const auto dev = t.dev.type;
  if (dev != dlpack::cpu && dev != dlpack::cuda && dev != dlpack::cuda_host &&
      dev != dlpack::cuda_managed)
    bad(rank, what, detail::format("its DLPack device type {} is neither CPU nor CUDA", dev));
  const auto& dt = t.dtype;
  const char kind = dt.code == dlpack::int_       ? 'i'
                    : dt.code == dlpack::uint_    ? 'u'
                    : dt.code == dlpack::float_   ? 'f'
                    : dt.code == dlpack::complex_ ? 'c'
                    : dt.code == dlpack::bool_    ? 'b'
                                                  : '?';
  if (dt.lanes != 1 || dt.bits % 8 != 0 || !dtype_of(kind, dt.bits / 8, v.type))
    bad(rank, what,
        detail::format("its DLPack type (code {}, {} bits, {} lanes) is not one halox binds",
                       int(dt.code), int(dt.bits), int(dt.lanes)));
  v.data = static_cast<std::byte*>(t.data) + t.byte_offset;
  const index item = dtype_size(v.type);
  for (int i = 0; i < t.ndim; ++i) v.shape.push_back(index(t.shape[i]));
  v.strides.assign(std::size_t(t.ndim), item);
  if (t.strides) {
    for (int i = 0; i < t.ndim; ++i) v.strides[std::size_t(i)] = index(t.strides[i]) * item;
  } else {
    for (int i = t.ndim - 2; i >= 0; --i)
      v.strides[std::size_t(i)] = v.strides[std::size_t(i) + 1] * v.shape[std::size_t(i) + 1];
  }
  const bool device = dev == dlpack::cuda || dev == dlpack::cuda_managed;
  v.space = device ? memory_space::device : memory_space::host;
  if (device) check_device_memory(v, what, rank);
  return true;
}

// ---- DeviceArray's DLPack export -----------------------------------------------------------

struct export_context {
  std::shared_ptr<void> owner;
  std::vector<std::int64_t> shape, strides;
};

void delete_export(dlpack::managed_tensor* t) {
  delete static_cast<export_context*>(t->manager_ctx);
  delete t;
}

/// A contiguous buffer (C or Fortran order) of any exporter, released on scope exit.
struct contiguous_buffer {
  Py_buffer view{};
  contiguous_buffer(py::handle obj, bool writable) {
    const int flags = PyBUF_ANY_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj.ptr(), &view, flags) != 0) throw py::error_already_set();
  }
  ~contiguous_buffer() { PyBuffer_Release(&view); }
  contiguous_buffer(const contiguous_buffer&) = delete;
  contiguous_buffer& operator=(const contiguous_buffer&) = delete;
};

std::string typestr(dtype t) {
  const int size = dtype_size(t);
  return detail::format("{}{}{}", size == 1 ? '|' : '<', dtype_kind(t), size);
}

}  // namespace

std::string array_view::shape_text() const {
  return detail::join(shape, "x");
}

array_view view_of(py::handle obj, const std::string& what, int rank) {
  array_view v;
  v.source = py::reinterpret_borrow<py::object>(obj);
  if (view_of_cai(obj, what, rank, v) || view_of_buffer(obj, what, rank, v) ||
      view_of_dlpack(obj, what, rank, v))
    return v;
  bad(rank, what,
      detail::format("{} is not an array: halox takes objects with the buffer protocol (NumPy), "
                     "__cuda_array_interface__ or __dlpack__",
                     py::str(py::type::of(obj).attr("__name__")).cast<std::string>()));
}

bool is_array_like(py::handle obj) {
  return PyObject_CheckBuffer(obj.ptr()) || py::hasattr(obj, "__cuda_array_interface__") ||
         py::hasattr(obj, "__dlpack__");
}

device_array::device_array(std::shared_ptr<void> keep, std::shared_ptr<owned_field> field,
                           std::byte* data, dtype type, std::vector<index> shape,
                           std::vector<index> strides, int device)
    : keep_(std::move(keep)),
      field_(std::move(field)),
      data_(data),
      type_(type),
      shape_(std::move(shape)),
      strides_(std::move(strides)),
      device_(device) {}

std::size_t device_array::span_bytes() const {
  index last = 0;
  for (std::size_t i = 0; i < shape_.size(); ++i) {
    if (shape_[i] == 0) return 0;
    last += (shape_[i] - 1) * strides_[i];
  }
  return std::size_t(last + dtype_size(type_));
}

py::dict device_array::cuda_array_interface() const {
  py::dict d;
  d["shape"] = py::tuple(py::cast(shape_));
  d["typestr"] = typestr(type_);
  d["data"] = py::make_tuple(reinterpret_cast<std::uintptr_t>(data_), false);
  d["version"] = 3;
  bool c_contiguous = true;
  index step = dtype_size(type_);
  for (int i = int(shape_.size()) - 1; i >= 0; --i) {
    if (shape_[std::size_t(i)] != 1 && strides_[std::size_t(i)] != step) c_contiguous = false;
    step *= shape_[std::size_t(i)];
  }
  d["strides"] = c_contiguous ? py::object(py::none()) : py::object(py::tuple(py::cast(strides_)));
  return d;
}

py::capsule device_array::dlpack(py::handle stream) const {
  // halox-owned memory has no work of halox's pending on it: exchanges that wrote it finished
  // (exchange(), wait()) or were ordered on the user's own stream (schedule_wait), which the
  // user orders with the consumer's. So any stream is accepted, and nothing is enqueued.
  if (!stream.is_none() && !PyLong_Check(stream.ptr()))
    throw py::type_error("__dlpack__: stream must be an integer or None");
  auto* ctx = new export_context{keep_, {}, {}};
  const index item = dtype_size(type_);
  for (std::size_t i = 0; i < shape_.size(); ++i) {
    ctx->shape.push_back(shape_[i]);
    ctx->strides.push_back(strides_[i] / item);
  }
  auto* t = new dlpack::managed_tensor{};
  t->dl_tensor.data = data_;
  t->dl_tensor.dev = {dlpack::cuda, device_};
  t->dl_tensor.ndim = std::int32_t(shape_.size());
  const char kind = dtype_kind(type_);
  t->dl_tensor.dtype = {kind == 'i'   ? dlpack::int_
                        : kind == 'u' ? dlpack::uint_
                        : kind == 'f' ? dlpack::float_
                        : kind == 'c' ? dlpack::complex_
                                      : dlpack::bool_,
                        std::uint8_t(8 * item), 1};
  t->dl_tensor.shape = ctx->shape.data();
  t->dl_tensor.strides = ctx->strides.data();
  t->dl_tensor.byte_offset = 0;
  t->manager_ctx = ctx;
  t->deleter = &delete_export;
  PyObject* cap = PyCapsule_New(t, dlpack::capsule_name, [](PyObject* c) {
    // Still named "dltensor": nobody consumed it, so the deleter is ours to call.
    if (!PyCapsule_IsValid(c, dlpack::capsule_name)) return;
    auto* m = static_cast<dlpack::managed_tensor*>(PyCapsule_GetPointer(c, dlpack::capsule_name));
    m->deleter(m);
  });
  if (!cap) {
    delete_export(t);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(cap);
}

py::tuple device_array::dlpack_device() const {
  return py::make_tuple(int(dlpack::cuda), device_);
}

py::object numpy_array(std::shared_ptr<owned_field> field, std::byte* data, dtype type,
                       const std::vector<index>& shape, const std::vector<index>& strides) {
  py::object base = py::cast(memory_owner{std::move(field)});
  std::vector<py::ssize_t> sh(shape.begin(), shape.end()), st(strides.begin(), strides.end());
  return py::array(py::dtype(type == dtype::bool_ ? "bool" : dtype_name(type)), sh, st, data, base);
}

std::shared_ptr<owned_field> owner_of(py::handle obj) {
  if (py::isinstance<device_array>(obj)) return obj.cast<const device_array&>().field();
  if (!py::hasattr(obj, "base")) return nullptr;
  py::object base = obj.attr("base");
  if (py::isinstance<memory_owner>(base)) return base.cast<const memory_owner&>().field;
  return nullptr;
}

namespace {

index device_size(const device_array& a) {
  index n = 1;
  for (auto e : a.shape()) n *= e;
  return n;
}

py::object device_dlpack(const device_array& a, py::handle stream, py::handle max_version,
                         py::handle dl_device, py::handle copy) {
  (void)max_version;  // an unversioned capsule, which every consumer takes
  if (!copy.is_none() && copy.cast<bool>())
    throw py::buffer_error("halox.DeviceArray exports its memory without copies");
  if (!dl_device.is_none() && !dl_device.equal(a.dlpack_device()))
    throw py::buffer_error("halox.DeviceArray cannot export to another device");
  return a.dlpack(stream);
}

/// copy_to_host (`to_host`) and copy_from_host: the array's bytes to or from a contiguous
/// buffer of the same size.
void device_copy(const device_array& a, py::handle buffer, bool to_host) {
  contiguous_buffer b(buffer, to_host);
  if (std::size_t(b.view.len) != a.span_bytes())
    throw error(detail::format("{}: the buffer holds {} bytes, the array spans {}",
                               to_host ? "copy_to_host" : "copy_from_host", b.view.len,
                               a.span_bytes()));
  py::gil_scoped_release unlocked;
  if (to_host)
    gpu::copy_to_host(b.view.buf, a.data(), a.span_bytes());
  else
    gpu::copy_to_device(a.data(), b.view.buf, a.span_bytes());
}

/// The keeper of halox-owned memory and a BoxList field's blocks.
void bind_field_blocks(py::module_& m) {
  py::class_<memory_owner>(m, "_Memory", "Keeps the memory of a halox-owned field alive.");

  py::class_<py_blocks>(m, "FieldBlocks", R"doc(
The arrays of a halox-owned field of a BoxList, one per owned box in local_boxes order (none
on a rank without boxes): index and iterate it as a list. Passed to make_exchange as it is, it
stands for the field even where it holds no array.)doc")
      .def("__len__", [](const py_blocks& b) { return b.arrays.size(); })
      .def("__getitem__", [](const py_blocks& b, py::handle i) { return b.arrays[i]; })
      .def("__iter__", [](const py_blocks& b) { return py::iter(b.arrays); })
      .def_property_readonly("arrays", [](const py_blocks& b) { return b.arrays; })
      .def_property_readonly(
          "dtype", [](const py_blocks& b) { return std::string(dtype_name(b.field->type)); })
      .def("__repr__", [](const py_blocks& b) {
        return detail::format("halox.FieldBlocks({} block(s) of {})", b.arrays.size(),
                              dtype_name(b.field->type));
      });
}

/// A block of a halox-owned device field, with both array protocols.
void bind_device_array(py::module_& m) {
  py::class_<device_array>(m, "DeviceArray", R"doc(
A block of a halox-owned device field (``make_field(..., device=True)``): GPU memory that halox
allocated, shown as a strided array. It exports ``__cuda_array_interface__`` (version 3) and
``__dlpack__``/``__dlpack_device__``, so CuPy (``cupy.asarray``), Numba (``cuda.as_cuda_array``),
PyTorch (``torch.from_dlpack``) and JAX (``jax.dlpack.from_dlpack``) use it without a copy. The
memory lives while this object or any consumer's view of it does.)doc")
      .def_property_readonly("shape",
                             [](const device_array& a) { return py::tuple(py::cast(a.shape())); })
      .def_property_readonly(
          "strides", [](const device_array& a) { return py::tuple(py::cast(a.strides())); },
          "Strides in bytes, as NumPy gives them.")
      .def_property_readonly(
          "dtype", [](const device_array& a) { return std::string(dtype_name(a.type())); },
          "The element type's NumPy name ('float64').")
      .def_property_readonly("ndim", [](const device_array& a) { return a.shape().size(); })
      .def_property_readonly("size", &device_size)
      .def_property_readonly("itemsize", [](const device_array& a) { return dtype_size(a.type()); })
      .def_property_readonly(
          "nbytes", &device_array::span_bytes,
          "Bytes of memory the array spans (its elements and the gaps between them).")
      .def_property_readonly(
          "ptr", [](const device_array& a) { return reinterpret_cast<std::uintptr_t>(a.data()); },
          "The device address of the first element.")
      .def_property_readonly("device", &device_array::device, "The CUDA device the memory is on.")
      .def_property_readonly("__cuda_array_interface__", &device_array::cuda_array_interface)
      .def("__dlpack__", &device_dlpack, py::kw_only(), py::arg("stream") = py::none(),
           py::arg("max_version") = py::none(), py::arg("dl_device") = py::none(),
           py::arg("copy") = py::none())
      .def("__dlpack_device__", &device_array::dlpack_device)
      .def(
          "copy_to_host", [](const device_array& a, py::handle out) { device_copy(a, out, true); },
          py::arg("out"), R"doc(
Copies the array's memory, byte for byte, into ``out``: any writable contiguous buffer of
``nbytes`` bytes (a NumPy array, a bytearray). The copy runs on the legacy default stream, after
the work already there, and returns when it is done.)doc")
      .def(
          "copy_from_host", [](const device_array& a, py::handle in) { device_copy(a, in, false); },
          py::arg("src"),
          "The reverse of copy_to_host: ``nbytes`` bytes from ``src`` into the array.")
      .def("__repr__", [](const device_array& a) {
        return detail::format("halox.DeviceArray(shape=({}), dtype={}, device={})",
                              detail::join(a.shape(), ", "), dtype_name(a.type()), a.device());
      });
}

}  // namespace

namespace {

// A zeroed C-ordered NumPy array in node-shared memory (halox::allocate_node_shared).
py::array node_shared_zeros(py::object shape, py::object dtype) {
  const py::dtype dt = py::dtype::from_args(dtype);
  std::vector<py::ssize_t> sh;
  if (py::isinstance<py::int_>(shape))
    sh.push_back(shape.cast<py::ssize_t>());
  else
    for (py::handle n : shape) sh.push_back(n.cast<py::ssize_t>());
  std::size_t bytes = std::size_t(dt.itemsize());
  for (py::ssize_t n : sh) {
    if (n < 0) throw halox::error(detail::format("node_shared_zeros: a negative extent {}", n));
    if (__builtin_mul_overflow(bytes, std::size_t(n), &bytes))
      throw halox::error("node_shared_zeros: the array's size overflows");
  }
  void* p = allocate_node_shared(bytes);
  py::capsule owner(p, [](void* q) { free_node_shared(q); });
  return py::array(dt, sh, p, owner);
}

}  // namespace

void bind_arrays(py::module_& m) {
  bind_field_blocks(m);
  bind_device_array(m);
  m.def("node_shared_zeros", &node_shared_zeros, py::arg("shape"), py::arg("dtype") = "float64",
        R"doc(
A zeroed NumPy array (C order) in memory the other ranks of the node can map. Wrapped in an
exchange, it is copied between ranks of a node once, straight into the neighbours' halos, as
``make_field``'s arrays are; other arrays of your own take two copies. Each array is a mapping of
whole pages: for arrays made once.)doc");
}

}  // namespace halox::python
