// See gpu_runtime.hpp.
#include "gpu_runtime.hpp"

#include <cuda_runtime.h>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace example_gpu {

void check(int rc, const char* what) {
  const auto e = static_cast<cudaError_t>(rc);
  if (e != cudaSuccess)
    throw std::runtime_error(std::string(what) + " failed: " + cudaGetErrorName(e) + " (" +
                             cudaGetErrorString(e) + ")");
}

int device_count(std::string& why) {
  int n = 0;
  const cudaError_t rc = cudaGetDeviceCount(&n);
  if (rc != cudaSuccess) {
    why = std::string(cudaGetErrorName(rc)) + ": " + cudaGetErrorString(rc);
    (void)cudaGetLastError();  // clear the sticky error
    return 0;
  }
  if (n == 0) why = "no device";
  return n;
}

void select_device(int d) {
  check(cudaSetDevice(d), "cudaSetDevice");
}

CUstream_st* create_stream() {
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  return s;
}

CUstream_st* create_priority_stream() {
  int least = 0, greatest = 0;
  check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, greatest),
        "cudaStreamCreateWithPriority");
  return s;
}

CUevent_st* create_event() {
  cudaEvent_t e = nullptr;
  check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  return e;
}

void destroy_event(CUevent_st* e) {
  check(cudaEventDestroy(e), "cudaEventDestroy");
}

void follow(CUstream_st* waiter, CUstream_st* after, CUevent_st* e) {
  check(cudaEventRecord(e, after), "cudaEventRecord");
  check(cudaStreamWaitEvent(waiter, e, 0), "cudaStreamWaitEvent");
}

void destroy_stream(CUstream_st* s) {
  check(cudaStreamDestroy(s), "cudaStreamDestroy");
}

void synchronize(CUstream_st* s) {
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
}

void copy_to_device(void* dst, const void* src, std::size_t bytes) {
  check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy (host to device)");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize (after the upload)");
}

void begin_capture(CUstream_st* s) {
  check(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture");
}

CUgraphExec_st* end_capture(CUstream_st* s) {
  cudaGraph_t graph = nullptr;
  check(cudaStreamEndCapture(s, &graph), "cudaStreamEndCapture");
  cudaGraphExec_t exec = nullptr;
  // halox's kernels keep the greatest priority of the stream they were captured on (a kernel
  // node's priority is copied from its stream's): without this flag every node would run at the
  // priority of the stream the graph is launched into, and halox's pack and NCCL's kernel would
  // wait behind the interior update for SMs.
  const cudaError_t rc =
      cudaGraphInstantiate(&exec, graph, cudaGraphInstantiateFlagUseNodePriority);
  (void)cudaGraphDestroy(graph);
  check(rc, "cudaGraphInstantiate");
  check(cudaGraphUpload(exec, s), "cudaGraphUpload");
  return exec;
}

void launch_graph(CUgraphExec_st* g, CUstream_st* s) {
  check(cudaGraphLaunch(g, s), "cudaGraphLaunch");
}

void destroy_graph(CUgraphExec_st* g) {
  check(cudaGraphExecDestroy(g), "cudaGraphExecDestroy");
}

void copy_to_host(void* dst, const void* src, std::size_t bytes) {
  check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy (device to host)");
}

void* device_alloc(std::size_t bytes) {
  void* p = nullptr;
  check(cudaMalloc(&p, bytes), "cudaMalloc");
  return p;
}

void device_free(void* p) noexcept {
  if (const cudaError_t rc = cudaFree(p); rc != cudaSuccess)
    std::fprintf(stderr, "cudaFree failed: %s\n", cudaGetErrorString(rc));
}

}  // namespace example_gpu
