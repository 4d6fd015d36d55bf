// The planner: exhaustive search over parallel layouts for a training job, ranked by step time,
// cost or tokens per dollar; the launch configuration for the tools people run; and the GPU
// selector for training and serving.
//
// Thread safety: Plan() runs its own worker threads; everything it touches is read-only.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "suanli/hardware.h"
#include "suanli/memory.h"
#include "suanli/model.h"
#include "suanli/perf.h"
#include "suanli/status.h"

namespace suanli {

enum class Objective { kTime, kCost, kTokensPerDollar };
Result<Objective> ParseObjective(std::string_view s);

inline constexpr int kMaxPlanThreads = 1024;

struct PlanRequest {
  const ModelSpec* model = nullptr;
  Cluster cluster;
  Efficiency eff;
  std::vector<int> gpu_counts;       // one count, or a range (best layout at each)
  int64_t global_batch = 0;          // sequences per step
  int64_t seq = 2048;
  Precision dtype = Precision::kBf16;
  Fp8Recipe fp8_recipe = Fp8Recipe::kDelayed;  // with dtype fp8
  bool fp8_params = false;           // FP8 parameters (perf train --weights fp8); written as --fp8-param-gather
  AttentionImpl attention = AttentionImpl::kFlash;
  CrossEntropyImpl cross_entropy = CrossEntropyImpl::kFused;  // the loss; written into the Megatron-LM flags
  int mtp_layers = 0;                // multi-token-prediction modules on the last stage (FitRequest::mtp_layers)
  bool eager = false;                // eager PyTorch element-wise kernels (TrainConfig::eager)
  // The optimizer's precision (FitRequest::master, ::moments); written into the Megatron-LM flags.
  MasterCopy master = MasterCopy::kFp32;
  MomentsDtype moments = MomentsDtype::kFp32;
  bool dp_overlap = true;
  double dp_bucket_bytes = 0;        // TrainConfig::dp_bucket_bytes (0: Megatron-Core's rule); written as --ddp-bucket-size
  // Overlaps the stack runs (Megatron-Core --tp-comm-overlap, --overlap-moe-expert-parallel-comm): applied to the
  // layouts that can use them (TP overlap with sequence parallelism; EP overlap with EP > 1, an interleaved
  // schedule under PP, no full recompute) and written into the emitted launch flags.
  bool tp_overlap = false, ep_overlap = false;
  MoeDispatcher moe_dispatcher = MoeDispatcher::kAllToAll;  // for MoE layouts with EP > 1; written into the flags
  // How layouts with CP > 1 exchange attention's inputs (TrainConfig::cp_comm); written into the flags. With a2a a
  // layout whose heads do not divide by TP x CP is not offered.
  CpComm cp_comm = CpComm::kP2P;
  CudaGraphs cuda_graphs = CudaGraphs::kNone;                // sets the MoE-layer overhead; written into the flags
  // Also consider CPU activation offloading (Megatron-Core --cpu-offloading-num-layers) where nothing fits without
  // recompute on a PP 1 layout: the fewest layers that fit. Off by default: it needs pinned host memory, which the
  // catalog knows only where the CPU comes with the GPU (the plan reports how much).
  bool allow_offload = false;
  double host_memory_per_gpu_bytes = 0;  // FitRequest::host_memory_per_gpu_bytes (0: the catalog's, else unchecked)
  double tokens = 0;                 // tokens to train (for time, GPU-hours, cost)
  double price_per_gpu_hour = 0;     // for the cost objectives
  Objective objective = Objective::kTime;
  int top_k = 5;
  int threads = 0;                   // 0 = all hardware threads; at most kMaxPlanThreads
  // Optional constraints (0 / -1 = search): fix a degree the user has already decided.
  int fixed_tp = 0, fixed_pp = 0, fixed_cp = 0, fixed_ep = 0, fixed_zero = -1;
  int max_micro_batch = 64;
  // Only layouts DeepSpeed's pipeline engine runs (DeepSpeedRuns).
  bool deepspeed_runnable = false;
};

// Whether DeepSpeed's pipeline engine runs a layout: with PP > 1 only ZeRO 0 or 1 (deepspeed/runtime/pipe/engine.py
// refuses ZeRO-2 and -3 with pipeline parallelism).
inline bool DeepSpeedRuns(int pp, int zero) { return pp <= 1 || zero <= 1; }

// One configuration and its prediction.
struct PlanCandidate {
  Parallelism par;
  int64_t micro_batch = 1;
  Recompute recompute = Recompute::kNone;
  int recompute_layers = 0;          // with full recompute: block recompute of this many layers per chunk (0: all)
  RecomputeModules recompute_modules;  // with selective recompute: the modules that recompute
  int offload_layers = 0;            // CPU activation offloading of this many layers (PlanRequest::allow_offload)
  bool tp_overlap = false, ep_overlap = false;  // the overlaps this candidate was estimated with
  bool dp_overlap = true;
  MoeDispatcher moe_dispatcher = MoeDispatcher::kAllToAll;
  CpComm cp_comm = CpComm::kP2P;     // with CP > 1
  TrainResult result;                // full detail for the reported candidates
  double score = 0;                  // lower is better (seconds, USD, or USD per token)
  std::string why;                   // for a loser: which term it loses on against the winner
};

struct PlanForCount {
  int gpus = 0;
  std::vector<PlanCandidate> top;
  int64_t configs_evaluated = 0, configs_valid = 0;
  double scaling_efficiency = 0;     // tokens/s per GPU relative to the smallest count with a result
  std::string nearest_miss;          // when nothing fits: the closest layout and its shortfall
};

struct PlanResult {
  std::vector<PlanForCount> counts;
  int64_t configs_evaluated = 0, configs_valid = 0;
  double elapsed_s = 0;
  int threads = 1;
};

Result<PlanResult> Plan(const PlanRequest& req);

// Launch configurations for a chosen candidate, annotated with the prediction.
struct LaunchContext {
  const ModelSpec* model = nullptr;
  const GpuSpec* gpu = nullptr;
  int gpus_per_node = 8;   // the NVLink domain (the model's node)
  int gpus_per_host = 8;   // one OS image: the launch files' nodes, processes per node and GPU requests
  int64_t global_batch = 0, seq = 0;
  double train_iters = 0;            // steps for --tokens (0 = unknown)
  Fp8Recipe fp8_recipe = Fp8Recipe::kDelayed;  // written as --fp8-recipe when the plan runs FP8
  bool fp8_params = false;                     // written as --fp8-param-gather
  CudaGraphs cuda_graphs = CudaGraphs::kNone;  // written as --cuda-graph-impl / --cuda-graph-scope
  CrossEntropyImpl cross_entropy = CrossEntropyImpl::kFused;  // written as --cross-entropy-loss-fusion [-impl te]
  int mtp_layers = 0;                // written as --mtp-num-layers
  double dp_bucket_bytes = 0;        // PlanRequest::dp_bucket_bytes, written as --ddp-bucket-size (parameters)
  // Written as --use-precision-aware-optimizer with --main-params-dtype / --exp-avg(-sq)-dtype; what Megatron-Core
  // cannot express (a bf16 copy, no copy) is refused by CheckMegatronOptimizer before anything is written.
  MasterCopy master = MasterCopy::kFp32;
  MomentsDtype moments = MomentsDtype::kFp32;
  std::string job_name = "suanli-train";
  std::string image = "nvcr.io/nvidia/pytorch:24.05-py3";
};
// Whether Megatron-Core's precision-aware optimizer can run an optimizer precision (main params fp32, fp16 or as
// 16-bit remainders; moments fp32, fp16, bf16 or fp8); the error names what it cannot and what would do.
Status CheckMegatronOptimizer(MasterCopy master, MomentsDtype moments);
std::string MegatronArgs(const PlanCandidate& c, const LaunchContext& ctx);      // one argument per line
std::string TorchrunCommand(const PlanCandidate& c, const LaunchContext& ctx);
std::string DeepSpeedConfig(const PlanCandidate& c, const LaunchContext& ctx);   // JSON
std::string SlurmScript(const PlanCandidate& c, const LaunchContext& ctx);
std::string KubernetesPyTorchJob(const PlanCandidate& c, const LaunchContext& ctx);  // YAML

// The launch line of one serving replica as EstimateInference estimated it, for a serving engine: `vllm serve`,
// `trtllm-serve` (PyTorch backend) or SGLang's `python -m sglang.launch_server`. Each carries the tensor, pipeline
// and expert parallel sizes, the context (input + output), the estimate's batch as the engine's limit on running
// sequences, and the weight and KV-cache formats in the engine's words, under two comment lines with what was
// predicted. `model_ref` is what the engine loads (a Hugging Face repo id or a local directory); `m` is the model as
// its config describes it; `disable_sliding_window` is perf infer's --no-sliding-window. A configuration the engine
// cannot run as estimated is an error that says why: the GPU's vendor, a pre-quantised checkpoint it needs, a format
// it does not serve, a checkpoint stored quantised estimated in 16 bits, vLLM's EP being all of TP.
enum class ServeEngine { kVllm, kTrtllm, kSglang };
// "vllm", "trtllm" or "sglang" (any case); anything else is an error that names them, with "did you mean".
Result<ServeEngine> ParseServeEngine(std::string_view name);
const char* ServeEngineName(ServeEngine e);
Result<std::string> ServeCommand(ServeEngine e, const ModelSpec& m, const GpuSpec& g, std::string_view model_ref,
                                 const InferConfig& cfg, const InferResult& r, bool disable_sliding_window);

}  // namespace suanli

namespace suanli {

// ---- GPU selection ---------------------------------------------------------------------------
// Ranks every catalog GPU for a job, in the order practitioners recommend: memory fit first
// (exclusions say what would be needed), then bandwidth (decode), then compute (prefill, training
// throughput), then cost.

struct ServeTarget {
  const ModelSpec* model = nullptr;
  WeightFormat weights;            // empty id = bf16
  double kv_bytes_per_elem = 2;
  int64_t input_len = 1024, output_len = 256;
  int64_t concurrent_users = 1;    // sequences decoding at once, over all replicas
  double requests_per_s = 0;       // if given, concurrency = max(users, rps x end-to-end latency)
  double ttft_slo_s = 0, tpot_slo_s = 0;  // 0 = no objective
  int gpus_per_node = 0;  // 0: each GPU's reference NVLink domain (HardwareCatalog::DefaultGpusPerNode)
  DecodeAttention decode_attention = DecodeAttention::kGrouped;  // per-head: NVIDIA GPUs only
  double request_overhead_s = 0, step_overhead_s = 0;  // the engine's host time, as InferConfig (0 = none)
  Speculation spec;  // speculative decoding in every replica, as InferConfig (off by default)
};

struct SelectRow {
  std::string gpu;
  bool eligible = false;
  std::string exclusion;           // why not, in words
  std::string memory_note;         // e.g. "plain data parallelism does not fit: 59.9 GB of weights on a 42.9 GB GPU"
  int gpus = 0, tp = 1, pp = 1, replicas = 0;
  int64_t batch_per_replica = 0;
  double ttft_s = 0, tpot_s = 0, output_tokens_per_s = 0;
  double train_time_s = 0, gpu_hours = 0;
  double price_per_gpu_hour = 0;   // 0 = no price in the catalog
  double cost_per_hour_usd = 0, cost_usd = 0, cost_per_million_tokens_usd = 0;
  double memory_bandwidth_bytes_per_s = 0, peak_flops = 0;
  Parallelism layout;
  // Serving, eligible rows: one of the `replicas` as perf infer estimates it (ServeCommand writes its launch line).
  InferConfig replica;
  InferResult replica_result;
};

Result<std::vector<SelectRow>> SelectForServing(const HardwareCatalog& hw, const ServeTarget& t);

struct TrainTarget {
  const ModelSpec* model = nullptr;
  double tokens = 0;
  int64_t global_batch = 1024, seq = 4096;
  double deadline_s = 0;           // 0 = none
  double budget_usd = 0;           // 0 = none
  // 0: each GPU's reference NVLink domain (HardwareCatalog::DefaultGpusPerNode), with GPU counts in whole hosts
  // (HardwareCatalog::GpusPerHost); given: nodes of this many GPUs, counts in whole nodes.
  int gpus_per_node = 0;
  std::string inter_node;  // empty: each GPU's reference fabric (HardwareCatalog::DefaultFabric)
  int max_gpus = 8192;
};
Result<std::vector<SelectRow>> SelectForTraining(const HardwareCatalog& hw, const TrainTarget& t);

}  // namespace suanli
