// rolling_mean: the rolling mean over a window of W elements of a 1-D series that is spread
// unevenly over the ranks (as after a global sort: some ranks hold little or nothing), with
// the W-1 elements of left context each rank needs collected by halox::chain::gather_left.
// Rank 0 repeats the computation serially and compares every window's sum exactly.
//
//   mpirun -np 4 ./rolling_mean [--n 1000003] [--window 1000] [--seed 1]
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <system_error>
#include <vector>

#include <boost/mpi.hpp>
#include <halox/halox.hpp>

#include "../common/app.hpp"
#include "../common/cli.hpp"

namespace mpi = boost::mpi;
using i64 = std::int64_t;

namespace {

struct options {
  std::size_t n = 1'000'003;
  std::size_t window = 1000;
  std::uint64_t seed = 1;
};

std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The series: integers in [-1000, 1000], a function of the global index and the seed only.
i64 value(std::size_t g, std::uint64_t seed) {
  return i64(splitmix64(splitmix64(seed) ^ g) % 2001) - 1000;
}

// Every rank's slice length: random weights from the seed, about one rank in four empty (never
// all), so some slices are far shorter than others. The same on every rank.
std::vector<std::size_t> slice_lengths(std::size_t n, int ranks, std::uint64_t seed) {
  std::vector<std::uint64_t> weight(static_cast<std::size_t>(ranks));
  std::uint64_t sum = 0;
  for (int r = 0; r < ranks; ++r) {
    const std::uint64_t h = splitmix64(seed * 7919 + std::uint64_t(r));
    weight[std::size_t(r)] = h % 4 == 0 ? 0 : 1 + h / 4 % 10;
    sum += weight[std::size_t(r)];
  }
  if (sum == 0) weight[0] = sum = 1;
  std::vector<std::size_t> len(static_cast<std::size_t>(ranks));
  std::size_t given = 0;
  for (int r = 0; r < ranks; ++r) {
    len[std::size_t(r)] = std::size_t(double(n) * double(weight[std::size_t(r)]) / double(sum));
    given += len[std::size_t(r)];
  }
  for (int r = ranks - 1; r >= 0; --r)  // the rounding remainder to the last non-empty rank
    if (weight[std::size_t(r)] != 0) {
      len[std::size_t(r)] += n - given;
      break;
    }
  return len;
}

// Window sums of `data`'s last `out` elements: element i sums data[i-w+1 .. i], clipped at 0.
// `data` = left context + slice; the sums are exact (integers).
std::vector<i64> window_sums(const std::vector<i64>& data, std::size_t out, std::size_t w) {
  std::vector<i64> sums;
  sums.reserve(out);
  i64 run = 0;
  const std::size_t first = data.size() - out;
  for (std::size_t i = 0; i < data.size(); ++i) {
    run += data[i];
    if (i >= w) run -= data[i - w];
    if (i >= first) sums.push_back(run);
  }
  return sums;
}

// Reads the options; returns -1 to run, else the exit code (0 after --help, 2 on a bad one).
int parse(int argc, char** argv, options& o, const mpi::communicator& world) {
  CLI::App app(
      "Rolling mean over windows of W elements (the first W-1 windows are shorter) of a series "
      "of N integers in [-1000, 1000] drawn from the seed, spread unevenly over the ranks (some "
      "empty). Each rank collects the W-1 elements before its slice with "
      "halox::chain::gather_left; rank 0 repeats the computation serially and compares every "
      "window sum exactly. Last line: 'verified: ...' when all agree, else 'FAILED: ...' and "
      "exit code 1.",
      "rolling_mean");
  app.add_option("--n", o.n, "series length")->capture_default_str();
  app.add_option("--window", o.window, "window length")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the series")->capture_default_str();
  return example_app::parse(world, app, argc, argv);
}

// This rank's part of the computation: its slice of the series, its left context's length and
// its window sums.
struct part {
  std::vector<i64> slice, sums;
  std::size_t context_len = 0;
  double seconds = 0;  // gather_left and the window sums
};

// The distributed computation: this rank's slice, its left context, then window sums over
// context + slice.
part compute(const mpi::communicator& world, const options& o) {
  const auto len = slice_lengths(o.n, world.size(), o.seed);
  std::size_t first = 0;
  for (int r = 0; r < world.rank(); ++r) first += len[std::size_t(r)];
  part p;
  p.slice.resize(len[std::size_t(world.rank())]);
  for (std::size_t i = 0; i < p.slice.size(); ++i) p.slice[i] = value(first + i, o.seed);
  world.barrier();
  const auto t0 = std::chrono::steady_clock::now();
  halox::chain<i64> ch(world);
  const auto context = ch.gather_left(p.slice, o.window - 1);
  p.context_len = context.size();
  std::vector<i64> data(context.begin(), context.end());
  data.insert(data.end(), p.slice.begin(), p.slice.end());
  p.sums = window_sums(data, p.slice.size(), o.window);
  p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

// Rank 0's report: the gathered series and sums against the serial computation; `counts` and
// `contexts` are every rank's slice and context lengths. Returns the exit status.
int report(const options& o, const part& mine, const std::vector<i64>& series,
           const std::vector<i64>& all_sums, const std::vector<int>& counts,
           const std::vector<std::size_t>& contexts) {
  const int P = int(counts.size());
  const auto ref = window_sums(series, o.n, o.window);
  std::size_t differ = 0, value_differ = 0, short_slices = 0, empty = 0;
  for (std::size_t g = 0; g < o.n; ++g) {
    differ += all_sums[g] != ref[g] ? 1 : 0;
    value_differ += series[g] != value(g, o.seed) ? 1 : 0;
  }
  for (int r = 0; r < P; ++r) {
    empty += counts[std::size_t(r)] == 0 ? 1 : 0;
    short_slices += std::size_t(counts[std::size_t(r)]) < o.window - 1 ? 1 : 0;
  }
  std::printf("rolling_mean: %zu values, window %zu, seed %llu, %d ranks\n", o.n, o.window,
              static_cast<unsigned long long>(o.seed), P);
  for (int r = 0; r < P; ++r)
    std::printf("  rank %d: %d values, %zu values of left context\n", r, counts[std::size_t(r)],
                contexts[std::size_t(r)]);
  std::printf("slices: %zu empty, %zu shorter than the W-1 context they pass on\n", empty,
              short_slices);
  std::printf("time on rank 0 (gather_left + window sums): %.4f s\n", mine.seconds);
  if (o.n > 0)
    std::printf("last window mean: %.6f\n", double(ref[o.n - 1]) / double(std::min(o.window, o.n)));
  int status = 0;
  if (differ == 0 && value_differ == 0) {
    std::printf(
        "verified: all %zu window sums (means = sum / window length) equal the serial "
        "computation\n",
        o.n);
  } else {
    std::printf("FAILED: %zu of %zu window sums differ from the serial computation\n", differ, o.n);
    status = 1;
  }
  std::fflush(stdout);
  return status;
}

// Rank 0 gathers the series and the sums, recomputes serially and compares.
int run(const mpi::communicator& world, const options& o) {
  const part mine = compute(world, o);
  const int count = int(mine.slice.size());
  std::vector<int> counts;
  mpi::gather(world, count, counts, 0);
  std::vector<std::size_t> contexts;
  mpi::gather(world, mine.context_len, contexts, 0);
  if (world.rank() != 0) {
    mpi::gatherv(world, mine.slice.data(), count, 0);
    mpi::gatherv(world, mine.sums.data(), count, 0);
    return 0;
  }
  std::vector<int> displs(counts.size(), 0);
  for (std::size_t r = 1; r < counts.size(); ++r) displs[r] = displs[r - 1] + counts[r - 1];
  std::vector<i64> series(o.n), all_sums(o.n);
  mpi::gatherv(world, mine.slice.data(), count, series.data(), counts, displs, 0);
  mpi::gatherv(world, mine.sums.data(), count, all_sums.data(), counts, displs, 0);
  return report(o, mine, series, all_sums, counts, contexts);
}

}  // namespace

int main(int argc, char** argv) {
  return example_app::run_main<options>("rolling_mean", argc, argv, parse, run);
}
