// The CUDA plugin: device discovery, device-memory bandwidth kernels, host/peer copies and
// launch latency. GEMMs are in gemm.cu, NCCL in nccl_loader.cu. See docs/bench-method.md.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cstring>
#include <functional>
#include <memory>

#include "bench/cuda/common.cuh"

namespace sl {

namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 4;           // independent 16-byte loads in flight per thread per iteration
constexpr int kVerifySamples = 4096; // sampled words compared against the expected pattern
constexpr int kLaunchesPerRep = 1000;
constexpr float kTriadScalar = 3.0f;
constexpr uint32_t kSeedRead = 1, kSeedWrite = 2, kSeedH2D = 3, kSeedD2H = 4, kSeedP2P = 5;

__global__ void FillPattern(uint32_t* p, uint64_t words, uint32_t seed) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < words; i += stride) p[i] = Pattern(i, seed);
}

__global__ void FillTriadInputs(float* b, float* c, uint64_t n) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    b[i] = float(i % 7);
    c[i] = float(i % 5);
  }
}

__device__ inline void XorInto(uint4& acc, const uint4& v) {
  acc.x ^= v.x;
  acc.y ^= v.y;
  acc.z ^= v.z;
  acc.w ^= v.w;
}

// Read: every 16-byte vector once (ld.global.cg: cached in L2 only), XOR-folded so the loads
// cannot be removed; one atomic per warp at the end.
__global__ void ReadKernel(const uint4* __restrict__ a, uint64_t n, unsigned* checksum) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  uint4 acc = make_uint4(0, 0, 0, 0);
  for (; i + (kUnroll - 1) * stride < n; i += kUnroll * stride) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = __ldcg(a + i + u * stride);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) XorInto(acc, v[u]);
  }
  for (; i < n; i += stride) XorInto(acc, __ldcg(a + i));
  unsigned x = acc.x ^ acc.y ^ acc.z ^ acc.w;
  for (int off = 16; off > 0; off >>= 1) x ^= __shfl_xor_sync(0xffffffffu, x, off);
  if ((threadIdx.x & 31) == 0) atomicXor(checksum, x);
}

__global__ void WriteKernel(uint4* __restrict__ a, uint64_t n, uint32_t seed) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const uint64_t w = 4 * i;
    __stcg(a + i, make_uint4(Pattern(w, seed), Pattern(w + 1, seed), Pattern(w + 2, seed), Pattern(w + 3, seed)));
  }
}

__global__ void CopyKernel(const uint4* __restrict__ a, uint4* __restrict__ b, uint64_t n) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + (kUnroll - 1) * stride < n; i += kUnroll * stride) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = __ldcg(a + i + u * stride);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) __stcg(b + i + u * stride, v[u]);
  }
  for (; i < n; i += stride) __stcg(b + i, __ldcg(a + i));
}

__global__ void TriadKernel(float4* __restrict__ a, const float4* __restrict__ b, const float4* __restrict__ c,
                            uint64_t n, float s) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + (kUnroll - 1) * stride < n; i += kUnroll * stride) {
    float4 x[kUnroll], y[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      x[u] = __ldcg(b + i + u * stride);
      y[u] = __ldcg(c + i + u * stride);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      __stcg(a + i + u * stride, make_float4(x[u].x + s * y[u].x, x[u].y + s * y[u].y, x[u].z + s * y[u].z,
                                             x[u].w + s * y[u].w));
  }
  for (; i < n; i += stride) {
    const float4 x = __ldcg(b + i), y = __ldcg(c + i);
    __stcg(a + i, make_float4(x.x + s * y.x, x.y + s * y.y, x.z + s * y.z, x.w + s * y.w));
  }
}

__global__ void GatherWords(const uint32_t* p, const uint64_t* idx, uint32_t* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = p[idx[i]];
}

__global__ void CountNonFinite(const float* p, uint64_t n, unsigned long long* count) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  unsigned long long bad = 0;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) bad += !isfinite(p[i]);
  for (int off = 16; off > 0; off >>= 1) bad += __shfl_xor_sync(0xffffffffu, bad, off);
  if ((threadIdx.x & 31) == 0 && bad) atomicAdd(count, bad);
}

__global__ void CountLaunch(unsigned long long* counter) {
  if (threadIdx.x == 0 && blockIdx.x == 0) atomicAdd(counter, 1ULL);
}

// A grid that fills the GPU: resident blocks per SM x SMs.
template <typename K>
int FullGrid(K kernel, int device) {
  int sms = 1, per_sm = 1;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0);
  return sms * (per_sm > 0 ? per_sm : 1);
}

// Gathers sampled 32-bit words of a device buffer (on the current device) to the host.
cudaError_t GatherSamples(const uint32_t* dev_words, uint64_t words, std::vector<uint64_t>* pos,
                          std::vector<uint32_t>* values) {
  *pos = SamplePositions(words, kVerifySamples);
  const int n = static_cast<int>(pos->size());
  values->assign(n, 0);
  DeviceBuffer d_idx, d_out;
  cudaError_t e = d_idx.Alloc(n * sizeof(uint64_t));
  if (e == cudaSuccess) e = d_out.Alloc(n * sizeof(uint32_t));
  if (e == cudaSuccess) e = cudaMemcpy(d_idx.get(), pos->data(), n * sizeof(uint64_t), cudaMemcpyHostToDevice);
  if (e == cudaSuccess) {
    GatherWords<<<(n + kThreads - 1) / kThreads, kThreads>>>(dev_words, d_idx.get<uint64_t>(), d_out.get<uint32_t>(), n);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) e = cudaMemcpy(values->data(), d_out.get(), n * sizeof(uint32_t), cudaMemcpyDeviceToHost);
  return e;
}

void CheckPattern(const std::vector<uint64_t>& pos, const std::vector<uint32_t>& got, uint32_t seed, SlResult* out) {
  for (size_t i = 0; i < pos.size(); ++i) {
    ++out->checked;
    if (got[i] != Pattern(pos[i], seed)) ++out->mismatches;
  }
}

}  // namespace

void RunMemory(const SlRequest* q, SlResult* out) {
  const int dev = q->device;
  SL_CUDA(cudaSetDevice(dev));
  const uint64_t bytes = uint64_t(q->bytes) / 16 * 16;
  if (bytes == 0) return SetStatus(out, SL_ERROR, "buffer size must be at least 16 bytes");
  const uint64_t nvec = bytes / 16, words = bytes / 4;
  Stream s;
  SL_CUDA(s.Create());
  DeviceBuffer a, b, c;
  DeviceBuffer checksum;
  SL_CUDA(a.Alloc(bytes));
  const bool two = q->op == SL_OP_MEM_COPY || q->op == SL_OP_MEMCPY_D2D || q->op == SL_OP_MEM_TRIAD;
  if (two) SL_CUDA(b.Alloc(bytes));
  if (q->op == SL_OP_MEM_TRIAD) SL_CUDA(c.Alloc(bytes));
  SL_CUDA(checksum.Alloc(sizeof(unsigned long long)));
  const int fill_grid = FullGrid(FillPattern, dev);
  if (q->op == SL_OP_MEM_TRIAD) {
    FillTriadInputs<<<fill_grid, kThreads, 0, s.get()>>>(b.get<float>(), c.get<float>(), words);
    SL_CUDA(cudaMemsetAsync(a.get(), 0, bytes, s.get()));
  } else if (q->op == SL_OP_MEM_WRITE) {
    SL_CUDA(cudaMemsetAsync(a.get(), 0, bytes, s.get()));
  } else {
    FillPattern<<<fill_grid, kThreads, 0, s.get()>>>(a.get<uint32_t>(), words, kSeedRead);
    if (two) SL_CUDA(cudaMemsetAsync(b.get(), 0, bytes, s.get()));
  }
  SL_CUDA(cudaGetLastError());
  SL_CUDA(cudaStreamSynchronize(s.get()));

  std::function<cudaError_t()> launch;
  switch (q->op) {
    case SL_OP_MEM_READ: {
      const int grid = FullGrid(ReadKernel, dev);
      launch = [&, grid] {
        ReadKernel<<<grid, kThreads, 0, s.get()>>>(a.get<uint4>(), nvec, checksum.get<unsigned>());
        return cudaGetLastError();
      };
      out->work_per_rep = double(bytes);
      break;
    }
    case SL_OP_MEM_WRITE: {
      const int grid = FullGrid(WriteKernel, dev);
      launch = [&, grid] {
        WriteKernel<<<grid, kThreads, 0, s.get()>>>(a.get<uint4>(), nvec, kSeedWrite);
        return cudaGetLastError();
      };
      out->work_per_rep = double(bytes);
      break;
    }
    case SL_OP_MEM_COPY: {
      const int grid = FullGrid(CopyKernel, dev);
      launch = [&, grid] {
        CopyKernel<<<grid, kThreads, 0, s.get()>>>(a.get<uint4>(), b.get<uint4>(), nvec);
        return cudaGetLastError();
      };
      out->work_per_rep = 2.0 * double(bytes);
      break;
    }
    case SL_OP_MEMCPY_D2D:
      launch = [&] { return cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice, s.get()); };
      out->work_per_rep = 2.0 * double(bytes);
      break;
    case SL_OP_MEM_TRIAD: {
      const int grid = FullGrid(TriadKernel, dev);
      launch = [&, grid] {
        TriadKernel<<<grid, kThreads, 0, s.get()>>>(a.get<float4>(), b.get<float4>(), c.get<float4>(), nvec,
                                                     kTriadScalar);
        return cudaGetLastError();
      };
      out->work_per_rep = 3.0 * double(bytes);
      break;
    }
    default:
      return SetStatus(out, SL_ERROR, "not a memory op: %d", q->op);
  }
  if (!TimeReps(q, out, s.get(), launch)) return;

  // ---- verification ----
  std::vector<uint64_t> pos;
  std::vector<uint32_t> got;
  if (q->op == SL_OP_MEM_READ) {
    SL_CUDA(cudaMemsetAsync(checksum.get(), 0, sizeof(unsigned), s.get()));
    SL_CUDA(launch());
    unsigned device_sum = 0;
    SL_CUDA(cudaMemcpyAsync(&device_sum, checksum.get(), sizeof device_sum, cudaMemcpyDeviceToHost, s.get()));
    SL_CUDA(cudaStreamSynchronize(s.get()));
    unsigned host_sum = 0;
    for (uint64_t i = 0; i < words; ++i) host_sum ^= Pattern(i, kSeedRead);
    out->checked = 1;
    out->mismatches = device_sum != host_sum;
    SetCheck(out, "XOR checksum of all %llu words vs host", (unsigned long long)words);
  } else if (q->op == SL_OP_MEM_WRITE) {
    SL_CUDA(GatherSamples(a.get<uint32_t>(), words, &pos, &got));
    CheckPattern(pos, got, kSeedWrite, out);
    SetCheck(out, "%d sampled words vs the written pattern", kVerifySamples);
  } else if (q->op == SL_OP_MEM_COPY || q->op == SL_OP_MEMCPY_D2D) {
    SL_CUDA(GatherSamples(b.get<uint32_t>(), words, &pos, &got));
    CheckPattern(pos, got, kSeedRead, out);
    SetCheck(out, "%d sampled words of the destination vs the source pattern", kVerifySamples);
  } else {
    SL_CUDA(GatherSamples(a.get<uint32_t>(), words, &pos, &got));
    for (size_t i = 0; i < pos.size(); ++i) {
      float f;
      std::memcpy(&f, &got[i], sizeof f);
      ++out->checked;
      if (f != float(pos[i] % 7) + kTriadScalar * float(pos[i] % 5)) ++out->mismatches;
    }
    SL_CUDA(cudaMemsetAsync(checksum.get(), 0, sizeof(unsigned long long), s.get()));
    CountNonFinite<<<FullGrid(CountNonFinite, dev), kThreads, 0, s.get()>>>(a.get<float>(), words,
                                                                            checksum.get<unsigned long long>());
    SL_CUDA(cudaGetLastError());
    unsigned long long nans = 0;
    SL_CUDA(cudaMemcpyAsync(&nans, checksum.get(), sizeof nans, cudaMemcpyDeviceToHost, s.get()));
    SL_CUDA(cudaStreamSynchronize(s.get()));
    out->nans = static_cast<long long>(nans);
    SetCheck(out, "%d sampled values vs b + 3c (exact integers); NaN/Inf counted over all", kVerifySamples);
  }
  out->status = SL_OK;
}

void RunCopies(const SlRequest* q, SlResult* out) {
  const int dev = q->device;
  const uint64_t bytes = uint64_t(q->bytes) / 4 * 4;
  const uint64_t words = bytes / 4;
  if (bytes == 0) return SetStatus(out, SL_ERROR, "copy size must be at least 4 bytes");
  SL_CUDA(cudaSetDevice(dev));
  Stream s;
  SL_CUDA(s.Create());
  DeviceBuffer d;
  SL_CUDA(d.Alloc(bytes));
  std::vector<uint64_t> pos;
  std::vector<uint32_t> got;
  if (q->op == SL_OP_H2D || q->op == SL_OP_D2H) {
    HostBuffer h;
    SL_CUDA(h.Alloc(bytes, q->pinned != 0));
    uint32_t* hw = h.get<uint32_t>();
    const bool h2d = q->op == SL_OP_H2D;
    if (h2d) {
      for (uint64_t i = 0; i < words; ++i) hw[i] = Pattern(i, kSeedH2D);
      SL_CUDA(cudaMemsetAsync(d.get(), 0, bytes, s.get()));
      SL_CUDA(cudaStreamSynchronize(s.get()));
    } else {
      std::memset(hw, 0, bytes);  // also faults in pageable pages before timing
      FillPattern<<<FullGrid(FillPattern, dev), kThreads, 0, s.get()>>>(d.get<uint32_t>(), words, kSeedD2H);
      SL_CUDA(cudaGetLastError());
      SL_CUDA(cudaStreamSynchronize(s.get()));
    }
    auto launch = [&] {
      return h2d ? cudaMemcpyAsync(d.get(), hw, bytes, cudaMemcpyHostToDevice, s.get())
                 : cudaMemcpyAsync(hw, d.get(), bytes, cudaMemcpyDeviceToHost, s.get());
    };
    if (!TimeReps(q, out, s.get(), launch)) return;
    out->work_per_rep = double(bytes);
    if (h2d) {
      SL_CUDA(GatherSamples(d.get<uint32_t>(), words, &pos, &got));
      CheckPattern(pos, got, kSeedH2D, out);
    } else {
      pos = SamplePositions(words, kVerifySamples);
      got.clear();
      for (uint64_t p : pos) got.push_back(hw[p]);
      CheckPattern(pos, got, kSeedD2H, out);
    }
    SetCheck(out, "%d sampled words of the destination vs the source pattern", kVerifySamples);
    out->status = SL_OK;
    return;
  }
  // Device -> peer.
  const int peer = q->peer;
  int count = 0;
  SL_CUDA(cudaGetDeviceCount(&count));
  if (peer < 0 || peer >= count || peer == dev) return SetStatus(out, SL_UNSUPPORTED, "no peer GPU %d", peer);
  int can = 0;
  SL_CUDA(cudaDeviceCanAccessPeer(&can, dev, peer));
  if (can) {
    cudaError_t e = cudaDeviceEnablePeerAccess(peer, 0);
    if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) SL_CUDA(e);
    cudaGetLastError();  // clear "already enabled"
  }
  FillPattern<<<FullGrid(FillPattern, dev), kThreads, 0, s.get()>>>(d.get<uint32_t>(), words, kSeedP2P);
  SL_CUDA(cudaGetLastError());
  SL_CUDA(cudaStreamSynchronize(s.get()));
  DeviceBuffer p;
  SL_CUDA(cudaSetDevice(peer));
  SL_CUDA(p.Alloc(bytes));
  SL_CUDA(cudaMemset(p.get(), 0, bytes));
  SL_CUDA(cudaDeviceSynchronize());  // the legacy-stream memset must finish before the timed copies
  SL_CUDA(cudaSetDevice(dev));
  auto launch = [&] { return cudaMemcpyPeerAsync(p.get(), peer, d.get(), dev, bytes, s.get()); };
  if (!TimeReps(q, out, s.get(), launch)) return;
  out->work_per_rep = double(bytes);
  SL_CUDA(cudaSetDevice(peer));
  SL_CUDA(GatherSamples(p.get<uint32_t>(), words, &pos, &got));
  SL_CUDA(cudaSetDevice(dev));
  CheckPattern(pos, got, kSeedP2P, out);
  SetCheck(out, "%d sampled words on the peer vs the source pattern", kVerifySamples);
  if (!can) SetStatus(out, SL_OK, "no direct peer access between GPU %d and %d: the copy is staged through the host", dev, peer);
  out->status = SL_OK;
}

void RunLaunchLatency(const SlRequest* q, SlResult* out) {
  SL_CUDA(cudaSetDevice(q->device));
  Stream s;
  SL_CUDA(s.Create());
  DeviceBuffer counter;
  SL_CUDA(counter.Alloc(sizeof(unsigned long long)));
  SL_CUDA(cudaMemset(counter.get(), 0, sizeof(unsigned long long)));
  SL_CUDA(cudaDeviceSynchronize());
  auto launch = [&] {
    for (int i = 0; i < kLaunchesPerRep; ++i) CountLaunch<<<1, 32, 0, s.get()>>>(counter.get<unsigned long long>());
    return cudaGetLastError();
  };
  if (!TimeReps(q, out, s.get(), launch)) return;
  unsigned long long n = 0;
  SL_CUDA(cudaMemcpy(&n, counter.get(), sizeof n, cudaMemcpyDeviceToHost));
  const unsigned long long expected = (unsigned long long)(q->warmup + out->sample_count) * kLaunchesPerRep;
  out->work_per_rep = kLaunchesPerRep;
  out->checked = 1;
  out->mismatches = n != expected;
  SetCheck(out, "every launch ran: device counter %llu vs %llu launches", n, expected);
  out->status = SL_OK;
}

}  // namespace sl

namespace {

int DeviceCount(int* count, char* err, int err_len) {
  const cudaError_t e = cudaGetDeviceCount(count);
  if (e != cudaSuccess) {
    // The runtime says "driver version is insufficient" when there is no driver at all.
    // No driver or no device: not applicable here (SKIP). A driver that is present but fails
    // (too old for this runtime, a broken device): could not run (ERROR).
    *count = 0;
    void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!driver) {
      std::snprintf(err, err_len, "no NVIDIA driver (libcuda.so.1 not found)");
      return SL_UNSUPPORTED;
    }
    dlclose(driver);
    std::snprintf(err, err_len, "CUDA GPUs not usable: %s", cudaGetErrorString(e));
    return e == cudaErrorNoDevice ? SL_UNSUPPORTED : SL_ERROR;
  }
  return SL_OK;
}

int DeviceInfo(int device, SlDeviceInfo* o, char* err, int err_len) {
  cudaDeviceProp p{};
  cudaError_t e = cudaGetDeviceProperties(&p, device);
  if (e != cudaSuccess) {
    std::snprintf(err, err_len, "cudaGetDeviceProperties: %s", cudaGetErrorString(e));
    return SL_ERROR;
  }
  std::memset(o, 0, sizeof *o);
  o->index = device;
  o->cc_major = p.major;
  o->cc_minor = p.minor;
  o->sm_count = p.multiProcessorCount;
  o->memory_bytes = static_cast<long long>(p.totalGlobalMem);
  o->l2_bytes = p.l2CacheSize;
  cudaRuntimeGetVersion(&o->runtime_version);
  cudaDriverGetVersion(&o->driver_api_version);
  std::snprintf(o->name, sizeof o->name, "%s", p.name);
  const auto* u = reinterpret_cast<const unsigned char*>(p.uuid.bytes);
  std::snprintf(o->uuid, sizeof o->uuid, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
  std::snprintf(o->pci_bus_id, sizeof o->pci_bus_id, "%08X:%02X:%02X.0", p.pciDomainID, p.pciBusID, p.pciDeviceID);
  return SL_OK;
}

void Run(const SlRequest* q, SlResult* out) {
  std::memset(out, 0, sizeof *out);
  if (!q) return sl::SetStatus(out, SL_ERROR, "null request");
  switch (q->op) {
    case SL_OP_MEM_READ:
    case SL_OP_MEM_WRITE:
    case SL_OP_MEM_COPY:
    case SL_OP_MEM_TRIAD:
    case SL_OP_MEMCPY_D2D: sl::RunMemory(q, out); break;
    case SL_OP_H2D:
    case SL_OP_D2H:
    case SL_OP_P2P: sl::RunCopies(q, out); break;
    case SL_OP_LAUNCH_LATENCY: sl::RunLaunchLatency(q, out); break;
    case SL_OP_GEMM:
    case SL_OP_GEMM_SEQUENCE: sl::RunGemm(q, out); break;
    case SL_OP_ALLREDUCE: sl::RunAllReduce(q, out); break;
    default: sl::SetStatus(out, SL_UNSUPPORTED, "unknown op %d", q->op);
  }
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const SlCudaApi* suanli_cuda_plugin(void) {
  static const SlCudaApi api = {SUANLI_CUDA_PLUGIN_ABI,
                                {int(sizeof(SlRequest)), int(sizeof(SlResult)), int(sizeof(SlDeviceInfo))},
                                DeviceCount,
                                DeviceInfo,
                                Run};
  return &api;
}
