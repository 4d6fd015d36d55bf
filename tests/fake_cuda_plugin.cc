// A stand-in for libsuanli_cuda.so with the same C ABI and no CUDA: two "H100s" whose results
// are synthetic, so the real dlopen path, the ABI checks, the child-process watchdog, the store,
// `compare` and `export-calibration` can be tested end to end on a machine without a GPU.
//
// Environment (read in the benchmark process):
//   SUANLI_FAKE_GPUS=N                 number of GPUs (default 2)
//   SUANLI_FAKE_GPU_SLOWDOWN=I:F       GPU I delivers F x its normal rate (drift tests)
//   SUANLI_FAKE_GPU_CORRUPT=I          GPU I returns wrong values (every test FAILs)
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "bench/cuda/plugin_abi.h"

namespace {

// H100 SXM datasheet values, as in data/gpus/h100-sxm.toml.
constexpr double kHbm = 3.35e12;
constexpr double kDelivered = 0.9;  // fraction of peak the fake delivers

int Gpus() {
  const char* e = std::getenv("SUANLI_FAKE_GPUS");
  return e ? std::atoi(e) : 2;
}

double Slowdown(int device) {
  const char* e = std::getenv("SUANLI_FAKE_GPU_SLOWDOWN");
  int dev = -1;
  double f = 1;
  if (e && std::sscanf(e, "%d:%lf", &dev, &f) == 2 && dev == device) return f;
  return 1;
}

bool Corrupt(int device) {
  const char* e = std::getenv("SUANLI_FAKE_GPU_CORRUPT");
  return e && std::atoi(e) == device;
}

double GemmPeak(int precision) {
  switch (precision) {
    case SL_FP32: return 67e12;
    case SL_TF32: return 494.7e12;
    case SL_FP16:
    case SL_BF16: return 989.4e12;
    case SL_FP8:
    case SL_INT8: return 1978.9e12;
    default: return 0;
  }
}

int DeviceCount(int* count, char*, int) {
  *count = Gpus();
  return SL_OK;
}

int DeviceInfo(int device, SlDeviceInfo* o, char* err, int err_len) {
  if (device < 0 || device >= Gpus()) {
    std::snprintf(err, err_len, "no GPU %d", device);
    return SL_ERROR;
  }
  std::memset(o, 0, sizeof *o);
  o->index = device;
  o->cc_major = 9;
  o->cc_minor = 0;
  o->sm_count = 132;
  o->memory_bytes = 80LL << 30;
  o->l2_bytes = 50LL << 20;
  o->runtime_version = 13000;
  o->driver_api_version = 13000;
  std::snprintf(o->name, sizeof o->name, "NVIDIA H100 80GB HBM3");
  std::snprintf(o->uuid, sizeof o->uuid, "GPU-fake0000-0000-0000-0000-00000000000%d", device);
  std::snprintf(o->pci_bus_id, sizeof o->pci_bus_id, "00000000:%02X:00.0", 0x18 + device);
  return SL_OK;
}

void Run(const SlRequest* q, SlResult* out) {
  std::memset(out, 0, sizeof *out);
  double work = 0, rate = 0;
  const double bytes = static_cast<double>(q->bytes);
  switch (q->op) {
    case SL_OP_MEM_READ:
    case SL_OP_MEM_WRITE: work = bytes, rate = kDelivered * kHbm; break;
    case SL_OP_MEM_COPY: work = 2 * bytes, rate = kDelivered * kHbm; break;
    case SL_OP_MEMCPY_D2D: work = 2 * bytes, rate = 1.01 * kDelivered * kHbm; break;
    case SL_OP_MEM_TRIAD: work = 3 * bytes, rate = kDelivered * kHbm; break;
    case SL_OP_GEMM:
    case SL_OP_GEMM_SEQUENCE:
      for (int i = 0; i < (q->op == SL_OP_GEMM ? 1 : q->shape_count); ++i)
        work += 2.0 * q->shapes[i].m * q->shapes[i].n * q->shapes[i].k * q->shapes[i].batch;
      rate = 0.75 * GemmPeak(q->precision);
      break;
    case SL_OP_H2D:
    case SL_OP_D2H: work = bytes, rate = 52e9; break;
    case SL_OP_P2P: work = bytes, rate = 380e9; break;
    case SL_OP_LAUNCH_LATENCY: work = 1000, rate = 1 / 2.5e-6; break;
    case SL_OP_ALLREDUCE:
      if (Gpus() < 2) {
        out->status = SL_UNSUPPORTED;
        std::snprintf(out->message, sizeof out->message, "needs two or more GPUs");
        return;
      }
      work = bytes * 2.0 * (Gpus() - 1) / Gpus(), rate = 400e9;
      break;
    default:
      out->status = SL_UNSUPPORTED;
      std::snprintf(out->message, sizeof out->message, "fake plugin: op %d", q->op);
      return;
  }
  if (rate <= 0) {
    out->status = SL_UNSUPPORTED;
    std::snprintf(out->message, sizeof out->message, "fake plugin: precision %d", q->precision);
    return;
  }
  rate *= Slowdown(q->device);
  const int reps = q->reps < 1 ? 1 : (q->reps > SL_MAX_SAMPLES ? SL_MAX_SAMPLES : q->reps);
  for (int i = 0; i < reps; ++i) out->seconds[i] = work / rate * (1 + 0.002 * ((i % 5) - 2));  // +-0.4% jitter
  out->sample_count = reps;
  out->work_per_rep = work;
  out->checked = 256;
  out->mismatches = Corrupt(q->device) ? 3 : 0;
  std::snprintf(out->check_method, sizeof out->check_method, "fake plugin (synthetic)");
  out->status = SL_OK;
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
