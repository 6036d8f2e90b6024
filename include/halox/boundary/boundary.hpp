#pragma once
/// @file
/// Physical boundary rules: what fills the halo cells beyond a non-periodic face of the global
/// box after each exchange (a constant, zero gradient, a reflection with a sign per component,
/// or your callback), and their compilation into fills run by the exchange object.

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "halox/core/box.hpp"
#include "halox/core/error.hpp"
#include "halox/core/reduction.hpp"
#include "halox/core/stream.hpp"
#include "halox/field/field.hpp"
#include "halox/pattern/stencil.hpp"
#include "halox/program/boundary_ops.hpp"

namespace halox {

/// The low or the high side of a dimension.
enum class side { low, high };

/// One face of the global box: the `low` or `high` side of dimension `dim`.
struct face {
  int dim = 0;
  side at = side::low;
};

/// What a boundary callback is given: the field, the block, the face, and the halo cells to
/// fill (global indices, beyond the face, across the owned box grown by the stencil's widths).
///
/// `stream` is null for host fields: the callback runs on the host and writes the cells itself.
/// For device fields it is the CUDA stream the callback must order its work on (enqueue a
/// kernel or a cudaMemcpyAsync there, do not synchronise): everything halox did for this
/// exchange, the built-in rules of lower dimensions included, is ordered before it. In
/// `schedule_wait(s)` it is `s` and halox adds no host wait; in `exchange()`, a handle's
/// `wait()` and the `test()` that returns true it is halox's own stream, and halox waits for that
/// stream (the callbacks' work included) before returning.
template <class T, int D>
struct boundary_face {
  field<T, D> f;
  int block = 0;
  halox::face face;
  box<D> cells;
  stream_t stream = nullptr;
};

/// The kinds of rule a face can have.
enum class boundary_kind { none, constant, zero_gradient, reflect, callback };

/// The physical boundary rules of one field, one per face (faces without one are left alone):
/// ```
/// halox::boundary<double, 2> bc;
/// bc.constant({0, halox::side::low}, 1.0)            // inflow: every halo cell beyond x = 0 is 1
///     .zero_gradient({0, halox::side::high})          // outflow: copies of the last owned cell
///     .reflect({1, halox::side::low}, {+1.0, -1.0})   // wall: mirrored, v component negated
///     .callback({1, halox::side::high}, my_fill);     // anything else
/// ```
/// Pass it with the field's stencil to make_exchange: `halox::halo(st, u, bc)`. After every
/// exchange (at `wait()`, or the `test()` that completes it) the rules run in dimension order,
/// low face before high, so where two boundaries meet the higher dimension's rule has the last
/// word and reads what the lower ones wrote (see docs/staggered.md). On device fields the
/// built-in rules run in halox's kernels on its stream after the unpack (bit-identical to the
/// host's), and callbacks get the stream to enqueue their work on (boundary_face::stream).
template <class T, int D>
class boundary {
 public:
  using callback_type = std::function<void(const boundary_face<T, D>&)>;
  struct rule {
    boundary_kind kind = boundary_kind::none;
    T value{};
    std::vector<T> signs;  ///< reflect: one factor per component (empty: all +1)
    callback_type fn;
  };

  /// Every halo cell beyond `fc` holds `v` (all components).
  boundary& constant(face fc, T v) { return set(fc, rule{boundary_kind::constant, v, {}, {}}); }
  /// Every halo cell beyond `fc` holds the owned cell at the face in the same line (first-order
  /// extrapolation; zero normal gradient).
  boundary& zero_gradient(face fc) {
    return set(fc, rule{boundary_kind::zero_gradient, {}, {}, {}});
  }
  /// The halo cell k cells beyond `fc` holds the cell k − 1 cells inside it (a mirror at the
  /// face), component c multiplied by `signs[c]` (e.g. −1 for the normal velocity at a wall).
  /// No signs: every component mirrored as it is.
  boundary& reflect(face fc, std::vector<T> signs = {}) {
    return set(fc, rule{boundary_kind::reflect, {}, std::move(signs), {}});
  }
  /// `fn(face)` fills the cells itself, once per block that has cells beyond `fc`.
  boundary& callback(face fc, callback_type fn) {
    return set(fc, rule{boundary_kind::callback, {}, {}, std::move(fn)});
  }

  /// Whether any face has a rule.
  bool empty() const {
    for (const auto& r : rules_)
      if (r.second.kind != boundary_kind::none) return false;
    return true;
  }
  /// The rules set, in the order given (checked by make_exchange).
  const std::vector<std::pair<face, rule>>& rules() const { return rules_; }

 private:
  boundary& set(face fc, rule r) {
    rules_.emplace_back(fc, std::move(r));
    return *this;
  }
  std::vector<std::pair<face, rule>> rules_;
};

inline std::string to_string(side s) {
  return s == side::low ? "low" : "high";
}

namespace detail {

/// A compiled fill: `count` cells (innermost: components) written at `dst` from `src` (or the
/// constant when `src` is null), element strides per loop, component c times `sign[c]`.
template <class T, int D>
struct boundary_copy {
  T* dst = nullptr;
  const T* src = nullptr;
  T value{};
  std::array<index, D + 1> count{}, dst_stride{}, src_stride{};
  std::vector<T> sign;  // per component, empty: no factor

  void run() const {
    std::array<index, D + 1> k{};
    if (count[D] <= 0) return;
    for (int i = 0; i < D; ++i)
      if (count[i] <= 0) return;
    for (;;) {
      index od = 0, os = 0;
      for (int i = 0; i < D; ++i) od += k[i] * dst_stride[i], os += k[i] * src_stride[i];
      for (index c = 0; c < count[D]; ++c) {
        T v = src ? src[os + c * src_stride[D]] : value;
        if constexpr (std::is_arithmetic_v<T>)
          if (!sign.empty()) v = T(v * sign[std::size_t(c)]);
        dst[od + c * dst_stride[D]] = v;
      }
      int i = D - 1;
      while (i >= 0 && ++k[i] == count[i]) k[i] = 0, --i;
      if (i < 0) return;
    }
  }
};

/// Appends `n` bytes at `p` to the fill data, 16-byte aligned; returns their offset.
inline std::size_t append_fill_data(std::vector<std::byte>& data, const void* p, std::size_t n) {
  const std::size_t at = (data.size() + 15) / 16 * 16;
  data.resize(at + n);
  std::memcpy(data.data() + at, p, n);
  return at;
}

/// A compiled host fill as halox's kernels run it on a device field (byte strides; the
/// constant and the signs copied into the fill data).
template <class T, int D>
fill_op device_fill(const boundary_copy<T, D>& op, int dim, std::vector<std::byte>& data) {
  fill_op f;
  f.dst = reinterpret_cast<std::byte*>(op.dst);
  f.src = reinterpret_cast<const std::byte*>(op.src);
  f.dim = dim;
  f.ndims = D + 1;
  f.comp_loop = D;
  f.elem = sizeof(T);
  f.word = std::min<std::size_t>(alignof(T), 8);
  f.type = device_type_code<T>();
  for (int i = 0; i <= D; ++i) {
    f.count[std::size_t(i)] = op.count[std::size_t(i)];
    f.dst_stride[std::size_t(i)] = op.dst_stride[std::size_t(i)] * index(sizeof(T));
    f.src_stride[std::size_t(i)] = op.src_stride[std::size_t(i)] * index(sizeof(T));
  }
  if (!op.src) f.constant = append_fill_data(data, &op.value, sizeof(T));
  if (!op.sign.empty()) {
    f.has_signs = true;
    f.signs = append_fill_data(data, op.sign.data(), op.sign.size() * sizeof(T));
  }
  return f;
}

/// The rule of each face of field #k, labelled `label` (the last rule given for a face wins;
/// null where a face has none), each checked against the field and the domain (`per` its
/// periodicity). Throws halox::error naming the rank, the field and the face.
template <class T, int D>
std::array<std::array<const typename boundary<T, D>::rule*, 2>, D> face_rules(
    const boundary<T, D>& bc, const field<T, D>& f, const std::array<bool, D>& per, int rank,
    const std::string& label) {
  const bool on_device = f.space() == memory_space::device;
  std::array<std::array<const typename boundary<T, D>::rule*, 2>, D> at{};
  for (const auto& [fc, r] : bc.rules()) {
    require(fc.dim >= 0 && fc.dim < D,
            "rank {}: {}: boundary rule for dimension {} of a {}-D field", rank, label, fc.dim, D);
    require(!per[std::size_t(fc.dim)],
            "rank {}: {}: boundary rule on the {} face of dimension {}, which is periodic (the "
            "exchange fills periodic halos); make the dimension non-periodic or drop the rule",
            rank, label, to_string(fc.at), fc.dim);
    if (r.kind == boundary_kind::reflect) {
      require(r.signs.empty() || int(r.signs.size()) == f.components(),
              "rank {}: {}: reflect on the {} face of dimension {} has {} sign(s) but the field "
              "has {} component(s)",
              rank, label, to_string(fc.at), fc.dim, r.signs.size(), f.components());
      if constexpr (!std::is_arithmetic_v<T>)
        require(r.signs.empty(), "rank {}: {}: reflect with signs needs an arithmetic value type",
                rank, label);
      require(r.signs.empty() || !on_device || device_type_code<T>() != 0,
              "rank {}: {}: reflect with signs on a device field supports double, float and "
              "32/64-bit integers",
              rank, label);
    }
    require(r.kind != boundary_kind::callback || bool(r.fn),
            "rank {}: {}: empty callback on the {} face of dimension {}", rank, label,
            to_string(fc.at), fc.dim);
    at[std::size_t(fc.dim)][fc.at == side::low ? 0 : 1] = &r;
  }
  return at;
}

/// Built-in rule `r` (not a callback) on side `s` (0 low, 1 high) of dimension `d`, block `b`
/// of field #k (`label`), as a fill of `cells`, the block's halo cells beyond that face. Throws
/// halox::error where the cells it reads are outside the global box or the block's owned box
/// grown by the stencil.
template <class T, int D>
boundary_copy<T, D> compile_fill(const typename boundary<T, D>::rule& r, const field<T, D>& f,
                                 int b, int d, int s, const box<D>& cells, const stencil<D>& st,
                                 int rank, const std::string& label) {
  const extents<D> n = f.state()->points.global().hi;  // points (cells for a cell field)
  const auto& stagger = f.state()->points.stagger;
  const auto& m = f.state()->blocks[std::size_t(b)];
  const box<D> exchanged = grow(m.owned, st.lo, st.hi);
  const face fc{d, s == 0 ? side::low : side::high};
  boundary_copy<T, D> op;
  op.dst = f.pointer(cells.lo, 0, b);
  for (int i = 0; i < D; ++i)
    op.count[i] = cells.hi[i] - cells.lo[i], op.dst_stride[i] = m.stride[i];
  op.count[D] = f.components();
  op.dst_stride[D] = op.src_stride[D] = m.comp_stride;
  op.value = r.value;
  if (r.kind == boundary_kind::constant) return op;
  // The cell read for the first cell written, and how the read moves along d.
  extents<D> from = cells.lo;
  index first = 0, last = 0;  // the range of d read
  if (r.kind == boundary_kind::zero_gradient) {
    from[d] = first = last = s == 0 ? 0 : n[d] - 1;
  } else {
    // Cells mirror about the face (g -> -1 - g); points about the boundary point on
    // it (g -> -g), which the rule leaves as it is.
    const index cell_mirror = stagger[std::size_t(d)] ? 0 : 1;
    auto mirror = [&](index g) {
      return s == 0 ? -cell_mirror - g : 2 * n[d] - 2 + cell_mirror - g;
    };
    from[d] = last = mirror(cells.lo[d]);
    first = mirror(cells.hi[d] - 1);
    for (std::size_t c = 0; c < r.signs.size(); ++c) op.sign.push_back(r.signs[c]);
  }
  require(
      first >= std::max<index>(0, exchanged.lo[d]) && last < std::min<index>(n[d], exchanged.hi[d]),
      "rank {}: {}: {} on the {} face of dimension {} reads cells {}..{} along it, "
      "outside the global box or beyond block {}'s owned box {} and stencil halo "
      "{}/{}; use a narrower halo on that face or larger boxes",
      rank, label, r.kind == boundary_kind::reflect ? "reflect" : "zero gradient", to_string(fc.at),
      d, first, last, b, to_string(m.owned), st.lo[d], st.hi[d]);
  op.src = f.pointer(from, 0, b);
  for (int i = 0; i < D; ++i) op.src_stride[i] = m.stride[i];
  op.src_stride[d] = r.kind == boundary_kind::zero_gradient ? 0 : -m.stride[d];
  return op;
}

/// Checks field #k's rules against the domain (`per` its periodicity) and compiles them, in
/// dimension order, low before high, block by block: into host work for a host field, into
/// fills and callbacks in `device` for a device field. Throws halox::error naming the rank, the
/// field and the face. Along a staggered dimension the field's points run from 0 to n (the
/// boundary points lie on the faces and are owned): the rules fill the points beyond them, and
/// a reflection mirrors about the boundary point (point −k holds point k).
template <class T, int D>
std::vector<std::function<void()>> compile_boundary(const boundary<T, D>& bc, const field<T, D>& f,
                                                    const stencil<D>& st,
                                                    const std::array<bool, D>& per, int rank, int k,
                                                    device_rules& device) {
  const extents<D> n = f.state()->points.global().hi;  // points (cells for a cell field)
  std::vector<std::function<void()>> out;
  if (bc.empty()) return out;
  const auto label = detail::format("field #{} '{}'", k, f.name());
  const bool on_device = f.space() == memory_space::device;
  const auto at = face_rules<T, D>(bc, f, per, rank, label);
  const auto& st_state = *f.state();
  for (int d = 0; d < D; ++d)
    for (int s = 0; s < 2; ++s) {
      const auto* r = at[std::size_t(d)][std::size_t(s)];
      if (!r || r->kind == boundary_kind::none) continue;
      for (int b = 0; b < f.block_count(); ++b) {
        const auto& m = st_state.blocks[std::size_t(b)];
        box<D> cells = grow(m.owned, st.lo, st.hi);  // the halo cells beyond the face
        if (s == 0)
          cells.hi[d] = std::min<index>(cells.hi[d], 0);
        else
          cells.lo[d] = std::max<index>(cells.lo[d], n[d]);
        if (cells.empty()) continue;
        if (r->kind == boundary_kind::callback) {
          const face fc{d, s == 0 ? side::low : side::high};
          const boundary_face<T, D> bf{f, b, fc, cells, nullptr};
          if (on_device)
            device.callbacks.push_back({d, [fn = r->fn, bface = bf](stream_t on) mutable {
                                          bface.stream = on;
                                          fn(bface);
                                        }});
          else
            out.push_back([fn = r->fn, bf] { fn(bf); });
          continue;
        }
        boundary_copy<T, D> op = compile_fill<T, D>(*r, f, b, d, s, cells, st, rank, label);
        if (on_device)
          device.fills.push_back(device_fill(op, d, device.data));
        else
          out.push_back([op = std::move(op)] { op.run(); });
      }
    }
  return out;
}

}  // namespace detail
}  // namespace halox
