// Cross-memory attach between ranks of a node (see transport/cross_memory.hpp).
#include "transport/cross_memory.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include <fmt/format.h>

#include "halox/core/error.hpp"

namespace halox::detail {

namespace testing {
bool deny_cross_memory = false;
}  // namespace testing

namespace {

// At most this many pairs per system call (the kernel's UIO_MAXIOV).
constexpr std::size_t max_pairs = IOV_MAX;

// Appends the pair (`here`, `there`, `n` bytes), merged into the last one where both sides
// continue it.
void add_run(cross_copy& c, std::byte* here, std::byte* there, std::size_t n) {
  c.bytes += n;
  if (!c.local.empty()) {
    iovec& l = c.local.back();
    iovec& r = c.remote.back();
    if (static_cast<std::byte*>(l.iov_base) + l.iov_len == here &&
        static_cast<std::byte*>(r.iov_base) + r.iov_len == there) {
      l.iov_len += n;
      r.iov_len += n;
      return;
    }
  }
  c.local.push_back({here, n});
  c.remote.push_back({there, n});
}

// The runs of dimensions d.. of `op` from (`src`, `dst`): the innermost dimension is one run
// where it is contiguous on both sides, else one run per element.
void add_runs(cross_copy& c, const copy_op& op, int d, const std::byte* src, std::byte* dst,
              bool remote_dst) {
  const auto k = std::size_t(d);
  const bool inner = d == op.ndims - 1;
  const auto elem = index(op.elem);
  if (inner && op.src_stride[k] == elem && op.dst_stride[k] == elem) {
    std::byte* s = const_cast<std::byte*>(src);
    const std::size_t n = std::size_t(op.count[k]) * op.elem;
    remote_dst ? add_run(c, s, dst, n) : add_run(c, dst, s, n);
    return;
  }
  for (index i = 0; i < op.count[k]; ++i) {
    const std::byte* s = src + i * op.src_stride[k];
    std::byte* t = dst + i * op.dst_stride[k];
    if (!inner)
      add_runs(c, op, d + 1, s, t, remote_dst);
    else if (remote_dst)
      add_run(c, const_cast<std::byte*>(s), t, op.elem);
    else
      add_run(c, t, const_cast<std::byte*>(s), op.elem);
  }
}

}  // namespace

cross_copy make_cross_copy(const std::vector<copy_op>& fused, bool remote_dst, long long pid,
                           int peer) {
  cross_copy c;
  c.pid = pid;
  c.peer = peer;
  for (const copy_op& op : fused)
    if (op.ndims > 0) add_runs(c, op, 0, op.src, op.dst, remote_dst);
  return c;
}

void run_cross_copy(const cross_copy& c, bool write, int me) {
  for (std::size_t at = 0; at < c.local.size(); at += max_pairs) {
    const std::size_t n = std::min(max_pairs, c.local.size() - at);
    std::size_t want = 0;
    for (std::size_t k = at; k < at + n; ++k) want += c.local[k].iov_len;
    ssize_t got = 0;
    do {
      got = write ? process_vm_writev(pid_t(c.pid), &c.local[at], n, &c.remote[at], n, 0)
                  : process_vm_readv(pid_t(c.pid), &c.local[at], n, &c.remote[at], n, 0);
    } while (got < 0 && errno == EINTR);
    if (got < 0)
      throw error(fmt::format("rank {}: {} rank {}'s memory failed: {} (cross-memory attach)", me,
                              write ? "writing into" : "reading", c.peer, std::strerror(errno)));
    if (std::size_t(got) != want)
      throw error(
          fmt::format("rank {}: {} rank {}'s memory moved {} of {} bytes (cross-memory attach)", me,
                      write ? "writing into" : "reading", c.peer, got, want));
  }
}

std::string cross_memory_probe(long long pid, const void* addr) {
  if (testing::deny_cross_memory) return "process_vm_readv: Operation not permitted (test)";
  unsigned char scratch = 0;
  iovec here{&scratch, 1};
  iovec there{const_cast<void*>(addr), 1};
  ssize_t got = 0;
  do {
    got = process_vm_readv(pid_t(pid), &here, 1, &there, 1, 0);
  } while (got < 0 && errno == EINTR);
  if (got == 1) return {};
  return fmt::format("process_vm_readv: {}", got < 0 ? std::strerror(errno) : "nothing read");
}

}  // namespace halox::detail
