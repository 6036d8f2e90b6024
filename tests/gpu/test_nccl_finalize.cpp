// GPU + NCCL, a program of its own (MPI_Finalize is part of the test): the NCCL communicator
// outlives the exchange objects that use it, a later exchange object over the same ranks reuses
// it, and MPI_Finalize releases it. Each exchange's halos are checked against the global index
// of the cell they copy. Skips (exit 77) without a GPU, and when this node has more ranks than
// GPUs (NCCL refuses two ranks of one communicator on one GPU).
#include <cuda_runtime.h>
#include <mpi.h>

#include <boost/mpi/communicator.hpp>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <halox/halox.hpp>

#include "transport/nccl_comm.hpp"

namespace {

using halox::detail::nccl_comm;

int failures = 0;

void expect(bool ok, const char* what, int rank) {
  if (ok) return;
  std::printf("rank %d: FAILED: %s\n", rank, what);
  ++failures;
}

void cuda(cudaError_t rc, int rank) {
  if (rc == cudaSuccess) return;
  std::printf("rank %d: CUDA error: %s\n", rank, cudaGetErrorString(rc));
  std::exit(1);
}

// Before MPI_Init: skip without a GPU or with more ranks on this node than GPUs; otherwise pick
// device node-local rank % GPU count.
void skip_or_pick_device() {
  const int gpus = halox::detail::device_count();
  if (gpus == 0 || !halox::detail::nccl_available()) {
    std::printf("SKIP: %s\n",
                gpus == 0 ? "no CUDA device" : halox::detail::nccl_unavailable_reason().c_str());
    std::exit(77);
  }
  const char* size = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const char* rank = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  if (size == nullptr) size = std::getenv("MPI_LOCALNRANKS");
  if (rank == nullptr) rank = std::getenv("MPI_LOCALRANKID");
  if ((size != nullptr ? std::atoi(size) : 1) > gpus) {
    std::printf("SKIP: more ranks on this node than GPUs: NCCL needs a GPU per rank\n");
    std::exit(77);
  }
  cuda(cudaSetDevice(rank != nullptr ? std::atoi(rank) % gpus : 0), -1);
}

// One exchange object over NCCL on a periodic 1-D domain of 16 cells per rank: owned cells hold
// their global index; after one exchange each halo cell must hold its periodic image's index.
void exchange_once(const boost::mpi::communicator& world) {
  const int me = world.rank();
  const long global = 16L * world.size();
  const auto st = halox::stencil<1>::star(1);
  const halox::cartesian<1> dom(world, {global}, halox::periodic<1>::all());
  auto f = dom.make_field<double>(st, halox::device);
  halox::exchange_options o;
  o.device_staging = halox::staging::nccl;
  auto ex = halox::make_exchange(dom, st, o, f);
  const auto all = f.allocated_box();
  const auto own = f.owned_box();
  const long lo = all.lo[0], len = all.hi[0] - all.lo[0];
  std::vector<double> h(std::size_t(len), -1.0);
  for (long i = own.lo[0]; i < own.hi[0]; ++i) h[std::size_t(i - lo)] = double(i);
  cuda(cudaMemcpy(f.data(), h.data(), h.size() * sizeof(double), cudaMemcpyHostToDevice), me);
  ex.exchange();
  cuda(cudaMemcpy(h.data(), f.data(), h.size() * sizeof(double), cudaMemcpyDeviceToHost), me);
  expect(h.front() == double((own.lo[0] - 1 + global) % global), "low halo", me);
  expect(h.back() == double(own.hi[0] % global), "high halo", me);
}

}  // namespace

int main(int argc, char** argv) {
  skip_or_pick_device();
  if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 1;
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  try {
    const boost::mpi::communicator world;
    exchange_once(world);
    expect(nccl_comm::live_count() == 1, "the communicator outlives its exchange object", me);
    const long made = nccl_comm::created_count();
    expect(made == 1, "one communicator made", me);
    exchange_once(world);
    expect(nccl_comm::created_count() == made, "a later exchange object reuses it", me);
  } catch (const std::exception& e) {
    std::printf("rank %d: FAILED: %s\n", me, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (MPI_Finalize() != MPI_SUCCESS) return 1;
  expect(nccl_comm::live_count() == 0, "MPI_Finalize releases it", me);
  if (failures == 0) std::printf("rank %d: passed\n", me);
  return failures == 0 ? 0 : 1;
}
