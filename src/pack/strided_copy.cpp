#include "pack/strided_copy.hpp"

#include <algorithm>
#include <cstring>

namespace halox::detail {

copy_op make_copy_op(const std::byte* src, std::byte* dst, int ndims, std::size_t elem,
                     const index* count, const index* src_stride, const index* dst_stride,
                     loop_order order) {
  copy_op op;
  op.src = src;
  op.dst = dst;
  op.elem = elem;
  std::array<int, max_copy_dims> dims{};
  int n = 0;
  bool empty = false;
  for (int k = 0; k < ndims; ++k) {
    if (count[k] == 0) empty = true;
    if (count[k] > 1) dims[n++] = k;
  }
  if (empty) return op;  // no dimension, or a count of 0: nothing to copy
  const index* key = order == loop_order::by_src ? src_stride : dst_stride;
  std::stable_sort(dims.begin(), dims.begin() + n, [&](int a, int b) { return key[a] > key[b]; });
  // A single element (all counts 1) is a one-dimensional copy of one element.
  op.ndims = 1;
  op.count[0] = 1;
  op.src_stride[0] = op.dst_stride[0] = index(elem);
  int r = 0;
  for (int j = 0; j < n; ++j) {
    const int k = dims[j];
    if (r > 0) {
      const int prev = r - 1;
      // Merge into the previous (outer) dimension when it steps exactly over this one.
      if (op.src_stride[prev] == count[k] * src_stride[k] &&
          op.dst_stride[prev] == count[k] * dst_stride[k]) {
        op.count[prev] *= count[k];
        op.src_stride[prev] = src_stride[k];
        op.dst_stride[prev] = dst_stride[k];
        continue;
      }
    }
    op.count[r] = count[k];
    op.src_stride[r] = src_stride[k];
    op.dst_stride[r] = dst_stride[k];
    ++r;
  }
  if (r > 0) op.ndims = r;
  return op;
}

namespace {

// Calls row(src, dst) for every innermost row of `op`; the next-to-innermost dimension is a
// plain loop, the rest an odometer.
template <class Row>
inline void for_rows(const copy_op& op, Row&& row) {
  const int outer = op.ndims - 1;
  if (outer == 0) return row(op.src, op.dst);
  const int last = outer - 1;
  const index n = op.count[last], ss = op.src_stride[last], ds = op.dst_stride[last];
  std::array<index, max_copy_dims> i{};
  for (;;) {
    const std::byte* s = op.src;
    std::byte* d = op.dst;
    for (int k = 0; k < last; ++k) s += i[k] * op.src_stride[k], d += i[k] * op.dst_stride[k];
    for (index r = 0; r < n; ++r, s += ss, d += ds) row(s, d);
    int k = last - 1;
    while (k >= 0 && ++i[k] == op.count[k]) i[k] = 0, --k;
    if (k < 0) return;
  }
}

// Contiguous rows of a fixed size: the copy inlines to a few moves.
template <std::size_t B>
inline void rows_fixed(const copy_op& op) {
  for_rows(op, [](const std::byte* s, std::byte* d) { std::memcpy(d, s, B); });
}

// Strided rows of elements of a fixed size.
template <std::size_t E>
inline void rows_strided(const copy_op& op, index n, index ss, index ds) {
  for_rows(op, [=](const std::byte* s, std::byte* d) {
    for (index i = 0; i < n; ++i, s += ss, d += ds) std::memcpy(d, s, E);
  });
}

}  // namespace

void run(const copy_op& op) noexcept {
  if (op.ndims == 0) return;
  const int k = op.ndims - 1;
  const index n = op.count[k], ss = op.src_stride[k], ds = op.dst_stride[k];
  const std::size_t e = op.elem;
  if (op.reduce) {
    return for_rows(op, [&](const std::byte* s, std::byte* d) { op.reduce(d, s, n, ds, ss); });
  }
  if (ss == index(e) && ds == index(e)) {  // contiguous rows
    const std::size_t bytes = std::size_t(n) * e;
    switch (bytes) {
      case 4:
        return rows_fixed<4>(op);
      case 8:
        return rows_fixed<8>(op);
      case 16:
        return rows_fixed<16>(op);
      case 24:
        return rows_fixed<24>(op);
      case 32:
        return rows_fixed<32>(op);
      case 48:
        return rows_fixed<48>(op);
      case 64:
        return rows_fixed<64>(op);
      default:
        return for_rows(op,
                        [bytes](const std::byte* s, std::byte* d) { std::memcpy(d, s, bytes); });
    }
  }
  switch (e) {
    case 1:
      return rows_strided<1>(op, n, ss, ds);
    case 2:
      return rows_strided<2>(op, n, ss, ds);
    case 4:
      return rows_strided<4>(op, n, ss, ds);
    case 8:
      return rows_strided<8>(op, n, ss, ds);
    case 16:
      return rows_strided<16>(op, n, ss, ds);
    default:
      return for_rows(op, [&](const std::byte* s, std::byte* d) {
        for (index i = 0; i < n; ++i, s += ss, d += ds) std::memcpy(d, s, e);
      });
  }
}

void gather(const gather_op& op) noexcept {
  const index row = index(op.elem) * op.ncomp;
  const bool dense = op.comp_stride == index(op.elem);
  std::byte* b = op.buf;
  for (index e = 0; e < op.n; ++e, b += row) {
    const std::byte* f = op.field + op.idx[e] * op.entity_stride;
    if (dense) {
      std::memcpy(b, f, std::size_t(row));
    } else {
      for (int c = 0; c < op.ncomp; ++c)
        std::memcpy(b + c * index(op.elem), f + c * op.comp_stride, op.elem);
    }
  }
}

void scatter(const gather_op& op) noexcept {
  const index row = index(op.elem) * op.ncomp;
  const bool dense = op.comp_stride == index(op.elem);
  const std::byte* b = op.buf;
  for (index e = 0; e < op.n; ++e, b += row) {
    std::byte* f = op.field + op.idx[e] * op.entity_stride;
    if (op.reduce) {
      op.reduce(f, b, op.ncomp, op.comp_stride, index(op.elem));
    } else if (dense) {
      std::memcpy(f, b, std::size_t(row));
    } else {
      for (int c = 0; c < op.ncomp; ++c)
        std::memcpy(f + c * op.comp_stride, b + c * index(op.elem), op.elem);
    }
  }
}

}  // namespace halox::detail
