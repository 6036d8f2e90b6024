#pragma once
/// @file
/// Lays out messages and collects the copy steps of an exchange program; the buffers are
/// allocated once at the end and every step is pointed into them. The typed templates
/// (make_exchange) only feed it steps; it is compiled in src/exchange/program_builder.cpp.

#include <cstddef>
#include <string>
#include <vector>

#include "program/program.hpp"

namespace halox::detail {

class program_builder {
 public:
  /// `options`: the exchange's transport choices, the environment already applied.
  explicit program_builder(const exchange_options& options) { p_.options = options; }
  enum side { send = 0, recv = 1 };

  /// Opens the next message of `s` to or from `peer`.
  void begin(side s, int peer);
  /// Adds a strided step whose buffer side is the next `bytes` bytes of the open message; the
  /// op's buffer pointer is filled in by `finish()`. Device steps run in the fused kernels.
  void add(side s, const copy_op& op, std::size_t bytes, bool on_device = false);
  /// Adds an index-list step, as `add` does for strided ones.
  void add(side s, const gather_op& op, std::size_t bytes, bool on_device = false);
  exchange_program& program() { return p_; }

  /// Allocates both buffers, points every step at its place, and writes the summary.
  /// `spaces`: where each field lives; `reverse`: a halo-to-owner exchange, whose unpacking
  /// runs in peer order after every message arrived (deterministic combining).
  exchange_program finish(const std::vector<memory_space>& spaces, bool reverse);

 private:
  void align(side s, std::size_t elem);
  void grow(side s, std::size_t bytes, std::size_t copies, std::size_t gathers);
  /// How device messages travel (the staging policy and its variant), for describe().
  std::string decide_staging();
  void allocate_buffers(bool gpu);
  void point_steps();
  void summarize(std::size_t field_count);

  exchange_program p_;
  std::size_t offset_[2] = {0, 0};
  std::vector<std::size_t> copy_off_[2], gather_off_[2], device_off_[2], device_gather_off_[2];
};

}  // namespace halox::detail
