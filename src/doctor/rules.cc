// The doctor rules: pure functions from typed inputs and knowledge to findings.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "doctor/util.h"
#include "suanli/doctor.h"

namespace suanli::doctor {

namespace {

using detail::Clip;
using detail::Contains;

constexpr std::size_t kMaxEvidencePerFinding = 6;

struct Ctx {
  const DoctorKnowledge& k;
  std::vector<Finding>* out;
  std::map<std::string, int> bus_to_index;  // local GPUs
  std::map<std::string, std::string> bus_to_name;
  std::string driver;          // local driver version, when known
  std::string driver_origin;   // where it came from
};

Finding& Add(Ctx& c, std::string code, State st, std::string title) {
  Finding f;
  f.code = std::move(code);
  f.state = st;
  f.title = std::move(title);
  c.out->push_back(std::move(f));
  return c.out->back();
}

void SetGpu(Ctx& c, Finding& f, const std::string& bus) {
  f.pci_bus_id = bus;
  auto it = c.bus_to_index.find(bus);
  if (it != c.bus_to_index.end()) f.gpu_index = it->second;
}

void SetGpu(Finding& f, const GpuTelemetry& g) {
  f.gpu_index = g.index;
  f.pci_bus_id = g.pci_bus_id;
  f.host = g.host;
}

Evidence Ev(const GpuTelemetry& g, const std::string& text) { return Evidence{g.origin, g.origin_line, text}; }

std::string F1(double v) { return fmt::format("{:.1f}", v); }
std::string F0(double v) { return fmt::format("{:.0f}", v); }

// ---- compatibility helpers ---------------------------------------------------------------

struct TorchInfo {
  std::string version;   // "2.4.0"
  std::string release;   // "2.4"
  std::string tag;       // "cu124", "cpu", "rocm6.1" or ""
  std::string cuda;      // "12.4" (from the tag or torch.version.cuda)
};

std::optional<TorchInfo> ParseTorch(const std::map<std::string, std::string>& facts) {
  auto it = facts.find("torch");
  if (it == facts.end() || it->second.empty()) return std::nullopt;
  TorchInfo t;
  std::string v = it->second;
  if (auto plus = v.find('+'); plus != std::string::npos) {
    t.tag = v.substr(plus + 1);
    v = v.substr(0, plus);
  }
  t.version = v;
  auto parts = detail::Split(v, '.');
  t.release = parts.size() >= 2 ? std::string(parts[0]) + "." + std::string(parts[1]) : v;
  if (detail::StartsWith(t.tag, "cu") && t.tag.size() >= 5) {
    std::string d = t.tag.substr(2);  // "124" -> "12.4", "118" -> "11.8"
    t.cuda = d.substr(0, d.size() - 1) + "." + d.substr(d.size() - 1);
  }
  if (auto c = facts.find("torch_cuda"); c != facts.end() && !c->second.empty() && c->second != "None") {
    t.cuda = c->second;
    if (t.tag.empty()) {
      auto cp = detail::Split(c->second, '.');
      if (cp.size() >= 2) t.tag = "cu" + std::string(cp[0]) + std::string(cp[1]);
    }
  }
  return t;
}

int Major(const std::string& v) { return static_cast<int>(detail::LeadingInt(v).value_or(0)); }

// The oldest (GA) minimum driver for a CUDA version "12.4".
const CudaDriverMin* GaMin(const DoctorKnowledge& k, const std::string& cuda) {
  const CudaDriverMin* best = nullptr;
  for (const auto& c : k.cuda_driver_min) {
    if (c.cuda == cuda && (!best || CompareVersions(c.min_driver, best->min_driver) < 0)) best = &c;
  }
  return best;
}

const MinorCompat* Floor(const DoctorKnowledge& k, int major) {
  for (const auto& m : k.minor_compat)
    if (m.cuda_major == major) return &m;
  return nullptr;
}

// Newest CUDA version whose full-support minimum driver is <= driver.
std::string MaxCudaForDriver(const DoctorKnowledge& k, const std::string& driver) {
  std::string best;
  for (const auto& c : k.cuda_driver_min) {
    if (CompareVersions(c.min_driver, driver) <= 0 && (best.empty() || CompareVersions(c.cuda, best) > 0)) best = c.cuda;
  }
  return best;
}

// Does a wheel work with this driver: full (>= GA minimum) or via minor-version compat.
enum class Fit { kFull, kMinorCompat, kNo, kUnknown };
Fit DriverFits(const DoctorKnowledge& k, const std::string& cuda, const std::string& driver) {
  const CudaDriverMin* ga = GaMin(k, cuda);
  const MinorCompat* fl = Floor(k, Major(cuda));
  if (!ga && !fl) return Fit::kUnknown;
  if (ga && CompareVersions(driver, ga->min_driver) >= 0) return Fit::kFull;
  if (fl && CompareVersions(driver, fl->min_driver) >= 0) return Fit::kMinorCompat;
  return Fit::kNo;
}

std::string TagToCuda(const std::string& tag) {
  if (!detail::StartsWith(tag, "cu") || tag.size() < 5) return "";
  std::string d = tag.substr(2);
  return d.substr(0, d.size() - 1) + "." + d.substr(d.size() - 1);
}

const WheelArchs* FindWheel(const DoctorKnowledge& k, const TorchInfo& t) {
  for (const auto& w : k.wheel_archs) {
    if (w.tag != t.tag) continue;
    if (CompareVersions(t.release, w.torch_min) >= 0 && CompareVersions(t.release, w.torch_max) <= 0) return &w;
  }
  return nullptr;
}

std::optional<std::string> ComputeCapability(const DoctorKnowledge& k, const GpuTelemetry& g,
                                             const std::map<std::string, std::string>& facts) {
  if (g.compute_capability) return g.compute_capability;
  for (const auto& a : k.gpu_arch_by_name)
    if (!g.name.empty() && detail::ContainsNoCase(g.name, a.match)) return a.cc;
  if (auto it = facts.find("compute_cap"); it != facts.end()) return it->second;
  return std::nullopt;
}

// -1: GPU older than every arch in the wheel; 0: not covered; 1: covered.
int WheelCovers(const WheelArchs& w, const std::string& cc) {
  const int cmaj = Major(cc);
  const auto cparts = detail::Split(cc, '.');
  const int cmin = cparts.size() > 1 ? static_cast<int>(detail::LeadingInt(cparts[1]).value_or(0)) : 0;
  bool older_than_all = true;
  for (const auto& a : w.archs) {
    const bool ptx = Contains(a, "+PTX");
    std::string base = a.substr(0, a.find('+'));
    const int amaj = Major(base);
    auto ap = detail::Split(base, '.');
    const int amin = ap.size() > 1 ? static_cast<int>(detail::LeadingInt(ap[1]).value_or(0)) : 0;
    if (std::make_pair(amaj, amin) <= std::make_pair(cmaj, cmin)) older_than_all = false;
    if (amaj == cmaj && amin <= cmin) return 1;  // SASS is compatible within a major version
    if (ptx && std::make_pair(amaj, amin) <= std::make_pair(cmaj, cmin)) return 1;  // JIT from PTX
  }
  return older_than_all ? -1 : 0;
}

std::string Join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// ---- environment rules ------------------------------------------------------------------------

Evidence AppEvidence(const AppEvent& e) { return Evidence{e.file, e.line, e.text}; }

// One FAIL finding carrying every application-log event of `kind` as evidence (capped); none when absent.
void FailOnAppEvents(Ctx& c, const std::vector<AppEvent>& app, AppEventKind kind, const char* code, const char* title,
                     const char* cause, const char* action, const char* source) {
  std::vector<Evidence> ev;
  for (const auto& e : app)
    if (e.kind == kind && ev.size() < kMaxEvidencePerFinding) ev.push_back(AppEvidence(e));
  if (ev.empty()) return;
  Finding& f = Add(c, code, State::kFail, title);
  f.evidence = ev;
  f.cause = cause;
  f.action = action;
  f.source = source;
}

void EnvRules(Ctx& c, const DoctorInputs& in, const std::vector<GpuTelemetry>& gpus, const std::vector<AppEvent>& app) {
  const DoctorKnowledge& k = c.k;
  auto torch = ParseTorch(in.facts);
  auto fact_ev = [&](const std::string& key) {
    auto it = in.facts.find(key);
    return Evidence{"facts", 0, key + "=" + (it == in.facts.end() ? "" : it->second)};
  };
  const auto app_ev = AppEvidence;

  // Driver too old for the wheel's CUDA runtime.
  std::vector<const AppEvent*> too_old;
  for (const auto& e : app)
    if (e.kind == AppEventKind::kDriverTooOld) too_old.push_back(&e);
  if (torch && !torch->cuda.empty() && !c.driver.empty()) {
    const Fit fit = DriverFits(k, torch->cuda, c.driver);
    const CudaDriverMin* ga = GaMin(k, torch->cuda);
    const MinorCompat* fl = Floor(k, Major(torch->cuda));
    const std::string max_cuda = MaxCudaForDriver(k, c.driver);
    // Wheels of this torch release that fit the driver fully.
    std::vector<std::string> fitting;
    for (const auto& r : k.torch_releases) {
      if (r.version != torch->release) continue;
      for (const auto& tag : r.cuda_tags)
        if (DriverFits(k, TagToCuda(tag), c.driver) == Fit::kFull) fitting.push_back(tag);
    }
    std::vector<std::string> fitting_minor;
    for (const auto& r : k.torch_releases) {
      if (r.version != torch->release) continue;
      for (const auto& tag : r.cuda_tags)
        if (DriverFits(k, TagToCuda(tag), c.driver) == Fit::kMinorCompat) fitting_minor.push_back(tag);
    }
    if (fitting.empty() && !fitting_minor.empty())
      fitting.push_back(fitting_minor.front() + " (runs through CUDA minor-version compatibility)");
    std::string alt = fitting.empty()
                          ? fmt::format("no {} wheel fits this driver fully; upgrade the driver", torch->release)
                          : fmt::format("or install torch {} with +{} (--index-url https://download.pytorch.org/whl/{})",
                                        torch->release, fitting.back(), fitting.back().substr(0, fitting.back().find(' ')));
    if (fit == Fit::kNo || !too_old.empty()) {
      Finding& f = Add(c, "env.driver_too_old", State::kFail,
                       fmt::format("Driver {} is too old for torch {} (CUDA {} runtime)", c.driver, torch->version,
                                   torch->cuda));
      f.evidence = {Evidence{c.driver_origin, 0, "driver=" + c.driver}, fact_ev("torch")};
      for (const auto* e : too_old)
        if (f.evidence.size() < kMaxEvidencePerFinding) f.evidence.push_back(app_ev(*e));
      f.cause = fmt::format("The driver supports CUDA up to {}; the wheel bundles the CUDA {} runtime, which needs "
                            "driver >= {} (>= {} for CUDA {}.x minor-version compatibility).",
                            max_cuda.empty() ? "?" : max_cuda, torch->cuda, ga ? ga->min_driver : "?",
                            fl ? fl->min_driver : "?", Major(torch->cuda));
      f.action = fmt::format("Upgrade the driver to >= {}, {}.", ga ? ga->min_driver : (fl ? fl->min_driver : "?"), alt);
      f.source = ga ? ga->source : (fl ? fl->source : "");
    } else if (fit == Fit::kMinorCompat) {
      Finding& f = Add(c, "env.driver_too_old", State::kWarn,
                       fmt::format("Driver {} runs torch +{} only through CUDA minor-version compatibility",
                                   c.driver, torch->tag));
      f.evidence = {Evidence{c.driver_origin, 0, "driver=" + c.driver}, fact_ev("torch")};
      f.cause = fmt::format("The driver supports CUDA up to {}; CUDA {} needs driver >= {} for full support. "
                            "Kernels built as PTX for a newer toolkit fail to JIT (CUDA_ERROR_UNSUPPORTED_PTX_VERSION) "
                            "and features that need a newer driver are missing.",
                            max_cuda.empty() ? "?" : max_cuda, torch->cuda, ga ? ga->min_driver : "?");
      f.action = fmt::format("Upgrade the driver to >= {}, {}.", ga ? ga->min_driver : "?", alt);
      f.source = ga ? ga->source : "";
    } else if (fit == Fit::kFull) {
      Finding& f = Add(c, "env.driver_too_old", State::kPass,
                       fmt::format("Driver {} supports torch {} (CUDA {})", c.driver, torch->version, torch->cuda));
      f.evidence = {Evidence{c.driver_origin, 0, "driver=" + c.driver}, fact_ev("torch")};
      f.source = ga ? ga->source : "";
    }
  } else if (!too_old.empty()) {
    const AppEvent& e = *too_old.front();
    Finding& f = Add(c, "env.driver_too_old", State::kFail, "The NVIDIA driver is too old for the CUDA runtime in use");
    for (const auto* x : too_old)
      if (f.evidence.size() < kMaxEvidencePerFinding) f.evidence.push_back(app_ev(*x));
    std::string supported;
    if (e.numbers.count("found_cuda")) {
      const int v = static_cast<int>(e.numbers.at("found_cuda"));
      supported = fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
    }
    f.cause = supported.empty() ? "The application's CUDA runtime is newer than the driver supports."
                                : fmt::format("The driver supports CUDA up to {} (the 'found version' number); the "
                                              "application's CUDA runtime is newer.",
                                              supported);
    std::vector<std::string> tags;
    if (!supported.empty()) {
      for (const auto& r : k.torch_releases)
        if (torch && r.version == torch->release)
          for (const auto& t : r.cuda_tags)
            if (CompareVersions(TagToCuda(t), supported) <= 0) tags.push_back(t);
    }
    f.action = "Upgrade the driver (see the CUDA release notes' minimum driver table), or install a wheel built "
               "for the CUDA version the driver supports" +
               (tags.empty() ? std::string(".") : " (" + Join(tags) + ").") +
               " Pass --env driver=X --env torch=Y for an exact answer.";
    f.source = k.error_signatures.empty() ? "" : k.error_signatures.front().source;
  }

  // Torch CPU build.
  {
    std::vector<Evidence> ev;
    for (const auto& e : app)
      if (e.kind == AppEventKind::kTorchNoCuda && ev.size() < kMaxEvidencePerFinding) ev.push_back(app_ev(e));
    const bool cpu_fact = torch && torch->tag == "cpu";
    if (!ev.empty() || (cpu_fact && !gpus.empty())) {
      if (cpu_fact) ev.insert(ev.begin(), fact_ev("torch"));
      Finding& f = Add(c, "env.torch_cpu_only", State::kFail, "A CPU-only PyTorch build is installed");
      f.evidence = ev;
      f.cause = "The installed torch wheel has no CUDA support (+cpu build or installed from the CPU index).";
      f.action = "Reinstall torch from a CUDA index, e.g. pip install torch --index-url "
                 "https://download.pytorch.org/whl/cu126 (pick the tag that fits your driver).";
      f.source = "torch/cuda/__init__.py (compat.md 3e)";
    }
  }

  // Architecture coverage of the wheel.
  std::set<std::string> arch_reported;
  if (torch && !torch->tag.empty() && torch->tag != "cpu") {
    const WheelArchs* w = FindWheel(k, *torch);
    for (const auto& g : gpus) {
      if (!g.host.empty()) continue;
      auto cc = ComputeCapability(k, g, in.facts);
      if (!cc) continue;
      if (!w) {
        // A wheel flavour we have no architecture list for (a nightly, a custom build): fall back
        // to the range the CUDA major compiles for. Only "outside the range" is certain.
        const ArchSupport* range = nullptr;
        for (const auto& a : k.arch_support)
          if (a.cuda_major == Major(torch->cuda)) range = &a;
        if (!range || torch->cuda.empty()) continue;
        const bool below = CompareVersions(*cc, range->min_cc) < 0;
        const bool above = CompareVersions(*cc, range->max_cc) > 0;
        if (!below && !above) continue;
        const std::string code = below ? "env.gpu_too_old_for_wheel" : "env.arch_not_in_wheel";
        if (!arch_reported.insert(code + *cc).second) continue;
        Finding& f = Add(c, code, State::kWarn,
                         fmt::format("{} (compute capability {}) is outside what CUDA {}.x compiles for ({}-{})", g.name,
                                     *cc, Major(torch->cuda), range->min_cc, range->max_cc));
        SetGpu(f, g);
        f.evidence = {fact_ev("torch"), Ev(g, fmt::format("name = {}; compute capability = {}", g.name, *cc))};
        f.cause = fmt::format("No architecture list is known for +{}; CUDA {}.x toolkits compile for compute "
                              "capability {} to {}, so this wheel cannot contain kernels for this GPU.",
                              torch->tag, Major(torch->cuda), range->min_cc, range->max_cc);
        f.action = below ? "Use a wheel built with an older CUDA major that still supports this GPU."
                         : "Use a wheel built with a newer CUDA that supports this GPU.";
        f.source = range->source;
        continue;
      }
      const int cov = WheelCovers(*w, *cc);
      if (cov == 1) continue;
      const std::string code = cov < 0 ? "env.gpu_too_old_for_wheel" : "env.arch_not_in_wheel";
      if (!arch_reported.insert(code + *cc).second) continue;
      Finding& f = Add(c, code, State::kFail,
                       cov < 0 ? fmt::format("{} (compute capability {}) is older than every architecture in torch {}+{}",
                                             g.name, *cc, torch->release, torch->tag)
                               : fmt::format("torch {}+{} has no kernels for {} (compute capability {})",
                                             torch->release, torch->tag, g.name, *cc));
      SetGpu(f, g);
      f.evidence = {fact_ev("torch"), Ev(g, fmt::format("name = {}; compute capability = {}", g.name, *cc)),
                    Evidence{"data/doctor/compat.toml", 0,
                             fmt::format("{} wheel architectures: {}", w->tag, Join(w->archs, " "))}};
      for (const auto& e : app)
        if ((e.kind == AppEventKind::kNoKernelImage || e.kind == AppEventKind::kArchWarning ||
             e.kind == AppEventKind::kGpuTooOld) &&
            f.evidence.size() < kMaxEvidencePerFinding)
          f.evidence.push_back(app_ev(e));
      f.cause = cov < 0 ? "The wheel dropped this GPU's architecture (binary size); CUDA errors such as 'no kernel "
                          "image is available' follow."
                        : "The wheel carries neither SASS for this major architecture nor PTX old enough to JIT.";
      std::vector<std::string> good;
      for (const auto& ww : k.wheel_archs)
        if (CompareVersions(torch->release, ww.torch_min) >= 0 && CompareVersions(torch->release, ww.torch_max) <= 0 &&
            WheelCovers(ww, *cc) == 1)
          good.push_back(ww.tag);
      f.action = good.empty() ? "Install a torch release whose wheels include this architecture (see pytorch.org "
                                "get-started), or build from source with TORCH_CUDA_ARCH_LIST set."
                              : fmt::format("Install torch {} with +{} which includes it.", torch->release, Join(good, " or +"));
      f.source = w->source;
    }
  }
  // App-log evidence of missing kernels without enough facts to name the wheel.
  if (arch_reported.empty()) {
    std::vector<Evidence> ev;
    bool too_old_gpu = false;
    for (const auto& e : app) {
      if (e.kind == AppEventKind::kNoKernelImage || e.kind == AppEventKind::kArchWarning ||
          e.kind == AppEventKind::kGpuTooOld) {
        if (e.kind == AppEventKind::kGpuTooOld) too_old_gpu = true;
        if (ev.size() < kMaxEvidencePerFinding) ev.push_back(app_ev(e));
      }
    }
    if (!ev.empty()) {
      Finding& f = Add(c, too_old_gpu ? "env.gpu_too_old_for_wheel" : "env.arch_not_in_wheel", State::kFail,
                       too_old_gpu ? "The GPU is older than the installed PyTorch supports"
                                   : "The installed binaries have no kernels for this GPU's architecture");
      f.evidence = ev;
      f.cause = "The wheel (or extension) was not compiled for this GPU's compute capability and has no PTX it can JIT.";
      f.action = "Install a wheel whose architecture list includes the GPU (RTX 50 / B200 need cu128 or newer; "
                 "Pascal/Volta need cu126 or older), or rebuild the extension with TORCH_CUDA_ARCH_LIST. Pass "
                 "--env torch=VERSION+TAG for the exact wheel.";
      f.source = "pytorch/pytorch RELEASE.md CUDA support matrix (compat.md 3d)";
    }
  }

  auto simple = [&](AppEventKind kind, const char* code, const char* title, const char* cause, const char* action,
                    const char* source) { FailOnAppEvents(c, app, kind, code, title, cause, action, source); };
  simple(AppEventKind::kForkAfterInit, "env.fork_after_cuda_init", "CUDA was initialised before a fork()",
         "A DataLoader worker or multiprocessing child forked a process that had already initialised CUDA; CUDA "
         "state cannot be inherited across fork.",
         "Use multiprocessing.set_start_method('spawn') (or 'forkserver'), or do not touch CUDA before the workers "
         "start.",
         "torch/cuda/__init__.py (compat.md 3e)");
  simple(AppEventKind::kMissingCudaLib, "env.cuda_library_missing", "A CUDA library could not be loaded",
         "The binary needs a CUDA runtime/library version that is not installed or not on the loader path "
         "(e.g. a CUDA 13 extension on a CUDA 12 system).",
         "Install the matching CUDA runtime (or the wheel built for your CUDA), or fix LD_LIBRARY_PATH.",
         "dynamic loader message (compat.md 3e)");

  // NVML / driver mismatch.
  {
    std::vector<Evidence> ev;
    for (const auto& e : app)
      if (e.kind == AppEventKind::kNvmlMismatch && ev.size() < kMaxEvidencePerFinding) ev.push_back(app_ev(e));
    for (const auto& note : in.collection_notes)
      if (Contains(note.title, "version mismatch"))
        for (const auto& e : note.evidence) ev.push_back(e);
    auto kmod = in.facts.find("kernel_module_version");
    auto lib = in.facts.find("nvml_library_version");
    if (kmod != in.facts.end() && lib != in.facts.end() && !kmod->second.empty() && !lib->second.empty() &&
        kmod->second != lib->second) {
      ev.push_back(fact_ev("kernel_module_version"));
      ev.push_back(fact_ev("nvml_library_version"));
    }
    if (!ev.empty()) {
      Finding& f = Add(c, "env.nvml_mismatch", State::kFail, "NVIDIA kernel module and user-space driver differ");
      f.evidence = ev;
      f.cause = "The driver was upgraded (packages replaced) while the old kernel module stayed loaded.";
      f.action = "Reboot the node (or stop every GPU process, unload and reload the nvidia modules).";
      f.source = "NVML error text (compat.md 3e)";
    }
  }

  // GPUs on the PCI bus vs GPUs the driver reports (live collection fills pci_nvidia_gpus).
  if (auto it = in.facts.find("pci_nvidia_gpus"); it != in.facts.end()) {
    std::vector<std::string> pci;
    if (it->second != "none")
      for (auto id : detail::Split(it->second, ','))
        if (!id.empty()) pci.push_back(NormalizeBusId(id));
    std::vector<std::string> seen, missing;
    for (const auto& g : gpus)
      if (g.host.empty() && !g.pci_bus_id.empty()) seen.push_back(g.pci_bus_id);
    for (const auto& id : pci)
      if (std::find(seen.begin(), seen.end(), id) == seen.end()) missing.push_back(id);
    if (pci.empty() && seen.empty()) {
      Finding& f = Add(c, "gpu.none", State::kSkip, "No NVIDIA GPU on this machine's PCI bus: GPU checks do not apply");
      f.evidence = {fact_ev("pci_nvidia_gpus")};
    } else if (!pci.empty() && seen.empty()) {
      Finding& f = Add(c, "env.driver_not_loaded", State::kFail,
                       fmt::format("{} NVIDIA GPU(s) on the PCI bus but the driver reports none", pci.size()));
      f.evidence = {fact_ev("pci_nvidia_gpus")};
      for (const auto& n : in.collection_notes)
        if (n.code == "nvml.unavailable") f.evidence.push_back(Evidence{"live:nvml", 0, n.title});
      f.cause = "The NVIDIA kernel module is not loaded or failed to initialise (driver not installed, secure boot "
                "refusing an unsigned module, a driver/kernel mismatch after a kernel update), or the libraries are "
                "missing in this container.";
      f.action = "Check `lsmod | grep nvidia` and the kernel log for NVRM errors; reinstall the driver for the running "
                 "kernel (DKMS) or run the container with the NVIDIA runtime.";
      f.source = "NVIDIA driver installation guide; scenarios.md (a GPU missing after reboot)";
    } else if (!missing.empty()) {
      Finding& f = Add(c, "gpu.missing", State::kFail,
                       fmt::format("{} of {} NVIDIA GPU(s) on the PCI bus are not reported by the driver", missing.size(), pci.size()));
      f.evidence = {fact_ev("pci_nvidia_gpus"), Evidence{"", 0, "not reported by the driver: " + Join(missing)}};
      f.pci_bus_id = missing.front();
      f.cause = "The driver failed to initialise these GPUs (a fallen-off-the-bus GPU, a failed init — Xid 79/143 — "
                "or a GPU held in reset).";
      f.action = "Look for NVRM errors for these bus ids in the kernel log; reset or power-cycle; if a GPU is missing "
                 "after a reboot check BIOS/firmware settings and try pci=realloc.";
      f.source = "scenarios.md (a GPU missing after reboot: firmware/BIOS, kernel log for NVRM errors, pci=realloc)";
    }
  }

  // CUDA_VISIBLE_DEVICES hiding every GPU.
  if (auto it = in.facts.find("cuda_visible_devices"); it != in.facts.end()) {
    const std::string v = std::string(detail::Trim(it->second));
    if (v.empty() || v == "-1" || v == "NoDevFiles" || v == "none") {
      Finding& f = Add(c, "env.cuda_visible_devices", State::kWarn, "CUDA_VISIBLE_DEVICES hides every GPU");
      f.evidence = {fact_ev("cuda_visible_devices")};
      f.cause = "Processes started with this environment see no CUDA device and fall back to CPU or fail.";
      f.action = "Unset CUDA_VISIBLE_DEVICES or set it to the GPU indices or UUIDs the job should use.";
      f.source = "CUDA environment variables (CUDA C Programming Guide)";
    }
  }
}

// ---- kernel log rules ---------------------------------------------------------------------

std::string RecoveryAction(const std::string& text) {
  std::size_t p = text.find(" to 0x");
  if (p == std::string::npos) return "";
  return std::string(detail::Trim(text.substr(p + 4)));
}

void KernelRules(Ctx& c, const std::vector<const KernelLogParse*>& logs) {
  const DoctorKnowledge& k = c.k;
  const double window = k.Threshold("incident_window_s");
  std::vector<const KernelEvent*> xids, sxids, fallen, nvlink, mismatch, remap;
  int64_t lines = 0;
  std::vector<std::string> names;
  for (const KernelLogParse* lp : logs) {
    const KernelLogParse& l = *lp;
    lines += l.lines;
    for (const auto& e : l.events) {
      switch (e.kind) {
        case KernelEventKind::kXid: xids.push_back(&e); break;
        case KernelEventKind::kSxid: sxids.push_back(&e); break;
        case KernelEventKind::kFallenOffBus: fallen.push_back(&e); break;
        case KernelEventKind::kNvlinkError: nvlink.push_back(&e); break;
        case KernelEventKind::kDriverMismatch: mismatch.push_back(&e); break;
        case KernelEventKind::kRowRemapPending: remap.push_back(&e); break;
      }
    }
  }
  // "fallen off the bus" lines without an Xid 79 for that GPU count as Xid 79.
  std::set<std::string> has79;
  for (const auto* e : xids)
    if (e->code == 79) has79.insert(e->pci_bus_id);
  std::vector<KernelEvent> synth;
  synth.reserve(fallen.size());
  for (const auto* e : fallen) {
    if (has79.count(e->pci_bus_id)) continue;
    KernelEvent s = *e;
    s.kind = KernelEventKind::kXid;
    s.code = 79;
    synth.push_back(s);
  }
  for (const auto& s : synth) xids.push_back(&s);

  // Group Xids per GPU into incidents: a new incident starts after `window` seconds of quiet
  // (dmesg timestamps), or, without timestamps, in another file.
  std::map<std::string, std::vector<const KernelEvent*>> per_gpu;
  for (const auto* e : xids) per_gpu[e->pci_bus_id].push_back(e);
  for (auto& [bus, evs] : per_gpu) {
    std::stable_sort(evs.begin(), evs.end(), [](const KernelEvent* a, const KernelEvent* b) {
      if (a->file != b->file) return a->file < b->file;
      return a->line < b->line;
    });
    std::vector<std::vector<const KernelEvent*>> incidents;
    for (const auto* e : evs) {
      bool start = incidents.empty();
      if (!start) {
        const KernelEvent* prev = incidents.back().back();
        if (prev->file != e->file) start = true;
        else if (prev->timestamp_s && e->timestamp_s && *e->timestamp_s - *prev->timestamp_s > window) start = true;
      }
      if (start) incidents.emplace_back();
      incidents.back().push_back(e);
    }
    // A GPU that logs the same error for days would otherwise give one finding per incident:
    // keep the first incidents apart and fold the rest into one (its findings say how many).
    constexpr std::size_t kMaxIncidentsPerGpu = 10;
    const std::size_t total_incidents = incidents.size();
    if (incidents.size() > kMaxIncidentsPerGpu) {
      std::vector<const KernelEvent*> rest;
      for (std::size_t i = kMaxIncidentsPerGpu - 1; i < incidents.size(); ++i)
        rest.insert(rest.end(), incidents[i].begin(), incidents[i].end());
      incidents.resize(kMaxIncidentsPerGpu - 1);
      incidents.push_back(std::move(rest));
    }
    int incident_no = 0;
    for (const auto& inc : incidents) {
      ++incident_no;
      std::set<int> codes;
      for (const auto* e : inc) codes.insert(e->code);
      // The primary Xid: the first one that is not a known consequence (45), not informational (154)
      // and not a bookkeeping event (63/64) when a memory error is present.
      int primary = 0;
      for (const auto* e : inc) {
        if (e->code == 45 || e->code == 154) continue;
        if ((e->code == 63 || e->code == 64) && (codes.count(48) || codes.count(94) || codes.count(95))) continue;
        primary = e->code;
        break;
      }
      if (primary == 0) primary = inc.front()->code;
      std::string inc_label;
      if (total_incidents > incidents.size() && incident_no == static_cast<int>(incidents.size()))
        inc_label = fmt::format(" (incidents {}-{} of {}, folded)", incident_no, total_incidents, total_incidents);
      else if (total_incidents > 1)
        inc_label = fmt::format(" (incident {} of {})", incident_no, total_incidents);
      for (int code : codes) {
        std::vector<const KernelEvent*> these;
        for (const auto* e : inc)
          if (e->code == code) these.push_back(e);
        const XidInfo* x = k.FindXid(code);
        State st = State::kWarn;
        if (x && x->severity == "fatal") st = State::kFail;
        std::string role;
        if (code == 45 && codes.size() > 1) {
          st = State::kWarn;
          role = fmt::format("consequence of Xid {}", primary);
        } else if (code == 63 && codes.count(94) && !codes.count(48)) {
          st = State::kWarn;
          role = "row remap recorded after a contained error (Xid 94)";
        } else if (code == 63 && !codes.count(48) && !codes.count(94)) {
          st = State::kWarn;
          role = "row remap pending";
        } else if (code == 63 && codes.count(48)) {
          st = State::kFail;
          role = "with Xid 48: uncorrectable error retired";
        } else if (code == primary && codes.size() > 1) {
          role = "primary";
        }
        std::string action = x ? x->action : "Not in the Xid catalog: look it up in NVIDIA's Xid documentation.";
        if (code == 154) {
          std::string to = RecoveryAction(these.back()->text);
          if (detail::StartsWith(to, "0x0")) st = State::kWarn;
          else st = State::kFail;
          if (!to.empty()) action = fmt::format("The driver now requires: {}. {}", to, action);
        }
        if (code == 45 && codes.size() == 1)
          action = "No other Xid in this burst: the application was killed or Fabric Manager stopped; on NVSwitch "
                   "systems check nvidia-fabricmanager and restart it.";
        if (code == 63 && codes.count(94) && !codes.count(48))
          action = "Restart only the application that hit Xid 94; reset the GPU at a convenient time to activate the "
                   "remapped row.";
        if (code == 63 && codes.count(48))
          action = "Drain the node and reset the GPU (Xid 48 followed by a retirement/remap event).";
        Finding& f = Add(c, fmt::format("xid.{}", code), st,
                         fmt::format("Xid {}{}{}{}", code, x ? " " + x->mnemonic : "",
                                     role.empty() ? "" : " — " + role, inc_label));
        SetGpu(c, f, bus);
        for (const auto* e : these) {
          if (f.evidence.size() >= kMaxEvidencePerFinding - 1) break;
          f.evidence.push_back(Evidence{e->file, e->line, e->text});
        }
        if (these.size() > kMaxEvidencePerFinding - 1)
          f.evidence.push_back(Evidence{"", 0, fmt::format("... {} lines in all", these.size())});
        f.cause = x ? x->description + ". Likely: " + x->causes + "." : "Unknown Xid code.";
        f.action = action + (x ? fmt::format(" [catalog: immediate {}, investigatory {}]", x->immediate, x->investigatory) : "");
        f.source = x ? x->source : "";
      }
    }
  }
  // SXid: one finding per (switch, code).
  std::map<std::pair<std::string, int>, std::vector<const KernelEvent*>> sx;
  for (const auto* e : sxids) sx[{e->pci_bus_id, e->code}].push_back(e);
  for (const auto& [key, evs] : sx) {
    const SxidRange* r = k.FindSxid(key.second);
    bool fatal_word = false;
    for (const auto* e : evs) fatal_word |= e->severity_word == "Fatal";
    State st = State::kWarn;
    if (r && r->fatality == "always fatal") st = State::kFail;
    if (r && r->fatality == "potentially fatal" && fatal_word) st = State::kFail;
    if (!r && fatal_word) st = State::kFail;
    Finding& f = Add(c, fmt::format("sxid.{}", key.second), st,
                     fmt::format("SXid {} on NVSwitch {} ({}): {}", key.second, evs.front()->device, key.first,
                                 r ? r->name : "not in the catalog"));
    f.pci_bus_id = key.first;
    for (const auto* e : evs) {
      if (f.evidence.size() >= kMaxEvidencePerFinding) break;
      f.evidence.push_back(Evidence{e->file, e->line, e->text});
    }
    f.cause = r ? fmt::format("NVSwitch error, class: {}.", r->fatality) : "Unknown SXid.";
    f.action = (r && r->fatality == "always fatal")
                   ? "Fatal to the whole fabric: stop the partitions, reset the NVSwitches and GPUs (or reboot), "
                     "check nvidia-fabricmanager logs."
               : st == State::kFail ? "Fatal to the affected partition/port: reset the GPUs and switch of that "
                                      "partition; repeated on one link: inspect or replace the link/baseboard."
                                    : "Non-fatal: monitor the rate; repeated errors on one link point at the link.";
    f.source = r ? r->source : "";
  }
  // NVLink errors outside Xid lines.
  std::map<std::string, std::vector<const KernelEvent*>> nv;
  for (const auto* e : nvlink) nv[e->pci_bus_id].push_back(e);
  for (const auto& [bus, evs] : nv) {
    bool fatal = false;
    for (const auto* e : evs) fatal |= detail::ContainsNoCase(e->text, "fatal");
    Finding& f = Add(c, "nvlink.error", fatal ? State::kFail : State::kWarn,
                     fmt::format("NVLink errors in the kernel log ({} lines)", evs.size()));
    SetGpu(c, f, bus);
    for (const auto* e : evs) {
      if (f.evidence.size() >= kMaxEvidencePerFinding) break;
      f.evidence.push_back(Evidence{e->file, e->line, e->text});
    }
    f.cause = "An NVLink link reported errors (signal integrity, a failing link, or a peer GPU/switch fault).";
    f.action = "Check nvidia-smi nvlink -s and -e for the link's error counters; reset the GPU; if it persists, "
               "the link or baseboard needs service.";
    f.source = "NVIDIA Xid catalog, Xid 74 (xid.md 4a)";
  }
  for (const auto* e : remap) {
    Finding& f = Add(c, "memory.row_remap_pending", State::kWarn, "Row remap pending (kernel log)");
    SetGpu(c, f, e->pci_bus_id);
    f.evidence = {Evidence{e->file, e->line, e->text}};
    f.cause = "A row was marked for remapping; it takes effect after a GPU reset.";
    f.action = "Reset the GPU (nvidia-smi -r) or reboot at a convenient time.";
    f.source = k.FindXid(63) ? k.FindXid(63)->source : "";
  }
  if (!mismatch.empty()) {
    Finding& f = Add(c, "env.nvml_mismatch", State::kFail, "NVRM API mismatch in the kernel log");
    for (const auto* e : mismatch) {
      if (f.evidence.size() >= kMaxEvidencePerFinding) break;
      f.evidence.push_back(Evidence{e->file, e->line, e->text});
    }
    f.cause = "User-space driver components and the loaded kernel module are different versions.";
    f.action = "Reboot the node so the matching kernel module loads.";
    f.source = "NVRM kernel messages";
  }
  if (!logs.empty() && xids.empty() && sxids.empty() && nvlink.empty() && mismatch.empty() && remap.empty()) {
    Finding& f = Add(c, "kernel.clean", State::kPass, fmt::format("No Xid, SXid or NVLink errors in {} kernel-log lines", lines));
    for (const KernelLogParse* l : logs)
      f.evidence.push_back(Evidence{l->name, 0, fmt::format("{} lines, {} NVRM lines", l->lines, l->nvrm_lines)});
  }
}

// ---- telemetry rules ------------------------------------------------------------------------

bool Busy(const DoctorKnowledge& k, const GpuTelemetry& g) {
  if (g.util_gpu_pct) return *g.util_gpu_pct >= k.Threshold("busy_util_pct");
  return false;
}
bool Idle(const GpuTelemetry& g) {
  if (g.thr_idle && *g.thr_idle) return true;
  if (g.util_gpu_pct) return *g.util_gpu_pct < 5;
  return false;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string GpuLabel(const GpuTelemetry& g) {
  std::string s = g.host.empty() ? "" : g.host + " ";
  s += g.index ? fmt::format("GPU {}", *g.index) : "GPU";
  if (!g.pci_bus_id.empty()) s += " (" + g.pci_bus_id + ")";
  return s;
}

void TelemetryRules(Ctx& c, const std::vector<GpuTelemetry>& gpus, const std::string& scope) {
  const DoctorKnowledge& k = c.k;
  for (const auto& g : gpus) {
    const std::string who = GpuLabel(g);
    auto add = [&](const std::string& code, State st, const std::string& title) -> Finding& {
      Finding& f = Add(c, code, st, title);
      SetGpu(f, g);
      return f;
    };
    // --- throttling, attributed to its cause
    const bool busy = Busy(k, g);
    std::string temps = g.temp_c ? fmt::format("temperature.gpu = {} C", F0(*g.temp_c)) : "";
    if (g.thr_hw_thermal.value_or(false) || g.thr_sw_thermal.value_or(false)) {
      const bool hw = g.thr_hw_thermal.value_or(false);
      Finding& f = add("thermal.throttle", hw ? State::kFail : State::kWarn,
                       fmt::format("{}: clocks reduced by {} thermal slowdown", who, hw ? "hardware" : "software"));
      f.evidence.push_back(Ev(g, fmt::format("clocks_event_reasons: hw_thermal_slowdown = {}, sw_thermal_slowdown = {}",
                                             hw ? "Active" : "Not Active",
                                             g.thr_sw_thermal.value_or(false) ? "Active" : "Not Active")));
      if (!temps.empty()) f.evidence.push_back(Ev(g, temps));
      if (g.temp_slowdown_c) f.evidence.push_back(Ev(g, fmt::format("slowdown threshold = {} C", F0(*g.temp_slowdown_c))));
      if (g.thr_thermal_s) f.evidence.push_back(Ev(g, fmt::format("time throttled for temperature = {} s", F1(*g.thr_thermal_s))));
      f.cause = "The GPU is too hot: cooling (fans, airflow, inlet temperature, blocked heatsink) cannot remove its heat.";
      f.action = "Check fans and airflow, the inlet temperature and neighbouring GPUs; compare with peers in the node.";
      f.source = "nvidia-smi clocks_event_reasons (nvidia-smi.md 5b)";
    }
    if (g.thr_power_brake.value_or(false)) {
      Finding& f = add("power.brake", State::kFail, fmt::format("{}: hardware power brake asserted", who));
      f.evidence.push_back(Ev(g, "clocks_event_reasons.hw_power_brake_slowdown = Active"));
      f.cause = "An external power-brake signal slowed the GPU: the power supply or the chassis power budget is insufficient.";
      f.action = "Check PSUs, power cables and the chassis power policy (BMC logs).";
      f.source = "nvidia-smi clocks_event_reasons (nvidia-smi.md 5b)";
    }
    if (g.thr_hw_slowdown.value_or(false) && !g.thr_hw_thermal.value_or(false) && !g.thr_power_brake.value_or(false)) {
      Finding& f = add("clocks.hw_slowdown", State::kFail, fmt::format("{}: hardware slowdown active", who));
      f.evidence.push_back(Ev(g, "clocks_event_reasons.hw_slowdown = Active"));
      if (!temps.empty()) f.evidence.push_back(Ev(g, temps));
      f.cause = "HW slowdown halves clocks or more; it is set by temperature, an external power brake or a power "
                "supply fault.";
      f.action = "Check temperature and power delivery; if neither explains it, reseat the GPU and check the PSU.";
      f.source = "nvidia-smi clocks_event_reasons (nvidia-smi.md 5b)";
    }
    if (g.thr_sw_power_cap.value_or(false)) {
      Finding& f = add("power.cap", busy ? State::kWarn : State::kPass,
                       fmt::format("{}: clocks held back by the software power cap", who));
      f.evidence.push_back(Ev(g, "clocks_event_reasons.sw_power_cap = Active"));
      if (g.power_w && g.power_limit_w)
        f.evidence.push_back(Ev(g, fmt::format("power.draw = {} W, enforced.power.limit = {} W", F1(*g.power_w), F1(*g.power_limit_w))));
      if (g.power_limit_w && g.power_default_limit_w && *g.power_limit_w < *g.power_default_limit_w - 1)
        f.evidence.push_back(Ev(g, fmt::format("power limit {} W is below the default {} W", F0(*g.power_limit_w),
                                               F0(*g.power_default_limit_w))));
      f.cause = "The GPU reached its power limit; clocks drop to stay under it.";
      f.action = g.power_limit_w && g.power_default_limit_w && *g.power_limit_w < *g.power_default_limit_w - 1
                     ? "The limit was lowered below the default: restore it (nvidia-smi -pl) if the power budget allows."
                     : "Expected under heavy load at the default limit; if performance matters, check the power budget.";
      f.source = "nvidia-smi clocks_event_reasons (nvidia-smi.md 5b)";
    }
    if (g.thr_sync_boost.value_or(false)) {
      Finding& f = add("clocks.sync_boost", State::kWarn, fmt::format("{}: clocks held to the sync-boost group", who));
      f.evidence.push_back(Ev(g, "clocks_event_reasons.sync_boost = Active"));
      f.cause = "Sync boost keeps GPUs of a group at the clocks of the slowest one; another GPU is throttling.";
      f.action = "Find the throttled GPU in the group (thermal or power findings on its peers).";
      f.source = "nvidia-smi clocks_event_reasons (nvidia-smi.md 5b)";
    }
    // --- temperature against limits
    if (g.temp_c) {
      const double margin = k.Threshold("temp_warn_margin_c");
      std::optional<double> limit = g.temp_slowdown_c;
      State st = State::kPass;
      std::string why;
      if (limit) {
        if (*g.temp_c >= *limit) st = State::kFail, why = fmt::format("at or above its slowdown threshold {} C", F0(*limit));
        else if (*g.temp_c >= *limit - margin) st = State::kWarn, why = fmt::format("within {} C of its slowdown threshold {} C", F0(margin), F0(*limit));
      } else if (g.tlimit_headroom_c) {
        if (*g.tlimit_headroom_c <= 0) st = State::kFail, why = "at its T.Limit";
        else if (*g.tlimit_headroom_c < k.Threshold("tlimit_warn_headroom_c")) st = State::kWarn, why = fmt::format("{} C below its T.Limit", F0(*g.tlimit_headroom_c));
      } else if (*g.temp_c >= k.Threshold("temp_warn_default_c")) {
        st = State::kWarn, why = fmt::format("above {} C (no threshold reported)", F0(k.Threshold("temp_warn_default_c")));
      }
      Finding& f = add("thermal.temperature", st,
                       st == State::kPass ? fmt::format("{}: {} C, within limits", who, F0(*g.temp_c))
                                          : fmt::format("{}: {} C, {}", who, F0(*g.temp_c), why));
      f.evidence.push_back(Ev(g, temps));
      if (limit) f.evidence.push_back(Ev(g, fmt::format("slowdown threshold = {} C", F0(*limit))));
      if (g.tlimit_headroom_c) f.evidence.push_back(Ev(g, fmt::format("temperature.gpu.tlimit = {} C", F0(*g.tlimit_headroom_c))));
      if (g.mem_temp_c) f.evidence.push_back(Ev(g, fmt::format("temperature.memory = {} C", F0(*g.mem_temp_c))));
      if (st != State::kPass) {
        f.cause = "Insufficient cooling for the load; the GPU will throttle (or already does).";
        f.action = "Check fans, airflow and inlet temperature; compare with the other GPUs of the node.";
      }
      f.source = k.thresholds_source.count("temp_warn_margin_c") ? k.thresholds_source.at("temp_warn_margin_c") : "";
    }
    // --- PCIe link
    if (g.pcie_gen_cur && g.pcie_gen_max && g.pcie_width_cur && g.pcie_width_max) {
      int gen_max = *g.pcie_gen_max;
      if (g.pcie_gen_host_max) gen_max = std::min(gen_max, *g.pcie_gen_host_max);
      const bool gen_low = *g.pcie_gen_cur < gen_max;
      const bool width_low = *g.pcie_width_cur < *g.pcie_width_max;
      const std::string ev = fmt::format("PCIe link Gen{} x{} (max Gen{} x{}{})", *g.pcie_gen_cur, *g.pcie_width_cur,
                                         *g.pcie_gen_max, *g.pcie_width_max,
                                         g.pcie_gen_host_max ? fmt::format(", host max Gen{}", *g.pcie_gen_host_max) : "");
      State st = State::kPass;
      std::string title = fmt::format("{}: {}", who, ev);
      if ((width_low || gen_low) && !Idle(g)) {
        st = State::kWarn;
        const double frac = (std::pow(2.0, *g.pcie_gen_cur) * *g.pcie_width_cur) / (std::pow(2.0, gen_max) * *g.pcie_width_max);
        title = fmt::format("{}: PCIe link trained below its maximum ({:.0f}% of the bandwidth)", who, frac * 100);
      } else if (gen_low || width_low) {
        st = State::kSkip;
        title = fmt::format("{}: {} while idle (links downshift to save power; judge under load)", who, ev);
      }
      Finding& f = add("pcie.link_degraded", st, title);
      f.evidence.push_back(Ev(g, ev));
      if (g.util_gpu_pct) f.evidence.push_back(Ev(g, fmt::format("utilization.gpu = {} %", F0(*g.util_gpu_pct))));
      if (g.pcie_replays && *g.pcie_replays > 0) f.evidence.push_back(Ev(g, fmt::format("PCIe replay counter = {}", *g.pcie_replays)));
      if (st == State::kWarn) {
        f.cause = "A narrower or slower link than the slot supports: card not fully seated, riser or cable fault, "
                  "BIOS link setting, or a slot wired with fewer lanes.";
        f.action = "Re-check under load; reseat the GPU, try another slot, check risers and the BIOS PCIe settings.";
      }
      f.source = "nvidia-smi pci_gpu_link_info (nvidia-smi.md 5b); scenarios.md (Gen3 x8 is a quarter of Gen4 x16)";
    }
    // --- ECC
    if (g.ecc_vol_uncorr || g.ecc_agg_uncorr) {
      const int64_t vol = g.ecc_vol_uncorr.value_or(0), agg = g.ecc_agg_uncorr.value_or(0);
      State st = vol > 0 ? State::kFail : (agg > 0 ? State::kWarn : State::kPass);
      Finding& f = add("ecc.uncorrectable", st,
                       st == State::kPass ? fmt::format("{}: no uncorrectable ECC errors", who)
                       : vol > 0          ? fmt::format("{}: {} uncorrectable ECC errors since the driver loaded", who, vol)
                                          : fmt::format("{}: {} uncorrectable ECC errors in its lifetime (none since driver load)", who, agg));
      f.evidence.push_back(Ev(g, fmt::format("ecc uncorrected volatile = {}, aggregate = {}",
                                             g.ecc_vol_uncorr ? std::to_string(*g.ecc_vol_uncorr) : "N/A",
                                             g.ecc_agg_uncorr ? std::to_string(*g.ecc_agg_uncorr) : "N/A")));
      if (st != State::kPass) {
        f.cause = "Uncorrectable memory errors (DRAM or SRAM); applications touching the memory were killed.";
        f.action = vol > 0 ? "Drain the GPU, check remapped rows / retired pages, reset it; run dcgmi diag -r 3; "
                             "repeated errors: RMA."
                           : "Lifetime count only: compare with the remapped-row state; watch for new volatile errors.";
      }
      f.source = "nvidia-smi ecc_errors (nvidia-smi.md 5b); diagnostics-lessons.md (c)13";
    }
    if (g.ecc_vol_corr && *g.ecc_vol_corr > k.Threshold("sbe_volatile_warn")) {
      Finding& f = add("ecc.correctable", State::kWarn, fmt::format("{}: {} corrected ECC errors since driver load", who, *g.ecc_vol_corr));
      f.evidence.push_back(Ev(g, fmt::format("ecc corrected volatile = {}", *g.ecc_vol_corr)));
      f.cause = "A high corrected-error count can precede uncorrectable errors.";
      f.action = "Watch the rate; high sustained rates (Xid 92) qualify for RMA.";
      f.source = k.thresholds_source.count("sbe_volatile_warn") ? k.thresholds_source.at("sbe_volatile_warn") : "";
    }
    // --- remapped rows / retired pages
    if (g.remap_failure.value_or(false)) {
      Finding& f = add("memory.row_remap_failure", State::kFail, fmt::format("{}: row remapping failed", who));
      f.evidence.push_back(Ev(g, "remapped_rows.failure = Yes"));
      f.cause = "The row remapper ran out of spare rows or could not record a remap.";
      f.action = "Drain the GPU and open an RMA.";
      f.source = "NVIDIA A100 memory error management (xid.md 4a, Xid 64)";
    } else if (g.remap_pending.value_or(false)) {
      Finding& f = add("memory.row_remap_pending", State::kWarn, fmt::format("{}: row remap pending", who));
      f.evidence.push_back(Ev(g, "remapped_rows.pending = Yes"));
      if (g.remap_unc) f.evidence.push_back(Ev(g, fmt::format("remapped_rows.uncorrectable = {}", *g.remap_unc)));
      f.cause = "A faulty row was marked; the remap only takes effect after a GPU reset.";
      f.action = "Reset the GPU (nvidia-smi -r) or reboot at a convenient time.";
      f.source = "NVIDIA A100 memory error management (xid.md 4a, Xid 63)";
    } else if (g.remap_pending || g.remap_failure) {
      Finding& f = add("memory.row_remap", State::kPass, fmt::format("{}: no remap pending or failed", who));
      f.evidence.push_back(Ev(g, fmt::format("remapped_rows: correctable = {}, uncorrectable = {}, pending = No, failure = No",
                                             g.remap_corr.value_or(0), g.remap_unc.value_or(0))));
    }
    if (g.retired_pending.value_or(false) || g.retired_dbe.value_or(0) > 0) {
      Finding& f = add("memory.retired_pages", g.retired_pending.value_or(false) ? State::kWarn : State::kWarn,
                       fmt::format("{}: retired pages (double-bit {}, single-bit {}){}", who, g.retired_dbe.value_or(0),
                                   g.retired_sbe.value_or(0), g.retired_pending.value_or(false) ? ", retirement pending" : ""));
      f.evidence.push_back(Ev(g, fmt::format("retired_pages: sbe = {}, dbe = {}, pending = {}", g.retired_sbe.value_or(0),
                                             g.retired_dbe.value_or(0), g.retired_pending.value_or(false) ? "Yes" : "No")));
      f.cause = "Memory pages were retired after ECC errors (pre-Ampere page retirement).";
      f.action = g.retired_pending.value_or(false) ? "Reload the driver / reboot to complete the retirement."
                                                   : "Monitor; a growing count means failing memory (RMA).";
      f.source = "NVIDIA dynamic page retirement (xid.md 4b, Xid 63/64)";
    }
    // --- power draw against utilisation
    if (busy && g.power_w && g.power_limit_w && *g.power_limit_w > 0 &&
        *g.power_w < k.Threshold("low_power_fraction") * *g.power_limit_w) {
      Finding& f = add("power.low_draw", State::kWarn,
                       fmt::format("{}: {}% busy but drawing {} W of its {} W limit", who, F0(*g.util_gpu_pct),
                                   F0(*g.power_w), F0(*g.power_limit_w)));
      f.evidence.push_back(Ev(g, fmt::format("utilization.gpu = {} %, power.draw = {} W, power limit = {} W",
                                             F0(*g.util_gpu_pct), F1(*g.power_w), F1(*g.power_limit_w))));
      f.cause = "Utilisation counts time a kernel runs, not how much of the GPU it uses: low power at high "
                "utilisation means small or memory-bound kernels, or clocks held down by temperature or power.";
      f.action = "Check the throttle findings for this GPU; profile the job (Nsight Systems) for small kernels or "
                 "input-pipeline stalls.";
      f.source = "scenarios.md (a GPU at 100% utilisation drawing half its power limit is capped by power or temperature)";
    }
    // --- memory nearly full with low utilisation
    if (g.mem_total_mib && g.mem_used_mib && *g.mem_total_mib > 0 && g.util_gpu_pct &&
        *g.mem_used_mib >= k.Threshold("mem_full_fraction") * *g.mem_total_mib &&
        *g.util_gpu_pct < k.Threshold("mem_full_low_util_pct")) {
      Finding& f = add("memory.full_idle", State::kWarn,
                       fmt::format("{}: memory {}% full while {}% busy", who, F0(100 * *g.mem_used_mib / *g.mem_total_mib),
                                   F0(*g.util_gpu_pct)));
      f.evidence.push_back(Ev(g, fmt::format("memory.used = {} MiB of {} MiB, utilization.gpu = {} %", F0(*g.mem_used_mib),
                                             F0(*g.mem_total_mib), F0(*g.util_gpu_pct))));
      f.cause = "Memory held by an idle process (a finished job that did not exit, a notebook, a serving engine "
                "preallocating) blocks other work.";
      f.action = "List the processes on the GPU (nvidia-smi --query-compute-apps) and stop the one that should not be there.";
      f.source = k.thresholds_source.count("mem_full_fraction") ? k.thresholds_source.at("mem_full_fraction") : "";
    }
    // --- other processes on the GPU
    // Display servers appear in the compute-apps list but do not compete for SMs.
    std::vector<const GpuProcess*> compute;
    for (const auto& p : g.processes) {
      const std::string& n = p.name;
      if (Contains(n, "Xorg") || Contains(n, "kwin") || Contains(n, "gnome-shell") || Contains(n, "Xwayland")) continue;
      compute.push_back(&p);
    }
    if (compute.size() >= 2) {
      const bool mig = g.mig_current && *g.mig_current == "Enabled";
      // Time-slicing only costs anything when the GPU is busy; at low utilisation it is information.
      const bool contended = !g.util_gpu_pct || *g.util_gpu_pct >= k.Threshold("busy_util_pct");
      const bool warn = !mig && contended;
      Finding& f = add("gpu.shared", warn ? State::kWarn : State::kPass,
                       fmt::format("{}: {} compute processes{}", who, compute.size(),
                                   mig ? " (MIG enabled: instances are isolated)"
                                       : (contended ? " share this busy GPU" : " share this GPU (low utilisation: no contention)")));
      if (g.util_gpu_pct) f.evidence.push_back(Ev(g, fmt::format("utilization.gpu = {} %", F0(*g.util_gpu_pct))));
      for (const auto* p : compute) {
        if (f.evidence.size() >= kMaxEvidencePerFinding) break;
        f.evidence.push_back(Ev(g, fmt::format("pid {} {} {}", p->pid, p->name,
                                               p->used_memory_mib ? F0(*p->used_memory_mib) + " MiB" : "")));
      }
      if (warn) {
        f.cause = "Several processes time-slice the GPU: each runs slower and memory is shared.";
        f.action = "Make sure each training process binds its own device (torch.cuda.set_device(local_rank)); stop "
                   "stray processes; use MIG or MPS for deliberate sharing.";
      }
      f.source = "scenarios.md (another process sharing the GPU; every process must bind its own device)";
    }
    // --- MIG state
    if (g.mig_current && g.mig_pending && *g.mig_current != *g.mig_pending) {
      Finding& f = add("mig.pending_change", State::kWarn,
                       fmt::format("{}: MIG mode change pending ({} -> {})", who, *g.mig_current, *g.mig_pending));
      f.evidence.push_back(Ev(g, fmt::format("mig_mode current = {}, pending = {}", *g.mig_current, *g.mig_pending)));
      f.cause = "MIG mode was changed but the GPU has not been reset since.";
      f.action = "Reset the GPU (nvidia-smi -r -i N) with no processes running, or reboot.";
      f.source = "NVIDIA MIG User Guide";
    } else if (g.mig_current && *g.mig_current == "Enabled") {
      Finding& f = add("mig.state", State::kPass, fmt::format("{}: MIG enabled{}", who,
                                                              g.mig_devices ? fmt::format(", {} instances", g.mig_devices) : ""));
      f.evidence.push_back(Ev(g, "mig.mode.current = Enabled"));
      f.action = "Utilisation is not reported per GPU in MIG mode; use per-instance DCGM metrics.";
      f.source = "NVIDIA MIG User Guide";
    }
    // --- recovery action reported by the driver
    if (g.recovery_action && *g.recovery_action != "None" && *g.recovery_action != "0") {
      Finding& f = add("gpu.recovery_action", State::kFail, fmt::format("{}: driver requests recovery action '{}'", who, *g.recovery_action));
      f.evidence.push_back(Ev(g, "gpu_recovery_action = " + *g.recovery_action));
      f.cause = "A previous error left the GPU needing a reset, drain or reboot (see Xid 154).";
      f.action = "Carry out the requested action: drain the GPU, then reset it or reboot the node.";
      f.source = k.FindXid(154) ? k.FindXid(154)->source : "";
    }
    // --- last Xid reported by DCGM (fleet scrapes)
    // An Xid is a small positive integer; anything else (a huge or fractional gauge value from a broken scrape)
    // is reported as such rather than cast to int.
    if (g.xid_last && !(std::isfinite(*g.xid_last) && *g.xid_last >= 1 && *g.xid_last <= 65535 &&
                        *g.xid_last == std::floor(*g.xid_last))) {
      Finding& f = add("xid.invalid", State::kWarn,
                       fmt::format("{}: DCGM's last-Xid gauge reads {}, which is not an Xid code", who, *g.xid_last));
      f.evidence.push_back(Ev(g, fmt::format("DCGM_FI_DEV_XID_ERRORS = {}", *g.xid_last)));
      f.action = "Check the exporter and the scrape (Xid codes are integers from 1 to a few hundred); read the "
                 "kernel log (dmesg | grep -i xid) for the real Xid.";
    } else if (g.xid_last) {
      const int code = static_cast<int>(*g.xid_last);
      const XidInfo* x = k.FindXid(code);
      Finding& f = add(fmt::format("xid.{}", code), x && x->severity == "fatal" ? State::kFail : State::kWarn,
                       fmt::format("{}: last Xid reported by DCGM is {}{}", who, code, x ? " " + x->mnemonic : ""));
      f.evidence.push_back(Ev(g, fmt::format("DCGM_FI_DEV_XID_ERRORS = {}", code)));
      f.cause = x ? x->description + ". Likely: " + x->causes + "." : "Unknown Xid.";
      f.action = x ? x->action : "Look the code up in NVIDIA's Xid catalog.";
      f.source = x ? x->source : "";
    }
    (void)scope;
  }

  // --- one GPU deviating from its peers (same host, same product)
  std::map<std::pair<std::string, std::string>, std::vector<const GpuTelemetry*>> groups;
  for (const auto& g : gpus) groups[{g.host, g.name}].push_back(&g);
  for (const auto& [key, members] : groups) {
    if (members.size() < 3) continue;  // a median of two says nothing about which one is odd
    std::vector<double> temps, busy_power, busy_clock;
    for (const auto* g : members) {
      if (g->temp_c) temps.push_back(*g->temp_c);
      if (Busy(k, *g) && g->power_w) busy_power.push_back(*g->power_w);
      if (Busy(k, *g) && g->sm_clock_mhz) busy_clock.push_back(*g->sm_clock_mhz);
    }
    const double mt = Median(temps), mp = Median(busy_power), mc = Median(busy_clock);
    for (const auto* g : members) {
      std::vector<std::string> odd;
      if (temps.size() >= 3 && g->temp_c && *g->temp_c - mt >= k.Threshold("peer_temp_delta_c"))
        odd.push_back(fmt::format("temperature {} C vs peer median {} C", F0(*g->temp_c), F0(mt)));
      if (busy_power.size() >= 3 && Busy(k, *g) && g->power_w && *g->power_w < k.Threshold("peer_power_fraction") * mp)
        odd.push_back(fmt::format("power {} W vs busy-peer median {} W", F0(*g->power_w), F0(mp)));
      if (busy_clock.size() >= 3 && Busy(k, *g) && g->sm_clock_mhz && *g->sm_clock_mhz < k.Threshold("peer_clock_fraction") * mc)
        odd.push_back(fmt::format("SM clock {} MHz vs busy-peer median {} MHz", F0(*g->sm_clock_mhz), F0(mc)));
      if (odd.empty()) continue;
      Finding& f = Add(c, "peers.outlier", State::kWarn, fmt::format("{}: deviates from the {} other {} GPUs{}", GpuLabel(*g),
                                                                     members.size() - 1, key.second,
                                                                     key.first.empty() ? "" : " on " + key.first));
      SetGpu(f, *g);
      for (const auto& o : odd) f.evidence.push_back(Ev(*g, o));
      f.cause = "Same model, same node, same job: a GPU that runs hotter, slower or at lower power than its peers "
                "has a local problem (cooling, power delivery, a degraded part).";
      f.action = "Check this GPU's throttle reasons and cooling; swap workloads to confirm it follows the GPU.";
      f.source = "diagnostics-lessons.md (b)5: compare GPUs within a node";
    }
  }
}

// ---- application-log rules --------------------------------------------------------------

void AppRules(Ctx& c, const std::vector<AppEvent>& app) {
  const DoctorKnowledge& k = c.k;
  const auto ev = AppEvidence;
  // OOM: one finding per distinct event (capped).
  int ooms = 0;
  for (const auto& e : app) {
    if (e.kind != AppEventKind::kOom) continue;
    if (++ooms > 5) break;
    const auto& n = e.numbers;
    auto get = [&](const char* key) -> std::optional<double> {
      auto it = n.find(key);
      return it == n.end() ? std::nullopt : std::optional<double>(it->second);
    };
    auto reserved = get("reserved_gib"), unalloc = get("reserved_unallocated_gib"), alloc = get("allocated_gib");
    auto total = get("total_gib"), freeg = get("free_gib"), tried = get("tried_gib"), in_use = get("process_in_use_gib");
    // Fragmentation: the allocator already caches more free memory than the request, yet cannot
    // serve it in one block. Without the request size, fall back to the cached-but-free share.
    const bool frag = reserved && unalloc && *reserved > 0 &&
                      (tried ? *unalloc >= *tried
                             : *unalloc / *reserved >= k.Threshold("oom_fragmentation_fraction"));
    Finding& f = Add(c, frag ? "oom.fragmentation" : "oom.out_of_memory", State::kFail,
                     frag ? fmt::format("CUDA out of memory caused by fragmentation: {:.2f} GiB reserved but unallocated", *unalloc)
                          : (tried ? fmt::format("CUDA out of memory (tried to allocate {:.2f} GiB)", *tried)
                                   : std::string("CUDA out of memory")));
    // "GPU 0" in the message is the CUDA device ordinal as the process saw it (after
    // CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER), not necessarily nvidia-smi's index, so the
    // finding is not attached to a GPU; the ordinal is stated instead.
    if (auto g = get("gpu")) f.title += fmt::format(" on CUDA device {} (as the process numbered it)", static_cast<int>(*g));
    f.evidence.push_back(ev(e));
    std::vector<std::string> parts;
    if (total) parts.push_back(fmt::format("total {:.2f} GiB", *total));
    if (freeg) parts.push_back(fmt::format("free {:.2f} GiB", *freeg));
    if (alloc) parts.push_back(fmt::format("allocated by PyTorch {:.2f} GiB", *alloc));
    if (reserved) parts.push_back(fmt::format("reserved by PyTorch {:.2f} GiB", *reserved));
    if (unalloc) parts.push_back(fmt::format("reserved but unallocated {:.2f} GiB", *unalloc));
    if (in_use) parts.push_back(fmt::format("this process {:.2f} GiB", *in_use));
    if (!parts.empty()) f.evidence.push_back(Evidence{e.file, e.line, "allocator: " + Join(parts)});
    std::string other;
    if (total && freeg && in_use && *total - *freeg - *in_use > 1.0)
      other = fmt::format(" Another process holds about {:.1f} GiB of this GPU.", *total - *freeg - *in_use);
    if (frag) {
      f.cause = fmt::format("PyTorch's caching allocator holds {:.2f} GiB it cannot hand out in one block of the "
                            "requested size: the free space is fragmented across cached segments.{}",
                            *unalloc, other);
      f.action = "Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; avoid varying tensor shapes between steps "
                 "(pad or bucket sequence lengths); call torch.cuda.empty_cache() between phases only if needed.";
    } else {
      f.cause = "The working set is larger than the GPU: allocated tensors fill the memory (real shortage, not "
                "fragmentation)." + other;
      f.action = "Levers, most effective first: smaller micro-batch with gradient accumulation; bf16/fp16 mixed "
                 "precision; activation checkpointing; torch.no_grad()/inference_mode for evaluation; shard optimizer "
                 "states (ZeRO/FSDP). `suanli fit` sizes the job before you run it.";
    }
    f.source = "PyTorch CUDA semantics (memory management: allocated vs reserved, expandable_segments); scenarios.md";
  }
  auto fail_on = [&](AppEventKind kind, const char* code, const char* title, const char* cause, const char* action) {
    FailOnAppEvents(c, app, kind, code, title, cause, action, "scenarios.md (Operations and diagnosis)");
  };
  fail_on(AppEventKind::kIllegalAddress, "app.illegal_memory_access", "CUDA illegal memory access",
          "A kernel read or wrote outside its allocation (indexing bug, wrong tensor size, race, or a library bug). "
          "The CUDA context is now unusable: every later CUDA call fails.",
          "Restart the process. Reproduce with CUDA_LAUNCH_BLOCKING=1 to find the failing kernel, then run it under "
          "compute-sanitizer (memcheck). If the same code fails only on one GPU, check that GPU's Xid 13/31 history.");
  fail_on(AppEventKind::kMisalignedAddress, "app.misaligned_address", "CUDA misaligned address",
          "A kernel accessed memory with an address not aligned to the access size (often a custom kernel or a "
          "view with an odd offset). The CUDA context is lost.",
          "Restart the process; run compute-sanitizer to find the access; make tensors contiguous before custom kernels.");
  fail_on(AppEventKind::kDuplicateDevice, "gpu.duplicate_device", "Several ranks use the same GPU",
          "Processes did not bind their own device, so two ranks run on one GPU (NCCL refuses, or the job hangs).",
          "Call torch.cuda.set_device(local_rank) before creating the process group; check CUDA_VISIBLE_DEVICES per rank.");
  fail_on(AppEventKind::kNcclError, "nccl.error", "NCCL reported an error",
          "A collective failed: network/transport failure, a peer process died, or mismatched NCCL versions.",
          "Rerun with NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,NET) and look for the first WARN line; check the "
          "peer ranks' logs and the kernel log for Xids.");

  // NCCL transports.
  std::vector<const AppEvent*> sock, ib, p2p, disabled;
  int nranks = 0;
  for (const auto& e : app) {
    if (e.kind == AppEventKind::kNcclSocket) sock.push_back(&e);
    if (e.kind == AppEventKind::kNcclIb) ib.push_back(&e);
    if (e.kind == AppEventKind::kNcclP2pOrNvls && e.detail != "init") p2p.push_back(&e);
    if (e.kind == AppEventKind::kNcclP2pOrNvls && e.numbers.count("nranks"))
      nranks = std::max(nranks, static_cast<int>(e.numbers.at("nranks")));
    if (e.kind == AppEventKind::kNcclP2pDisabled) disabled.push_back(&e);
  }
  if (!sock.empty()) {
    Finding& f = Add(c, "nccl.socket_transport", State::kWarn,
                     fmt::format("NCCL uses TCP sockets ({} lines){}", sock.size(),
                                 ib.empty() ? " and no InfiniBand/RoCE" : ""));
    for (const auto* e : sock) {
      if (f.evidence.size() >= kMaxEvidencePerFinding) break;
      f.evidence.push_back(ev(*e));
    }
    f.cause = "NCCL found no usable InfiniBand/RoCE device (or it is disabled) and fell back to sockets, an order "
              "of magnitude slower than IB and far slower than NVLink.";
    f.action = "Check that the IB/RoCE driver (and nvidia-peermem for GPUDirect RDMA) is loaded and visible in the "
               "container, that NCCL_IB_DISABLE is not set, and NCCL_SOCKET_IFNAME names the right interface; "
               "confirm with NCCL_DEBUG=INFO showing NET/IB.";
    f.source = "scenarios.md (multi-GPU slower than one: NCCL fell back to sockets, visible with NCCL_DEBUG=INFO)";
  }
  if (!disabled.empty()) {
    Finding& f = Add(c, "nccl.transport_disabled", State::kWarn, "NCCL transports disabled by environment variables");
    for (const auto* e : disabled) {
      if (f.evidence.size() >= kMaxEvidencePerFinding) break;
      f.evidence.push_back(ev(*e));
    }
    f.cause = "NCCL_P2P_DISABLE / NCCL_IB_DISABLE / NCCL_SHM_DISABLE force slower paths (often left over from debugging).";
    f.action = "Unset the variable unless it works around a known platform problem.";
    f.source = "NCCL environment variables documentation; scenarios.md (P2P disabled)";
  }
  if (sock.empty() && (!ib.empty() || !p2p.empty())) {
    Finding& f = Add(c, "nccl.socket_transport", State::kPass,
                     fmt::format("NCCL uses {}", !ib.empty() && !p2p.empty() ? "NVLink/P2P and IB" : (!ib.empty() ? "IB" : "NVLink/P2P/SHM")));
    f.evidence.push_back(ev(!ib.empty() ? *ib.front() : *p2p.front()));
  }
  // NCCL timeouts and which rank stalled.
  std::vector<const AppEvent*> timeouts;
  for (const auto& e : app)
    if (e.kind == AppEventKind::kNcclTimeout) timeouts.push_back(&e);
  if (!timeouts.empty()) {
    std::set<int> ranks;
    double min_seq = 1e300, max_seq = -1;
    for (const auto* e : timeouts) {
      if (e->rank >= 0) ranks.insert(e->rank);
      if (e->numbers.count("seq")) {
        min_seq = std::min(min_seq, e->numbers.at("seq"));
        max_seq = std::max(max_seq, e->numbers.at("seq"));
      }
    }
    std::vector<std::string> missing;
    for (int r = 0; r < nranks && r < 100000; ++r)
      if (!ranks.count(r)) missing.push_back(std::to_string(r));
    std::vector<std::string> behind;
    if (max_seq > min_seq)
      for (const auto* e : timeouts)
        if (e->numbers.count("seq") && e->numbers.at("seq") == min_seq && e->rank >= 0) behind.push_back(std::to_string(e->rank));
    Finding& f = Add(c, "nccl.timeout", State::kFail,
                     !missing.empty() ? fmt::format("NCCL collective timed out; rank(s) {} never reported it and likely stalled",
                                                    Join(missing))
                     : !behind.empty() ? fmt::format("NCCL collective timed out; rank(s) {} are behind (lowest SeqNum)", Join(behind))
                                       : fmt::format("NCCL collective timed out on {} rank(s)", ranks.size()));
    for (const auto* e : timeouts) {
      if (f.evidence.size() >= kMaxEvidencePerFinding) break;
      f.evidence.push_back(ev(*e));
    }
    if (nranks) f.evidence.push_back(Evidence{"", 0, fmt::format("world size (NCCL nranks) = {}; ranks reporting the timeout: {}", nranks, ranks.size())});
    f.cause = "One rank did not reach the collective (it is stuck in compute, data loading, a dead GPU or a "
              "different code path), so all others waited until the watchdog timeout.";
    f.action = "Look at the stalled rank's log and its GPU (Xids, throttling); py-spy dump the stuck process; "
               "set TORCH_NCCL_DUMP_ON_TIMEOUT=1 for a flight-recorder trace.";
    f.source = "PyTorch ProcessGroupNCCL watchdog messages; scenarios.md (random hangs with several processes)";
  }
}

// ---- fleet ranking ---------------------------------------------------------------------

void SortFindings(std::vector<Finding>* fs) {
  std::stable_sort(fs->begin(), fs->end(), [](const Finding& a, const Finding& b) {
    if (a.state != b.state) return StateRank(a.state) > StateRank(b.state);
    if (a.host != b.host) return a.host < b.host;
    if (a.gpu_index != b.gpu_index) return a.gpu_index.value_or(-1) < b.gpu_index.value_or(-1);
    return a.code < b.code;
  });
}

// Merges telemetry of the same GPU from several sources (XML + CSV + NVML): later sources
// fill fields the earlier ones lacked.
void MergeInto(GpuTelemetry& a, const GpuTelemetry& b) {
#define SUANLI_FILL(f) \
  if (!a.f) a.f = b.f;
  SUANLI_FILL(index) SUANLI_FILL(compute_capability) SUANLI_FILL(temp_c) SUANLI_FILL(mem_temp_c)
  SUANLI_FILL(temp_slowdown_c) SUANLI_FILL(temp_shutdown_c) SUANLI_FILL(temp_max_operating_c)
  SUANLI_FILL(tlimit_headroom_c) SUANLI_FILL(power_w) SUANLI_FILL(power_limit_w) SUANLI_FILL(power_default_limit_w)
  SUANLI_FILL(power_max_limit_w) SUANLI_FILL(util_gpu_pct) SUANLI_FILL(util_mem_pct) SUANLI_FILL(mem_total_mib)
  SUANLI_FILL(mem_used_mib) SUANLI_FILL(sm_clock_mhz) SUANLI_FILL(sm_clock_max_mhz) SUANLI_FILL(pcie_gen_cur)
  SUANLI_FILL(pcie_gen_max) SUANLI_FILL(pcie_gen_host_max) SUANLI_FILL(pcie_width_cur) SUANLI_FILL(pcie_width_max)
  SUANLI_FILL(pcie_replays) SUANLI_FILL(thr_idle) SUANLI_FILL(thr_sw_power_cap) SUANLI_FILL(thr_hw_slowdown)
  SUANLI_FILL(thr_hw_thermal) SUANLI_FILL(thr_sw_thermal) SUANLI_FILL(thr_power_brake) SUANLI_FILL(thr_sync_boost)
  SUANLI_FILL(thr_app_clocks) SUANLI_FILL(thr_power_s) SUANLI_FILL(thr_thermal_s) SUANLI_FILL(ecc_enabled)
  SUANLI_FILL(ecc_vol_corr) SUANLI_FILL(ecc_vol_uncorr) SUANLI_FILL(ecc_agg_corr) SUANLI_FILL(ecc_agg_uncorr)
  SUANLI_FILL(remap_corr) SUANLI_FILL(remap_unc) SUANLI_FILL(remap_pending) SUANLI_FILL(remap_failure)
  SUANLI_FILL(retired_sbe) SUANLI_FILL(retired_dbe) SUANLI_FILL(retired_pending) SUANLI_FILL(mig_current)
  SUANLI_FILL(mig_pending) SUANLI_FILL(recovery_action)
#undef SUANLI_FILL
  if (a.uuid.empty()) a.uuid = b.uuid;
  if (a.name.empty()) a.name = b.name;
  if (a.driver_version.empty()) a.driver_version = b.driver_version;
  if (a.cuda_version.empty()) a.cuda_version = b.cuda_version;
  if (a.processes.empty()) a.processes = b.processes;
  a.mig_devices = std::max(a.mig_devices, b.mig_devices);
}

}  // namespace

DoctorReport Diagnose(const DoctorInputs& in, const DoctorKnowledge& k) {
  DoctorReport report;
  std::vector<Finding>& out = report.findings;
  Ctx c{k, &out, {}, {}, "", ""};
  for (const auto& n : in.collection_notes) out.push_back(n);

  auto input_error = [&](const std::string& file, const std::string& msg, State st = State::kError) {
    Finding& f = Add(c, "input.unreadable", st, msg);
    f.evidence.push_back(Evidence{file, 0, msg});
    f.cause = "The input could not be parsed completely; findings from it may be missing.";
    f.action = "Check that the file is the expected kind and complete (not truncated or binary).";
  };
  // NUL bytes in a text log: binary data (an input error), or runs inside text that was read, which is what a file
  // system leaves where a file's new length reached the disk but its data did not.
  auto nul_bytes = [&](const std::string& file, const NulBytes& n, const char* kind) {
    if (n.bytes == 0) return;
    if (n.LooksBinary()) {
      input_error(file, fmt::format("{}: binary data, not a text log ({} NUL bytes)", file, n.bytes));
      return;
    }
    Finding& f = Add(c, "log.nul_bytes", State::kWarn,
                     fmt::format("The {} has runs of NUL bytes where text should be: a likely unclean stop", kind));
    f.evidence.push_back(Evidence{file, n.first_line,
                                  fmt::format("{} NUL byte(s) in {} run(s), the first on line {}; the text around them "
                                              "was read",
                                              n.bytes, n.runs, n.first_line)});
    f.cause = "Runs of NUL bytes inside a text log are what a file system leaves where the file's new length reached "
              "the disk before its data: the host lost power, hung or was reset before the log was flushed (ext4 puts "
              "buffered writes on disk at writeback or fsync, not at write). What was logged in the moments before is "
              "lost. A process that crashes or is killed leaves none: its writes are in the page cache.";
    if (std::string_view(kind) != "kernel log")
      f.cause += " A log that several processes or hosts write to on a network file system (every rank's output "
                 "to one file over NFS) can also get them, where one writer's data lands past another's end of file.";
    f.action = "Treat it as an unclean stop at that line: read the lines before the first run, the previous boot's "
               "kernel log (journalctl -k -b -1) and the BMC's event log (ipmitool sel list) for a power, thermal or "
               "reset event; on a GPU node, an Xid 79 or a hang under load just before points at the GPU or its power.";
    f.source = "Red Hat Enterprise Linux 5 Deployment Guide, ch. 4 'The ext4 File System' (delayed allocation: writes "
               "are not guaranteed on disk without fsync); suanli docs/doctor.md";
  };

  // ---- parse
  std::vector<GpuTelemetry> local = in.gpus;
  for (const auto& x : in.smi_xml) {
    auto r = ParseSmiXml(x.text, x.name);
    if (!r.ok()) { input_error(x.name, r.status().message()); continue; }
    for (auto& g : *r) local.push_back(std::move(g));
  }
  std::vector<std::pair<std::string, GpuProcess>> procs;
  for (const auto& x : in.smi_csv) {
    auto r = ParseSmiCsv(x.text, x.name);
    if (!r.ok()) { input_error(x.name, r.status().message()); continue; }
    for (const auto& p : r->problems) input_error(x.name, p);
    for (auto& g : r->gpus) local.push_back(std::move(g));
    for (auto& p : r->processes) procs.push_back(std::move(p));
  }
  // Merge GPUs seen in several local sources by bus id.
  std::vector<GpuTelemetry> merged;
  for (auto& g : local) {
    auto it = std::find_if(merged.begin(), merged.end(), [&](const GpuTelemetry& m) {
      return !g.pci_bus_id.empty() && m.pci_bus_id == g.pci_bus_id;
    });
    if (it == merged.end()) merged.push_back(std::move(g));
    else MergeInto(*it, g);
  }
  for (auto& p : procs) {
    for (auto& g : merged)
      if (g.pci_bus_id == p.first) {
        bool dup = false;
        for (const auto& q : g.processes) dup |= q.pid == p.second.pid;
        if (!dup) g.processes.push_back(p.second);
      }
  }
  // Index GPUs without one by order.
  for (std::size_t i = 0; i < merged.size(); ++i)
    if (!merged[i].index) merged[i].index = static_cast<int>(i);
  for (const auto& g : merged) {
    if (!g.pci_bus_id.empty() && g.index) c.bus_to_index[g.pci_bus_id] = *g.index;
  }

  std::vector<KernelLogParse> parsed_here;
  parsed_here.reserve(in.kernel_logs.size());
  for (const auto& x : in.kernel_logs) parsed_here.push_back(ParseKernelLog(x.text, x.name));
  std::vector<const KernelLogParse*> klogs;  // no copies of (possibly huge) streamed parses
  for (const auto& p : parsed_here) klogs.push_back(&p);
  for (const auto& p : in.kernel_logs_parsed) klogs.push_back(&p);
  for (const KernelLogParse* lp : klogs) {
    const KernelLogParse& l = *lp;
    const std::string name = l.name;
    if (l.truncated) input_error(name, fmt::format("{}: partly read (over-long lines or too many events)", name));
    nul_bytes(name, l.nul, "kernel log");
  }
  std::vector<AppEvent> app;
  for (const auto& x : in.app_logs) {
    auto r = ParseAppLog(x.text, x.name);
    for (const auto& p : r.problems) input_error(x.name, p);
    nul_bytes(x.name, r.nul, "application log");
    for (auto& e : r.events) app.push_back(std::move(e));
  }
  std::vector<GpuTelemetry> fleet;
  for (const auto& x : in.prometheus) {
    auto r = ParsePrometheus(x.text, x.name);
    if (!r.ok()) { input_error(x.name, r.status().message()); continue; }
    for (const auto& p : r->problems) input_error(x.name, p);
    for (auto& g : r->gpus) fleet.push_back(std::move(g));
  }

  // ---- facts
  report.facts = in.facts;
  if (auto it = in.facts.find("driver"); it != in.facts.end()) {
    c.driver = it->second;
    c.driver_origin = "facts";
  } else {
    for (const auto& g : merged)
      if (!g.driver_version.empty()) {
        c.driver = g.driver_version;
        c.driver_origin = g.origin;
        break;
      }
  }
  // A driver version that does not read as one (a bundle's facts.env, a hand-edited file) is said, and the rules
  // that compare it are not run, rather than compared as if it were real.
  if (!c.driver.empty() && !detail::LooksLikeVersion(c.driver, false)) {
    input_error(c.driver_origin, fmt::format("{}: driver version '{}' does not read as one (e.g. 550.54.14); the driver "
                                             "compatibility rules are not run",
                                             c.driver_origin, c.driver));
    c.driver.clear();
  }
  if (!c.driver.empty()) report.facts["driver"] = c.driver;
  for (const auto& g : merged)
    if (!g.cuda_version.empty()) {
      report.facts["driver_max_cuda"] = g.cuda_version;
      break;
    }

  const bool any_input = !in.kernel_logs.empty() || !in.kernel_logs_parsed.empty() || !in.smi_xml.empty() || !in.smi_csv.empty() || !in.app_logs.empty() ||
                         !in.prometheus.empty() || !in.gpus.empty() || !in.facts.empty();
  if (!any_input) {
    Finding& f = Add(c, "doctor.no_inputs", State::kError, "Nothing to diagnose: no input could be read");
    f.action = "Run on a GPU machine, or pass --kernel-log, --smi-xml, --smi-csv, --app-log, --prometheus, --env or --bundle.";
  }

  // ---- rules
  EnvRules(c, in, merged, app);
  KernelRules(c, klogs);
  TelemetryRules(c, merged, "local");
  TelemetryRules(c, fleet, "fleet");
  AppRules(c, app);

  // ---- summaries
  SortFindings(&out);
  std::vector<const GpuTelemetry*> all;
  for (const auto& g : merged) all.push_back(&g);
  for (const auto& g : fleet) all.push_back(&g);
  for (const auto* g : all) {
    GpuSummary s;
    s.index = g->index;
    s.pci_bus_id = g->pci_bus_id;
    s.uuid = g->uuid;
    s.name = g->name;
    s.host = g->host;
    for (const auto& f : out) {
      const bool mine = f.host == g->host &&
                        ((!f.pci_bus_id.empty() && f.pci_bus_id == g->pci_bus_id) ||
                         (f.pci_bus_id.empty() && f.gpu_index && g->index && *f.gpu_index == *g->index));
      if (!mine) continue;
      if (StateRank(f.state) > StateRank(s.state)) s.state = f.state;
      if (f.state != State::kPass && f.state != State::kSkip) {
        ++s.findings;
        if (std::find(s.codes.begin(), s.codes.end(), f.code) == s.codes.end()) s.codes.push_back(f.code);
      }
    }
    report.gpus.push_back(s);
  }
  // GPUs named only by the kernel log (no telemetry given): summarise them by bus id too.
  // SXid findings name NVSwitches, not GPUs.
  std::set<std::string> from_log;
  for (const auto& f : out) {
    if (f.pci_bus_id.empty() || !f.host.empty() || f.code.rfind("sxid.", 0) == 0) continue;
    auto it = std::find_if(report.gpus.begin(), report.gpus.end(),
                           [&](const GpuSummary& g) { return g.host.empty() && g.pci_bus_id == f.pci_bus_id; });
    if (it == report.gpus.end()) {
      from_log.insert(f.pci_bus_id);
      GpuSummary s;
      s.pci_bus_id = f.pci_bus_id;
      s.index = f.gpu_index;
      s.name = "(named in the kernel log)";
      report.gpus.push_back(s);
      it = report.gpus.end() - 1;
    } else if (!from_log.count(f.pci_bus_id)) {
      continue;  // a telemetry GPU: already summarised above
    }
    if (StateRank(f.state) > StateRank(it->state)) it->state = f.state;
    if (f.state != State::kPass && f.state != State::kSkip) {
      ++it->findings;
      if (std::find(it->codes.begin(), it->codes.end(), f.code) == it->codes.end()) it->codes.push_back(f.code);
    }
  }
  std::stable_sort(report.gpus.begin(), report.gpus.end(), [](const GpuSummary& a, const GpuSummary& b) {
    if (a.state != b.state) return StateRank(a.state) > StateRank(b.state);
    if (a.findings != b.findings) return a.findings > b.findings;
    if (a.host != b.host) return a.host < b.host;
    return a.index.value_or(-1) < b.index.value_or(-1);
  });
  for (const auto& f : out) {
    State s = f.state == State::kSkip ? State::kPass : f.state;
    if (StateRank(s) > StateRank(report.overall)) report.overall = s;
  }
  return report;
}

}  // namespace suanli::doctor
