#pragma once
// The typed work behind Cartesian and BoxList for one dimension D: owned fields as NumPy arrays
// or DeviceArrays, the user's arrays wrapped as fields, and exchanges over a run-time list of
// fields. Included by structured_<D>d.cpp only (one translation unit per dimension).
//
// Python's fields come as a list whose types are known at run time: `build` hands them to the
// same compiled builder (build_exchange) every C++ make_exchange calls, so an exchange built
// here is the one the C++ call builds.

#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <halox/halox.hpp>

#include "arrays.hpp"
#include "boundary_rules.hpp"
#include "device.hpp"
#include "domains.hpp"
#include "exchange.hpp"
#include "shapes.hpp"

namespace halox::python {

namespace structured {

/// One field of an exchange being built: its state, and the Python objects behind it.
template <int D>
struct entry {
  dtype type = dtype::float64;
  std::shared_ptr<detail::field_state<D>> state;
  py::list arrays;  ///< the Python arrays, one per block
  py::list keep;    ///< what keeps their memory alive (buffers, DLPack tensors)
  int component_axis = -1;
  int ndim = D;
};

/// The dense layout (order, component placement) whose strides an array has, if any.
template <int D>
bool dense_layout(const extents<D>& alloc, int components, const extents<D>& strides,
                  index comp_stride, field_options& o) {
  for (auto order : {layout::row_major, layout::column_major})
    for (auto cl : {components_layout::interleaved, components_layout::planar}) {
      field_options t = o;
      t.order = order;
      t.component_layout = cl;
      detail::block_memory<D> m;
      detail::dense_strides<D>(alloc, t, m);
      bool same = components == 1 || m.comp_stride == comp_stride;
      for (int i = 0; i < D; ++i)
        if (alloc[i] > 1 && m.stride[i] != strides[i]) same = false;
      if (same) {
        o = t;
        return true;
      }
    }
  return false;
}

/// An array's spatial extents and element strides, components apart.
template <int D>
struct array_layout {
  extents<D> alloc{};
  extents<D> strides{};
  index comp_stride = 1;
};

template <int D>
array_layout<D> layout_of(const array_view& v, int axis, int me, const std::string& label) {
  array_layout<D> l;
  const index item = dtype_size(v.type);
  int i = 0;
  for (int a = 0; a < v.ndim(); ++a) {
    const index n = v.shape[std::size_t(a)], s = v.strides[std::size_t(a)];
    index e = 1;
    if (n > 1) {
      if (s <= 0)
        fail_on(me,
                "{}: stride {} bytes along axis {}: halox needs positive strides (no reversed "
                "or broadcast views)",
                label, s, a);
      if (s % item != 0)
        fail_on(me, "{}: stride {} bytes along axis {} is not a multiple of the element size {}",
                label, s, a, item);
      e = s / item;
    }
    if (a == axis) {
      l.comp_stride = e;
      continue;
    }
    l.alloc[i] = n;
    l.strides[i] = e;
    ++i;
  }
  return l;
}

}  // namespace structured

/// A structured domain of dimension D (`Dom<D>` is cartesian<D> or box_list<D>).
template <template <int> class Dom, int D>
class structured_ops final : public domain_ops {
 public:
  explicit structured_ops(Dom<D> d) : dom_(std::move(d)) {}

  int dim() const override { return D; }
  const boost::mpi::communicator& comm() const override { return dom_.comm(); }
  std::vector<index> global_extents() const override {
    return {dom_.global_box().hi.begin(), dom_.global_box().hi.end()};
  }
  std::vector<bool> periodic() const override {
    const auto& f = dom_.periodicity().flags;
    return std::vector<bool>(f.begin(), f.end());
  }
  std::vector<py_box> local_boxes() const override {
    std::vector<py_box> out;
    for (const auto& b : dom_.local_boxes()) out.push_back(py_box::of(b));
    return out;
  }
  std::vector<py_box> boxes_of(int r) const override {
    if (r < 0 || r >= dom_.size())
      throw error(detail::format("boxes_of({}): ranks are 0 to {}", r, dom_.size() - 1));
    std::vector<py_box> out;
    for (const auto& b : dom_.boxes_of(r)) out.push_back(py_box::of(b));
    return out;
  }
  std::vector<int> grid() const override {
    if constexpr (requires { dom_.grid(); })
      return {dom_.grid().dims.begin(), dom_.grid().dims.end()};
    else
      throw error("a BoxList has no process grid");
  }
  std::vector<int> coords(int r) const override {
    if constexpr (requires { dom_.coords(0); }) {
      if (r < 0 || r >= dom_.size())
        throw error(detail::format("coords({}): ranks are 0 to {}", r, dom_.size() - 1));
      const auto c = dom_.coords(r);
      return {c.begin(), c.end()};
    } else {
      throw error("a BoxList has no process grid");
    }
  }
  int rank_of(const std::vector<int>& c) const override {
    if constexpr (requires { dom_.rank_of(std::array<int, D>{}); }) {
      if (int(c.size()) != D)
        throw error(detail::format("rank_of: {} coordinates for a {}-D grid", c.size(), D));
      std::array<int, D> a{};
      for (int i = 0; i < D; ++i) {
        a[std::size_t(i)] = c[std::size_t(i)];
        if (a[std::size_t(i)] < 0 || a[std::size_t(i)] >= dom_.grid().dims[std::size_t(i)])
          throw error(
              detail::format("rank_of: coordinate {} in dimension {} is outside the grid {}",
                             a[std::size_t(i)], i, detail::join(dom_.grid().dims, "x")));
      }
      return dom_.rank_of(a);
    } else {
      throw error("a BoxList has no process grid");
    }
  }

  py_blocks make_field(const field_args& a) const override {
    py_blocks out;
    collective(dom_.comm(), [&] {
      const dtype t = dtype_from(a.dtype);
      widths<D> lo{}, hi{};
      if (!a.pad.is_none()) {
        std::tie(lo, hi) = padding<D>(a.pad);
      } else if (!a.stencil.is_none()) {
        std::tie(lo, hi) = padding<D>(a.stencil);
      } else {
        fail_on(dom_.rank(), "make_field needs a stencil or pad= (the halo padding)");
      }
      field_options o;
      o.components = a.components;
      o.name = a.name;
      o.at = centering_from(a.centering);
      o.shared = shared_points_from(a.shared_points, dom_.rank(), "make_field");
      if (a.order == "C")
        o.order = layout::row_major;
      else if (a.order == "F")
        o.order = layout::column_major;
      else
        fail_on(dom_.rank(), "make_field: order '{}' is neither 'C' nor 'F'", a.order);
      if (a.component_layout == "interleaved")
        o.component_layout = components_layout::interleaved;
      else if (a.component_layout == "planar")
        o.component_layout = components_layout::planar;
      else
        fail_on(dom_.rank(),
                "make_field: component_layout '{}' is neither 'interleaved' nor 'planar'",
                a.component_layout);
      const memory_space space = a.device ? memory_space::device : memory_space::host;
      with_dtype(t, [&]<class T>() {
        auto f = dom_.template make_field<T>(lo, hi, space, o);
        auto own = std::make_shared<owned_field>(owned_field{t, D, f.state()});
        out.field = own;
        const int device = a.device ? gpu::current_device() : -1;
        for (int b = 0; b < f.block_count(); ++b) {
          auto [shape, strides] = owned_layout(*f.state(), b);
          auto* p = reinterpret_cast<std::byte*>(f.data(b));
          if (a.device)
            out.arrays.append(py::cast(
                device_array(own, own, p, t, std::move(shape), std::move(strides), device)));
          else
            out.arrays.append(numpy_array(own, p, t, shape, strides));
        }
      });
    });
    return out;
  }

  py::object build(const py::list& stencils, const py::list& fields, py::handle reverse_op,
                   const py::dict& options, py::handle error) const override {
    const int me = dom_.rank();
    const std::size_t n = fields.size();
    build_inputs in;
    collective(dom_.comm(), [&] {
      if (!error.is_none()) fail_on(me, "{}", error.cast<std::string>());
      in.opts = options_from(options, me);
      if (!reverse_op.is_none()) in.op = reduction_from(reverse_op, me);
      if (n == 0) fail_on(me, "make_exchange needs at least one field");
      in.sts = stencils_of(stencils, n);
      for (std::size_t k = 0; k < n; ++k) {
        const auto spec = py::reinterpret_borrow<py::tuple>(fields[k]);
        in.entries.push_back(entry_of(int(k), spec, in.sts[k]));
        in.fields.push_back(field_of(in.entries.back(), int(k), in.sts[k], spec[6]));
      }
    });
    return build_exchange_of(in);
  }

  const Dom<D>& get() const { return dom_; }

 private:
  static constexpr bool dom_is_box_list() {
    return !requires(const Dom<D>& d) {
      d.grid();
    };
  }

  /// What build() gathers on every rank, inside its agreement, before the builder runs.
  struct build_inputs {
    std::vector<stencil<D>> sts;
    std::vector<structured::entry<D>> entries;
    std::vector<exchange_field<D>> fields;
    exchange_options opts;
    std::optional<reduction> op;
  };

  std::vector<stencil<D>> stencils_of(const py::list& stencils, std::size_t n) const {
    const int me = dom_.rank();
    std::vector<stencil<D>> sts;
    for (std::size_t k = 0; k < n; ++k) {
      if (!py::isinstance<py_stencil>(stencils[k]))
        fail_on(me, "the stencil of field #{} is {}, not a halox.Stencil", k,
                py::repr(stencils[k]).cast<std::string>());
      const auto& s = stencils[k].cast<const py_stencil&>();
      if (s.dim() != D)
        fail_on(me, "the stencil of field #{} is {}-D, the domain {}-D", k, s.dim(), D);
      sts.push_back(s.get<D>());
    }
    return sts;
  }

  /// Field k as the builder takes it: its state, its stencil and its boundary rules (`rules`,
  /// a list of rule specs, or None).
  exchange_field<D> field_of(const structured::entry<D>& e, int k, const stencil<D>& st,
                             py::handle rules) const {
    exchange_field<D> out;
    out.state = e.state;
    out.st = st;
    if (rules.is_none() || py::len(rules) == 0) return out;
    with_dtype(e.type, [&]<class T>() {
      if constexpr (std::is_same_v<T, bool>) {
        // halox::boundary<bool, D> keeps reflection signs in a std::vector<bool>: not bound.
        fail_on(dom_.rank(),
                "field #{}: boundary rules on bool fields are not supported; use uint8", k);
      } else {
        out.boundary = erase_rules(
            boundary_from<T, D>(py::reinterpret_borrow<py::list>(rules), callback_target_of(e)),
            field<T, D>(e.state));
      }
    });
    return out;
  }

  /// The exchange the C++ builder makes of `in`, with the Python arrays it keeps alive.
  py::object build_exchange_of(build_inputs& in) const {
    const std::size_t n = in.entries.size();
    auto ex = build_exchange<Dom<D>, D>(dom_, in.sts.front(), in.opts, in.fields, {in.op, {}});
    py::tuple arrays(n);
    py::list keep;
    for (std::size_t k = 0; k < n; ++k) {
      const auto& e = in.entries[k];
      arrays[k] = e.arrays.size() == 1 && !dom_is_box_list() ? py::object(e.arrays[0])
                                                             : py::object(py::tuple(e.arrays));
      for (const auto& x : e.keep) keep.append(x);
    }
    return make_py_exchange(std::move(ex), arrays, keep, dom_.rank(),
                            in.op ? "reverse" : "forward");
  }

  /// Shape and byte strides of an owned field's block: its padded extents, components last.
  static std::pair<std::vector<index>, std::vector<index>> owned_layout(
      const detail::field_state<D>& s, int b) {
    const auto& m = s.blocks[std::size_t(b)];
    const auto alloc = m.allocated().size();
    const index item = index(s.elem_bytes);
    std::vector<index> shape(alloc.begin(), alloc.end()), strides;
    for (int i = 0; i < D; ++i) strides.push_back(m.stride[i] * item);
    if (s.components > 1) {
      shape.push_back(s.components);
      strides.push_back(m.comp_stride * item);
    }
    return {shape, strides};
  }

  std::shared_ptr<callback_target> callback_target_of(const structured::entry<D>& e) const {
    auto t = std::make_shared<callback_target>();
    for (std::size_t b = 0; b < e.state->blocks.size(); ++b) {
      t->arrays.push_back(e.arrays[b]);
      const auto o = e.state->blocks[b].origin();
      t->origins.emplace_back(o.begin(), o.end());
    }
    t->component_axis = e.component_axis;
    t->ndim = e.ndim;
    return t;
  }

  /// The user's field `k`, as a tuple (arrays, pad, component_axis, name, centering, dtype,
  /// rules, components, shared_points): a halox-owned field as it was made, anything else
  /// wrapped.
  structured::entry<D> entry_of(int k, const py::tuple& spec, const stencil<D>& st) const {
    const int me = dom_.rank();
    const std::string label = detail::format("field #{}", k);
    const py::handle arrays = spec[0], pad = spec[1], axis = spec[2], name = spec[3], at = spec[4],
                     type = spec[5], comps = spec[7], shared = spec[8];
    structured::entry<D> e;
    const bool plain = pad.is_none() && axis.is_none() && name.is_none() && at.is_none() &&
                       comps.is_none() && shared.is_none();
    if (take_arrays(e, arrays, plain, type, label)) return e;
    const auto& boxes = dom_.local_boxes();
    if (e.arrays.size() != boxes.size())
      fail_on(me,
              "{} has {} array(s) but the rank owns {} box(es): pass one array per box, in "
              "local_boxes() order",
              label, e.arrays.size(), boxes.size());
    if (plain && owned_entry(e, type)) return e;
    const std::vector<array_view> views = views_of(e, type, label);
    set_axes(e, views, axis, label);
    field_options o;
    o.components = e.ndim == D + 1 ? int(views[0].shape[std::size_t(e.component_axis)]) : 1;
    if (!comps.is_none()) {
      const int given = comps.cast<int>();
      if (!views.empty() && given != o.components)
        fail_on(me, "{}: components={} was given but the array holds {}", label, given,
                o.components);
      o.components = given;
    }
    o.name = name.is_none() ? std::string() : name.cast<std::string>();
    o.at = centering_from(at);
    o.shared = shared_points_from(shared, me, label);
    const auto [lo, hi] = pad.is_none() ? std::make_pair(st.lo, st.hi) : padding<D>(pad);
    const memory_space space = views.empty() ? memory_space::host : views[0].space;
    with_dtype(e.type, [&]<class T>() {
      e.state = wrap<T>(views, e.component_axis, lo, hi, o, space, label).state();
    });
    return e;
  }

  /// The field's arrays into `e`: a FieldBlocks (true where it is taken as the halox-owned
  /// field it holds), one array, or a list of them.
  bool take_arrays(structured::entry<D>& e, py::handle arrays, bool plain, py::handle type,
                   const std::string& label) const {
    const int me = dom_.rank();
    if (py::isinstance<py_blocks>(arrays)) {
      const auto& blocks = arrays.cast<const py_blocks&>();
      for (const auto& a : blocks.arrays) e.arrays.append(a);
      if (!plain || blocks.field->dim != D ||
          (!type.is_none() && dtype_from(type) != blocks.field->type))
        return false;
      use_owned(e, blocks.field);
      if (e.arrays.size() != dom_.local_boxes().size())
        fail_on(me, "{} has {} array(s) but the rank owns {} box(es)", label, e.arrays.size(),
                dom_.local_boxes().size());
      return true;
    }
    if (is_array_like(arrays))
      e.arrays.append(arrays);
    else if (py::isinstance<py::list>(arrays) || py::isinstance<py::tuple>(arrays))
      for (const auto& a : arrays) e.arrays.append(a);
    else
      fail_on(me, "{} is {}, not an array or a list of arrays (one per owned box)", label,
              py::repr(arrays).cast<std::string>());
    return false;
  }

  /// The arrays' views (kept alive by `e`), of one element type (the one asked for), memory
  /// space and number of dimensions, on this rank's GPU.
  std::vector<array_view> views_of(structured::entry<D>& e, py::handle type,
                                   const std::string& label) const {
    const int me = dom_.rank();
    std::vector<array_view> views;
    for (std::size_t b = 0; b < e.arrays.size(); ++b) {
      views.push_back(view_of(e.arrays[b], label, me));
      e.keep.append(views.back().keep);
    }
    e.type = type.is_none() ? dtype::float64 : dtype_from(type);
    if (!views.empty()) {
      if (!type.is_none() && views[0].type != e.type)
        fail_on(me, "{}: dtype={} was given but the array holds {}", label, dtype_name(e.type),
                dtype_name(views[0].type));
      e.type = views[0].type;
    }
    for (const auto& v : views) {
      if (v.type != e.type || v.space != views[0].space || v.ndim() != views[0].ndim())
        fail_on(me, "{}: its arrays differ in element type, memory space or dimensions", label);
      if (v.space == memory_space::device && v.device >= 0 && v.device != gpu::current_device())
        fail_on(me,
                "{}: the array is on GPU {} but this rank's current GPU is {} (set it with "
                "halox.set_device before making the exchange)",
                label, v.device, gpu::current_device());
    }
    return views;
  }

  /// The arrays' number of dimensions (D, or D + 1 with components) and components' axis.
  void set_axes(structured::entry<D>& e, const std::vector<array_view>& views, py::handle axis,
                const std::string& label) const {
    const int me = dom_.rank();
    const int ndim = views.empty() ? D : views[0].ndim();
    if (ndim != D && ndim != D + 1)
      fail_on(me,
              "{}: the array has {} dimensions; a {}-D domain needs {} (or {} with an axis of "
              "components)",
              label, ndim, D, D, D + 1);
    e.ndim = ndim;
    if (ndim == D + 1) {
      int a = axis.is_none() ? D : axis.cast<int>();
      if (a < 0) a += ndim;
      if (a < 0 || a >= ndim)
        fail_on(me, "{}: component_axis {} of a {}-D array", label, axis.cast<int>(), ndim);
      e.component_axis = a;
    } else if (!axis.is_none()) {
      fail_on(me, "{}: component_axis given but the array has no axis beyond the domain's {}",
              label, D);
    }
  }

  /// Fills `e` from the halox-owned field its arrays are exactly the blocks of, if they are.
  bool owned_entry(structured::entry<D>& e, py::handle type) const {
    if (e.arrays.size() == 0) return false;
    const auto own = owner_of(e.arrays[0]);
    if (!own || own->dim != D) return false;
    auto s = std::static_pointer_cast<detail::field_state<D>>(own->state);
    if (s->blocks.size() != e.arrays.size()) return false;
    if (!type.is_none() && dtype_from(type) != own->type) return false;
    for (std::size_t b = 0; b < e.arrays.size(); ++b) {
      if (owner_of(e.arrays[b]) != own) return false;
      const array_view v = view_of(e.arrays[b], "field", dom_.rank());
      const auto [shape, strides] = owned_layout(*s, int(b));
      if (v.data != s->blocks[b].data || v.shape != shape) return false;
      for (std::size_t a = 0; a < shape.size(); ++a)
        if (shape[a] > 1 && v.strides[a] != strides[a]) return false;
      e.keep.append(v.keep);
    }
    use_owned(e, own);
    return true;
  }

  static void use_owned(structured::entry<D>& e, const std::shared_ptr<owned_field>& own) {
    auto s = std::static_pointer_cast<detail::field_state<D>>(own->state);
    e.type = own->type;
    e.state = s;
    e.ndim = s->components > 1 ? D + 1 : D;
    e.component_axis = s->components > 1 ? D : -1;
  }

  /// The user's arrays as a field<T, D>: dense arrays through `wrap` (its extents check),
  /// others through `wrap_strided` after the same check.
  template <class T>
  field<T, D> wrap(const std::vector<array_view>& views, int axis, const widths<D>& lo,
                   const widths<D>& hi, field_options o, memory_space space,
                   const std::string& label) const {
    const int me = dom_.rank();
    const auto& boxes = dom_.local_boxes();
    const detail::point_grid<D> points(o.at, dom_.global_box().hi, dom_.periodicity().flags);
    if (boxes.size() == 1) {
      const auto l = structured::layout_of<D>(views[0], axis, me, label);
      if (structured::dense_layout<D>(l.alloc, o.components, l.strides, l.comp_stride, o))
        return dom_.template wrap<T>(reinterpret_cast<T*>(views[0].data), l.alloc, lo, hi, o,
                                     space);
      const box<D> stored = points.stored(boxes[0]);
      if (grow(stored, lo, hi).size() != l.alloc)
        throw error(extents_error(label, l.alloc, stored, lo, hi, o));
      return dom_.template wrap_strided<T>(reinterpret_cast<T*>(views[0].data), lo, hi, l.strides,
                                           l.comp_stride, o, space);
    }
    // Several blocks: dense arrays of one layout, each checked against its box.
    std::vector<T*> ptrs;
    std::vector<extents<D>> sizes;
    for (std::size_t b = 0; b < views.size(); ++b) {
      const auto l = structured::layout_of<D>(views[b], axis, me, label);
      sizes.push_back(l.alloc);
      const box<D> stored = points.stored(boxes[b]);
      if (grow(stored, lo, hi).size() != l.alloc)
        throw error(
            extents_error(label + detail::format(" block {}", b), l.alloc, stored, lo, hi, o));
      field_options found = o;
      if (!structured::dense_layout<D>(l.alloc, o.components, l.strides, l.comp_stride, found) ||
          (b > 0 && (found.order != o.order || found.component_layout != o.component_layout)))
        fail_on(me,
                "{}: with several boxes per rank, each array must be dense (C or Fortran "
                "order) and all of one layout; block {} is not",
                label, b);
      o = found;
      ptrs.push_back(reinterpret_cast<T*>(views[b].data));
    }
    return dom_.template wrap<T>(ptrs, sizes, lo, hi, o, space);
  }

  /// The message of `wrap` for extents that do not fit, for the arrays it does not see.
  std::string extents_error(const std::string& label, const extents<D>& got, const box<D>& stored,
                            const widths<D>& lo, const widths<D>& hi,
                            const field_options& o) const {
    const extents<D> want = grow(stored, lo, hi).size();
    return detail::format(
        "rank {}: {} '{}' has extents {} but the owned box {} ({}-centred) "
        "with padding {}/{} needs {}",
        dom_.rank(), label, o.name.empty() ? "(unnamed)" : o.name, detail::join(got, "x"),
        to_string(stored), to_string(o.at), detail::join(lo, ","), detail::join(hi, ","),
        detail::join(want, "x"));
  }

  Dom<D> dom_;
};

template <int D>
std::shared_ptr<const domain_ops> cartesian_ops(const boost::mpi::communicator& comm,
                                                const std::vector<index>& extents,
                                                const std::vector<bool>& per,
                                                const std::vector<int>& grid) {
  halox::extents<D> e{};
  periodic<D> p;
  for (int i = 0; i < D; ++i)
    e[i] = extents[std::size_t(i)], p.flags[std::size_t(i)] = per[std::size_t(i)];
  std::optional<process_grid<D>> g;
  if (!grid.empty()) {
    g.emplace();
    for (int i = 0; i < D; ++i) g->dims[std::size_t(i)] = grid[std::size_t(i)];
  }
  return std::make_shared<structured_ops<cartesian, D>>(cartesian<D>(comm, e, p, g));
}

template <int D>
std::shared_ptr<const domain_ops> box_list_ops(const boost::mpi::communicator& comm,
                                               const std::vector<index>& extents,
                                               const std::vector<bool>& per,
                                               const std::vector<py_box>& boxes,
                                               const std::vector<int>& owners) {
  halox::extents<D> e{};
  periodic<D> p;
  for (int i = 0; i < D; ++i)
    e[i] = extents[std::size_t(i)], p.flags[std::size_t(i)] = per[std::size_t(i)];
  std::vector<owned_box<D>> list;
  for (std::size_t k = 0; k < boxes.size(); ++k) list.push_back({boxes[k].get<D>(), owners[k]});
  return std::make_shared<structured_ops<box_list, D>>(box_list<D>(comm, e, p, std::move(list)));
}

}  // namespace halox::python
