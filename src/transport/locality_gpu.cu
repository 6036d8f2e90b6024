// The locality decision's GPU side (see transport/locality.hpp): which GPU this process
// uses. Alone in its file so that anything that decides locality (exchanges, chains) can link it
// without the transports.
#include <cuda_runtime.h>

#include <string>

#include "gpu/check.hpp"
#include "transport/locality.hpp"

namespace halox::detail {

std::string current_gpu_bus_id(int rank) {
  int dev = 0;
  char bus[32] = {};
  gpu::check(cudaGetDevice(&dev), "cudaGetDevice", rank);
  gpu::check(cudaDeviceGetPCIBusId(bus, sizeof bus, dev), "cudaDeviceGetPCIBusId", rank);
  return bus;
}

gpu_access gpu_reaches(const std::string& bus, int rank) {
  int dev = 0, other = -1, can = 0;
  gpu::check(cudaGetDevice(&dev), "cudaGetDevice", rank);
  // Unchecked on purpose: a GPU this process cannot see or reach is an answer (no), not an error.
  if (cudaDeviceGetByPCIBusId(&other, bus.c_str()) != cudaSuccess) {
    (void)cudaGetLastError();  // not visible to this process
    return gpu_access::not_visible;
  }
  const bool peer = cudaDeviceCanAccessPeer(&can, dev, other) == cudaSuccess && can != 0;
  return peer ? gpu_access::peer : gpu_access::no_peer_access;
}

}  // namespace halox::detail
