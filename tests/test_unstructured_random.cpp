// Randomized property test for unstructured patterns: hundreds of random graphs (entity count,
// edges, owners with some ranks owning nothing, 64-bit ids below and beyond 2^32), declared in
// shuffled order at interleaved local indices with unused entities in between, owners given on
// some ranks and discovered on others, with random fields (value type, components, layout, user
// memory or halox-owned). Each plan is compared with the lists the model derives from every
// rank's declaration, and every local entity's value with its global id's encoding.
//
// The seed comes from HALOX_TEST_SEED or the clock, on rank 0, and is broadcast; it is printed
// so that a failure can be replayed: HALOX_TEST_SEED=<seed> mpiexec -n <ranks>
// test_unstructured_random
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <boost/mpi/collectives.hpp>

#include "entity_check.hpp"
#include "support.hpp"

namespace mpi = boost::mpi;
using idx = halox::index;

namespace {

using rng_t = std::mt19937_64;
int pick(rng_t& rng, int n) {
  return int(rng() % std::uint64_t(n));
}

struct field_spec {
  int type = 0;  // double, int, float, triple, int64
  int components = 1;
  halox::entity_layout layout = halox::entity_layout::entity_major;
  bool user_memory = false;
};
const char* type_name(int k) {
  static const char* names[] = {"double", "int", "float", "triple", "int64"};
  return names[k];
}

// A field of the spec's type, in halox's memory or in `mem` (kept alive by the caller).
template <class T>
halox::entity_field<T> make(const halox::unstructured& pat, const field_spec& s,
                            std::vector<std::vector<char>>& mem) {
  if (!s.user_memory) return pat.make_field<T>(s.components, s.layout);
  const idx n = pat.local_count();
  const idx stride = s.layout == halox::entity_layout::component_major ? n + 2 : -1;
  mem.emplace_back(std::size_t((n + 2) * s.components + 1) * sizeof(T));
  return pat.wrap<T>(reinterpret_cast<T*>(mem.back().data()), s.components, s.layout, stride);
}

template <class F>
void with_type(int k, F&& f) {
  switch (k) {
    case 0:
      return f(double{});
    case 1:
      return f(int{});
    case 2:
      return f(float{});
    case 3:
      return f(test_support::triple{});
    default:
      return f(std::int64_t{});
  }
}

template <class... T>
void exchange_and_check(const halox::unstructured& pat, const test_support::view& v,
                        bool split_phase, const halox::entity_field<T>&... fields) {
  auto ex = halox::make_exchange(pat, fields...);
  for (int salt = 0; salt < 2; ++salt) {
    int id = 0;
    if (salt == 0)
      (test_support::fill(fields, v, id++, salt), ...);
    else
      (test_support::fill_owned(fields, v, id++, salt), ...);
    if (split_phase) {
      auto h = ex.start();
      while (!h.test()) {
      }
    } else {
      ex.exchange();
    }
    test_support::result all;
    id = 0;
    (
        [&](const auto& f) {
          const auto r = test_support::check(f, v, id++, salt);
          all.bad += r.bad;
          all.report += r.report;
        }(fields),
        ...);
    INFO("exchange #" << salt);
    HXT_REQUIRE_OK(all);
  }
}

void run_graph(const mpi::communicator& world, rng_t& rng, std::ostringstream& desc) {
  const int p = world.size();
  const int n = pick(rng, 80);
  const int edges = pick(rng, 3 * n + 1);
  const bool big = pick(rng, 2) == 1;
  auto g = test_support::random_graph(n, edges, p, rng, big);
  // sometimes only some ranks own entities
  const int owners = 1 + pick(rng, p);
  if (pick(rng, 2))
    for (auto& o : g.owner) o %= owners;
  // sometimes ghosts unrelated to any edge
  if (n > 0 && pick(rng, 3) == 0)
    for (int r = 0; r < p; ++r)
      for (int k = pick(rng, 4); k > 0; --k) g.extra_ghosts[r].push_back(pick(rng, n));
  const bool shuffle = pick(rng, 4) != 0;
  const int extra = shuffle ? pick(rng, 4) : 0;
  const std::uint64_t vseed = rng();
  std::vector<test_support::view> all;
  for (int r = 0; r < p; ++r) all.push_back(test_support::make_view(g, r, shuffle, vseed, extra));
  const auto& v = all[std::size_t(world.rank())];
  // owners given on each rank with probability 1/2 (the same draw on every rank)
  std::vector<char> give(static_cast<std::size_t>(p));
  for (auto& x : give) x = char(pick(rng, 2));
  std::vector<field_spec> specs(std::size_t(1 + pick(rng, 3)));
  for (auto& s : specs) {
    s.type = pick(rng, 5);
    s.components = 1 + pick(rng, 3);
    s.layout =
        pick(rng, 2) ? halox::entity_layout::component_major : halox::entity_layout::entity_major;
    s.user_memory = pick(rng, 2) == 1;
  }
  const bool split_phase = pick(rng, 2) == 1;
  desc << n << " entities, " << edges << " edges, owners in [0, " << owners << "), ids "
       << (big ? "beyond 2^32" : "small") << (shuffle ? ", shuffled, extra " : ", in order, extra ")
       << extra << ", owners given on ranks";
  for (int r = 0; r < p; ++r)
    if (give[std::size_t(r)]) desc << ' ' << r;
  for (const auto& s : specs)
    desc << " | " << type_name(s.type) << " x" << s.components
         << (s.layout == halox::entity_layout::component_major ? " component-major"
                                                               : " entity-major")
         << (s.user_memory ? " user memory" : "");
  desc << (split_phase ? " | split phase" : " | blocking");
  INFO(desc.str());

  const auto pat = test_support::make_pattern(world, v, give[std::size_t(world.rank())] != 0);
  const auto why = test_support::plan_mismatch(pat, all);
  INFO("rank " << world.rank() << " plan: " << why);
  CHECK(why.empty());
  REQUIRE(mpi::all_reduce(world, int(!why.empty()), std::plus<int>()) == 0);

  std::vector<std::vector<char>> mem;
  with_type(specs[0].type, [&](auto t0) {
    using T0 = decltype(t0);
    auto f0 = make<T0>(pat, specs[0], mem);
    if (specs.size() == 1) return exchange_and_check(pat, v, split_phase, f0);
    with_type(specs[1].type, [&](auto t1) {
      using T1 = decltype(t1);
      auto f1 = make<T1>(pat, specs[1], mem);
      if (specs.size() == 2) return exchange_and_check(pat, v, split_phase, f0, f1);
      auto f2 = make<test_support::triple>(pat, specs[2], mem);
      exchange_and_check(pat, v, split_phase, f0, f1, f2);
    });
  });
}

}  // namespace

TEST_CASE("random graphs") {
  mpi::communicator world;
  const unsigned long long seed = test_support::shared_seed(world, "test_unstructured_random");
  INFO("seed " << seed << " (HALOX_TEST_SEED=" << seed << " replays)");
  rng_t rng(seed);
  const int graphs = 220;
  for (int t = 0; t < graphs; ++t) {
    std::ostringstream desc;
    desc << "graph #" << t << ": ";
    run_graph(world, rng, desc);
  }
}
