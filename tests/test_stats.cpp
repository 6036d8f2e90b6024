// halo_exchange::stats() and the HALOX_REPORT records: counts and bytes checked against a
// serial count of the halo cells each rank receives (global coordinates, periodic wrap), the
// histogram's percentiles against sorted samples, and the report read back by
// tools/halox-report.
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <fmt/format.h>
#include <boost/mpi/collectives.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "exchange/exchange_stats.hpp"

namespace {

// Cells of this rank's halo whose periodic source another rank owns (one message each way per
// such cell), for a 3-D periodic box split in dimension 1 into slabs of `rows` rows.
long remote_halo_cells(const halox::box<3>& alloc, const halox::extents<3>& n, long rows, int me) {
  long cells = 0;
  for (auto i = alloc.lo[0]; i < alloc.hi[0]; ++i)
    for (auto j = alloc.lo[1]; j < alloc.hi[1]; ++j)
      for (auto k = alloc.lo[2]; k < alloc.hi[2]; ++k) {
        const long wj = ((j % n[1]) + n[1]) % n[1];
        const bool owned_here =
            j >= me * rows && j < (me + 1) * rows && i >= 0 && i < n[0] && k >= 0 && k < n[2];
        if (!owned_here && wj / rows != me) ++cells;
      }
  return cells;
}

}  // namespace

TEST_CASE("time_histogram: percentiles within 5% of the sorted samples, mean and max exact") {
  std::mt19937 rng(7);
  std::lognormal_distribution<double> d(std::log(20e-6), 1.0);  // around 20 µs
  std::vector<double> v(5000);
  halox::detail::time_histogram h;
  double sum = 0;
  for (auto& x : v) {
    x = d(rng);
    sum += x;
    h.add(x);
  }
  std::sort(v.begin(), v.end());
  const auto s = h.summary();
  CHECK(s.count == v.size());
  CHECK(s.mean == Approx(sum / double(v.size())));
  CHECK(s.max == v.back());
  const double p50 = v[v.size() / 2 - 1], p99 = v[v.size() * 99 / 100 - 1];
  CHECK(std::abs(s.p50 / p50 - 1) < 0.05);
  CHECK(std::abs(s.p99 / p99 - 1) < 0.05);
  CHECK(halox::detail::time_histogram().summary().count == 0);
}

TEST_CASE("stats(): exchanges, phases and bytes per route against the halo cells received") {
  boost::mpi::communicator world;
  const int P = world.size(), me = world.rank();
  const long rows = 4;
  const halox::extents<3> n{6, rows * P, 5};
  constexpr auto st = halox::stencil<3>::box(1);
  const halox::cartesian<3> dom(world, n, halox::periodic<3>::all(),
                                halox::process_grid<3>{{1, P, 1}});
  auto u = dom.make_field<double>(st);
  auto v = dom.make_field<float>(st, halox::host, 2);
  halox::exchange_options o;
  o.label = "stats-u-v";
  o.host_shared_memory = GENERATE(true, false);
  auto ex = halox::make_exchange(dom, st, o, u, v);
  const int blocking = 5, split = 4;
  for (int k = 0; k < blocking; ++k) ex.exchange();
  for (int k = 0; k < split; ++k) {
    auto h = ex.start();
    h.wait();
  }
  const auto s = ex.stats();
  CHECK(s.label == "stats-u-v");
  CHECK(s.rank == me);
  CHECK(s.exchanges == std::uint64_t(blocking + split));
  CHECK(s.setup.count == 1);
  CHECK(s.start.count == s.exchanges);
  CHECK(s.wait.count == s.exchanges);
  CHECK(s.waits_already_complete <= s.wait.count);
  CHECK(s.gpu.count == 0);  // host fields
  CHECK(s.start.max >= s.start.p50);
  // Received: every halo cell another rank owns, 8 + 2 * 4 bytes each, per exchange.
  const long cells = remote_halo_cells(u.allocated_box(), n, rows, me);
  std::uint64_t got = 0, sent = 0;
  for (const auto& t : s.routes) got += t.bytes_received, sent += t.bytes_sent;
  CHECK(got == std::uint64_t(cells) * 16 * s.exchanges);
  // What every rank sent, every rank received.
  CHECK(boost::mpi::all_reduce(world, sent, std::plus<std::uint64_t>()) ==
        boost::mpi::all_reduce(world, got, std::plus<std::uint64_t>()));
  const std::string json = s.to_json();
  CHECK(json.find("\"label\": \"stats-u-v\"") != std::string::npos);
  CHECK(json.find(fmt::format("\"exchanges\": {}", blocking + split)) != std::string::npos);
}

TEST_CASE("HALOX_REPORT: one record per object and rank, read back by tools/halox-report") {
  boost::mpi::communicator world;
  const int P = world.size(), me = world.rank();
  const halox::extents<3> n{6, 4 * P, 5};
  constexpr auto st = halox::stencil<3>::star(1);
  const halox::cartesian<3> dom(world, n, halox::periodic<3>::all(),
                                halox::process_grid<3>{{1, P, 1}});
  std::string prefix = fmt::format("{}/halox-report-test-{}", HALOX_TEST_TMP, P);
  prefix = boost::mpi::all_reduce(world, prefix,
                                  [](const std::string& a, const std::string&) { return a; });
  std::remove(fmt::format("{}.{}.jsonl", prefix, world.rank()).c_str());
  setenv("HALOX_REPORT", prefix.c_str(), 1);
  {
    auto u = dom.make_field<double>(st);
    halox::exchange_options o;
    o.label = "report-u";
    auto ex = halox::make_exchange(dom, st, o, u);
    for (int k = 0; k < 3; ++k) ex.exchange();
  }  // the record is written here
  unsetenv("HALOX_REPORT");
  std::ifstream in(fmt::format("{}.{}.jsonl", prefix, me));
  std::string line;
  REQUIRE(std::getline(in, line));
  CHECK(line.find("\"label\": \"report-u\"") != std::string::npos);
  CHECK(line.find(fmt::format("\"rank\": {}", me)) != std::string::npos);
  CHECK(line.find("\"exchanges\": 3") != std::string::npos);
  world.barrier();
  if (me == 0) {
    const std::string out = prefix + ".summary.json";
    const std::string cmd =
        fmt::format("/usr/bin/python3 {} {} --json > {}", HALOX_REPORT_TOOL, prefix, out);
    REQUIRE(std::system(cmd.c_str()) == 0);
    std::ifstream sum(out);
    const std::string text((std::istreambuf_iterator<char>(sum)), std::istreambuf_iterator<char>());
    INFO(text);
    CHECK(text.find("\"label\": \"report-u\"") != std::string::npos);
    CHECK(text.find(fmt::format("\"ranks\": {}", P)) != std::string::npos);
    CHECK(text.find("\"exchanges\": 3") != std::string::npos);
  }
  world.barrier();
}
