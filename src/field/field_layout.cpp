// Sizes and strides of field blocks (halox/field/field.hpp), compiled once for 1-4 dimensions.

#include <optional>
#include <string>

#include "halox/field/field.hpp"

namespace halox::detail {

// Bytes of a dense block of `components` values of `elem_bytes` bytes per cell of the owned
// box plus padding. Throws halox::error, naming the rank, the field and the sizes, when that
// does not fit in an `index`; then every element count, stride and byte offset of the block
// fits too.
template <int D>
index dense_bytes(const block_memory<D>& m, int components, std::size_t elem_bytes, int rank,
                  const std::string& name) {
  const box<D> a = m.allocated();
  const auto bytes = checked_mul(checked_mul(a.checked_volume(), components), index(elem_bytes));
  require(bytes.has_value(),
          "rank {}: field '{}' needs {} cells x {} components x {} bytes (the owned box {} with "
          "padding {}/{}), more than {} bytes",
          rank, name, detail::join(a.size(), "x"), components, elem_bytes, to_string(m.owned),
          detail::join(m.pad_lo, ","), detail::join(m.pad_hi, ","), index_max);
  return *bytes;
}

// Bytes from a strided block's first element to the end of its last (user-given strides).
// Throws halox::error, naming the rank, the field and the strides, when that does not fit in
// an `index`; then every byte offset of the block fits too.
template <int D>
index strided_bytes(const block_memory<D>& m, int components, std::size_t elem_bytes, int rank,
                    const std::string& name) {
  const extents<D> n = m.allocated().size();
  std::optional<index> last = checked_mul(components - 1, m.comp_stride);
  for (int i = 0; i < D; ++i) {
    const auto step = checked_mul(n[i] - 1, m.stride[i]);
    last = last && step ? checked_add(*last, *step) : std::nullopt;
  }
  const auto bytes = last ? checked_mul(checked_add(*last, 1), index(elem_bytes)) : std::nullopt;
  require(bytes.has_value(),
          "rank {}: field '{}' with strides {} and component stride {} spans more than {} bytes "
          "over the owned box {} with padding {}/{}",
          rank, name, detail::join(m.stride, ","), m.comp_stride, index_max, to_string(m.owned),
          detail::join(m.pad_lo, ","), detail::join(m.pad_hi, ","));
  return *bytes;
}

// Strides of a dense array with `alloc` cells per dimension and `ncomp` components (call
// dense_bytes first: these products are unchecked).
template <int D>
void dense_strides(const extents<D>& alloc, const field_options& o, block_memory<D>& b) {
  index cells = 1;
  for (int i = 0; i < D; ++i) cells *= alloc[i];
  const bool inter = o.component_layout == components_layout::interleaved;
  index s = inter ? o.components : 1;
  for (int k = 0; k < D; ++k) {
    const int i = o.order == layout::row_major ? D - 1 - k : k;
    b.stride[i] = s;
    s *= alloc[i];
  }
  b.comp_stride = inter ? 1 : cells;
}

#define HALOX_FIELD_LAYOUT(D)                                                    \
  template index dense_bytes<D>(const block_memory<D>&, int, std::size_t, int,   \
                                const std::string&);                             \
  template index strided_bytes<D>(const block_memory<D>&, int, std::size_t, int, \
                                  const std::string&);                           \
  template void dense_strides<D>(const extents<D>&, const field_options&, block_memory<D>&);
HALOX_FIELD_LAYOUT(1)
HALOX_FIELD_LAYOUT(2)
HALOX_FIELD_LAYOUT(3)
HALOX_FIELD_LAYOUT(4)
#undef HALOX_FIELD_LAYOUT

}  // namespace halox::detail
