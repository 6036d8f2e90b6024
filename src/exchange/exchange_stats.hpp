#pragma once
// The recorder behind halo_exchange::stats() (halox/exchange/exchange_stats.hpp): fixed-size
// histograms, so that recording an exchange allocates nothing.
#include <array>
#include <chrono>
#include <cstdint>

#include "halox/exchange/exchange_stats.hpp"

namespace halox::detail {

/// Durations in a histogram of 8 buckets per doubling from 1 ns to 2^40 ns (18 minutes; longer
/// ones go to the last bucket), with their exact sum and maximum.
class time_histogram {
 public:
  static constexpr int per_doubling = 8;
  static constexpr int buckets = 40 * per_doubling;

  void add(double seconds);
  /// Count, mean, median, 99th percentile (a bucket's geometric middle, at most the maximum)
  /// and maximum.
  phase_times summary() const;

 private:
  std::array<std::uint64_t, buckets> n_{};
  std::uint64_t count_ = 0;
  double sum_ = 0, max_ = 0;
  double quantile(double q) const;
};

/// A steady clock's reading, for the phases.
using tick = std::chrono::steady_clock::time_point;
inline tick now() {
  return std::chrono::steady_clock::now();
}
inline double seconds_since(tick t0) {
  return std::chrono::duration<double>(now() - t0).count();
}

/// Whether HALOX_REPORT names where to write a record when an exchange object goes, and where:
/// the records of world rank r go to "<HALOX_REPORT>.<r>.jsonl", one line each.
const char* report_prefix();
/// Appends `s`'s record to this rank's report file (report_prefix()); returns false, writing
/// nothing, where that fails (a destructor cannot report it).
bool append_report(const exchange_stats& s);

}  // namespace halox::detail
