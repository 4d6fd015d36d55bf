// NCCL all-reduce across every visible GPU from one process, with NCCL loaded at run time
// (dlopen), so neither suanli nor this plugin needs NCCL to build or to start.
// Reported as bus bandwidth in the nccl-tests convention: busbw = algbw x 2(n-1)/n.
#include <dlfcn.h>

#include <chrono>
#include <memory>
#include <vector>

#include "bench/cuda/common.cuh"

namespace sl {

namespace {

// Minimal declarations from nccl.h (stable C ABI since NCCL 2.0).
using ncclComm_t = struct ncclComm*;
using ncclResult_t = int;
constexpr int kNcclSuccess = 0;
constexpr int kNcclFloat32 = 7;
constexpr int kNcclSum = 0;
constexpr int kVerifySamples = 1024;

struct Nccl {
  void* lib = nullptr;
  ncclResult_t (*comm_init_all)(ncclComm_t*, int, const int*) = nullptr;
  ncclResult_t (*all_reduce)(const void*, void*, size_t, int, int, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*group_start)() = nullptr;
  ncclResult_t (*group_end)() = nullptr;
  ncclResult_t (*comm_destroy)(ncclComm_t) = nullptr;
  const char* (*error_string)(ncclResult_t) = nullptr;
  bool Load(char* why, int why_len) {
    for (const char* name : {"libnccl.so.2", "libnccl.so"}) {
      lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (lib) break;
    }
    if (!lib) {
      std::snprintf(why, why_len, "NCCL not found (libnccl.so.2): %s", dlerror());
      return false;
    }
    comm_init_all = reinterpret_cast<decltype(comm_init_all)>(dlsym(lib, "ncclCommInitAll"));
    all_reduce = reinterpret_cast<decltype(all_reduce)>(dlsym(lib, "ncclAllReduce"));
    group_start = reinterpret_cast<decltype(group_start)>(dlsym(lib, "ncclGroupStart"));
    group_end = reinterpret_cast<decltype(group_end)>(dlsym(lib, "ncclGroupEnd"));
    comm_destroy = reinterpret_cast<decltype(comm_destroy)>(dlsym(lib, "ncclCommDestroy"));
    error_string = reinterpret_cast<decltype(error_string)>(dlsym(lib, "ncclGetErrorString"));
    if (!comm_init_all || !all_reduce || !group_start || !group_end || !comm_destroy || !error_string) {
      std::snprintf(why, why_len, "the NCCL library lacks a required symbol");
      return false;
    }
    return true;
  }
};

__global__ void FillConstant(float* p, uint64_t n, float v) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) p[i] = v;
}

}  // namespace

void RunAllReduce(const SlRequest* q, SlResult* out) {
  int n = 0;
  SL_CUDA(cudaGetDeviceCount(&n));
  if (n < 2) return SetStatus(out, SL_UNSUPPORTED, "needs two or more GPUs");
  Nccl nccl;
  char why[256] = {};
  if (!nccl.Load(why, sizeof why)) return SetStatus(out, SL_UNSUPPORTED, "%s", why);
  const uint64_t count = uint64_t(q->bytes) / sizeof(float);
  if (count == 0) return SetStatus(out, SL_ERROR, "all-reduce size is zero");
  std::vector<int> devs(n);
  for (int i = 0; i < n; ++i) devs[i] = i;
  std::vector<ncclComm_t> comms(n, nullptr);
  ncclResult_t r = nccl.comm_init_all(comms.data(), n, devs.data());
  if (r != kNcclSuccess) return SetStatus(out, SL_ERROR, "ncclCommInitAll: %s", nccl.error_string(r));
  struct Comms {
    Nccl* nccl;
    std::vector<ncclComm_t>* c;
    ~Comms() {
      for (auto x : *c)
        if (x) nccl->comm_destroy(x);
    }
  } guard{&nccl, &comms};
  std::vector<std::unique_ptr<DeviceBuffer>> send(n), recv(n);
  std::vector<std::unique_ptr<Stream>> streams(n);
  for (int i = 0; i < n; ++i) {
    SL_CUDA(cudaSetDevice(i));
    send[i] = std::make_unique<DeviceBuffer>();
    recv[i] = std::make_unique<DeviceBuffer>();
    streams[i] = std::make_unique<Stream>();
    SL_CUDA(streams[i]->Create());
    SL_CUDA(send[i]->Alloc(count * sizeof(float)));
    SL_CUDA(recv[i]->Alloc(count * sizeof(float)));
    // Rank i contributes i + 1 everywhere: the sum n(n+1)/2 is exact in FP32.
    FillConstant<<<1024, 256, 0, streams[i]->get()>>>(send[i]->get<float>(), count, float(i + 1));
    SL_CUDA(cudaGetLastError());
    SL_CUDA(cudaMemsetAsync(recv[i]->get(), 0, count * sizeof(float), streams[i]->get()));
  }
  auto once = [&]() -> bool {
    nccl.group_start();
    for (int i = 0; i < n; ++i) {
      r = nccl.all_reduce(send[i]->get(), recv[i]->get(), count, kNcclFloat32, kNcclSum, comms[i], streams[i]->get());
      if (r != kNcclSuccess) break;
    }
    const ncclResult_t g = nccl.group_end();
    if (r == kNcclSuccess) r = g;
    if (r != kNcclSuccess) return false;
    for (int i = 0; i < n; ++i)
      if (cudaSetDevice(i) != cudaSuccess || cudaStreamSynchronize(streams[i]->get()) != cudaSuccess) return false;
    return true;
  };
  // The operation spans all GPUs, so it is timed on the host around launch + synchronisation of
  // every stream (as nccl-tests does), after warm-up.
  for (int i = 0; i < q->warmup; ++i)
    if (!once()) return SetStatus(out, SL_ERROR, "ncclAllReduce: %s", nccl.error_string(r));
  const int reps = q->reps < 1 ? 1 : (q->reps > SL_MAX_SAMPLES ? SL_MAX_SAMPLES : q->reps);
  const auto begin = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    if (!once()) return SetStatus(out, SL_ERROR, "ncclAllReduce: %s", nccl.error_string(r));
    out->seconds[out->sample_count++] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (q->time_budget_s > 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count() > q->time_budget_s)
      break;
  }
  out->work_per_rep = double(count * sizeof(float)) * 2.0 * (n - 1) / n;
  const float expected = float(n) * float(n + 1) / 2;
  const std::vector<uint64_t> pos = SamplePositions(count, kVerifySamples);
  for (int i = 0; i < n; ++i) {
    SL_CUDA(cudaSetDevice(i));
    for (uint64_t p : pos) {
      float v = 0;
      SL_CUDA(cudaMemcpy(&v, recv[i]->get<float>() + p, sizeof v, cudaMemcpyDeviceToHost));
      ++out->checked;
      if (!std::isfinite(v)) ++out->nans;
      else if (v != expected) ++out->mismatches;
    }
  }
  SetCheck(out, "%d sampled values on each of %d GPUs vs n(n+1)/2", kVerifySamples, n);
  out->status = SL_OK;
}

}  // namespace sl
