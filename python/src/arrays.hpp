#pragma once
// The user's arrays as halox sees them, without copies: host arrays through the buffer
// protocol (NumPy and anything else that exports one) or DLPack, device arrays through
// __cuda_array_interface__ or DLPack. And the arrays halox hands out: NumPy arrays over owned
// host memory, DeviceArray over owned device memory (exporting both device protocols).

#include <pybind11/pybind11.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <halox/core/index.hpp>
#include <halox/field/memory.hpp>

#include "common.hpp"

namespace halox::python {

/// One array: where its elements are, their type, and its shape and strides (in bytes).
struct array_view {
  std::byte* data = nullptr;
  dtype type = dtype::float64;
  std::vector<index> shape;
  std::vector<index> strides;  ///< bytes
  memory_space space = memory_space::host;
  int device = -1;    ///< CUDA device of device memory (-1: unknown or host)
  py::object keep;    ///< keeps the memory alive (the source, or what owns a DLPack tensor)
  py::object source;  ///< the object the user gave

  int ndim() const { return int(shape.size()); }
  /// "3x4" and strides "32,8" for messages.
  std::string shape_text() const;
};

/// The array `obj` as a view: `__cuda_array_interface__` first, then the buffer protocol,
/// then `__dlpack__`. Throws halox::error (naming `what`) where `obj` exports none of them, or
/// is read-only, or has an element type halox does not support. `rank` for messages.
array_view view_of(py::handle obj, const std::string& what, int rank);

/// Whether `obj` looks like an array halox can take (has one of the protocols).
bool is_array_like(py::handle obj);

/// The memory of a field halox made for Python: what its arrays point into. NumPy arrays and
/// DeviceArrays over it keep it alive; make_exchange recognises them and uses the field as made.
struct owned_field {
  dtype type = dtype::float64;
  int dim = 0;                  ///< spatial dimensions; 0: an entity field
  std::shared_ptr<void> state;  ///< detail::field_state<dim> or detail::entity_field_state
};

/// Device memory owned by halox (a field's storage), shown as a strided array of `type`:
/// exports `__cuda_array_interface__` (version 3) and `__dlpack__`, so CuPy, Numba, PyTorch and
/// JAX take it without a copy. Keeps the memory alive while it or any consumer holds it.
class device_array {
 public:
  /// `keep` keeps the memory alive; `field`, where the memory is an owned field's, names it.
  device_array(std::shared_ptr<void> keep, std::shared_ptr<owned_field> field, std::byte* data,
               dtype type, std::vector<index> shape, std::vector<index> strides, int device);

  std::byte* data() const { return data_; }
  dtype type() const { return type_; }
  const std::vector<index>& shape() const { return shape_; }
  const std::vector<index>& strides() const { return strides_; }
  int device() const { return device_; }
  /// Bytes from the first element to the end of the last (the array's memory is this span).
  std::size_t span_bytes() const;
  const std::shared_ptr<owned_field>& field() const { return field_; }

  py::dict cuda_array_interface() const;
  py::capsule dlpack(py::handle stream) const;
  py::tuple dlpack_device() const;

 private:
  std::shared_ptr<void> keep_;
  std::shared_ptr<owned_field> field_;
  std::byte* data_;
  dtype type_;
  std::vector<index> shape_, strides_;
  int device_;
};

/// The arrays of a halox-owned field with any number of blocks (a BoxList rank may own none):
/// Python's FieldBlocks, a sequence of the blocks' arrays that remembers the field they belong
/// to, so that make_exchange knows its type and components even where it has no block.
struct py_blocks {
  std::shared_ptr<owned_field> field;
  py::list arrays;
};

/// A NumPy array over the host memory of `field` (kept alive by the array's base object).
py::object numpy_array(std::shared_ptr<owned_field> field, std::byte* data, dtype type,
                       const std::vector<index>& shape, const std::vector<index>& strides);

/// The owned field behind `obj` where it is an array halox made (a NumPy array over owned
/// memory, or a DeviceArray over a field), else null.
std::shared_ptr<owned_field> owner_of(py::handle obj);

void bind_arrays(py::module_& m);

}  // namespace halox::python
