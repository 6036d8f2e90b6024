#pragma once
/// @file
/// The physical boundary rules of device fields, compiled: fills that halox's kernels run after
/// the unpack, and user callbacks. Plain data, C++17: the CUDA seam (boundary/device_boundary)
/// reads it.

#include <array>
#include <cstddef>
#include <functional>
#include <vector>

#include "halox/core/index.hpp"
#include "halox/core/stream.hpp"
#include "program/ops.hpp"

namespace halox::detail {

/// One built-in rule on one block of a device field: `count[0] x ... x count[ndims-1]` elements
/// of `elem` bytes written at `dst` (byte strides `dst_stride`), each read from `src` (byte
/// strides `src_stride`) or, where `src` is null, the constant at byte `constant` of the fill
/// data. Loop `comp_loop` runs over the components; with `has_signs`, component c is multiplied
/// by the value of type code `type` (device_type_code) at byte `signs + c * elem` of the fill
/// data. `word` (a power of two up to 8 dividing `elem` and the value type's alignment) is the
/// width of the loads and stores of a plain copy. No fill reads what it writes, so its elements
/// may be written in any order.
struct fill_op {
  std::byte* dst = nullptr;
  const std::byte* src = nullptr;
  int dim = 0;  ///< the dimension of the face: fills run dimension by dimension
  int ndims = 0;
  int comp_loop = 0;
  std::size_t elem = 0;
  std::size_t word = 1;
  int type = 0;
  bool has_signs = false;
  std::size_t constant = 0;
  std::size_t signs = 0;
  std::array<index, max_copy_dims> count{};
  std::array<index, max_copy_dims> dst_stride{};
  std::array<index, max_copy_dims> src_stride{};
};

/// A user callback on one block and face of a device field, given the stream it must order its
/// work on (see boundary_face::stream).
struct device_callback {
  int dim = 0;
  std::function<void(stream_t)> fn;
};

/// Every device field's boundary rules of one exchange, prepared at set-up.
struct device_rules {
  std::vector<fill_op> fills;              ///< built-in rules, dimension order within a field
  std::vector<std::byte> data;             ///< the constants and signs fills point into
  std::vector<device_callback> callbacks;  ///< dimension order within a field, low before high

  bool empty() const { return fills.empty() && callbacks.empty(); }
};

}  // namespace halox::detail
