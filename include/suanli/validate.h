// The validation harness: runs every published measurement in a cases file through the
// performance model and reports predicted vs published, per case and per group.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "suanli/hardware.h"
#include "suanli/model.h"
#include "suanli/status.h"

namespace suanli {

struct ValidationCase {
  std::string group;    // training | decode | ttft | throughput | latency | gemm | attention | collective, or a user file's own
  std::string role;     // calibration | holdout
  std::string name;
  std::string gpu;      // catalog id of the case's GPU
  bool moe = false;     // the case's model is a mixture of experts (bands of dense-model estimates leave it out)
  std::string source;
  std::string metric;
  double published = 0;
  double predicted = 0;
  double error = 0;     // (predicted - published) / published
  double step_time_s = 0;  // training cases: the predicted step time (whatever the metric), else 0
  double ttft_s = 0, tpot_s = 0;  // serving cases: the predicted time to first token and per output token, else 0
  // Training and serving cases: the `suanli` arguments ("perf", "train" or "infer", then the flags) that run the same
  // estimate from the command line, every setting the case's evaluation uses written out (its --model a catalog id or
  // the config file's path, relative to the cases file's folder; the bundled cases' in the source tree); empty for
  // GEMM and attention kernels and for a case that could not be evaluated. `suanli validate --command` prints it.
  std::vector<std::string> command;
  // The same error signed so that positive means the model was too fast: `error` for rates (tokens/s, TFLOP/s,
  // MFU), -`error` for times (step_time_s, ttft_s, e2e_latency_s).
  double fast_error() const;
  std::string failure;  // non-empty when the case could not be evaluated
  std::string detail;   // layout chosen etc.
  // Training and serving cases: whether the memory model puts the published run within its GPU's memory (every
  // bundled run ran, so false is a miss of the memory model).
  bool fits = true;
  // GEMM micro-benchmarks: the dense peak of the precision.
  // Training figures: the step's least work (6 FLOPs per matmul weight per token, 4 for LoRA) at the dense peak, MFU
  // at most 1, TFLOP/s at most the peak (docs/methodology.md §8).
  // Serving figures at a stated batch (no speculation, one pipeline stage), docs/methodology.md §9.5. Rates (decode
  // tokens/s, output tokens/s per GPU or per replica): the most the GPU could deliver if every decode step only read
  // the weights it must, once, at the datasheet bandwidth. The time to first token: the least the prefill could take,
  // its GEMM FLOPs at the datasheet peak or its weights at the datasheet bandwidth, whichever is longer. 0 where not
  // computed. A published figure beyond it is a transcription error or a configuration other than the case states.
  double bound = 0;
  bool within_bound() const;
};

struct ValidationGroup {
  std::string group;
  int cases = 0;
  double mean_abs_error = 0, worst_abs_error = 0;
  double mean_abs_error_calibration = 0, mean_abs_error_holdout = 0;
  int holdout_cases = 0;
  int beyond_bound = 0;  // cases whose published figure is beyond its physical bound (ValidationCase::within_bound)
  double target_mean = 0, target_worst = 0;  // 0 = no target
  bool meets_target() const {
    return target_mean <= 0 || (mean_abs_error <= target_mean && worst_abs_error <= target_worst);
  }
};

struct ValidationReport {
  std::vector<ValidationCase> cases;
  std::vector<ValidationGroup> groups;
};

// Reads a file referenced by the cases file (model configs), relative to it.
using CaseFileReader = std::function<Result<std::string>(const std::string& relative_path)>;

// An efficiency table in data/efficiency.toml's format that replaces the bundled one for a validation run
// (`suanli validate --efficiency FILE`): how a fitted constant is scanned and cross-validated without a rebuild
// (scripts/fit_scan.py, docs/validation.md §4).
struct EfficiencyTable {
  std::string text;
  std::string file;  // for error messages
};

Result<ValidationReport> RunPerfValidation(std::string_view cases_toml, std::string_view file,
                                           const HardwareCatalog& hw, const ModelCatalog& models,
                                           const CaseFileReader& read, const EfficiencyTable* efficiency = nullptr);
// Each group's case count, mean and worst |error| (an unevaluable case counts as 100%), calibration and held-out means
// and target, over these cases (RunPerfValidation's groups; a selection's own summary).
std::vector<ValidationGroup> SummarizeValidation(const std::vector<ValidationCase>& cases);
// The bundled cases (tests/validation/perf_cases.toml, embedded at build time).
Result<ValidationReport> RunBundledPerfValidation(const HardwareCatalog& hw, const ModelCatalog& models,
                                                  const EfficiencyTable* efficiency = nullptr);

}  // namespace suanli
