#pragma once
/// @file
/// Unstructured patterns: each rank names the global ids of the entities it owns and of the
/// ghosts it needs; halox finds the owners and builds per-peer index lists.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <boost/mpi/communicator.hpp>

#include "halox/core/box.hpp"
#include "halox/domain/domain_base.hpp"
#include "halox/field/entity_field.hpp"

namespace halox {

/// Global entity id (64-bit).
using global_id = std::int64_t;

/// Optional parts of an unstructured pattern's declaration.
struct unstructured_options {
  /// Owner rank of each ghost, when the application knows it (skips owner discovery).
  std::span<const int> ghost_owners;
  /// Local index of each owned entity; default: 0, 1, ... (owned entities first).
  std::span<const index> owned_local;
  /// Local index of each ghost; default: after the owned entities, in the order given.
  std::span<const index> ghost_local;
  /// Entities in local arrays; default: owned + ghosts.
  index local_count = -1;
};

/// The local entity indices exchanged with one peer, in the order both sides agree on.
struct index_list {
  int rank = 0;
  std::vector<index> local;
};

/// An unstructured halo pattern.
///
/// ```
/// halox::unstructured pat(world, owned_ids, ghost_ids);  // owners found collectively
/// auto x = pat.make_field<double>(3);                     // [entity][3]
/// auto ex = halox::make_exchange(pat, x);
/// ex.exchange();                                          // ghosts ← owners
/// ```
/// Construction is collective. When owners are not given, a distributed directory finds them:
/// id → directory rank (a hash of the id) → owner, with sparse point-to-point messages, so no
/// rank holds anything proportional to the global entity count or the rank count. Throws
/// halox::error on every rank if any rank's input is wrong: an id listed twice, a ghost id the
/// rank also owns, an id owned by two ranks, a ghost id no rank owns, a given owner that does
/// not own the id, local indices out of range or repeated.
class unstructured {
 public:
  unstructured(const boost::mpi::communicator& comm, std::span<const global_id> owned,
               std::span<const global_id> ghosts, const unstructured_options& options = {});
  /// The same over a raw MPI communicator; `comm` must stay valid while the pattern and its
  /// exchange objects are built (halox does not take ownership).
  unstructured(MPI_Comm comm, std::span<const global_id> owned, std::span<const global_id> ghosts,
               const unstructured_options& options = {})
      : unstructured(boost::mpi::communicator(comm, boost::mpi::comm_attach), owned, ghosts,
                     options) {}

  const boost::mpi::communicator& comm() const { return comm_; }
  int rank() const { return comm_.rank(); }
  std::uint64_t id() const { return id_; }
  index local_count() const { return local_count_; }
  index owned_count() const { return index(owned_local_.size()); }
  index ghost_count() const { return index(ghost_local_.size()); }
  /// Local index of each owned entity / each ghost, in declaration order.
  const std::vector<index>& owned_local() const { return owned_local_; }
  const std::vector<index>& ghost_local() const { return ghost_local_; }
  /// Owner rank of each ghost, in declaration order (given or discovered).
  const std::vector<int>& ghost_owners() const { return ghost_owner_; }
  /// What this rank sends (owned local indices) and receives (ghost local indices), per peer,
  /// by increasing peer rank.
  const std::vector<index_list>& sends() const { return sends_; }
  const std::vector<index_list>& recvs() const { return recvs_; }

  /// A zero-initialised field owned by halox over this rank's `local_count()` entities.
  template <class T>
  entity_field<T> make_field(int components = 1, entity_layout layout = entity_layout::entity_major,
                             memory_space space = host, std::string name = {}) const {
    auto s = new_state(sizeof(T), components, layout, space, std::move(name), local_count_, -1);
    s->kind = scalar_kind_of<T>();
    s->type_name = other_type_name<T>();
    s->storage = detail::allocate(space, std::size_t(local_count_ * components) * sizeof(T));
    s->data = s->storage.get();
    return entity_field<T>(std::move(s));
  }
  /// Wraps your array of `local_count()` entities. For `component_major`, `component_stride`
  /// is the distance in elements between components (default `local_count()`).
  template <class T>
  entity_field<T> wrap(T* data, int components = 1,
                       entity_layout layout = entity_layout::entity_major,
                       index component_stride = -1, memory_space space = host,
                       std::string name = {}) const {
    auto s = new_state(sizeof(T), components, layout, space, std::move(name), local_count_,
                       component_stride);
    s->kind = scalar_kind_of<T>();
    s->type_name = other_type_name<T>();
    detail::require(data != nullptr || local_count_ == 0,
                    "rank {}: field '{}' wraps a null pointer", rank(), s->name);
    s->data = reinterpret_cast<std::byte*>(data);
    return entity_field<T>(std::move(s));
  }

 private:
  std::shared_ptr<detail::entity_field_state> new_state(std::size_t elem, int components,
                                                        entity_layout layout, memory_space space,
                                                        std::string name, index count,
                                                        index component_stride) const;

  boost::mpi::communicator comm_;
  std::uint64_t id_ = 0;
  index local_count_ = 0;
  std::vector<index> owned_local_, ghost_local_;
  std::vector<int> ghost_owner_;
  std::vector<index_list> sends_, recvs_;
};

}  // namespace halox
