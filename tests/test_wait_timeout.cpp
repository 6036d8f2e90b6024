// exchange_options::wait_timeout / HALOX_WAIT_TIMEOUT on host paths: a peer that never starts
// its exchange makes every rank that waits for it raise halox::error after the timeout, naming
// the object, the exchange number and the peers it still waits for with their routes; the
// object then refuses further use, and every object is destroyed cleanly.
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <fmt/format.h>
#include <boost/mpi/collectives.hpp>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "check.hpp"
#include "core/environment.hpp"
#include "support.hpp"

namespace {

// HALOX_WAIT_TIMEOUT overrides the option (ctest sets it for every test): set for a scope.
class env_var {
 public:
  env_var(const char* name, const char* value) : name_(name) {
    if (const char* v = std::getenv(name)) old_ = v, had_ = true;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~env_var() {
    if (had_)
      setenv(name_, old_.c_str(), 1);
    else
      unsetenv(name_);
  }
  env_var(const env_var&) = delete;
  env_var& operator=(const env_var&) = delete;

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

}  // namespace

TEST_CASE("parse_seconds: numbers of seconds, or a clear error naming the variable") {
  using halox::detail::parse_seconds;
  CHECK(parse_seconds("X", "60") == 60.0);
  CHECK(parse_seconds("X", "0.25") == 0.25);
  CHECK(parse_seconds("X", "0") == 0.0);
  CHECK_THROWS_WITH(parse_seconds("HALOX_WAIT_TIMEOUT", "-1"),
                    Catch::Contains("HALOX_WAIT_TIMEOUT='-1' is not a number of seconds"));
  CHECK_THROWS_WITH(parse_seconds("HALOX_WAIT_TIMEOUT", "5s"), Catch::Contains("'5s'"));
  CHECK_THROWS_WITH(parse_seconds("HALOX_WAIT_TIMEOUT", ""), Catch::Contains("seconds"));
  const env_var bad("HALOX_WAIT_TIMEOUT", "soon");
  CHECK_THROWS_WITH(halox::detail::with_environment({}),
                    Catch::Contains("HALOX_WAIT_TIMEOUT='soon'"));
  halox::exchange_options o;
  o.wait_timeout = -2;
  {
    const env_var unset("HALOX_WAIT_TIMEOUT", nullptr);
    CHECK_THROWS_WITH(halox::detail::with_environment(o), Catch::Contains("wait_timeout is -2"));
  }
  // A bad option is an error also where the environment would replace it.
  const env_var good("HALOX_WAIT_TIMEOUT", "30");
  CHECK_THROWS_WITH(halox::detail::with_environment(o), Catch::Contains("wait_timeout is -2"));
  o.wait_timeout = 5;
  CHECK(halox::detail::with_environment(o).wait_timeout == 30.0);
}

TEST_CASE("wait_timeout: a peer that never starts is named by every rank that waits for it") {
  boost::mpi::communicator world;
  const int P = world.size(), me = world.rank(), silent = P - 1;
  const env_var env("HALOX_WAIT_TIMEOUT", "0.3");
  const bool shm = GENERATE(true, false);
  const bool split = GENERATE(false, true);
  INFO((shm ? "shared memory" : "MPI") << (split ? ", start()+wait()" : ", exchange()"));
  const halox::extents<3> n{6, 4 * P, 5};
  constexpr auto st = halox::stencil<3>::box(1);
  const halox::cartesian<3> dom(world, n, halox::periodic<3>::all(),
                                halox::process_grid<3>{{1, P, 1}});
  auto u = dom.make_field<double>(st);
  test_support::fill(dom, u, {0, 0});
  halox::exchange_options o;
  o.label = "timeout-host";
  o.host_shared_memory = shm;
  auto ex = halox::make_exchange(dom, st, o, u);
  // Two good exchanges: the timeout changes nothing while every rank takes part.
  for (int k = 0; k < 2; ++k) ex.exchange();
  HXT_REQUIRE_OK(test_support::check(dom, u, st, {0, 0}));
  std::string message;
  if (P > 1 && me != silent) {
    const auto t0 = std::chrono::steady_clock::now();
    try {
      if (split) {
        auto h = ex.start();
        h.wait();
      } else {
        ex.exchange();
      }
    } catch (const halox::error& e) {
      message = e.what();
    }
    INFO(message);
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30));
    // The silent rank's neighbours give up naming it; a rank further away may complete (its
    // neighbours sent before they gave up) or give up waiting for a neighbour that did.
    const bool next_to_silent = me == (silent + 1) % P || me == (silent + P - 1) % P;
    const std::string route = shm ? "shared memory" : "MPI";
    if (next_to_silent) {
      CHECK(message.find(fmt::format("rank {} ({}", silent, route)) != std::string::npos);
      CHECK(message.find("'timeout-host' #3 gave up after 0.3 s") != std::string::npos);
    }
    if (!message.empty()) CHECK_THROWS_WITH(ex.exchange(), Catch::Contains("earlier one failed"));
  }
  world.barrier();
  const int failed = message.empty() ? 0 : 1;
  const int neighbours = P == 1 ? 0 : P == 2 ? 1 : 2;  // of the silent rank, in the ring
  CHECK(boost::mpi::all_reduce(world, failed, std::plus<int>()) >= neighbours);
}

TEST_CASE("wait_timeout off: an exchange that waits long still completes") {
  // A rank that starts late (0.5 s) with no timeout: the others wait, as MPI does.
  boost::mpi::communicator world;
  const env_var env("HALOX_WAIT_TIMEOUT", "0");
  const int P = world.size();
  constexpr auto st = halox::stencil<3>::star(1);
  const halox::cartesian<3> dom(world, {6, 4 * P, 5}, halox::periodic<3>::all(),
                                halox::process_grid<3>{{1, P, 1}});
  auto u = dom.make_field<double>(st);
  test_support::fill(dom, u, {1, 0});
  auto ex = halox::make_exchange(dom, st, u);
  if (world.rank() == P - 1) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ex.exchange();
  HXT_REQUIRE_OK(test_support::check(dom, u, st, {1, 0}));
}

TEST_CASE("wait_timeout: a chain round whose neighbour never comes names it") {
  boost::mpi::communicator world;
  const int P = world.size(), me = world.rank(), silent = P - 1;
  const env_var env("HALOX_WAIT_TIMEOUT", "0.3");
  halox::chain_options o;
  o.periodic = true;
  halox::chain<double> ch(world, o);
  const std::vector<double> mine{double(me), double(me) + 0.5};
  // A good round first: both neighbours' payloads arrive.
  const auto r = ch.exchange(mine, mine);
  CHECK((*r.from_left())[0] == double((me + P - 1) % P));
  CHECK((*r.from_right())[0] == double((me + 1) % P));
  std::string message;
  if (P > 1 && me != silent) {
    try {
      (void)ch.exchange(mine, mine);
    } catch (const halox::error& e) {
      message = e.what();
    }
    INFO(message);
    const bool next_to_silent = me == (silent + 1) % P || me == (silent + P - 1) % P;
    if (next_to_silent) {
      CHECK(message.find("chain round #2 gave up after 0.3 s") != std::string::npos);
      CHECK(message.find(fmt::format("rank {} (", silent)) != std::string::npos);
    }
    if (!message.empty())
      CHECK_THROWS_WITH(ch.exchange(mine, mine), Catch::Contains("an earlier one failed"));
  }
  world.barrier();
  const int failed = message.empty() ? 0 : 1;
  const int neighbours = P == 1 ? 0 : P == 2 ? 1 : 2;
  CHECK(boost::mpi::all_reduce(world, failed, std::plus<int>()) >= neighbours);
}
