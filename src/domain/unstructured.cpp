#include "halox/domain/unstructured.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_map>

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
    if (opt.owned_local.empty()) {
      for (index k = 0; k < n_owned; ++k) owned_local_.push_back(k);
    } else {
      detail::require(index(opt.owned_local.size()) == n_owned,
                      "rank {}: {} owned local indices for {} owned ids", me,
                      opt.owned_local.size(), n_owned);
      owned_local_.assign(opt.owned_local.begin(), opt.owned_local.end());
    }
    if (opt.ghost_local.empty()) {
      for (index k = 0; k < n_ghost; ++k) ghost_local_.push_back(n_owned + k);
    } else {
      detail::require(index(opt.ghost_local.size()) == n_ghost,
                      "rank {}: {} ghost local indices for {} ghost ids", me,
                      opt.ghost_local.size(), n_ghost);
      ghost_local_.assign(opt.ghost_local.begin(), opt.ghost_local.end());
    }
    std::vector<char> used(std::size_t(std::max<index>(local_count_, 0)), 0);
    check_local_indices(me, "owned_local", owned_local_, local_count_, used);
    check_local_indices(me, "ghost_local", ghost_local_, local_count_, used);
    owned_at.reserve(owned.size());
    for (index k = 0; k < n_owned; ++k)
      detail::require(owned_at.emplace(owned[k], k).second,
                      "rank {}: id {} is listed twice among the owned ids", me, owned[k]);
    std::unordered_map<global_id, index> ghost_at;
    ghost_at.reserve(ghosts.size());
    for (index k = 0; k < n_ghost; ++k) {
      detail::require(!owned_at.count(ghosts[k]), "rank {}: ghost id {} is also owned by this rank",
                      me, ghosts[k]);
      detail::require(ghost_at.emplace(ghosts[k], k).second,
                      "rank {}: id {} is listed twice among the ghost ids", me, ghosts[k]);
    }
    if (!opt.ghost_owners.empty()) {
      detail::require(opt.ghost_owners.size() == ghosts.size(),
                      "rank {}: {} ghost owners for {} ghost ids", me, opt.ghost_owners.size(),
                      ghosts.size());
      for (std::size_t k = 0; k < ghosts.size(); ++k)
        detail::require(
            opt.ghost_owners[k] >= 0 && opt.ghost_owners[k] < ranks && opt.ghost_owners[k] != me,
            "rank {}: ghost id {} has owner rank {}, not another rank in [0, {})", me, ghosts[k],
            opt.ghost_owners[k], ranks);
      ghost_owner_.assign(opt.ghost_owners.begin(), opt.ghost_owners.end());
    }
  });

  // 2. The distributed directory: every rank registers its owned ids there, so an id owned by
  // two ranks is caught even when owners are given. Owners are then looked up when any rank
  // with ghosts did not give them. That decision is collective: a rank with no ghosts passes no
  // owners either, and every rank must take part in the directory's set-up messages.
  std::unordered_map<global_id, int> directory;
  {
    by_rank<global_id> reg;
    for (global_id g : owned) reg[directory_rank(g, ranks)].push_back(g);
    detail::agree(comm_, [&] {
      for (const auto& in : detail::sparse_exchange(raw, to_lists(std::move(reg)), tag_register))
        for (global_id g : in.data) {
          auto [it, fresh] = directory.emplace(g, in.rank);
          detail::require(fresh, "rank {}: id {} is owned by ranks {} and {}", me, g,
                          std::min(it->second, in.rank), std::max(it->second, in.rank));
        }
    });
  }
  const bool mine_unknown = !ghosts.empty() && opt.ghost_owners.empty();
  if (boost::mpi::all_reduce(comm_, mine_unknown, std::logical_or<bool>())) {
    by_rank<global_id> ask;
    if (mine_unknown)
      for (global_id g : ghosts) ask[directory_rank(g, ranks)].push_back(g);
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
    detail::agree(comm_, [&] {
      if (!mine_unknown) return;  // given (or no ghosts)
      ghost_owner_.resize(ghosts.size());
      for (std::size_t k = 0; k < ghosts.size(); ++k) {
        const auto it = owner_of.find(ghosts[k]);
        const int o = it == owner_of.end() ? -1 : it->second;
        detail::require(o >= 0, "rank {}: ghost id {} is owned by no rank", me, ghosts[k]);
        ghost_owner_[k] = o;
      }
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
  detail::agree(comm_, [&] {
    for (const auto& q : requests) {
      index_list l{q.rank, {}};
      l.local.reserve(q.data.size());
      for (global_id g : q.data) {
        const auto it = owned_at.find(g);
        detail::require(it != owned_at.end(),
                        "rank {}: rank {} expects this rank to own id {}, which it does not", me,
                        q.rank, g);
        l.local.push_back(owned_local_[it->second]);
      }
      sends_.push_back(std::move(l));
    }
  });
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
