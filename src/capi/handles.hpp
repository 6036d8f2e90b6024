#pragma once
// What the C interface's opaque handles are (include/halox/halox.h), and `guard`, which turns
// every exception into a status and the calling thread's message.

#include <array>
#include <complex>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include <halox/halox.h>
#include <halox/core/error.hpp>
#include <halox/core/index.hpp>
#include <halox/core/options.hpp>
#include <halox/core/reduction.hpp>
#include <halox/domain/unstructured.hpp>
#include <halox/exchange/halo_exchange.hpp>
#include <halox/field/centering.hpp>
#include <halox/field/field.hpp>

#include <boost/mpi/communicator.hpp>

namespace halox::capi {

inline constexpr int max_dim = 4;

/// A null handle or output pointer: reported by the calling rank alone.
class null_argument : public error {
 public:
  using error::error;
};

/// The calling thread's message of its last failed call.
std::string& last_error();

/// Runs `f`, returning HALOX_SUCCESS, or the status of what it threw with its message kept.
template <class F>
halox_status guard(F&& f) noexcept {
  try {
    f();
    return HALOX_SUCCESS;
  } catch (const null_argument& e) {
    last_error() = e.what();
    return HALOX_ERROR_NULL_ARGUMENT;
  } catch (const error& e) {
    last_error() = e.what();
    return HALOX_ERROR;
  } catch (const std::bad_alloc&) {
    last_error() = "halox: out of memory";
    return HALOX_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    last_error() = std::string("halox: unexpected error: ") + e.what();
    return HALOX_ERROR_INTERNAL;
  } catch (...) {
    last_error() = "halox: unexpected error of unknown type";
    return HALOX_ERROR_INTERNAL;
  }
}

/// `p`, or null_argument naming the call and the argument.
template <class T>
T* need(T* p, const char* call, const char* what) {
  if (p == nullptr) throw null_argument(detail::format("{}: {} is NULL", call, what));
  return p;
}

/// `comm` as halox uses it (attached, not duplicated); MPI_COMM_NULL is a null argument.
boost::mpi::communicator attach(MPI_Comm comm, const char* call);

/// Bytes of one value of `t`, 0 for a value that is no halox_type.
std::size_t type_size(halox_type t);
/// The C name of `t` ("HALOX_FLOAT64"), for messages.
const char* type_name(halox_type t);

/// Calls `f.template operator()<T>()` with the C++ type of `t`; throws for an unknown value.
template <class F>
void with_type(halox_type t, F&& f) {
  switch (t) {
    case HALOX_INT8:
      return f.template operator()<std::int8_t>();
    case HALOX_UINT8:
      return f.template operator()<std::uint8_t>();
    case HALOX_INT16:
      return f.template operator()<std::int16_t>();
    case HALOX_UINT16:
      return f.template operator()<std::uint16_t>();
    case HALOX_INT32:
      return f.template operator()<std::int32_t>();
    case HALOX_UINT32:
      return f.template operator()<std::uint32_t>();
    case HALOX_INT64:
      return f.template operator()<std::int64_t>();
    case HALOX_UINT64:
      return f.template operator()<std::uint64_t>();
    case HALOX_FLOAT32:
      return f.template operator()<float>();
    case HALOX_FLOAT64:
      return f.template operator()<double>();
    case HALOX_COMPLEX64:
      return f.template operator()<std::complex<float>>();
    case HALOX_COMPLEX128:
      return f.template operator()<std::complex<double>>();
  }
  detail::fail("element type {} is no halox_type (HALOX_INT8 ... HALOX_COMPLEX128)", int(t));
}

/// One physical boundary rule as the C interface received it.
struct boundary_spec {
  int dim = 0;
  halox_side side = HALOX_LOW;
  int kind = 0;  ///< halox::boundary_kind as an int
  std::vector<std::byte> value, signs;
  int sign_count = 0;
  halox_boundary_fn fn = nullptr;
  void* user = nullptr;
};

/// Widths per side and the kind of neighbourhood; `invalid` says why it cannot be used.
struct stencil_spec {
  int dim = 0;
  std::array<int, max_dim> lo{}, hi{};
  bool box = false;
};

/// How the domain's typed work (one per domain type and dimension) is reached.
class domain_ops {
 public:
  virtual ~domain_ops() = default;
  virtual int dim() const = 0;
  virtual const boost::mpi::communicator& comm() const = 0;
  virtual int block_count() const = 0;
  virtual void local_box(int block, std::int64_t* lo, std::int64_t* hi) const = 0;
  virtual void grid(int* dims, int* coords) const = 0;
  /// Checks and wraps the fields on every rank together, then builds the exchange: forward
  /// (`reverse_op` -1) or reverse combining with halox_reduction `reverse_op`.
  virtual halo_exchange build(const halox_stencil* st, halox_field* const* fields, int count,
                              const halox_options* options, int reverse_op) const = 0;
};

}  // namespace halox::capi

struct halox_domain {
  std::unique_ptr<halox::capi::domain_ops> ops;
};

struct halox_stencil {
  halox::capi::stencil_spec spec;
};

struct halox_field {
  const halox_domain* domain = nullptr;
  halox_type type = HALOX_FLOAT64;
  std::vector<void*> data;  ///< one pointer per block
  bool per_block = false;   ///< halox_field_wrap_blocks: one extents entry per block
  std::array<halox::index, halox::capi::max_dim> extents{};
  std::vector<std::array<halox::index, halox::capi::max_dim>> block_extents;  ///< per_block
  std::array<int, halox::capi::max_dim> pad_lo{}, pad_hi{};
  halox::field_options options;
  std::optional<std::array<halox::index, halox::capi::max_dim>> strides;
  halox::index component_stride = 1;
  halox::memory_space space = halox::memory_space::host;
  std::optional<halox::capi::stencil_spec> stencil;
  std::vector<halox::capi::boundary_spec> rules;
  std::string invalid;  ///< a bad argument given to a setter: the exchange build reports it
};

struct halox_options {
  halox::exchange_options options;
};

struct halox_exchange {
  halox::halo_exchange ex;
  std::optional<halox::exchange_handle> pending;
  std::string text;
};

struct halox_unstructured {
  halox::unstructured pattern;
};

/// An entity field as the C interface received it: wrapped when an exchange is built.
struct halox_entity_field {
  const halox_unstructured* pattern = nullptr;
  halox_type type = HALOX_FLOAT64;
  void* data = nullptr;
  halox::index count = 0;  ///< entities in the user's array
  int components = 1;
  halox::entity_layout layout = halox::entity_layout::entity_major;
  halox::index component_stride = -1;  ///< planar only; -1: the entity count
  halox::memory_space space = halox::memory_space::host;
  std::string name;
  std::string invalid;  ///< a bad argument given to a setter: the exchange build reports it
};
