// The live path: NVML loaded with dlopen at run time (no build-time NVIDIA dependency), a
// fake backend replaying a machine profile, the real host probe (files, environment,
// fixed read-only commands with a timeout), and bundle writing.
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/files.h"
#include "doctor/util.h"
#include "suanli/doctor.h"

extern char** environ;

namespace suanli::doctor {

namespace {

// ---- NVML: our own minimal declarations (see nvml.h; only what we call) -------------------
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
struct NvmlPciInfo {          // nvmlPciInfo_t (v3 layout)
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
struct NvmlUtilization { unsigned int gpu, memory; };
struct NvmlMemory { unsigned long long total, free, used; };  // nvmlMemory_t (v1)
static_assert(sizeof(NvmlPciInfo) == 68, "nvmlPciInfo_t layout");
static_assert(sizeof(NvmlMemory) == 24, "nvmlMemory_t layout");

class NvmlBackend : public DeviceBackend {
 public:
  NvmlBackend() = default;
  ~NvmlBackend() override {
    if (handle_) {
      if (shutdown_ && inited_) shutdown_();
      dlclose(handle_);
    }
  }
  std::string Name() const override { return "nvml"; }

  Result<std::vector<GpuTelemetry>> Query() override {
    SUANLI_RETURN_IF_ERROR(Load());
    unsigned int count = 0;
    if (int rc = get_count_(&count); rc != kNvmlSuccess) return Unsupported(Err("nvmlDeviceGetCount", rc));
    std::vector<GpuTelemetry> out;
    const std::string driver = DriverVersion().ok() ? *DriverVersion() : "";
    for (unsigned int i = 0; i < count && i < 1024; ++i) {
      nvmlDevice_t d = nullptr;
      if (get_handle_(i, &d) != kNvmlSuccess) continue;
      GpuTelemetry t;
      t.origin = "live:nvml";
      t.index = static_cast<int>(i);
      t.driver_version = driver;
      char buf[96] = {0};
      if (Call<int (*)(nvmlDevice_t, char*, unsigned)>("nvmlDeviceGetName", d, buf, sizeof buf - 1)) t.name = buf;
      std::memset(buf, 0, sizeof buf);
      if (Call<int (*)(nvmlDevice_t, char*, unsigned)>("nvmlDeviceGetUUID", d, buf, sizeof buf - 1)) t.uuid = buf;
      NvmlPciInfo pci{};
      if (Call<int (*)(nvmlDevice_t, NvmlPciInfo*)>("nvmlDeviceGetPciInfo_v3", d, &pci) ||
          Call<int (*)(nvmlDevice_t, NvmlPciInfo*)>("nvmlDeviceGetPciInfo_v2", d, &pci))
        t.pci_bus_id = fmt::format("{:04x}:{:02x}:{:02x}.0", pci.domain & 0xffff, pci.bus & 0xff, pci.device & 0xff);
      unsigned int u = 0;
      if (Call<int (*)(nvmlDevice_t, int, unsigned*)>("nvmlDeviceGetTemperature", d, 0, &u)) t.temp_c = u;
      if (Call<int (*)(nvmlDevice_t, int, unsigned*)>("nvmlDeviceGetTemperatureThreshold", d, 1, &u)) t.temp_slowdown_c = u;
      if (Call<int (*)(nvmlDevice_t, int, unsigned*)>("nvmlDeviceGetTemperatureThreshold", d, 0, &u)) t.temp_shutdown_c = u;
      if (Call<int (*)(nvmlDevice_t, unsigned*)>("nvmlDeviceGetPowerUsage", d, &u)) t.power_w = u / 1000.0;
      if (Call<int (*)(nvmlDevice_t, unsigned*)>("nvmlDeviceGetEnforcedPowerLimit", d, &u)) t.power_limit_w = u / 1000.0;
      if (Call<int (*)(nvmlDevice_t, unsigned*)>("nvmlDeviceGetPowerManagementDefaultLimit", d, &u))
        t.power_default_limit_w = u / 1000.0;
      NvmlUtilization ut{};
      if (Call<int (*)(nvmlDevice_t, NvmlUtilization*)>("nvmlDeviceGetUtilizationRates", d, &ut)) {
        t.util_gpu_pct = ut.gpu;
        t.util_mem_pct = ut.memory;
      }
      NvmlMemory mem{};
      if (Call<int (*)(nvmlDevice_t, NvmlMemory*)>("nvmlDeviceGetMemoryInfo", d, &mem)) {
        t.mem_total_mib = static_cast<double>(mem.total) / 1048576.0;
        t.mem_used_mib = static_cast<double>(mem.used) / 1048576.0;
      }
      if (Call<int (*)(nvmlDevice_t, int, unsigned*)>("nvmlDeviceGetClockInfo", d, 1, &u)) t.sm_clock_mhz = u;
      if (Call<int (*)(nvmlDevice_t, int, unsigned*)>("nvmlDeviceGetMaxClockInfo", d, 1, &u)) t.sm_clock_max_mhz = u;
      if (Call<int (*)(nvmlDevice_t, unsigned*)>("nvmlDeviceGetCurrPcieLinkGeneration", d, &u)) t.pcie_gen_cur = static_cast<int>(u);
      if (Call<int (*)(nvmlDevice_t, unsigned*)>("nvmlDeviceGetMaxPcieLinkGeneration", d, &u)) t.pcie_gen_max = static_cast<int>(u);
      if (Call<int (*)(nvmlDevice_t, unsigned*)>("nvmlDeviceGetCurrPcieLinkWidth", d, &u)) t.pcie_width_cur = static_cast<int>(u);
      if (Call<int (*)(nvmlDevice_t, unsigned*)>("nvmlDeviceGetMaxPcieLinkWidth", d, &u)) t.pcie_width_max = static_cast<int>(u);
      unsigned long long reasons = 0;
      if (Call<int (*)(nvmlDevice_t, unsigned long long*)>("nvmlDeviceGetCurrentClocksEventReasons", d, &reasons) ||
          Call<int (*)(nvmlDevice_t, unsigned long long*)>("nvmlDeviceGetCurrentClocksThrottleReasons", d, &reasons)) {
        t.thr_idle = (reasons & 0x1) != 0;
        t.thr_app_clocks = (reasons & 0x2) != 0;
        t.thr_sw_power_cap = (reasons & 0x4) != 0;
        t.thr_hw_slowdown = (reasons & 0x8) != 0;
        t.thr_sync_boost = (reasons & 0x10) != 0;
        t.thr_sw_thermal = (reasons & 0x20) != 0;
        t.thr_hw_thermal = (reasons & 0x40) != 0;
        t.thr_power_brake = (reasons & 0x80) != 0;
      }
      unsigned long long cnt = 0;
      using EccFn = int (*)(nvmlDevice_t, int, int, unsigned long long*);
      if (Call<EccFn>("nvmlDeviceGetTotalEccErrors", d, 1, 0, &cnt)) t.ecc_vol_uncorr = static_cast<int64_t>(cnt);
      if (Call<EccFn>("nvmlDeviceGetTotalEccErrors", d, 1, 1, &cnt)) t.ecc_agg_uncorr = static_cast<int64_t>(cnt);
      if (Call<EccFn>("nvmlDeviceGetTotalEccErrors", d, 0, 0, &cnt)) t.ecc_vol_corr = static_cast<int64_t>(cnt);
      unsigned int rc_corr = 0, rc_unc = 0, pending = 0, failure = 0;
      if (Call<int (*)(nvmlDevice_t, unsigned*, unsigned*, unsigned*, unsigned*)>("nvmlDeviceGetRemappedRows", d, &rc_corr,
                                                                                &rc_unc, &pending, &failure)) {
        t.remap_corr = rc_corr;
        t.remap_unc = rc_unc;
        t.remap_pending = pending != 0;
        t.remap_failure = failure != 0;
      }
      unsigned int mig_cur = 0, mig_pend = 0;
      if (Call<int (*)(nvmlDevice_t, unsigned*, unsigned*)>("nvmlDeviceGetMigMode", d, &mig_cur, &mig_pend)) {
        t.mig_current = mig_cur ? "Enabled" : "Disabled";
        t.mig_pending = mig_pend ? "Enabled" : "Disabled";
      }
      int maj = 0, min = 0;
      if (Call<int (*)(nvmlDevice_t, int*, int*)>("nvmlDeviceGetCudaComputeCapability", d, &maj, &min))
        t.compute_capability = fmt::format("{}.{}", maj, min);
      out.push_back(std::move(t));
    }
    return out;
  }

  Result<std::string> DriverVersion() override {
    SUANLI_RETURN_IF_ERROR(Load());
    char buf[96] = {0};
    if (Call<int (*)(char*, unsigned)>("nvmlSystemGetDriverVersion", buf, sizeof buf - 1)) return std::string(buf);
    return Unsupported("nvmlSystemGetDriverVersion is not available");
  }

 private:
  Status Load() {
    if (inited_) return Status::Ok();
    if (!load_error_.ok()) return load_error_;
    for (const char* lib : {"libnvidia-ml.so.1", "libnvidia-ml.so"}) {
      handle_ = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
      if (handle_) break;
    }
    if (!handle_) return load_error_ = Unsupported("NVML not available: libnvidia-ml.so.1 could not be loaded (no NVIDIA driver here?)");
    error_string_ = reinterpret_cast<const char* (*)(int)>(Sym({"nvmlErrorString"}));
    auto init = reinterpret_cast<int (*)()>(Sym({"nvmlInit_v2", "nvmlInit"}));
    shutdown_ = reinterpret_cast<int (*)()>(Sym({"nvmlShutdown"}));
    get_count_ = reinterpret_cast<int (*)(unsigned*)>(Sym({"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"}));
    get_handle_ = reinterpret_cast<int (*)(unsigned, nvmlDevice_t*)>(
        Sym({"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"}));
    if (!init || !get_count_ || !get_handle_) return load_error_ = Unsupported("NVML is missing nvmlInit / nvmlDeviceGetCount");
    if (int rc = init(); rc != kNvmlSuccess) return load_error_ = Unsupported(Err("nvmlInit", rc));
    inited_ = true;
    return Status::Ok();
  }
  void* Sym(std::initializer_list<const char*> names) {
    for (const char* n : names)
      if (void* p = dlsym(handle_, n)) return p;
    return nullptr;
  }
  // Calls an optional NVML function; false when the symbol is missing or the call failed
  // (NOT_SUPPORTED is common and means "not available", not an error).
  template <typename Fn, typename... Args>
  bool Call(const char* name, Args... args) {
    auto fn = reinterpret_cast<Fn>(Sym({name}));
    return fn && fn(args...) == kNvmlSuccess;
  }
  std::string Err(const char* what, int rc) const {
    const char* s = error_string_ ? error_string_(rc) : nullptr;
    return fmt::format("{} failed: {} (NVML error {})", what, s ? s : "unknown", rc);
  }

  void* handle_ = nullptr;
  bool inited_ = false;
  Status load_error_;
  const char* (*error_string_)(int) = nullptr;
  int (*shutdown_)() = nullptr;
  int (*get_count_)(unsigned*) = nullptr;
  int (*get_handle_)(unsigned, nvmlDevice_t*) = nullptr;
};

class FakeBackend : public DeviceBackend {
 public:
  FakeBackend(std::vector<GpuTelemetry> gpus, std::string name) : gpus_(std::move(gpus)), name_(std::move(name)) {}
  std::string Name() const override { return "fake:" + name_; }
  Result<std::vector<GpuTelemetry>> Query() override { return gpus_; }
  Result<std::string> DriverVersion() override {
    if (gpus_.empty() || gpus_.front().driver_version.empty()) return Unsupported("profile has no driver version");
    return gpus_.front().driver_version;
  }

 private:
  std::vector<GpuTelemetry> gpus_;
  std::string name_;
};

class UnavailableBackend : public DeviceBackend {
 public:
  explicit UnavailableBackend(std::string m) : message_(std::move(m)) {}
  std::string Name() const override { return "unavailable"; }
  Result<std::vector<GpuTelemetry>> Query() override { return Unsupported(message_); }
  Result<std::string> DriverVersion() override { return Unsupported(message_); }

 private:
  std::string message_;
};

// ---- the real host probe -----------------------------------------------------------------

constexpr std::size_t kMaxCommandOutput = std::size_t{512} << 20;
constexpr int kCommandTimeoutMs = 30000;

class RealHostProbe : public HostProbe {
 public:
  std::optional<std::string> ReadFile(const std::string& path) override {
    auto r = suanli::detail::ReadFile(path, std::size_t{1} << 30);
    if (!r.ok()) return std::nullopt;
    return std::move(r).value();
  }
  std::optional<std::string> GetEnv(const std::string& name) override {
    const char* v = std::getenv(name.c_str());
    return v ? std::optional<std::string>(v) : std::nullopt;
  }
  std::map<std::string, std::string> Environ() override {
    std::map<std::string, std::string> out;
    for (char** e = environ; e && *e; ++e) {
      std::string_view kv(*e);
      auto eq = kv.find('=');
      if (eq != std::string_view::npos) out[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
    }
    return out;
  }
  // fork + execvp (no shell), stdout captured, stderr discarded, killed after the timeout.
  std::optional<std::string> Run(const std::vector<std::string>& argv) override {
    if (argv.empty()) return std::nullopt;
    int fds[2];
    if (pipe(fds) != 0) return std::nullopt;
    pid_t pid = fork();
    if (pid < 0) {
      close(fds[0]);
      close(fds[1]);
      return std::nullopt;
    }
    if (pid == 0) {
      dup2(fds[1], 1);
      int devnull = open("/dev/null", O_WRONLY);
      if (devnull >= 0) dup2(devnull, 2);
      close(fds[0]);
      close(fds[1]);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execvp(args[0], args.data());
      _exit(127);
    }
    close(fds[1]);
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kCommandTimeoutMs);
    bool killed = false;
    char buf[65536];
    while (true) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0) {
        kill(pid, SIGKILL);
        killed = true;
        break;
      }
      pollfd p{fds[0], POLLIN, 0};
      int r = poll(&p, 1, static_cast<int>(left));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) continue;
      ssize_t n = read(fds[0], buf, sizeof buf);
      if (n <= 0) break;
      if (out.size() < kMaxCommandOutput) out.append(buf, static_cast<std::size_t>(n));
    }
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (killed || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      if (out.empty() || killed) return std::nullopt;
    }
    return out;
  }
  std::vector<std::string> ListDir(const std::string& path) override {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(path, ec)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
};

// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14  Thu Feb 22 01:44:30 UTC 2024"
std::string KernelModuleVersion(const std::string& text) {
  std::size_t p = text.find("Kernel Module");
  if (p == std::string::npos) return "";
  std::string_view rest = detail::Trim(std::string_view(text).substr(p + 13));
  std::size_t e = rest.find_first_of(" \t\n");
  return std::string(rest.substr(0, e));
}

// torch/version.py: __version__ = '2.4.0+cu124' ... cuda: Optional[str] = '12.4'
std::optional<std::pair<std::string, std::string>> ReadTorchVersion(const std::string& text) {
  auto quoted_after = [&](std::string_view key) -> std::string {
    std::size_t p = text.find(key);
    if (p == std::string::npos) return "";
    std::size_t eq = text.find('=', p);
    std::size_t nl = text.find('\n', p + 1);
    if (eq == std::string::npos || (nl != std::string::npos && eq > nl)) return "";
    std::size_t q1 = text.find_first_of("'\"", eq);
    if (q1 == std::string::npos || (nl != std::string::npos && q1 > nl)) return "";  // cuda = None
    std::size_t q2 = text.find(text[q1], q1 + 1);
    if (q2 == std::string::npos) return "";
    return text.substr(q1 + 1, q2 - q1 - 1);
  };
  std::string v = quoted_after("__version__");
  if (v.empty()) return std::nullopt;
  std::string cuda;
  std::size_t p = text.find("\ncuda");
  if (p != std::string::npos) cuda = quoted_after(text.substr(p + 1, 5) == "cuda:" ? "\ncuda:" : "\ncuda ");
  return std::make_pair(v, cuda);
}

Finding Note(std::string code, State st, std::string title, std::string action = "") {
  Finding f;
  f.code = std::move(code);
  f.state = st;
  f.title = std::move(title);
  f.action = std::move(action);
  return f;
}

// The CSV header the bundle writer uses for NVML telemetry: the same names as
// nvidia-smi --query-gpu, so ParseSmiCsv reads it back.
std::string TelemetryCsv(const std::vector<GpuTelemetry>& gpus) {
  std::string s =
      "index, pci.bus_id, name, uuid, driver_version, compute_cap, temperature.gpu, power.draw [W], "
      "enforced.power.limit [W], power.default_limit [W], utilization.gpu [%], memory.total [MiB], memory.used [MiB], "
      "clocks.current.sm [MHz], clocks.max.sm [MHz], pcie.link.gen.gpucurrent, pcie.link.gen.gpumax, "
      "pcie.link.width.current, pcie.link.width.max, clocks_event_reasons.gpu_idle, clocks_event_reasons.sw_power_cap, "
      "clocks_event_reasons.hw_slowdown, clocks_event_reasons.hw_thermal_slowdown, "
      "clocks_event_reasons.sw_thermal_slowdown, clocks_event_reasons.hw_power_brake_slowdown, "
      "clocks_event_reasons.sync_boost, ecc.errors.uncorrected.volatile.total, ecc.errors.uncorrected.aggregate.total, "
      "ecc.errors.corrected.volatile.total, remapped_rows.pending, remapped_rows.failure, mig.mode.current, "
      "mig.mode.pending\n";
  auto d = [](const std::optional<double>& v) { return v ? fmt::format("{:.2f}", *v) : std::string("[N/A]"); };
  auto i = [](const auto& v) { return v ? fmt::format("{}", *v) : std::string("[N/A]"); };
  auto a = [](const std::optional<bool>& v) { return v ? (*v ? "Active" : "Not Active") : "[N/A]"; };
  auto y = [](const std::optional<bool>& v) { return v ? (*v ? "Yes" : "No") : "[N/A]"; };
  auto str = [](const std::string& v) { return v.empty() ? std::string("[N/A]") : v; };
  for (const auto& g : gpus) {
    s += fmt::format("{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, "
                     "{}, {}, {}, {}, {}, {}, {}, {}\n",
                     i(g.index), str(g.pci_bus_id), str(g.name), str(g.uuid), str(g.driver_version),
                     g.compute_capability.value_or("[N/A]"), d(g.temp_c), d(g.power_w), d(g.power_limit_w),
                     d(g.power_default_limit_w), d(g.util_gpu_pct), d(g.mem_total_mib), d(g.mem_used_mib),
                     d(g.sm_clock_mhz), d(g.sm_clock_max_mhz), i(g.pcie_gen_cur), i(g.pcie_gen_max), i(g.pcie_width_cur),
                     i(g.pcie_width_max), a(g.thr_idle), a(g.thr_sw_power_cap), a(g.thr_hw_slowdown), a(g.thr_hw_thermal),
                     a(g.thr_sw_thermal), a(g.thr_power_brake), a(g.thr_sync_boost), i(g.ecc_vol_uncorr),
                     i(g.ecc_agg_uncorr), i(g.ecc_vol_corr), y(g.remap_pending), y(g.remap_failure),
                     g.mig_current.value_or("[N/A]"), g.mig_pending.value_or("[N/A]"));
  }
  return s;
}

struct Collected {
  std::optional<std::string> kernel_log, smi_xml, smi_apps_csv;
  std::string kernel_log_source;
  std::map<std::string, std::string> facts;
  std::vector<GpuTelemetry> gpus;
  std::vector<Finding> notes;
};

Collected Collect(HostProbe& host, DeviceBackend& device) {
  Collected c;
  auto gpus = device.Query();
  if (gpus.ok()) {
    c.gpus = *gpus;
    if (c.gpus.empty()) c.notes.push_back(Note("nvml.no_gpus", State::kWarn, "NVML reports no GPUs"));
  } else {
    Finding f = Note("nvml.unavailable", State::kSkip, "Live GPU telemetry not available: " + gpus.status().message(),
                     "Install the NVIDIA driver, or diagnose offline with --smi-xml/--bundle.");
    if (detail::Contains(gpus.status().message(), "mismatch")) {
      f.title = "NVML: Driver/library version mismatch";
      f.evidence.push_back(Evidence{"live:nvml", 0, gpus.status().message()});
    }
    c.notes.push_back(f);
  }
  if (auto v = device.DriverVersion(); v.ok()) {
    c.facts["nvml_library_version"] = *v;
    c.facts["driver"] = *v;
  }
  if (auto h = host.ReadFile("/proc/sys/kernel/hostname")) {
    std::string name(detail::Trim(*h));
    if (!name.empty()) c.facts["hostname"] = name;
  }
  if (auto v = host.ReadFile("/proc/driver/nvidia/version")) {
    std::string km = KernelModuleVersion(*v);
    if (!km.empty()) {
      c.facts["kernel_module_version"] = km;
      if (!c.facts.count("driver")) c.facts["driver"] = km;
    }
  }
  // NVIDIA GPUs on the PCI bus (vendor 0x10de, display class 0x03xxxx), independent of the
  // driver: lets the rules tell "no GPU here" from "GPU present but driver unusable / GPU lost".
  {
    std::string ids;
    int n = 0;
    for (const auto& dev : host.ListDir("/sys/bus/pci/devices")) {
      auto vendor = host.ReadFile("/sys/bus/pci/devices/" + dev + "/vendor");
      if (!vendor || detail::Trim(*vendor) != "0x10de") continue;
      auto cls = host.ReadFile("/sys/bus/pci/devices/" + dev + "/class");
      if (!cls || !detail::StartsWith(detail::Trim(*cls), "0x03")) continue;
      ids += (ids.empty() ? "" : ",") + NormalizeBusId(dev);
      if (++n >= 1024) break;
    }
    c.facts["pci_nvidia_gpus"] = ids.empty() ? "none" : ids;
  }
  // Kernel log: dmesg, then the journal; both may be restricted for ordinary users.
  if (auto k = host.Run({"dmesg"}); k && !k->empty()) {
    c.kernel_log = std::move(k);
    c.kernel_log_source = "live:dmesg";
  } else if (auto j = host.Run({"journalctl", "-k", "-b", "--no-pager", "-q"}); j && !j->empty()) {
    c.kernel_log = std::move(j);
    c.kernel_log_source = "live:journalctl -k";
  } else {
    c.notes.push_back(Note("kernel.unreadable", State::kSkip,
                           "Kernel log not readable (dmesg restricted for this user: kernel.dmesg_restrict)",
                           "Run as a user allowed to read the kernel log, or pass --kernel-log FILE."));
  }
  if (auto x = host.Run({"nvidia-smi", "-q", "-x"}); x && !x->empty()) c.smi_xml = std::move(x);
  if (auto a = host.Run({"nvidia-smi", "--query-compute-apps=pid,process_name,used_gpu_memory,gpu_bus_id", "--format=csv"});
      a && !a->empty())
    c.smi_apps_csv = std::move(a);
  // Environment.
  auto env = host.Environ();
  if (auto it = env.find("CUDA_VISIBLE_DEVICES"); it != env.end()) c.facts["cuda_visible_devices"] = it->second;
  for (const auto& [k, v] : env)
    if (detail::StartsWith(k, "NCCL_")) {
      std::string key;
      for (char ch : k) key.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
      c.facts[key] = v;
    }
  // CUDA user-space libraries the dynamic loader knows (driver API and runtimes).
  if (auto l = host.Run({"ldconfig", "-p"})) {
    std::set<std::string> libs;
    detail::ForEachLine(*l, [&](std::string_view line, int64_t) {
      line = detail::Trim(line);
      for (std::string_view lib : {std::string_view("libcuda.so."), std::string_view("libcudart.so."),
                                   std::string_view("libnvidia-ml.so."), std::string_view("libnccl.so.")}) {
        if (detail::StartsWith(line, lib)) {
          std::size_t sp = line.find_first_of(" \t");
          libs.insert(std::string(line.substr(0, sp)));
        }
      }
      return libs.size() < 64;
    });
    std::string s;
    for (const auto& x : libs) s += (s.empty() ? "" : ",") + x;
    c.facts["cuda_libraries"] = s.empty() ? "none" : s;
  }
  std::vector<std::string> toolkits;
  for (const auto& n : host.ListDir("/usr/local"))
    if (detail::StartsWith(n, "cuda-")) toolkits.push_back(n.substr(5));
  if (!toolkits.empty()) {
    std::string s;
    for (const auto& t : toolkits) s += (s.empty() ? "" : ",") + t;
    c.facts["cuda_toolkits"] = s;
  }
  // PyTorch: read torch/version.py from the interpreter's search path; nothing is imported.
  std::vector<std::string> paths;
  if (auto p = host.Run({"python3", "-c", "import sys; print('\\n'.join(sys.path))"})) {
    detail::ForEachLine(*p, [&](std::string_view l, int64_t) {
      l = detail::Trim(l);
      if (!l.empty()) paths.emplace_back(l);
      return paths.size() < 64;
    });
  }
  for (const auto& p : paths) {
    auto v = host.ReadFile(p + "/torch/version.py");
    if (!v) continue;
    if (auto tv = ReadTorchVersion(*v)) {
      c.facts["torch"] = tv->first;
      if (!tv->second.empty()) c.facts["torch_cuda"] = tv->second;
      c.facts["torch_path"] = p + "/torch";
    }
    break;
  }
  return c;
}

}  // namespace

std::unique_ptr<HostProbe> MakeRealHostProbe() { return std::make_unique<RealHostProbe>(); }
std::unique_ptr<DeviceBackend> MakeNvmlBackend() { return std::make_unique<NvmlBackend>(); }
std::unique_ptr<DeviceBackend> MakeUnavailableBackend(std::string message) {
  return std::make_unique<UnavailableBackend>(std::move(message));
}

Result<std::unique_ptr<DeviceBackend>> MakeFakeBackend(std::string_view smi_xml_profile, std::string name) {
  auto gpus = ParseSmiXml(smi_xml_profile, "profile:" + name);
  if (!gpus.ok()) return gpus.status();
  for (auto& g : *gpus) g.origin = "live:fake:" + name;
  return std::unique_ptr<DeviceBackend>(std::make_unique<FakeBackend>(std::move(gpus).value(), name));
}

void CollectLive(HostProbe& host, DeviceBackend& device, DoctorInputs* inputs) {
  Collected c = Collect(host, device);
  for (auto& g : c.gpus) inputs->gpus.push_back(std::move(g));
  for (const auto& [k, v] : c.facts)
    if (!inputs->facts.count(k)) inputs->facts[k] = v;
  for (auto& n : c.notes) inputs->collection_notes.push_back(std::move(n));
  if (c.kernel_log) inputs->kernel_logs.push_back({c.kernel_log_source, std::move(*c.kernel_log)});
  if (c.smi_xml) inputs->smi_xml.push_back({"live:nvidia-smi -q -x", std::move(*c.smi_xml)});
  if (c.smi_apps_csv) inputs->smi_csv.push_back({"live:nvidia-smi --query-compute-apps", std::move(*c.smi_apps_csv)});
}

Result<std::vector<std::string>> WriteBundle(HostProbe& host, DeviceBackend& device, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return IoError(fmt::format("cannot create {}: {}", dir, ec.message()));
  Collected c = Collect(host, device);
  std::vector<std::string> written;
  auto write = [&](const std::string& name, std::string_view content) -> Status {
    const std::string path = (std::filesystem::path(dir) / name).string();
    SUANLI_RETURN_IF_ERROR(suanli::detail::WriteFileAtomic(path, content));
    written.push_back(path);
    return Status::Ok();
  };
  if (c.kernel_log) SUANLI_RETURN_IF_ERROR(write("kernel.log", *c.kernel_log));
  if (c.smi_xml) SUANLI_RETURN_IF_ERROR(write("nvidia-smi.xml", *c.smi_xml));
  if (c.smi_apps_csv) SUANLI_RETURN_IF_ERROR(write("nvidia-smi-apps.csv", *c.smi_apps_csv));
  if (!c.gpus.empty()) SUANLI_RETURN_IF_ERROR(write("nvml.csv", TelemetryCsv(c.gpus)));
  std::string facts = "# suanli doctor collect: facts about this machine (KEY=VALUE)\n";
  for (const auto& [k, v] : c.facts) facts += k + "=" + v + "\n";
  SUANLI_RETURN_IF_ERROR(write("facts.env", facts));
  std::string manifest = fmt::format("{{\"schema\": \"suanli.doctor.bundle/1\", \"suanli_version\": \"{}\", \"backend\": \"{}\", "
                                     "\"notes\": [",
                                     SUANLI_VERSION, device.Name());
  for (std::size_t i = 0; i < c.notes.size(); ++i) {
    std::string t;
    for (char ch : c.notes[i].title) {
      if (ch == '"' || ch == '\\') t.push_back('\\');
      if (static_cast<unsigned char>(ch) >= 0x20) t.push_back(ch);
    }
    manifest += fmt::format("{}\"{}: {}\"", i ? ", " : "", c.notes[i].code, t);
  }
  manifest += "]}\n";
  SUANLI_RETURN_IF_ERROR(write("manifest.json", manifest));
  return written;
}

}  // namespace suanli::doctor
