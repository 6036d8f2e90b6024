#pragma once
// NVTX v3 ranges around halox's phases (docs/observing.md), in the "halox" domain, each named
// "<label>: <phase>". CUDA builds have them; they are active only where the exchange asks
// (exchange_options::nvtx or HALOX_NVTX=1): otherwise a range is one test of a null pointer.
// The names are registered once at set-up, so a range allocates nothing. C++17 (the CUDA
// library includes it).
#include <cstddef>
#include <string>
#include <vector>

namespace halox::detail {

enum class nvtx_phase { setup, start, wait, schedule_exchange, schedule_wait, pack, unpack, count };
/// The transports (transport/carrier.hpp) and the steps of theirs that get a range, named
/// "<label>: <transport> <step>" ("heat: NCCL post sends", "heat: MPI complete").
enum class nvtx_transport { mpi, shm, staging, ipc, nccl, count };
enum class nvtx_step { post_receives, clear_to_send, post_sends, complete, count };

/// One object's registered range names; inactive when default-constructed.
class nvtx_names {
 public:
  nvtx_names() = default;
  /// Registers "<label>: <phase>" for every phase, and per send (receive) message "<label>:
  /// pack for rank P" ("<label>: unpack from rank P"), P its peer, where `on` (and the build
  /// has NVTX).
  nvtx_names(const std::string& label, bool on, const std::vector<int>& send_peers = {},
             const std::vector<int>& recv_peers = {});
  bool on() const { return domain_ != nullptr; }
  void push(nvtx_phase p) const;
  /// The range of the host pack (`pack`) or unpack of message `m`.
  void push_message(bool pack, std::size_t m) const;
  /// The range of a transport's step.
  void push_step(nvtx_transport t, nvtx_step s) const;
  void pop() const;

 private:
  void* domain_ = nullptr;
  void* names_[int(nvtx_phase::count)] = {};
  void* step_names_[int(nvtx_transport::count)][int(nvtx_step::count)] = {};
  std::vector<void*> pack_names_, unpack_names_;
};

/// A range for the lifetime of the object (nothing when `n` is inactive): a phase, one
/// message's host pack (`pack`) or unpack (message `m`), or a transport's step.
class nvtx_range {
 public:
  nvtx_range(const nvtx_names& n, nvtx_phase p) : n_(n) {
    if (n_.on()) n_.push(p);
  }
  nvtx_range(const nvtx_names& n, bool pack, std::size_t m) : n_(n) {
    if (n_.on()) n_.push_message(pack, m);
  }
  nvtx_range(const nvtx_names& n, nvtx_transport t, nvtx_step s) : n_(n) {
    if (n_.on()) n_.push_step(t, s);
  }
  ~nvtx_range() {
    if (n_.on()) n_.pop();
  }
  nvtx_range(const nvtx_range&) = delete;
  nvtx_range& operator=(const nvtx_range&) = delete;

 private:
  const nvtx_names& n_;
};

/// An inactive set, for ranges that may have none.
inline const nvtx_names& nvtx_off() {
  static const nvtx_names none;
  return none;
}

/// Whether this build has NVTX ranges (CUDA builds).
bool nvtx_built() noexcept;

}  // namespace halox::detail
