// Node-local ranks and their GPUs (see transport/locality.hpp).
#include "transport/locality.hpp"

#include <cstring>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "halox/core/error.hpp"
#include "mpi/check.hpp"

namespace halox::detail {

namespace {
constexpr std::string_view part = "node locality";  // for MPI errors

struct entry {
  int rank;
  char gpu[32];  // PCI bus id, NUL-terminated; empty without a GPU
};
}  // namespace

locality locality::discover(MPI_Comm comm, int node_size, const std::string& gpu) {
  locality l;
  l.node_size_ = node_size;
  mpi::check(MPI_Comm_rank(comm, &l.rank_), "MPI_Comm_rank", -1, part);
  MPI_Comm node = MPI_COMM_NULL;
  mpi::check(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, l.rank_, MPI_INFO_NULL, &node),
             "MPI_Comm_split_type", l.rank_, part);
  entry mine{};
  mine.rank = l.rank_;
  std::strncpy(mine.gpu, gpu.c_str(), sizeof mine.gpu - 1);
  int n = 0;
  if (!gpu.empty()) {  // does any other rank of this real node drive the same GPU?
    mpi::check(MPI_Comm_size(node, &n), "MPI_Comm_size", l.rank_, part);
    std::vector<entry> all(static_cast<std::size_t>(n));
    mpi::check(MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, node),
               "MPI_Allgather", l.rank_, part);
    int shared = 0, any = 0;
    for (const auto& e : all)
      shared |= e.rank != l.rank_ && std::strncmp(e.gpu, mine.gpu, sizeof mine.gpu) == 0;
    mpi::check(MPI_Allreduce(&shared, &any, 1, MPI_INT, MPI_LOR, comm), "MPI_Allreduce", l.rank_,
               part);
    l.gpu_shared_ = any != 0;
  }
  if (node_size > 0) {  // blocks of node_size consecutive ranks of `comm`, inside the real node
    MPI_Comm block = MPI_COMM_NULL;
    mpi::check(MPI_Comm_split(node, l.rank_ / node_size, l.rank_, &block), "MPI_Comm_split",
               l.rank_, part);
    mpi::check(MPI_Comm_free(&node), "MPI_Comm_free", l.rank_, part);
    node = block;
  }
  mpi::check(MPI_Comm_size(node, &n), "MPI_Comm_size", l.rank_, part);
  std::vector<entry> all(static_cast<std::size_t>(n));
  mpi::check(MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, node),
             "MPI_Allgather", l.rank_, part);
  mpi::check(MPI_Comm_free(&node), "MPI_Comm_free", l.rank_, part);
  for (const auto& e : all) l.node_[e.rank] = std::string(e.gpu, strnlen(e.gpu, sizeof e.gpu));
  return l;
}

std::string locality::describe() const {
  if (node_size_ > 0)
    return fmt::format("virtual node of {} rank(s) (node_size {})", node_.size(), node_size_);
  return fmt::format("node of {} rank(s)", node_.size());
}

}  // namespace halox::detail
