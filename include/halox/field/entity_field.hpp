#pragma once
/// @file
/// Entity fields: values over the entities (cells, vertices, graph nodes) of an unstructured
/// pattern, owned entities and ghosts together, in the user's local order.

#include <memory>
#include <string>
#include <type_traits>

#include "halox/core/box.hpp"
#include "halox/core/error.hpp"
#include "halox/core/scalar.hpp"
#include "halox/field/memory.hpp"

namespace halox {

/// Placement of an entity's components.
enum class entity_layout {
  entity_major,    ///< `[entity][component]`: an entity's components are adjacent
  component_major  ///< `[component][entity]`: one array per component
};

namespace detail {
/// What every entity field shares, whatever its value type.
struct entity_field_state {
  std::uint64_t domain_id = 0;
  memory_space space = memory_space::host;
  std::size_t elem_bytes = 0;
  scalar_kind kind = scalar_kind::other;  ///< the value type as data
  const char* type_name = nullptr;        ///< its compiler name where `kind` is `other`
  int components = 1;
  index count = 0;          ///< local entities (owned and ghosts)
  index entity_stride = 1;  ///< elements between consecutive entities
  index comp_stride = 1;    ///< elements between components of one entity
  std::byte* data = nullptr;
  std::string name;
  std::shared_ptr<std::byte> storage;  ///< owned memory, null for wrapped user memory
};
}  // namespace detail

/// A handle to `count × components` values of `T` over a pattern's local entities. Copies share
/// the data. Make one with `unstructured::make_field<T>()` or `unstructured::wrap<T>()`.
template <class T>
class entity_field {
  static_assert(std::is_trivially_copyable_v<T>, "halox fields hold trivially copyable values");

 public:
  using value_type = T;
  entity_field() = default;
  explicit entity_field(std::shared_ptr<detail::entity_field_state> s) : s_(std::move(s)) {}

  index size() const { return s_->count; }
  int components() const { return s_->components; }
  memory_space space() const { return s_->space; }
  const std::string& name() const { return s_->name; }
  T* data() const { return reinterpret_cast<T*>(s_->data); }
  /// Value of local entity `e`, component `c` (host fields only).
  T& operator()(index e, int c = 0) const {
    return data()[e * s_->entity_stride + c * s_->comp_stride];
  }

  const std::shared_ptr<detail::entity_field_state>& state() const { return s_; }

 private:
  std::shared_ptr<detail::entity_field_state> s_;
};

}  // namespace halox
