// halo_bench: halox next to hand-written MPI halo exchanges, one JSON object per line.
//
//   mpirun -np 2 halo_bench [--sizes 8,64,128] [--widths 1,2] [--fields 3]
//                           [--impls halox,mpi_manual,mpi_types] [--iters N] [--warmup N]
//                           [--mac] [--device] [--wrapped] [--node-shared]
//
// Every case: a periodic 3-D domain of `local`^3 cells per rank on the automatic process grid,
// a box stencil of width `w` (26 neighbour directions), `fields` double fields. Each
// implementation is checked once against the global coordinates encoded in the data, then timed:
// per exchange, the slowest rank's time; the median (and minimum) over the timed exchanges.
// Every row also carries its floor, measured in the same run (floors.hpp), and the ratio to it.
// With --mac, the case is a MAC grid instead (three face fields and a cell field with their own
// stencils, one exchange object next to one per field: mac_case.hpp).
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <mpi.h>

#include <boost/mpi.hpp>
#include <halox/halox.hpp>

#include "../../examples/common/cli.hpp"
#include "floors.hpp"
#include "mac_case.hpp"
#include "setup.hpp"
#include "timing.hpp"
#ifdef HALOX_BENCH_CUDA
#include <cuda_runtime.h>

#include "gpu_baselines.hpp"
#include "raw_baselines.hpp"
#include "region_kernel.hpp"
#endif

namespace halo_bench {
namespace {

struct options {
  std::vector<int> sizes{8, 64, 128};
  std::vector<int> widths{1, 2};
  int fields = 3;
  std::vector<std::string> impls{"halox", "mpi_manual", "mpi_types"};
  int iters = 0;  // 0: chosen per case
  int warmup = 10;
  bool device = false;
  bool mac = false;          // --mac: the MAC grid case (mac_case.hpp) instead of the box cases
  bool sweep = false;        // --sweep: message sizes between two GPUs, peer_ipc vs host_staged
  int sweep_max_kib = 0;     // --sweep-max: the largest message size of the sweep (0: every size)
  bool graph = false;        // --graph: also ten exchanges captured in a CUDA graph and replayed
  bool wrapped = false;      // --wrapped: host fields over the benchmark's own arrays
  bool node_shared = false;  // --node-shared: those arrays from halox::node_shared_allocator
  // --sweep: host_staged once per chunk size (KiB; 0: messages in one piece, as mapped pinned
  // memory); empty: 0 and the default of exchange_options.
  std::vector<int> chunks_kib;
};

// What a careful user writes by hand: per direction, pack all fields into one buffer, Isend;
// Irecv per direction into its own buffer, unpack after Waitall.
class mpi_manual {
 public:
  explicit mpi_manual(setup& s) : s_(s) {
    for (const auto& d : s.st.directions()) {
      if (d == halox::direction<3>{}) continue;
      dirs_.push_back(d);
      const auto n = std::size_t(s.send_region(d).volume()) * s.f.size();
      sbuf_.emplace_back(n);
      rbuf_.emplace_back(n);
    }
    reqs_.resize(2 * dirs_.size());
  }
  void exchange() {
    const int nd = int(dirs_.size());
    for (int k = 0; k < nd; ++k) {
      const auto opposite = halox::direction<3>{-dirs_[k][0], -dirs_[k][1], -dirs_[k][2]};
      MPI_Irecv(rbuf_[k].data(), int(rbuf_[k].size()), MPI_DOUBLE, s_.neighbour(opposite), k,
                MPI_Comm(s_.dom.comm()), &reqs_[k]);
    }
    for (int k = 0; k < nd; ++k) {
      copy(s_.send_region(dirs_[k]), sbuf_[k].data(), true);
      MPI_Isend(sbuf_[k].data(), int(sbuf_[k].size()), MPI_DOUBLE, s_.neighbour(dirs_[k]), k,
                MPI_Comm(s_.dom.comm()), &reqs_[nd + k]);
    }
    MPI_Waitall(int(reqs_.size()), reqs_.data(), MPI_STATUSES_IGNORE);
    for (int k = 0; k < nd; ++k) {
      const auto opposite = halox::direction<3>{-dirs_[k][0], -dirs_[k][1], -dirs_[k][2]};
      copy(s_.recv_region(opposite), rbuf_[k].data(), false);
    }
  }

 private:
  void copy(const halox::box<3>& r, double* buf, bool pack) {
    for (const auto& fld : s_.f) {
      const auto& st = fld.strides();
      for (idx i = r.lo[0]; i < r.hi[0]; ++i)
        for (idx j = r.lo[1]; j < r.hi[1]; ++j) {
          double* p = fld.pointer({i, j, r.lo[2]});
          const idx n = r.hi[2] - r.lo[2];
          for (idx l = 0; l < n; ++l) pack ? (*buf++ = p[l * st[2]]) : (p[l * st[2]] = *buf++);
        }
    }
  }
  setup& s_;
  std::vector<halox::direction<3>> dirs_;
  std::vector<std::vector<double>> sbuf_, rbuf_;
  std::vector<MPI_Request> reqs_;
};

// MPI derived datatypes: per direction one struct type of the fields' subarrays, sent from and
// received into the fields directly (no user-side packing).
class mpi_types {
 public:
  explicit mpi_types(setup& s) : s_(s) {
    for (const auto& d : s.st.directions()) {
      if (d == halox::direction<3>{}) continue;
      dirs_.push_back(d);
      const auto opposite = halox::direction<3>{-d[0], -d[1], -d[2]};
      send_t_.push_back(make(s.send_region(d)));
      recv_t_.push_back(make(s.recv_region(opposite)));
    }
    reqs_.resize(2 * dirs_.size());
  }
  ~mpi_types() {
    for (auto& t : send_t_) MPI_Type_free(&t);
    for (auto& t : recv_t_) MPI_Type_free(&t);
  }
  void exchange() {
    const int nd = int(dirs_.size());
    for (int k = 0; k < nd; ++k) {
      const auto opposite = halox::direction<3>{-dirs_[k][0], -dirs_[k][1], -dirs_[k][2]};
      MPI_Irecv(MPI_BOTTOM, 1, recv_t_[k], s_.neighbour(opposite), k, MPI_Comm(s_.dom.comm()),
                &reqs_[k]);
    }
    for (int k = 0; k < nd; ++k)
      MPI_Isend(MPI_BOTTOM, 1, send_t_[k], s_.neighbour(dirs_[k]), k, MPI_Comm(s_.dom.comm()),
                &reqs_[nd + k]);
    MPI_Waitall(int(reqs_.size()), reqs_.data(), MPI_STATUSES_IGNORE);
  }

 private:
  MPI_Datatype make(const halox::box<3>& r) {
    std::vector<MPI_Datatype> parts;
    std::vector<MPI_Aint> addr;
    std::vector<int> ones;
    for (const auto& fld : s_.f) {
      const auto a = fld.allocated_box();
      int sizes[3], sub[3], starts[3];
      for (int i = 0; i < 3; ++i) {
        sizes[i] = int(a.hi[i] - a.lo[i]);
        sub[i] = int(r.hi[i] - r.lo[i]);
        starts[i] = int(r.lo[i] - a.lo[i]);
      }
      MPI_Datatype t;
      MPI_Type_create_subarray(3, sizes, sub, starts, MPI_ORDER_C, MPI_DOUBLE, &t);
      parts.push_back(t);
      MPI_Aint p;
      MPI_Get_address(fld.data(), &p);
      addr.push_back(p);
      ones.push_back(1);
    }
    MPI_Datatype all;
    MPI_Type_create_struct(int(parts.size()), ones.data(), addr.data(), parts.data(), &all);
    MPI_Type_commit(&all);
    for (auto& t : parts) MPI_Type_free(&t);
    return all;
  }
  setup& s_;
  std::vector<halox::direction<3>> dirs_;
  std::vector<MPI_Datatype> send_t_, recv_t_;
  std::vector<MPI_Request> reqs_;
};

// How rank 0's message to rank 1 travels, from describe() ("peer_ipc (...)", "host_staged
// (...)"), so that each row says which path it measured; quotes and backslashes dropped.
std::string path_of(const halox::halo_exchange& ex) {
  const std::string d = ex.describe();
  const auto at = d.find(" via ");
  if (at == std::string::npos) return "local";
  std::string out;
  for (char c : d.substr(at + 5, d.find('\n', at) - at - 5))
    if (c != '"' && c != '\\') out += c;
  return out;
}

#ifdef HALOX_BENCH_CUDA

// Two ranks on two GPUs (or sharing one), periodic 2x1x1 grid, one double field, halo width 1
// in x only: each rank sends the other one message of two y-z faces. For each message size: the
// blocking exchange (median of the slower rank), the per-iteration time of a loop of scheduled
// exchanges on one stream (no host synchronisation inside the loop; CUDA events), for peer_ipc
// (auto), NCCL between the GPUs as between nodes (two GPUs: staging nccl, HALOX_NODE_SIZE=1) and
// host_staged at each chunk size; the peer copy bandwidth of the same size on rank 0 as the
// ceiling (0 with one GPU), and the rows of raw_baselines.hpp (raw NCCL, MPI on pinned host
// memory, pinned copies). The floor: the message over the peer link at that
// bandwidth (at D2D where there is none), plus an empty launch.
bool sweep(const mpi::communicator& world, const options& o, const gpu_rates& rates) {
  if (world.size() != 2) {
    if (world.rank() == 0) std::fprintf(stderr, "halo_bench --sweep needs 2 ranks\n");
    return false;
  }
  struct leg {
    const char* policy;
    std::size_t chunk;  // host_staged: HALOX_STAGING_CHUNK
  };
  // Two ranks on two GPUs: NCCL forced too (auto picks CUDA IPC on one node), next to raw NCCL.
  [[maybe_unused]] const bool two_gpus = distinct_gpus(world);
  std::vector<leg> legs{{"auto", halox::exchange_options{}.staging_chunk_bytes}};
#ifdef HALOX_BENCH_NCCL
  if (two_gpus) legs.push_back({"nccl", 0});
  std::unique_ptr<raw_nccl> raw;
  if (two_gpus) raw = std::make_unique<raw_nccl>(world);
  void* const raw_ptr = raw.get();
#else
  void* const raw_ptr = nullptr;
#endif
  std::vector<std::size_t> chunks;
  for (int k : o.chunks_kib) chunks.push_back(std::size_t(k) << 10);
  if (chunks.empty()) chunks = {0, halox::exchange_options{}.staging_chunk_bytes};
  for (const auto c : chunks) legs.push_back({"host_staged", c});
  // --graph: what a replayed round's latency is made of, next to its rows.
  if (o.graph && world.rank() == 0) {
    const latency_floors f = measure_latency_floors();
    std::printf(
        "{\"impl\":\"flag_one_way\",\"case\":\"a flag between GPU 0 and 1, half a "
        "round trip\",\"ranks\":1,\"us\":%.3f}\n"
        "{\"impl\":\"graph_node\",\"case\":\"one more dependent empty kernel in a "
        "replayed graph\",\"ranks\":1,\"us\":%.3f}\n",
        f.flag_one_way_us, f.graph_node_us);
    std::fflush(stdout);
  }
  world.barrier();
  bool all_ok = true;
  for (const std::size_t bytes :
       {std::size_t(8) << 10, std::size_t(64) << 10, std::size_t(512) << 10, std::size_t(1) << 20,
        std::size_t(8) << 20, std::size_t(64) << 20}) {
    if (o.sweep_max_kib > 0 && bytes > (std::size_t(o.sweep_max_kib) << 10)) break;
    const idx face = idx(bytes / 16);  // cells per face: two faces of doubles per message
    idx ny = 1;
    while (ny * ny * 4 <= face) ny *= 2;
    const idx nz = face / ny;
    const halox::extents<3> global{8, ny, nz};
    const halox::cartesian<3> dom(world, global, halox::periodic<3>::all(),
                                  halox::process_grid<3>{{2, 1, 1}});
    const double ceiling = world.rank() == 0 ? peer_copy_gbps(bytes, 20) : 0;
    print_raw_rows(world, bytes, bytes >= (std::size_t(8) << 20) ? 100 : 500, raw_ptr);
    for (const auto& [policy, chunk] : legs) {
      setup s{dom, halox::stencil<3>::star({1, 0, 0}, {1, 0, 0}), {}, {}, global, {}, {}, {}};
      s.f.push_back(dom.make_field<double>(s.st, halox::device));
      s.mirror.push_back(dom.make_field<double>(s.st));
      s.owned = s.f[0].owned_box();
      ::setenv("HALOX_STAGING", policy, 1);
      ::setenv("HALOX_STAGING_CHUNK", std::to_string(chunk).c_str(), 1);
      // NCCL between the two GPUs: each rank a node of its own (on one node CUDA IPC carries
      // node-local messages under staging nccl too).
      if (std::string(policy) == "nccl") ::setenv("HALOX_NODE_SIZE", "1", 1);
      auto ex = halox::make_exchange(dom, s.st, s.f[0]);
      ::unsetenv("HALOX_STAGING");
      ::unsetenv("HALOX_STAGING_CHUNK");
      ::unsetenv("HALOX_NODE_SIZE");
      const std::string path = path_of(ex);
      s.fill();
      ex.exchange();
      const bool ok = s.check();
      all_ok = all_ok && ok;
      const int iters = bytes >= (std::size_t(8) << 20) ? 100 : 500;
      const auto [median, best] = time_it(world, o.warmup, iters, [&] { ex.exchange(); });
      double host_us = 0;
      const double loop_us = scheduled_loop_us(world, scheduled(ex), iters, &host_us);
      // --graph: ten of the same exchange captured once and replayed, where its path allows it.
      const bool capturable = ex.describe().find("CUDA graphs: capturable") != std::string::npos;
      const double graph_us =
          o.graph && capturable ? graph_loop_us(world, scheduled(ex), iters) : 0.0;
      const std::string graph_row = graph_us > 0
                                        ? json_piece(",\"graph_us\":%.2f,\"graph_GBps\":%.1f",
                                                     graph_us, double(bytes) / graph_us / 1e3)
                                        : std::string();
      const double copy_us = ceiling > 0 ? double(bytes) / (ceiling * 1e3)
                                         : 2 * double(bytes) / (rates.d2d_gbps * 1e3);
      const floor_of_row floor{
          copy_us + rates.launch_us,
          json_piece(",\"floor_counts\":\"%s, plus an empty launch\",\"floor_bytes\":%zu,"
                     "\"d2d_GBps\":%.1f,\"launch_us\":%.2f,\"floor_copy_us\":%.3f,"
                     "\"floor_us\":%.3f",
                     ceiling > 0 ? "message bytes at peer copy"
                                 : "message bytes read and written at D2D (no peer link measured)",
                     bytes, rates.d2d_gbps, rates.launch_us, copy_us, copy_us + rates.launch_us)};
      const std::string ratio = floor_fields(floor, "median_us", median) +
                                json_piece(",\"loop_ratio_to_floor\":%.3f", loop_us / floor.us);
      if (world.rank() == 0)
        std::printf(
            "{\"impl\":\"halox\",\"staging\":\"%s\",\"chunk_bytes\":%zu,\"path\":\"%s\","
            "\"case\":\"sweep %zu KiB\",\"ranks\":2,"
            "\"message_bytes\":%zu,\"bytes\":%zu,\"grid\":\"2x1x1\",\"iters\":%d,"
            "\"median_us\":%.2f,\"min_us\":%.2f,\"loop_us\":%.2f,\"loop_host_us\":%.2f,"
            "\"GBps\":%.1f,\"loop_GBps\":%.1f,\"peer_copy_GBps\":%.1f,\"verified\":%s%s%s}\n",
            policy, chunk, path.c_str(), bytes >> 10, bytes, s.halo_bytes(), iters, median, best,
            loop_us, host_us, double(bytes) / median / 1e3, double(bytes) / loop_us / 1e3, ceiling,
            ok ? "true" : "false", ratio.c_str(), graph_row.c_str());
      std::fflush(stdout);
    }
  }
  return all_ok;
}
#endif

int parse(int argc, char** argv, options& o, const mpi::communicator& world) {
  CLI::App app("Halo exchange benchmark: prints one JSON object per case and implementation.",
               "halo_bench");
  app.add_option("--sizes", o.sizes, "cells per dimension per rank")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--widths", o.widths, "box stencil widths")->delimiter(',')->capture_default_str();
  app.add_option("--fields", o.fields, "double fields per exchange")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--impls", o.impls,
                 "halox, mpi_manual, mpi_types; with --device: halox and, at 1 rank, memcpy3d, "
                 "memcpy3d_batch, cub_batched, per_region_kernels, single_kernel")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--iters", o.iters, "timed exchanges per case (0: chosen per case)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--warmup", o.warmup, "untimed exchanges first")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  example_app::add_device(app, o.device);
  app.add_flag("--wrapped", o.wrapped,
               "host fields over the benchmark's own arrays (wrap) instead of halox's own memory "
               "(make_field): what an existing code's arrays get");
  app.add_flag("--node-shared", o.node_shared,
               "--wrapped over arrays from halox::node_shared_allocator (implies --wrapped)");
  app.add_flag("--mac", o.mac,
               "the MAC grid case instead of the box cases: u, v, w on x-, y-, z-faces with "
               "box(2), p in cells with star(1), one exchange object for all four (one message "
               "per peer) next to one object per field; per size of --sizes (--widths, --fields "
               "and --impls do not apply)");
  app.add_flag("--sweep", o.sweep,
               "2 ranks, one GPU each (or sharing one): one double field, one message per "
               "direction of 8 KB .. 64 MB, peer_ipc vs host_staged, blocking and in a loop of "
               "scheduled exchanges, next to the GPUs' peer copy bandwidth (implies --device)");
  app.add_option("--sweep-max", o.sweep_max_kib,
                 "--sweep: only messages of up to this many KiB (0: every size)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--graph", o.graph,
               "--sweep: also ten of each exchange captured once into a CUDA graph, replayed in a "
               "loop (graph_us: time per exchange), where its path can be captured");
  app.add_option("--chunks", o.chunks_kib,
                 "--sweep: host_staged at each of these chunk sizes in KiB (HALOX_STAGING_CHUNK; "
                 "0: one piece per message); default 0 and the default chunk size")
      ->delimiter(',');
  const int code = example_app::parse(world, app, argc, argv);
  o.device = o.device || o.sweep;
  o.wrapped = o.wrapped || o.node_shared;
  if (code == 0 && o.wrapped && o.device) {
    if (world.rank() == 0) std::fprintf(stderr, "halo_bench: --wrapped is for host fields\n");
    return 2;
  }
  return code;
}

#ifdef HALOX_BENCH_CUDA
// --device: one GPU per rank where the node has enough (node-local rank modulo the GPU count):
// processes sharing a GPU are time-sliced, which costs far more than the exchange itself. Then
// the GPUs' rates for the floors, printed as rows. Returns 0, or 77 (as the GPU tests skip) on
// a rank without a GPU.
int setup_device(const mpi::communicator& world, gpu_rates& rates) {
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
    std::fprintf(stderr, "halo_bench: no CUDA device on rank %d\n", world.rank());
    return 77;
  }
  MPI_Comm node;
  MPI_Comm_split_type(MPI_Comm(world), MPI_COMM_TYPE_SHARED, world.rank(), MPI_INFO_NULL, &node);
  int local = 0;
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  cuda_check(cudaSetDevice(local % gpus));
  const double bw = d2d_bandwidth_gbps();
  rates.d2d_gbps = mpi::all_reduce(world, bw, mpi::minimum<double>());
  rates.launch_us = mpi::all_reduce(world, empty_launch_us(200), mpi::maximum<double>());
  if (world.rank() == 0) {
    std::printf("{\"impl\":\"cudaMemcpy_d2d\",\"case\":\"256 MiB\",\"ranks\":%d,\"GBps\":%.1f}\n",
                world.size(), bw);
    std::printf(
        "{\"impl\":\"empty_kernel\",\"case\":\"launch behind an event\",\"ranks\":%d,"
        "\"kernel_us\":%.2f}\n",
        world.size(), rates.launch_us);
  }
  return 0;
}
#else
struct gpu_rates {};  // --device needs CUDA: no rates without it
#endif

// One implementation of a box case, ready to time: `run` exchanges once, `enqueue` (device
// work on a stream, 1 rank only) where the implementation has it. Filled in place by prepare():
// `run` and `enqueue` refer to its members.
struct box_impl {
  std::function<void()> run;
  std::function<void(CUstream_st*)> enqueue;
  std::vector<double> start_us, wait_us;  // halox only
  std::unique_ptr<halox::halo_exchange> hx;
  std::shared_ptr<void> baseline;  // the hand-written implementation `run` calls
};

// `b` runs baseline `p`: its exchange(), and its enqueue(stream) where it has one.
template <class T>
void bind_baseline(box_impl& b, std::unique_ptr<T> p) {
  T* const raw = p.get();
  b.run = [raw] { raw->exchange(); };
  if constexpr (requires(T & t) { t.enqueue(nullptr); })
    b.enqueue = [raw](CUstream_st* st) { raw->enqueue(st); };
  b.baseline = std::shared_ptr<T>(std::move(p));
}

// halox's exchange of the case's fields, timed per phase (start, wait): where a slow exchange
// spends its time.
void bind_halox(box_impl& b, setup& s, const halox::cartesian<3>& dom, const options& o,
                const mpi::communicator& world) {
  b.hx = std::make_unique<halox::halo_exchange>([&] {
    switch (o.fields) {
      case 1:
        return halox::make_exchange(dom, s.st, s.f[0]);
      case 2:
        return halox::make_exchange(dom, s.st, s.f[0], s.f[1]);
      default:
        return halox::make_exchange(dom, s.st, s.f[0], s.f[1], s.f[2]);
    }
  }());
  b.run = [&b] {
    const double t0 = MPI_Wtime();
    auto h = b.hx->start();
    const double t1 = MPI_Wtime();
    h.wait();
    b.start_us.push_back((t1 - t0) * 1e6);
    b.wait_us.push_back((MPI_Wtime() - t1) * 1e6);
  };
  if (o.device && world.size() == 1)
    b.enqueue = [&b](CUstream_st* st) {
      b.hx->schedule_exchange(st);
      b.hx->schedule_wait(st);
    };
}

enum class prepared { ready, skipped, unknown };

// Fills `b` with implementation `impl` of case `s`: skipped where it cannot run (host MPI
// implementations cannot read device fields; the one-GPU baselines need 1 rank).
prepared prepare(box_impl& b, const std::string& impl, setup& s, const halox::cartesian<3>& dom,
                 const options& o, const mpi::communicator& world) {
#ifdef HALOX_BENCH_CUDA
  if (o.device && world.size() == 1) {
    if (impl == "memcpy3d") bind_baseline(b, std::make_unique<memcpy3d>(s));
    if (impl == "per_region_kernels") bind_baseline(b, std::make_unique<per_region_kernels>(s));
    if (impl == "single_kernel") bind_baseline(b, std::make_unique<single_kernel>(s));
    if (impl == "memcpy3d_batch") bind_baseline(b, std::make_unique<memcpy3d_batch>(s));
    if (impl == "cub_batched") bind_baseline(b, std::make_unique<cub_batched>(s));
    if (b.run) return prepared::ready;
  }
#endif
  if (o.device && impl != "halox") return prepared::skipped;
  if (impl == "halox") {
    bind_halox(b, s, dom, o, world);
  } else if (impl == "mpi_manual") {
    bind_baseline(b, std::make_unique<mpi_manual>(s));
  } else if (impl == "mpi_types") {
    bind_baseline(b, std::make_unique<mpi_types>(s));
  } else {
    if (world.rank() == 0) std::fprintf(stderr, "unknown implementation %s\n", impl.c_str());
    return prepared::unknown;
  }
  return prepared::ready;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The JSON fields of a row past the common ones: the phases, kernel and loop times where
// measured, the floor and the ratios to it, the path.
std::string row_extras(box_impl& b, [[maybe_unused]] const options& o,
                       [[maybe_unused]] const mpi::communicator& world, const floor_of_row& floor,
                       [[maybe_unused]] int iters, double median) {
  std::string phases = b.start_us.empty()
                           ? std::string()
                           : ",\"start_us\":" + std::to_string(median_of(b.start_us)) +
                                 ",\"wait_us\":" + std::to_string(median_of(b.wait_us));
  // Compared with the floor: the GPU time where it is measured (one GPU), else the blocking
  // call's median.
  std::string ratio = floor_fields(floor, "median_us", median);
#ifdef HALOX_BENCH_CUDA
  if (b.enqueue) {
    const double k = kernel_us(iters, b.enqueue);
    phases += ",\"kernel_us\":" + std::to_string(k) +
              ",\"kernel_batch_us\":" + std::to_string(kernel_us(iters / 10 + 1, b.enqueue, 20));
    ratio = floor_fields(floor, "kernel_us", k) +
            json_piece(",\"median_ratio_to_floor\":%.3f", median / floor.us);
  }
  if (b.hx && o.device && world.size() > 1) {
    const double loop = scheduled_loop_us(world, scheduled(*b.hx), iters);
    phases += ",\"loop_us\":" + std::to_string(loop);
    ratio += json_piece(",\"loop_ratio_to_floor\":%.3f", loop / floor.us);
  }
#endif
  phases += ratio;
  if (b.hx) phases += ",\"path\":\"" + path_of(*b.hx) + "\"";
  return phases;
}

// One box case: `L`^3 cells per rank, box stencil of width `w`, every implementation of
// --impls checked and timed, a row each. Returns 0, 1 if a check failed, 2 for an unknown
// implementation.
int box_case(const mpi::communicator& world, const options& o, int L, int w,
             [[maybe_unused]] const gpu_rates& rates) {
  const auto grid = halox::balanced_grid<3>(world.size(), {L, L, L});
  const halox::extents<3> global{idx(L) * grid.dims[0], idx(L) * grid.dims[1],
                                 idx(L) * grid.dims[2]};
  const halox::cartesian<3> dom(world, global, halox::periodic<3>::all(), grid);
  setup s{dom, halox::stencil<3>::box(w), {}, {}, global, {}, {}, {}};
  for (int k = 0; k < o.fields; ++k) {
    if (o.wrapped) {
      s.f.push_back(s.wrap_own(w, o.node_shared));
      continue;
    }
    s.f.push_back(dom.make_field<double>(s.st, o.device ? halox::device : halox::host));
    if (o.device) s.mirror.push_back(dom.make_field<double>(s.st));
  }
  s.owned = s.f[0].owned_box();
  const int iters = o.iters > 0 ? o.iters : L <= 16 ? 2000 : L <= 64 ? 200 : 50;
  // The floor of every row of this case, measured now (host memcpy, or the GPUs' rates).
#ifdef HALOX_BENCH_CUDA
  const floor_of_row floor = o.device ? device_floor(world, s, rates) : host_floor(world, s);
#else
  const floor_of_row floor = host_floor(world, s);
#endif
  bool all_ok = true;
  for (const auto& impl : o.impls) {
    box_impl b;
    const prepared p = prepare(b, impl, s, dom, o, world);
    if (p == prepared::unknown) return 2;
    if (p == prepared::skipped) continue;
    s.fill();
    b.run();
    const bool ok = s.check();
    all_ok = all_ok && ok;
    const auto [median, best] = time_it(world, o.warmup, iters, b.run);
    const std::string extras = row_extras(b, o, world, floor, iters, median);
    if (world.rank() == 0)
      std::printf(
          "{\"impl\":\"%s\",\"case\":\"%d^3 w%d%s\",\"ranks\":%d,\"local\":%d,\"width\":%d,"
          "\"fields\":%d,\"stencil\":\"box\",\"grid\":\"%dx%dx%d\",\"iters\":%d,"
          "\"median_us\":%.2f,\"min_us\":%.2f,\"bytes\":%zu,\"verified\":%s%s}\n",
          impl.c_str(), L, w,
          o.device        ? " device"
          : o.node_shared ? " node_shared"
          : o.wrapped     ? " wrapped"
                          : "",
          world.size(), L, w, o.fields, grid.dims[0], grid.dims[1], grid.dims[2], iters, median,
          best, s.halo_bytes(), ok ? "true" : "false", extras.c_str());
    std::fflush(stdout);
  }
  return all_ok ? 0 : 1;
}

int run(const mpi::communicator& world, const options& o) {
  gpu_rates rates;
  if (o.device) {
#ifdef HALOX_BENCH_CUDA
    if (const int code = setup_device(world, rates); code != 0) return code;
#else
    if (world.rank() == 0) std::fprintf(stderr, "halo_bench: --device needs a build with CUDA\n");
    return 2;
#endif
  }
#ifdef HALOX_BENCH_CUDA
  if (o.sweep) return sweep(world, o, rates) ? 0 : 1;
#endif
  if (o.mac) {
    mac_options mo{o.sizes, o.iters, o.warmup, o.device, {}};
    mo.floor = [&](std::size_t peer, std::size_t local) {
#ifdef HALOX_BENCH_CUDA
      if (o.device) return device_floor(world, peer, local, rates);
#endif
      return host_floor(world, peer + local);
    };
    return mac_rows(world, mo) ? 0 : 1;
  }
  int status = 0;
  for (int L : o.sizes)
    for (int w : o.widths) {
      const int code = box_case(world, o, L, w, rates);
      if (code == 2) return 2;
      status = std::max(status, code);
    }
  return status;
}

}  // namespace
}  // namespace halo_bench

int main(int argc, char** argv) {
  halo_bench::mpi::environment env(argc, argv);
  halo_bench::mpi::communicator world;
  halo_bench::options o;
  if (const int code = halo_bench::parse(argc, argv, o, world); code >= 0) return code;
  return halo_bench::run(world, o);
}
