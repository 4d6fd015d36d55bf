// `suanli bench`: baseline micro-benchmarks with correctness checks, states judged
// against the datasheet, and the calibration file the performance model reads.
//
// How the pieces fit (docs/bench-method.md has the measurement method):
//
//   PlanCases(devices, options)          which benchmarks to run here (pure)
//     -> BenchDevice::Run(case)          raw samples + correctness counts (CUDA plugin, CPU, or a fake)
//        under an Isolation              (a child process with a watchdog, or in-process for tests)
//     -> Evaluate(case, measurement...)  median and spread, datasheet peak, fraction, state (pure)
//   RunBench() does all three for every case and returns a BenchRun.
//
// Units: every value is in SI base units named by `unit`: "B/s" (bytes per second,
// 1 GB/s = 1e9 B/s), "FLOP/s" (int8: "OP/s"), "s" (lower is better), "ratio".
//
// Errors: library functions return Status/Result and never print or exit. A benchmark
// that cannot run is not an error of the call: it yields a result in state SKIP (not
// applicable here, with the reason) or ERROR (could not run, with the reason).
//
// Thread safety: the free functions are pure. A BenchDevice is used from one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "suanli/hardware.h"
#include "suanli/model.h"
#include "suanli/status.h"

namespace suanli {

// ---------------------------------------------------------------------------------------------
// States and statistics

// The five result states. PASS: ran, verified, at or above the expected fraction.
// WARN: ran and verified but below the expected fraction (or drifted). FAIL: a wrong result
// (mismatch, NaN) or far below expectation. SKIP: not applicable here (no GPU, unsupported
// precision, one GPU only). ERROR: could not run (allocation failed, timed out, crashed).
enum class BenchState { kPass, kWarn, kFail, kSkip, kError };
const char* BenchStateName(BenchState s);  // "PASS", "WARN", "FAIL", "SKIP", "ERROR"
std::optional<BenchState> BenchStateFromName(std::string_view name);
// The more severe of two states: FAIL > ERROR > WARN > PASS > SKIP.
BenchState WorseState(BenchState a, BenchState b);

// Summary of repeated samples of one quantity (in the quantity's unit).
struct Spread {
  int samples = 0;
  double median = 0;
  double min = 0;
  double max = 0;
  double mean = 0;
  double stddev = 0;     // sample standard deviation (n-1); 0 for one sample
  double ci95_low = 0;   // 95% confidence interval of the median (order statistics,
  double ci95_high = 0;  // distribution-free); equals [min, max] for fewer than 6 samples
};
// Errors: empty input, or a non-finite value.
Result<Spread> ComputeSpread(std::vector<double> values);

// ---------------------------------------------------------------------------------------------
// Benchmark cases

enum class BenchKind {
  kMemRead,        // device memory, read-only stream kernel (bytes counted once)
  kMemWrite,       // write-only stream kernel
  kMemCopy,        // b[i] = a[i]; bytes counted read + write (2x buffer)
  kMemTriad,       // a[i] = b[i] + s * c[i]; bytes counted 2 reads + 1 write (3x buffer)
  kMemcpyD2D,      // bare cudaMemcpyAsync device-to-device, read + write counted
  kGemm,           // one GEMM shape through cuBLASLt (or BLAS on the CPU)
  kLayerSequence,  // the forward + backward GEMMs of one transformer layer, timed as a whole
  kH2D,            // host -> device copy (pinned or pageable)
  kD2H,            // device -> host copy
  kP2P,            // device -> peer device copy
  kLaunchLatency,  // empty-kernel launch, seconds per launch
  kAllReduce,      // NCCL all-reduce over all GPUs, bus bandwidth (nccl-tests convention)
  kHarnessOverhead,  // derived: our copy kernel vs bare cudaMemcpy D2D, ratio
};
const char* BenchKindName(BenchKind k);

// Numeric formats for GEMMs. The subset of Precision that benchmarks use.
struct GemmShape {
  std::string name;   // e.g. "qkv.fwd"; empty for square sweeps
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int64_t batch = 1;  // batched GEMM count (attention: micro_batch x heads)
  double Flops() const { return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) *
                                static_cast<double>(batch); }
};

struct BenchCase {
  std::string name;            // stable key, e.g. "gpu.mem.triad", "gpu.gemm.bf16.8192", "cpu.gemm.fp32"
  BenchKind kind = BenchKind::kMemRead;
  bool on_gpu = true;          // false: the CPU fallback suite
  int device = 0;              // GPU index (ignored on the CPU)
  int peer = -1;               // P2P destination
  int64_t bytes = 0;           // buffer size per array, bytes (memory and copy tests)
  bool pinned = false;         // host copies: page-locked host memory
  Precision precision = Precision::kFp32;
  std::vector<GemmShape> gemms;  // one shape (kGemm) or the layer sequence (kLayerSequence)
  int warmup = 3;
  int reps = 20;
  double time_limit_s = 60;    // watchdog: the case is killed and reported ERROR after this
  std::string unit;            // "B/s", "FLOP/s", "OP/s", "s", "ratio"
  std::string convention;      // how work is counted, printed with every result
  bool higher_is_better = true;
  std::string skip_reason;     // set by the planner when the case cannot apply (e.g. FP8 before sm_89)
};

// What a device backend returns for one case. `seconds` holds one wall time per timed
// repetition; `work_per_rep` the bytes, FLOPs or launches done by one repetition.
struct Measurement {
  BenchState outcome = BenchState::kPass;  // kPass: it ran; kSkip / kError with `message`
  std::string message;
  std::vector<double> seconds;
  double work_per_rep = 0;
  int64_t checked = 0;       // values compared against a reference
  int64_t mismatches = 0;    // of those, how many differed beyond the tolerance
  int64_t nans = 0;          // NaN or Inf values found in the output
  std::string check_method;  // e.g. "256 sampled outputs vs host reference (exact integers)"
};

// ---------------------------------------------------------------------------------------------
// Devices

struct DeviceInfo {
  int index = 0;
  bool is_gpu = false;
  std::string name;               // "NVIDIA H100 80GB HBM3" or the CPU model
  std::string uuid;               // GPU-xxxxxxxx-...; empty on the CPU
  std::string serial;             // board serial (NVML); empty when unknown
  std::string pci_bus_id;         // 0000:18:00.0
  std::string driver_version;     // e.g. "580.105.08"; empty when unknown
  std::string cuda_version;       // runtime/driver API version, e.g. "13.0"
  std::string compute_capability; // "9.0"
  int sm_count = 0;
  double memory_bytes = 0;
  double l2_bytes = 0;
  std::string catalog_id;         // the matching hardware-catalog entry, "" if none
};

// The state of a GPU before benchmarks run. A busy GPU still runs, but its results are
// capped at WARN with the reasons attached.
struct IdleReport {
  bool known = false;                 // false: no NVML, state unknown
  bool idle = true;
  std::vector<std::string> reasons;   // "2 other compute processes", "temperature 85 C"
  std::optional<double> temperature_c;
  std::optional<double> sm_clock_mhz;
  std::optional<double> sm_clock_max_mhz;
  std::optional<int> compute_processes;
};

// A source of measurements: the CUDA plugin, the CPU, or a fake in tests.
class BenchDevice {
 public:
  virtual ~BenchDevice() = default;
  virtual std::string Kind() const = 0;  // "cuda", "cpu", "fake"
  // Why this backend cannot run here (e.g. "built without CUDA"), or OK.
  virtual Status Available() = 0;
  virtual Result<std::vector<DeviceInfo>> Devices() = 0;
  // Runs in the calling process; must not initialise CUDA (NVML only).
  virtual IdleReport CheckIdle(const DeviceInfo& device) = 0;
  virtual Measurement Run(const BenchCase& c) = 0;
};

// The CPU backend: STREAM-style triad over all hardware threads, BLAS GEMM (OpenBLAS).
std::unique_ptr<BenchDevice> MakeCpuDevice();
// The CUDA backend: dlopen()s the plugin at `plugin_path` (in the benchmark process, never in
// the caller's). Never fails: when the plugin or a driver is missing, Available() says why and
// every GPU case is SKIP. An empty path means "built without CUDA". NVML (serial number, driver
// version, idle check) comes from `nvml_path`, or from the driver's libnvidia-ml.so.1 when empty;
// without NVML those fields stay empty and the idle state is "unknown".
std::unique_ptr<BenchDevice> MakeCudaDevice(const std::string& plugin_path, const std::string& nvml_path = "");
// Whether this build produced the CUDA plugin.
bool BuiltWithCuda();

// Host description stored with every run.
struct NumaNode {
  int id = 0;
  std::string cpus;          // "0-15,32-47"
  double memory_bytes = 0;
};
struct HostInfo {
  std::string hostname;
  std::string cpu_model;
  int logical_cpus = 0;
  double memory_bytes = 0;
  std::string kernel;
  std::vector<NumaNode> numa;
  std::string blas;          // the BLAS library in use
};
HostInfo ReadHostInfo();

// ---------------------------------------------------------------------------------------------
// Running under a watchdog

// Runs a unit of work and returns its output text. Implementations: in the calling process
// (no kill possible: used by tests), or in a child process killed after `limit_s`.
class Isolation {
 public:
  virtual ~Isolation() = default;
  // Errors: kInternal with "timed out after N s (killed by the watchdog)" or "crashed (signal N)".
  virtual Result<std::string> Run(const std::function<std::string()>& work, double limit_s) = 0;
};
std::unique_ptr<Isolation> MakeInProcessIsolation();
// fork() per call; the child never returns into the caller. CUDA must not have been
// initialised in the calling process.
std::unique_ptr<Isolation> MakeChildProcessIsolation();

// ---------------------------------------------------------------------------------------------
// Expectations: fractions of the datasheet peak, per GPU family (data/bench_expectations.toml)

struct Expectation {
  std::string family;         // a family ("nvidia-hbm", "nvidia-gddr") or a catalog GPU id
  std::string test;           // a case name, or a prefix ending in '*'
  double pass_fraction = 0;   // at or above: PASS
  double fail_below = 0;      // below: FAIL; in between: WARN
  std::string source;
};
class Expectations {
 public:
  static Result<Expectations> Parse(std::string_view text, std::string_view file);
  static Result<Expectations> LoadEmbedded();
  // The most specific expectation: a GPU id beats a family, a longer pattern beats a shorter.
  const Expectation* Find(const GpuSpec& gpu, std::string_view test) const;
  const std::vector<Expectation>& all() const { return rows_; }

 private:
  std::vector<Expectation> rows_;
};
// "nvidia-hbm", "nvidia-gddr", "amd-hbm", ... from the vendor and the memory type.
std::string GpuFamily(const GpuSpec& gpu);
// The catalog entry for a device name reported by the driver, or nullptr.
const GpuSpec* MatchCatalogGpu(const HardwareCatalog& catalog, std::string_view device_name);

// ---------------------------------------------------------------------------------------------
// Results

struct BenchResult {
  std::string name;
  std::string device;            // "gpu0", "gpu1", "cpu"
  int device_index = -1;         // -1 for the CPU
  BenchKind kind = BenchKind::kMemRead;
  BenchState state = BenchState::kSkip;
  std::string message;           // why SKIP/ERROR/FAIL/WARN
  double value = 0;              // the median, in `unit`
  std::string unit;
  bool higher_is_better = true;
  Spread spread;                 // over repetitions, in `unit`
  std::optional<double> peak;    // datasheet peak in `unit`
  std::string peak_source;
  std::optional<double> fraction;          // value / peak
  std::optional<double> expected_fraction; // PASS threshold
  std::optional<double> fail_below;
  std::string expectation_source;
  std::string convention;
  int64_t bytes = 0;
  std::string precision;         // GEMMs
  std::vector<GemmShape> gemms;
  int64_t checked = 0, mismatches = 0, nans = 0;
  std::string check_method;
};

// Turns one measurement into a judged result. `gpu` is the catalog entry (nullptr: no peak).
BenchResult Evaluate(const BenchCase& c, const Measurement& m, const GpuSpec* gpu, const Expectations& expect);
// The datasheet peak for a case in the case's unit, and its source; nullopt when not defined.
std::optional<Sourced<double>> DatasheetPeak(const BenchCase& c, const GpuSpec& gpu);

// ---------------------------------------------------------------------------------------------
// Planning and running

struct BenchOptions {
  std::vector<std::string> only;  // case names or prefixes ("gpu.mem", "cpu.gemm.fp32"); empty: all
  std::optional<ModelSpec> model; // --model: its layer GEMMs and the training-layer baseline
  int64_t micro_batch = 1;
  int64_t seq = 2048;
  bool quick = false;             // small sizes (tests, smoke runs)
  double time_limit_s = 120;      // per case
};

// The options' ranges: a time limit in (0, 1 day] (a larger one overflowed the watchdog's clock and timed every case
// out at once), a micro-batch of 1..4096 and a sequence of 1..1,048,576 tokens. InvalidArgument naming the flag.
// PlanCases checks them too.
Status ValidateBenchOptions(const BenchOptions& options);

// Forward and backward GEMMs of one transformer layer at micro_batch x seq tokens (BF16 training).
// Forward y = x W: (m = tokens, n = out, k = in); backward dX: (tokens, in, out); dW: (in, out, tokens).
// Attention core counted as full (non-causal) batched GEMMs; MoE experts as one GEMM over
// tokens x top-k rows. Errors: a model without hidden/ffn/heads.
Result<std::vector<GemmShape>> LayerGemms(const ModelSpec& m, int64_t micro_batch, int64_t seq, bool forward_only);

// Every case that applies to these GPUs (may be empty) plus the CPU suite, filtered by
// `only`. Errors: an `only` entry matching no case (with "did you mean").
Result<std::vector<BenchCase>> PlanCases(const std::vector<DeviceInfo>& gpus, const BenchOptions& options);
// The names every plan may contain, for --only help and "did you mean".
std::vector<std::string> KnownCaseNames(const BenchOptions& options);

struct BenchRun {
  std::string started_at;   // UTC, ISO 8601
  std::string suanli_version;
  HostInfo host;
  std::string gpu_backend_status;  // "ok" or why GPU cases are SKIP
  std::vector<DeviceInfo> devices; // GPUs
  std::map<int, IdleReport> idle;  // by GPU index
  std::vector<BenchResult> results;
  BenchState Overall() const;      // the worst state, PASS when empty
};

struct BenchEnv {
  BenchDevice* gpu = nullptr;          // may be null: GPU cases SKIP
  BenchDevice* cpu = nullptr;          // may be null: CPU cases SKIP
  Isolation* isolation = nullptr;      // required
  const HardwareCatalog* catalog = nullptr;  // required
  const Expectations* expectations = nullptr;  // required
  std::string suanli_version;
  std::function<std::string()> now_utc;  // clock seam; default: the system clock
  std::function<void(const BenchResult&)> on_result;  // progress callback (the CLI prints)
};
Result<BenchRun> RunBench(const BenchEnv& env, const BenchOptions& options);

// Versioned JSON ("suanli.bench/1"); the store keeps it whole.
std::string BenchRunToJson(const BenchRun& run);
std::string BenchResultJsonKey();  // "results"

// ---------------------------------------------------------------------------------------------
// Calibration: measured ceilings for `suanli perf --calibration FILE` (docs/bench-method.md §8)

struct CalibrationGemm {
  int64_t m = 0, n = 0, k = 0;
  double flops_per_s = 0;     // achieved, FLOP/s (int8: OP/s)
};
struct Calibration {
  std::string gpu;            // catalog id, "" when unknown
  std::string device_name;
  std::string device_uuid;
  std::string measured_at;
  std::optional<double> memory_bandwidth_bytes_per_s;  // achieved device-memory bandwidth (triad)
  std::map<Precision, std::vector<CalibrationGemm>> gemm;  // sorted by m, n, k
  // Link bandwidths, bytes/s, by key: "h2d_pinned", "d2h_pinned", "h2d_pageable", "d2h_pageable",
  // "p2p" (one direction, median over peers), "allreduce_busbw" (NCCL bus bandwidth).
  std::map<std::string, double> link_bandwidth_bytes_per_s;
  std::optional<double> launch_latency_s;  // seconds per back-to-back kernel launch
};
// Pure parser. Errors name the file and key; unknown keys are rejected.
Result<Calibration> ParseCalibrationToml(std::string_view text, std::string_view file);
std::string CalibrationToToml(const Calibration& c);
// The calibration of one device from a run's PASS/WARN results. Errors: nothing usable.
Result<Calibration> CalibrationFromResults(const std::vector<BenchResult>& results, const DeviceInfo& device,
                                           const std::string& measured_at);

}  // namespace suanli
