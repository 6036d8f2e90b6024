// halo_exchange::stats(): the histograms, the JSON record, the HALOX_REPORT files.
#include "exchange/exchange_stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <mpi.h>

namespace halox {

namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\')
      out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20)
      out += fmt::format("\\u{:04x}", int(static_cast<unsigned char>(c)));
    else
      out += c;
  }
  return out + '"';
}

std::string json_phase(const phase_times& p) {
  return fmt::format(
      R"({{"count": {}, "mean": {:.9g}, "p50": {:.9g}, "p99": {:.9g}, "max": {:.9g}}})", p.count,
      p.mean, p.p50, p.p99, p.max);
}

}  // namespace

std::string exchange_stats::to_json() const {
  std::string r;
  for (const auto& t : routes)
    r += fmt::format(
        R"({}{{"route": {}, "sends": {}, "receives": {}, "bytes_sent": {}, "bytes_received": {}}})",
        r.empty() ? "" : ", ", json_string(t.route), t.sends, t.receives, t.bytes_sent,
        t.bytes_received);
  return fmt::format(
      R"({{"label": {}, "rank": {}, "exchanges": {}, "setup": {}, "start": {}, "wait": {}, )"
      R"("gpu": {}, "waits_already_complete": {}, "routes": [{}]}})",
      json_string(label), rank, exchanges, json_phase(setup), json_phase(start), json_phase(wait),
      json_phase(gpu), waits_already_complete, r);
}

namespace detail {

void time_histogram::add(double seconds) {
  const double ns = seconds * 1e9;
  int b = ns <= 1 ? 0 : int(std::log2(ns) * per_doubling);
  b = std::clamp(b, 0, buckets - 1);
  ++n_[std::size_t(b)];
  ++count_;
  sum_ += seconds;
  max_ = std::max(max_, seconds);
}

double time_histogram::quantile(double q) const {
  // The smallest bucket whose cumulative count reaches q of the whole.
  const auto want = static_cast<std::uint64_t>(std::ceil(q * double(count_)));
  std::uint64_t seen = 0;
  for (int b = 0; b < buckets; ++b) {
    seen += n_[std::size_t(b)];
    if (seen >= std::max<std::uint64_t>(want, 1))
      return std::min(max_, std::exp2((b + 0.5) / per_doubling) * 1e-9);
  }
  return max_;
}

phase_times time_histogram::summary() const {
  phase_times p;
  p.count = count_;
  if (count_ == 0) return p;
  p.mean = sum_ / double(count_);
  p.p50 = quantile(0.5);
  p.p99 = quantile(0.99);
  p.max = max_;
  return p;
}

const char* report_prefix() {
  const char* v = std::getenv("HALOX_REPORT");
  return v != nullptr && *v != '\0' ? v : nullptr;
}

bool append_report(const exchange_stats& s) {
  const char* prefix = report_prefix();
  int finalized = 1, world = 0;
  if (prefix == nullptr || MPI_Finalized(&finalized) != MPI_SUCCESS || finalized) return false;
  if (MPI_Comm_rank(MPI_COMM_WORLD, &world) != MPI_SUCCESS) return false;
  const std::string path = fmt::format("{}.{}.jsonl", prefix, world);
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (f == nullptr) return false;
  const std::string line = s.to_json() + "\n";
  const bool ok = std::fwrite(line.data(), 1, line.size(), f) == line.size();
  return std::fclose(f) == 0 && ok;
}

}  // namespace detail

}  // namespace halox
