// chain_bench: rounds of halox::chain next to what a user would write by hand with MPI, on a
// periodic chain where every rank sends the same number of doubles to its left and to its right
// neighbour each round. One JSON object per case and implementation (rank 0 prints):
//   halox_chain        chain<double>::exchange (sizes first, then the data);
//   mpi_sizes_then_data the same protocol by hand: MPI_Isend/Irecv of the two sizes, wait, then
//                      of the data (what a user without halox writes for variable sizes);
//   mpi_data_only      the floor: one data message each way whose size both sides already know.
// With --device the payloads and the delivered data live in GPU memory: the chain once per
// staging (pinned host memory and MPI; NCCL where the build has it), next to the same round by
// hand with synchronous copies through host memory. `median_us` is the slowest rank's median
// round; `verified` checks the last round's data against the values the neighbours encode.
//
//   mpirun -np 2 ./chain_bench [--sizes 1,128,8192,131072,1048576] [--iters 0] [--device]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <mpi.h>

#include <boost/mpi.hpp>
#include <halox/halox.hpp>

#include "../../examples/common/app.hpp"
#include "../../examples/common/cli.hpp"
#ifdef CHAIN_BENCH_CUDA
#include "../../examples/common/gpu_runtime.hpp"
#include "../../examples/common/select_gpu.hpp"
#endif

namespace mpi = boost::mpi;

namespace {

struct options {
  std::vector<std::size_t> sizes{1, 128, 8192, 131072, 1048576};  // doubles per message
  int iters = 0;                                                  // 0: chosen per size
  int warmup = 10;
  bool device = false;
};

// Element k of the message rank `r` sends to its left (side 0) or right (side 1): exact in a
// double for up to 2^21 elements per message.
double value(int r, int side, std::size_t k) {
  return double((std::uint64_t(r) * 2 + std::uint64_t(side)) << 21) + double(k);
}

std::vector<double> payload(int r, int side, std::size_t n) {
  std::vector<double> v(n);
  for (std::size_t k = 0; k < n; ++k) v[k] = value(r, side, k);
  return v;
}

// What this rank must have received: the left neighbour's rightward message and the right
// neighbour's leftward one.
bool check(const mpi::communicator& w, std::span<const double> from_left,
           std::span<const double> from_right, std::size_t n) {
  const int left = (w.rank() + w.size() - 1) % w.size(), right = (w.rank() + 1) % w.size();
  bool ok = from_left.size() == n && from_right.size() == n;
  for (std::size_t k = 0; ok && k < n; ++k)
    ok = from_left[k] == value(left, 1, k) && from_right[k] == value(right, 0, k);
  return mpi::all_reduce(w, ok, std::logical_and<bool>());
}

struct timing {
  double median_us = 0, min_us = 0;
};

// `iters` rounds after `warmup` untimed ones, each timed on its own; the slowest rank's median.
timing time_rounds(const mpi::communicator& w, int warmup, int iters,
                   const std::function<void()>& round) {
  for (int k = 0; k < warmup; ++k) round();
  std::vector<double> t(std::size_t(iters), 0.0);
  w.barrier();
  for (auto& x : t) {
    const double t0 = MPI_Wtime();
    round();
    x = (MPI_Wtime() - t0) * 1e6;
  }
  std::sort(t.begin(), t.end());
  return {mpi::all_reduce(w, t[t.size() / 2], mpi::maximum<double>()),
          mpi::all_reduce(w, t.front(), mpi::maximum<double>())};
}

int iters_for(const options& o, std::size_t bytes) {
  if (o.iters > 0) return o.iters;
  return bytes <= (std::size_t(64) << 10) ? 1000 : bytes <= (std::size_t(1) << 20) ? 200 : 50;
}

void print_row(const mpi::communicator& w, const char* impl, const char* space,
               const std::string& staging, std::size_t bytes, int iters, const timing& t,
               bool verified, double floor_us) {
  if (w.rank() != 0) return;
  std::printf(
      "{\"impl\":\"%s\",\"space\":\"%s\",\"staging\":\"%s\",\"case\":\"chain %zu B\","
      "\"ranks\":%d,\"message_bytes\":%zu,\"iters\":%d,\"median_us\":%.2f,\"min_us\":%.2f,"
      "\"verified\":%s,\"floor\":\"mpi_data_only\",\"floor_us\":%.2f,\"ratio_to_floor\":%.3f}\n",
      impl, space, staging.c_str(), bytes, w.size(), bytes, iters, t.median_us, t.min_us,
      verified ? "true" : "false", floor_us, floor_us > 0 ? t.median_us / floor_us : 0.0);
  std::fflush(stdout);
}

void mpi_check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(std::string("chain_bench: ") + what + " failed");
}

// The hand-written round: sizes to both neighbours, then the data (the chain's protocol);
// with `sizes` false, the data alone (sizes known: the floor). Tags keep the two directions
// apart when both neighbours are the same rank.
class mpi_round {
 public:
  mpi_round(const mpi::communicator& w, std::size_t n)
      : comm_(w),
        left_((w.rank() + w.size() - 1) % w.size()),
        right_((w.rank() + 1) % w.size()),
        to_left_(payload(w.rank(), 0, n)),
        to_right_(payload(w.rank(), 1, n)) {}
  void run(bool sizes) {
    std::uint64_t out[2] = {to_left_.size(), to_right_.size()}, in[2] = {0, 0};
    if (sizes) {
      post(&in[0], &in[1], &out[0], &out[1], 1, MPI_UINT64_T, 10);
      from_left_.resize(in[0]);
      from_right_.resize(in[1]);
    } else {
      from_left_.resize(to_right_.size());
      from_right_.resize(to_left_.size());
    }
    post(from_left_.data(), from_right_.data(), to_left_.data(), to_right_.data(),
         int(to_left_.size()), MPI_DOUBLE, 20);
  }
  // The payloads (written by the device round before run()) and what arrived.
  double* to_left() { return to_left_.data(); }
  double* to_right() { return to_right_.data(); }
  std::span<const double> from_left() const { return from_left_; }
  std::span<const double> from_right() const { return from_right_; }

 private:
  // Receives from the left (moving rightwards: tag+1) and from the right (tag), sends to the
  // left (tag) and to the right (tag+1), and waits for all four.
  void post(void* fl, void* fr, const void* tl, const void* tr, int n, MPI_Datatype t, int tag) {
    const MPI_Comm c = MPI_Comm(comm_);
    MPI_Request q[4];
    mpi_check(MPI_Irecv(fl, n, t, left_, tag + 1, c, &q[0]), "MPI_Irecv");
    mpi_check(MPI_Irecv(fr, n, t, right_, tag, c, &q[1]), "MPI_Irecv");
    mpi_check(MPI_Isend(tl, n, t, left_, tag, c, &q[2]), "MPI_Isend");
    mpi_check(MPI_Isend(tr, n, t, right_, tag + 1, c, &q[3]), "MPI_Isend");
    mpi_check(MPI_Waitall(4, q, MPI_STATUSES_IGNORE), "MPI_Waitall");
  }

  mpi::communicator comm_;
  int left_, right_;
  std::vector<double> to_left_, to_right_, from_left_, from_right_;
};

void host_rows(const mpi::communicator& w, const options& o, std::size_t n) {
  const std::size_t bytes = n * sizeof(double);
  const int iters = iters_for(o, bytes);
  mpi_round by_hand(w, n);
  const timing floor = time_rounds(w, o.warmup, iters, [&] { by_hand.run(false); });
  const bool floor_ok = check(w, by_hand.from_left(), by_hand.from_right(), n);
  print_row(w, "mpi_data_only", "host", "mpi", bytes, iters, floor, floor_ok, floor.median_us);
  const timing hand = time_rounds(w, o.warmup, iters, [&] { by_hand.run(true); });
  const bool hand_ok = check(w, by_hand.from_left(), by_hand.from_right(), n);
  print_row(w, "mpi_sizes_then_data", "host", "mpi", bytes, iters, hand, hand_ok, floor.median_us);
  halox::chain<double> ch(w, {.periodic = true});
  const auto to_left = payload(w.rank(), 0, n), to_right = payload(w.rank(), 1, n);
  halox::chain_result<double> r;
  const timing t = time_rounds(w, o.warmup, iters, [&] { r = ch.exchange(to_left, to_right); });
  const bool ok = check(w, *r.from_left(), *r.from_right(), n);
  print_row(w, "halox_chain", "host", "mpi", bytes, iters, t, ok, floor.median_us);
}

#ifdef CHAIN_BENCH_CUDA
// GPU memory of `n` doubles holding `v` (freed by the destructor).
struct device_doubles {
  double* p = nullptr;
  std::size_t n = 0;
  explicit device_doubles(const std::vector<double>& v) : n(v.size()) {
    p = static_cast<double*>(example_gpu::device_alloc(std::max<std::size_t>(1, n) * 8));
    example_gpu::copy_to_device(p, v.data(), n * sizeof(double));
  }
  ~device_doubles() { example_gpu::device_free(p); }
  device_doubles(const device_doubles&) = delete;
  device_doubles& operator=(const device_doubles&) = delete;
  std::span<const double> span() const { return {p, n}; }
};

std::vector<double> to_host(std::span<const double> d) {
  std::vector<double> h(d.size());
  example_gpu::copy_to_host(h.data(), d.data(), d.size() * sizeof(double));
  return h;
}

void device_chain_row(const mpi::communicator& w, const options& o, std::size_t n, halox::staging s,
                      double floor_us) {
  const std::size_t bytes = n * sizeof(double);
  const int iters = iters_for(o, bytes);
  const device_doubles to_left(payload(w.rank(), 0, n)), to_right(payload(w.rank(), 1, n));
  try {
    halox::chain<double> ch(
        w, {.periodic = true, .space = halox::memory_space::device, .device_staging = s});
    halox::chain_result<double> r;
    const timing t =
        time_rounds(w, o.warmup, iters, [&] { r = ch.exchange(to_left.span(), to_right.span()); });
    const bool ok = check(w, to_host(*r.from_left()), to_host(*r.from_right()), n);
    print_row(w, "halox_chain", "device", halox::to_string(ch.device_staging()), bytes, iters, t,
              ok, floor_us);
  } catch (const halox::error& e) {  // thrown on every rank (e.g. NCCL absent)
    if (w.rank() == 0)
      std::printf(
          "{\"impl\":\"halox_chain\",\"space\":\"device\",\"staging\":\"%s\","
          "\"case\":\"chain %zu B\",\"skipped\":\"%s\"}\n",
          halox::to_string(s), bytes, e.what());
  }
}

// The round by hand for device data: copies to host memory, the MPI round, copies back.
void device_rows(const mpi::communicator& w, const options& o, std::size_t n) {
  const std::size_t bytes = n * sizeof(double);
  const int iters = iters_for(o, bytes);
  mpi_round by_hand(w, n);
  const device_doubles src_l(payload(w.rank(), 0, n)), src_r(payload(w.rank(), 1, n));
  device_doubles dst_l{std::vector<double>(n)}, dst_r{std::vector<double>(n)};
  const timing floor = time_rounds(w, o.warmup, iters, [&] { by_hand.run(false); });
  const timing hand = time_rounds(w, o.warmup, iters, [&] {
    example_gpu::copy_to_host(by_hand.to_left(), src_l.p, bytes);
    example_gpu::copy_to_host(by_hand.to_right(), src_r.p, bytes);
    by_hand.run(true);
    example_gpu::copy_to_device(dst_l.p, by_hand.from_left().data(), bytes);
    example_gpu::copy_to_device(dst_r.p, by_hand.from_right().data(), bytes);
  });
  const bool hand_ok = check(w, to_host(dst_l.span()), to_host(dst_r.span()), n);
  print_row(w, "mpi_staged_by_hand", "device", "host_staged", bytes, iters, hand, hand_ok,
            floor.median_us);
  device_chain_row(w, o, n, halox::staging::host_staged, floor.median_us);
  device_chain_row(w, o, n, halox::staging::nccl, floor.median_us);
}
#endif

int run(const mpi::communicator& w, const options& o) {
#ifdef CHAIN_BENCH_CUDA
  if (o.device)
    if (const int rc = example_gpu::select_gpu(w, "chain_bench"); rc != 0) return rc;
#endif
  for (const std::size_t n : o.sizes) {
    if (!o.device) host_rows(w, o, n);
#ifdef CHAIN_BENCH_CUDA
    else
      device_rows(w, o, n);
#endif
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  mpi::environment env(argc, argv);
  mpi::communicator world;
  options o;
  CLI::App app(
      "Rounds of halox::chain next to hand-written MPI: prints one JSON object per case "
      "and implementation.",
      "chain_bench");
  app.add_option("--sizes", o.sizes, "doubles per message (each rank to each neighbour)")
      ->delimiter(',')
      ->check(CLI::Range(std::size_t(1), std::size_t(1) << 21))
      ->capture_default_str();
  app.add_option("--iters", o.iters, "timed rounds per case (0: chosen per size)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--warmup", o.warmup, "untimed rounds first")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  example_app::add_device(app, o.device, "payloads and delivered data");
  if (const int rc = example_app::parse(world, app, argc, argv); rc >= 0) return rc;
#ifndef CHAIN_BENCH_CUDA
  if (o.device) {
    if (world.rank() == 0) std::fprintf(stderr, "chain_bench: --device needs a CUDA build\n");
    return 2;
  }
#endif
  try {
    return run(world, o);
  } catch (const std::exception& e) {
    example_app::abort_run("chain_bench", world, e);
  }
}
