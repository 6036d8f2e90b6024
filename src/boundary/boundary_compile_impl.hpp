#pragma once
// Physical boundary rules compiled at set-up: checks, host fills, device fills and callbacks
// (instantiated per dimension by src/exchange/build_<D>d.cpp).

#include "boundary/boundary_compile.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "core/scalar.hpp"

namespace halox::detail {
namespace {

/// One built-in rule on one block of a host field: `count` elements (components last) written
/// at `dst`, each read from `src` or, where `src` is null, `value`; strides in bytes. With
/// `sign`, component c is multiplied by the value at `sign[c * elem]`.
template <int D>
struct host_fill {
  std::byte* dst = nullptr;
  const std::byte* src = nullptr;
  std::vector<std::byte> value, sign;
  std::size_t elem = 0;
  std::array<index, D + 1> count{}, dst_stride{}, src_stride{};
  void (*run)(const host_fill&) = nullptr;
};

/// Calls `put(dst, src)` for every element of `f`, in row-major order, components innermost.
template <int D, class Put>
void each_element(const host_fill<D>& f, Put&& put) {
  std::array<index, D + 1> k{};
  for (int i = 0; i <= D; ++i)
    if (f.count[i] <= 0) return;
  for (;;) {
    index od = 0, os = 0;
    for (int i = 0; i < D; ++i) od += k[i] * f.dst_stride[i], os += k[i] * f.src_stride[i];
    for (index c = 0; c < f.count[D]; ++c)
      put(f.dst + od + c * f.dst_stride[D],
          f.src ? f.src + os + c * f.src_stride[D] : f.value.data(), c);
    int i = D - 1;
    while (i >= 0 && ++k[i] == f.count[i]) k[i] = 0, --i;
    if (i < 0) return;
  }
}

template <class T, int D>
void run_typed(const host_fill<D>& f) {
  each_element<D>(f, [&](std::byte* d, const std::byte* s, index c) {
    T v;
    std::memcpy(&v, s, sizeof(T));
    if (!f.sign.empty()) {
      T m;
      std::memcpy(&m, f.sign.data() + std::size_t(c) * sizeof(T), sizeof(T));
      v = T(v * m);
    }
    std::memcpy(d, &v, sizeof(T));
  });
}

template <int D>
void run_bytes(const host_fill<D>& f) {
  each_element<D>(f, [&](std::byte* d, const std::byte* s, index) { std::memcpy(d, s, f.elem); });
}

std::size_t append_fill_data(std::vector<std::byte>& data, const void* p, std::size_t n) {
  const std::size_t at = (data.size() + 15) / 16 * 16;
  data.resize(at + n);
  std::memcpy(data.data() + at, p, n);
  return at;
}

/// The widest power of two up to 8 that divides `elem` and every address the fill touches.
template <int D>
std::size_t word_of(const host_fill<D>& op) {
  auto bits = std::uintptr_t(op.dst) | std::uintptr_t(op.src) | std::uintptr_t(op.elem);
  std::size_t w = 8;
  while (w > 1 && (bits & (w - 1)) != 0) w /= 2;
  return w;
}

template <int D>
fill_op device_fill(const host_fill<D>& op, int dim, scalar_kind kind,
                    std::vector<std::byte>& data) {
  fill_op f;
  f.dst = op.dst;
  f.src = op.src;
  f.dim = dim;
  f.ndims = D + 1;
  f.comp_loop = D;
  f.elem = op.elem;
  f.word = word_of(op);
  f.type = device_type_code(kind);
  for (int i = 0; i <= D; ++i) {
    f.count[std::size_t(i)] = op.count[std::size_t(i)];
    f.dst_stride[std::size_t(i)] = op.dst_stride[std::size_t(i)];
    f.src_stride[std::size_t(i)] = op.src_stride[std::size_t(i)];
  }
  if (!op.src) f.constant = append_fill_data(data, op.value.data(), op.elem);
  if (!op.sign.empty()) {
    f.has_signs = true;
    f.signs = append_fill_data(data, op.sign.data(), op.sign.size());
  }
  return f;
}

/// The name of a rule that reads cells, for messages.
inline const char* kind_name(boundary_kind k) {
  switch (k) {
    case boundary_kind::reflect:
      return "reflect";
    case boundary_kind::mirror:
      return "mirror";
    default:
      return "zero gradient";
  }
}

/// The rule of each face of field #k, labelled `label` (the last rule given for a face wins;
/// null where a face has none), each checked against the field and the domain (`per` its
/// periodicity). Throws halox::error naming the rank, the field and the face.
template <int D>
std::array<std::array<const face_rule<D>*, 2>, D> face_rules(const std::vector<face_rule<D>>& rules,
                                                             const field_state<D>& f,
                                                             const std::array<bool, D>& per,
                                                             int rank, const std::string& label) {
  const bool on_device = f.space == memory_space::device;
  std::array<std::array<const face_rule<D>*, 2>, D> at{};
  for (const auto& r : rules) {
    const face& fc = r.face;
    require(fc.dim >= 0 && fc.dim < D,
            "rank {}: {}: boundary rule for dimension {} of a {}-D field", rank, label, fc.dim, D);
    require(!per[std::size_t(fc.dim)],
            "rank {}: {}: boundary rule on the {} face of dimension {}, which is periodic (the "
            "exchange fills periodic halos); make the dimension non-periodic or drop the rule",
            rank, label, to_string(fc.at), fc.dim);
    require(
        r.kind != boundary_kind::constant || r.value.size() == f.elem_bytes,
        "rank {}: {}: constant on the {} face of dimension {} has {} byte(s), the value type {}",
        rank, label, to_string(fc.at), fc.dim, r.value.size(), f.elem_bytes);
    if (r.kind == boundary_kind::reflect || r.kind == boundary_kind::mirror) {
      const char* name = kind_name(r.kind);
      require(r.sign_count == 0 || int(r.sign_count) == f.components,
              "rank {}: {}: {} on the {} face of dimension {} has {} sign(s) but the field "
              "has {} component(s)",
              rank, label, name, to_string(fc.at), fc.dim, r.sign_count, f.components);
      require(r.signs.size() == r.sign_count * f.elem_bytes,
              "rank {}: {}: {} on the {} face of dimension {} has {} byte(s) of signs, not "
              "{} value(s) of {} byte(s)",
              rank, label, name, to_string(fc.at), fc.dim, r.signs.size(), r.sign_count,
              f.elem_bytes);
      require(r.sign_count == 0 || arithmetic(f.kind),
              "rank {}: {}: {} with signs needs an arithmetic value type", rank, label, name);
      require(r.sign_count == 0 || !on_device || device_type_code(f.kind) != 0,
              "rank {}: {}: {} with signs on a device field supports double, float and "
              "32/64-bit integers",
              rank, label, name);
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
template <int D>
host_fill<D> compile_fill(const face_rule<D>& r, const field_state<D>& f, int b, int d, int s,
                          const box<D>& cells, const stencil<D>& st, int rank,
                          const std::string& label) {
  const extents<D> n = f.points.global().hi;  // points (cells for a cell field)
  const auto& m = f.blocks[std::size_t(b)];
  const box<D> exchanged = grow(m.owned, st.lo, st.hi);
  const auto elem = index(f.elem_bytes);
  host_fill<D> op;
  op.elem = f.elem_bytes;
  op.run = with_scalar(f.kind, []<class T>() {
    if constexpr (std::is_arithmetic_v<T>)
      return &run_typed<T, D>;
    else
      return &run_bytes<D>;
  });
  op.dst = m.data + m.offset(cells.lo, 0) * elem;
  for (int i = 0; i < D; ++i)
    op.count[i] = cells.hi[i] - cells.lo[i], op.dst_stride[i] = m.stride[i] * elem;
  op.count[D] = f.components;
  op.dst_stride[D] = op.src_stride[D] = m.comp_stride * elem;
  op.value = r.value;
  if (r.kind == boundary_kind::constant) return op;
  // The cell read for the first cell written, and how the read moves along d.
  extents<D> from = cells.lo;
  index first = 0, last = 0;  // the range of d read
  if (r.kind == boundary_kind::zero_gradient) {
    from[d] = first = last = s == 0 ? 0 : n[d] - 1;
  } else {
    // reflect: cells mirror about the face (g -> -1 - g). mirror: cells about the boundary
    // cell's centre (g -> -g). Both: points about the boundary point on the face (g -> -g),
    // which the rule leaves as it is.
    const index cell_mirror =
        r.kind == boundary_kind::reflect && !f.points.stagger[std::size_t(d)] ? 1 : 0;
    auto mirror = [&](index g) {
      return s == 0 ? -cell_mirror - g : 2 * n[d] - 2 + cell_mirror - g;
    };
    from[d] = last = mirror(cells.lo[d]);
    first = mirror(cells.hi[d] - 1);
    op.sign = r.signs;
  }
  require(
      first >= std::max<index>(0, exchanged.lo[d]) && last < std::min<index>(n[d], exchanged.hi[d]),
      "rank {}: {}: {} on the {} face of dimension {} reads cells {}..{} along it, "
      "outside the global box or beyond block {}'s owned box {} and stencil halo "
      "{}/{}; use a narrower halo on that face or larger boxes",
      rank, label, kind_name(r.kind), to_string(s == 0 ? side::low : side::high), d, first, last, b,
      to_string(m.owned), st.lo[d], st.hi[d]);
  op.src = m.data + m.offset(from, 0) * elem;
  for (int i = 0; i < D; ++i) op.src_stride[i] = m.stride[i] * elem;
  op.src_stride[d] = r.kind == boundary_kind::zero_gradient ? 0 : -m.stride[d] * elem;
  return op;
}

/// The halo cells of block `m` beyond side `s` of dimension `d` (`n`: the global points).
template <int D>
box<D> beyond_face(const block_memory<D>& m, const stencil<D>& st, const extents<D>& n, int d,
                   int s) {
  box<D> cells = grow(m.owned, st.lo, st.hi);
  if (s == 0)
    cells.hi[d] = std::min<index>(cells.hi[d], 0);
  else
    cells.lo[d] = std::max<index>(cells.lo[d], n[d]);
  return cells;
}

}  // namespace

template <int D>
std::vector<std::function<void()>> compile_boundary(const std::vector<face_rule<D>>& rules,
                                                    const field_state<D>& f, const stencil<D>& st,
                                                    const std::array<bool, D>& per, int rank, int k,
                                                    device_rules& device) {
  std::vector<std::function<void()>> out;
  if (rules.empty()) return out;
  const extents<D> n = f.points.global().hi;  // points (cells for a cell field)
  const auto label = format("field #{} '{}'", k, f.name);
  const bool on_device = f.space == memory_space::device;
  const auto at = face_rules<D>(rules, f, per, rank, label);
  for (int d = 0; d < D; ++d)
    for (int s = 0; s < 2; ++s) {
      const auto* r = at[std::size_t(d)][std::size_t(s)];
      if (!r || r->kind == boundary_kind::none) continue;
      for (int b = 0; b < int(f.blocks.size()); ++b) {
        const box<D> cells = beyond_face<D>(f.blocks[std::size_t(b)], st, n, d, s);
        if (cells.empty()) continue;
        if (r->kind == boundary_kind::callback) {
          if (on_device)
            device.callbacks.push_back(
                {d, [fn = r->fn, b, cells](stream_t on) { fn(b, cells, on); }});
          else
            out.push_back([fn = r->fn, b, cells] { fn(b, cells, nullptr); });
          continue;
        }
        auto op = compile_fill<D>(*r, f, b, d, s, cells, st, rank, label);
        if (on_device)
          device.fills.push_back(device_fill<D>(op, d, f.kind, device.data));
        else
          out.push_back([op = std::move(op)] { op.run(op); });
      }
    }
  return out;
}

#define HALOX_BOUNDARY(D)                                                         \
  template std::vector<std::function<void()>> compile_boundary<D>(                \
      const std::vector<face_rule<D>>&, const field_state<D>&, const stencil<D>&, \
      const std::array<bool, D>&, int, int, device_rules&);

}  // namespace halox::detail
