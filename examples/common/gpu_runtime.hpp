// The few CUDA runtime calls the GPU mini-apps need, shared by them. C++17 with plain types and
// no CUDA headers: the apps' .cpp files are C++20 and include halox, their kernels (.cu) are
// C++17 (CMake 3.25 has no C++20 flag for nvcc), so both sides meet through this header.
//
// Every function throws std::runtime_error naming the CUDA call and its error when it fails.
#pragma once

#include <cstddef>
#include <string>

struct CUstream_st;     // CUDA's stream type (cudaStream_t is CUstream_st*), as CUDA declares it
struct CUgraphExec_st;  // an instantiated CUDA graph (cudaGraphExec_t), as CUDA declares it
struct CUevent_st;      // CUDA's event type (cudaEvent_t), as CUDA declares it

namespace example_gpu {

/// CUDA devices this process can use; 0, with the reason in `why`, where there are none or the
/// driver cannot be loaded (no exception).
int device_count(std::string& why);
/// Makes device `d` current for this process's later CUDA work (halox's included).
void select_device(int d);

CUstream_st* create_stream();  ///< a non-blocking stream
/// A non-blocking stream of the device's greatest priority: its kernels get SMs before those of
/// create_stream()'s streams (as halox's own stream does).
CUstream_st* create_priority_stream();
void destroy_stream(CUstream_st* s);
CUevent_st* create_event();  ///< an event without timing, for ordering streams
void destroy_event(CUevent_st* e);
/// Work enqueued on `waiter` from now on runs after what is enqueued on `after` so far (`e` is
/// recorded on `after`); under capture this forks or joins the graph's branches.
void follow(CUstream_st* waiter, CUstream_st* after, CUevent_st* e);
void synchronize(CUstream_st* s);
/// Uploads, then waits for the device: the copy from pageable memory may still be in flight
/// when cudaMemcpy returns, and the apps' kernels run on non-blocking streams.
void copy_to_device(void* dst, const void* src, std::size_t bytes);
void copy_to_host(void* dst, const void* src, std::size_t bytes);
/// Device memory of `bytes` bytes; device_free() releases it (an error there is printed: it
/// runs in destructors).
void* device_alloc(std::size_t bytes);
void device_free(void* p) noexcept;

/// --graph: everything enqueued on `s` between begin_capture and end_capture becomes one CUDA
/// graph (halox's scheduled exchanges included), instantiated and uploaded by end_capture;
/// launch_graph replays it on `s`.
void begin_capture(CUstream_st* s);
CUgraphExec_st* end_capture(CUstream_st* s);
void launch_graph(CUgraphExec_st* g, CUstream_st* s);
void destroy_graph(CUgraphExec_st* g);

/// Throws std::runtime_error "`what` failed: NAME (text)" unless `rc` is 0 (cudaSuccess); for
/// the kernels' launch checks (`check(cudaGetLastError(), ...)`).
void check(int rc, const char* what);

}  // namespace example_gpu
