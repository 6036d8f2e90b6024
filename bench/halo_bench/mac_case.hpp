// halo_bench --mac: the halos of a 3-D MAC (staggered) grid — u on x-faces, v on y-faces, w on
// z-faces with a box(2) stencil (advection reads two points, edges and corners too) and p in
// cells with star(1) (the pressure Laplacian) — in ONE exchange object (per-field halos: one
// message per peer), next to one exchange object per field doing the same.
//
// A periodic domain of `local`^3 cells per rank on the automatic process grid. Along a periodic
// dimension a face field has as many points as cells; each block stores the points of its cells
// and the first point of the next box (a copy, its owner's value), then its halo. Every stored
// and halo point is checked against the global coordinates encoded in the data before timing.
#pragma once
#include <algorithm>
#include <array>
#include <cstdio>
#include <functional>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "floors.hpp"
#include "setup.hpp"
#include "timing.hpp"

namespace halo_bench {

/// The four fields of a MAC case: their stencils, centerings and (for device fields) host
/// mirrors; filling and checking by global coordinates, and the halo bytes each rank receives.
class mac_grid {
 public:
  static constexpr auto st_vel = halox::stencil<3>::box(2);
  static constexpr auto st_p = halox::stencil<3>::star(1);

  mac_grid(const halox::cartesian<3>& dom, const halox::extents<3>& global, bool device)
      : dom_(dom), global_(global) {
    const auto space = device ? halox::device : halox::host;
    for (int d = 0; d < 3; ++d) {
      f.push_back(dom.make_field<double>(st_vel, space, halox::centering::face(d)));
      if (device)
        mirror_.push_back(dom.make_field<double>(st_vel, halox::host, halox::centering::face(d)));
    }
    f.push_back(dom.make_field<double>(st_p, space));
    if (device) mirror_.push_back(dom.make_field<double>(st_p));
    for (std::size_t k = 0; k < f.size(); ++k)
      if (device && (f[k].allocated_box() != mirror_[k].allocated_box() ||
                     f[k].strides() != mirror_[k].strides()))
        throw halox::error("halo_bench --mac: device and host fields differ in layout");
    count_bytes();
  }

  std::vector<halox::field<double, 3>> f;  // u, v, w, p

  const halox::stencil<3>& stencil_of(std::size_t k) const { return k < 3 ? st_vel : st_p; }

  /// Owned points: their encoded global coordinates; every other allocated point: -1.
  void fill() const {
    for (std::size_t k = 0; k < f.size(); ++k) {
      const auto& h = host(k);
      each(h.allocated_box(), [&](const halox::extents<3>& g) {
        h.at(g) = h.owned_points().contains(g) ? encode(g, global_, int(k)) : -1.0;
      });
    }
    transfer(true);
  }
  /// True on every rank when every point the exchange writes (stored copies, halo points in the
  /// stencil's directions) holds its owner's value and every other point is as filled.
  bool check() const {
    transfer(false);
    bool ok = true;
    for (std::size_t k = 0; k < f.size(); ++k) {
      const auto& h = host(k);
      each(h.allocated_box(), [&](const halox::extents<3>& g) {
        const bool written = h.owned_points().contains(g) || filled(k, g);
        ok = ok && h.at(g) == (written ? encode(g, global_, int(k)) : -1.0);
      });
    }
    return mpi::all_reduce(dom_.comm(), ok, std::logical_and<bool>());
  }
  std::size_t halo_bytes() const { return peer_bytes_ + local_bytes_; }
  std::size_t peer_bytes() const { return peer_bytes_; }    // from other ranks
  std::size_t local_bytes() const { return local_bytes_; }  // this rank's periodic images

 private:
  template <class F>
  static void each(const halox::box<3>& b, F&& fn) {
    for (idx i = b.lo[0]; i < b.hi[0]; ++i)
      for (idx j = b.lo[1]; j < b.hi[1]; ++j)
        for (idx l = b.lo[2]; l < b.hi[2]; ++l) fn(halox::extents<3>{i, j, l});
  }
  const halox::field<double, 3>& host(std::size_t k) const {
    return mirror_.empty() ? f[k] : mirror_[k];
  }
  // Whether the exchange writes point g of field k (not an owned point): a stored copy, or a
  // halo point in one of the stencil's directions within its widths.
  bool filled(std::size_t k, const halox::extents<3>& g) const {
    const auto stored = f[k].owned_box();
    const auto& st = stencil_of(k);
    halox::direction<3> d{};
    for (int i = 0; i < 3; ++i) {
      if (g[i] < stored.lo[i]) {
        if (stored.lo[i] - g[i] > st.lo[i]) return false;
        d[i] = -1;
      } else if (g[i] >= stored.hi[i]) {
        if (g[i] - stored.hi[i] >= st.hi[i]) return false;
        d[i] = 1;
      }
    }
    return d == halox::direction<3>{} || st.has(d);
  }
  // The bytes the exchange writes on this rank, split by the owner of each point (the rank
  // whose box holds the point's cell, wrapped into the global box).
  void count_bytes() {
    std::vector<halox::box<3>> boxes;
    for (int r = 0; r < dom_.comm().size(); ++r) boxes.push_back(dom_.box_of(r));
    for (std::size_t k = 0; k < f.size(); ++k)
      each(f[k].allocated_box(), [&](const halox::extents<3>& g) {
        if (f[k].owned_points().contains(g) || !filled(k, g)) return;
        halox::extents<3> w{};
        for (int i = 0; i < 3; ++i) w[i] = ((g[i] % global_[i]) + global_[i]) % global_[i];
        int owner = 0;
        while (!boxes[std::size_t(owner)].contains(w)) ++owner;
        (owner == dom_.rank() ? local_bytes_ : peer_bytes_) += sizeof(double);
      });
  }
  void transfer(bool up) const {
#ifdef HALOX_BENCH_CUDA
    for (std::size_t k = 0; k < mirror_.size(); ++k) {
      const auto bytes = std::size_t(f[k].allocated_box().volume()) * sizeof(double);
      cuda_check(up ? cudaMemcpy(f[k].data(), mirror_[k].data(), bytes, cudaMemcpyHostToDevice)
                    : cudaMemcpy(mirror_[k].data(), f[k].data(), bytes, cudaMemcpyDeviceToHost));
    }
#else
    (void)up;
#endif
  }

  const halox::cartesian<3>& dom_;
  halox::extents<3> global_;
  std::vector<halox::field<double, 3>> mirror_;
  std::size_t peer_bytes_ = 0, local_bytes_ = 0;
};

/// Messages this rank sends in one exchange of each object and the distinct peers they go to,
/// from describe() ("send to R: ..." lines).
inline std::pair<int, int> messages_and_peers(const std::vector<halox::halo_exchange*>& objects) {
  int messages = 0;
  std::set<int> peers;
  for (const auto* ex : objects) {
    std::istringstream lines(ex->describe());
    std::string line;
    while (std::getline(lines, line))
      if (const auto at = line.find("send to "); at != std::string::npos) {
        ++messages;
        peers.insert(std::stoi(line.substr(at + 8)));
      }
  }
  return {messages, int(peers.size())};
}

/// What mac_rows needs from halo_bench's main: options, the floor of a row from this rank's
/// peer and local halo bytes (host memcpy, or the GPUs' rates), and the GPU timings.
struct mac_options {
  std::vector<int> sizes;
  int iters = 0;  // 0: chosen per case
  int warmup = 10;
  bool device = false;
  std::function<floor_of_row(std::size_t peer, std::size_t local)> floor;
};

/// Prints the MAC rows for every size: "halox" (one exchange object for the four fields) and
/// "halox_separate" (one object per field, all started, then all waited for). False if any
/// check failed.
inline bool mac_rows(const mpi::communicator& world, const mac_options& o) {
  bool all_ok = true;
  for (const int L : o.sizes) {
    const auto grid = halox::balanced_grid<3>(world.size(), {L, L, L});
    const halox::extents<3> global{idx(L) * grid.dims[0], idx(L) * grid.dims[1],
                                   idx(L) * grid.dims[2]};
    const halox::cartesian<3> dom(world, global, halox::periodic<3>::all(), grid);
    mac_grid m(dom, global, o.device);
    const int iters = o.iters > 0 ? o.iters : L <= 16 ? 2000 : L <= 64 ? 200 : 50;
    const floor_of_row floor = o.floor(m.peer_bytes(), m.local_bytes());
    const std::size_t bytes = mpi::all_reduce(world, m.halo_bytes(), mpi::maximum<std::size_t>());
    using halox::halo;
    for (const bool one : {true, false}) {
      std::vector<halox::halo_exchange> ex;
      if (one) {
        ex.push_back(halox::make_exchange(dom, halo(m.st_vel, m.f[0]), halo(m.st_vel, m.f[1]),
                                          halo(m.st_vel, m.f[2]), halo(m.st_p, m.f[3])));
      } else {
        for (std::size_t k = 0; k < 4; ++k)
          ex.push_back(halox::make_exchange(dom, m.stencil_of(k), m.f[k]));
      }
      std::vector<halox::halo_exchange*> objects;
      for (auto& e : ex) objects.push_back(&e);
      // Every object started, then every one waited for: the separate objects' messages are
      // in flight together, as a solver would run them.
      std::vector<halox::exchange_handle> handles;
      auto run = [&] {
        handles.clear();
        for (auto* e : objects) handles.push_back(e->start());
        for (auto& h : handles) h.wait();
      };
      m.fill();
      run();
      const bool ok = m.check();
      all_ok = all_ok && ok;
      const auto [median, best] = time_it(world, o.warmup, iters, run);
      const auto [messages, peers] = messages_and_peers(objects);
      const int most_messages = mpi::all_reduce(world, messages, mpi::maximum<int>());
      std::string extra = floor_fields(floor, "median_us", median);
#ifdef HALOX_BENCH_CUDA
      if (o.device) {
        const std::function<void(cudaStream_t)> enqueue = [&](cudaStream_t s) {
          for (auto* e : objects) e->schedule_exchange(s);
          for (auto* e : objects) e->schedule_wait(s);
        };
        if (world.size() == 1) {
          const double k = kernel_us(iters, enqueue);
          extra = ",\"kernel_us\":" + std::to_string(k) + floor_fields(floor, "kernel_us", k) +
                  json_piece(",\"median_ratio_to_floor\":%.3f", median / floor.us);
        } else {
          const double loop = scheduled_loop_us(world, enqueue, iters);
          extra += ",\"loop_us\":" + std::to_string(loop) +
                   json_piece(",\"loop_ratio_to_floor\":%.3f", loop / floor.us);
        }
      }
#endif
      if (world.rank() == 0)
        std::printf(
            "{\"impl\":\"%s\",\"case\":\"mac %d^3%s\",\"ranks\":%d,\"local\":%d,"
            "\"fields\":\"u,v,w face box(2); p cell star(1)\",\"objects\":%zu,"
            "\"grid\":\"%dx%dx%d\",\"iters\":%d,\"peers\":%d,\"messages\":%d,"
            "\"messages_per_peer\":%.2f,\"max_messages\":%d,\"median_us\":%.2f,\"min_us\":%.2f,"
            "\"bytes\":%zu,\"verified\":%s%s}\n",
            one ? "halox" : "halox_separate", L, o.device ? " device" : "", world.size(), L,
            objects.size(), grid.dims[0], grid.dims[1], grid.dims[2], iters, peers, messages,
            peers > 0 ? double(messages) / peers : 0.0, most_messages, median, best, bytes,
            ok ? "true" : "false", extra.c_str());
      std::fflush(stdout);
    }
  }
  return all_ok;
}

}  // namespace halo_bench
