#pragma once
/// @file
/// What an exchange object has done: its exchanges, the host time of each phase, the GPU time
/// of scheduled exchanges and the bytes each route carried (`halo_exchange::stats()`; the
/// records `HALOX_REPORT` writes, docs/observing.md).

#include <cstdint>
#include <string>
#include <vector>

namespace halox {

/// One phase's durations in seconds. Mean and maximum are exact; the median and the 99th
/// percentile come from a histogram of 8 buckets per doubling, so they are within 5% of the
/// exact values.
struct phase_times {
  std::uint64_t count = 0;
  double mean = 0, p50 = 0, p99 = 0, max = 0;
};

/// What one route carried for this rank, over every exchange so far.
struct route_traffic {
  std::string route;            ///< as describe() names it: "MPI", "shared memory", "CUDA IPC", ...
  int sends = 0, receives = 0;  ///< messages per exchange
  std::uint64_t bytes_sent = 0, bytes_received = 0;
};

/// Counters and timings of one exchange object on one rank, kept from its construction.
struct exchange_stats {
  std::string label;  ///< exchange_options::label, or the object's name made from its fields
  int rank = 0;       ///< in the object's communicator
  std::uint64_t exchanges = 0;  ///< started so far
  phase_times setup;            ///< make_exchange: the collective set-up (count 1)
  phase_times start;            ///< host time in start() / schedule_exchange()
  phase_times wait;             ///< host time in wait() / schedule_wait() / exchange()'s wait
  /// Device fields: GPU time from the start of the pack to the end of the unpack, measured
  /// with CUDA events on every 16th exchange (empty without device fields).
  phase_times gpu;
  /// Waits that found the exchange already complete: the communication was hidden behind
  /// the caller's work between start() and wait() (the overlap achieved).
  std::uint64_t waits_already_complete = 0;
  std::vector<route_traffic> routes;

  /// One JSON object with every field above (the format of a `HALOX_REPORT` record).
  std::string to_json() const;
};

}  // namespace halox
