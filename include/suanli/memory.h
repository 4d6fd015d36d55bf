// The memory model: how many bytes one GPU holds for inference, training and
// fine-tuning, term by term, and whether that fits. Formulas and citations are in
// docs/methodology.md §2–§5; every constant below names its source there.
//
// All functions are pure and thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "suanli/hardware.h"
#include "suanli/model.h"
#include "suanli/status.h"

namespace suanli {

enum class Mode { kInfer, kTrain, kLora, kQlora };
// kOp: torchtitan's per-op selective activation checkpointing (activation_checkpoint.mode = "selective",
// selective_ac_option = "op"): each block saves the outputs of its attention kernel, of its TP reduce-scatters and of
// every other matrix multiply (the 1st, 3rd, ...: for a LLaMA-type block wq, wv, w1, w2), and reruns the rest of its
// forward in the backward pass (docs/methodology.md §4).
enum class Recompute { kNone, kSelective, kFull, kOp };
enum class Optimizer { kAdam, kAdam8bit, kSgd };
// The optimizer's own copy of the weights under mixed precision (docs/methodology.md §5): a full FP32 copy (4 B per
// parameter, the default); a 16-bit copy (2 B: Apex DistributedFusedAdam with dtype bf16 or fp16 and its default
// store_params, which is NeMo's optim.dtype); the low 16 bits of the FP32 value kept beside the BF16 weight, which
// together rebuild it (2 B: Megatron-Core's precision-aware optimizer with its default store_param_remainders,
// Transformer Engine's FusedAdam); or none (pure 16-bit training).
enum class MasterCopy { kFp32, kBf16, kFp16, kRemainder, kNone };
// The precision of Adam's two moments (exp_avg and exp_avg_sq): 4, 2 or 1 B each (Megatron-Core's --exp-avg-dtype
// and --exp-avg-sq-dtype with the precision-aware optimizer, Apex DistributedFusedAdam's dtype; FP8 moments carry a
// per-tensor scale, not counted).
enum class MomentsDtype { kFp32, kBf16, kFp16, kFp8 };

// Megatron-Core's --recompute-modules (megatron/core/transformer/transformer_config.py): under selective recompute,
// the parts of each layer that drop their activations in the forward pass and run their forward again in the
// backward. Selective recompute with no module named means core_attn alone, Megatron-Core's default and Korthikanti
// et al.'s selective recompute (docs/methodology.md §4).
struct RecomputeModules {
  bool core_attn = false;       // the attention core: the s x s scores unfused, FlashAttention's log-sum-exp fused
  bool layernorm = false;       // input_layernorm and pre_mlp_layernorm: their outputs (the QKV and MLP inputs)
  bool mlp = false;             // a dense MLP layer: its inner tensors
  bool moe_act = false;         // the routed experts' activation: its output, the input of their down projection
  bool moe = false;             // a whole MoE layer: router, dispatch, experts, shared experts and combine
  bool shared_experts = false;  // the shared experts' inner tensors
  bool mla_up_proj = false;     // MLA's query and key/value up-projections with RoPE: the Q, K and V they produce
  bool any() const {
    return core_attn || layernorm || mlp || moe_act || moe || shared_experts || mla_up_proj;
  }
  bool operator==(const RecomputeModules&) const = default;
};
// A comma- or space-separated list of Megatron-Core module names (core_attn, layernorm, mlp, moe_act, moe,
// shared_experts, mla_up_proj); an error names the unknown one, the valid ones and the nearest.
Result<RecomputeModules> ParseRecomputeModules(std::string_view list);
// "layernorm,moe_act": the names in Megatron-Core's order, comma-separated.
std::string RecomputeModulesList(const RecomputeModules& mods);
// The modules that recompute: under selective, those given, or core_attn when none are; none otherwise.
RecomputeModules EffectiveRecomputeModules(Recompute rc, const RecomputeModules& given);
// Whether a setting names modules beyond Megatron-Core's default (selective with a set other than core_attn alone):
// what launch flags and tables then spell out.
bool NamesRecomputeModules(Recompute rc, const RecomputeModules& modules);

const char* ModeName(Mode m);
const char* RecomputeName(Recompute r);
// "none", "selective", "full", "full (N layers per chunk)" for block recompute, or "selective (layernorm, moe_act)"
// when modules other than the default core_attn recompute.
std::string RecomputeWords(Recompute rc, int recompute_layers, const RecomputeModules& modules = {});
const char* OptimizerName(Optimizer o);
const char* MasterCopyName(MasterCopy c);
const char* MomentsDtypeName(MomentsDtype d);
Result<Mode> ParseMode(std::string_view s);
Result<Recompute> ParseRecompute(std::string_view s);
Result<Optimizer> ParseOptimizer(std::string_view s);
Result<MasterCopy> ParseMasterCopy(std::string_view s);      // fp32 | bf16 | fp16 | remainder | none
Result<MomentsDtype> ParseMomentsDtype(std::string_view s);  // fp32 | bf16 | fp16 | fp8

// A storage format for weights: bits per weight including its scales, and which tensors
// it applies to.
struct WeightFormat {
  std::string id;                // bf16, int4, nf4, q4_k_m, ...
  double bits_per_weight = 16;   // for quantised linear layers, scales and zero points included
  bool quantizes_embeddings = false;  // GGUF quantises embeddings/output too; GPTQ/AWQ/bnb keep them 16-bit
  const char* note = "";         // how the bits were counted, with source (static text)
};
Result<WeightFormat> ParseWeightFormat(std::string_view id);
const std::vector<std::string>& WeightFormatIds();
// Tokens one serving step prefills at most: the inference workspace is sized for this chunk, the budget per step
// TensorRT-LLM's max_num_tokens defaults to (and `perf infer --emit trtllm` writes).
inline constexpr int64_t kPrefillChunkTokens = 8192;
// The precision a weight format's GEMMs run at in serving: FP8 (weights and activations) for fp8, FP4 (NVFP4
// weights and activations) for nvfp4, 16-bit otherwise (weight-only formats dequantise to 16 bits).
Precision ServingComputePrecision(const WeightFormat& wf);
// When a model's config.json names its checkpoint's quantisation (ModelSpec::stored_quantization) and the estimate
// uses another weight format: a note saying so and which --weights would price the checkpoint as stored.
std::optional<std::string> StoredFormatNote(const ModelSpec& m, const WeightFormat& used);
// Whether two --weights ids store weights alike: the same id, or the 4-bit group-128 aliases (int4, awq, gptq).
bool SameStoredFormat(std::string_view a, std::string_view b);
// Bytes per KV-cache element for a KV dtype (fp32, bf16, fp16, fp8, int8).
Result<double> ParseKvDtype(std::string_view id);

// Runtime overhead defaults (docs/methodology.md §5). Adjustable per request.
struct OverheadOptions {
  double cuda_context_bytes = 0.5 * 1073741824.0;  // CUDA context + cuBLAS/NCCL handles, per GPU
  double fragmentation = 0.10;  // allocator slack, fraction of the per-step tensors (activations, logits, grads)
  double nccl_buffers_bytes = 0;                    // added when any parallel degree > 1 (set by the model)
};

// Megatron-Core's --pipeline-model-parallel-layout (megatron/core/transformer/pipeline_parallel_layer_layout.py): the
// virtual pipeline stages in order, separated by '|', each a run of E (the embedding), t (a transformer layer), m (a
// multi-token-prediction module) and L (the output layer and loss); "(...)*n" and "x*n" repeat, commas are cosmetic.
// Virtual stage i runs on pipeline rank i mod PP, so PP x VP stages give VP chunks per rank, of unequal sizes if
// the layout says so: "Et*4|(t*4|)*14tmL" is DeepSeek-V3's 61 layers and one MTP module on PP 4 x VP 4 or 8 x 2.
struct PipelineLayout {
  struct Stage {
    int embedding = 0, layers = 0, mtp = 0, loss = 0;
  };
  std::vector<Stage> stages;
  std::string text;  // as given
};
// Parses the layout string; an error names the character or the repetition it could not read.
Result<PipelineLayout> ParsePipelineLayout(std::string_view text);

struct Parallelism {
  int tp = 1, pp = 1, dp = 1, cp = 1, ep = 1;
  int zero = 0;                   // 0..3 (3 = FSDP FULL_SHARD)
  bool sequence_parallel = false;
  int interleave = 1;             // virtual pipeline stages per GPU
  // Megatron-Core's account_for_embedding_in_pipeline_split + account_for_loss_in_pipeline_split: the input
  // embedding and the loss each count as one layer when the layers are divided among pipeline stages, so the
  // first and the last stage hold one transformer layer fewer (LLaMA-3.1 405B: 126 + 2 = 128 = 8 x 8 x 2).
  bool embedding_loss_in_split = false;
  // Expert tensor parallelism (Megatron-Core's expert_tensor_parallel_size; 0 = the same as TP). Expert layers fold
  // their own grid over the same ranks: ETP x EP x expert-DP = TP x CP x DP, so with ETP 1 the expert-parallel
  // group can take in the tensor-parallel ranks (Qwen3 235B on TP 2 with EP 32 over 16-way DP).
  int etp = 0;
  // Serving only: attention data parallelism (TensorRT-LLM enable_attention_dp, SGLang --enable-dp-attention --dp D,
  // vLLM --data-parallel-size with expert parallelism). The TP GPUs run attention, the dense MLPs, the shared experts
  // and the output head as D data-parallel groups of TP / D GPUs, each on its own 1/D of the sequences; the MoE layers
  // keep EP x ETP = TP over all of them (docs/methodology.md section 9.7). 1 = none.
  int attention_dp = 1;
  // A custom layout of layers over the pipeline (nullptr: the even split). Its stage count is PP x interleave.
  std::shared_ptr<const PipelineLayout> layout;
  int gpus() const { return tp * pp * dp * cp; }  // EP re-uses DP ranks (Megatron convention)
  int expert_tp() const { return etp > 0 ? etp : tp; }
  // The tensor-parallel degree of attention and the other non-expert layers: TP, or TP / D under attention DP.
  int attention_tp() const { return attention_dp > 1 ? tp / attention_dp : tp; }
};

// Parses `text` into p.layout and sets p.interleave to its virtual stages per rank (stages / PP), as Megatron-Core
// derives VP from the layout; an interleave other than 1 already set must agree.
Status ApplyPipelineLayout(Parallelism& p, std::string_view text);
// The layout string of an uneven split without interleaving (the remainder of layers / PP on the first ranks, the
// embedding on the first, `mtp_layers` MTP modules and the loss on the last), which Megatron-Core cannot infer from
// --num-layers and --pipeline-model-parallel-size: "Et*16|t*15|t*15|t*15L" for DeepSeek-V3's 61 layers on PP 4.
// Empty where none is needed (even split, interleaving, embedding and loss in the split, or a layout of its own).
std::string UnevenSplitLayout(const ModelSpec& m, const Parallelism& p, int mtp_layers);

// Share of the layers that recompute their forward: 1 for full recompute of every layer, N / (layers per model
// chunk) for block recompute of N layers (FitRequest::recompute_layers), 0 otherwise. The chunk is the fullest
// pipeline stage's layers over the interleave.
double RecomputedLayerShare(const ModelSpec& m, const Parallelism& p, Recompute rc, int recompute_layers);
// Layers of the fullest model chunk (the fullest pipeline stage's layers over the interleave).
double RecomputeChunkLayers(const ModelSpec& m, const Parallelism& p);
// An error saying what would be valid when recompute_layers is set without full recompute or exceeds a chunk.
Status CheckRecomputeLayers(const ModelSpec& m, const Parallelism& p, Recompute rc, int recompute_layers);

// An error saying what would be valid when offload_layers is set where Megatron-Core cannot offload (pipeline
// parallelism, recompute) or is out of 0 .. layers - 1.
Status CheckOffloadLayers(const ModelSpec& m, const Parallelism& p, Recompute rc, int offload_layers);

// Transformer layers held by pipeline stage `stage` (0-based): an even split, the remainder on the first stages,
// or with embedding_loss_in_split one layer fewer on the first and the last stage, or as the layout says.
int LayersOnStage(const ModelSpec& m, const Parallelism& p, int stage);
// Multi-token-prediction modules on pipeline stage `stage`: the layout's, or all of them on the last stage.
int MtpOnStage(const Parallelism& p, int mtp_layers, int stage);
// Of LayersOnStage, how many are MoE layers: layers go to virtual stages in order (the layout's, or the even split's
// chunks, virtual stage i on rank i mod PP), so DeepSeek's first dense layers sit on the first rank.
int MoeLayersOnStage(const ModelSpec& m, const Parallelism& p, int stage);
// The same for every stage at once (PP entries), in one pass over the layers.
std::vector<int> MoeLayersPerStage(const ModelSpec& m, const Parallelism& p);

struct FitRequest {
  Mode mode = Mode::kInfer;
  WeightFormat weights;           // defaults to bf16 when id is empty
  // The output head (an untied lm_head) stored in the weight format too, as gpt-fast and torchao quantise every
  // nn.Linear. Default: 16-bit, as GPTQ/AWQ checkpoints, bitsandbytes and ModelOpt keep it. The embedding table
  // stays 16-bit either way (formats that quantise it, GGUF's, say so in WeightFormat::quantizes_embeddings).
  bool quantize_head = false;
  // The embedding table and the output head held whole on every tensor-parallel rank instead of split over the
  // vocabulary, as gpt-fast's tp.py does (it shards attention and MLP only). Default: vocab-parallel (Megatron,
  // vLLM, TensorRT-LLM, SGLang).
  bool replicated_embeddings = false;
  double kv_bytes_per_elem = 2;   // KV cache dtype
  int64_t batch = 1;              // inference: concurrent sequences; training: global batch (sequences)
  int64_t seq = 2048;             // inference: total context (prompt + output); training: sequence length
  int64_t micro_batch = 1;        // training: sequences per micro-batch per data-parallel rank
  Parallelism par;
  Recompute recompute = Recompute::kNone;
  // With kFull: how many layers of each model chunk (a pipeline stage, or a virtual stage under interleaving)
  // recompute, the first ones of the chunk; the others keep all their activations. Megatron-Core's
  // --recompute-method block --recompute-num-layers N. 0: every layer (--recompute-method uniform).
  int recompute_layers = 0;
  // With kSelective: which modules recompute (Megatron-Core's --recompute-modules); none given means core_attn.
  RecomputeModules recompute_modules;
  // Multi-token-prediction modules trained with the model (Megatron-Core's --mtp-num-layers; DeepSeek-V3 trains one):
  // each an embedding-and-hidden projection (2h to h), one transformer layer of the model's last kind and the shared
  // output layer and loss, on the pipeline rank the layout puts them on (the last, without a layout). 0: none.
  int mtp_layers = 0;
  // CPU activation offloading (Megatron-Core --cpu-offloading --cpu-offloading-num-layers N, Transformer Engine's
  // default schedule): the activations of the first N layers go to host memory during the forward pass and come
  // back for the backward, so at most layers - N layers' activations are on the GPU at a time. Megatron-Core
  // allows it only without pipeline parallelism and without activation recompute, and N below the layer count.
  int offload_layers = 0;
  // Host memory per GPU available for offloaded activations; 0: the GPU's catalog value where it has one
  // (GpuSpec::host_memory_per_gpu_bytes, Grace superchips), else unchecked.
  double host_memory_per_gpu_bytes = 0;
  Optimizer optimizer = Optimizer::kAdam;
  bool fp32_grads = false;        // false: the ZeRO paper's 16 B/param (2+2+12); true: Megatron's 18 (2+4+12)
  MasterCopy master = MasterCopy::kFp32;      // the optimizer's copy of the weights (mixed precision)
  MomentsDtype moments = MomentsDtype::kFp32;  // Adam's moments
  bool flash_attention = true;    // no s^2 score tensors stored
  bool dropout = false;           // store dropout masks (Korthikanti's GPT setting)
  bool fp8_activations = false;   // FP8 training (Transformer Engine): GEMM inputs saved for backward in FP8
  bool swiglu_input_fp8 = false;  // Megatron-Core activation_func_fp8_input_store (SavedForBackward)
  // Bytes per transformer-layer weight parameter of the FP8 copies Transformer Engine keeps between micro-batches
  // (FP8 training with Megatron-Core's default disable_parameter_transpose_cache=False: each TE linear's
  // get_weight_workspace caches its quantised weight for the step). It depends on the GPU's FP8 layouts, so the
  // performance model and `fit --dtype fp8` set it (Fp8WeightCacheBytesPerParam, perf.h); 0: none. Not held under
  // ZeRO-3 sharding.
  double fp8_weight_cache_bytes_per_param = 0;
  // Bytes per logit the loss holds on the last stage: 16-bit logits and their FP32 softmax (6; Megatron's fused and
  // unfused losses), or 4 for single-pass kernels, which keep no FP32 copy: the 16-bit logits and their 16-bit
  // gradient (TrainConfig::cross_entropy = online; docs/methodology.md §6.4; a kernel that writes the gradient in
  // place, as Transformer Engine's does, needs 2).
  double loss_bytes_per_logit = 6;
  int lora_rank = 16;
  // Dropout on each adapter's input (PEFT's lora_dropout, NeMo's adapter dropout at dropout_position 'pre'), the
  // probability in [0, 1); 0: none. Each adapter then keeps its 1-byte mask per input element, and its dropped input
  // in place of the input (a copy of its own only where adapters share an input: separate q, k, v; gate and up).
  double lora_dropout = 0;
  std::vector<std::string> lora_targets;  // q k v o gate up down qkv fc1 | all; empty = q k v o (LoraTargetShapes)
  bool gradient_checkpointing = true;  // fine-tuning default (recompute=full)
  OverheadOptions overhead;
  bool explain = true;            // fill FitResult::notes and peak_moment (off in the planner's inner loop)
};

// Bytes per GPU by term; all in bytes.
struct MemoryBreakdown {
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
  double activations = 0;          // stored activations (training) or the forward workspace (inference)
  double logits = 0;               // FP32 logits and their gradient on the last pipeline stage
  double kv_cache = 0;
  double fp8_weight_cache = 0;     // FP8 training: Transformer Engine's cached FP8 copies of the layer weights
  double overhead = 0;             // CUDA context, NCCL buffers, allocator fragmentation
  double Total() const {
    return weights + gradients + optimizer + activations + logits + kv_cache + fp8_weight_cache + overhead;
  }
};

struct FitResult {
  MemoryBreakdown breakdown;       // on the GPU holding the peak
  double per_gpu_peak_bytes = 0;
  // With explain and PP > 1, every pipeline rank: its transformer layers, MTP modules, the micro-batches' worth of
  // its layers' activations it keeps at its peak (training), and its peak bytes.
  struct RankPeak {
    int layers = 0, mtp = 0;
    double in_flight_micro_batches = 0;
    double peak_bytes = 0;
  };
  std::vector<RankPeak> ranks;
  std::string peak_moment;         // which moment of the step the peak is, in words
  std::string peak_stage;          // "first pipeline stage", "last pipeline stage" or "all GPUs"
  ParamCounts params;
  double params_per_gpu = 0;       // parameters held on the peak GPU
  double trainable_params = 0;     // training: all; LoRA: the adapters
  double kv_cache_bytes_per_token = 0;  // whole model, all layers, this KV dtype (per-GPU share in breakdown)
  int in_flight_micro_batches = 0;
  double host_offload_bytes = 0;   // CPU activation offloading: host memory per GPU holding offloaded activations
  double offload_layer_bytes = 0;  // CPU activation offloading: one layer's activations (each copy's size)
  double host_memory_limit_bytes = 0;  // FitRequest::host_memory_per_gpu_bytes, for CheckFit
  double bytes_per_param_states = 0;  // weights + gradients + optimizer bytes per parameter, unsharded
  // Bytes per parameter of each model state, unsharded: the weights the GEMMs use, their gradients, and the
  // optimizer's states (its master copy of the weights included).
  double weight_bytes_per_param = 0, grad_bytes_per_param = 0, optimizer_bytes_per_param = 0;
  std::vector<std::string> notes;  // conventions applied, e.g. "Adam: 16 B/param (ZeRO paper)"
};

// The expert tensor-parallel degree a request runs with when --etp is not given. Training: Megatron-Core's
// default, ETP = TP. Inference: expert parallelism splits the tensor-parallel group (TensorRT-LLM:
// moe_tp_size x moe_ep_size = tp_size; vLLM --enable-expert-parallel: EP = TP with whole experts), so ETP = TP / EP,
// or 1 when EP is larger than TP (experts spread over data-parallel attention replicas).
int ExpertTpFor(const Parallelism& p, Mode mode);

// Validates the request against the model (TP divides heads, PP <= layers, ...).
// Errors say what would be valid.
Status ValidateRequest(const ModelSpec& m, const FitRequest& r);

// A context of `context` tokens (inference: prompt + output; training: the sequence) past the model's
// max_position_embeddings. With a learned absolute position table it cannot run: ValidateRequest rejects it.
// With rotary or ALiBi positions it runs (a rope-scaled or long-context variant), with quality the model was not
// trained for: this returns the note every estimate carries then; nullopt within the model's maximum.
std::optional<std::string> ContextBeyondModelNote(const ModelSpec& m, int64_t context);

// Memory per GPU. Does not judge fit; see CheckFit.
Result<FitResult> EstimateMemory(const ModelSpec& m, const FitRequest& r);

// LoRA: the input and output widths of each adapted matrix of one layer on one GPU of a TP group: column-parallel q,
// k, v, qkv, gate, up, fc1 split their outputs by `tp` (their input is the layer's, sequence-sharded under sequence
// parallelism and gathered for the adapter), row-parallel o and down their inputs. `targets`: q k v o gate up down,
// qkv and fc1 (or Megatron-Core's module names), or "all"; empty = q k v o. A gate target on a model without a gated
// MLP adds nothing. An unknown name is an error with "did you mean".
struct LoraShape {
  double in = 0, out = 0;
  bool column_parallel = false;
  bool operator==(const LoraShape& o) const {
    return in == o.in && out == o.out && column_parallel == o.column_parallel;
  }
};
Result<std::vector<LoraShape>> LoraTargetShapes(const ModelSpec& m, const std::vector<std::string>& targets, int tp);

struct FitVerdict {
  bool fits = false;
  double capacity_bytes = 0;       // the GPU's memory
  double headroom_bytes = 0;       // capacity - peak (negative when it does not fit)
  // CPU activation offloading: host memory per GPU (the request's, else the catalog's; 0 = unknown, unchecked)
  // and whether the offloaded activations fit in it. `fits` needs both the GPU and the host to hold them.
  double host_capacity_bytes = 0;
  bool host_fits = true;
};
FitVerdict CheckFit(const FitResult& f, const GpuSpec& gpu);

// The smallest number of GPUs of this kind that hold the request, and the layout that
// achieves it (inference: TP within a node, then PP; training: ZeRO-3 over DP, then TP, PP).
struct MinGpus {
  int gpus = 0;                    // 0 = does not fit on any layout tried (up to `max_gpus`)
  Parallelism layout;
  double per_gpu_peak_bytes = 0;
  std::string reason;              // when gpus == 0
};
MinGpus FindMinGpus(const ModelSpec& m, const FitRequest& r, const GpuSpec& gpu, int max_gpus = 4096);

// Largest inference batch (at r.seq) or context (at r.batch) that fits; 0 if none.
int64_t MaxBatchThatFits(const ModelSpec& m, FitRequest r, const GpuSpec& gpu);
int64_t MaxContextThatFits(const ModelSpec& m, FitRequest r, const GpuSpec& gpu);

// Model states (weights, gradients, optimizer) on one GPU for `params` parameters stored
// with the given bytes per parameter, under ZeRO stage `zero` sharded over `group` ranks
// (Rajbhandari et al. 2020: stage 1 shards optimizer states, 2 also gradients, 3 also weights).
struct ModelStateBytes {
  double weights = 0, gradients = 0, optimizer = 0;
  double Total() const { return weights + gradients + optimizer; }
};
ModelStateBytes ShardModelStates(double params, double weight_bytes, double grad_bytes, double optimizer_bytes,
                                 int zero, int group);

// The same per layer kind: a dense layer's and an MoE layer's (equal for a model without MoE layers).
struct LayerActivationByKind {
  double dense = 0, moe = 0;
};
// Which GEMM inputs a layer keeps for the backward pass. A linear layer saves its input only for its weight
// gradient (PyTorch's autograd saves what the required gradients use; Transformer Engine's Linear and
// LayerNormLinear save it only when weight.requires_grad): all of them in training; under LoRA only those of adapted
// matrices, whose adapters take the same input (docs/methodology.md section 8).
struct SavedForBackward {
  bool attention_in = true;  // the norm output entering Q, K, V
  bool o_in = true;          // the attention output entering the output projection
  bool mlp_in = true;        // the norm output entering gate/up (and the routed experts' dispatched copies)
  bool down_in = true;       // the activation entering the down projection
  // Megatron-Core's activation_func_fp8_input_store: the gated MLP's SwiGLU input (gate and up, 2f per token) kept
  // in FP8 (1 byte per element) and cast back for the backward pass (bias_swiglu_impl). Gated MLPs only.
  bool swiglu_input_fp8 = false;
};
// LoRA on `targets` (empty: q k v o; "all"): the inputs its adapters need. Unknown names are LoraTargetShapes' errors.
SavedForBackward LoraSavedForBackward(const std::vector<std::string>& targets);
// Activation bytes stored by one transformer layer for `tokens` tokens (s*b) of one
// micro-batch at sequence length `seq`, on one GPU (Korthikanti et al. 2022 generalised;
// docs/methodology.md §4). With `fp8_gemm_inputs` (FP8 training with Transformer Engine) the inputs of the four
// GEMMs are stored in FP8, 1 byte per element instead of 2. Under selective recompute, `modules` says which parts
// drop their activations (none given: core_attn). For MoE models the result is the mean over the dense and the MoE
// layers; `expert_tp` is the experts' tensor parallelism (0: `tp`), which sets how many of the dispatched token
// copies one GPU holds; `kept` which GEMM inputs are saved (all but under LoRA). Exposed for tests.
double LayerActivationBytes(const ModelSpec& m, double seq, double micro_batch, int tp, bool sequence_parallel,
                            Recompute recompute, bool flash_attention, bool dropout, bool fp8_gemm_inputs = false,
                            const RecomputeModules& modules = {}, int expert_tp = 0, const SavedForBackward& kept = {});
LayerActivationByKind LayerActivationBytesByKind(const ModelSpec& m, double seq, double micro_batch, int tp,
                                                 bool sequence_parallel, Recompute recompute, bool flash_attention,
                                                 bool dropout, bool fp8_gemm_inputs = false,
                                                 const RecomputeModules& modules = {}, int expert_tp = 0,
                                                 const SavedForBackward& kept = {});

}  // namespace suanli
