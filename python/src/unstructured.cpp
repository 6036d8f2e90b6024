// Unstructured patterns for Python: the pattern, its fields (arrays of local entities), and
// exchanges over a run-time list of them (as make_exchange / make_reverse_exchange build them
// from a parameter pack, see structured.hpp).
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <halox/halox.hpp>

#include "arrays.hpp"
#include "device.hpp"
#include "domains.hpp"
#include "exchange.hpp"

namespace halox::python {

namespace {

/// Integers from a list or a 1-D integer array (read through the buffer protocol, without
/// going element by element through Python).
template <class T>
std::vector<T> int_vector(py::handle obj, const char* what) {
  if (PyObject_CheckBuffer(obj.ptr())) {
    Py_buffer b{};
    if (PyObject_GetBuffer(obj.ptr(), &b, PyBUF_RECORDS_RO) == 0) {
      std::vector<T> out;
      const std::string f = b.format ? b.format : "B";
      const char c = f.empty() ? 'B' : f.back();
      const bool is_signed = std::string_view("bhilqn").find(c) != std::string_view::npos;
      const bool is_unsigned = std::string_view("BHILQN").find(c) != std::string_view::npos;
      const bool ok = b.ndim == 1 && (is_signed || is_unsigned) && b.itemsize <= 8;
      if (ok) {
        out.reserve(std::size_t(b.shape[0]));
        for (Py_ssize_t k = 0; k < b.shape[0]; ++k) {
          const auto* p = static_cast<const char*>(b.buf) + k * b.strides[0];
          std::int64_t v = 0;
          switch (b.itemsize) {
            case 1:
              v = is_signed ? *reinterpret_cast<const std::int8_t*>(p)
                            : *reinterpret_cast<const std::uint8_t*>(p);
              break;
            case 2:
              v = is_signed ? *reinterpret_cast<const std::int16_t*>(p)
                            : *reinterpret_cast<const std::uint16_t*>(p);
              break;
            case 4:
              v = is_signed ? *reinterpret_cast<const std::int32_t*>(p)
                            : *reinterpret_cast<const std::uint32_t*>(p);
              break;
            default:
              v = *reinterpret_cast<const std::int64_t*>(p);
              break;
          }
          out.push_back(T(v));
        }
      }
      PyBuffer_Release(&b);
      if (ok) return out;
      throw error(detail::format("{} must be a 1-D sequence of integers", what));
    }
    PyErr_Clear();
  }
  return obj.cast<std::vector<T>>();
}

py::list index_lists(const std::vector<index_list>& v) {
  py::list out;
  for (const auto& l : v) out.append(py::make_tuple(l.rank, py::cast(l.local)));
  return out;
}

/// One field of an unstructured exchange being built.
struct entity_entry {
  dtype type = dtype::float64;
  std::shared_ptr<detail::entity_field_state> state;
  py::object array;
  py::list keep;
};

}  // namespace

/// Python's Unstructured: the pattern, shared by its fields' exchanges.
class py_unstructured {
 public:
  explicit py_unstructured(std::shared_ptr<const unstructured> p) : p_(std::move(p)) {}
  const unstructured& get() const { return *p_; }

  py::object make_field(py::handle type, int components, const std::string& layout, bool device,
                        py::handle name) const {
    py::object out;
    collective(p_->comm(), [&] {
      const dtype t = dtype_from(type);
      const entity_layout l = layout_from(layout);
      const memory_space space = device ? memory_space::device : memory_space::host;
      const std::string n = name.is_none() ? std::string() : name.cast<std::string>();
      with_dtype(t, [&]<class T>() {
        auto f = p_->template make_field<T>(components, l, space, n);
        auto own = std::make_shared<owned_field>(owned_field{t, 0, f.state()});
        auto [shape, strides] = owned_layout(*f.state());
        auto* data = reinterpret_cast<std::byte*>(f.data());
        out = device ? py::cast(device_array(own, own, data, t, std::move(shape),
                                             std::move(strides), gpu::current_device()))
                     : numpy_array(own, data, t, shape, strides);
      });
    });
    return out;
  }

  py::object build(const py::list& fields, py::handle reverse_op, const py::dict& options,
                   py::handle error) const {
    const unstructured& pat = *p_;
    const int me = pat.rank();
    const std::size_t n = fields.size();
    std::vector<entity_entry> entries;
    std::vector<std::shared_ptr<detail::entity_field_state>> states;
    exchange_options opts;
    std::optional<reduction> op;
    collective(pat.comm(), [&] {
      if (!error.is_none()) fail_on(me, "{}", error.cast<std::string>());
      opts = options_from(options, me);
      if (!reverse_op.is_none()) op = reduction_from(reverse_op, me);
      if (n == 0) fail_on(me, "make_exchange needs at least one field");
      for (std::size_t k = 0; k < n; ++k)
        entries.push_back(entry_of(int(k), py::reinterpret_borrow<py::tuple>(fields[k])));
      for (const auto& e : entries) states.push_back(e.state);
    });
    auto ex = build_exchange(pat, opts, states, op);
    py::tuple arrays(n);
    py::list keep;
    for (std::size_t k = 0; k < n; ++k) {
      arrays[k] = entries[k].array;
      for (const auto& x : entries[k].keep) keep.append(x);
    }
    return make_py_exchange(std::move(ex), arrays, keep, me, op ? "reverse" : "forward");
  }

 private:
  static entity_layout layout_from(const std::string& s) {
    if (s == "entity_major") return entity_layout::entity_major;
    if (s == "component_major") return entity_layout::component_major;
    throw error(detail::format("layout '{}' is neither 'entity_major' nor 'component_major'", s));
  }

  /// Shape (entities, components last) and byte strides of an entity field.
  static std::pair<std::vector<index>, std::vector<index>> owned_layout(
      const detail::entity_field_state& s) {
    const index item = index(s.elem_bytes);
    if (s.components == 1) return {{s.count}, {s.entity_stride * item}};
    return {{s.count, s.components}, {s.entity_stride * item, s.comp_stride * item}};
  }

  /// Field `k` from (array, pad, component_axis, name, centering, dtype, rules, components,
  /// shared_points).
  entity_entry entry_of(int k, const py::tuple& spec) const {
    const unstructured& pat = *p_;
    const int me = pat.rank();
    const std::string label = detail::format("field #{}", k);
    const py::handle array = spec[0], axis = spec[2], name = spec[3], type = spec[5];
    refuse_structured_arguments(spec, label, me);
    entity_entry e;
    e.array = py::reinterpret_borrow<py::object>(array);
    if (!is_array_like(array))
      fail_on(me, "{} is {}, not an array", label, py::repr(array).cast<std::string>());
    const auto own = owner_of(array);
    const array_view v = view_of(array, label, me);
    e.keep.append(v.keep);
    if (own && own->dim == 0 && axis.is_none() && name.is_none() && take_owned(e, *own, v, type))
      return e;
    e.type = v.type;
    check_array(v, type, label, me);
    const int caxis = component_axis_of(v, axis, label, me);
    const int eaxis = caxis == 0 ? 1 : 0;
    const index count = v.shape[std::size_t(eaxis)];
    const int comps = caxis < 0 ? 1 : int(v.shape[std::size_t(caxis)]);
    const std::string field_name = name.is_none() ? std::string() : name.cast<std::string>();
    if (count != pat.local_count())
      fail_on(me, "{} '{}' has {} entities, the pattern has {} local entities", label,
              field_name.empty() ? "(unnamed)" : field_name, count, pat.local_count());
    const index es = stride_elems(v, eaxis, label, me);
    const index cs = caxis < 0 ? 0 : stride_elems(v, caxis, label, me);
    const auto [l, comp_stride] = layout_of(es, cs, comps, label, me);
    with_dtype(v.type, [&]<class T>() {
      e.state = pat.template wrap<T>(reinterpret_cast<T*>(v.data), comps, l, comp_stride, v.space,
                                     field_name)
                    .state();
    });
    return e;
  }

  static void refuse_structured_arguments(const py::tuple& spec, const std::string& label, int me) {
    const py::handle pad = spec[1], at = spec[4], rules = spec[6], given_comps = spec[7],
                     shared = spec[8];
    if (!pad.is_none() || !at.is_none() || !shared.is_none() ||
        (!rules.is_none() && py::len(rules) > 0))
      fail_on(me, "{}: unstructured fields have no padding, centering or boundary rules", label);
    if (!given_comps.is_none())
      fail_on(me, "{}: components= is for fields of ranks without boxes", label);
  }

  /// A halox-owned field passed as it was made: its own state (false: the array is another).
  static bool take_owned(entity_entry& e, const owned_field& own, const array_view& v,
                         py::handle type) {
    auto s = std::static_pointer_cast<detail::entity_field_state>(own.state);
    const auto [shape, strides] = owned_layout(*s);
    if (v.data != s->data || v.shape != shape || (!type.is_none() && dtype_from(type) != own.type))
      return false;
    e.type = own.type;
    e.state = s;
    return true;
  }

  /// The dtype asked for, the GPU and the number of dimensions.
  static void check_array(const array_view& v, py::handle type, const std::string& label, int me) {
    if (!type.is_none() && dtype_from(type) != v.type)
      fail_on(me, "{}: dtype={} was given but the array holds {}", label,
              dtype_name(dtype_from(type)), dtype_name(v.type));
    if (v.space == memory_space::device && v.device >= 0 && v.device != gpu::current_device())
      fail_on(me,
              "{}: the array is on GPU {} but this rank's current GPU is {} (set it with "
              "halox.set_device before making the exchange)",
              label, v.device, gpu::current_device());
    if (v.ndim() != 1 && v.ndim() != 2)
      fail_on(me,
              "{}: an unstructured field is a 1-D array of entities or a 2-D array of "
              "entities and components, not {}-D",
              label, v.ndim());
  }

  /// The components' axis of a 2-D array (default 1), or -1 for a 1-D one.
  static int component_axis_of(const array_view& v, py::handle axis, const std::string& label,
                               int me) {
    if (v.ndim() != 2) {
      if (!axis.is_none()) fail_on(me, "{}: component_axis given for a 1-D array", label);
      return -1;
    }
    int caxis = axis.is_none() ? 1 : axis.cast<int>();
    if (caxis < 0) caxis += 2;
    if (caxis != 0 && caxis != 1)
      fail_on(me, "{}: component_axis {} of a 2-D array", label, axis.cast<int>());
    return caxis;
  }

  /// The stride along axis `a` in elements (0 where the axis is never stepped).
  static index stride_elems(const array_view& v, int a, const std::string& label, int me) {
    const index item = dtype_size(v.type);
    const index s = v.strides[std::size_t(a)];
    if (v.shape[std::size_t(a)] <= 1) return 0;  // any stride: never stepped
    if (s <= 0 || s % item != 0)
      fail_on(me,
              "{}: stride {} bytes along axis {}: halox needs positive strides that are "
              "multiples of the element size {}",
              label, s, a, item);
    return s / item;
  }

  /// halox's two layouts: [entity][component] (entities `components` apart, components
  /// adjacent) and [component][entity] (entities adjacent, components any distance apart);
  /// with the component stride of the latter (-1 for the former).
  static std::pair<entity_layout, index> layout_of(index es, index cs, int comps,
                                                   const std::string& label, int me) {
    if (comps > 1 && es <= 1 && cs != 1) return {entity_layout::component_major, cs};
    if (!(es <= 1 && comps == 1) && !(cs <= 1 && (es == comps || es == 0)))
      fail_on(me,
              "{}: entities {} and components {} elements apart: halox takes entity-major "
              "([entity][component], C order) or component-major ([component][entity]) arrays",
              label, es, cs);
    return {entity_layout::entity_major, -1};
  }

  std::shared_ptr<const unstructured> p_;
};

namespace {

py_unstructured make_unstructured(py::handle comm, py::handle owned, py::handle ghosts,
                                  py::handle ghost_owners, py::handle owned_local,
                                  py::handle ghost_local, py::handle local_count) {
  const auto bc = boost_comm(comm);
  std::vector<global_id> o, g;
  std::vector<int> go;
  std::vector<index> ol, gl;
  unstructured_options opt;
  collective(bc, [&] {
    o = int_vector<global_id>(owned, "owned");
    g = int_vector<global_id>(ghosts, "ghosts");
    if (!ghost_owners.is_none()) go = int_vector<int>(ghost_owners, "ghost_owners");
    if (!owned_local.is_none()) ol = int_vector<index>(owned_local, "owned_local");
    if (!ghost_local.is_none()) gl = int_vector<index>(ghost_local, "ghost_local");
    if (!local_count.is_none()) opt.local_count = local_count.cast<index>();
  });
  opt.ghost_owners = go;
  opt.owned_local = ol;
  opt.ghost_local = gl;
  return py_unstructured(std::make_shared<const unstructured>(bc, o, g, opt));
}

}  // namespace

void bind_unstructured(py::module_& m) {
  py::class_<py_unstructured>(m, "Unstructured", R"doc(
An unstructured halo pattern: each rank names the global ids of the entities it owns and of
the ghosts it needs; halox finds the owners (a distributed directory, unless ``ghost_owners``
gives them) and builds per-peer index lists. Local entity order: owned first, then ghosts,
unless ``owned_local``/``ghost_local`` place them (in an array of ``local_count`` entities).
Collective; wrong input on any rank (an id twice, a ghost no rank owns, ...) raises halox.Error
on every rank.)doc")
      .def(py::init(&make_unstructured), py::arg("comm"), py::arg("owned"), py::arg("ghosts"),
           py::kw_only(), py::arg("ghost_owners") = py::none(), py::arg("owned_local") = py::none(),
           py::arg("ghost_local") = py::none(), py::arg("local_count") = py::none())
      .def_property_readonly("rank", [](const py_unstructured& p) { return p.get().rank(); })
      .def_property_readonly("size", [](const py_unstructured& p) { return p.get().comm().size(); })
      .def_property_readonly("local_count",
                             [](const py_unstructured& p) { return p.get().local_count(); })
      .def_property_readonly("owned_count",
                             [](const py_unstructured& p) { return p.get().owned_count(); })
      .def_property_readonly("ghost_count",
                             [](const py_unstructured& p) { return p.get().ghost_count(); })
      .def_property_readonly("owned_local",
                             [](const py_unstructured& p) { return p.get().owned_local(); })
      .def_property_readonly("ghost_local",
                             [](const py_unstructured& p) { return p.get().ghost_local(); })
      .def_property_readonly(
          "ghost_owners", [](const py_unstructured& p) { return p.get().ghost_owners(); },
          "The owner rank of each ghost, in declaration order (given or found).")
      .def_property_readonly(
          "sends", [](const py_unstructured& p) { return index_lists(p.get().sends()); },
          "(peer, owned local indices sent) per peer, by increasing rank.")
      .def_property_readonly(
          "recvs", [](const py_unstructured& p) { return index_lists(p.get().recvs()); },
          "(peer, ghost local indices received) per peer, by increasing rank.")
      .def("make_field", &py_unstructured::make_field, py::arg("dtype") = "float64",
           py::arg("components") = 1, py::kw_only(), py::arg("layout") = "entity_major",
           py::arg("device") = false, py::arg("name") = py::none(), R"doc(
A field halox allocates (zeroed) over the ``local_count`` entities: a NumPy array (host) or a
DeviceArray (``device=True``) of shape (local_count,) or (local_count, components); ``layout``
'entity_major' ([entity][component]) or 'component_major' ([component][entity]). Collective.)doc")
      .def("_build", &py_unstructured::build, py::arg("fields"), py::arg("reverse_op"),
           py::arg("options"), py::arg("error") = py::none())
      .def("__repr__", [](const py_unstructured& p) {
        return detail::format("<halox.Unstructured {} owned + {} ghosts on rank {} of {}>",
                              p.get().owned_count(), p.get().ghost_count(), p.get().rank(),
                              p.get().comm().size());
      });
}

}  // namespace halox::python
