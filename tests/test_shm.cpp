// The shared-memory transport for host fields: chosen for node-local peers, forced off with
// HALOX_HOST_TRANSPORT=mpi, mixed with MPI in one exchange (HALOX_PEER_SHM_RANKS), every way
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
#include <string>

#include "check.hpp"
#include "support.hpp"

namespace mpi = boost::mpi;

namespace {

using hxt::scoped_env;

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
    const char *transport, *ranks;
  };
  const auto m = GENERATE(mode{nullptr, nullptr}, mode{"mpi", nullptr}, mode{nullptr, "0,1"},
                          mode{nullptr, "1"});
  CAPTURE(m.transport ? m.transport : "auto", m.ranks ? m.ranks : "all");
  const halox::cartesian<3> dom(world, {13, 10, 9}, halox::periodic{true, true, false});
  constexpr auto st = halox::stencil<3>::box(2);
  auto a = dom.make_field<double>(st);
  auto b = dom.make_field<int>(st, halox::host, 2);
  hxt::fill(dom, a, {0, 0});
  hxt::fill(dom, b, {1, 0});
  scoped_env t("HALOX_HOST_TRANSPORT", m.transport), r("HALOX_PEER_SHM_RANKS", m.ranks);
  auto ex = halox::make_exchange(dom, st, a, b);
  const std::string d = ex.describe();
  INFO(d);
  const bool has_peers = d.find("send to") != std::string::npos;
  // Which ranks may use shared memory in this mode, and so which must not.
  const bool may = !m.transport && (!m.ranks || (std::string(m.ranks) == "0,1" ? me <= 1 : false));
  if (!may) CHECK(shared_lines(d) == 0);
  if (may && has_peers && !m.ranks) CHECK(shared_lines(d) > 0);
  if (m.ranks && std::string(m.ranks) == "0,1" && P >= 2 && me <= 1) CHECK(shared_lines(d) > 0);
  for (int round = 0; round < 3; ++round) {
    hxt::fill(dom, a, {0, round});
    hxt::fill(dom, b, {1, round});
    if (round == 1) {
      auto h = ex.start();
      while (!h.test()) {
      }
    } else {
      ex.exchange();
    }
    HXT_REQUIRE_OK(hxt::check(dom, a, st, {0, round}));
    HXT_REQUIRE_OK(hxt::check(dom, b, st, {1, round}));
  }
}

TEST_CASE("shared memory: two objects completed in opposite orders on alternate ranks") {
  mpi::communicator world;
  const halox::cartesian<2> dom(world, {16, 12}, halox::periodic{true, true});
  constexpr auto st = halox::stencil<2>::box(1);
  auto u = dom.make_field<double>(st), v = dom.make_field<double>(st);
  auto ex_u = halox::make_exchange(dom, st, u), ex_v = halox::make_exchange(dom, st, v);
  for (int round = 0; round < 20; ++round) {
    hxt::fill(dom, u, {0, round});
    hxt::fill(dom, v, {1, round});
    if (world.rank() % 2 == 0) {
      auto hu = ex_u.start();
      auto hv = ex_v.start();
      hv.wait();
      hu.wait();
    } else {
      ex_u.exchange();
      ex_v.exchange();
    }
    HXT_REQUIRE_OK(hxt::check(dom, u, st, {0, round}));
    HXT_REQUIRE_OK(hxt::check(dom, v, st, {1, round}));
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
    hxt::fill(dom, u, {0, k});
    ex.exchange();
    HXT_REQUIRE_OK(hxt::check(dom, u, st, {0, k}));
  }
  CHECK(count_entries("fd") == fds);
  // Mappings may vary by a few with the allocator's own arenas, never by one per object.
  CHECK(count_entries("maps") <= maps + 8);
}
