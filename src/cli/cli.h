// Shared pieces of the suanli command-line front end. The CLI is the only part of
// suanli that prints or chooses an exit code.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "suanli/hardware.h"
#include "suanli/model.h"
#include "suanli/perf.h"
#include "suanli/status.h"

namespace suanli::cli {

// Exit codes (docs/manual.md): 0 success; 1 usage error; 2 invalid input; 3 does not fit /
// check failed; 4 internal or I/O error. `doctor` and `bench` document their own.
constexpr int kExitOk = 0;
constexpr int kExitUsage = 1;
constexpr int kExitInvalid = 2;
constexpr int kExitNoFit = 3;
constexpr int kExitInternal = 4;

int ExitCodeFor(const Status& s);

struct GlobalOptions {
  bool json = false;
  std::vector<std::string> catalog_dirs;  // --catalog DIR
  bool no_user_catalog = false;
};

// Loads catalogs once per process, with the user's overrides.
class Context {
 public:
  explicit Context(const GlobalOptions* g) : g_(g) {}
  Result<const HardwareCatalog*> hardware();
  Result<const ModelCatalog*> models();
  const GlobalOptions& options() const { return *g_; }

 private:
  CatalogOptions CatalogOpts() const;
  const GlobalOptions* g_;
  std::optional<HardwareCatalog> hw_;
  std::optional<ModelCatalog> models_;
};

// A command: registers its options on `sub` and returns the action run after parsing.
using Action = std::function<int()>;
struct Command {
  const char* name;
  const char* summary;
  std::function<Action(CLI::App* sub, Context* ctx)> setup;
};
const std::vector<Command>& Commands();

// What the perf/plan commands load first: the model, the GPU, its cluster and efficiencies.
struct Job {
  ModelSpec model;
  const HardwareCatalog* hw = nullptr;
  const GpuSpec* gpu = nullptr;
  Cluster cluster;
  Efficiency eff;
};
// gpus_per_node 0 and an empty inter_node take the GPU's reference system's (HardwareCatalog::DefaultGpusPerNode,
// DefaultFabric); the options that set them refuse those values when given (NodeCount, NonEmpty).
Result<Job> LoadJob(Context* ctx, const std::string& model, const std::string& gpu, int gpus_per_node,
                    const std::string& inter_node, int nics_per_node);

// Validators for options whose unset value means "the default": a count of GPUs given explicitly must be 1..1024,
// and a name given explicitly must not be empty.
const CLI::Validator& NodeCount();
const CLI::Validator& NonEmpty();
// --dp-bucket-mb: above 0 and at most 1e6 MB; 0 would silently mean the default bucket rule, so it is refused.
const CLI::Validator& BucketMb();
// A number that, when given, must be above 0: an objective or limit of 0 cannot be met, and leaving the option out
// is "none" (CLI11's own PositiveNumber prints the double's whole range).
const CLI::Validator& Positive();
// A count whose 0 is its "not given": 0 typed is an error; other values reach the library, whose range message names
// the model's own limit (--offload-layers: 1 to the layers less one).
const CLI::Validator& NotZero();
// A count whose 0 is its "not given", 1 to 2^20 when given (fit's --gpus and --dp, which the library reads as not
// given at 0 and below; perf infer's --gpus; plan's pinned degrees).
const CLI::Validator& Count();
// --max-batch when given: the serving batch's own range (the library reads 0 and below as "no cap").
const CLI::Validator& ServingMaxBatch();

// Printing helpers.
int PrintError(const Status& s);
void PrintJson(const nlohmann::json& j);
nlohmann::json JsonEnvelope(const char* schema);  // {"schema": "suanli.<x>/<n>", "suanli_version": ...}
// A training step's breakdown as JSON (breakdown_s): one key per kBreakdownTerms entry, in seconds.
nlohmann::json BreakdownJson(const TrainBreakdown& b);
// A memory estimate's bytes per GPU by term (the GPU holding the peak).
nlohmann::json BreakdownJson(const MemoryBreakdown& b);
// The same as a table in GB and GiB, the terms that are not zero and the peak; `inference` names the activations
// the forward workspace.
std::string MemoryBreakdownTable(const MemoryBreakdown& b, double peak_bytes, bool inference);
// A validation band (suanli/perf.h ErrorBand) as JSON (null where none applies), and in words: "<what> 6.2% mean
// error, 9 in 10 within 12% (150 <runs>)", naming the band's GPUs when `gpu` is not among them.
nlohmann::json BandJson(const ErrorBand& b, const GpuSpec& gpu);
std::string BandWords(const char* what, const ErrorBand& b, const char* runs, const GpuSpec& gpu);
// The links a cluster's collectives run over (suanli/perf.h NetworkSummary) in words, for the `intra-node:` and
// `inter-node:` lines of perf and plan, the bus-bandwidth convention, and the JSON `network` object; `multi_node`:
// whether the job spans nodes.
// `default_for`: the GPU id when --gpus-per-node was not given.
std::string IntraNodeWords(const NetworkSummary& n, const std::string& default_for = "");
// `default_for`: the GPU id when --inter-node was not given (the line then says the fabric is that GPU's default).
std::string InterNodeWords(const NetworkSummary& n, const std::string& default_for = "");
const char* BusBandwidthWords();
nlohmann::json NetworkJson(const NetworkSummary& n, bool multi_node);
// --host-memory SIZE (host memory per GPU for offloaded activations, e.g. "240GB"): bytes, 0 when empty.
Result<double> ParseHostMemoryFlag(const std::string& text);
// A serving run's --batch: a number of sequences, or "max" (as many as fit, at most --max-batch; InferConfig::batch_max).
Status ApplyServingBatch(const std::string& batch, int64_t max_batch, InferConfig* cfg);
// What a serving engine loads for --model ARG (perf infer and select serve --emit): a catalog model's Hugging Face
// repository, the directory of a config.json given as a path, or the argument itself.
Result<std::string> ServingModelRef(Context* ctx, const std::string& arg, const ModelSpec& m);
// Speculative decoding's options (perf infer, select serve, tco --model): --speculative-tokens, --acceptance-length,
// --draft-model, --draft-layers, --draft-vocab, --speculative-topk, --verify-tokens.
struct SpeculationFlags {
  Speculation spec;         // the options bind to it directly, all but the draft model
  std::string draft_model;  // resolved by ParseSpeculation
  std::string draft_repo;   // a draft head's checkpoint, for the launch lines
};
void AddSpeculationOptions(CLI::App* app, SpeculationFlags* f);
// The flags as the library takes them, the draft model resolved from the catalog or a config.json.
Result<Speculation> ParseSpeculation(Context* ctx, const SpeculationFlags& f);
inline constexpr const char* kNoSlidingWindowHelp =
    "Ignore the config's sliding window: every layer keeps its whole context in the KV cache (vLLM "
    "--disable-sliding-window; engines that do not honour the window)";
inline constexpr const char* kServingBatchHelp =
    "Concurrent sequences (static batch), or max: as many as fit with the KV cache for every sequence's whole context "
    "(continuous batching at full load)";
inline constexpr const char* kServingMaxBatchHelp =
    "With --batch max: the engine's batch limit (TensorRT-LLM max_batch_size, vLLM max_num_seqs)";
// Shared by fit and perf train.
inline constexpr const char* kRecomputeModulesHelp =
    "With --recompute selective (implied when omitted): the modules that recompute, comma-separated (Megatron-Core's "
    "names: core_attn, layernorm, mlp, moe_act, moe, shared_experts, mla_up_proj; default core_attn)";
inline constexpr const char* kPpLayoutHelp =
    "Megatron-Core's --pipeline-model-parallel-layout: stages separated by |, E embedding, t layer, m MTP module, L "
    "loss, (...)*n and x*n repeat (e.g. \"Et*4|(t*4|)*14tmL\"); sets --interleave";
inline constexpr const char* kMtpLayersHelp =
    "--mode train: multi-token-prediction modules trained with the model (Megatron-Core --mtp-num-layers; "
    "DeepSeek-V3: 1), on the last pipeline stage or where --pp-layout puts them";
// LoRA's target matrices and input dropout, as fit and perf train take them.
inline constexpr const char* kLoraTargetsHelp =
    "LoRA: adapted matrices, q k v o gate up down, qkv and fc1 (one adapter on the fused projection, as Megatron-Core "
    "and NeMo run LoRA; their names linear_qkv linear_proj linear_fc1 linear_fc2 too), or all (default: q k v o)";
inline constexpr const char* kLoraDropoutHelp =
    "LoRA: dropout on the adapters' inputs (PEFT lora_dropout, NeMo adapter dropout 'pre'): its passes, and each "
    "adapter's 1-byte mask per input element, are counted";
// fit and perf train: Megatron-Core's activation_func_fp8_input_store.
inline constexpr const char* kSwigluFp8InputHelp =
    "Keep the gated MLP's SwiGLU input (2f per token) in FP8 for the backward pass (Megatron-Core "
    "activation_func_fp8_input_store)";
inline constexpr const char* kHostMemoryHelp =
    "Host memory per GPU for CPU-offloaded activations (e.g. 240GB); default: the catalog's where the CPU comes "
    "with the GPU (GB200, see `suanli gpus gb200`), else unchecked";
inline constexpr const char* kMasterDtypeHelp =
    "Training: the optimizer's copy of the weights: fp32 (default), bf16 or fp16 (Apex DistributedFusedAdam's "
    "dtype, NeMo optim.dtype), remainder (the low 16 bits of FP32 beside BF16 weights: Megatron-Core "
    "--use-precision-aware-optimizer), none (pure 16-bit)";
inline constexpr const char* kMomentsDtypeHelp =
    "Training: Adam's two moments: fp32 (default), bf16, fp16 or fp8 (Megatron-Core --exp-avg-dtype and "
    "--exp-avg-sq-dtype; Apex DistributedFusedAdam's dtype)";
// Registers --master-dtype and --moments-dtype (fit, perf train, plan).
void AddOptimizerPrecisionOptions(CLI::App* app, std::string* master, std::string* moments);
// --master-dtype and --moments-dtype, with fit's older --no-master-weights (= --master-dtype none).
Status ApplyOptimizerPrecision(FitRequest& r, const std::string& master, const std::string& moments, bool no_master);
inline constexpr const char* kQuantizeHeadHelp =
    "The output head in the weight format too (gpt-fast, torchao); default: 16-bit, as GPTQ/AWQ keep it";
inline constexpr const char* kReplicatedEmbeddingsHelp =
    "Embedding and output head whole on every TP rank (gpt-fast's tensor parallelism shards attention and MLP "
    "only); default: split over the vocabulary, as Megatron, vLLM, TensorRT-LLM and SGLang do";

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void Row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  std::string Render() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// Command setup functions (one file each).
Action SetupGpus(CLI::App* sub, Context* ctx);
Action SetupModels(CLI::App* sub, Context* ctx);
Action SetupFit(CLI::App* sub, Context* ctx);
Action SetupPerf(CLI::App* sub, Context* ctx);
Action SetupValidate(CLI::App* sub, Context* ctx);
Action SetupPlan(CLI::App* sub, Context* ctx);
Action SetupSelect(CLI::App* sub, Context* ctx);
Action SetupDoctor(CLI::App* sub, Context* ctx);
Action SetupBench(CLI::App* sub, Context* ctx);
Action SetupMig(CLI::App* sub, Context* ctx);
Action SetupTco(CLI::App* sub, Context* ctx);

}  // namespace suanli::cli
