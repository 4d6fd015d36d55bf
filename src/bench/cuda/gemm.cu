// Dense GEMM throughput through cuBLASLt, one shape or a sequence (the forward and backward
// GEMMs of one transformer layer), with sampled exact verification (docs/bench-method.md §4).
//
// Layout: "TN" for every precision (FP8 and INT8 tensor-core kernels require it):
// D (m x n, column-major) = A^T B with A stored k x m and B stored k x n, column-major.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "bench/cuda/common.cuh"

namespace sl {

namespace {

constexpr size_t kWorkspaceBytes = size_t(64) << 20;  // cuBLASLt guidance: 32 MiB on Hopper+; headroom
constexpr int kGemmSamples = 256;
constexpr int kThreads = 256;
constexpr uint32_t kSeedA = 11, kSeedB = 13;

struct Types {
  cudaDataType_t ab, cd, scale;
  cublasComputeType_t compute;
  size_t ab_size, cd_size;
  const char* name;
};

bool TypesFor(int precision, Types* t) {
  switch (precision) {
    case SL_FP32: *t = {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 4, 4, "FP32"}; return true;
    case SL_TF32: *t = {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, 4, "TF32"}; return true;
    // Half-precision inputs with FP32 accumulation and half-precision output, as in training.
    case SL_FP16: *t = {CUDA_R_16F, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 2, 2, "FP16"}; return true;
    case SL_BF16: *t = {CUDA_R_16BF, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, 2, 2, "BF16"}; return true;
    case SL_FP8: *t = {CUDA_R_8F_E4M3, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, 1, 2, "FP8 e4m3 (BF16 out)"}; return true;
    case SL_INT8: *t = {CUDA_R_8I, CUDA_R_32I, CUDA_R_32I, CUBLAS_COMPUTE_32I, 1, 4, "INT8 (INT32 out)"}; return true;
    default: return false;
  }
}

template <typename T>
__device__ T FromInt(int v);
template <>
__device__ float FromInt<float>(int v) { return float(v); }
template <>
__device__ __half FromInt<__half>(int v) { return __float2half_rn(float(v)); }
template <>
__device__ __nv_bfloat16 FromInt<__nv_bfloat16>(int v) { return __float2bfloat16_rn(float(v)); }
template <>
__device__ __nv_fp8_e4m3 FromInt<__nv_fp8_e4m3>(int v) { return __nv_fp8_e4m3(float(v)); }
template <>
__device__ int8_t FromInt<int8_t>(int v) { return int8_t(v); }

template <typename T>
__global__ void FillSmallInts(T* p, uint64_t n, uint32_t seed) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) p[i] = FromInt<T>(SmallInt(i, seed));
}

cudaError_t Fill(void* p, cudaDataType_t t, uint64_t n, uint32_t seed, cudaStream_t s) {
  const int grid = 1024;
  switch (t) {
    case CUDA_R_32F: FillSmallInts<<<grid, kThreads, 0, s>>>(static_cast<float*>(p), n, seed); break;
    case CUDA_R_16F: FillSmallInts<<<grid, kThreads, 0, s>>>(static_cast<__half*>(p), n, seed); break;
    case CUDA_R_16BF: FillSmallInts<<<grid, kThreads, 0, s>>>(static_cast<__nv_bfloat16*>(p), n, seed); break;
    case CUDA_R_8F_E4M3: FillSmallInts<<<grid, kThreads, 0, s>>>(static_cast<__nv_fp8_e4m3*>(p), n, seed); break;
    case CUDA_R_8I: FillSmallInts<<<grid, kThreads, 0, s>>>(static_cast<int8_t*>(p), n, seed); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

__device__ double ReadAs(const void* p, cudaDataType_t t, uint64_t i) {
  switch (t) {
    case CUDA_R_32F: return static_cast<const float*>(p)[i];
    case CUDA_R_16F: return __half2float(static_cast<const __half*>(p)[i]);
    case CUDA_R_16BF: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case CUDA_R_32I: return static_cast<const int*>(p)[i];
    default: return NAN;
  }
}

__global__ void GatherOutput(const void* d, cudaDataType_t t, const uint64_t* idx, double* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = ReadAs(d, t, idx[i]);
}

__global__ void CountNonFiniteOut(const void* d, cudaDataType_t t, uint64_t n, unsigned long long* count) {
  if (t == CUDA_R_32I) return;  // integers cannot be NaN
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  unsigned long long bad = 0;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) bad += !isfinite(ReadAs(d, t, i));
  for (int off = 16; off > 0; off >>= 1) bad += __shfl_xor_sync(0xffffffffu, bad, off);
  if ((threadIdx.x & 31) == 0 && bad) atomicAdd(count, bad);
}

// The exact product rounded once to the output type, as an FP32-accumulating kernel must give
// for these inputs (every partial sum is an integer below 2^24, hence exact).
double ExpectedOutput(double exact, cudaDataType_t t) {
  switch (t) {
    case CUDA_R_16F: return __half2float(__float2half_rn(float(exact)));
    case CUDA_R_16BF: return __bfloat162float(__float2bfloat16_rn(float(exact)));
    default: return exact;
  }
}

struct Plan {
  SlGemmShape shape{};
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Plan() {
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

struct LtHandle {
  cublasLtHandle_t h = nullptr;
  ~LtHandle() {
    if (h) cublasLtDestroy(h);
  }
};

const char* LtError(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "cuBLAS error";
  }
}

// Builds descriptors and picks cuBLASLt's first heuristic algorithm. Returns SL_OK,
// SL_UNSUPPORTED (no kernel for this type/shape on this GPU) or SL_ERROR.
int MakePlan(cublasLtHandle_t h, const Types& t, const SlGemmShape& s, Plan* p, SlResult* out) {
  p->shape = s;
  const cublasOperation_t tr = CUBLAS_OP_T, nt = CUBLAS_OP_N;
  cublasStatus_t st = cublasLtMatmulDescCreate(&p->op, t.compute, t.scale);
  if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &tr, sizeof tr);
  if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &nt, sizeof nt);
  if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatrixLayoutCreate(&p->a, t.ab, s.k, s.m, s.k);
  if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatrixLayoutCreate(&p->b, t.ab, s.k, s.n, s.k);
  if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatrixLayoutCreate(&p->d, t.cd, s.m, s.n, s.m);
  if (st == CUBLAS_STATUS_SUCCESS && s.batch > 1) {
    const int32_t count = static_cast<int32_t>(s.batch);
    const int64_t sa = s.k * s.m, sb = s.k * s.n, sd = s.m * s.n;
    for (auto [layout, stride] : {std::pair{p->a, sa}, std::pair{p->b, sb}, std::pair{p->d, sd}}) {
      if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count);
      if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride);
    }
  }
  if (st != CUBLAS_STATUS_SUCCESS) {
    SetStatus(out, SL_ERROR, "cuBLASLt descriptor setup: %s", LtError(st));
    return SL_ERROR;
  }
  cublasLtMatmulPreference_t pref = nullptr;
  st = cublasLtMatmulPreferenceCreate(&pref);
  const size_t ws = kWorkspaceBytes;
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  // Split-K partial sums must be reduced in the compute type: reducing them in the output type
  // (BF16/FP16) would round more than once and break the exact verification (and is not what
  // a training framework's GEMM does by default either).
  const uint32_t schemes = CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes, sizeof schemes);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulAlgoGetHeuristic(h, p->op, p->a, p->b, p->d, p->d, pref, 1, &result, &found);
  if (pref) cublasLtMatmulPreferenceDestroy(pref);
  if (st == CUBLAS_STATUS_NOT_SUPPORTED || (st == CUBLAS_STATUS_SUCCESS && found == 0)) {
    SetStatus(out, SL_UNSUPPORTED, "cuBLASLt has no %s kernel for %lldx%lldx%lld on this GPU", t.name, s.m, s.n, s.k);
    return SL_UNSUPPORTED;
  }
  if (st != CUBLAS_STATUS_SUCCESS) {
    SetStatus(out, SL_ERROR, "cublasLtMatmulAlgoGetHeuristic: %s", LtError(st));
    return SL_ERROR;
  }
  p->algo = result.algo;
  return SL_OK;
}

}  // namespace

void RunGemm(const SlRequest* q, SlResult* out) {
  Types t{};
  if (!TypesFor(q->precision, &t)) return SetStatus(out, SL_UNSUPPORTED, "precision %d is not benchmarked", q->precision);
  const int count = q->op == SL_OP_GEMM ? 1 : q->shape_count;
  if (count < 1 || count > SL_MAX_SHAPES) return SetStatus(out, SL_ERROR, "bad shape count %d", q->shape_count);
  uint64_t max_a = 0, max_b = 0, max_d = 0;
  double flops = 0;
  for (int i = 0; i < count; ++i) {
    const SlGemmShape& s = q->shapes[i];
    if (s.m <= 0 || s.n <= 0 || s.k <= 0 || s.batch <= 0) return SetStatus(out, SL_ERROR, "bad GEMM shape %d", i);
    if (s.k >= (1LL << 24)) return SetStatus(out, SL_ERROR, "k = %lld is too large for exact verification", s.k);
    max_a = std::max<uint64_t>(max_a, uint64_t(s.k) * s.m * s.batch);
    max_b = std::max<uint64_t>(max_b, uint64_t(s.k) * s.n * s.batch);
    max_d = std::max<uint64_t>(max_d, uint64_t(s.m) * s.n * s.batch);
    flops += 2.0 * double(s.m) * double(s.n) * double(s.k) * double(s.batch);
  }
  SL_CUDA(cudaSetDevice(q->device));
  Stream s;
  SL_CUDA(s.Create());
  DeviceBuffer a, b, d, ws, idx, gathered, nan_count;
  SL_CUDA(a.Alloc(max_a * t.ab_size));
  SL_CUDA(b.Alloc(max_b * t.ab_size));
  SL_CUDA(d.Alloc(max_d * t.cd_size));
  SL_CUDA(ws.Alloc(kWorkspaceBytes));
  SL_CUDA(idx.Alloc(kGemmSamples * sizeof(uint64_t)));
  SL_CUDA(gathered.Alloc(kGemmSamples * sizeof(double)));
  SL_CUDA(nan_count.Alloc(sizeof(unsigned long long)));
  SL_CUDA(Fill(a.get(), t.ab, max_a, kSeedA, s.get()));
  SL_CUDA(Fill(b.get(), t.ab, max_b, kSeedB, s.get()));
  LtHandle lt;
  cublasStatus_t st = cublasLtCreate(&lt.h);
  if (st != CUBLAS_STATUS_SUCCESS) return SetStatus(out, SL_ERROR, "cublasLtCreate: %s", LtError(st));
  std::vector<std::unique_ptr<Plan>> plans;
  for (int i = 0; i < count; ++i) {
    plans.push_back(std::make_unique<Plan>());
    if (MakePlan(lt.h, t, q->shapes[i], plans.back().get(), out) != SL_OK) return;
  }
  const float alpha_f = 1.0f, beta_f = 0.0f;
  const int32_t alpha_i = 1, beta_i = 0;
  const void* alpha = t.scale == CUDA_R_32I ? static_cast<const void*>(&alpha_i) : static_cast<const void*>(&alpha_f);
  const void* beta = t.scale == CUDA_R_32I ? static_cast<const void*>(&beta_i) : static_cast<const void*>(&beta_f);
  cublasStatus_t last = CUBLAS_STATUS_SUCCESS;
  auto matmul = [&](const Plan& p) {
    // C = D with beta = 0: C is not read.
    last = cublasLtMatmul(lt.h, p.op, alpha, a.get(), p.a, b.get(), p.b, beta, d.get(), p.d, d.get(), p.d, &p.algo,
                          ws.get(), kWorkspaceBytes, s.get());
    return last == CUBLAS_STATUS_SUCCESS ? cudaSuccess : cudaErrorLaunchFailure;
  };

  // ---- verification: every shape once, sampled outputs vs the exact host reference ----
  for (const auto& pp : plans) {
    const Plan& p = *pp;
    const SlGemmShape& sh = p.shape;
    SL_CUDA(cudaMemsetAsync(d.get(), 0, uint64_t(sh.m) * sh.n * sh.batch * t.cd_size, s.get()));
    if (matmul(p) != cudaSuccess) return SetStatus(out, SL_ERROR, "cublasLtMatmul: %s", LtError(last));
    std::vector<uint64_t> pos(kGemmSamples);
    std::vector<uint64_t> bij(kGemmSamples * 3);
    for (int i = 0; i < kGemmSamples; ++i) {
      const uint64_t bb = Hash32(3 * i + 1) % uint64_t(sh.batch), ii = Hash32(3 * i + 2) % uint64_t(sh.m),
                     jj = Hash32(3 * i + 3) % uint64_t(sh.n);
      bij[3 * i] = bb;
      bij[3 * i + 1] = ii;
      bij[3 * i + 2] = jj;
      pos[i] = bb * sh.m * sh.n + ii + jj * uint64_t(sh.m);
    }
    SL_CUDA(cudaMemcpyAsync(idx.get(), pos.data(), pos.size() * sizeof(uint64_t), cudaMemcpyHostToDevice, s.get()));
    GatherOutput<<<1, kGemmSamples, 0, s.get()>>>(d.get(), t.cd, idx.get<uint64_t>(), gathered.get<double>(), kGemmSamples);
    SL_CUDA(cudaGetLastError());
    SL_CUDA(cudaMemsetAsync(nan_count.get(), 0, sizeof(unsigned long long), s.get()));
    CountNonFiniteOut<<<1024, kThreads, 0, s.get()>>>(d.get(), t.cd, uint64_t(sh.m) * sh.n * sh.batch,
                                                     nan_count.get<unsigned long long>());
    SL_CUDA(cudaGetLastError());
    std::vector<double> got(kGemmSamples);
    unsigned long long nans = 0;
    SL_CUDA(cudaMemcpyAsync(got.data(), gathered.get(), kGemmSamples * sizeof(double), cudaMemcpyDeviceToHost, s.get()));
    SL_CUDA(cudaMemcpyAsync(&nans, nan_count.get(), sizeof nans, cudaMemcpyDeviceToHost, s.get()));
    SL_CUDA(cudaStreamSynchronize(s.get()));
    out->nans += static_cast<long long>(nans);
    for (int i = 0; i < kGemmSamples; ++i) {
      const uint64_t bb = bij[3 * i], ii = bij[3 * i + 1], jj = bij[3 * i + 2];
      const uint64_t a0 = bb * sh.k * sh.m + ii * uint64_t(sh.k), b0 = bb * sh.k * sh.n + jj * uint64_t(sh.k);
      long long exact = 0;
      for (int64_t kk = 0; kk < sh.k; ++kk) exact += SmallInt(a0 + kk, kSeedA) * SmallInt(b0 + kk, kSeedB);
      ++out->checked;
      if (got[i] != ExpectedOutput(double(exact), t.cd)) ++out->mismatches;
    }
  }
  SetCheck(out, "%d sampled outputs per GEMM vs exact host reference (inputs in {-1,0,1}); NaN/Inf counted", kGemmSamples);

  // ---- timing ----
  auto launch = [&] {
    for (const auto& p : plans) {
      const cudaError_t e = matmul(*p);
      if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
  };
  if (!TimeReps(q, out, s.get(), launch)) {
    if (last != CUBLAS_STATUS_SUCCESS) SetStatus(out, SL_ERROR, "cublasLtMatmul: %s", LtError(last));
    return;
  }
  out->work_per_rep = flops;
  out->status = SL_OK;
}

}  // namespace sl
