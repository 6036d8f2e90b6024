#pragma once
/// @file
/// Fields: typed handles to halo-padded arrays, owned by halox or wrapping user memory.

#include <array>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "halox/core/box.hpp"
#include "halox/core/error.hpp"
#include "halox/core/scalar.hpp"
#include "halox/field/centering.hpp"
#include "halox/field/memory.hpp"

namespace halox {

/// Order of the spatial dimensions in memory.
enum class layout {
  row_major,    ///< the last dimension varies fastest (C arrays `a[x][y][z]`)
  column_major  ///< the first dimension varies fastest (Fortran arrays `a(x,y,z)`)
};

/// Placement of a cell's components.
enum class components_layout {
  interleaved,  ///< the components of one cell are adjacent (`[cell][component]`)
  planar        ///< each component is a separate array (`[component][cell]`)
};

/// How a field is laid out, named and centred. Defaults: one component, row-major, cells.
struct field_options {
  int components = 1;
  components_layout component_layout = components_layout::interleaved;
  layout order = layout::row_major;
  std::string name;                  ///< used in error messages; "(unnamed)" when empty
  centering at = centering::cell();  ///< where the values live (docs/staggered.md)
  /// Staggered fields: whether the owner overwrites the points blocks share, or each block
  /// keeps its own copy (docs/staggered.md). No effect on cell-centred fields.
  shared_points shared = shared_points::owner_overwrites;
};

namespace detail {

/// The memory of one field on one owned box, type-erased. Element (cell g, component c) lives
/// at `data + elem_bytes * (sum_i (g[i] - origin[i]) * stride[i] + c * comp_stride)`.
template <int D>
struct block_memory {
  std::byte* data = nullptr;
  box<D> owned;         ///< the points this block stores, halo excluded (global indices)
  box<D> own;           ///< the points it owns: `owned` less points shared with a higher box
  extents<D> pad_lo{};  ///< halo padding below the owned box
  extents<D> pad_hi{};  ///< halo padding above the owned box
  extents<D> stride{};  ///< elements between neighbouring cells, per dimension
  index comp_stride = 1;

  extents<D> origin() const {
    extents<D> o{};
    for (int i = 0; i < D; ++i) o[i] = owned.lo[i] - pad_lo[i];
    return o;
  }
  /// The owned box plus its padding.
  box<D> allocated() const { return grow(owned, pad_lo, pad_hi); }
  index offset(const extents<D>& g, int c) const {
    index off = c * comp_stride;
    for (int i = 0; i < D; ++i) off += (g[i] - owned.lo[i] + pad_lo[i]) * stride[i];
    return off;
  }
};

/// What every field shares, whatever its value type.
template <int D>
struct field_state {
  std::uint64_t domain_id = 0;
  memory_space space = memory_space::host;
  std::size_t elem_bytes = 0;
  scalar_kind kind = scalar_kind::other;  ///< the value type as data
  const char* type_name = nullptr;        ///< its compiler name where `kind` is `other`
  int components = 1;
  std::string name;
  centering at;                                            ///< where the values live
  shared_points shared = shared_points::owner_overwrites;  ///< who writes shared points
  point_grid<D> points;                                    ///< `at` resolved against the domain
  std::vector<block_memory<D>> blocks;  ///< one per owned box of this rank, in domain order
  std::shared_ptr<std::byte> storage;   ///< owned memory, null for wrapped user memory
};

/// Bytes of a dense block of `components` values of `elem_bytes` bytes per cell of the owned
/// box plus padding. Throws halox::error, naming the rank, the field and the sizes, when that
/// does not fit in an `index`; then every element count, stride and byte offset fits too.
template <int D>
index dense_bytes(const block_memory<D>& m, int components, std::size_t elem_bytes, int rank,
                  const std::string& name);
/// Bytes from a strided block's first element to the end of its last (user-given strides);
/// throws halox::error, as dense_bytes does, when that does not fit in an `index`.
template <int D>
index strided_bytes(const block_memory<D>& m, int components, std::size_t elem_bytes, int rank,
                    const std::string& name);
/// Strides of a dense array with `alloc` cells per dimension (call dense_bytes first).
template <int D>
void dense_strides(const extents<D>& alloc, const field_options& o, block_memory<D>& b);

}  // namespace detail

/// A handle to a halo-padded array of `T` on every box a rank owns. Copies share the data.
///
/// Build one with a domain's `make_field<T>()` (halox owns the memory, padding sized for a
/// stencil) or `wrap<T>()` (your memory, your layout). Indices are global cell coordinates;
/// halo cells lie outside the owned box.
template <class T, int D>
class field {
  static_assert(std::is_trivially_copyable_v<T>, "halox fields hold trivially copyable values");

 public:
  using value_type = T;
  static constexpr int dimension = D;

  field() = default;
  explicit field(std::shared_ptr<detail::field_state<D>> s) : s_(std::move(s)) {}

  /// Number of owned boxes (blocks) on this rank.
  int block_count() const { return int(s_->blocks.size()); }
  /// The points block `b` stores, halo excluded: its owned cells, or for a staggered field
  /// every point of them (one more along each staggered dimension, the point shared with the
  /// next box included).
  const box<D>& owned_box(int b = 0) const { return s_->blocks.at(b).owned; }
  /// The points block `b` owns: owned_box() less the points it shares with a higher box (their
  /// owner is that box; the exchange overwrites these copies unless the field keeps them,
  /// shared_points::keep). Equal to owned_box() for cells.
  const box<D>& owned_points(int b = 0) const { return s_->blocks.at(b).own; }
  /// Where the values live.
  const centering& where() const { return s_->at; }
  /// Who writes the points this field's blocks share (field_options::shared).
  shared_points shared() const { return s_->shared; }
  /// The owned box of block `b` plus its halo padding.
  box<D> allocated_box(int b = 0) const { return s_->blocks.at(b).allocated(); }
  int components() const { return s_->components; }
  memory_space space() const { return s_->space; }
  const std::string& name() const { return s_->name; }
  /// Element strides of block `b`, per dimension, and between components.
  const extents<D>& strides(int b = 0) const { return s_->blocks.at(b).stride; }
  index component_stride(int b = 0) const { return s_->blocks.at(b).comp_stride; }

  /// Pointer to the first allocated element of block `b` (lowest halo corner, component 0).
  T* data(int b = 0) const { return reinterpret_cast<T*>(s_->blocks.at(b).data); }
  /// Pointer to the element of global cell `g`, component `c`, of block `b`.
  T* pointer(const extents<D>& g, int c = 0, int b = 0) const {
    return data(b) + s_->blocks[b].offset(g, c);
  }
  /// Element at global cell `g`, component `c`, of block `b` (host fields only).
  T& at(const extents<D>& g, int c = 0, int b = 0) const { return *pointer(g, c, b); }
  /// Element at global cell (i, j, ...), component 0, of the first block.
  template <class... I>
  requires(sizeof...(I) == D) T& operator()(I... i) const { return at(extents<D>{index(i)...}); }

  /// The type-erased state, for halox internals.
  const std::shared_ptr<detail::field_state<D>>& state() const { return s_; }

 private:
  std::shared_ptr<detail::field_state<D>> s_;
};

}  // namespace halox
