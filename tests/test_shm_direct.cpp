// Shared memory with one copy: a message goes straight from the sender's owned cells into the
// receiver's halo, copied by whichever rank gets there first: by mapping the peer's field where
// both fields are halox's own, by cross-memory attach (process_vm_readv/writev) where either is
// the application's memory (wrapped). describe() says which messages go that way
// (HALOX_SHM_INTO=buffer, HALOX_SHM_CROSS=off for wrapped memory, a system that refuses
// cross-memory attach and messages below HALOX_SHM_DIRECT_MIN keep two copies); a rank's wait()
// returns only once every reader has copied its owned cells (an owner that overwrites them at
// once must not corrupt a slow neighbour's halo), and no rank writes a halo before its owner has
// started the exchange (a slow rank's halo keeps the last exchange's values until then).
// test_strict runs its progress cases (a collective between start() and wait() on some ranks)
// on one copy too. Every exchange is checked against the global coordinates encoded in the data.
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "check.hpp"
#include "support.hpp"
#include "transport/cross_memory.hpp"

namespace mpi = boost::mpi;

namespace {

using test_support::scoped_env;
using test_support::scoped_flag;

constexpr const char* one_copy =
    "one copy";  // all messages or some (", where the fields allow it")
constexpr const char* cross = "by cross-memory attach";
constexpr const char* refused = "refuses cross-memory attach";

// Lines of describe() that name the one-copy path.
int one_copy_lines(const std::string& d) {
  int n = 0;
  for (std::size_t at = 0; (at = d.find(one_copy, at)) != std::string::npos; ++at) ++n;
  return n;
}

}  // namespace

// A wrapped field over memory of its own with the shape halox's own would have (padding 2).
template <class T, class Alloc = std::allocator<T>>
struct wrapped {
  std::vector<T, Alloc> mem;
  halox::field<T, 3> f;
  wrapped(const halox::cartesian<3>& dom, int comps = 1) {
    const auto n = dom.local_boxes()[0].size();
    const halox::extents<3> alloc{n[0] + 4, n[1] + 4, n[2] + 4};
    mem.resize(std::size_t(alloc[0] * alloc[1] * alloc[2] * comps));
    halox::field_options o;
    o.components = comps;
    f = dom.wrap<T>(mem.data(), alloc, {2, 2, 2}, {2, 2, 2}, o);
  }
};

TEST_CASE("one copy: halox's fields by mapping, wrapped ones by cross-memory attach") {
  mpi::communicator world;
  const int P = world.size(), me = world.rank();
  // Large enough that every rank has a message above the default shm_direct_min_bytes.
  const halox::cartesian<3> dom(world, {48, 44, 40}, halox::periodic{true, true, false});
  constexpr auto st = halox::stencil<3>::box(2);
  auto a = dom.make_field<double>(st);
  auto b = dom.make_field<float>(st, halox::host, 3);
  wrapped<double> w(dom);
  wrapped<float> v(dom, 3);
  wrapped<double, halox::node_shared_allocator<double>> ws(dom);
  wrapped<float, halox::node_shared_allocator<float>> vs(dom, 3);
  struct mode {
    const char* what;
    int wrap;  // 0: halox's fields, 1: one of three wrapped, 2: all wrapped, 3: all wrapped
               // over node_shared_allocator arrays
    const char* var;
    const char* value;
    bool direct;  // one copy where the pair allows it
    bool cross;   // by cross-memory attach
    bool deny;    // rank 1's system refuses cross-memory attach
  };
  const auto m = GENERATE(
      mode{"halox's fields", 0, "HALOX_SHM_INTO", nullptr, true, false, false},
      mode{"node_shared_allocator", 3, "HALOX_SHM_INTO", nullptr, true, false, false},
      mode{"a wrapped field", 1, "HALOX_SHM_INTO", nullptr, false, false, false},
      mode{"a wrapped field, HALOX_SHM_CROSS=on", 1, "HALOX_SHM_CROSS", "on", true, true, false},
      mode{"wrapped fields, HALOX_SHM_CROSS=on", 2, "HALOX_SHM_CROSS", "on", true, true, false},
      mode{"rank 1 refuses", 2, "HALOX_SHM_CROSS", "on", true, true, true},
      mode{"HALOX_SHM_INTO=buffer", 3, "HALOX_SHM_INTO", "buffer", false, false, false},
      mode{"below the threshold", 3, "HALOX_SHM_DIRECT_MIN", "1G", false, false, false});
  CAPTURE(m.what);
  scoped_env env(m.var, m.value);
  scoped_flag deny(halox::detail::testing::deny_cross_memory, m.deny && me == 1);
  // The fields the exchange holds: the first two checked every round, the third with wrap 1.
  const auto f0 = m.wrap == 0 || m.wrap == 1 ? a : m.wrap == 2 ? w.f : ws.f;
  const auto f1 = m.wrap == 0 || m.wrap == 1 ? b : m.wrap == 2 ? v.f : vs.f;
  auto ex = m.wrap == 1 ? halox::make_exchange(dom, st, f0, f1, w.f)
                        : halox::make_exchange(dom, st, f0, f1);
  const std::string d = ex.describe();
  INFO(d);
  if (P > 1) {
    CHECK(d.find("via shared memory") != std::string::npos);
    // Rank 1 refuses, so its pairs keep two copies; a rank beside two others has a pair that
    // does not involve rank 1 (at three ranks and more).
    const bool some_direct = m.direct && !(m.deny && (me == 1 || P == 2));
    CHECK((one_copy_lines(d) > 0) == some_direct);
    CHECK((d.find(cross) != std::string::npos) == (some_direct && m.cross));
    CHECK((d.find(refused) != std::string::npos) == (m.deny && me == 1));
  }
  for (int round = 0; round < 4; ++round) {
    test_support::fill(dom, f0, {0, round});
    test_support::fill(dom, f1, {1, round});
    if (m.wrap == 1) test_support::fill(dom, w.f, {2, round});
    if (round % 2) {
      auto h = ex.start();
      while (!h.test()) {
      }
    } else {
      ex.exchange();
    }
    HXT_REQUIRE_OK(test_support::check(dom, f0, st, {0, round}));
    HXT_REQUIRE_OK(test_support::check(dom, f1, st, {1, round}));
    if (m.wrap == 1) HXT_REQUIRE_OK(test_support::check(dom, w.f, st, {2, round}));
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
  const bool wrap = GENERATE(false, true);  // wrapped arrays, one copy by cross-memory attach
  CAPTURE(buffer, wrap);
  halox::exchange_options o;
  o.shm_into_fields = !buffer;
  o.shm_direct_min_bytes = 0;
  o.shm_cross_memory = wrap;
  const halox::cartesian<3> dom(world, {96, 40, 40}, halox::periodic{true, true, true},
                                halox::process_grid<3>{{world.size(), 1, 1}});
  constexpr auto st = halox::stencil<3>::box(2);
  wrapped<double> wa(dom), wb(dom);
  auto a = wrap ? wa.f : dom.make_field<double>(st);
  auto b = wrap ? wb.f : dom.make_field<double>(st);
  auto ex = halox::make_exchange(dom, st, o, a, b);
  const auto n = dom.global_box().hi;
  const auto nap = std::chrono::milliseconds(2);
  std::vector<test_support::result> results;
  for (int round = 1; round <= 12; ++round) {
    test_support::fill(dom, a, {0, round});
    test_support::fill(dom, b, {1, round});
    auto h = ex.start();
    if (slow && round % 2) std::this_thread::sleep_for(nap);
    h.wait();
    if (slow) std::this_thread::sleep_for(nap);  // the others start the next exchange meanwhile
    results.push_back(
        test_support::check(dom, a, st, {0, round}));  // (as many checks on every rank)
    results.push_back(test_support::check(dom, b, st, {1, round}));
    if (!slow) {  // no reader may still be copying
      test_support::fill_owned(a, n, {0, 1000 + round});
      test_support::fill_owned(b, n, {1, 1000 + round});
    }
  }
  for (const auto& r : results) HXT_REQUIRE_OK(r);
}
