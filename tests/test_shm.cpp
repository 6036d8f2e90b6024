// The shared-memory transport for host fields: chosen for node-local peers, turned off by
// exchange_options (or HALOX_HOST_TRANSPORT=mpi, which overrides them), mixed with MPI in one
// exchange (peer_shm_ranks), inside virtual nodes only (node_size), every way
// checked against the global coordinates encoded in the data; describe() names each peer's
// path; two objects completed in opposite orders on different ranks.
//
// The rest of the suite runs on shared memory too (it is the default between ranks of one
// node), and tests/CMakeLists.txt runs the exchange, unstructured and reverse tests again with
// MPI only and mixed.
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "check.hpp"
#include "support.hpp"

namespace mpi = boost::mpi;

namespace {

using test_support::scoped_env;

// Counts the lines of describe() that name the shared-memory path.
int shared_lines(const std::string& d) {
  int n = 0;
  for (std::size_t at = 0; (at = d.find("via shared memory", at)) != std::string::npos; ++at) ++n;
  return n;
}

}  // namespace

TEST_CASE("host transports: shared memory, MPI only and mixed give the same halos") {
  mpi::communicator world;
  const int P = world.size(), me = world.rank();
  struct mode {
    bool shared;
    std::optional<std::vector<int>> ranks;
  };
  const auto m = GENERATE(mode{true, {}}, mode{false, {}}, mode{true, std::vector{0, 1}},
                          mode{true, std::vector{1}});
  CAPTURE(m.shared, m.ranks ? m.ranks->size() : 0);
  const halox::cartesian<3> dom(world, {13, 10, 9}, halox::periodic{true, true, false});
  constexpr auto st = halox::stencil<3>::box(2);
  auto a = dom.make_field<double>(st);
  auto b = dom.make_field<int>(st, halox::host, 2);
  test_support::fill(dom, a, {0, 0});
  test_support::fill(dom, b, {1, 0});
  halox::exchange_options o;
  o.host_shared_memory = m.shared;
  o.peer_shm_ranks = m.ranks;
  auto ex = halox::make_exchange(dom, st, o, a, b);
  const std::string d = ex.describe();
  INFO(d);
  const bool has_peers = d.find("send to") != std::string::npos;
  // Which ranks may use shared memory in this mode, and so which must not.
  const bool pair01 = m.ranks && m.ranks->size() == 2;
  const bool may = m.shared && (!m.ranks || (pair01 && me <= 1));
  if (!may) CHECK(shared_lines(d) == 0);
  if (may && has_peers && !m.ranks) CHECK(shared_lines(d) > 0);
  if (pair01 && P >= 2 && me <= 1) CHECK(shared_lines(d) > 0);
  for (int round = 0; round < 3; ++round) {
    test_support::fill(dom, a, {0, round});
    test_support::fill(dom, b, {1, round});
    if (round == 1) {
      auto h = ex.start();
      while (!h.test()) {
      }
    } else {
      ex.exchange();
    }
    HXT_REQUIRE_OK(test_support::check(dom, a, st, {0, round}));
    HXT_REQUIRE_OK(test_support::check(dom, b, st, {1, round}));
  }
}

TEST_CASE("host transports: the environment overrides the options") {
  mpi::communicator world;
  const halox::cartesian<2> dom(world, {12, 8}, halox::periodic{true, true});
  constexpr auto st = halox::stencil<2>::star(1);
  auto a = dom.make_field<double>(st);
  halox::exchange_options o;                    // shared memory allowed in code ...
  scoped_env t("HALOX_HOST_TRANSPORT", "mpi");  // ... and turned off for this run
  auto ex = halox::make_exchange(dom, st, o, a);
  INFO(ex.describe());
  CHECK(shared_lines(ex.describe()) == 0);
  test_support::fill(dom, a, {0, 0});
  ex.exchange();
  HXT_REQUIRE_OK(test_support::check(dom, a, st, {0, 0}));
}

TEST_CASE("virtual nodes: shared memory inside a block of node_size ranks, MPI between blocks") {
  mpi::communicator world;
  const int P = world.size(), me = world.rank();
  const int k = GENERATE(1, 2, 3);
  CAPTURE(k);
  // A ring of P ranks along dimension 0 (periodic): each rank talks to me - 1 and me + 1.
  const halox::cartesian<2> dom(world, {4 * P, 6}, halox::periodic{true, true},
                                halox::process_grid<2>{{P, 1}});
  constexpr auto st = halox::stencil<2>::box(1);
  auto a = dom.make_field<double>(st);
  halox::exchange_options o;
  o.node_size = k;
  auto ex = halox::make_exchange(dom, st, o, a);
  const std::string d = ex.describe();
  INFO(d);
  CHECK(d.find(fmt::format("virtual node of {} rank(s)", std::min(k, P - me / k * k))) !=
        std::string::npos);
  for (int peer : {(me + P - 1) % P, (me + 1) % P}) {
    if (peer == me) continue;
    const bool inside = peer / k == me / k;
    const auto line = fmt::format("send to {}: ", peer);
    const auto at = d.find(line);
    REQUIRE(at != std::string::npos);
    const auto end = d.find('\n', at);
    const std::string l = d.substr(at, end == std::string::npos ? end : end - at);
    CHECK((l.find("via shared memory") != std::string::npos) == inside);
  }
  for (int round = 0; round < 3; ++round) {
    test_support::fill(dom, a, {0, round});
    ex.exchange();
    HXT_REQUIRE_OK(test_support::check(dom, a, st, {0, round}));
  }
}

TEST_CASE("shared memory: two objects completed in opposite orders on alternate ranks") {
  mpi::communicator world;
  const halox::cartesian<2> dom(world, {16, 12}, halox::periodic{true, true});
  constexpr auto st = halox::stencil<2>::box(1);
  auto u = dom.make_field<double>(st), v = dom.make_field<double>(st);
  auto ex_u = halox::make_exchange(dom, st, u), ex_v = halox::make_exchange(dom, st, v);
  for (int round = 0; round < 20; ++round) {
    test_support::fill(dom, u, {0, round});
    test_support::fill(dom, v, {1, round});
    if (world.rank() % 2 == 0) {
      auto hu = ex_u.start();
      auto hv = ex_v.start();
      hv.wait();
      hu.wait();
    } else {
      ex_u.exchange();
      ex_v.exchange();
    }
    HXT_REQUIRE_OK(test_support::check(dom, u, st, {0, round}));
    HXT_REQUIRE_OK(test_support::check(dom, v, st, {1, round}));
  }
}

namespace {
// Lines of a /proc/self file (open descriptors, mappings): what a leak would grow.
std::size_t count_entries(const char* what) {
  if (std::string(what) == "fd") {
    std::size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd"))
      n += !e.path().empty();
    return n;
  }
  std::ifstream in("/proc/self/maps");
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}
}  // namespace

TEST_CASE("shared memory: many exchange objects leak no descriptors or mappings") {
  mpi::communicator world;
  const halox::cartesian<2> dom(world, {12, 10}, halox::periodic{true, true});
  constexpr auto st = halox::stencil<2>::box(1);
  auto u = dom.make_field<double>(st);
  {
    auto warm = halox::make_exchange(dom, st, u);
    warm.exchange();
  }  // MPI's own set-up
  const std::size_t fds = count_entries("fd"), maps = count_entries("maps");
  for (int k = 0; k < 100; ++k) {
    auto ex = halox::make_exchange(dom, st, u);
    test_support::fill(dom, u, {0, k});
    ex.exchange();
    HXT_REQUIRE_OK(test_support::check(dom, u, st, {0, k}));
  }
  CHECK(count_entries("fd") == fds);
  // Mappings may vary by a few with the allocator's own arenas, never by one per object.
  CHECK(count_entries("maps") <= maps + 8);
}
