// Bad unstructured input throws halox::error on every rank, naming the id and the rank, before
// anything is exchanged; fields keep their data. Also the reverse exchanges' own errors
// (a combining reduction on a value type without arithmetic), structured and unstructured.
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "entity_check.hpp"

namespace mpi = boost::mpi;
using idx = halox::index;
using test_support::gid;

// Both the type and the message (the expression runs twice; collective calls stay matched).
#define REQUIRE_HALOX_ERROR(expr, text)               \
  do {                                                \
    REQUIRE_THROWS_AS(expr, halox::error);            \
    REQUIRE_THROWS_WITH(expr, Catch::Contains(text)); \
  } while (0)

namespace {
// Rank r owns ids base + 10 r + {0, 1, 2}; ghosts the first id of the next rank.
constexpr gid base = (gid(3) << 33);
gid id_of(int r, int k) {
  return base + 10 * gid(r) + k;
}
std::vector<gid> owned_of(int r) {
  return {id_of(r, 0), id_of(r, 1), id_of(r, 2)};
}
}  // namespace

TEST_CASE("unstructured: ids listed twice, ghosts also owned, ids owned twice or by nobody") {
  mpi::communicator world;
  const int me = world.rank(), p = world.size();
  const auto own = owned_of(me);
  const std::vector<gid> ghost{id_of((me + 1) % p, 0)};
  const std::vector<gid> no_ghost;
  const auto& good_ghosts = p > 1 ? ghost : no_ghost;
  // every rank's own input is wrong: each rank reports its own problem, the lowest rank's first
  REQUIRE_HALOX_ERROR(
      halox::unstructured(world, std::vector<gid>{own[0], own[1], own[0]}, good_ghosts),
      fmt::format("rank 0: id {} is listed twice among the owned ids", id_of(0, 0)));
  REQUIRE_HALOX_ERROR(halox::unstructured(world, own, std::vector<gid>{id_of(me, 1)}),
                      fmt::format("rank 0: ghost id {} is also owned by this rank", id_of(0, 1)));
  if (p > 1) {
    REQUIRE_HALOX_ERROR(
        halox::unstructured(world, own, std::vector<gid>{ghost[0], ghost[0]}),
        fmt::format("rank 0: id {} is listed twice among the ghost ids", id_of(1, 0)));
  }
  // only the last rank asks for an id nobody owns
  const gid nobody = base - 5;
  std::vector<gid> g2 = good_ghosts;
  if (me == p - 1) g2.push_back(nobody);
  REQUIRE_HALOX_ERROR(halox::unstructured(world, own, g2),
                      fmt::format("rank {}: ghost id {} is owned by no rank", p - 1, nobody));
  // the same id owned by ranks 0 and 1: named, with both ranks, whatever rank keeps its entry
  if (p > 1) {
    auto dup = own;
    if (me == 1) dup.push_back(id_of(0, 2));
    REQUIRE_HALOX_ERROR(halox::unstructured(world, dup, good_ghosts),
                        fmt::format("id {} is owned by ranks 0 and 1", id_of(0, 2)));
  }
  // still usable with good input
  halox::unstructured ok(world, own, good_ghosts);
  REQUIRE(ok.ghost_count() == idx(good_ghosts.size()));
}

TEST_CASE("unstructured: given owners that are wrong, out of range, or this rank") {
  mpi::communicator world;
  const int me = world.rank(), p = world.size();
  const auto own = owned_of(me);
  if (p == 1) {
    const std::vector<gid> g{base - 1};
    const std::vector<int> o{0};
    halox::unstructured_options opt;
    opt.ghost_owners = o;
    REQUIRE_HALOX_ERROR(
        halox::unstructured(world, own, g, opt),
        fmt::format("rank 0: ghost id {} has owner rank 0, not another rank in [0, 1)", base - 1));
    return;
  }
  const std::vector<gid> ghost{id_of((me + 1) % p, 1)};
  halox::unstructured_options opt;
  // rank 0 names rank 2 as the owner of rank 1's id: rank 2 refuses
  std::vector<int> owners{(me + 1) % p};
  if (me == 0 && p > 2) owners[0] = 2;
  opt.ghost_owners = owners;
  if (p > 2)
    REQUIRE_HALOX_ERROR(
        halox::unstructured(world, own, ghost, opt),
        fmt::format("rank 2: rank 0 expects this rank to own id {}, which it does not",
                    id_of(1, 1)));
  // out of range, and the rank itself
  std::vector<int> bad{p};
  opt.ghost_owners = bad;
  REQUIRE_HALOX_ERROR(
      halox::unstructured(world, own, ghost, opt),
      fmt::format("rank 0: ghost id {} has owner rank {}, not another rank in [0, {})", id_of(1, 1),
                  p, p));
  std::vector<int> self{me};
  opt.ghost_owners = self;
  REQUIRE_HALOX_ERROR(halox::unstructured(world, own, ghost, opt),
                      fmt::format("has owner rank 0, not another rank in [0, {})", p));
  std::vector<int> two{(me + 1) % p, (me + 1) % p};
  opt.ghost_owners = two;
  REQUIRE_HALOX_ERROR(halox::unstructured(world, own, ghost, opt),
                      "rank 0: 2 ghost owners for 1 ghost ids");
  // given owners everywhere but on a rank with no ghosts (which has none to give): the
  // pattern builds, and its owners are the given ones
  std::vector<int> right{(me + 1) % p};
  opt.ghost_owners = me == 0 ? std::span<const int>{} : std::span<const int>(right);
  const std::vector<gid> none;
  halox::unstructured pat(world, own, me == 0 ? none : ghost, opt);
  REQUIRE(pat.ghost_count() == (me == 0 ? 0 : 1));
  if (me != 0) REQUIRE(pat.ghost_owners() == right);
  // owners given on some ranks, discovered on others: an id owned twice is found
  auto dup = own;
  if (me == 1) dup.push_back(id_of(0, 2));
  opt.ghost_owners = me == 1 ? std::span<const int>(right) : std::span<const int>{};
  REQUIRE_HALOX_ERROR(halox::unstructured(world, dup, ghost, opt),
                      fmt::format("id {} is owned by ranks 0 and 1", id_of(0, 2)));
}

TEST_CASE("unstructured: local index lists out of range, repeated, of the wrong length") {
  mpi::communicator world;
  const int me = world.rank(), p = world.size();
  const auto own = owned_of(me);
  const std::vector<gid> ghost =
      p > 1 ? std::vector<gid>{id_of((me + 1) % p, 0)} : std::vector<gid>{};
  const idx ng = idx(ghost.size());
  auto with = [&](const std::vector<idx>& ol, const std::vector<idx>& loc_g, idx count) {
    halox::unstructured_options o;
    o.owned_local = ol;
    o.ghost_local = loc_g;
    o.local_count = count;
    return halox::unstructured(world, own, ghost, o);
  };
  std::vector<idx> gl;
  for (idx k = 0; k < ng; ++k) gl.push_back(3 + k);
  REQUIRE_HALOX_ERROR(with({0, 7, 1}, gl, 3 + ng),
                      fmt::format("rank 0: owned_local[1] = 7 is outside [0, {})", 3 + ng));
  REQUIRE_HALOX_ERROR(with({0, -1, 1}, gl, 3 + ng), "owned_local[1] = -1 is outside");
  REQUIRE_HALOX_ERROR(with({2, 0, 2}, gl, 3 + ng),
                      "rank 0: local index 2 is used twice (owned_local[2])");
  REQUIRE_HALOX_ERROR(with({0, 1}, gl, 3 + ng), "rank 0: 2 owned local indices for 3 owned ids");
  REQUIRE_HALOX_ERROR(with({0, 1, 2}, gl, 2 + ng),
                      p == 1 ? "rank 0: owned_local[2] = 2 is outside [0, 2)"
                             : "rank 0: ghost_local[0] = 3 is outside [0, 3)");
  if (p > 1) {
    REQUIRE_HALOX_ERROR(with({0, 1, 2}, {1}, 4),
                        "rank 0: local index 1 is used twice (ghost_local[0])");
    REQUIRE_HALOX_ERROR(with({0, 1, 2}, {4}, 4), "rank 0: ghost_local[0] = 4 is outside [0, 4)");
    REQUIRE_HALOX_ERROR(with({0, 1, 2}, {3, 4}, 5),
                        "rank 0: 2 ghost local indices for 1 ghost ids");
    // the default ghost indices follow the owned ones: too small a local_count
    halox::unstructured_options o;
    o.local_count = 3;
    REQUIRE_HALOX_ERROR(halox::unstructured(world, own, ghost, o),
                        "rank 0: ghost_local[0] = 3 is outside [0, 3)");
  }
  // an error on one rank only
  std::vector<idx> ol{0, 1, 2};
  if (me == p - 1) ol[2] = 1;
  REQUIRE_HALOX_ERROR(with(ol, gl, 3 + ng),
                      fmt::format("rank {}: local index 1 is used twice", p - 1));
  std::string msg;
  try {
    (void)with(ol, gl, 3 + ng);
  } catch (const halox::error& e) {
    msg = e.what();
  }
  if (me != p - 1)
    REQUIRE_THAT(msg, Catch::Contains("stopped because another rank rejected its input"));
  REQUIRE_THAT(msg, Catch::StartsWith(fmt::format("halox: rank {}: ", me)));
}

TEST_CASE("unstructured fields: wrong patterns, sizes, layouts; reductions on structs") {
  mpi::communicator world;
  const int me = world.rank(), p = world.size();
  const auto own = owned_of(me);
  const std::vector<gid> ghost =
      p > 1 ? std::vector<gid>{id_of((me + 1) % p, 0)} : std::vector<gid>{};
  const halox::unstructured pat(world, own, ghost);
  const halox::unstructured other(world, own, ghost);
  halox::unstructured_options big;
  big.local_count = pat.local_count() + 5;
  const halox::unstructured larger(world, own, ghost, big);
  const idx n = pat.local_count();

  auto a = pat.make_field<double>(2, halox::entity_layout::entity_major, halox::host, "a");
  std::vector<double> mem(std::size_t(n + 5) * 2, 4.25);
  // memory of the right size for `larger`, wrapped through it: its field belongs to `larger`
  auto b =
      larger.wrap<double>(mem.data(), 2, halox::entity_layout::entity_major, -1, halox::host, "b");
  auto c = other.make_field<int>(1, halox::entity_layout::entity_major, halox::host, "c");
  auto t =
      pat.make_field<test_support::triple>(1, halox::entity_layout::entity_major, halox::host, "t");
  for (idx e = 0; e < n; ++e) a(e, 0) = double(e), a(e, 1) = -double(e);
  const std::vector<double> a_before(a.data(), a.data() + 2 * n);
  const auto mem_before = mem;

  REQUIRE_HALOX_ERROR(halox::make_exchange(pat, a, b),
                      "rank 0: field #1 'b' belongs to another pattern");
  REQUIRE_HALOX_ERROR(halox::make_exchange(larger, b, a),
                      "rank 0: field #1 'a' belongs to another pattern");
  REQUIRE_HALOX_ERROR(halox::make_exchange(pat, c),
                      "rank 0: field #0 'c' belongs to another pattern");
  REQUIRE_HALOX_ERROR(halox::make_exchange(pat, a, halox::entity_field<float>{}),
                      "rank 0: field #1 is empty (default-constructed)");
  REQUIRE_HALOX_ERROR(
      halox::make_reverse_exchange(pat, halox::reduction::sum, a, t),
      "rank 0: field #1 't': reduction 'sum' needs an arithmetic value type; use replace");
  REQUIRE_HALOX_ERROR(halox::make_reverse_exchange(pat, halox::reduction::max, t),
                      "field #0 't': reduction 'max' needs an arithmetic value type");
  REQUIRE_HALOX_ERROR(
      halox::make_reverse_exchange(pat, halox::reduction::min, a, other.make_field<double>()),
      "rank 0: field #1 '(unnamed)' belongs to another pattern");
  // user memory declared as device memory, in a build without CUDA
  if (!halox::detail::cuda_enabled()) {
    std::vector<float> dev(std::size_t(n) + 1, 1.5f);
    auto d =
        pat.wrap<float>(dev.data(), 1, halox::entity_layout::entity_major, -1, halox::device, "d");
    REQUIRE_HALOX_ERROR(
        halox::make_reverse_exchange(pat, halox::reduction::sum, d),
        "rank 0: field #0 'd' lives in device memory; this halox was built without CUDA");
    REQUIRE(std::all_of(dev.begin(), dev.end(), [](float x) { return x == 1.5f; }));  // untouched
  }
  // field construction
  REQUIRE_HALOX_ERROR(
      pat.make_field<double>(0, halox::entity_layout::entity_major, halox::host, "z"),
      fmt::format("rank {}: field 'z' needs at least one component, got 0", me));
  REQUIRE_HALOX_ERROR(pat.wrap<double>(mem.data(), 2, halox::entity_layout::entity_major, 4),
                      "is entity-major, its component stride is 1, not 4");
  if (n > 1)
    REQUIRE_HALOX_ERROR(
        pat.wrap<double>(mem.data(), 2, halox::entity_layout::component_major, n - 1, halox::host,
                         "s"),
        fmt::format("field 's' has component stride {}, less than its {} entities", n - 1, n));
  REQUIRE_HALOX_ERROR(pat.wrap<double>(nullptr, 1), "wraps a null pointer");
  // nothing was written
  REQUIRE(std::equal(a_before.begin(), a_before.end(), a.data()));
  REQUIRE(mem == mem_before);
  // a second start while in flight
  auto ex = halox::make_exchange(pat, a);
  auto h = ex.start();
  REQUIRE_HALOX_ERROR((void)ex.start(),
                      "start() called while this object's previous exchange is still in flight");
  h.wait();
  // replace on structs is fine
  auto rt = halox::make_reverse_exchange(pat, halox::reduction::replace, t);
  rt.exchange();
}

TEST_CASE("structured reverse: combining reductions need arithmetic types; padding") {
  mpi::communicator world;
  constexpr auto st = halox::stencil<2>::box(1);
  halox::cartesian<2> dom(world, {8, 6}, halox::periodic{true, true});
  halox::field_options named;
  named.name = "trip";
  auto t = dom.make_field<test_support::triple>(st, halox::host, named);
  auto u = dom.make_field<double>(st);
  test_support::fill(dom, t, {0, 0});
  test_support::fill(dom, u, {1, 0});
  const auto st_ = test_support::snapshot(t);
  const auto su = test_support::snapshot(u);
  REQUIRE_HALOX_ERROR(
      halox::make_reverse_exchange(dom, st, halox::reduction::sum, u, t),
      "rank 0: field #1 'trip': reduction 'sum' needs an arithmetic value type; use replace");
  REQUIRE_HALOX_ERROR(
      halox::make_reverse_exchange(dom, halox::stencil<2>::box(2), halox::reduction::sum, u),
      "has padding 1/1 in dimension 0 but the stencil's halo is 2/2");
  halox::cartesian<2> dom2(world, {8, 6}, halox::periodic{true, true});
  REQUIRE_HALOX_ERROR(halox::make_reverse_exchange(dom2, st, halox::reduction::max, u),
                      "field #0 '(unnamed)' belongs to another domain");
  REQUIRE(test_support::snapshot(t) == st_);
  REQUIRE(test_support::snapshot(u) == su);
  auto ok = halox::make_reverse_exchange(dom, st, halox::reduction::replace, t);
  (void)ok;
}
