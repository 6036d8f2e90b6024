#pragma once
/// @file
/// Variable-size exchange along a 1-D chain of ranks: each round, every rank may send a payload
/// of any length to its left and to its right neighbour. Rounds repeat on the same object (multi-
/// hop propagation), and `gather_left`/`gather_right` collect "the W elements before/after my
/// slice" by running as many rounds as needed. See docs/chain.md.
///
/// ```
/// halox::chain<double> ch(world);                       // rank r: left r-1, right r+1
/// auto r = ch.exchange(my_head, my_tail);               // to_left, to_right
/// if (auto l = r.from_left()) use(*l);                  // nullopt on rank 0 (no left neighbour)
/// auto ctx = ch.gather_left(my_slice, 1000);            // up to 1000 elements before my slice
/// ```

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <type_traits>
#include <typeinfo>

#include <boost/mpi/communicator.hpp>

#include "halox/core/error.hpp"
#include "halox/core/options.hpp"
#include "halox/core/stream.hpp"
#include "halox/field/memory.hpp"

namespace halox {

/// Options of a `chain`. Every rank must pass the same `periodic` and `max_elements` (checked
/// collectively at construction); `space` may differ between ranks.
struct chain_options {
  /// Whether the last rank's right neighbour is rank 0 (and rank 0's left neighbour the last
  /// rank). On one rank, a periodic chain is its own left and right neighbour.
  bool periodic = false;
  /// Where payloads and received data live. `device`: payload spans point to CUDA device memory
  /// and received data is delivered to device memory (needs a CUDA build).
  memory_space space = memory_space::host;
  /// Largest payload, in elements, that one message may carry; a larger payload is an error.
  /// 0 (the default): 2^40 bytes' worth of elements.
  std::size_t max_elements = 0;
  /// Device chains: how sizes and payloads travel. `automatic` (the default) and `host_staged`:
  /// through pinned host memory and MPI. `nccl`: NCCL sends and receives between device buffers
  /// on halox's stream, over the NCCL communicator shared with every exchange object and chain
  /// on the same ranks; needs a build with NCCL, every rank asking for it and one GPU per rank
  /// (otherwise every rank throws halox::error at construction). Other values, and `nccl` on a
  /// host chain, are errors. `HALOX_STAGING` overrides it for device chains (`nccl`: NCCL; any
  /// other policy: pinned host memory); host chains ignore the variable.
  staging device_staging = staging::automatic;
  /// Give up a round after this many seconds of waiting (`wait()`, a blocking round, a
  /// gather): halox::error names the round and the neighbours; the chain then refuses further
  /// rounds. 0: wait for ever. `HALOX_WAIT_TIMEOUT` overrides it, as for exchanges.
  double wait_timeout = 0;
};

namespace detail {

struct chain_state;

/// A payload or received message as the type-erased core sees it: `count` elements.
struct chain_bytes {
  const std::byte* data = nullptr;
  std::size_t count = 0;
};

/// The untyped core of `chain<T>` (src/chain/chain_exchange.cpp): elements are `elem` bytes.
class chain_core {
 public:
  chain_core(const boost::mpi::communicator& comm, const chain_options& o, std::size_t elem,
             const char* type_name);
  ~chain_core();
  chain_core(chain_core&&) noexcept;
  chain_core& operator=(chain_core&&) noexcept;

  /// Starts a round; `after` (device space): the staging copies wait for that stream's work.
  void start(chain_bytes to_left, chain_bytes to_right, stream_t after = nullptr);
  /// Completes the round; `before` (device space): that stream waits for the delivery copies.
  void wait(stream_t before = nullptr);
  bool test();
  /// Received from the left (side 0) or right (side 1) in the last completed round; nullopt-like
  /// `exists == false` where there is no neighbour.
  bool has_neighbor(int side) const;
  chain_bytes received(int side) const;
  chain_bytes gather(chain_bytes mine, std::size_t w, bool from_left);
  std::uint64_t generation() const;
  bool in_flight() const;
  int rank() const;
  int neighbor(int side) const;
  bool periodic() const;
  memory_space space() const;
  bool uses_nccl() const;

 private:
  std::unique_ptr<chain_state> s_;
};

template <class T>
std::span<const T> typed(chain_bytes b) {
  return {reinterpret_cast<const T*>(b.data), b.count};
}
template <class T>
chain_bytes untyped(std::span<const T> s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

}  // namespace detail

/// What one round delivered. The spans point into buffers the chain owns (device memory for a
/// device-space chain); they stay valid until the next round or gather on the same chain.
template <class T>
class chain_result {
 public:
  chain_result() = default;
  chain_result(std::optional<std::span<const T>> l, std::optional<std::span<const T>> r)
      : left_(l), right_(r) {}
  /// What the left neighbour sent to its right: nullopt where there is no left neighbour (rank 0
  /// of a non-periodic chain); an empty span where the neighbour sent nothing.
  std::optional<std::span<const T>> from_left() const { return left_; }
  /// What the right neighbour sent to its left: nullopt at the last rank of a non-periodic
  /// chain; an empty span where the neighbour sent nothing.
  std::optional<std::span<const T>> from_right() const { return right_; }

 private:
  std::optional<std::span<const T>> left_, right_;
};

template <class T>
class chain;

/// The in-flight part of a split-phase round (`chain::start`). Must not outlive its chain.
template <class T>
class chain_handle {
 public:
  /// Completes the round and returns what it delivered. Idempotent while no newer round has
  /// started; throws halox::error if one has (this round's data has been overwritten).
  chain_result<T> wait();
  /// Makes progress without blocking; true once the round is complete (then `wait()` returns at
  /// once).
  bool test();

 private:
  friend class chain<T>;
  chain_handle(chain<T>* c, std::uint64_t generation) : c_(c), generation_(generation) {}
  chain<T>* c_;
  std::uint64_t generation_;
};

/// A 1-D chain over the ranks of a communicator, in rank order, exchanging variable-size
/// payloads of `T` with the left and right neighbour in rounds. Construction is collective
/// (every rank, same `T`, same options); so is every round and gather: all ranks run the same
/// sequence of them. Two neighbours that make different calls (a round against a gather,
/// gathers with different sides or `w`) both throw halox::error naming the two calls; ranks
/// further away complete theirs unless they need context through a rank that failed
/// (docs/chain.md, "Calls that differ").
///
/// Each round sends the payload sizes (with the call) first, then the data, over a duplicate of
/// the communicator owned by the object. Received data lands in buffers the object owns, grown
/// only when a larger payload arrives: rounds whose sizes do not grow allocate nothing.
template <class T>
class chain {
  static_assert(std::is_trivially_copyable_v<T>, "chain<T> needs a trivially copyable T");

 public:
  using value_type = T;

  /// Collective. Throws halox::error on every rank if ranks disagree on the element type (its
  /// size or name), on `periodic` or `max_elements`, or if a device chain is asked for in a
  /// build without CUDA.
  explicit chain(const boost::mpi::communicator& comm, chain_options o = {})
      : core_(comm, o, sizeof(T), typeid(T).name()) {}

  /// Blocking round: sends `to_left` to the left neighbour and `to_right` to the right one
  /// (empty: send nothing; ignored where there is no such neighbour) and returns what the
  /// neighbours sent. Sizes are `size_t`: a negative count converted to one is caught as larger
  /// than `max_elements`.
  chain_result<T> exchange(std::span<const T> to_left, std::span<const T> to_right) {
    core_.start(detail::untyped(to_left), detail::untyped(to_right));
    core_.wait();
    return result();
  }
  /// Split-phase round: posts the messages and returns. The payload spans must stay valid and
  /// unchanged until the handle's `wait()`. Throws halox::error (before sending anything) while
  /// the previous round of this chain is still in flight.
  ///
  /// Device chains: the payload is copied to pinned host memory on halox's own blocking
  /// stream, which sees the legacy default stream's work but not that of other streams; use
  /// `schedule_exchange` to order after a stream.
  [[nodiscard]] chain_handle<T> start(std::span<const T> to_left, std::span<const T> to_right) {
    core_.start(detail::untyped(to_left), detail::untyped(to_right));
    return chain_handle<T>(this, core_.generation());
  }
  /// Stream-ordered round, step one (device chains): the payload copies wait for the work
  /// already on `stream` (an event), the host waits for those copies, then posts the messages.
  /// Over NCCL: enqueues the size messages after the work on `stream` and returns without a
  /// host wait; the payloads are read by the step two's NCCL group, so work enqueued on
  /// `stream` between the two steps must not write them.
  void schedule_exchange(stream_t stream, std::span<const T> to_left, std::span<const T> to_right) {
    core_.start(detail::untyped(to_left), detail::untyped(to_right), stream);
  }
  /// Stream-ordered round, step two: waits for the messages, enqueues the copies into the
  /// chain's device buffers and makes `stream` wait for them; returns without waiting. Sizes
  /// in the result are final; the data is valid for work enqueued on `stream` afterwards.
  /// Over NCCL: the host waits for the sizes (so for the work on `stream` before step one),
  /// then enqueues the payloads' NCCL group and makes `stream` wait for it.
  chain_result<T> schedule_wait(stream_t stream) {
    core_.wait(stream);
    return result();
  }

  /// Collects, on every rank, the last `min(w, available)` elements that precede `mine` in
  /// chain order: the tails of the slices of the ranks to the left, nearest last. Available:
  /// everything left of this rank (non-periodic), or every other rank's slice, wrapping around
  /// (periodic; never this rank's own slice). Runs rounds with each neighbour for as long as
  /// that pair needs them, decided from counts both ends know (no collective step). Every rank
  /// must pass the same `w`; a neighbour with another `w` or call makes both throw, and a rank
  /// whose context would come through a rank that failed throws too. The span points into the
  /// chain's buffer (device memory for device chains), valid until the next round or gather on
  /// this chain.
  std::span<const T> gather_left(std::span<const T> mine, std::size_t w) {
    return detail::typed<T>(core_.gather(detail::untyped(mine), w, true));
  }
  /// As gather_left, mirrored: the first `min(w, available)` elements that follow `mine`.
  std::span<const T> gather_right(std::span<const T> mine, std::size_t w) {
    return detail::typed<T>(core_.gather(detail::untyped(mine), w, false));
  }

  /// Whether a round started with `start()`/`schedule_exchange()` has not completed yet.
  bool in_flight() const { return core_.in_flight(); }
  /// The left (right) neighbour's rank, or -1 at the chain's non-periodic end.
  int left() const { return core_.neighbor(0); }
  int right() const { return core_.neighbor(1); }
  bool periodic() const { return core_.periodic(); }
  memory_space space() const { return core_.space(); }
  /// How this chain's messages travel: `staging::nccl` or `staging::host_staged` for device
  /// chains (after `HALOX_STAGING`), `staging::automatic` for host chains (plain MPI).
  staging device_staging() const {
    if (core_.space() == memory_space::host) return staging::automatic;
    return core_.uses_nccl() ? staging::nccl : staging::host_staged;
  }

 private:
  friend class chain_handle<T>;
  chain_result<T> result() const {
    auto side = [&](int s) -> std::optional<std::span<const T>> {
      if (!core_.has_neighbor(s)) return std::nullopt;
      return detail::typed<T>(core_.received(s));
    };
    return {side(0), side(1)};
  }
  detail::chain_core core_;
};

template <class T>
chain_result<T> chain_handle<T>::wait() {
  detail::require(generation_ == c_->core_.generation(),
                  "rank {}: wait() on the handle of chain round {}, but round {} has started "
                  "since; that round's data is gone",
                  c_->core_.rank(), generation_, c_->core_.generation());
  c_->core_.wait();
  return c_->result();
}

template <class T>
bool chain_handle<T>::test() {
  return generation_ != c_->core_.generation() || c_->core_.test();
}

}  // namespace halox
