#include "halox/field/memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <new>

#include "halox/core/error.hpp"

namespace halox::detail {

#ifndef HALOX_ENABLE_CUDA
bool cuda_enabled() noexcept {
  return false;
}
int device_count() noexcept {
  return 0;
}
std::string memory_problem(const void*, std::size_t, memory_space) {
  return {};  // device fields are refused where they are used: no CUDA in this build
}
#endif

std::shared_ptr<std::byte> allocate_host(std::size_t bytes) {
  const std::size_t n = bytes == 0 ? 64 : bytes;
  auto* p = static_cast<std::byte*>(::operator new (n, std::align_val_t{64}, std::nothrow));
  require(p != nullptr, "host allocation of {} bytes failed", bytes);
  std::memset(p, 0, n);
  return std::shared_ptr<std::byte>(
      p, [](std::byte* q) { ::operator delete (q, std::align_val_t{64}); });
}

namespace {

// Every live allocate_shareable() block, by its first byte.
struct shareable_registry {
  std::mutex lock;
  std::map<const std::byte*, shareable_block> blocks;
};
shareable_registry& registry() {
  static auto* r = new shareable_registry();  // (never destroyed: fields may outlive statics)
  return *r;
}

}  // namespace

std::shared_ptr<std::byte> allocate_shareable(std::size_t bytes) {
  const auto page = std::size_t(sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096);
  const std::size_t n = (std::max<std::size_t>(bytes, 1) + page - 1) / page * page;
  const int fd = memfd_create("halox-field", MFD_CLOEXEC);
  if (fd < 0) return allocate_host(bytes);
  void* p = ftruncate(fd, off_t(n)) == 0
                ? mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                : MAP_FAILED;
  if (p == MAP_FAILED) {
    close(fd);
    return allocate_host(bytes);
  }
  (void)madvise(p, n, MADV_HUGEPAGE);       // where the system allows huge pages in shared memory
  auto* base = static_cast<std::byte*>(p);  // (a new memfd reads as zeros)
  {
    auto& r = registry();
    const std::lock_guard<std::mutex> hold(r.lock);
    r.blocks[base] = shareable_block{fd, base, n};
  }
  return std::shared_ptr<std::byte>(base, [fd, n](std::byte* q) {
    {
      auto& r = registry();
      const std::lock_guard<std::mutex> hold(r.lock);
      r.blocks.erase(q);
    }
    munmap(q, n);
    close(fd);
  });
}

bool find_shareable(const void* p, shareable_block& out) {
  const auto* b = static_cast<const std::byte*>(p);
  auto& r = registry();
  const std::lock_guard<std::mutex> hold(r.lock);
  auto it = r.blocks.upper_bound(b);
  if (it == r.blocks.begin()) return false;
  --it;
  if (b >= it->second.base + it->second.size) return false;
  out = it->second;
  return true;
}

#ifdef HALOX_ENABLE_CUDA
std::shared_ptr<std::byte> allocate_device(std::size_t bytes);  // src/field/device_memory.cu
#endif

std::shared_ptr<std::byte> allocate(memory_space space, std::size_t bytes) {
  if (space == memory_space::host) return allocate_host(bytes);
#ifdef HALOX_ENABLE_CUDA
  return allocate_device(bytes);
#else
  fail("device memory requested but this halox was built without CUDA (HALOX_ENABLE_CUDA=OFF)");
#endif
}

}  // namespace halox::detail

namespace halox {

namespace {
// The live allocate_node_shared() blocks, by first byte.
struct node_shared_blocks {
  std::mutex lock;
  std::map<void*, std::shared_ptr<std::byte>> live;
};
node_shared_blocks& node_shared() {
  static auto* b = new node_shared_blocks();  // (never destroyed: arrays may outlive statics)
  return *b;
}
}  // namespace

void* allocate_node_shared(std::size_t bytes) {
  std::shared_ptr<std::byte> mem = detail::allocate_shareable(bytes);
  void* p = mem.get();
  auto& b = node_shared();
  const std::lock_guard<std::mutex> hold(b.lock);
  b.live.emplace(p, std::move(mem));
  return p;
}

void free_node_shared(void* p) noexcept {
  if (p == nullptr) return;
  std::shared_ptr<std::byte> mem;  // released after the lock
  auto& b = node_shared();
  const std::lock_guard<std::mutex> hold(b.lock);
  auto it = b.live.find(p);
  if (it == b.live.end()) return;
  mem = std::move(it->second);
  b.live.erase(it);
}

}  // namespace halox
