// The CUDA backend as seen from suanli: the plugin (libsuanli_cuda.so) is dlopen()ed lazily,
// in the process that runs the benchmark (a child under the watchdog), and NVML is dlopen()ed
// for what the CUDA runtime does not tell: serial number, driver version, idle state.
#include <dlfcn.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <cstring>
#include <memory>
#include <vector>

#include "bench/cuda/plugin_abi.h"
#include "suanli/bench.h"

// As in nvml.h: `typedef struct nvmlDevice_st* nvmlDevice_t;` and nvmlUtilization_t.
struct nvmlDevice_st;
struct nvmlUtilization_st {
  unsigned int gpu;
  unsigned int memory;
};

namespace suanli {

bool BuiltWithCuda() {
#if defined(SUANLI_HAVE_CUDA) && SUANLI_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

namespace {

// ---- NVML, declared by hand (nvml.h is not needed to build) ----------------------------------
// The opaque handle and the utilisation struct are declared at global scope with NVML's own
// names (see the global declarations above), so that function-pointer types match the library's.
using nvmlDevice_t = ::nvmlDevice_st*;
constexpr int kNvmlSuccess = 0;
constexpr int kNvmlInsufficientSize = 7;
constexpr int kNvmlTemperatureGpu = 0;
constexpr int kNvmlTempThresholdSlowdown = 1;
constexpr int kNvmlClockSm = 1;
using NvmlUtilization = ::nvmlUtilization_st;
// Utilisation above this is someone else's work: an idle GPU reads 0-1% (NVML samples the
// fraction of time a kernel ran over the last sample period).
constexpr unsigned kBusyUtilizationPercent = 5;
// Closer than this to the slowdown threshold, clocks may already be reduced.
constexpr unsigned kHotMarginC = 5;

class Nvml {
 public:
  // Tries the given library (tests) or the driver's libnvidia-ml.so.1. Never fails: ok() says
  // whether NVML is usable. Each process that uses it loads its own (the benchmark children
  // and the parent), so nothing NVML holds crosses a fork() in use.
  explicit Nvml(const std::string& path) {
    std::vector<std::string> names;
    if (!path.empty()) names.push_back(path);
    else names = {"libnvidia-ml.so.1", "libnvidia-ml.so"};
    for (const auto& name : names) {
      lib_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (lib_) break;
    }
    if (lib_) Bind();
  }
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;
  bool ok() const { return ok_; }
  nvmlDevice_t ByUuid(const std::string& uuid) const {
    nvmlDevice_t d = nullptr;
    if (!ok_ || !by_uuid_ || by_uuid_(uuid.c_str(), &d) != kNvmlSuccess) return nullptr;
    return d;
  }
  std::string Serial(nvmlDevice_t d) const {
    char buf[64] = {};
    if (d && serial_ && serial_(d, buf, sizeof buf) == kNvmlSuccess) return buf;
    return "";
  }
  std::string Driver() const {
    char buf[96] = {};
    if (ok_ && driver_ && driver_(buf, sizeof buf) == kNvmlSuccess) return buf;
    return "";
  }
  IdleReport Idle(nvmlDevice_t d) const {
    IdleReport r;
    if (!d) return r;
    r.known = true;
    unsigned v = 0, slow = 0;
    if (temp_ && temp_(d, kNvmlTemperatureGpu, &v) == kNvmlSuccess) {
      r.temperature_c = v;
      if (threshold_ && threshold_(d, kNvmlTempThresholdSlowdown, &slow) == kNvmlSuccess && slow > 0 &&
          v + kHotMarginC >= slow) {
        r.idle = false;
        r.reasons.push_back(fmt::format("temperature {} C is within {} C of the slowdown threshold {} C", v,
                                        kHotMarginC, slow));
      }
    }
    if (clock_ && clock_(d, kNvmlClockSm, &v) == kNvmlSuccess) r.sm_clock_mhz = v;
    if (max_clock_ && max_clock_(d, kNvmlClockSm, &v) == kNvmlSuccess) r.sm_clock_max_mhz = v;
    if (procs_) {
      unsigned count = 0;
      const int rc = procs_(d, &count, nullptr);
      if (rc == kNvmlSuccess || rc == kNvmlInsufficientSize) {
        r.compute_processes = static_cast<int>(count);
        if (count > 0) {
          r.idle = false;
          r.reasons.push_back(fmt::format("{} other compute process{} on the GPU", count, count == 1 ? "" : "es"));
        }
      }
    }
    NvmlUtilization u{};
    if (util_ && util_(d, &u) == kNvmlSuccess && u.gpu > kBusyUtilizationPercent) {
      r.idle = false;
      r.reasons.push_back(fmt::format("GPU utilisation {}% before the run", u.gpu));
    }
    return r;
  }

 private:
  void Bind() {
    auto sym = [&](std::initializer_list<const char*> names) -> void* {
      for (const char* n : names)
        if (void* p = dlsym(lib_, n)) return p;
      return nullptr;
    };
    auto init = reinterpret_cast<int (*)()>(sym({"nvmlInit_v2", "nvmlInit"}));
    if (!init || init() != kNvmlSuccess) return;
    by_uuid_ = reinterpret_cast<decltype(by_uuid_)>(sym({"nvmlDeviceGetHandleByUUID"}));
    serial_ = reinterpret_cast<decltype(serial_)>(sym({"nvmlDeviceGetSerial"}));
    driver_ = reinterpret_cast<decltype(driver_)>(sym({"nvmlSystemGetDriverVersion"}));
    temp_ = reinterpret_cast<decltype(temp_)>(sym({"nvmlDeviceGetTemperature"}));
    threshold_ = reinterpret_cast<decltype(threshold_)>(sym({"nvmlDeviceGetTemperatureThreshold"}));
    clock_ = reinterpret_cast<decltype(clock_)>(sym({"nvmlDeviceGetClockInfo"}));
    max_clock_ = reinterpret_cast<decltype(max_clock_)>(sym({"nvmlDeviceGetMaxClockInfo"}));
    // With a null array only the count is read, so the versioned struct layout does not matter.
    procs_ = reinterpret_cast<decltype(procs_)>(sym({"nvmlDeviceGetComputeRunningProcesses_v3",
                                                     "nvmlDeviceGetComputeRunningProcesses_v2",
                                                     "nvmlDeviceGetComputeRunningProcesses"}));
    util_ = reinterpret_cast<decltype(util_)>(sym({"nvmlDeviceGetUtilizationRates"}));
    ok_ = true;
  }
  void* lib_ = nullptr;
  bool ok_ = false;
  int (*by_uuid_)(const char*, nvmlDevice_t*) = nullptr;
  int (*serial_)(nvmlDevice_t, char*, unsigned) = nullptr;
  int (*driver_)(char*, unsigned) = nullptr;
  int (*temp_)(nvmlDevice_t, int, unsigned*) = nullptr;
  int (*threshold_)(nvmlDevice_t, int, unsigned*) = nullptr;
  int (*clock_)(nvmlDevice_t, int, unsigned*) = nullptr;
  int (*max_clock_)(nvmlDevice_t, int, unsigned*) = nullptr;
  int (*procs_)(nvmlDevice_t, unsigned*, void*) = nullptr;
  int (*util_)(nvmlDevice_t, NvmlUtilization*) = nullptr;
};

int SlPrecisionOf(Precision p) {
  switch (p) {
    case Precision::kFp32: return SL_FP32;
    case Precision::kTf32: return SL_TF32;
    case Precision::kFp16: return SL_FP16;
    case Precision::kBf16: return SL_BF16;
    case Precision::kFp8: return SL_FP8;
    case Precision::kInt8: return SL_INT8;
    default: return 0;
  }
}

int SlOpOf(BenchKind k) {
  switch (k) {
    case BenchKind::kMemRead: return SL_OP_MEM_READ;
    case BenchKind::kMemWrite: return SL_OP_MEM_WRITE;
    case BenchKind::kMemCopy: return SL_OP_MEM_COPY;
    case BenchKind::kMemTriad: return SL_OP_MEM_TRIAD;
    case BenchKind::kMemcpyD2D: return SL_OP_MEMCPY_D2D;
    case BenchKind::kGemm: return SL_OP_GEMM;
    case BenchKind::kLayerSequence: return SL_OP_GEMM_SEQUENCE;
    case BenchKind::kH2D: return SL_OP_H2D;
    case BenchKind::kD2H: return SL_OP_D2H;
    case BenchKind::kP2P: return SL_OP_P2P;
    case BenchKind::kLaunchLatency: return SL_OP_LAUNCH_LATENCY;
    case BenchKind::kAllReduce: return SL_OP_ALLREDUCE;
    case BenchKind::kHarnessOverhead: return 0;
  }
  return 0;
}

class CudaDevice final : public BenchDevice {
 public:
  CudaDevice(std::string path, std::string nvml_path) : path_(std::move(path)), nvml_path_(std::move(nvml_path)) {}
  std::string Kind() const override { return "cuda"; }

  Status Available() override {
    if (path_.empty()) return Unsupported("built without CUDA");
    struct stat st {};
    if (stat(path_.c_str(), &st) != 0) return Unsupported(fmt::format("CUDA plugin not found at {}", path_));
    return Status::Ok();
  }

  Result<std::vector<DeviceInfo>> Devices() override {
    SUANLI_ASSIGN_OR_RETURN(const SlCudaApi* api, Load());
    char err[512] = {};
    int count = 0;
    const int rc = api->device_count(&count, err, sizeof err);
    if (rc == SL_UNSUPPORTED) return Unsupported(err);
    if (rc != SL_OK) return Internal(err);
    std::vector<DeviceInfo> out;
    const Nvml& nvml = GetNvml();
    for (int i = 0; i < count; ++i) {
      SlDeviceInfo s{};
      if (api->device_info(i, &s, err, sizeof err) != SL_OK) return Internal(fmt::format("GPU {}: {}", i, err));
      DeviceInfo d;
      d.index = i;
      d.is_gpu = true;
      d.name = s.name;
      d.uuid = s.uuid;
      d.pci_bus_id = s.pci_bus_id;
      d.compute_capability = fmt::format("{}.{}", s.cc_major, s.cc_minor);
      d.sm_count = s.sm_count;
      d.memory_bytes = static_cast<double>(s.memory_bytes);
      d.l2_bytes = static_cast<double>(s.l2_bytes);
      d.cuda_version = fmt::format("{}.{} (runtime {}.{})", s.driver_api_version / 1000, s.driver_api_version % 1000 / 10,
                                   s.runtime_version / 1000, s.runtime_version % 1000 / 10);
      d.driver_version = nvml.Driver();
      d.serial = nvml.Serial(nvml.ByUuid(d.uuid));
      out.push_back(std::move(d));
    }
    return out;
  }

  IdleReport CheckIdle(const DeviceInfo& d) override {
    const Nvml& nvml = GetNvml();
    if (!nvml.ok()) return {};
    return nvml.Idle(nvml.ByUuid(d.uuid));
  }

  Measurement Run(const BenchCase& c) override {
    Measurement m;
    auto api = Load();
    if (!api.ok()) {
      m.outcome = BenchState::kSkip;
      m.message = api.status().message();
      return m;
    }
    SlRequest q{};
    q.op = SlOpOf(c.kind);
    q.device = c.device;
    q.peer = c.peer;
    q.precision = SlPrecisionOf(c.precision);
    q.pinned = c.pinned ? 1 : 0;
    q.warmup = c.warmup;
    q.reps = std::min(c.reps, SL_MAX_SAMPLES);
    q.bytes = c.bytes;
    q.time_budget_s = 0.5 * c.time_limit_s;
    if (c.gemms.size() > SL_MAX_SHAPES) {
      m.outcome = BenchState::kError;
      m.message = fmt::format("{} GEMM shapes, the plugin takes at most {}", c.gemms.size(), SL_MAX_SHAPES);
      return m;
    }
    q.shape_count = static_cast<int>(c.gemms.size());
    for (std::size_t i = 0; i < c.gemms.size(); ++i)
      q.shapes[i] = {c.gemms[i].m, c.gemms[i].n, c.gemms[i].k, c.gemms[i].batch};
    if (q.op == 0 || (c.kind == BenchKind::kGemm && q.precision == 0)) {
      m.outcome = BenchState::kSkip;
      m.message = fmt::format("the CUDA plugin does not run '{}'", c.name);
      return m;
    }
    auto out = std::make_unique<SlResult>();
    (*api)->run(&q, out.get());
    out->message[sizeof out->message - 1] = '\0';
    out->check_method[sizeof out->check_method - 1] = '\0';
    m.outcome = out->status == SL_OK ? BenchState::kPass
                : out->status == SL_UNSUPPORTED ? BenchState::kSkip
                                                : BenchState::kError;
    m.message = out->message;
    const int n = std::clamp(out->sample_count, 0, SL_MAX_SAMPLES);
    m.seconds.assign(out->seconds, out->seconds + n);
    m.work_per_rep = out->work_per_rep;
    m.checked = out->checked;
    m.mismatches = out->mismatches;
    m.nans = out->nans;
    m.check_method = out->check_method;
    return m;
  }

 private:
  Result<const SlCudaApi*> Load() {
    if (api_) return api_;
    SUANLI_RETURN_IF_ERROR(Available());
    void* lib = dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) return Unsupported(fmt::format("CUDA plugin could not be loaded: {}", dlerror()));
    auto entry = reinterpret_cast<SlPluginEntry>(dlsym(lib, SUANLI_CUDA_PLUGIN_SYMBOL));
    if (!entry) return Unsupported(fmt::format("{} has no symbol {}", path_, SUANLI_CUDA_PLUGIN_SYMBOL));
    const SlCudaApi* api = entry();
    if (!api || api->abi_version != SUANLI_CUDA_PLUGIN_ABI || api->struct_sizes[0] != sizeof(SlRequest) ||
        api->struct_sizes[1] != sizeof(SlResult) || api->struct_sizes[2] != sizeof(SlDeviceInfo)) {
      return Unsupported(fmt::format("{} was built for another suanli version (plugin ABI mismatch)", path_));
    }
    api_ = api;
    return api_;
  }
  const Nvml& GetNvml() {
    if (!nvml_) nvml_ = std::make_unique<Nvml>(nvml_path_);
    return *nvml_;
  }
  std::string path_;
  std::string nvml_path_;
  std::unique_ptr<Nvml> nvml_;
  const SlCudaApi* api_ = nullptr;
};

}  // namespace

std::unique_ptr<BenchDevice> MakeCudaDevice(const std::string& plugin_path, const std::string& nvml_path) {
  return std::make_unique<CudaDevice>(plugin_path, nvml_path);
}

}  // namespace suanli
