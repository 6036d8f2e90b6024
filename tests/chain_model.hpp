#pragma once
// The model the chain tests check against: a global series, its uneven distribution over the
// ranks (the same on every rank for a seed), per-round payloads that encode sender, round and
// direction, and the context gather_left/gather_right must deliver. Independent of halox.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace chain_model {

using i64 = std::int64_t;

inline std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The global series: value at global index g.
inline i64 f(std::size_t g) {
  return i64(g) * 3 + 1;
}

// An uneven distribution of a series over P ranks, the same on every rank for a seed: empty
// ranks, one-element ranks, small and larger slices.
struct layout {
  std::vector<std::size_t> n, offset;  // per rank; offset has P + 1 entries
  std::size_t total() const { return offset.back(); }
  std::vector<i64> slice(int r) const {
    std::vector<i64> s(n[std::size_t(r)]);
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = f(offset[std::size_t(r)] + i);
    return s;
  }
};

inline layout make_layout(int P, std::uint64_t seed) {
  layout l;
  l.offset.push_back(0);
  for (int r = 0; r < P; ++r) {
    const std::uint64_t h = mix(seed * 1000 + std::uint64_t(r));
    const std::size_t kind = h % 4;
    const std::size_t n = kind == 0   ? 0
                          : kind == 1 ? 1
                          : kind == 2 ? 2 + h / 4 % 6
                                      : 20 + h / 4 % 40;
    l.n.push_back(n);
    l.offset.push_back(l.offset.back() + n);
  }
  return l;
}

// What `sender` sends towards `dir` (0: left, 1: right) in round `round`: its size varies with
// all three (zero included), its values encode them.
inline std::vector<i64> payload(int sender, int round, int dir) {
  const std::size_t n = std::size_t(sender * 7 + round * 3 + dir * 5) % (dir ? 6 : 4);
  std::vector<i64> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = i64(sender) * 1'000'000 + round * 1000 + dir * 100 + i64(i);
  return v;
}

inline std::vector<i64> as_vector(std::span<const i64> s) {
  return {s.begin(), s.end()};
}

// The context gather_left (right: gather_right) must deliver on rank r.
inline std::vector<i64> expected_context(const layout& l, int r, std::size_t w, bool periodic,
                                         bool left) {
  const std::size_t N = l.total(), lo = l.offset[std::size_t(r)], hi = l.offset[std::size_t(r) + 1];
  const std::size_t avail = periodic ? N - (hi - lo) : left ? lo : N - hi;
  const std::size_t m = std::min(w, avail);
  std::vector<i64> out(m);
  for (std::size_t j = 0; j < m; ++j) out[j] = left ? f((lo + N - m + j) % N) : f((hi + j) % N);
  return out;
}

}  // namespace chain_model
