#include "halox/domain/unstructured.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_map>

#include <boost/mpi/collectives.hpp>

#include "comm/sparse_exchange.hpp"
#include "halox/comm/agree.hpp"

namespace halox {

namespace {

// Set-up message tags on the pattern's own communicator.
enum : int { tag_register = 11, tag_query = 12, tag_answer = 13, tag_request = 14 };

// The directory rank of an id: a mixed hash, so consecutive ids spread over all ranks.
int directory_rank(global_id id, int ranks) {
  auto z = std::uint64_t(id) + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return int(z % std::uint64_t(ranks));
}

template <class T>
using by_rank = std::map<int, std::vector<T>>;

template <class T>
std::vector<detail::typed_list<T>> to_lists(by_rank<T>&& m) {
  std::vector<detail::typed_list<T>> out;
  for (auto& [r, v] : m) out.push_back({r, std::move(v)});
  return out;
}

void check_local_indices(int me, const char* what, const std::vector<index>& idx, index n,
                         std::vector<char>& used) {
  for (std::size_t k = 0; k < idx.size(); ++k) {
    detail::require(idx[k] >= 0 && idx[k] < n, "rank {}: {}[{}] = {} is outside [0, {})", me, what,
                    k, idx[k], n);
    detail::require(!used[idx[k]], "rank {}: local index {} is used twice ({}[{}])", me, idx[k],
                    what, k);
    used[idx[k]] = 1;
  }
}

// The local indices of `n` entities (`what`: owned or ghost): those given, else first,
// first + 1, ... in order.
std::vector<index> local_indices(int me, const char* what, std::span<const index> given, index n,
                                 index first) {
  std::vector<index> out;
  if (given.empty()) {
    for (index k = 0; k < n; ++k) out.push_back(first + k);
  } else {
    detail::require(index(given.size()) == n, "rank {}: {} {} local indices for {} {} ids", me,
                    given.size(), what, n, what);
    out.assign(given.begin(), given.end());
  }
  return out;
}

// Each owned id's position in `owned`, checking that no id is listed twice, among the owned or
// the ghost ids, or is both.
std::unordered_map<global_id, index> owned_positions(int me, std::span<const global_id> owned,
                                                     std::span<const global_id> ghosts) {
  std::unordered_map<global_id, index> owned_at;
  owned_at.reserve(owned.size());
  for (index k = 0; k < index(owned.size()); ++k)
    detail::require(owned_at.emplace(owned[k], k).second,
                    "rank {}: id {} is listed twice among the owned ids", me, owned[k]);
  std::unordered_map<global_id, index> ghost_at;
  ghost_at.reserve(ghosts.size());
  for (index k = 0; k < index(ghosts.size()); ++k) {
    detail::require(!owned_at.count(ghosts[k]), "rank {}: ghost id {} is also owned by this rank",
                    me, ghosts[k]);
    detail::require(ghost_at.emplace(ghosts[k], k).second,
                    "rank {}: id {} is listed twice among the ghost ids", me, ghosts[k]);
  }
  return owned_at;
}

// The ghosts' owners as given (unstructured_options::ghost_owners), checked: one per ghost,
// each another rank of the communicator.
std::vector<int> given_owners(int me, int ranks, std::span<const int> owners,
                              std::span<const global_id> ghosts) {
  detail::require(owners.size() == ghosts.size(), "rank {}: {} ghost owners for {} ghost ids", me,
                  owners.size(), ghosts.size());
  for (std::size_t k = 0; k < ghosts.size(); ++k)
    detail::require(owners[k] >= 0 && owners[k] < ranks && owners[k] != me,
                    "rank {}: ghost id {} has owner rank {}, not another rank in [0, {})", me,
                    ghosts[k], owners[k], ranks);
  return {owners.begin(), owners.end()};
}

// This rank's part of the distributed directory (id -> owner) once every rank has registered
// its owned ids. Collective; throws on every rank where two ranks own an id.
std::unordered_map<global_id, int> register_owned(const boost::mpi::communicator& comm,
                                                  std::span<const global_id> owned) {
  const int me = comm.rank(), ranks = comm.size();
  std::unordered_map<global_id, int> directory;
  by_rank<global_id> reg;
  for (global_id g : owned) reg[directory_rank(g, ranks)].push_back(g);
  detail::agree(comm, [&] {
    for (const auto& in :
         detail::sparse_exchange(MPI_Comm(comm), to_lists(std::move(reg)), tag_register))
      for (global_id g : in.data) {
        auto [it, fresh] = directory.emplace(g, in.rank);
        detail::require(fresh, "rank {}: id {} is owned by ranks {} and {}", me, g,
                        std::min(it->second, in.rank), std::max(it->second, in.rank));
      }
  });
  return directory;
}

// The owners of `ghosts` (-1: none) as the directory has them, while this rank answers the
// other ranks' questions from its part, `directory`. Collective.
std::unordered_map<global_id, int> look_up_owners(
    const boost::mpi::communicator& comm, std::span<const global_id> ghosts,
    const std::unordered_map<global_id, int>& directory) {
  const MPI_Comm raw = MPI_Comm(comm);
  by_rank<global_id> ask;
  for (global_id g : ghosts) ask[directory_rank(g, comm.size())].push_back(g);
  const auto asked_order = ask;  // to map answers back to ghosts
  std::vector<detail::typed_list<int>> answers;
  for (const auto& q : detail::sparse_exchange(raw, to_lists(std::move(ask)), tag_query)) {
    detail::typed_list<int> a{q.rank, {}};
    for (global_id g : q.data) {
      const auto it = directory.find(g);
      a.data.push_back(it == directory.end() ? -1 : it->second);
    }
    answers.push_back(std::move(a));
  }
  const auto replies = detail::sparse_exchange(raw, answers, tag_answer);
  std::unordered_map<global_id, int> owner_of;
  for (const auto& r : replies) {
    const auto& ids = asked_order.at(r.rank);
    for (std::size_t k = 0; k < ids.size(); ++k) owner_of[ids[k]] = r.data[k];
  }
  return owner_of;
}

// The owner of each ghost as the directory answered (`owner_of`); throws where one has none.
std::vector<int> found_owners(int me, std::span<const global_id> ghosts,
                              const std::unordered_map<global_id, int>& owner_of) {
  std::vector<int> owners(ghosts.size());
  for (std::size_t k = 0; k < ghosts.size(); ++k) {
    const auto it = owner_of.find(ghosts[k]);
    const int o = it == owner_of.end() ? -1 : it->second;
    detail::require(o >= 0, "rank {}: ghost id {} is owned by no rank", me, ghosts[k]);
    owners[k] = o;
  }
  return owners;
}

// The owner's side of the ghosts' requests: each requested id (its position in `owned`,
// `owned_at`) as this rank's local index, per requesting rank. Throws where one is not owned here.
std::vector<index_list> owner_sends(int me,
                                    const std::vector<detail::typed_list<global_id>>& requests,
                                    const std::unordered_map<global_id, index>& owned_at,
                                    const std::vector<index>& owned_local) {
  std::vector<index_list> sends;
  for (const auto& q : requests) {
    index_list l{q.rank, {}};
    l.local.reserve(q.data.size());
    for (global_id g : q.data) {
      const auto it = owned_at.find(g);
      detail::require(it != owned_at.end(),
                      "rank {}: rank {} expects this rank to own id {}, which it does not", me,
                      q.rank, g);
      l.local.push_back(owned_local[std::size_t(it->second)]);
    }
    sends.push_back(std::move(l));
  }
  return sends;
}

}  // namespace

unstructured::unstructured(const boost::mpi::communicator& comm, std::span<const global_id> owned,
                           std::span<const global_id> ghosts, const unstructured_options& opt)
    : comm_(comm, boost::mpi::comm_duplicate), id_(detail::next_domain_id()) {
  const int me = comm_.rank(), ranks = comm_.size();
  MPI_Comm raw = MPI_Comm(comm_);

  // 1. Local checks.
  std::unordered_map<global_id, index> owned_at;  // id -> position in `owned`
  detail::agree(comm_, [&] {
    const index n_owned = index(owned.size()), n_ghost = index(ghosts.size());
    local_count_ = opt.local_count < 0 ? n_owned + n_ghost : opt.local_count;
    owned_local_ = local_indices(me, "owned", opt.owned_local, n_owned, 0);
    ghost_local_ = local_indices(me, "ghost", opt.ghost_local, n_ghost, n_owned);
    std::vector<char> used(std::size_t(std::max<index>(local_count_, 0)), 0);
    check_local_indices(me, "owned_local", owned_local_, local_count_, used);
    check_local_indices(me, "ghost_local", ghost_local_, local_count_, used);
    owned_at = owned_positions(me, owned, ghosts);
    if (!opt.ghost_owners.empty()) ghost_owner_ = given_owners(me, ranks, opt.ghost_owners, ghosts);
  });

  // 2. The distributed directory: every rank registers its owned ids there, so an id owned by
  // two ranks is caught even when owners are given. Owners are then looked up when any rank
  // with ghosts did not give them. That decision is collective: a rank with no ghosts passes no
  // owners either, and every rank must take part in the directory's set-up messages.
  const std::unordered_map<global_id, int> directory = register_owned(comm_, owned);
  const bool mine_unknown = !ghosts.empty() && opt.ghost_owners.empty();
  if (boost::mpi::all_reduce(comm_, mine_unknown, std::logical_or<bool>())) {
    const auto owner_of =
        look_up_owners(comm_, mine_unknown ? ghosts : std::span<const global_id>(), directory);
    detail::agree(comm_, [&] {
      if (!mine_unknown) return;  // given (or no ghosts)
      ghost_owner_ = found_owners(me, ghosts, owner_of);
    });
  }

  // 3. Each rank asks the owners for its ghosts; owners turn ids into local indices.
  by_rank<global_id> request;
  std::map<int, std::vector<index>> recv_local;
  for (std::size_t k = 0; k < ghosts.size(); ++k) {
    request[ghost_owner_[k]].push_back(ghosts[k]);
    recv_local[ghost_owner_[k]].push_back(ghost_local_[k]);
  }
  for (auto& [r, v] : recv_local) recvs_.push_back({r, std::move(v)});
  const auto requests = detail::sparse_exchange(raw, to_lists(std::move(request)), tag_request);
  detail::agree(comm_, [&] { sends_ = owner_sends(me, requests, owned_at, owned_local_); });
}

std::shared_ptr<detail::entity_field_state> unstructured::new_state(
    std::size_t elem, int components, entity_layout layout, memory_space space, std::string name,
    index count, index component_stride) const {
  auto s = std::make_shared<detail::entity_field_state>();
  s->domain_id = id_;
  s->space = space;
  s->elem_bytes = elem;
  s->components = components;
  s->count = count;
  s->name = name.empty() ? "(unnamed)" : std::move(name);
  detail::require(components >= 1, "rank {}: field '{}' needs at least one component, got {}",
                  rank(), s->name, components);
  if (layout == entity_layout::entity_major) {
    detail::require(component_stride < 0 || component_stride == 1,
                    "rank {}: field '{}' is entity-major, its component stride is 1, not {}",
                    rank(), s->name, component_stride);
    s->entity_stride = components;
    s->comp_stride = 1;
  } else {
    s->entity_stride = 1;
    s->comp_stride = component_stride < 0 ? count : component_stride;
    detail::require(components == 1 || s->comp_stride >= count,
                    "rank {}: field '{}' has component stride {}, less than its {} entities",
                    rank(), s->name, s->comp_stride, count);
  }
  // Bytes up to the end of the last element: every offset of the field (and the allocation
  // of make_field) fits below it.
  const auto last_entity = detail::checked_mul(std::max<index>(count, 1) - 1, s->entity_stride);
  const auto last_comp = detail::checked_mul(components - 1, s->comp_stride);
  const auto end =
      last_entity && last_comp
          ? detail::checked_mul(
                detail::checked_add(detail::checked_add(*last_entity, *last_comp), 1), index(elem))
          : std::nullopt;
  detail::require(end.has_value(),
                  "rank {}: field '{}' needs {} entities x {} components x {} bytes (component "
                  "stride {}), more than {} bytes",
                  rank(), s->name, count, components, elem, s->comp_stride, detail::index_max);
  return s;
}

}  // namespace halox
