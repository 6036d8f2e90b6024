#pragma once
/// @file
/// What every structured domain offers: periodicity, identity, and field creation.

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

#include <boost/mpi/communicator.hpp>

#include "halox/comm/agree.hpp"
#include "halox/comm/settings_agreement.hpp"
#include "halox/core/box.hpp"
#include "halox/core/error.hpp"
#include "halox/field/field.hpp"
#include "halox/pattern/stencil.hpp"

namespace halox {

/// Periodicity per dimension: `halox::periodic{true, false, true}`.
template <int D>
struct periodic {
  std::array<bool, D> flags{};
  constexpr periodic() = default;
  template <class... B>
  requires(sizeof...(B) == D && (std::is_convertible_v<B, bool> && ...)) constexpr periodic(B... b)
      : flags{static_cast<bool>(b)...} {}
  constexpr bool operator[](int i) const { return flags[i]; }
  /// Periodic in every dimension.
  static constexpr periodic all() {
    periodic p;
    for (auto& f : p.flags) f = true;
    return p;
  }
  friend constexpr bool operator==(const periodic&, const periodic&) = default;
};
template <class... B>
periodic(B...) -> periodic<int(sizeof...(B))>;

namespace detail {
inline std::uint64_t next_domain_id() {
  static std::atomic<std::uint64_t> counter{0};
  return ++counter;
}
}  // namespace detail

/// What all structured domains share: the communicator, the global box, periodicity,
/// identity, and field creation (`Derived` provides `local_boxes()`).
template <class Derived, int D>
class domain_base {
 public:
  const boost::mpi::communicator& comm() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return comm_.size(); }
  /// Identity shared by copies of this domain; fields remember it.
  std::uint64_t id() const { return id_; }
  /// `[0, n_0) x ... x [0, n_{D-1})`.
  const box<D>& global_box() const { return global_; }
  const periodic<D>& periodicity() const { return per_; }

  /// A field owned by halox with halo padding equal to the stencil's widths, zero-initialised.
  template <class T>
  field<T, D> make_field(const stencil<D>& st, memory_space space = host,
                         int components = 1) const {
    field_options o;
    o.components = components;
    return make_field<T>(st.lo, st.hi, space, o);
  }
  /// A field owned by halox, padded for `st`, with the given layout options.
  template <class T>
  field<T, D> make_field(const stencil<D>& st, memory_space space, field_options o) const {
    return make_field<T>(st.lo, st.hi, space, std::move(o));
  }
  /// A field owned by halox, padded for `st`, centred as `at` (faces, edges, nodes:
  /// docs/staggered.md): `dom.make_field<double>(st, halox::host, halox::centering::face(0))`.
  template <class T>
  field<T, D> make_field(const stencil<D>& st, memory_space space, centering at,
                         int components = 1) const {
    field_options o;
    o.components = components;
    o.at = at;
    return make_field<T>(st.lo, st.hi, space, o);
  }
  /// A field owned by halox with explicit padding below and above the owned box.
  template <class T>
  field<T, D> make_field(const widths<D>& pad_lo, const widths<D>& pad_hi, memory_space space,
                         field_options o) const {
    auto s = new_state<T>(space, o);
    std::vector<std::size_t> offsets;
    index total = 0;  // every block starts on a 64-byte boundary
    for (const auto& b : self().local_boxes()) {
      detail::block_memory<D> m = place(b, *s);
      set_padding(m, pad_lo, pad_hi, *s);
      const index bytes = detail::dense_bytes(m, o.components, sizeof(T), rank(), s->name);
      detail::dense_strides<D>(m.allocated().size(), o, m);
      offsets.push_back(std::size_t(total));
      const auto end = detail::checked_add(detail::checked_add(total, bytes), 63);
      detail::require(end.has_value(),
                      "rank {}: field '{}' needs more than {} bytes for its {} blocks", rank(),
                      s->name, detail::index_max, self().local_boxes().size());
      total = *end / 64 * 64;
      s->blocks.push_back(m);
    }
    s->storage = space == memory_space::host ? detail::allocate_shareable(std::size_t(total))
                                             : detail::allocate(space, std::size_t(total));
    for (std::size_t k = 0; k < s->blocks.size(); ++k)
      s->blocks[k].data = s->storage.get() + offsets[k];
    return field<T, D>(std::move(s));
  }

  /// Wraps your dense array for this rank's single owned box. `alloc` are its extents including
  /// the padding `pad_lo`/`pad_hi`; they must equal the owned box's extents plus the padding.
  template <class T>
  field<T, D> wrap(T* data, const extents<D>& alloc, const widths<D>& pad_lo,
                   const widths<D>& pad_hi, field_options o = {}, memory_space space = host) const {
    const box<D>& b = single_box("wrap");
    auto s = new_state<T>(space, o);
    detail::block_memory<D> m = place(b, *s);
    set_padding(m, pad_lo, pad_hi, *s);
    check_extents(alloc, m, *s, o, -1);
    const index bytes = detail::dense_bytes(m, o.components, sizeof(T), rank(), s->name);
    detail::dense_strides<D>(alloc, o, m);
    m.data = reinterpret_cast<std::byte*>(check_pointer(data, bytes, *s, -1));
    s->blocks.push_back(m);
    return field<T, D>(std::move(s));
  }

  /// Wraps your array with explicit element strides (per dimension and between components).
  template <class T>
  field<T, D> wrap_strided(T* data, const widths<D>& pad_lo, const widths<D>& pad_hi,
                           const extents<D>& strides, index component_stride, field_options o = {},
                           memory_space space = host) const {
    const box<D>& b = single_box("wrap_strided");
    auto s = new_state<T>(space, o);
    detail::block_memory<D> m = place(b, *s);
    set_padding(m, pad_lo, pad_hi, *s);
    for (int i = 0; i < D; ++i)
      detail::require(strides[i] > 0, "rank {}: field '{}' has stride {} in dimension {}", rank(),
                      s->name, strides[i], i);
    detail::require(o.components == 1 || component_stride > 0,
                    "rank {}: field '{}' has component stride {}", rank(), s->name,
                    component_stride);
    m.stride = strides;
    m.comp_stride = component_stride;
    const index bytes = detail::strided_bytes(m, o.components, sizeof(T), rank(), s->name);
    m.data = reinterpret_cast<std::byte*>(check_pointer(data, bytes, *s, -1));
    s->blocks.push_back(m);
    return field<T, D>(std::move(s));
  }

  /// Wraps one dense array per owned box (in `local_boxes()` order), each padded alike;
  /// `alloc[k]` are block k's extents including the padding, checked as the single-array
  /// `wrap` checks them.
  template <class T>
  field<T, D> wrap(std::span<T* const> blocks, std::span<const extents<D>> alloc,
                   const widths<D>& pad_lo, const widths<D>& pad_hi, field_options o = {},
                   memory_space space = host) const {
    const auto& boxes = self().local_boxes();
    auto s = new_state<T>(space, o);
    detail::require(
        blocks.size() == boxes.size() && alloc.size() == boxes.size(),
        "rank {}: field '{}' wraps {} arrays with {} extents but the rank owns {} boxes", rank(),
        s->name, blocks.size(), alloc.size(), boxes.size());
    for (std::size_t k = 0; k < boxes.size(); ++k) {
      detail::block_memory<D> m = place(boxes[k], *s);
      set_padding(m, pad_lo, pad_hi, *s);
      check_extents(alloc[k], m, *s, o, int(k));
      const index bytes = detail::dense_bytes(m, o.components, sizeof(T), rank(), s->name);
      detail::dense_strides<D>(m.allocated().size(), o, m);
      m.data = reinterpret_cast<std::byte*>(check_pointer(blocks[k], bytes, *s, int(k)));
      s->blocks.push_back(m);
    }
    return field<T, D>(std::move(s));
  }
  /// wrap() of a vector of arrays and a vector of their extents.
  template <class T>
  field<T, D> wrap(const std::vector<T*>& blocks, const std::vector<extents<D>>& alloc,
                   const widths<D>& pad_lo, const widths<D>& pad_hi, field_options o = {},
                   memory_space space = host) const {
    return wrap<T>(std::span<T* const>(blocks), std::span<const extents<D>>(alloc), pad_lo, pad_hi,
                   std::move(o), space);
  }

 protected:
  /// Stores the arguments unchecked: the derived constructor calls `agree_and_check`.
  domain_base(const boost::mpi::communicator& comm, const extents<D>& global, periodic<D> per)
      : comm_(comm), per_(per), rank_(comm.rank()), id_(detail::next_domain_id()) {
    global_.hi = global;
  }

  /// Collective over the communicator, called by every derived constructor before it uses its
  /// arguments. First every rank compares the hash of its arguments (type, extents,
  /// periodicity, and what `add(hash)` and `describe(list)` add) with the other ranks'; if they
  /// differ every rank throws the same error naming the first difference. Then every rank runs
  /// the checks of the global box and `checks()`; if one throws on any rank, every rank throws.
  template <class Add, class Describe, class Checks>
  void agree_and_check(const char* type, Add&& add, Describe&& describe, Checks&& checks) const {
    detail::settings_hash h;
    h.add(type);
    h.add(std::uint64_t(D));
    for (int i = 0; i < D; ++i) h.add(std::uint64_t(global_.hi[i])), h.add(per_[i]);
    add(h);
    detail::agree_on_settings(comm_, "domain", h.value(), [&] {
      detail::settings_list l{"type",           detail::format("{}<{}>", type, D),
                              "global extents", detail::format("{}", detail::join(global_.hi, "x")),
                              "periodicity",    detail::format("{}", per_.flags)};
      describe(l);
      return l;
    });
    detail::agree(comm_, [&] {
      check_global_box();
      checks();
    });
  }

  /// Every global extent in [1, max_extent], and a cell count that fits in an index.
  void check_global_box() const {
    for (int i = 0; i < D; ++i) {
      const index n = global_.hi[i];
      detail::require(n > 0, "rank {}: global extent {} in dimension {} must be positive", rank_, n,
                      i);
      detail::require(n <= max_extent,
                      "rank {}: global extent {} in dimension {} exceeds {}, the largest halox "
                      "supports (coordinates plus halo widths must fit in 64 bits)",
                      rank_, n, i, max_extent);
    }
    detail::require(global_.checked_volume().has_value(),
                    "rank {}: the global box {} holds more than {} cells (a 64-bit index cannot "
                    "count them)",
                    rank_, detail::join(global_.hi, "x"), detail::index_max);
  }

  boost::mpi::communicator comm_;
  box<D> global_{};
  periodic<D> per_{};
  int rank_ = 0;
  std::uint64_t id_ = 0;

 private:
  const Derived& self() const { return static_cast<const Derived&>(*this); }

  template <class T>
  std::shared_ptr<detail::field_state<D>> new_state(memory_space space,
                                                    const field_options& o) const {
    auto s = std::make_shared<detail::field_state<D>>();
    s->domain_id = id();
    s->space = space;
    s->elem_bytes = sizeof(T);
    s->kind = scalar_kind_of<T>();
    s->type_name = other_type_name<T>();
    s->components = o.components;
    s->name = o.name.empty() ? "(unnamed)" : o.name;
    s->at = o.at;
    s->shared = o.shared;
    detail::require(o.shared == shared_points::owner_overwrites || o.shared == shared_points::keep,
                    "rank {}: field '{}' has shared_points {}, which is neither owner_overwrites "
                    "nor keep",
                    rank(), s->name, int(o.shared));
    detail::require(o.at.fits(D),
                    "rank {}: field '{}' has centering {}, which names no dimension "
                    "of a {}-D domain",
                    rank(), s->name, to_string(o.at), D);
    s->points = detail::point_grid<D>(o.at, global_.hi, per_.flags);
    detail::require(o.components >= 1, "rank {}: field '{}' needs at least one component, got {}",
                    rank(), s->name, o.components);
    return s;
  }
  void set_padding(detail::block_memory<D>& m, const widths<D>& lo, const widths<D>& hi,
                   const detail::field_state<D>& s) const {
    for (int i = 0; i < D; ++i) {
      detail::require(lo[i] >= 0 && hi[i] >= 0,
                      "rank {}: field '{}' has negative padding {}/{} in dimension {}", rank(),
                      s.name, lo[i], hi[i], i);
      m.pad_lo[i] = lo[i];
      m.pad_hi[i] = hi[i];
    }
  }
  /// A block of cells `b` as field `s` stores it: its points, and the points it owns.
  detail::block_memory<D> place(const box<D>& b, const detail::field_state<D>& s) const {
    detail::block_memory<D> m;
    m.owned = s.points.stored(b);
    m.own = s.points.owned(b);
    return m;
  }
  /// `p` as the memory of block `k` (-1: the only one) of `s`, `bytes` long: not null, and in
  /// the field's memory space as far as CUDA can tell.
  template <class T>
  T* check_pointer(T* p, index bytes, const detail::field_state<D>& s, int k) const {
    const std::string block = k < 0 ? std::string() : detail::format(" block {}", k);
    detail::require(p != nullptr, "rank {}: field '{}'{} wraps a null pointer", rank(), s.name,
                    block);
    const std::string why = detail::memory_problem(p, std::size_t(bytes), s.space);
    detail::require(why.empty(), "rank {}: field '{}'{} wraps {} bytes: {}", rank(), s.name, block,
                    bytes, why);
    return p;
  }
  /// Block `k` (-1: the only one) of `s` given with extents `alloc` (padding included).
  void check_extents(const extents<D>& alloc, const detail::block_memory<D>& m,
                     const detail::field_state<D>& s, const field_options& o, int k) const {
    const extents<D> want = m.allocated().size();
    detail::require(alloc == want,
                    "rank {}: field '{}'{} has extents {} but the owned box {} ({}-centred) with "
                    "padding {}/{} needs {}",
                    rank(), s.name, k < 0 ? std::string() : detail::format(" block {}", k),
                    detail::join(alloc, "x"), to_string(m.owned), to_string(o.at),
                    detail::join(m.pad_lo, ","), detail::join(m.pad_hi, ","),
                    detail::join(want, "x"));
  }
  const box<D>& single_box(const char* what) const {
    const auto& boxes = self().local_boxes();
    detail::require(boxes.size() == 1,
                    "rank {}: {}(pointer, ...) needs a rank that owns one box, this one owns {}; "
                    "wrap one array per box instead",
                    rank(), what, boxes.size());
    return boxes[0];
  }
};

}  // namespace halox
