// suanli doctor: diagnose GPU machines from their environment, kernel log, telemetry and
// application logs, live or from a captured bundle.
//
// Shape (data flows one way):
//
//   text inputs (kernel log, nvidia-smi XML/CSV, app logs, Prometheus scrapes, KEY=VALUE facts)
//        |  pure parsers (no I/O; never crash on hostile input; a parse problem becomes an
//        |  ERROR finding and the rest of the input is still used)
//        v
//   DoctorInputs (typed: GpuTelemetry per GPU, KernelEvent per Xid/SXid line, AppEvent ...)
//        |  Diagnose(): pure rules over the inputs and the knowledge data (data/doctor/*.toml)
//        v
//   DoctorReport: findings (code, state, GPU, title, evidence with file:line, cause, action,
//                 source) + a summary per GPU and for the machine.
//
// The live path (CollectLive) fills the same DoctorInputs from the machine it runs on, through
// a HostProbe (files, environment variables, commands) and a DeviceBackend (NVML loaded with
// dlopen at run time, or a fake built from a machine profile for tests). Nothing here links
// against NVIDIA libraries, prints, exits or changes the machine.
//
// Units: temperatures in degrees Celsius, power in watts, clocks in MHz, memory in MiB as
// nvidia-smi reports it (the JSON keys say so), durations in seconds.
// Thread safety: all functions are reentrant; DoctorKnowledge is immutable once loaded.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "suanli/status.h"

namespace suanli::doctor {

// ---------------------------------------------------------------------------------------
// Findings
// ---------------------------------------------------------------------------------------

// The five result states. Ordered by severity for sorting: kFail is the worst.
// kSkip = the check does not apply here (e.g. no ECC on a consumer card); kError = the check
// could not run (input unreadable, truncated, unparsable) — never reported as kPass.
enum class State { kPass, kSkip, kWarn, kError, kFail };
const char* StateName(State s);  // "PASS", "WARN", ...
int StateRank(State s);          // PASS 0, SKIP 1, WARN 2, ERROR 3, FAIL 4

// One piece of evidence: a line of a file, or a value read from telemetry.
struct Evidence {
  std::string file;   // input name as given (path, "live:nvml", "--env"), may be empty
  int64_t line = 0;   // 1-based line number, 0 when not line-oriented (XML element, NVML value)
  std::string text;   // the line itself (trimmed, at most 300 characters) or "key = value"
};

struct Finding {
  std::string code;                  // stable id, e.g. "xid.79", "env.driver_too_old"
  State state = State::kPass;
  std::optional<int> gpu_index;      // GPU index when the finding is about one GPU
  std::string pci_bus_id;            // normalised "0000:53:00.0" when known
  std::string host;                  // host name (fleet findings), empty for the local machine
  std::string title;                 // one line
  std::vector<Evidence> evidence;
  std::string cause;                 // likely cause(s)
  std::string action;                // what to do next
  std::string source;                // where the knowledge behind the rule comes from
};

// ---------------------------------------------------------------------------------------
// Typed inputs
// ---------------------------------------------------------------------------------------

// One compute process on a GPU.
struct GpuProcess {
  int64_t pid = 0;
  std::string name;
  std::optional<double> used_memory_mib;
  std::optional<int> gpu_instance_id;  // MIG GI, when reported
};

// Telemetry of one GPU at one moment, from nvidia-smi XML/CSV, NVML or a Prometheus scrape.
// Every field is optional: absent means "not reported / N/A", never zero.
struct GpuTelemetry {
  std::string origin;        // input name (file path, "live:nvml")
  int64_t origin_line = 0;   // CSV/Prometheus line, 0 for XML/NVML
  std::string host;          // Hostname label (Prometheus), empty otherwise
  std::optional<int> index;
  std::string pci_bus_id;    // normalised "0000:53:00.0" (domain 4 hex digits, lower case)
  std::string uuid;
  std::string name;          // product name, e.g. "NVIDIA H100 80GB HBM3"
  std::string driver_version;
  std::string cuda_version;  // the newest CUDA the driver supports (nvidia-smi "CUDA Version")
  std::optional<std::string> compute_capability;  // "9.0" (CSV compute_cap), else from the name

  std::optional<double> temp_c, mem_temp_c;
  std::optional<double> temp_slowdown_c, temp_shutdown_c, temp_max_operating_c;  // thresholds
  std::optional<double> tlimit_headroom_c;  // gpu_temp_tlimit: degrees below the T.Limit
  std::optional<double> power_w, power_limit_w, power_default_limit_w, power_max_limit_w;
  std::optional<double> util_gpu_pct, util_mem_pct;
  std::optional<double> mem_total_mib, mem_used_mib;
  std::optional<double> sm_clock_mhz, sm_clock_max_mhz;
  std::optional<int> pcie_gen_cur, pcie_gen_max, pcie_gen_host_max, pcie_width_cur, pcie_width_max;
  std::optional<int64_t> pcie_replays;

  // Clock event ("throttle") reasons currently active. Absent = not reported.
  std::optional<bool> thr_idle, thr_sw_power_cap, thr_hw_slowdown, thr_hw_thermal, thr_sw_thermal,
      thr_power_brake, thr_sync_boost, thr_app_clocks;
  // Cumulative time throttled (seconds), when reported.
  std::optional<double> thr_power_s, thr_thermal_s;  // sw power cap; sw+hw thermal

  std::optional<bool> ecc_enabled;
  std::optional<int64_t> ecc_vol_corr, ecc_vol_uncorr, ecc_agg_corr, ecc_agg_uncorr;
  std::optional<int64_t> remap_corr, remap_unc;
  std::optional<bool> remap_pending, remap_failure;
  std::optional<int64_t> retired_sbe, retired_dbe;
  std::optional<bool> retired_pending;
  std::optional<std::string> mig_current, mig_pending;  // "Enabled" / "Disabled"
  int mig_devices = 0;
  std::optional<std::string> recovery_action;  // gpu_recovery_action, e.g. "None"
  std::optional<double> xid_last;              // DCGM_FI_DEV_XID_ERRORS (last Xid seen)
  std::optional<double> throttle_violation_power_s, throttle_violation_thermal_s;  // DCGM counters
  std::vector<GpuProcess> processes;
};

// An Xid / SXid / related NVRM line from the kernel log.
enum class KernelEventKind { kXid, kSxid, kFallenOffBus, kRowRemapPending, kNvlinkError, kDriverMismatch };
struct KernelEvent {
  KernelEventKind kind = KernelEventKind::kXid;
  int code = 0;               // Xid or SXid number (0 for non-Xid kinds)
  std::string pci_bus_id;     // normalised; "0000:91:00.0" from "PCI:0000:91:00"
  std::string device;         // "nvidia-nvswitch3" for SXid
  std::optional<double> timestamp_s;  // dmesg "[  123.456]" seconds since boot, if present
  std::string text;           // the message after the "NVRM: " / device prefix
  int64_t line = 0;
  std::string file;
  std::string severity_word;  // SXid: "Fatal" / "Non-fatal" when present
};

// NUL bytes in a text input. A text log has none, except in runs where a file system kept the file's new length
// but not its data (a host that lost power, hung or was reset before the log reached the disk); a binary file has
// other control bytes around them too.
struct NulBytes {
  int64_t bytes = 0;           // NUL bytes
  int64_t runs = 0;            // runs of consecutive NULs
  int64_t first_line = 0;      // the line the first run is on (0: none)
  int64_t other_bytes = 0;     // the other bytes of the stretches with NULs that were scanned
  int64_t control_bytes = 0;   // of those, control bytes a log does not hold (not tab, newline, CR, FF or ESC)
  // Binary data, not a text log with NUL runs: nothing but NULs, or over 1% other control bytes beside them.
  bool LooksBinary() const { return bytes > 0 && (other_bytes == 0 || control_bytes * 100 > other_bytes); }
};

struct KernelLogParse {
  std::string name;           // the input's name
  std::vector<KernelEvent> events;
  int64_t lines = 0;
  int64_t nvrm_lines = 0;     // lines containing "NVRM"
  bool truncated = false;     // a line longer than the limit, or the input hit the size limit
  NulBytes nul;               // NUL bytes seen (binary data, or a log cut by an unclean stop)
  std::vector<std::string> problems;  // non-fatal parse problems (-> ERROR findings)
};

// Things found in an application log (training/serving output, tracebacks, NCCL_DEBUG=INFO).
enum class AppEventKind {
  kOom,                 // torch.OutOfMemoryError / "CUDA out of memory"
  kIllegalAddress,      // "an illegal memory access was encountered"
  kMisalignedAddress,   // "misaligned address"
  kNoKernelImage,       // "no kernel image is available for execution on the device"
  kDriverTooOld,        // "driver on your system is too old (found version NNNNN)" / "insufficient"
  kArchWarning,         // "with CUDA capability sm_XY is not compatible with the current PyTorch"
  kGpuTooOld,           // "PyTorch no longer supports this GPU because it is too old"
  kTorchNoCuda,         // "Torch not compiled with CUDA enabled"
  kForkAfterInit,       // "Cannot re-initialize CUDA in forked subprocess"
  kNvmlMismatch,        // "Failed to initialize NVML: Driver/library version mismatch"
  kMissingCudaLib,      // "libcudart.so.13: cannot open shared object file"
  kNcclSocket,          // "NCCL INFO ... via NET/Socket" / "Using network Socket"
  kNcclIb,              // "NET/IB" in use
  kNcclP2pOrNvls,       // "via P2P/..." / NVLS / "via SHM"
  kNcclP2pDisabled,     // NCCL_P2P_DISABLE=1 / NCCL_IB_DISABLE=1 set
  kNcclTimeout,         // "Watchdog caught collective operation timeout"
  kNcclError,           // "NCCL error" / "ncclSystemError" / "unhandled system error"
  kDuplicateDevice,     // "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device"
};
struct AppEvent {
  AppEventKind kind;
  std::string file;
  int64_t line = 0;
  std::string text;
  int rank = -1;             // NCCL rank when present
  std::map<std::string, double> numbers;  // OOM: tried_gib, total_gib, free_gib, allocated_gib,
                                          // reserved_unallocated_gib, reserved_gib; driver: found_cuda
  std::string detail;        // arch string, socket interface, ...
};
struct AppLogParse {
  std::vector<AppEvent> events;
  int64_t lines = 0;
  bool truncated = false;
  NulBytes nul;
  std::vector<std::string> problems;
};

// A named text input (a file's contents and the name to cite in evidence).
struct TextInput {
  std::string name;
  std::string text;
};

// Everything Diagnose() looks at.
struct DoctorInputs {
  std::vector<TextInput> kernel_logs;
  std::vector<KernelLogParse> kernel_logs_parsed;  // large logs streamed through KernelLogScanner
  std::vector<TextInput> smi_xml;
  std::vector<TextInput> smi_csv;       // --query-gpu or --query-compute-apps CSV
  std::vector<TextInput> app_logs;
  std::vector<TextInput> prometheus;    // dcgm-exporter scrapes
  std::vector<GpuTelemetry> gpus;       // telemetry already typed (live NVML)
  std::map<std::string, std::string> facts;  // torch=2.4.0+cu124, driver=525.60.13, cuda_visible_devices=..
  std::vector<Finding> collection_notes;     // SKIP/ERROR notes from collection (missing NVML ...)
  bool under_load_hint = false;         // facts "load=1": judge PCIe/clocks as under load
};

// ---------------------------------------------------------------------------------------
// Knowledge (data/doctor/xid.toml, data/doctor/compat.toml), every entry with its source.
// ---------------------------------------------------------------------------------------

struct XidInfo {
  int code = 0;
  std::string mnemonic, description;
  std::string severity;        // "fatal" | "warning" | "info" (gpud policy column)
  std::string immediate, investigatory;  // NVIDIA catalog resolution buckets
  std::string causes, action;
  bool sympathetic = false;    // usually a consequence of another Xid (45)
  std::string source;
};
struct SxidRange {
  int first = 0, last = 0;
  std::string name;
  std::string fatality;        // "non-fatal" | "potentially fatal" | "always fatal"
  std::string source;
};
struct CudaDriverMin {          // CUDA toolkit release -> minimum Linux driver
  std::string cuda;             // "12.4"
  std::string release;          // "12.4 GA"
  std::string min_driver;       // "550.54.14"
  std::string source;
};
struct MinorCompat {            // CUDA major -> driver floor for minor-version compatibility
  int cuda_major = 0;
  std::string min_driver;       // "525.60.13"
  std::string source;
};
struct ArchSupport {            // CUDA major -> compute capability range compiled for
  int cuda_major = 0;
  std::string min_cc, max_cc;
  std::string source;
};
struct TorchRelease {
  std::string version;          // "2.4"
  std::vector<std::string> cuda_tags;  // "cu118", "cu121", "cu124"
  std::string source;
};
struct WheelArchs {             // architectures compiled into a wheel flavour
  std::string tag;              // "cu126"
  std::string torch_min, torch_max;  // inclusive release range this list applies to ("" = any)
  std::vector<std::string> archs;    // "5.0", "9.0", "12.0+PTX"
  std::string source;
};
struct GpuArchByName {          // product-name substring -> compute capability
  std::string match;            // "H100"
  std::string cc;               // "9.0"
  std::string source;
};
struct ErrorSignature {         // exact error text -> meaning, for docs and the app-log rules
  std::string id, text, meaning, source;
};

struct DoctorKnowledge {
  std::map<int, XidInfo> xids;
  std::vector<SxidRange> sxids;
  std::vector<CudaDriverMin> cuda_driver_min;
  std::vector<MinorCompat> minor_compat;
  std::vector<ArchSupport> arch_support;
  std::vector<TorchRelease> torch_releases;
  std::vector<WheelArchs> wheel_archs;
  std::vector<GpuArchByName> gpu_arch_by_name;
  std::vector<ErrorSignature> error_signatures;
  std::map<std::string, std::string> thresholds_source;  // threshold key -> source text
  std::map<std::string, double> thresholds;              // see data/doctor/thresholds.toml

  // Loads the embedded data files (strict: unknown keys and missing sources are errors).
  static Result<DoctorKnowledge> LoadEmbedded();
  // Parses the three files from text (for tests and user overrides).
  static Result<DoctorKnowledge> FromText(std::string_view xid_toml, std::string_view compat_toml,
                                          std::string_view thresholds_toml);

  const XidInfo* FindXid(int code) const;
  const SxidRange* FindSxid(int code) const;
  double Threshold(const std::string& key) const;  // 0 when absent (LoadEmbedded checks all exist)
};

// ---------------------------------------------------------------------------------------
// Pure parsers. All take the input text and its name; none does I/O. They never throw,
// never crash and run in time linear in the input. Problems are reported in the result
// (partial result) or as a ParseError status when nothing could be read.
// ---------------------------------------------------------------------------------------

// Kernel log (dmesg, journalctl -k, /var/log/kern.log, syslog). Lines over 64 KiB are cut.
KernelLogParse ParseKernelLog(std::string_view text, std::string_view name);
// The same parser fed in pieces split anywhere (e.g. 4 MiB reads of a multi-gigabyte file), so
// memory stays bounded by the chunk size plus one line. Feed() any number of times, then Finish()
// once. Gives exactly what ParseKernelLog gives on the concatenated text.
class KernelLogScanner {
 public:
  explicit KernelLogScanner(std::string name);
  void Feed(std::string_view chunk);
  KernelLogParse Finish();

 private:
  std::string name_;
  std::string carry_;  // a partial line waiting for its '\n' (at most 64 KiB + 1)
  int64_t lines_ = 0;
  bool cut_ = false;
  KernelLogParse out_;
};
// nvidia-smi -q -x. Accepts old (clocks_throttle_reasons, power_readings, pre-Ampere ECC) and
// new element names, "N/A"/"[N/A]" values and MIG devices.
Result<std::vector<GpuTelemetry>> ParseSmiXml(std::string_view text, std::string_view name);
// nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits] (needs a header) and
// --query-compute-apps CSV (processes are returned attached to a GpuTelemetry per bus id).
struct SmiCsvParse {
  std::vector<GpuTelemetry> gpus;
  std::vector<std::pair<std::string, GpuProcess>> processes;  // (bus id, process)
  std::vector<std::string> problems;
};
Result<SmiCsvParse> ParseSmiCsv(std::string_view text, std::string_view name);
// Prometheus text exposition from dcgm-exporter (both 2.x+ and 1.x metric names).
struct PrometheusParse {
  std::vector<GpuTelemetry> gpus;  // one per (host, gpu index)
  int64_t samples = 0;
  std::vector<std::string> problems;
};
Result<PrometheusParse> ParsePrometheus(std::string_view text, std::string_view name);
// Application logs.
AppLogParse ParseAppLog(std::string_view text, std::string_view name);

// PCI bus id normalisation: "00000000:53:00.0", "PCI:0000:53:00", "0000:53:00" -> "0000:53:00.0".
std::string NormalizeBusId(std::string_view id);

// Driver version comparison: "525.60.13" vs "550.54.14"; -1, 0, 1. Non-numeric parts compare as 0.
int CompareVersions(std::string_view a, std::string_view b);

// ---------------------------------------------------------------------------------------
// Diagnosis
// ---------------------------------------------------------------------------------------

struct GpuSummary {
  std::optional<int> index;
  std::string pci_bus_id, uuid, name, host;
  State state = State::kPass;  // worst finding about this GPU
  int findings = 0;            // non-PASS findings
  std::vector<std::string> codes;
};

struct DoctorReport {
  std::vector<Finding> findings;  // sorted: FAIL, ERROR, WARN, SKIP, PASS; then GPU, then code
  std::vector<GpuSummary> gpus;
  State overall = State::kPass;   // worst state over the findings (SKIP counts as PASS)
  std::map<std::string, std::string> facts;  // the facts used (driver, torch, cuda ...)
};

// Runs every rule. Never fails: unparsable inputs become ERROR findings.
DoctorReport Diagnose(const DoctorInputs& inputs, const DoctorKnowledge& knowledge);

// Exit codes of `suanli doctor` (documented in docs/doctor.md). Distinct from the general CLI
// codes 1 (usage) and 2 (invalid input), which still apply to bad flags and unreadable files.
constexpr int kExitHealthy = 0;
constexpr int kExitWarn = 10;
constexpr int kExitFail = 11;
constexpr int kExitError = 12;
int ExitCodeForState(State overall);

// ---------------------------------------------------------------------------------------
// Inputs from files: --bundle DIR and `doctor collect`.
// ---------------------------------------------------------------------------------------

// Bundle layout (docs/doctor.md): kernel.log, nvidia-smi.xml, nvidia-smi.csv,
// nvidia-smi-apps.csv, app*.log, metrics*.prom, facts.env (KEY=VALUE lines), manifest.json.
// Unknown files are ignored; a bundle with none of the known files is an error.
Status LoadBundle(const std::string& dir, DoctorInputs* inputs);
// Parses "KEY=VALUE"; keys are lower-cased. Error on a missing '=' or empty key.
Status AddFact(std::string_view key_value, DoctorInputs* inputs);
// The same for a fact the user typed (--env): the key must be one the rules or the report use (docs/doctor.md;
// "did you mean" otherwise), and a version must read as one (driver 550.54.14, torch 2.4.0+cu124, torch_cuda 12.4
// or None, compute_cap 9.0), since a mistyped one would be compared as if it were real. A bundle's facts.env goes
// through AddFact, which keeps what a newer collector wrote.
Status AddUserFact(std::string_view key_value, DoctorInputs* inputs);

// ---------------------------------------------------------------------------------------
// The live path.
// ---------------------------------------------------------------------------------------

// What the live collector may read from the host. The real implementation reads files,
// environment variables and runs fixed read-only commands; tests use a fake.
class HostProbe {
 public:
  virtual ~HostProbe() = default;
  virtual std::optional<std::string> ReadFile(const std::string& path) = 0;  // nullopt if unreadable
  virtual std::optional<std::string> GetEnv(const std::string& name) = 0;
  virtual std::map<std::string, std::string> Environ() = 0;  // all variables (NCCL_*, CUDA_*)
  // Runs a command from a fixed list (argv, no shell); nullopt when absent or failing.
  virtual std::optional<std::string> Run(const std::vector<std::string>& argv) = 0;
  virtual std::vector<std::string> ListDir(const std::string& path) = 0;  // names, empty if none
};
std::unique_ptr<HostProbe> MakeRealHostProbe();

// GPU telemetry source for the live path.
class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  virtual std::string Name() const = 0;  // "nvml", "fake:<profile>"
  // Telemetry for every GPU, or an error saying why it is not available (library missing,
  // symbol missing, nvmlInit failed with its message).
  virtual Result<std::vector<GpuTelemetry>> Query() = 0;
  virtual Result<std::string> DriverVersion() = 0;
};
// NVML loaded with dlopen("libnvidia-ml.so.1"); construction never fails, Query() reports why
// NVML is unavailable.
std::unique_ptr<DeviceBackend> MakeNvmlBackend();
// A fake backend from a machine profile: an nvidia-smi XML document (the same format the
// offline path reads), so any real capture can be replayed as a "machine".
Result<std::unique_ptr<DeviceBackend>> MakeFakeBackend(std::string_view smi_xml_profile, std::string name);
// A backend that always fails with `message` (tests of the "not available" path).
std::unique_ptr<DeviceBackend> MakeUnavailableBackend(std::string message);

// Fills `inputs` from the live machine: NVML telemetry, /proc/driver/nvidia/version, kernel
// log (dmesg / journalctl -k when readable), nvidia-smi -q -x and --query-compute-apps when
// present, CUDA libraries, CUDA_VISIBLE_DEVICES and NCCL_* variables, installed PyTorch
// (torch/version.py read from site-packages; nothing is imported). What could not be read
// becomes a SKIP note, not an error.
void CollectLive(HostProbe& host, DeviceBackend& device, DoctorInputs* inputs);

// Writes a bundle (layout above) from the live machine into `dir` (created if missing).
// Returns the files written.
Result<std::vector<std::string>> WriteBundle(HostProbe& host, DeviceBackend& device, const std::string& dir);

}  // namespace suanli::doctor
