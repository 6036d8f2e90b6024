// ktrace: a CUPTI kernel tracer for machines without Nsight Systems.
//
// Load it into any CUDA program with CUDA_INJECTION64_PATH=/path/libhalox_ktrace.so; it records
// every kernel, memcpy and memset (start and end on the GPU's clock, normalised by CUPTI to one
// host time base, so records of several processes on one host line up), and at exit writes one
// text file per process: KTRACE_OUT (default ".") / ktrace-<MPI rank or pid>.txt, one line per
// record: "start_ns end_ns device stream kind name". tools/ktrace/summarise.py reads them.
// With KTRACE_API=1 it also records the host's CUDA runtime and driver calls (kind A, device =
// thread id modulo 2^32, stream 0, name "call#correlation"), and kernels carry "#correlation"
// after their name, so that a kernel's start can be compared with the call that launched it.
//
// Build (CUDA toolkit with CUPTI), one command:
//   g++ -std=c++17 -O2 -fPIC -shared -I$CUDA/include tools/ktrace/ktrace.cpp
//       -L$CUDA/lib64 -lcupti -o libhalox_ktrace.so
// Run, one command: KTRACE_OUT=DIR CUDA_INJECTION64_PATH=$PWD/libhalox_ktrace.so
//   mpirun -np 2 -x KTRACE_OUT -x CUDA_INJECTION64_PATH PROGRAM ...
// then tools/ktrace/summarise.py DIR.
#include <cupti.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

struct record {
  unsigned long long start, end;
  unsigned device, stream;
  char kind;  // K kernel, C memcpy, S memset, A API call
  std::string name;
};

std::mutex mutex;
std::vector<record> records;
std::atomic<bool> enabled{false};
bool api = false;  // KTRACE_API=1: host calls too
constexpr size_t buffer_bytes = 8u << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, buffer_bytes));
  *size = buffer_bytes;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* a = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  while (cuptiActivityGetNextRecord(buffer, valid, &a) == CUPTI_SUCCESS) {
    switch (a->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL: {
        auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(a);
        records.push_back({k->start, k->end, k->deviceId, k->streamId, 'K',
                           std::string(k->name != nullptr ? k->name : "?") +
                               (api ? "#" + std::to_string(k->correlationId) : "")});
        break;
      }
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER: {
        auto* c = reinterpret_cast<CUpti_ActivityAPI*>(a);
        const char* name = nullptr;
        const auto domain = a->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? CUPTI_CB_DOMAIN_RUNTIME_API
                                                                   : CUPTI_CB_DOMAIN_DRIVER_API;
        if (cuptiGetCallbackName(domain, c->cbid, &name) != CUPTI_SUCCESS) name = nullptr;  // "?"
        records.push_back(
            {c->start, c->end, unsigned(c->threadId), 0, 'A',
             std::string(name != nullptr ? name : "?") + "#" + std::to_string(c->correlationId)});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        auto* m = reinterpret_cast<CUpti_ActivityMemcpy6*>(a);
        records.push_back(
            {m->start, m->end, m->deviceId, m->streamId, 'C',
             "memcpy" + std::to_string(int(m->copyKind)) + ":" + std::to_string(m->bytes)});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        auto* m = reinterpret_cast<CUpti_ActivityMemset4*>(a);
        records.push_back({m->start, m->end, m->deviceId, m->streamId, 'S',
                           "memset:" + std::to_string(m->bytes)});
        break;
      }
      default:
        break;
    }
  }
  std::free(buffer);
}

void write_out() {
  if (!enabled.exchange(false)) return;
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  const char* dir = std::getenv("KTRACE_OUT");
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  std::string path = std::string(dir != nullptr ? dir : ".") + "/ktrace-" +
                     (rank != nullptr ? std::string(rank) : std::to_string(getpid())) + ".txt";
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "ktrace: cannot write %s\n", path.c_str());
    return;
  }
  std::lock_guard<std::mutex> lock(mutex);
  for (const auto& r : records)
    std::fprintf(f, "%llu %llu %u %u %c %s\n", r.start, r.end, r.device, r.stream, r.kind,
                 r.name.c_str());
  std::fclose(f);
  std::fprintf(stderr, "ktrace: %zu records in %s\n", records.size(), path.c_str());
}

bool ok(CUptiResult rc, const char* what) {
  if (rc == CUPTI_SUCCESS) return true;
  const char* s = nullptr;
  cuptiGetResultString(rc, &s);
  std::fprintf(stderr, "ktrace: %s failed: %s\n", what, s != nullptr ? s : "?");
  return false;
}

}  // namespace

extern "C" int InitializeInjection(void) {
  if (enabled.load()) return 1;
  if (!ok(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed),
          "cuptiActivityRegisterCallbacks"))
    return 0;
  bool all = ok(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "enable kernels");
  all = ok(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), "enable memcpy") && all;
  all = ok(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET), "enable memset") && all;
  if (const char* v = std::getenv("KTRACE_API"); v != nullptr && std::string(v) == "1") {
    api = true;
    all = ok(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME), "enable runtime calls") && all;
    all = ok(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER), "enable driver calls") && all;
  }
  enabled.store(true);
  std::atexit(write_out);
  return all ? 1 : 0;
}
