// Strictness across ranks: ranks that declare different exchanges fail together at
// make_exchange with a message naming both ranks and what differs; the transports check message
// sizes themselves; an exchange that fails at run time leaves a safe object; start() never waits
// for a peer's progress (shared memory included); transport environment variables that differ
// between ranks still work; a system that forbids mapping peers' buffers falls back to MPI and
// says why. Every exchange that completes is checked against the global coordinates encoded in
// the data.
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <cstdlib>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "check.hpp"
#include "exchange/peer_agreement.hpp"
#include "support.hpp"
#include "transport/shm_mailbox.hpp"

namespace mpi = boost::mpi;

namespace {

using test_support::scoped_env;
using test_support::scoped_flag;

// Runs `make` (which builds an exchange) on every rank and requires halox::error on every rank
// with every piece of `texts` in its message, and the fields unchanged.
template <class Make>
void require_refused(Make&& make, std::initializer_list<std::string> texts) {
  std::string what;
  try {
    make();
  } catch (const halox::error& e) {
    what = e.what();
  }
  INFO(what);
  REQUIRE(!what.empty());
  for (const auto& t : texts) CHECK_THAT(what, Catch::Contains(t));
}

// The host transports under test: shared memory where possible with one copy straight into
// the halos (the default), shared memory through a shared buffer (two copies), or MPI only.
enum transport { one_copy, two_copies, mpi_only };
halox::exchange_options host_transport(transport t) {
  halox::exchange_options o;
  o.host_shared_memory = t != mpi_only;
  o.shm_into_fields = t == one_copy;
  o.shm_direct_min_bytes = 0;  // (these domains are small: one copy for every message)
  return o;
}

}  // namespace

TEST_CASE("ranks that declare different exchanges fail together at make_exchange") {
  mpi::communicator world;
  const int P = world.size(), me = world.rank();
  if (P < 2) return;  // one rank has no peer to disagree with
  const auto shared = GENERATE(one_copy, two_copies, mpi_only);
  CAPTURE(shared);
  const auto opts = host_transport(shared);
  const halox::cartesian<2> dom(world, {8, 8}, halox::periodic{true, true});
  constexpr auto b1 = halox::stencil<2>::box(1), b2 = halox::stencil<2>::box(2);
  constexpr auto s1 = halox::stencil<2>::star(1);
  auto a = dom.make_field<double>(b2);
  auto f = dom.make_field<float>(b2);
  auto c3 = dom.make_field<double>(b2, halox::host, 3);
  test_support::fill(dom, a, {0, 0});
  test_support::fill(dom, f, {1, 0});
  test_support::fill(dom, c3, {2, 0});
  const auto a0 = test_support::snapshot(a), c0 = test_support::snapshot(c3);
  const auto f0 = test_support::snapshot(f);
  const bool odd = me == 1;  // rank 1 declares something else

  SECTION("a wider stencil") {
    require_refused([&] { (void)halox::make_exchange(dom, odd ? b2 : b1, opts, a); },
                    {"stencil", "rank 1", "bytes per exchange"});
  }
  SECTION("star against box of the same width") {
    require_refused([&] { (void)halox::make_exchange(dom, odd ? s1 : b1, opts, a); },
                    {"stencil", "rank 1"});
  }
  SECTION("float against double") {
    require_refused(
        [&] {
          if (odd)
            (void)halox::make_exchange(dom, b1, opts, f);
          else
            (void)halox::make_exchange(dom, b1, opts, a);
        },
        {"field #0", "float", "double", "rank 1"});
  }
  SECTION("one component against three") {
    require_refused(
        [&] {
          if (odd)
            (void)halox::make_exchange(dom, b1, opts, c3);
          else
            (void)halox::make_exchange(dom, b1, opts, a);
        },
        {"field #0", "3 component(s)", "rank 1"});
  }
  SECTION("two fields against one") {
    require_refused(
        [&] {
          if (odd)
            (void)halox::make_exchange(dom, b1, opts, a, f);
          else
            (void)halox::make_exchange(dom, b1, opts, a);
        },
        {"field count", "rank 1"});
  }
  SECTION("a reverse exchange against a forward one") {
    require_refused(
        [&] {
          if (odd)
            (void)halox::make_reverse_exchange(dom, b1, halox::reduction::sum, opts, a);
          else
            (void)halox::make_exchange(dom, b1, opts, a);
        },
        {"direction", "reverse (sum)", "forward"});
  }
  REQUIRE(test_support::snapshot(a) == a0);
  REQUIRE(test_support::snapshot(f) == f0);
  REQUIRE(test_support::snapshot(c3) == c0);
}

TEST_CASE("eight fields against one, with 32 KiB faces, fail together") {
  mpi::communicator world;
  if (world.size() < 2) return;
  const auto shared = GENERATE(one_copy, two_copies, mpi_only);
  CAPTURE(shared);
  const auto opts = host_transport(shared);
  // Split along dimension 0 only: faces of 4096 doubles (32 KiB).
  const halox::cartesian<2> dom(world, {8 * world.size(), 4096}, halox::periodic{true, true},
                                halox::process_grid<2>{world.size(), 1});
  constexpr auto st = halox::stencil<2>::star(1);
  std::vector<halox::field<double, 2>> fs;
  for (int k = 0; k < 8; ++k) fs.push_back(dom.make_field<double>(st));
  for (int k = 0; k < 8; ++k) test_support::fill(dom, fs[std::size_t(k)], {k % 8, 0});
  const auto before = test_support::snapshot(fs[0]);
  require_refused(
      [&] {
        if (world.rank() == 1)
          (void)halox::make_exchange(dom, st, opts, fs[0], fs[1], fs[2], fs[3], fs[4], fs[5], fs[6],
                                     fs[7]);
        else
          (void)halox::make_exchange(dom, st, opts, fs[0]);
      },
      {"field count", "rank 1"});
  REQUIRE(test_support::snapshot(fs[0]) == before);
}

TEST_CASE("a rank that is nobody's peer and declares something else fails everywhere too") {
  mpi::communicator world;
  const int P = world.size(), me = world.rank();
  if (P < 3) return;
  // Ranks 0 and 1 own every box; the others own none and have no peer at all.
  const std::vector<halox::owned_box<2>> boxes{{{{0, 0}, {4, 8}}, 0}, {{{4, 0}, {8, 8}}, 1}};
  const halox::box_list<2> dom(world, {8, 8}, halox::periodic{true, false}, boxes);
  constexpr auto b1 = halox::stencil<2>::box(1), b2 = halox::stencil<2>::box(2);
  auto a = dom.make_field<double>(b2);
  require_refused([&] { (void)halox::make_exchange(dom, me == P - 1 ? b2 : b1, a); },
                  {"stencil", fmt::format("rank {}", P - 1)});
}

TEST_CASE("the transports check message sizes themselves; a failed exchange leaves a safe object") {
  mpi::communicator world;
  const int me = world.rank();
  if (world.size() < 2) return;
  // Ranks 0 and 1 build exchanges of different halo widths with the set-up agreement switched
  // off (test-only), so that the transports meet messages of the wrong size.
  const mpi::communicator pair = world.split(me < 2 ? 0 : 1);
  scoped_flag skip(halox::detail::testing::skip_peer_agreement);
  constexpr auto b1 = halox::stencil<2>::box(1), b2 = halox::stencil<2>::box(2);
  const auto st = me == 1 ? b2 : b1;
  auto on_pair = [&](auto&& body) {
    if (me >= 2) return;
    const halox::cartesian<2> dom(pair, {8, 8}, halox::periodic{true, true});
    auto a = dom.make_field<double>(b2);
    test_support::fill(dom, a, {0, 0});
    body(dom, a);
  };
  SECTION("shared memory: the offer's size is checked at set-up, on both ranks") {
    on_pair([&](const auto& dom, const auto& a) {
      std::string what;
      try {
        (void)halox::make_exchange(dom, st, a);
      } catch (const halox::error& e) {
        what = e.what();
      }
      INFO(what);
      CHECK_THAT(what, Catch::Contains("shared-memory offer") || Catch::Contains("expects"));
    });
  }
  SECTION("MPI: wait() reports the size on both ranks; the object stays safe") {
    scoped_env t("HALOX_HOST_TRANSPORT", "mpi");
    on_pair([&](const auto& dom, const auto& a) {
      auto ex = halox::make_exchange(dom, st, a);
      auto h = ex.start();
      std::string what;
      try {
        h.wait();
      } catch (const halox::error& e) {
        what = e.what();
      }
      INFO(what);
      REQUIRE(!what.empty());
      CHECK_THAT(what, Catch::Contains("received") || Catch::Contains("MPI_Waitany"));
      CHECK_FALSE(ex.in_flight());
      CHECK_NOTHROW(h.wait());  // already over
      CHECK(h.test());
      CHECK_THROWS_WITH(ex.start(), Catch::Contains("an earlier one failed"));
      CHECK_THROWS_WITH(ex.exchange(), Catch::Contains("build a new exchange object"));
      CHECK_FALSE(ex.in_flight());
    });  // the destructor ran at the end of the body: it must neither wait nor crash
  }
  world.barrier();
}

TEST_CASE("start() never waits for a peer's progress (every host transport)") {
  mpi::communicator world;
  const int me = world.rank();
  const auto shared = GENERATE(one_copy, two_copies, mpi_only);
  CAPTURE(shared);
  const auto opts = host_transport(shared);
  const halox::cartesian<2> dom(world, {16, 12}, halox::periodic{true, true});
  constexpr auto st = halox::stencil<2>::box(2);
  auto a = dom.make_field<double>(st);
  auto b = dom.make_field<int>(st, halox::host, 2);
  auto ex = halox::make_exchange(dom, st, opts, a, b);
  auto fill = [&](int salt) {
    test_support::fill(dom, a, {0, salt});
    test_support::fill(dom, b, {1, salt});
  };
  // Checks are collective (every rank learns of a failure), so each rank first records its
  // results and all check them together at the end.
  std::vector<test_support::result> results;
  auto record = [&](int salt) {
    results.push_back(test_support::check(dom, a, st, {0, salt}));
    results.push_back(test_support::check(dom, b, st, {1, salt}));
  };
  // Rank 0 starts its second exchange before its peers have finished their first, then enters
  // a collective they reach only before finishing theirs: a start() that waited would hang.
  if (me == 0) {
    fill(1);
    ex.exchange();
    record(1);
    const int got = mpi::all_reduce(world, 1, std::plus<int>());
    fill(2);
    auto h = ex.start();
    const int again = mpi::all_reduce(world, got, std::plus<int>());
    h.wait();
    CHECK(again == world.size() * world.size());
    record(2);
  } else {
    fill(1);
    auto h = ex.start();
    const int got = mpi::all_reduce(world, 1, std::plus<int>());
    const int again = mpi::all_reduce(world, got, std::plus<int>());
    h.wait();
    record(1);
    CHECK(again == world.size() * world.size());
    fill(2);
    auto h2 = ex.start();
    h2.wait();
    record(2);
  }
  for (const auto& r : results) HXT_REQUIRE_OK(r);
}

TEST_CASE("a collective between start() and wait() on some ranks, after wait() on others") {
  // Odd ranks run a collective while their exchange is in flight, even ranks after theirs
  // completed: each rank's wait() may depend only on its peers having started.
  mpi::communicator world;
  const int me = world.rank();
  const auto shared = GENERATE(one_copy, two_copies, mpi_only);
  CAPTURE(shared);
  const auto opts = host_transport(shared);
  const halox::cartesian<2> dom(world, {14, 10}, halox::periodic{true, true});
  constexpr auto st = halox::stencil<2>::box(1);
  auto a = dom.make_field<double>(st);
  auto ex = halox::make_exchange(dom, st, opts, a);
  std::vector<test_support::result> results;
  for (int step = 1; step <= 20; ++step) {
    test_support::fill(dom, a, {0, step});
    auto h = ex.start();
    if (me % 2) {
      (void)mpi::all_reduce(world, step, std::plus<int>());
      h.wait();
    } else {
      h.wait();
      (void)mpi::all_reduce(world, step, std::plus<int>());
    }
    results.push_back(test_support::check(dom, a, st, {0, step}));
  }
  for (const auto& r : results) HXT_REQUIRE_OK(r);
}

TEST_CASE("test() polling loops complete and stay correct on oversubscribed ranks") {
  mpi::communicator world;
  const auto shared = GENERATE(one_copy, two_copies, mpi_only);
  CAPTURE(shared);
  const auto opts = host_transport(shared);
  const halox::cartesian<3> dom(world, {12, 10, 8}, halox::periodic{true, true, true});
  constexpr auto st = halox::stencil<3>::box(1);
  auto a = dom.make_field<double>(st);
  auto ex = halox::make_exchange(dom, st, opts, a);
  for (int step = 1; step <= 24; ++step) {
    test_support::fill(dom, a, {0, step});
    if (step % 4 == 0) {
      auto h = ex.start();
      while (!h.test()) {
      }
    } else {
      ex.exchange();
    }
    HXT_REQUIRE_OK(test_support::check(dom, a, st, {0, step}));
  }
}

TEST_CASE("transport switches that differ between ranks: each pair takes what both allow") {
  mpi::communicator world;
  const int P = world.size(), me = world.rank();
  struct mode {
    const char* what;
    halox::exchange_options rank0, others;
  };
  halox::exchange_options mpi_only_options, pair01, only1, buffer_only;
  mpi_only_options.host_shared_memory = false;
  buffer_only.shm_into_fields = false;
  pair01.peer_shm_ranks = std::vector{0, 1};
  only1.peer_shm_ranks = std::vector{1};
  const auto m = GENERATE_COPY(mode{"rank 0 MPI only", mpi_only_options, {}},
                               mode{"others MPI only", {}, mpi_only_options},
                               mode{"rank lists differ", pair01, only1},
                               mode{"rank 0 one copy, the others two", {}, buffer_only});
  CAPTURE(m.what);
  const auto opts = me == 0 ? m.rank0 : m.others;
  const halox::cartesian<3> dom(world, {9, 8, 7}, halox::periodic{true, false, true});
  constexpr auto st = halox::stencil<3>::box(1);
  auto a = dom.make_field<double>(st);
  auto b = dom.make_field<float>(st, halox::host, 2);
  test_support::fill(dom, a, {0, 0});
  test_support::fill(dom, b, {1, 0});
  auto ex = halox::make_exchange(dom, st, opts, a, b);
  ex.exchange();
  HXT_REQUIRE_OK(test_support::check(dom, a, st, {0, 0}));
  HXT_REQUIRE_OK(test_support::check(dom, b, st, {1, 0}));
  // First mode: rank 0 refuses shared memory, so none of its pairs uses it (the others may
  // pair among themselves). Second: only rank 0 allows it, so no pair uses it.
  const std::string d = ex.describe();
  INFO(d);
  const bool refused = (m.rank0.host_shared_memory == false && me == 0) ||
                       (m.others.host_shared_memory == false && m.rank0.host_shared_memory);
  if (P > 1 && refused) CHECK(d.find("via shared memory") == std::string::npos);
  // Third mode: only rank 0 allows one copy, so every pair keeps two.
  if (!m.others.shm_into_fields) CHECK(d.find("one copy") == std::string::npos);
}

TEST_CASE("an empty rank list is an input error on every rank") {
  mpi::communicator world;
  const halox::cartesian<2> dom(world, {8, 6}, halox::periodic{true, true});
  constexpr auto st = halox::stencil<2>::star(1);
  auto a = dom.make_field<double>(st);
  const char* var = GENERATE("HALOX_PEER_SHM_RANKS", "HALOX_PEER_IPC_RANKS");
  CAPTURE(var);
  // Set on the last rank only: every rank must still refuse.
  scoped_env e(var, world.rank() == world.size() - 1 ? "" : nullptr);
  require_refused([&] { (void)halox::make_exchange(dom, st, a); }, {var, "set but empty"});
}

TEST_CASE(
    "a system that forbids mapping peers' buffers: MPI for that pair, and describe() says why") {
  mpi::communicator world;
  const int P = world.size(), me = world.rank();
  const halox::cartesian<2> dom(world, {10, 8}, halox::periodic{true, true});
  constexpr auto st = halox::stencil<2>::box(1);
  auto a = dom.make_field<double>(st);
  test_support::fill(dom, a, {0, 0});
  // Rank 1 cannot open other processes' descriptors (as under ptrace scope or hidepid).
  scoped_flag deny(halox::detail::testing::deny_peer_segments, me == 1);
  auto ex = halox::make_exchange(dom, st, a);
  ex.exchange();
  HXT_REQUIRE_OK(test_support::check(dom, a, st, {0, 0}));
  const std::string d = ex.describe();
  INFO(d);
  if (P > 1 && me == 1) {
    CHECK_THAT(d, Catch::Contains("not shared memory: could not open rank"));
    CHECK_THAT(d, Catch::Contains("Permission denied"));
  }
  if (P > 1 && me == 0)
    CHECK_THAT(d, Catch::Contains("rank 1 could not open this rank's buffer: Permission denied"));
}
