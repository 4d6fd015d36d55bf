// Shared helpers of the CUDA plugin: RAII for device resources, error reporting into SlResult,
// the event-timed repetition loop, deterministic test data and sampled verification.
// Everything here runs in the benchmark child process; nothing prints or exits.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench/cuda/plugin_abi.h"

namespace sl {

inline void SetStatus(SlResult* r, int status, const char* fmt, ...) {
  r->status = status;
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(r->message, sizeof r->message, fmt, ap);
  va_end(ap);
}

inline void SetCheck(SlResult* r, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(r->check_method, sizeof r->check_method, fmt, ap);
  va_end(ap);
}

// Reports a CUDA error into `out` and returns from the (void) calling function. Resources are
// owned by RAII objects, so an early return frees them.
#define SL_CUDA(call)                                                                                    \
  do {                                                                                                   \
    cudaError_t e_ = (call);                                                                             \
    if (e_ != cudaSuccess) {                                                                             \
      ::sl::SetStatus(out, SL_ERROR, "%s failed: %s", #call, cudaGetErrorString(e_));                    \
      return;                                                                                            \
    }                                                                                                    \
  } while (0)

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() {
    if (p_) cudaFree(p_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  cudaError_t Alloc(size_t bytes) {
    bytes_ = bytes;
    return cudaMalloc(&p_, bytes);
  }
  template <typename T = void>
  T* get() const {
    return static_cast<T*>(p_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

class HostBuffer {
 public:
  HostBuffer() = default;
  ~HostBuffer() {
    if (p_ && pinned_) cudaFreeHost(p_);
    if (p_ && !pinned_) std::free(p_);
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  cudaError_t Alloc(size_t bytes, bool pinned) {
    pinned_ = pinned;
    if (pinned) return cudaMallocHost(&p_, bytes);
    p_ = std::malloc(bytes);
    return p_ ? cudaSuccess : cudaErrorMemoryAllocation;
  }
  template <typename T = void>
  T* get() const {
    return static_cast<T*>(p_);
  }

 private:
  void* p_ = nullptr;
  bool pinned_ = false;
};

class Stream {
 public:
  ~Stream() {
    if (s_) cudaStreamDestroy(s_);
  }
  cudaError_t Create() { return cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking); }
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  ~Event() {
    if (e_) cudaEventDestroy(e_);
  }
  cudaError_t Create() { return cudaEventCreate(&e_); }
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

// Deterministic test data: a hash of the element index, the same on host and device.
__host__ __device__ inline uint32_t Hash32(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return static_cast<uint32_t>((x ^ (x >> 31)) >> 16);
}
// Small integers in {-1, 0, 1}: exact in every format down to FP8 e4m3 and INT8, and every
// dot product of length k < 2^24 is exact in FP32 accumulation (docs/bench-method.md §4).
__host__ __device__ inline int SmallInt(uint64_t index, uint32_t seed) {
  return static_cast<int>(Hash32(index * 0x100000001b3ULL + seed) % 3u) - 1;
}
// The 32-bit word stored at position i of a bandwidth-test buffer with this seed. One 32-bit
// multiply (Knuth's multiplicative hash) so that generating it never limits a write kernel;
// distinct for the 2^32 word positions of a buffer, so a misplaced word is detected.
__host__ __device__ inline uint32_t Pattern(uint64_t i, uint32_t seed) {
  return static_cast<uint32_t>(i) * 2654435761u + seed;
}

// Positions to verify: `count` indexes spread over [0, n), deterministic.
inline std::vector<uint64_t> SamplePositions(uint64_t n, int count) {
  std::vector<uint64_t> v;
  if (n == 0) return v;
  v.push_back(0);
  v.push_back(n - 1);
  for (int i = 2; i < count; ++i) v.push_back((uint64_t(Hash32(i)) * 65537ULL + Hash32(i + 7)) % n);
  return v;
}

// Times `launch` (which enqueues one repetition on `stream` and returns a launch error) with a
// pair of events per repetition after `warmup` untimed repetitions. Returns false with `out`
// filled on error. Stops early once the time budget is spent (the watchdog kills later).
template <typename F>
bool TimeReps(const SlRequest* q, SlResult* out, cudaStream_t stream, F&& launch) {
  Event start, stop;
  cudaError_t e = start.Create();
  if (e == cudaSuccess) e = stop.Create();
  for (int i = 0; e == cudaSuccess && i < q->warmup; ++i) e = launch();
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  const auto t0 = std::chrono::steady_clock::now();
  const int reps = q->reps < 1 ? 1 : (q->reps > SL_MAX_SAMPLES ? SL_MAX_SAMPLES : q->reps);
  out->sample_count = 0;
  for (int i = 0; e == cudaSuccess && i < reps; ++i) {
    e = cudaEventRecord(start.get(), stream);
    if (e == cudaSuccess) e = launch();
    if (e == cudaSuccess) e = cudaEventRecord(stop.get(), stream);
    if (e == cudaSuccess) e = cudaEventSynchronize(stop.get());
    float ms = 0;
    if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, start.get(), stop.get());
    if (e == cudaSuccess) out->seconds[out->sample_count++] = ms * 1e-3;
    const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (q->time_budget_s > 0 && spent > q->time_budget_s) break;
  }
  if (e != cudaSuccess) {
    SetStatus(out, SL_ERROR, "timed repetition failed: %s", cudaGetErrorString(e));
    return false;
  }
  return true;
}

// Ops implemented in the separate translation units.
void RunMemory(const SlRequest* q, SlResult* out);
void RunCopies(const SlRequest* q, SlResult* out);
void RunLaunchLatency(const SlRequest* q, SlResult* out);
void RunGemm(const SlRequest* q, SlResult* out);
void RunAllReduce(const SlRequest* q, SlResult* out);

}  // namespace sl
