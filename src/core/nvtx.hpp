#pragma once
// NVTX v3 ranges around halox's phases (docs/observing.md), in the "halox" domain, each named
// "<label>: <phase>". CUDA builds have them; they are active only where the exchange asks
// (exchange_options::nvtx or HALOX_NVTX=1): otherwise a range is one test of a null pointer.
// The names are registered once at set-up, so a range allocates nothing. C++17 (the CUDA
// library includes it).
#include <string>

namespace halox::detail {

enum class nvtx_phase { setup, start, wait, schedule_exchange, schedule_wait, pack, unpack, count };

/// One object's registered range names; inactive when default-constructed.
class nvtx_names {
 public:
  nvtx_names() = default;
  /// Registers "<label>: <phase>" for every phase where `on` (and the build has NVTX).
  nvtx_names(const std::string& label, bool on);
  bool on() const { return domain_ != nullptr; }
  void push(nvtx_phase p) const;
  void pop() const;

 private:
  void* domain_ = nullptr;
  void* names_[int(nvtx_phase::count)] = {};
};

/// A range for the lifetime of the object (nothing when `n` is inactive).
class nvtx_range {
 public:
  nvtx_range(const nvtx_names& n, nvtx_phase p) : n_(n) {
    if (n_.on()) n_.push(p);
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
