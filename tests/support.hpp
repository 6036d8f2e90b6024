#pragma once
// Small helpers several test programs share: every process grid of a rank count, and the seed
// of a randomized test (random per run, replayable through HALOX_TEST_SEED).

#include <array>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <vector>

#include <boost/mpi/collectives.hpp>
#include <boost/mpi/communicator.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>
#include <halox/halox.hpp>

namespace test_support {

/// Sets an environment variable for one scope on this rank (null: leaves it unset).
struct scoped_env {
  const char* name;
  scoped_env(const char* n, const char* v) : name(n) {
    if (v) ::setenv(n, v, 1);
  }
  ~scoped_env() { ::unsetenv(name); }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;
};

/// Sets a test-only switch (halox::detail::testing) for one scope on this rank.
struct scoped_flag {
  bool& flag;
  explicit scoped_flag(bool& f, bool v = true) : flag(f) { flag = v; }
  ~scoped_flag() { flag = false; }
  scoped_flag(const scoped_flag&) = delete;
  scoped_flag& operator=(const scoped_flag&) = delete;
};

namespace detail {
template <int D>
void grids(int size, int dim, std::array<int, D>& cur, const halox::extents<D>& n,
           std::vector<halox::process_grid<D>>& out) {
  if (dim == D - 1) {
    cur[dim] = size;
    if (size <= n[dim]) out.push_back({cur});
    return;
  }
  for (int f = 1; f <= size; ++f)
    if (size % f == 0 && f <= n[dim]) {
      cur[dim] = f;
      grids<D>(size / f, dim + 1, cur, n, out);
    }
}
}  // namespace detail

/// Periodicity from the bits of `m`: dimension i is periodic where bit i is set.
template <int D>
halox::periodic<D> periodic_mask(int m) {
  halox::periodic<D> p;
  for (int i = 0; i < D; ++i) p.flags[i] = (m >> i) & 1;
  return p;
}

/// Every process grid of `size` ranks that fits `n` (each rank owns at least one cell).
template <int D>
std::vector<halox::process_grid<D>> all_grids(int size, const halox::extents<D>& n) {
  std::vector<halox::process_grid<D>> out;
  std::array<int, D> cur{};
  detail::grids<D>(size, 0, cur, n, out);
  return out;
}

/// The seed of a randomized test, the same on every rank: HALOX_TEST_SEED if set, else the
/// clock; rank 0 prints it with the line that replays the run.
inline unsigned long long shared_seed(const boost::mpi::communicator& world, const char* program) {
  unsigned long long seed = 0;
  if (world.rank() == 0) {
    const char* env = std::getenv("HALOX_TEST_SEED");
    seed = env && *env
               ? std::strtoull(env, nullptr, 10)
               : (unsigned long long)(std::chrono::system_clock::now().time_since_epoch().count());
    std::cout << program << ": " << world.size() << " ranks, seed " << seed
              << " (replay: HALOX_TEST_SEED=" << seed << ")" << std::endl;
  }
  boost::mpi::broadcast(world, seed, 0);
  return seed;
}

}  // namespace test_support
