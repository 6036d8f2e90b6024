// Shared memory with one copy: messages whose fields are halox's own on both ranks go straight
// from the sender's owned cells into the receiver's halo, copied by whichever rank gets there
// first. describe() says which messages go that way (wrapped fields, HALOX_SHM_INTO=buffer and
// messages below HALOX_SHM_DIRECT_MIN keep two copies); a rank's wait() returns only once every
// reader has copied its owned cells (an owner that overwrites them at once must not corrupt a
// slow neighbour's halo), and no rank writes a halo before its owner has started the exchange
// (a slow rank's halo keeps the last exchange's values until then). test_strict runs its
// progress cases (a collective between start() and wait() on some ranks) on one copy too.
// Every exchange is checked against the global coordinates encoded in the data.
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "check.hpp"
#include "support.hpp"

namespace mpi = boost::mpi;

namespace {

using hxt::scoped_env;

constexpr const char* one_copy = "one copy, straight from the sender's owned cells";

// Lines of describe() that name the one-copy path.
int one_copy_lines(const std::string& d) {
  int n = 0;
  for (std::size_t at = 0; (at = d.find(one_copy, at)) != std::string::npos; ++at) ++n;
  return n;
}

}  // namespace

TEST_CASE("one copy: owned fields go straight into the halo, wrapped ones keep two copies") {
  mpi::communicator world;
  const int P = world.size();
  // Large enough that every rank has a message above the default shm_direct_min_bytes.
  const halox::cartesian<3> dom(world, {48, 44, 40}, halox::periodic{true, true, false});
  constexpr auto st = halox::stencil<3>::box(2);
  auto a = dom.make_field<double>(st);
  auto b = dom.make_field<float>(st, halox::host, 3);
  // The same shape in memory the user allocated (wrapped): peers cannot map it.
  const auto n = dom.local_boxes()[0].size();
  const halox::extents<3> alloc{n[0] + 4, n[1] + 4, n[2] + 4};
  std::vector<double> mem(std::size_t(alloc[0] * alloc[1] * alloc[2]));
  auto w = dom.wrap<double>(mem.data(), alloc, {2, 2, 2}, {2, 2, 2});
  struct mode {
    const char* what;
    bool wrapped;
    const char* var;
    const char* value;
  };
  const auto m = GENERATE(mode{"owned fields", false, "HALOX_SHM_INTO", nullptr},
                          mode{"a wrapped field", true, "HALOX_SHM_INTO", nullptr},
                          mode{"HALOX_SHM_INTO=buffer", false, "HALOX_SHM_INTO", "buffer"},
                          mode{"messages below the threshold", false, "HALOX_SHM_DIRECT_MIN", "1G"});
  CAPTURE(m.what);
  scoped_env env(m.var, m.value);
  auto ex = m.wrapped ? halox::make_exchange(dom, st, a, b, w) : halox::make_exchange(dom, st, a, b);
  const std::string d = ex.describe();
  INFO(d);
  const bool direct = !m.wrapped && m.value == nullptr;
  if (P > 1) {
    CHECK((one_copy_lines(d) > 0) == direct);
    CHECK(d.find("via shared memory") != std::string::npos);
  }
  for (int round = 0; round < 4; ++round) {
    hxt::fill(dom, a, {0, round});
    hxt::fill(dom, b, {1, round});
    hxt::fill(dom, w, {2, round});
    if (round % 2) {
      auto h = ex.start();
      while (!h.test()) {
      }
    } else {
      ex.exchange();
    }
    HXT_REQUIRE_OK(hxt::check(dom, a, st, {0, round}));
    HXT_REQUIRE_OK(hxt::check(dom, b, st, {1, round}));
    if (m.wrapped) HXT_REQUIRE_OK(hxt::check(dom, w, st, {2, round}));
  }
}

TEST_CASE("one copy: owners overwrite their cells right after wait(), slow ranks read late") {
  // Even ranks overwrite their owned cells the moment wait() returns; odd ranks are slow (they
  // sleep inside every other exchange, and after each before looking at their halos again). A
  // wait() that returned before its readers had finished copying would hand them overwritten
  // values (the fields are large, so copies take a while); a sender that wrote a halo before its
  // owner started the next exchange would change it under the slow rank's second look. Results
  // are recorded and checked together at the end (a check is collective).
  mpi::communicator world;
  const int me = world.rank();
  const bool slow = me % 2 == 1;
  const bool buffer = GENERATE(false, true);
  CAPTURE(buffer);
  halox::exchange_options o;
  o.shm_into_fields = !buffer;
  o.shm_direct_min_bytes = 0;
  const halox::cartesian<3> dom(world, {96, 40, 40}, halox::periodic{true, true, true},
                                halox::process_grid<3>{{world.size(), 1, 1}});
  constexpr auto st = halox::stencil<3>::box(2);
  auto a = dom.make_field<double>(st);
  auto b = dom.make_field<double>(st);
  auto ex = halox::make_exchange(dom, st, o, a, b);
  const auto n = dom.global_box().hi;
  const auto nap = std::chrono::milliseconds(2);
  std::vector<hxt::result> results;
  for (int round = 1; round <= 12; ++round) {
    hxt::fill(dom, a, {0, round});
    hxt::fill(dom, b, {1, round});
    auto h = ex.start();
    if (slow && round % 2) std::this_thread::sleep_for(nap);
    h.wait();
    if (slow) std::this_thread::sleep_for(nap);  // the others start the next exchange meanwhile
    results.push_back(hxt::check(dom, a, st, {0, round}));  // (as many checks on every rank)
    results.push_back(hxt::check(dom, b, st, {1, round}));
    if (!slow) {  // no reader may still be copying
      hxt::fill_owned(a, n, {0, 1000 + round});
      hxt::fill_owned(b, n, {1, 1000 + round});
    }
  }
  for (const auto& r : results) HXT_REQUIRE_OK(r);
}
