#pragma once
// Shared model for unstructured tests: graphs over 64-bit global ids (rings, random graphs,
// triangular meshes) with an owner per entity; each rank's declaration derived from them (owned
// ids, ghost ids = neighbours of owned entities owned elsewhere, local indices, optionally
// shuffled and interleaved); values that encode (field, global id, component, salt); and a
// checker of every local entity against what the model says it must hold.

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <halox/halox.hpp>

#include "check.hpp"

namespace test_support {

using gid = halox::global_id;

/// splitmix64's finaliser: a well-mixed 64-bit hash.
inline std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// The hash an entity's value is made from: field number, global id, component, salt.
inline std::uint64_t entity_key(int field, gid id, int c, int salt) {
  return mix(mix(std::uint64_t(id)) ^ (std::uint64_t(c) << 40) ^ (std::uint64_t(field) << 48) ^
             (std::uint64_t(salt) << 56));
}

/// Values made from a hash, and a sentinel no made value equals (in practice).
template <class T>
struct entity_value;
template <>
struct entity_value<double> {
  static double make(std::uint64_t h) { return double(h >> 11) * 0x1p-53 + 1.0; }
  static double sentinel() { return -7.5; }
};
template <>
struct entity_value<float> {
  static float make(std::uint64_t h) { return float((h >> 40) & 0xffffff) + 1.0f; }
  static float sentinel() { return -7.0f; }
};
template <>
struct entity_value<int> {
  static int make(std::uint64_t h) { return int(std::uint32_t(h) >> 1) + 1; }
  static int sentinel() { return -7; }
};
template <>
struct entity_value<std::int64_t> {
  static std::int64_t make(std::uint64_t h) { return std::int64_t(h >> 2) + 1; }
  static std::int64_t sentinel() { return -7; }
};
template <>
struct entity_value<triple> {
  static triple make(std::uint64_t h) {
    return {std::int32_t(std::uint32_t(h) >> 1), float((h >> 40) & 0xffffff),
            std::int32_t(std::uint32_t(h >> 32) >> 1)};
  }
  static triple sentinel() { return {-7, -7.0f, -7}; }
};

template <class T>
std::string show(const T& v) {
  if constexpr (std::is_same_v<T, triple>)
    return value_traits<triple>::str(v);
  else {
    std::ostringstream o;
    o.precision(17);
    o << +v;
    return o.str();
  }
}

/// A graph over entities 0..n-1: global id, owner rank and neighbours of each entity, plus
/// ghosts a rank declares beyond its neighbours (e.g. a rank that owns nothing).
struct graph {
  std::vector<gid> ids;
  std::vector<int> owner;
  std::vector<std::vector<int>> adj;
  std::map<int, std::vector<int>> extra_ghosts;  // rank -> entities
  int ranks = 1;

  int size() const { return int(ids.size()); }
  /// Entities rank r owns, ascending.
  std::vector<int> owned_by(int r) const {
    std::vector<int> out;
    for (int k = 0; k < size(); ++k)
      if (owner[std::size_t(k)] == r) out.push_back(k);
    return out;
  }
  /// Entities rank r needs as ghosts, ascending: neighbours of its own ones owned elsewhere.
  std::vector<int> ghosts_of(int r) const {
    std::vector<char> want(std::size_t(size()), 0);
    for (int k = 0; k < size(); ++k)
      if (owner[std::size_t(k)] == r)
        for (int j : adj[std::size_t(k)]) want[std::size_t(j)] = 1;
    if (auto it = extra_ghosts.find(r); it != extra_ghosts.end())
      for (int j : it->second) want[std::size_t(j)] = 1;
    std::vector<int> out;
    for (int k = 0; k < size(); ++k)
      if (want[std::size_t(k)] && owner[std::size_t(k)] != r) out.push_back(k);
    return out;
  }
  /// For every entity, the ranks that hold it as a ghost, ascending.
  std::vector<std::vector<int>> ghosters() const {
    std::vector<std::vector<int>> out(static_cast<std::size_t>(size()));
    for (int r = 0; r < ranks; ++r)
      for (int k : ghosts_of(r)) out[std::size_t(k)].push_back(r);
    return out;
  }
};

/// Symmetric adjacency from an edge list, without duplicates or self loops.
inline std::vector<std::vector<int>> adjacency(int n,
                                               const std::vector<std::pair<int, int>>& edges) {
  std::vector<std::vector<int>> adj(static_cast<std::size_t>(n));
  for (auto [a, b] : edges)
    if (a != b) adj[std::size_t(a)].push_back(b), adj[std::size_t(b)].push_back(a);
  for (auto& v : adj) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }
  return adj;
}

/// Global ids: sparse, not in entity order, and beyond 2^32 when `big`.
inline std::vector<gid> make_ids(int n, bool big, std::uint64_t seed) {
  std::vector<gid> ids(static_cast<std::size_t>(n));
  const gid base = big ? (gid(5) << 32) + 17 : 3;
  for (int k = 0; k < n; ++k) ids[std::size_t(k)] = base + 7 * gid(k);
  std::mt19937_64 rng(seed);
  std::shuffle(ids.begin(), ids.end(), rng);
  return ids;
}

/// A ring of n entities, each connected to the `reach` nearest on both sides; contiguous blocks
/// of entities per rank.
inline graph ring(int n, int reach, int ranks, bool big = false) {
  graph g;
  g.ranks = ranks;
  g.ids = make_ids(n, big, 11);
  std::vector<std::pair<int, int>> e;
  for (int k = 0; k < n; ++k)
    for (int d = 1; d <= reach; ++d) e.push_back({k, (k + d) % n});
  g.adj = adjacency(n, e);
  for (int k = 0; k < n; ++k) g.owner.push_back(int(std::int64_t(k) * ranks / n));
  return g;
}

/// A random graph: n entities, `edges` random edges, random owners.
inline graph random_graph(int n, int edges, int ranks, std::mt19937_64& rng, bool big) {
  graph g;
  g.ranks = ranks;
  g.ids = make_ids(n, big, rng());
  std::vector<std::pair<int, int>> e;
  for (int k = 0; k < edges && n > 0; ++k)
    e.push_back({int(rng() % unsigned(n)), int(rng() % unsigned(n))});
  g.adj = adjacency(n, e);
  for (int k = 0; k < n; ++k) g.owner.push_back(int(rng() % unsigned(ranks)));
  return g;
}

/// A 2-D triangular mesh: an nx x ny grid of vertices, each of the (nx-1) x (ny-1) squares split
/// into two triangles along its diagonal.
struct tri_mesh {
  int nx = 0, ny = 0;
  std::vector<std::array<int, 3>> tris;    // vertex numbers
  std::vector<std::array<int, 2>> square;  // the square (i, j) each triangle lies in

  tri_mesh(int nx_, int ny_) : nx(nx_), ny(ny_) {
    auto v = [&](int i, int j) { return i * ny + j; };
    for (int i = 0; i + 1 < nx; ++i)
      for (int j = 0; j + 1 < ny; ++j) {
        tris.push_back({v(i, j), v(i + 1, j), v(i + 1, j + 1)});
        tris.push_back({v(i, j), v(i + 1, j + 1), v(i, j + 1)});
        square.push_back({i, j});
        square.push_back({i, j});
      }
  }
  int vertices() const { return nx * ny; }
  /// Triangles sharing an edge (share_vertex: sharing at least a vertex).
  std::vector<std::vector<int>> triangle_adjacency(bool share_vertex) const {
    std::map<std::pair<int, int>, std::vector<int>> by_edge;
    std::vector<std::vector<int>> by_vertex(static_cast<std::size_t>(vertices()));
    for (int t = 0; t < int(tris.size()); ++t) {
      const auto& a = tris[std::size_t(t)];
      for (int k = 0; k < 3; ++k) {
        const int p = a[std::size_t(k)], q = a[std::size_t((k + 1) % 3)];
        by_edge[{std::min(p, q), std::max(p, q)}].push_back(t);
        by_vertex[std::size_t(p)].push_back(t);
      }
    }
    std::vector<std::pair<int, int>> e;
    for (const auto& [edge, ts] : by_edge)
      for (int x : ts)
        for (int y : ts) e.push_back({x, y});
    if (share_vertex)
      for (const auto& ts : by_vertex)
        for (int x : ts)
          for (int y : ts) e.push_back({x, y});
    return adjacency(int(tris.size()), e);
  }
  /// Vertices joined by a triangle edge.
  std::vector<std::vector<int>> vertex_adjacency() const {
    std::vector<std::pair<int, int>> e;
    for (const auto& a : tris)
      for (int k = 0; k < 3; ++k) e.push_back({a[std::size_t(k)], a[std::size_t((k + 1) % 3)]});
    return adjacency(vertices(), e);
  }
};

/// How a mesh is split over the ranks.
enum class split_kind {
  strips,  ///< by the x coordinate
  blocks   ///< square blocks of `block` x `block` cells, dealt to ranks in a shuffled order
};

/// Owner of cell (i, j) of an n0 x n1 cell grid.
inline int cell_owner(int i, int j, int n0, int n1, int ranks, split_kind s, int block = 3) {
  if (s == split_kind::strips) return int(std::int64_t(i) * ranks / n0);
  const int b0 = (n0 + block - 1) / block, b1 = (n1 + block - 1) / block;
  std::vector<int> order(std::size_t(b0 * b1));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(1234);  // the same shuffle on every rank
  std::shuffle(order.begin(), order.end(), rng);
  return order[std::size_t((i / block) * b1 + j / block)] % ranks;
}

/// Triangles as entities (neighbours share an edge, or a vertex).
inline graph mesh_triangles(const tri_mesh& m, int ranks, split_kind s, bool share_vertex,
                            bool big = true) {
  graph g;
  g.ranks = ranks;
  g.ids = make_ids(int(m.tris.size()), big, 21);
  g.adj = m.triangle_adjacency(share_vertex);
  for (const auto& sq : m.square)
    g.owner.push_back(cell_owner(sq[0], sq[1], m.nx - 1, m.ny - 1, ranks, s));
  return g;
}
/// Vertices as entities (neighbours share an edge).
inline graph mesh_vertices(const tri_mesh& m, int ranks, split_kind s, bool big = true) {
  graph g;
  g.ranks = ranks;
  g.ids = make_ids(m.vertices(), big, 31);
  g.adj = m.vertex_adjacency();
  for (int i = 0; i < m.nx; ++i)
    for (int j = 0; j < m.ny; ++j) g.owner.push_back(cell_owner(i, j, m.nx, m.ny, ranks, s));
  return g;
}

/// One rank's declaration of an unstructured pattern.
struct view {
  int rank = 0;
  std::vector<int> owned_entity, ghost_entity;  // entity numbers, in declaration order
  std::vector<gid> owned, ghosts;
  std::vector<int> ghost_owner;
  std::vector<halox::index> owned_local, ghost_local;
  halox::index local_count = 0;
  bool explicit_local = false;  // pass owned_local / ghost_local / local_count
};

/// Rank r's declaration. `shuffle`: owned and ghost ids in random order, local indices a random
/// interleaving of owned entities, ghosts and `extra` entities no exchange touches. The random
/// choices depend on (seed, r) only, so any rank can rebuild any other rank's declaration.
inline view make_view(const graph& g, int r, bool shuffle, std::uint64_t seed = 0, int extra = 0) {
  view v;
  v.rank = r;
  v.owned_entity = g.owned_by(r);
  v.ghost_entity = g.ghosts_of(r);
  const auto no = halox::index(v.owned_entity.size()), ng = halox::index(v.ghost_entity.size());
  v.local_count = no + ng;
  std::vector<halox::index> local(std::size_t(no + ng));
  std::iota(local.begin(), local.end(), halox::index(0));
  if (shuffle) {
    std::mt19937_64 rng(mix(seed * 131 + std::uint64_t(r)));
    std::shuffle(v.owned_entity.begin(), v.owned_entity.end(), rng);
    std::shuffle(v.ghost_entity.begin(), v.ghost_entity.end(), rng);
    v.local_count += extra;
    local.resize(std::size_t(v.local_count));
    std::iota(local.begin(), local.end(), halox::index(0));
    std::shuffle(local.begin(), local.end(), rng);
    v.explicit_local = true;
  }
  for (int k : v.owned_entity) v.owned.push_back(g.ids[std::size_t(k)]);
  for (int k : v.ghost_entity) {
    v.ghosts.push_back(g.ids[std::size_t(k)]);
    v.ghost_owner.push_back(g.owner[std::size_t(k)]);
  }
  v.owned_local.assign(local.begin(), local.begin() + no);
  v.ghost_local.assign(local.begin() + no, local.begin() + no + ng);
  return v;
}

/// The pattern of a declaration, with owners given or discovered.
inline halox::unstructured make_pattern(const boost::mpi::communicator& comm, const view& v,
                                        bool give_owners) {
  halox::unstructured_options o;
  if (give_owners) o.ghost_owners = v.ghost_owner;
  if (v.explicit_local) {
    o.owned_local = v.owned_local;
    o.ghost_local = v.ghost_local;
    o.local_count = v.local_count;
  }
  return halox::unstructured(comm, v.owned, v.ghosts, o);
}

/// Sets every owned entity to its encoded value (ghosts left as they are).
template <class T>
void fill_owned(const halox::entity_field<T>& f, const view& v, int field, int salt) {
  for (std::size_t k = 0; k < v.owned.size(); ++k)
    for (int c = 0; c < f.components(); ++c)
      f(v.owned_local[k], c) = entity_value<T>::make(entity_key(field, v.owned[k], c, salt));
}

/// Every local entity to the sentinel, then every owned one to its encoded value.
template <class T>
void fill(const halox::entity_field<T>& f, const view& v, int field, int salt) {
  for (halox::index e = 0; e < f.size(); ++e)
    for (int c = 0; c < f.components(); ++c) f(e, c) = entity_value<T>::sentinel();
  fill_owned(f, v, field, salt);
}

/// After a forward exchange: owned entities and ghosts hold their id's value, every other local
/// entity the sentinel.
template <class T>
result check(const halox::entity_field<T>& f, const view& v, int field, int salt) {
  result r;
  std::vector<char> seen(std::size_t(f.size()), 0);
  auto expect = [&](halox::index e, const T& want, const char* what, gid id) {
    for (int c = 0; c < f.components(); ++c) {
      const T w = id < 0 ? want : entity_value<T>::make(entity_key(field, id, c, salt));
      const T got = f(e, c);
      if (!(got == w) && ++r.bad <= 8) {
        std::ostringstream o;
        o << "rank " << v.rank << " field " << field << " local " << e << " (" << what << " id "
          << id << ") comp " << c << ": got " << show(got) << ", want " << show(w) << "\n";
        r.report += o.str();
      }
    }
  };
  for (std::size_t k = 0; k < v.owned.size(); ++k) {
    seen[std::size_t(v.owned_local[k])] = 1;
    expect(v.owned_local[k], T{}, "owned", v.owned[k]);
  }
  for (std::size_t k = 0; k < v.ghosts.size(); ++k) {
    seen[std::size_t(v.ghost_local[k])] = 1;
    r.filled += f.components();
    expect(v.ghost_local[k], T{}, "ghost", v.ghosts[k]);
  }
  for (halox::index e = 0; e < f.size(); ++e)
    if (!seen[std::size_t(e)]) {
      r.untouched += f.components();
      expect(e, entity_value<T>::sentinel(), "unused", -1);
    }
  return r;
}

/// The send lists the pattern must hold, derived from the other ranks' declarations: for each
/// peer q (ascending), my local index of each of q's ghosts I own, in q's declaration order.
inline std::vector<halox::index_list> expected_sends(const std::vector<view>& all, int me) {
  std::map<gid, halox::index> mine;
  const auto& v = all[std::size_t(me)];
  for (std::size_t k = 0; k < v.owned.size(); ++k) mine[v.owned[k]] = v.owned_local[k];
  std::vector<halox::index_list> out;
  for (const auto& q : all) {
    halox::index_list l{q.rank, {}};
    for (std::size_t k = 0; k < q.ghosts.size(); ++k)
      if (q.ghost_owner[k] == me) l.local.push_back(mine.at(q.ghosts[k]));
    if (!l.local.empty()) out.push_back(std::move(l));
  }
  return out;
}
/// The receive lists: for each owner (ascending), my ghosts' local indices in declaration order.
inline std::vector<halox::index_list> expected_recvs(const view& v) {
  std::map<int, std::vector<halox::index>> by;
  for (std::size_t k = 0; k < v.ghosts.size(); ++k)
    by[v.ghost_owner[k]].push_back(v.ghost_local[k]);
  std::vector<halox::index_list> out;
  for (auto& [r, l] : by) out.push_back({r, std::move(l)});
  return out;
}
inline bool same_lists(const std::vector<halox::index_list>& a,
                       const std::vector<halox::index_list>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t k = 0; k < a.size(); ++k)
    if (a[k].rank != b[k].rank || a[k].local != b[k].local) return false;
  return true;
}
/// Whether the pattern's owners, send and receive lists are the ones the model derives.
inline std::string plan_mismatch(const halox::unstructured& pat, const std::vector<view>& all) {
  const auto& v = all[std::size_t(pat.rank())];
  std::string why;
  if (pat.ghost_owners() != v.ghost_owner) why += "ghost owners differ; ";
  if (pat.owned_local() != v.owned_local) why += "owned_local differs; ";
  if (pat.ghost_local() != v.ghost_local) why += "ghost_local differs; ";
  if (pat.local_count() != v.local_count) why += "local_count differs; ";
  if (!same_lists(pat.recvs(), expected_recvs(v))) why += "receive lists differ; ";
  if (!same_lists(pat.sends(), expected_sends(all, pat.rank()))) why += "send lists differ; ";
  return why;
}

}  // namespace test_support
