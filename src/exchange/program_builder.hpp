#pragma once
/// @file
/// Lays out messages and collects the copy steps of an exchange program: where each message
/// and each step's buffer side lies in the message buffers, not the buffers themselves (they
/// are allocated once the route table has decided how the messages travel, see
/// program/message_buffers.hpp). The exchange compiler (structured and unstructured) feeds it.

#include <cstddef>
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

  /// The program's layout, with its summary. `spaces`: where each field lives; `reverse`: a
  /// halo-to-owner exchange, whose unpacking runs in peer order after every message arrived
  /// (deterministic combining).
  exchange_program finish(const std::vector<memory_space>& spaces, bool reverse);

 private:
  void align(side s, std::size_t elem);
  void grow(side s, std::size_t bytes, std::size_t copies, std::size_t gathers);
  void summarize(std::size_t field_count);

  exchange_program p_;
  std::size_t offset_[2] = {0, 0};
  step_offsets& at(side s) { return s == send ? p_.send_offsets : p_.recv_offsets; }
};

}  // namespace halox::detail
