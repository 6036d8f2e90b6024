#pragma once
// The DLPack ABI (version 0.x, unversioned `dltensor` capsules), as the exchange protocol
// defines it: the structs a producer hands out in a PyCapsule named "dltensor". Declared here
// from the specification (dmlc/dlpack, include/dlpack/dlpack.h) so that halox needs no DLPack
// package; the layout is a stable C ABI.

#include <cstdint>

namespace halox::python::dlpack {

enum device_type : std::int32_t {
  cpu = 1,
  cuda = 2,
  cuda_host = 3,  // pinned host memory
  cuda_managed = 13,
};

enum type_code : std::uint8_t {
  int_ = 0,
  uint_ = 1,
  float_ = 2,
  complex_ = 5,
  bool_ = 6,
};

struct device {
  std::int32_t type;
  std::int32_t id;
};

struct data_type {
  std::uint8_t code;
  std::uint8_t bits;
  std::uint16_t lanes;
};

struct tensor {
  void* data;
  device dev;
  std::int32_t ndim;
  data_type dtype;
  std::int64_t* shape;
  std::int64_t* strides;  // elements; null: compact row-major
  std::uint64_t byte_offset;
};

struct managed_tensor {
  tensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(managed_tensor* self);
};

inline constexpr const char* capsule_name = "dltensor";
inline constexpr const char* used_capsule_name = "used_dltensor";

}  // namespace halox::python::dlpack
