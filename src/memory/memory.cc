#include "suanli/memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "suanli/text.h"
#include "suanli/units.h"

namespace suanli {

namespace {
constexpr int64_t kMaxSeq = int64_t(1) << 24;    // 16M tokens
constexpr int64_t kMaxBatch = int64_t(1) << 24;
constexpr int kMaxDegree = 1 << 16;
// kPrefillChunkTokens (suanli/memory.h): prefill runs in chunks of at most that many tokens (vLLM's
// max_num_batched_tokens default on large GPUs is also 8192).
// NCCL communicator buffers when any collective is used (approximate, docs/methodology.md §5).
constexpr double kNcclBufferBytes = 0.25 * kGiB;

struct FormatDef {
  const char* id;
  double bits;
  bool quant_embeddings;
  const char* note;
};
// Bits per weight, scales included. Sources in docs/methodology.md §2.
constexpr FormatDef kFormats[] = {
    {"fp32", 32, true, "4 bytes per weight"},
    {"bf16", 16, true, "2 bytes per weight"},
    {"fp16", 16, true, "2 bytes per weight"},
    {"fp8", 8, false, "1 byte per weight (E4M3), per-tensor scale; embeddings and head kept 16-bit"},
    {"nvfp4", 4.0 + 8.0 / 16, false,
     "NVFP4: 4-bit E2M1 with an E4M3 scale per 16 weights (and one FP32 scale per tensor) = 4.5 bits; activations "
     "quantised to NVFP4 too, GEMMs on FP4 tensor cores (Blackwell); embeddings and head kept 16-bit (NVIDIA "
     "ModelOpt's checkpoints)"},
    {"int8", 8.0, false, "LLM.int8()/weight-only int8, per-channel scales (negligible); embeddings 16-bit"},
    {"int4", 4.0 + 20.0 / 128, false,
     "GPTQ/AWQ 4-bit, group 128: fp16 scale + 4-bit zero per group = 4.16 bits; embeddings 16-bit"},
    {"int4-g32", 4.0 + 32.0 / 32, false,
     "4-bit, group 32 with bf16 scale and bf16 zero per group (gpt-fast int4) = 5 bits; embeddings 16-bit"},
    {"int4-g64", 4.0 + 32.0 / 64, false,
     "4-bit, group 64 with bf16 scale and bf16 zero per group (torchao int4wo-64, tinygemm) = 4.5 bits; "
     "embeddings 16-bit"},
    {"gptq", 4.0 + 20.0 / 128, false, "alias of int4 (group 128)"},
    {"awq", 4.0 + 20.0 / 128, false, "alias of int4 (group 128)"},
    {"nf4", 4.0 + 8.0 / 64 + 32.0 / (64 * 256), false,
     "bitsandbytes NF4 with double quantisation: 8-bit absmax per 64 weights + fp32 per 256 blocks = 4.127 bits"},
    {"nf4-nodq", 4.0 + 32.0 / 64, false, "bitsandbytes NF4 without double quantisation: fp32 absmax per 64 = 4.5 bits"},
    {"q8_0", 8.5, true, "GGUF Q8_0: 32 int8 + fp16 scale per block of 32 = 8.5 bits"},
    {"q4_0", 4.5, true, "GGUF Q4_0: 32 x 4-bit + fp16 scale per block of 32 = 4.5 bits"},
    {"q4_k_m", 4.85, true,
     "GGUF Q4_K_M: mix of Q4_K (4.5 bits) and Q6_K (6.56 bits) tensors, about 4.85 bits on Llama models (approximate)"},
};

}  // namespace

const char* ModeName(Mode m) {
  switch (m) {
    case Mode::kInfer: return "infer";
    case Mode::kTrain: return "train";
    case Mode::kLora: return "lora";
    case Mode::kQlora: return "qlora";
  }
  return "?";
}
const char* RecomputeName(Recompute r) {
  switch (r) {
    case Recompute::kNone: return "none";
    case Recompute::kSelective: return "selective";
    case Recompute::kFull: return "full";
    case Recompute::kOp: return "op";
  }
  return "?";
}
const char* OptimizerName(Optimizer o) {
  switch (o) {
    case Optimizer::kAdam: return "adam";
    case Optimizer::kAdam8bit: return "adam8bit";
    case Optimizer::kSgd: return "sgd";
  }
  return "?";
}

template <typename E, std::size_t N>
static Result<E> ParseEnum(std::string_view s, const std::pair<const char*, E> (&table)[N], const char* what) {
  const std::string l = ToLower(s);
  std::vector<std::string> names;
  for (const auto& [n, e] : table) {
    if (l == n) return e;
    names.push_back(n);
  }
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  return InvalidArgument(fmt::format("unknown {} '{}' (valid: {}){}", what, s, list, DidYouMean(s, names)));
}

Result<Mode> ParseMode(std::string_view s) {
  static const std::pair<const char*, Mode> t[] = {{"infer", Mode::kInfer},     {"inference", Mode::kInfer},
                                                   {"train", Mode::kTrain},     {"training", Mode::kTrain},
                                                   {"lora", Mode::kLora},       {"qlora", Mode::kQlora}};
  return ParseEnum(s, t, "mode");
}
namespace {
// Megatron-Core's module names, in its order, with the flag each sets.
const std::pair<const char*, bool RecomputeModules::*> kRecomputeModuleNames[] = {
    {"core_attn", &RecomputeModules::core_attn}, {"moe_act", &RecomputeModules::moe_act},
    {"layernorm", &RecomputeModules::layernorm}, {"mla_up_proj", &RecomputeModules::mla_up_proj},
    {"mlp", &RecomputeModules::mlp},             {"moe", &RecomputeModules::moe},
    {"shared_experts", &RecomputeModules::shared_experts}};
}  // namespace

Result<RecomputeModules> ParseRecomputeModules(std::string_view list) {
  RecomputeModules mods;
  std::vector<std::string> names;
  for (const auto& [n, f] : kRecomputeModuleNames) names.push_back(n);
  std::string cur;
  std::vector<std::string> items;
  for (char ch : std::string(list) + ",") {
    if (ch == ',' || ch == ' ') {
      if (!cur.empty()) items.push_back(ToLower(cur));
      cur.clear();
    } else {
      cur += ch;
    }
  }
  if (items.empty())
    return InvalidArgument("--recompute-modules is empty (valid: core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, "
                           "shared_experts, comma-separated)");
  for (const auto& item : items) {
    bool found = false;
    for (const auto& [n, f] : kRecomputeModuleNames) {
      if (item != n) continue;
      if (mods.*f) return InvalidArgument(fmt::format("recompute module '{}' is given twice", item));
      mods.*f = found = true;
    }
    if (!found)
      return InvalidArgument(fmt::format("unknown recompute module '{}' (valid: core_attn, moe_act, layernorm, "
                                         "mla_up_proj, mlp, moe, shared_experts; Megatron-Core's names){}",
                                         item, DidYouMean(item, names)));
  }
  return mods;
}

std::string RecomputeModulesList(const RecomputeModules& mods) {
  std::string out;
  for (const auto& [n, f] : kRecomputeModuleNames) {
    if (!(mods.*f)) continue;
    if (!out.empty()) out += ',';
    out += n;
  }
  return out;
}

RecomputeModules EffectiveRecomputeModules(Recompute rc, const RecomputeModules& given) {
  if (rc != Recompute::kSelective) return {};
  if (given.any()) return given;
  RecomputeModules def;
  def.core_attn = true;
  return def;
}

bool NamesRecomputeModules(Recompute rc, const RecomputeModules& modules) {
  return rc == Recompute::kSelective && modules.any() && !(modules == EffectiveRecomputeModules(rc, {}));
}

std::string RecomputeWords(Recompute rc, int recompute_layers, const RecomputeModules& modules) {
  if (rc == Recompute::kFull && recompute_layers > 0) return fmt::format("full ({} layers per chunk)", recompute_layers);
  if (NamesRecomputeModules(rc, modules)) {
    std::string list = RecomputeModulesList(modules);
    for (auto& ch : list)
      if (ch == ',') ch = ' ';
    return fmt::format("selective ({})", list);
  }
  return RecomputeName(rc);
}

Result<Recompute> ParseRecompute(std::string_view s) {
  static const std::pair<const char*, Recompute> t[] = {
      {"none", Recompute::kNone}, {"selective", Recompute::kSelective}, {"full", Recompute::kFull},
      {"op", Recompute::kOp}, {"selective-op", Recompute::kOp}};
  return ParseEnum(s, t, "recompute setting");
}
namespace {
// One table per enum serves its name and its parser.
constexpr std::pair<const char*, MasterCopy> kMasterCopyNames[] = {{"fp32", MasterCopy::kFp32},
                                                                   {"bf16", MasterCopy::kBf16},
                                                                   {"fp16", MasterCopy::kFp16},
                                                                   {"remainder", MasterCopy::kRemainder},
                                                                   {"none", MasterCopy::kNone}};
constexpr std::pair<const char*, MomentsDtype> kMomentsDtypeNames[] = {{"fp32", MomentsDtype::kFp32},
                                                                       {"bf16", MomentsDtype::kBf16},
                                                                       {"fp16", MomentsDtype::kFp16},
                                                                       {"fp8", MomentsDtype::kFp8}};
template <typename E, std::size_t N>
const char* EnumName(E e, const std::pair<const char*, E> (&table)[N]) {
  for (const auto& [n, v] : table)
    if (v == e) return n;
  return "?";
}
}  // namespace
const char* MasterCopyName(MasterCopy c) { return EnumName(c, kMasterCopyNames); }
const char* MomentsDtypeName(MomentsDtype d) { return EnumName(d, kMomentsDtypeNames); }
Result<MasterCopy> ParseMasterCopy(std::string_view s) { return ParseEnum(s, kMasterCopyNames, "master-weight copy"); }
Result<MomentsDtype> ParseMomentsDtype(std::string_view s) {
  return ParseEnum(s, kMomentsDtypeNames, "Adam moments dtype");
}
Result<Optimizer> ParseOptimizer(std::string_view s) {
  static const std::pair<const char*, Optimizer> t[] = {{"adam", Optimizer::kAdam},
                                                        {"adamw", Optimizer::kAdam},
                                                        {"adam8bit", Optimizer::kAdam8bit},
                                                        {"adamw8bit", Optimizer::kAdam8bit},
                                                        {"sgd", Optimizer::kSgd}};
  return ParseEnum(s, t, "optimizer");
}

const std::vector<std::string>& WeightFormatIds() {
  static const std::vector<std::string> ids = [] {
    std::vector<std::string> v;
    for (const auto& f : kFormats) v.push_back(f.id);
    return v;
  }();
  return ids;
}

Result<WeightFormat> ParseWeightFormat(std::string_view id) {
  const std::string l = ToLower(id);
  for (const auto& f : kFormats) {
    if (l == f.id) return WeightFormat{f.id, f.bits, f.quant_embeddings, f.note};
  }
  std::string list;
  for (const auto& f : kFormats) list += (list.empty() ? "" : ", ") + std::string(f.id);
  return InvalidArgument(
      fmt::format("unknown weight format '{}' (valid: {}){}", id, list, DidYouMean(id, WeightFormatIds())));
}

Precision ServingComputePrecision(const WeightFormat& wf) {
  if (wf.id == "fp8") return Precision::kFp8;
  if (wf.id == "nvfp4") return Precision::kFp4;
  return Precision::kBf16;
}

bool SameStoredFormat(std::string_view a, std::string_view b) {
  auto group128 = [](std::string_view x) { return x == "int4" || x == "awq" || x == "gptq"; };
  return a == b || (group128(a) && group128(b));
}

std::optional<std::string> StoredFormatNote(const ModelSpec& m, const WeightFormat& used) {
  if (m.stored_quantization.empty() || SameStoredFormat(used.id, m.stored_weights)) return std::nullopt;
  if (m.stored_weights.empty())
    return fmt::format("config.json's quantization_config ({}) names a format suanli does not model; this estimate "
                       "uses {} weights",
                       m.stored_quantization, used.id);
  return fmt::format("config.json's quantization_config stores this checkpoint as {} ({}); this estimate uses {} "
                     "weights: --weights {} prices it as stored",
                     m.stored_weights, m.stored_quantization, used.id, m.stored_weights);
}

Result<double> ParseKvDtype(std::string_view id) {
  static const std::pair<const char*, double> t[] = {
      {"fp32", 4}, {"bf16", 2}, {"fp16", 2}, {"fp8", 1}, {"int8", 1}, {"fp8_e4m3", 1}, {"fp8_e5m2", 1}};
  const std::string l = ToLower(id);
  std::vector<std::string> names;
  for (const auto& [n, b] : t) {
    if (l == n) return b;
    names.push_back(n);
  }
  return InvalidArgument(
      fmt::format("unknown KV-cache dtype '{}' (valid: fp32, bf16, fp16, fp8, int8){}", id, DidYouMean(id, names)));
}

int ExpertTpFor(const Parallelism& p, Mode mode) {
  if (p.etp > 0) return p.etp;
  if (mode == Mode::kInfer && p.ep > 1) return p.tp % p.ep == 0 ? p.tp / p.ep : 1;
  return p.tp;
}

namespace {
// torchtitan's per-op policy as modelled: the layers of its dense models (LLaMA-type), attention by a fused SDPA
// kernel.
Status CheckOpRecompute(const ModelSpec& m, Mode mode, bool flash_attention) {
  if (mode != Mode::kTrain)
    return InvalidArgument(fmt::format("--recompute op (torchtitan's per-op checkpointing) applies to --mode train; {} "
                                       "uses gradient checkpointing of every layer (or none)",
                                       ModeName(mode)));
  if (m.moe || m.mla)
    return InvalidArgument(fmt::format("--recompute op is modelled for dense layers with multi-head or grouped-query "
                                       "attention; {} has {} layers (use --recompute selective, full or none)",
                                       m.id, m.moe ? "MoE" : "MLA"));
  if (!flash_attention)
    return InvalidArgument("--recompute op saves the output of the fused attention kernel (SDPA flash or efficient); "
                           "it needs --attention flash or flash1");
  return Status::Ok();
}

// Megatron-Core's own checks (transformer_config.py) and modules the model has nothing for.
Status CheckRecomputeModules(const ModelSpec& m, Mode mode, Recompute rc, const RecomputeModules& mods) {
  const std::string list = RecomputeModulesList(mods);
  if (mode != Mode::kTrain)
    return InvalidArgument(fmt::format("--recompute-modules {} applies to --mode train (pretraining); {} uses {}", list,
                                       ModeName(mode),
                                       mode == Mode::kInfer ? "no activations to recompute"
                                                            : "gradient checkpointing of every layer (or none)"));
  if (rc != Recompute::kSelective)
    return InvalidArgument(fmt::format("--recompute-modules {} needs --recompute selective (Megatron-Core's "
                                       "--recompute-granularity selective); got --recompute {}",
                                       list, RecomputeName(rc)));
  const int moe_layers = m.moe_layer_count();
  if ((mods.moe || mods.moe_act || mods.shared_experts) && moe_layers == 0)
    return InvalidArgument(fmt::format("--recompute-modules {}: {} has no MoE layers; for a dense model the modules are "
                                       "core_attn, layernorm and mlp",
                                       list, m.id));
  if (mods.shared_experts && (!m.moe || m.moe->shared_ffn <= 0))
    return InvalidArgument(fmt::format("--recompute-modules {}: {} has no shared experts", list, m.id));
  if (mods.mlp && moe_layers == m.layers)
    return InvalidArgument(fmt::format("--recompute-modules {}: every layer of {} is an MoE layer, with no dense MLP to "
                                       "recompute (for the experts: moe, or moe_act for their activation)",
                                       list, m.id));
  if (mods.mla_up_proj && !m.mla)
    return InvalidArgument(fmt::format("--recompute-modules {}: mla_up_proj needs multi-head latent attention, which {} "
                                       "does not have",
                                       list, m.id));
  return Status::Ok();
}
}  // namespace

Status ValidateRequest(const ModelSpec& m, const FitRequest& req) {
  FitRequest r = req;
  if (r.mode == Mode::kInfer && r.par.ep > 1 && r.par.etp == 0 && m.moe) r.par.etp = ExpertTpFor(r.par, r.mode);
  const auto& p = r.par;
  for (auto [name, v] : {std::pair{"--tp", p.tp}, {"--pp", p.pp}, {"--dp", p.dp}, {"--cp", p.cp}, {"--ep", p.ep}}) {
    if (v < 1 || v > kMaxDegree)
      return InvalidArgument(fmt::format("{} must be between 1 and {}, got {}", name, kMaxDegree, v));
  }
  if (p.zero < 0 || p.zero > 3) return InvalidArgument(fmt::format("--zero must be 0, 1, 2 or 3, got {}", p.zero));
  if (p.attention_dp != 1) {
    if (p.attention_dp < 1 || p.attention_dp > p.tp || p.tp % p.attention_dp != 0) {
      std::string valid;
      for (int d = 1; d <= p.tp; ++d)
        if (p.tp % d == 0) valid += (valid.empty() ? "" : ", ") + std::to_string(d);
      return InvalidArgument(fmt::format("--attention-dp {} must divide --tp {}: the TP GPUs form that many attention "
                                         "groups of TP / D GPUs each (valid: {})",
                                         p.attention_dp, p.tp, valid));
    }
    if (r.mode != Mode::kInfer)
      return InvalidArgument(fmt::format("--attention-dp is a serving layout (attention data parallelism beside expert "
                                         "parallelism); --mode {} splits its data over --dp",
                                         ModeName(r.mode)));
    if (!m.moe)
      return InvalidArgument(fmt::format("--attention-dp {} needs a mixture-of-experts model: {} is dense, and {} "
                                         "attention groups of a dense model are {} replicas of --tp {}",
                                         p.attention_dp, m.id, p.attention_dp, p.attention_dp,
                                         p.tp / p.attention_dp));
  }
  if (r.quantize_head && r.mode == Mode::kQlora)
    return InvalidArgument("--quantize-head does not apply to --mode qlora: bitsandbytes keeps the output head 16-bit");
  if (r.quantize_head && (r.weights.id.empty() || r.weights.bits_per_weight >= 16))
    return InvalidArgument(fmt::format("--quantize-head stores the output head in a quantised weight format; with "
                                       "--weights {} there is none (use e.g. int8, int4, int4-g32)",
                                       r.weights.id.empty() ? "bf16" : r.weights.id));
  if (r.swiglu_input_fp8 && r.mode == Mode::kInfer)
    return InvalidArgument("--activation-func-fp8-input-store keeps activations for the backward pass: it applies to "
                           "--mode train and lora, not infer");
  if (r.swiglu_input_fp8 && !m.gated_mlp)
    return InvalidArgument(fmt::format("--activation-func-fp8-input-store stores a gated MLP's SwiGLU input; {} has a "
                                       "plain MLP",
                                       m.id));
  if (!(r.host_memory_per_gpu_bytes >= 0) || !std::isfinite(r.host_memory_per_gpu_bytes))
    return InvalidArgument("--host-memory must be a positive size per GPU, e.g. 240GB");
  if (!(r.lora_dropout >= 0 && r.lora_dropout < 1))
    return InvalidArgument(fmt::format("--lora-dropout {} is outside [0, 1): the probability of dropping an element",
                                       r.lora_dropout));
  if (r.lora_dropout > 0 && r.mode != Mode::kLora && r.mode != Mode::kQlora)
    return InvalidArgument("--lora-dropout drops the LoRA adapters' inputs: it needs --mode lora or qlora");
  // Set by the performance model from the GPU (FitRequest::fp8_weight_cache_bytes_per_param): at most two FP8
  // copies with their block scales.
  if (!(r.fp8_weight_cache_bytes_per_param >= 0 && r.fp8_weight_cache_bytes_per_param <= 4))
    return InvalidArgument(fmt::format("FP8 weight cache of {} B per parameter is outside 0..4",
                                       r.fp8_weight_cache_bytes_per_param));
  if (r.fp8_weight_cache_bytes_per_param > 0 && r.mode == Mode::kInfer)
    return InvalidArgument("the FP8 weight cache is Transformer Engine's between a training step's micro-batches; "
                           "inference keeps its weights in their format");
  if (r.optimizer != Optimizer::kAdam && r.mode != Mode::kTrain)
    return InvalidArgument(fmt::format("--optimizer {} applies to --mode train; {} keeps its adapters' AdamW states as "
                                       "the mode describes (docs/methodology.md §5)",
                                       OptimizerName(r.optimizer), ModeName(r.mode)));
  // The optimizer's precision: full training only; remainders rebuild FP32 from BF16 weights only.
  if (r.master != MasterCopy::kFp32 || r.moments != MomentsDtype::kFp32) {
    if (r.mode != Mode::kTrain)
      return InvalidArgument(fmt::format("--master-dtype and --moments-dtype apply to --mode train, not {} (LoRA "
                                         "adapters keep their optimizer states as the mode describes)",
                                         ModeName(r.mode)));
    const std::string wid = r.weights.id.empty() ? "bf16" : r.weights.id;
    if (r.weights.bits_per_weight >= 32 && r.master != MasterCopy::kFp32)
      return InvalidArgument(fmt::format("--master-dtype {}: FP32 weights are their own master copy; drop it or "
                                         "train with --weights bf16",
                                         MasterCopyName(r.master)));
    if (r.master == MasterCopy::kRemainder && wid != "bf16")
      return InvalidArgument(fmt::format("--master-dtype remainder keeps the low 16 bits of FP32 beside BF16 "
                                         "weights; with --weights {} use fp32, {} or none",
                                         wid, wid == "fp16" ? "fp16" : "bf16"));
    if (r.moments != MomentsDtype::kFp32 && r.optimizer != Optimizer::kAdam)
      return InvalidArgument(fmt::format("--moments-dtype applies to adam; --optimizer {} fixes its own states",
                                         OptimizerName(r.optimizer)));
  }
  if (r.seq < 1 || r.seq > kMaxSeq)
    return InvalidArgument(fmt::format("--seq must be between 1 and {} tokens, got {}", kMaxSeq, r.seq));
  if (r.batch < 1 || r.batch > kMaxBatch)
    return InvalidArgument(fmt::format("--batch must be between 1 and {}, got {}", kMaxBatch, r.batch));
  if (r.micro_batch < 1 || r.micro_batch > kMaxBatch)
    return InvalidArgument(fmt::format("--micro-batch must be at least 1, got {}", r.micro_batch));
  if (m.learned_positions > 0 && m.max_positions > 0 && r.seq > m.max_positions)
    return InvalidArgument(fmt::format(
        "a context of {} tokens{} is longer than {}'s learned position table ({} positions): a learned absolute "
        "position embedding has no row past it (valid: at most {} tokens)",
        r.seq, r.mode == Mode::kInfer ? " (prompt + output)" : "", m.id, m.max_positions, m.max_positions));
  if (m.heads % p.tp != 0) {
    std::string valid;
    for (int t = 1; t <= std::min(m.heads, 64); ++t)
      if (m.heads % t == 0) valid += (valid.empty() ? "" : ", ") + std::to_string(t);
    return InvalidArgument(fmt::format("TP={} does not divide the {} attention heads of {} (valid TP: {})", p.tp,
                                       m.heads, m.id, valid));
  }
  if (!m.mla && m.kv_heads % p.tp != 0 && p.tp % m.kv_heads != 0)
    return InvalidArgument(fmt::format("TP={} and the {} KV heads of {} neither divide each other", p.tp, m.kv_heads, m.id));
  if (p.pp > m.layers)
    return InvalidArgument(fmt::format("PP={} exceeds the {} layers of {}", p.pp, m.layers, m.id));
  if (p.interleave < 1) return InvalidArgument("--interleave must be at least 1");
  if (p.layout && p.embedding_loss_in_split)
    return InvalidArgument("--pp-layout places the embedding and the loss itself; drop --account-for-embedding-loss");
  if (p.embedding_loss_in_split) {
    // Megatron-Core divides layers + embedding + loss evenly among the (virtual) stages.
    const int units = m.layers + 2;
    if (p.pp == 1)
      return InvalidArgument("--account-for-embedding-loss needs PP > 1 (it changes how layers are split into stages)");
    if (units % (p.pp * p.interleave) != 0)
      return InvalidArgument(fmt::format(
          "--account-for-embedding-loss: the {} layers + embedding + loss = {} are not divisible by PP x interleave "
          "= {} x {}", m.layers, units, p.pp, p.interleave));
    if (LayersOnStage(m, p, 0) < 1)
      return InvalidArgument(fmt::format("--account-for-embedding-loss with PP={} leaves the first stage no layer of "
                                         "the {} of {}", p.pp, m.layers, m.id));
  } else if (p.layout) {
    // Megatron-Core's checks (pipeline_parallel_layer_layout.py): the embedding first, the loss last, every layer
    // and MTP module once, the MTP modules after the last transformer layer.
    const auto& st = p.layout->stages;
    int e = 0, t = 0, mtp = 0, loss = 0, last_t = -1, first_m = -1;
    for (size_t i = 0; i < st.size(); ++i) {
      e += st[i].embedding;
      t += st[i].layers;
      mtp += st[i].mtp;
      loss += st[i].loss;
      if (st[i].layers > 0) last_t = static_cast<int>(i);
      if (st[i].mtp > 0 && first_m < 0) first_m = static_cast<int>(i);
    }
    const std::string& text = p.layout->text;
    if (static_cast<int>(st.size()) != p.pp * p.interleave)
      return InvalidArgument(fmt::format("--pp-layout '{}' has {} stages; PP x interleave is {} x {}", text, st.size(),
                                         p.pp, p.interleave));
    if (e != 1 || st.front().embedding != 1)
      return InvalidArgument(fmt::format("--pp-layout '{}': the embedding (E) must appear once, in the first stage", text));
    if (loss != 1 || st.back().loss != 1)
      return InvalidArgument(fmt::format("--pp-layout '{}': the loss (L) must appear once, in the last stage", text));
    if (t != m.layers)
      return InvalidArgument(fmt::format("--pp-layout '{}' places {} transformer layers (t); {} has {}", text, t, m.id,
                                         m.layers));
    if (mtp != r.mtp_layers)
      return InvalidArgument(fmt::format("--pp-layout '{}' places {} MTP modules (m) but --mtp-layers is {}", text, mtp,
                                         r.mtp_layers));
    if (mtp > 0 && first_m < last_t)
      return InvalidArgument(fmt::format("--pp-layout '{}': MTP modules (m) come after the last transformer layer", text));
  } else if (p.interleave > 1 && (p.pp == 1 || m.layers % (p.pp * p.interleave) != 0)) {
    std::string hint;
    if (p.pp > 1 && (m.layers + 2) % (p.pp * p.interleave) == 0)
      hint = fmt::format("; or count the embedding and the loss as layers, as Megatron-Core can "
                         "(--account-for-embedding-loss: {} + 2 = {} x {})", m.layers, p.pp * p.interleave,
                         (m.layers + 2) / (p.pp * p.interleave));
    return InvalidArgument(fmt::format("--interleave {} needs PP > 1 and the {} layers divisible by PP x interleave ({}){}",
                                       p.interleave, m.layers, p.pp * p.interleave, hint));
  }
  if (p.etp < 0) return InvalidArgument(fmt::format("--etp must be at least 1 (omit it for ETP = TP), got {}", p.etp));
  if (p.etp > 0 && !m.moe)
    return InvalidArgument(fmt::format("--etp {} needs a mixture-of-experts model; {} is dense", p.etp, m.id));
  if (p.etp > 0 && (p.tp % p.etp != 0 || (m.moe && m.moe->expert_ffn % p.etp != 0)))
    return InvalidArgument(fmt::format("--etp {} must divide TP = {} and the expert FFN width", p.etp, p.tp));
  if (p.ep > 1) {
    if (!m.moe) return InvalidArgument(fmt::format("--ep {} needs a mixture-of-experts model; {} is dense", p.ep, m.id));
    if (m.moe->num_experts % p.ep != 0)
      return InvalidArgument(fmt::format("EP={} does not divide the {} experts of {}", p.ep, m.moe->num_experts, m.id));
    const int etp = p.expert_tp();
    if ((p.tp * p.dp * p.cp) % (p.ep * etp) != 0) {
      if (r.mode == Mode::kInfer)
        return InvalidArgument(fmt::format(
            "EP x ETP = {} x {} must divide TP x DP = {}: in serving, expert parallelism splits the tensor-parallel "
            "group (EP x ETP = TP) or spans data-parallel attention replicas", p.ep, etp, p.tp * p.dp * p.cp));
      if (etp == p.tp)
        return InvalidArgument(fmt::format(
            "EP={} must divide DP x CP = {} (experts are sharded over data-parallel ranks){}", p.ep, p.dp * p.cp,
            p.tp > 1 && (p.tp * p.dp * p.cp) % p.ep == 0
                ? fmt::format("; with --etp 1 the expert-parallel group can take in the {} tensor-parallel ranks", p.tp)
                : ""));
      return InvalidArgument(fmt::format("EP x ETP = {} x {} must divide TP x DP x CP = {}", p.ep, etp,
                                         p.tp * p.dp * p.cp));
    }
  }
  if (p.cp > 1 && r.seq % p.cp != 0)
    return InvalidArgument(fmt::format("CP={} does not divide the sequence length {}", p.cp, r.seq));
  if (p.sequence_parallel && p.tp == 1)
    return InvalidArgument("--sequence-parallel needs TP > 1 (it shards activations over the tensor-parallel group)");
  if (r.mode == Mode::kTrain && r.batch % (p.dp * r.micro_batch) != 0)
    return InvalidArgument(fmt::format(
        "global batch {} is not divisible by DP x micro-batch = {} x {}; use a multiple of {}", r.batch, p.dp,
        r.micro_batch, p.dp * r.micro_batch));
  // Megatron-Core's interleaved 1F1B runs the micro-batches in groups of PP per virtual stage
  // (--microbatch-group-size-per-virtual-pipeline-stage, default PP; core_v0.8.0 schedules.py raised "number of
  // microbatches is not divisible by pipeline-model-parallel-size when using interleaved schedule").
  if ((r.mode == Mode::kTrain || r.mode == Mode::kLora || r.mode == Mode::kQlora) && p.interleave > 1 && p.pp > 1) {
    const int64_t per_replica = r.batch / p.dp;
    const int64_t count = per_replica / r.micro_batch;
    if (count % p.pp != 0) {
      std::string valid;
      for (int64_t b = 1; b <= per_replica; ++b)
        if (per_replica % b == 0 && (per_replica / b) % p.pp == 0)
          valid += (valid.empty() ? "" : ", ") + std::to_string(b);
      return InvalidArgument(fmt::format(
          "--interleave {} runs the micro-batches in groups of PP = {} (Megatron-Core's interleaved schedule), but "
          "global batch {} / (DP x micro-batch = {} x {}) gives {} per pipeline; {}", p.interleave, p.pp, r.batch,
          p.dp, r.micro_batch, count,
          valid.empty() ? fmt::format("use a global batch that is a multiple of DP x PP = {}, or --interleave 1",
                                      int64_t{p.dp} * p.pp)
                        : fmt::format("valid micro-batch sizes: {} (or --interleave 1)", valid)));
    }
  }
  if ((r.mode == Mode::kLora || r.mode == Mode::kQlora) && (r.lora_rank < 1 || r.lora_rank > 65536))
    return InvalidArgument(fmt::format("--lora-rank must be between 1 and 65536, got {}", r.lora_rank));
  if (r.weights.bits_per_weight <= 0) return InvalidArgument("weight format has no size");
  if (r.mode == Mode::kTrain) {
    SUANLI_RETURN_IF_ERROR(CheckOffloadLayers(m, p, r.recompute, r.offload_layers));
  } else if (r.offload_layers != 0) {
    return InvalidArgument(fmt::format("--offload-layers applies to --mode train (pretraining), not {}", ModeName(r.mode)));
  }
  if (r.recompute_modules.any()) SUANLI_RETURN_IF_ERROR(CheckRecomputeModules(m, r.mode, r.recompute, r.recompute_modules));
  if (r.recompute == Recompute::kOp) SUANLI_RETURN_IF_ERROR(CheckOpRecompute(m, r.mode, r.flash_attention));
  if (r.mtp_layers != 0) {
    if (r.mode != Mode::kTrain)
      return InvalidArgument(fmt::format("--mtp-layers {} applies to --mode train (pretraining)", r.mtp_layers));
    if (r.mtp_layers < 0 || r.mtp_layers > 16)
      return InvalidArgument(fmt::format("--mtp-layers must be between 0 and 16, got {}", r.mtp_layers));
  }
  if (r.mode == Mode::kTrain) SUANLI_RETURN_IF_ERROR(CheckRecomputeLayers(m, p, r.recompute, r.recompute_layers));
  else if (r.recompute_layers != 0)
    return InvalidArgument(fmt::format("--recompute-layers applies to --mode train (pretraining); {} uses {}", ModeName(r.mode),
                                       r.mode == Mode::kInfer ? "no activations to recompute"
                                                              : "gradient checkpointing of every layer (or none)"));
  return Status::Ok();
}

ModelStateBytes ShardModelStates(double params, double wb, double gb, double ob, int zero, int group) {
  group = std::max(1, group);
  ModelStateBytes m;
  m.weights = params * wb / (zero >= 3 ? group : 1);
  m.gradients = params * gb / (zero >= 2 ? group : 1);
  m.optimizer = params * ob / (zero >= 1 ? group : 1);
  return m;
}

double LayerActivationBytes(const ModelSpec& m, double s, double b, int t, bool sp, Recompute rc, bool flash,
                            bool dropout, bool fp8_gemm_inputs, const RecomputeModules& modules, int expert_tp,
                            const SavedForBackward& kept) {
  const LayerActivationByKind a =
      LayerActivationBytesByKind(m, s, b, t, sp, rc, flash, dropout, fp8_gemm_inputs, modules, expert_tp, kept);
  const double moe_share = m.layers > 0 ? double(m.moe_layer_count()) / m.layers : 0;
  return (1 - moe_share) * a.dense + moe_share * a.moe;
}

namespace {
bool IsAllLoraTarget(const std::string& n) { return n == "all" || n == "all-linear"; }
// Megatron-Core's module names (linear_qkv, linear_proj, linear_fc1, linear_fc2) and NeMo 1.x's (attention_qkv,
// attention_dense, mlp_fc1, mlp_fc2) for the matrices they adapt: the fused QKV projection, the output projection, the
// fused gate-and-up projection and the down projection.
std::string CanonicalLoraTarget(const std::string& n) {
  if (n == "linear_qkv" || n == "attention_qkv") return "qkv";
  if (n == "linear_proj" || n == "attention_dense") return "o";
  if (n == "linear_fc1" || n == "mlp_fc1") return "fc1";
  if (n == "linear_fc2" || n == "mlp_fc2") return "down";
  return n;
}
// The matrices a LoRA target list adapts: q k v o when none are given, every one for "all" (as given otherwise, in
// their short names; LoraTargetShapes checks them).
std::vector<std::string> LoraTargetNames(const std::vector<std::string>& targets) {
  if (targets.empty()) return {"q", "k", "v", "o"};
  if (std::any_of(targets.begin(), targets.end(), IsAllLoraTarget)) return {"q", "k", "v", "o", "gate", "up", "down"};
  std::vector<std::string> names;
  names.reserve(targets.size());
  for (const auto& t : targets) names.push_back(CanonicalLoraTarget(t));
  return names;
}
}  // namespace

SavedForBackward LoraSavedForBackward(const std::vector<std::string>& targets) {
  const std::vector<std::string> names = LoraTargetNames(targets);
  const auto has = [&](std::string_view n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  SavedForBackward k;
  k.attention_in = has("q") || has("k") || has("v") || has("qkv");
  k.o_in = has("o");
  k.mlp_in = has("gate") || has("up") || has("fc1");
  k.down_in = has("down");
  return k;
}

LayerActivationByKind LayerActivationBytesByKind(const ModelSpec& m, double s, double b, int t, bool sp, Recompute rc,
                                                 bool flash, bool dropout, bool fp8_gemm_inputs,
                                                 const RecomputeModules& modules, int expert_tp,
                                                 const SavedForBackward& kept) {
  const double h = static_cast<double>(m.hidden);
  const double tokens = s * b;
  if (rc == Recompute::kFull) {
    // Only the layer input is kept (2h per token), sharded by SP if on.
    const double input = tokens * 2 * h / (sp ? t : 1);
    return {input, input};
  }
  double q_dim, kv_dim, o_dim, extra = 0;
  if (m.mla) {
    q_dim = double(m.heads) * (m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim);
    kv_dim = q_dim / 2 + double(m.heads) * m.mla->v_head_dim / 2;  // K (nope+rope) and V per head, averaged in 4*kv
    o_dim = double(m.heads) * m.mla->v_head_dim;
    extra = 2.0 * (m.mla->q_lora_rank + m.mla->kv_lora_rank + m.mla->qk_rope_head_dim);  // latents, replicated
  } else {
    q_dim = double(m.heads) * m.head_dim;
    kv_dim = double(m.kv_heads) * m.head_dim;
    o_dim = q_dim;
  }
  if (rc == Recompute::kOp) {
    // torchtitan's per-op policy (CheckOpRecompute admits dense layers with FlashAttention): the block's input 2h
    // (what the checkpoint keeps), the outputs of the odd-numbered matrix multiplies in forward order (q, k, v, o,
    // then gate, up, down or fc1, fc2: wq 2q, wv 2kv, the MLP's first GEMM 2f and, gated, its down projection's
    // output, 2h of partial sums on every TP rank), the attention output 2q with its FP32 log-sum-exp 4 per head, and
    // with TP the two reduce-scatter outputs (2h each on the sequence-parallel shard). GEMM outputs are 16-bit under
    // Float8 too.
    const double rep = (2.0 * h + (t > 1 && sp ? 2 * 2.0 * h : 0.0)) / (sp ? t : 1);
    const double sharded = (2 * q_dim + 2 * kv_dim + 2 * o_dim + 4.0 * m.heads + 2.0 * m.ffn) / t;
    const double down_out = m.gated_mlp ? 2.0 * h : 0.0;
    const double per_token = rep + sharded + down_out;
    return {tokens * per_token, tokens * per_token};
  }
  const RecomputeModules mods = EffectiveRecomputeModules(rc, modules);
  // A GEMM's input kept for its weight gradient: 16-bit, or FP8 under Transformer Engine (its linear.py saves the
  // quantised input unless save_original_input): the attention and MLP inputs, the output projection's input, the
  // down projection's input and the experts' dispatched tokens.
  const double in_b = fp8_gemm_inputs ? 1 : 2;
  // Per token, bytes (16-bit activations, 1-byte dropout masks):
  // replicated across TP (unless SP): the layer norms' inputs 2h each, their outputs (the attention and the MLP
  //   inputs, in_b h each; not kept under layernorm recompute), the residual dropout masks 1h each.
  const double norm_outputs = (kept.attention_in ? 1.0 : 0.0) + (kept.mlp_in ? 1.0 : 0.0);
  const double replicated =
      2.0 * h * m.norms_per_layer + (mods.layernorm ? 0.0 : norm_outputs * in_b * h) + (dropout ? 2 * h : 0);
  // sharded across TP: Q 2q, K and V 2kv each (not kept under mla_up_proj recompute), the output projection's
  //   input (in_b o), FlashAttention's FP32 log-sum-exp 4 per head (not kept when the attention core recomputes).
  double attn = (mods.mla_up_proj && m.mla ? 0.0 : 2 * q_dim + 4 * kv_dim) + (kept.o_in ? in_b * o_dim : 0.0) +
                (flash && !mods.core_attn ? 4.0 * m.heads : 0) + extra;
  // Attention scores when not using FlashAttention: softmax output 2as per token, plus dropout mask (as) and
  // dropout output (2as) when dropout is on (Korthikanti's 5as^2b); selective recompute of the core drops them.
  if (!flash && !mods.core_attn) attn += double(m.heads) * s * (dropout ? 5.0 : 2.0);
  // An MLP's inner tensors for width f: gated, 2f gate + 2f up (1f each in FP8 with swiglu_input_fp8) + the product
  // (the down projection's input, in_b f); plain, 2f pre-activation + the activation (in_b f).
  const auto inner = [&](double f, bool act_recomputed) {
    return (m.gated_mlp ? (kept.swiglu_input_fp8 ? 2.0 : 4.0) : 2.0) * f +
           (act_recomputed || !kept.down_in ? 0.0 : in_b * f);
  };
  const double dense_mlp = mods.mlp ? 0.0 : inner(double(m.ffn), false);
  double moe_mlp = 0;
  if (m.moe) {
    const auto& e = *m.moe;
    const double k = e.experts_per_token;
    // Routed experts: each token's k copies, dispatched to the experts' GPUs and kept as the grouped GEMM's input
    // (k h per token; one GPU holds the copies of ETP / TP of its TP group's tokens), and their inner tensors.
    const double etp = expert_tp > 0 ? expert_tp : t;
    const double routed = (kept.mlp_in ? in_b * k * h * etp : 0.0) + inner(double(e.expert_ffn) * k, mods.moe_act);
    const double shared = mods.shared_experts ? 0.0 : inner(double(e.shared_ffn), false);
    moe_mlp = mods.moe ? 0.0 : routed + shared;
  }
  const double rep = sp ? replicated / t : replicated;
  const double per_token_dense = rep + (attn + dense_mlp) / t;
  const double per_token_moe = m.moe ? rep + (attn + moe_mlp) / t : per_token_dense;
  return {tokens * per_token_dense, tokens * per_token_moe};
}

double RecomputeChunkLayers(const ModelSpec& m, const Parallelism& p) {
  if (p.layout) {  // the largest virtual stage
    int most = 0;
    for (const auto& st : p.layout->stages) most = std::max(most, st.layers);
    return most;
  }
  int most = 0;
  for (int st = 0; st < std::max(1, p.pp); ++st) most = std::max(most, LayersOnStage(m, p, st));
  return double(most) / std::max(1, p.interleave);
}

double RecomputedLayerShare(const ModelSpec& m, const Parallelism& p, Recompute rc, int recompute_layers) {
  if (rc != Recompute::kFull) return 0;
  if (recompute_layers <= 0) return 1;
  const double chunk = RecomputeChunkLayers(m, p);
  return chunk > 0 ? std::min(1.0, recompute_layers / chunk) : 1.0;
}

Status CheckOffloadLayers(const ModelSpec& m, const Parallelism& p, Recompute rc, int offload_layers) {
  if (offload_layers == 0) return Status::Ok();
  if (offload_layers < 0 || offload_layers >= m.layers)
    return InvalidArgument(fmt::format("--offload-layers {} must be between 1 and {} (the model's {} layers less one: "
                                       "at least one layer's activations stay on the GPU)",
                                       offload_layers, m.layers - 1, m.layers));
  if (p.pp > 1)
    return InvalidArgument(fmt::format("--offload-layers needs --pp 1: Megatron-Core has no CPU offloading with pipeline "
                                       "parallelism (got --pp {})", p.pp));
  if (rc != Recompute::kNone)
    return InvalidArgument(fmt::format("--offload-layers needs --recompute none: Megatron-Core does not offload with "
                                       "activation recompute (got {})", RecomputeName(rc)));
  return Status::Ok();
}

Status CheckRecomputeLayers(const ModelSpec& m, const Parallelism& p, Recompute rc, int recompute_layers) {
  if (recompute_layers == 0) return Status::Ok();
  if (recompute_layers < 0) return InvalidArgument(fmt::format("--recompute-layers {} must be positive", recompute_layers));
  if (rc != Recompute::kFull)
    return InvalidArgument("--recompute-layers recomputes whole layers: it needs --recompute full");
  const double chunk = RecomputeChunkLayers(m, p);
  if (recompute_layers > chunk)
    return InvalidArgument(fmt::format(
        "--recompute-layers {} is more than the {:g} layers of a model chunk ({} layers over PP {}{}); use 1 to {:g}",
        recompute_layers, chunk, m.layers, p.pp,
        p.interleave > 1 ? fmt::format(" x interleave {}", p.interleave) : std::string(), std::floor(chunk)));
  return Status::Ok();
}

Result<PipelineLayout> ParsePipelineLayout(std::string_view text) {
  PipelineLayout out;
  out.text = std::string(text);
  std::string s;
  for (char ch : text)
    if (ch != ',' && ch != ' ') s += ch;
  const auto repeat = [&](std::string& str, size_t pos, size_t len, const std::string& unit) -> Status {
    // str[pos, pos + len) is "*n": replace unit + "*n" (the unit ends at pos) by n copies.
    size_t end = pos + 1;
    while (end < str.size() && std::isdigit(static_cast<unsigned char>(str[end]))) ++end;
    if (end == pos + 1)
      return InvalidArgument(fmt::format("--pp-layout '{}': '*' must be followed by a count", text));
    const int n = std::atoi(str.substr(pos + 1, end - pos - 1).c_str());
    if (n < 1 || n > 100000)
      return InvalidArgument(fmt::format("--pp-layout '{}': repeat count {} is out of range", text, n));
    std::string rep;
    for (int i = 0; i < n; ++i) rep += unit;
    str = str.substr(0, pos - len) + rep + str.substr(end);
    return Status::Ok();
  };
  // (...)*n first, as Megatron-Core does (no nesting), then x*n.
  for (size_t open; (open = s.find('(')) != std::string::npos;) {
    const size_t close = s.find(')', open);
    if (close == std::string::npos || close + 1 >= s.size() || s[close + 1] != '*')
      return InvalidArgument(fmt::format("--pp-layout '{}': a group '(...)' must close and be followed by '*n'", text));
    const std::string unit = s.substr(open + 1, close - open - 1);
    if (unit.find('(') != std::string::npos)
      return InvalidArgument(fmt::format("--pp-layout '{}': groups do not nest", text));
    SUANLI_RETURN_IF_ERROR(repeat(s, close + 1, close + 1 - open, unit));
  }
  for (size_t star; (star = s.find('*')) != std::string::npos;) {
    if (star == 0 || s[star - 1] == '|')
      return InvalidArgument(fmt::format("--pp-layout '{}': '*' must follow a layer character", text));
    SUANLI_RETURN_IF_ERROR(repeat(s, star, 1, std::string(1, s[star - 1])));
  }
  if (s.size() > 1000000) return InvalidArgument(fmt::format("--pp-layout '{}' expands to too many layers", text));
  out.stages.emplace_back();
  for (char ch : s) {
    PipelineLayout::Stage& st = out.stages.back();
    switch (ch) {
      case '|': out.stages.emplace_back(); break;
      case 'E': ++st.embedding; break;
      case 't': ++st.layers; break;
      case 'm': ++st.mtp; break;
      case 'L': ++st.loss; break;
      default:
        return InvalidArgument(fmt::format("--pp-layout '{}': unknown character '{}' (E embedding, t transformer layer, "
                                           "m MTP module, L loss, | between stages, (...)*n and x*n repeat)",
                                           text, ch));
    }
  }
  return out;
}

Status ApplyPipelineLayout(Parallelism& p, std::string_view text) {
  SUANLI_ASSIGN_OR_RETURN(PipelineLayout layout, ParsePipelineLayout(text));
  const int n = static_cast<int>(layout.stages.size());
  if (p.pp < 2) return InvalidArgument(fmt::format("--pp-layout '{}' needs PP > 1", text));
  if (n % p.pp != 0)
    return InvalidArgument(fmt::format("--pp-layout '{}' has {} stages, not a multiple of PP = {} (each rank takes every "
                                       "PP-th stage)", text, n, p.pp));
  if (p.interleave != 1 && p.interleave != n / p.pp)
    return InvalidArgument(fmt::format("--pp-layout '{}' has {} stages = PP {} x {} virtual stages, but --interleave is {} "
                                       "(omit it: the layout sets it)", text, n, p.pp, n / p.pp, p.interleave));
  p.interleave = n / p.pp;
  p.layout = std::make_shared<const PipelineLayout>(std::move(layout));
  return Status::Ok();
}

int MtpOnStage(const Parallelism& p, int mtp_layers, int stage) {
  if (p.pp < 1 || stage < 0 || stage >= p.pp || mtp_layers <= 0) return 0;
  if (p.layout) {
    int n = 0;
    for (size_t i = stage; i < p.layout->stages.size(); i += p.pp) n += p.layout->stages[i].mtp;
    return n;
  }
  return stage == p.pp - 1 ? mtp_layers : 0;
}

std::string UnevenSplitLayout(const ModelSpec& m, const Parallelism& p, int mtp_layers) {
  if (p.pp <= 1 || p.layout || p.embedding_loss_in_split || p.interleave > 1 || m.layers % p.pp == 0) return "";
  std::string out;
  for (int st = 0; st < p.pp; ++st) {
    if (st > 0) out += '|';
    if (st == 0) out += 'E';
    out += fmt::format("t*{}", LayersOnStage(m, p, st));
    if (st == p.pp - 1) out += std::string(static_cast<size_t>(std::max(0, mtp_layers)), 'm') + "L";
  }
  return out;
}

std::vector<int> MoeLayersPerStage(const ModelSpec& m, const Parallelism& p) {
  const int pp = std::max(1, p.pp);
  std::vector<int> out(static_cast<size_t>(pp), 0);
  const int moe_layers = m.moe_layer_count();
  if (moe_layers == 0) return out;
  if (moe_layers == m.layers || pp == 1) {
    for (int st = 0; st < pp; ++st) out[static_cast<size_t>(st)] = pp == 1 ? moe_layers : LayersOnStage(m, p, st);
    return out;
  }
  // Layers go to the virtual stages in order (the layout's, or the even split's chunks: a rank's layers divided
  // equally among its v chunks, the remainder on early chunks); virtual stage i runs on rank i mod PP.
  const int v = p.layout ? static_cast<int>(p.layout->stages.size()) / pp : std::max(1, p.interleave);
  std::vector<int> rank_layers(static_cast<size_t>(pp));
  for (int st = 0; st < pp; ++st) rank_layers[static_cast<size_t>(st)] = LayersOnStage(m, p, st);
  int layer = 0;
  for (int i = 0; i < pp * v; ++i) {
    const int rank = i % pp, chunk = i / pp;
    const int rl = rank_layers[static_cast<size_t>(rank)];
    const int n = p.layout ? p.layout->stages[static_cast<size_t>(i)].layers : rl / v + (chunk < rl % v ? 1 : 0);
    for (int k = 0; k < n && layer < m.layers; ++k, ++layer) out[static_cast<size_t>(rank)] += m.is_moe_layer(layer);
  }
  return out;
}

int MoeLayersOnStage(const ModelSpec& m, const Parallelism& p, int stage) {
  if (!m.moe || p.pp < 1 || stage < 0 || stage >= p.pp) return 0;
  return MoeLayersPerStage(m, p)[static_cast<size_t>(stage)];
}

int LayersOnStage(const ModelSpec& m, const Parallelism& p, int stage) {
  if (p.pp < 1 || stage < 0 || stage >= p.pp) return 0;
  if (p.layout) {
    int n = 0;
    for (size_t i = stage; i < p.layout->stages.size(); i += p.pp) n += p.layout->stages[i].layers;
    return n;
  }
  if (p.embedding_loss_in_split && p.pp > 1)
    return (m.layers + 2) / p.pp - (stage == 0 ? 1 : 0) - (stage == p.pp - 1 ? 1 : 0);
  return m.layers / p.pp + (stage < m.layers % p.pp ? 1 : 0);
}

namespace {

struct StageShare {
  double layer_params = 0;     // parameters of this stage's layers held on one GPU
  double expert_params = 0;    // routed-expert parameters (sharded by EP too)
  double non_layer_params = 0; // embedding / head on this GPU
  double head_params = 0;      // of which an untied output head's
};


// Parameters held by one GPU of pipeline stage `stage`, with `mtp_layers` MTP modules in the model.
// `moe_layers` is the model's MoE layer count and `moe_here` the stage's (MoeLayersPerStage).
StageShare ParamsOnGpu(const ModelSpec& m, const ParamCounts& c, const Parallelism& p, int stage, int mtp_layers,
                       int moe_layers, int moe_here, bool replicated_embeddings) {
  StageShare s;
  // The rank's own dense and MoE layers (DeepSeek's first dense layers sit on the first rank): attention and norms
  // per layer, a dense MLP per dense layer, shared experts, router and routed experts per MoE layer.
  const int layers_here = LayersOnStage(m, p, stage), dense_here = layers_here - moe_here;
  const int dense_layers = m.layers - moe_layers;
  const double dense_layer_params = (c.attention + c.mlp_dense + c.moe_shared + c.router + c.norms) / m.layers;
  // Under attention DP (serving) everything but the routed experts is split over the attention group's TP / D GPUs.
  s.layer_params = ((c.attention + c.norms) / m.layers * layers_here +
                    (dense_layers > 0 ? c.mlp_dense / dense_layers * dense_here : 0.0) +
                    (moe_layers > 0 ? (c.moe_shared + c.router) / moe_layers * moe_here : 0.0)) /
                   p.attention_tp();
  s.expert_params = moe_layers > 0 ? c.moe_experts / moe_layers * moe_here / (p.expert_tp() * p.ep) : 0.0;
  // An MTP module: the projection of [norm(h); norm(embedding)] (2h to h), its two norms and the final one, and one
  // transformer layer of the model's last kind (an MoE layer where the model has them).
  if (const int mtp = MtpOnStage(p, mtp_layers, stage); mtp > 0) {
    const double h = static_cast<double>(m.hidden);
    const double layer_dense = moe_layers > 0
                                   ? c.attention / m.layers + c.norms / m.layers + (c.moe_shared + c.router) / moe_layers
                                   : dense_layer_params;
    s.layer_params += mtp * (2 * h * h + 3 * h + layer_dense) / p.attention_tp();
    if (moe_layers > 0) s.expert_params += mtp * c.moe_experts / moe_layers / (p.expert_tp() * p.ep);
  }
  const bool first = stage == 0, last = stage == p.pp - 1;
  // Vocab-parallel over the (attention group's) TP ranks, or whole on every rank.
  const double nt = replicated_embeddings ? 1.0 : double(p.attention_tp());
  if (first) s.non_layer_params += c.embedding / nt;
  if (last) s.non_layer_params += (m.tie_embeddings ? (p.pp > 1 ? c.embedding : 0.0) : c.lm_head) / nt;
  if (last && !m.tie_embeddings) s.head_params = c.lm_head / nt;
  return s;
}

}  // namespace

std::optional<std::string> ContextBeyondModelNote(const ModelSpec& m, int64_t context) {
  if (m.max_positions <= 0 || context <= m.max_positions || m.learned_positions > 0) return std::nullopt;
  return fmt::format("a context of {} tokens is past {}'s max_position_embeddings ({}); the estimate takes the "
                     "length as given, as for a rope-scaled or long-context variant (a config.json with a larger "
                     "max_position_embeddings models one)", context, m.id, m.max_positions);
}

Result<std::vector<LoraShape>> LoraTargetShapes(const ModelSpec& m, const std::vector<std::string>& targets, int tp) {
  const double h = static_cast<double>(m.hidden), t = std::max(1, tp);
  const double q = m.mla ? double(m.heads) * (m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim)
                         : double(m.heads) * m.head_dim;
  const double kv = m.mla ? double(m.mla->kv_lora_rank) : double(m.kv_heads) * m.head_dim;
  const double ffn = static_cast<double>(m.ffn);
  if (targets.size() > 1 && std::any_of(targets.begin(), targets.end(), IsAllLoraTarget))
    return InvalidArgument("LoRA target 'all' stands alone: it already adapts q, k, v, o, gate, up and down");
  const std::vector<std::string> names = LoraTargetNames(targets);
  const auto has = [&](std::string_view n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  if (has("qkv") && (has("q") || has("k") || has("v")))
    return InvalidArgument("LoRA target 'qkv' is one adapter on the fused Q, K and V projection (Megatron-Core's "
                           "linear_qkv): give it or q, k, v, not both");
  if (has("fc1") && (has("gate") || has("up")))
    return InvalidArgument("LoRA target 'fc1' is one adapter on the fused gate and up projection (Megatron-Core's "
                           "linear_fc1): give it or gate, up, not both");
  std::vector<LoraShape> shapes;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    if (std::find(names.begin(), names.begin() + i, name) != names.begin() + i)
      return InvalidArgument(fmt::format("LoRA target '{}' is given twice", name));
    if (name == "qkv") {
      if (m.mla)
        return InvalidArgument(fmt::format("{} uses multi-head latent attention, which has no fused QKV projection; "
                                           "adapt q, k, v",
                                           m.id));
      shapes.push_back({h, (q + 2 * kv) / t, true});  // one adapter: the input read once, the fused output
    } else if (name == "fc1") {
      shapes.push_back({h, (m.gated_mlp ? 2 : 1) * ffn / t, true});
    } else if (name == "q") shapes.push_back({h, q / t, true});
    else if (name == "k" || name == "v") shapes.push_back({h, kv / t, true});
    else if (name == "o") shapes.push_back({q / t, h, false});
    else if (name == "gate") { if (m.gated_mlp) shapes.push_back({h, ffn / t, true}); }  // no gate in a plain MLP
    else if (name == "up") shapes.push_back({h, ffn / t, true});
    else if (name == "down") shapes.push_back({ffn / t, h, false});
    else
      return InvalidArgument(fmt::format(
          "unknown LoRA target '{}' (valid: q, k, v, o, gate, up, down, qkv and fc1 for the fused projections, all; "
          "or Megatron-Core's linear_qkv, linear_proj, linear_fc1, linear_fc2){}",
          name,
          DidYouMean(name, {"q", "k", "v", "o", "gate", "up", "down", "qkv", "fc1", "all", "linear_qkv", "linear_proj",
                            "linear_fc1", "linear_fc2"})));
  }
  return shapes;
}

Result<FitResult> EstimateMemory(const ModelSpec& m, const FitRequest& req) {
  FitRequest r = req;
  if (r.weights.id.empty()) r.weights = *ParseWeightFormat("bf16");
  SUANLI_RETURN_IF_ERROR(ValidateRequest(m, r));
  if (r.mode == Mode::kInfer && r.par.ep > 1 && r.par.etp == 0) r.par.etp = ExpertTpFor(r.par, r.mode);
  const auto& p = r.par;
  FitResult f;
  f.params = CountParams(m);
  const ParamCounts& c = f.params;
  const bool training = r.mode == Mode::kTrain;
  const bool finetune = r.mode == Mode::kLora || r.mode == Mode::kQlora;

  // ---- weight storage format ----
  WeightFormat wf = r.weights;
  if (r.mode == Mode::kQlora) wf = *ParseWeightFormat("nf4");
  // FP8 training can keep the transformer layers' weights as FP8 tensors (Transformer Engine's fp8_model_init,
  // NeMo fp8_params, Megatron-Core --fp8-param-gather): 1 B each, the optimizer keeping its own copy.
  // NVFP4 training likewise (Megatron-Core --fp4-param-gather): 0.5625 B each.
  const bool fp8_params = training && (wf.id == "fp8" || wf.id == "nvfp4");
  if (training && wf.bits_per_weight < 16 && !fp8_params)
    return InvalidArgument(fmt::format("full training needs 16- or 32-bit weights, fp8 (FP8 parameters with FP8 "
                                       "training) or nvfp4 (NVFP4 parameters with NVFP4 training), not '{}'; use "
                                       "--mode qlora for 4-bit base weights",
                                       wf.id));
  const double lin_bytes = wf.bits_per_weight / 8.0;
  const double emb_bytes = wf.quantizes_embeddings ? lin_bytes : 2.0;

  // ---- model states per parameter (unsharded) ----
  double w_b = lin_bytes, g_b = 0, o_b = 0;
  // The embedding and output layer stay 16-bit under FP8 parameters (they are not Transformer Engine modules).
  const double nonlayer_w_b = fp8_params ? 2.0 : w_b;
  if (training) {
    const bool fp32 = wf.bits_per_weight >= 32;
    g_b = (fp32 || r.fp32_grads) ? 4 : 2;
    // The optimizer's copy of the weights: none for FP32 weights (they are their own master).
    double master = 0;
    if (!fp32) switch (r.master) {
        case MasterCopy::kFp32: master = 4; break;
        case MasterCopy::kBf16:
        case MasterCopy::kFp16:
        case MasterCopy::kRemainder: master = 2; break;
        case MasterCopy::kNone: master = 0; break;
      }
    const double moments = r.moments == MomentsDtype::kFp32 ? 8 : r.moments == MomentsDtype::kFp8 ? 2 : 4;
    switch (r.optimizer) {
      case Optimizer::kAdam: o_b = master + moments; break;
      case Optimizer::kAdam8bit: o_b = master + 2; break;
      case Optimizer::kSgd: o_b = master + 4; break;
    }
    if (r.explain) {
      // Static pieces, one format call: this note is built on every explained estimate.
      const MasterCopy shown = fp32 ? MasterCopy::kNone : r.master;
      const char* copy = shown == MasterCopy::kFp32        ? " with FP32 master weights"
                         : shown == MasterCopy::kBf16      ? " with a bf16 copy of the weights (Apex DistributedFusedAdam, dtype bf16)"
                         : shown == MasterCopy::kFp16      ? " with a fp16 copy of the weights (Apex DistributedFusedAdam, dtype fp16)"
                         : shown == MasterCopy::kRemainder ? " with the FP32 master weights' low 16 bits beside the BF16 weights "
                                                             "(store_param_remainders)"
                                                           : "";
      const bool adam = r.optimizer == Optimizer::kAdam;
      const char* moments_words = !adam || r.moments == MomentsDtype::kFp32 ? ""
                                  : r.moments == MomentsDtype::kBf16        ? ", bf16 moments"
                                  : r.moments == MomentsDtype::kFp16        ? ", fp16 moments"
                                                                            : ", fp8 moments";
      const char* convention = !(adam && master == 4 && r.moments == MomentsDtype::kFp32) ? ""
                               : g_b == 2 ? "; the ZeRO paper's 16 B/param convention"
                                          : "; Megatron's 18 B/param convention (FP32 grads)";
      f.notes.push_back(fmt::format("model states: {:.0f} B/param = {:.0f} weights + {:.0f} gradients + {:.0f} optimizer ({}{}{}{})",
                                    w_b + g_b + o_b, w_b, g_b, o_b, OptimizerName(r.optimizer), copy, moments_words,
                                    convention));
    }
  }
  f.bytes_per_param_states = w_b + g_b + o_b;
  f.weight_bytes_per_param = w_b;
  f.grad_bytes_per_param = g_b;
  f.optimizer_bytes_per_param = o_b;

  // ---- per stage ----
  const int zero_group = p.dp * p.cp;       // ZeRO / distributed optimizer shard over DP x CP
  // Expert data parallelism: TP x DP x CP / (ETP x EP) ranks hold the same experts (DP x CP / EP when ETP = TP).
  const int expert_zero_group = std::max(1, p.tp * zero_group / (p.expert_tp() * p.ep));
  const double s_local = static_cast<double>(r.seq) / p.cp;
  // Micro-batches per step per pipeline: the in-flight activations of the first stage (fine-tuning too).
  const int64_t num_micro = (training || finetune) ? std::max<int64_t>(1, r.batch / (p.dp * r.micro_batch)) : 1;

  // LoRA adapters: r x (in + out) per targeted matrix per layer.
  double adapter_params = 0;
  if (finetune) {
    SUANLI_ASSIGN_OR_RETURN(const auto shapes, LoraTargetShapes(m, r.lora_targets, 1));
    for (const LoraShape& a : shapes) adapter_params += r.lora_rank * (a.in + a.out) * m.layers;
    // Adapter states per parameter: LoRA keeps FP32 adapters (PEFT default) = 4 + 4 grads + 8 Adam;
    // QLoRA keeps them in the bf16 compute dtype with 32-bit paged AdamW = 2 + 2 + 8.
    const double aw = r.mode == Mode::kQlora ? 2 : 4;
    if (r.explain) f.notes.push_back(fmt::format("LoRA rank {}: {} trainable adapter parameters, {:.0f} B each (weights + grads + Adam)",
                                  r.lora_rank, FormatCount(adapter_params), aw * 2 + 8));
    if (r.mode == Mode::kQlora && r.explain)
      f.notes.push_back("QLoRA: NF4 base weights with double quantisation; paged AdamW can move the optimizer "
                        "states to host memory under pressure, so the peak may be lower than shown");
  }
  f.trainable_params = training ? c.total : adapter_params;

  const Recompute rc = finetune ? (r.gradient_checkpointing ? Recompute::kFull : Recompute::kNone) : r.recompute;
  const bool fp8 = training && r.fp8_activations;
  // Fine-tuning keeps only the adapted matrices' inputs (the frozen ones get no weight gradient).
  SavedForBackward kept_inputs = finetune ? LoraSavedForBackward(r.lora_targets) : SavedForBackward{};
  kept_inputs.swiglu_input_fp8 = r.swiglu_input_fp8;
  // Activations per layer, by kind (a dense and an MoE layer), kept and with nothing recomputed; the means over the
  // model's layers where one figure serves.
  LayerActivationByKind by_kind = LayerActivationBytesByKind(
      m, s_local, static_cast<double>(r.micro_batch), p.tp, p.sequence_parallel, rc, r.flash_attention, r.dropout, fp8,
      r.recompute_modules, p.expert_tp(), kept_inputs);
  LayerActivationByKind by_kind_full = LayerActivationBytesByKind(
      m, s_local, static_cast<double>(r.micro_batch), p.tp, p.sequence_parallel, Recompute::kNone, r.flash_attention,
      r.dropout, fp8, {}, p.expert_tp(), kept_inputs);
  if (finetune && r.lora_dropout > 0) {
    // Adapter dropout: each adapter keeps its mask (1 B per input element) and, for its A's weight gradient, its
    // dropped input in place of the input itself (counted with the kept inputs), so adapters that share an input
    // (separate q, k, v; gate and up) keep a dropped copy each (2 B) beyond the first. A column-parallel adapter drops
    // the layer's input before gathering it, so under sequence parallelism on its 1/TP share of the tokens.
    SUANLI_ASSIGN_OR_RETURN(const auto shapes, LoraTargetShapes(m, r.lora_targets, p.tp));
    const double shard = p.sequence_parallel ? p.tp : 1;
    double in_elems = 0;
    for (const LoraShape& a : shapes) in_elems += a.column_parallel ? a.in / shard : a.in;
    const std::vector<std::string> names = LoraTargetNames(r.lora_targets);
    const auto count = [&](std::initializer_list<const char*> of) {
      double n = 0;
      for (const char* x : of) n += std::count(names.begin(), names.end(), x);
      return n;
    };
    const double attn_sharing = count({"q", "k", "v"}), mlp_sharing = m.gated_mlp ? count({"gate", "up"}) : 0;
    const double h = static_cast<double>(m.hidden);
    const double copies = (std::max(0.0, attn_sharing - 1) * h + std::max(0.0, mlp_sharing - 1) * h) / shard;
    const double extra = s_local * static_cast<double>(r.micro_batch) * (in_elems + 2 * copies);
    by_kind_full.dense += extra;
    by_kind_full.moe += extra;
    if (rc != Recompute::kFull) {
      by_kind.dense += extra;
      by_kind.moe += extra;
    }
  }
  const int moe_layers = m.moe_layer_count();
  // Dense models allocate nothing here (the planner's inner loop).
  const std::vector<int> moe_per_stage = moe_layers > 0 ? MoeLayersPerStage(m, p) : std::vector<int>();
  const auto moe_at = [&](int st) { return moe_per_stage.empty() ? 0 : moe_per_stage[static_cast<size_t>(st)]; };
  const double moe_share = m.layers > 0 ? double(moe_layers) / m.layers : 0;
  const double act_layer = (1 - moe_share) * by_kind.dense + moe_share * by_kind.moe;
  const double act_layer_full = (1 - moe_share) * by_kind_full.dense + moe_share * by_kind_full.moe;

  // Block recompute (recompute_layers): the layers that do not recompute keep all their activations.
  const double rc_share = RecomputedLayerShare(m, p, rc, training ? r.recompute_layers : 0);
  const auto kept = [&](double a, double full) { return rc == Recompute::kFull ? rc_share * a + (1 - rc_share) * full : a; };
  const double act_layer_kept = kept(act_layer, act_layer_full);
  const double kept_dense = kept(by_kind.dense, by_kind_full.dense), kept_moe = kept(by_kind.moe, by_kind_full.moe);

  MemoryBreakdown best;
  double best_total = -1;
  int best_stage_index = 0;
  double best_params = 0;
  int best_inflight = 0;
  // The first stage holds the most in-flight activations and the last the head; with the embedding and the loss
  // counted as layers, a middle stage holds one layer more than either, so it is evaluated too.
  // With a custom layout any stage may hold the most, so each is evaluated.
  std::vector<int> stages = {0};
  // So may one of a model whose first layers are dense (they lighten the first rank's experts). With explain every
  // rank is evaluated, for the per-rank table.
  const bool every_rank = r.explain && p.pp > 1;
  const int mtp_layers = training ? r.mtp_layers : 0;
  if (every_rank) {
    for (int st = 1; st < p.pp; ++st) stages.push_back(st);
  } else if (p.layout || (moe_layers > 0 && moe_layers < m.layers)) {
    // A rank holding the same layers, MoE layers and MTP modules as the one before it keeps no more in flight, so
    // only the ranks where that changes, and the last (the head), can hold the most.
    for (int st = 1; st < p.pp; ++st) {
      const bool same = LayersOnStage(m, p, st) == LayersOnStage(m, p, st - 1) &&
                        moe_at(st) == moe_at(st - 1) &&
                        MtpOnStage(p, mtp_layers, st) == MtpOnStage(p, mtp_layers, st - 1);
      if (!same || st == p.pp - 1) stages.push_back(st);
    }
  } else {
    if (p.embedding_loss_in_split && p.pp > 2) stages.push_back(1);
    if (p.pp > 1) stages.push_back(p.pp - 1);
  }
  for (size_t si = 0; si < stages.size(); ++si) {
    const int stage = stages[si];
    const StageShare sh =
        ParamsOnGpu(m, c, p, stage, mtp_layers, moe_layers, moe_at(stage), r.replicated_embeddings);
    MemoryBreakdown b;
    const double dense = sh.layer_params, experts = sh.expert_params, nonlayer = sh.non_layer_params;
    const double params_here = dense + experts + nonlayer;
    if (training) {
      // ZeRO: 1 shards optimizer states, 2 also gradients, 3 also weights, over the DP x CP group.
      const ModelStateBytes a = ShardModelStates(dense, w_b, g_b, o_b, p.zero, zero_group);
      const ModelStateBytes n = ShardModelStates(nonlayer, nonlayer_w_b, g_b, o_b, p.zero, zero_group);
      const ModelStateBytes e = ShardModelStates(experts, w_b, g_b, o_b, p.zero, expert_zero_group);
      b.weights = a.weights + n.weights + e.weights;
      b.gradients = a.gradients + n.gradients + e.gradients;
      b.optimizer = a.optimizer + n.optimizer + e.optimizer;
      if (p.zero == 3 && zero_group > 1) {
        // Working set of gathered parameters: the current layer and one prefetched (FSDP/DeepSpeed default). An MoE
        // layer's experts are gathered only where ZeRO shards them (expert DP > 1); with EP over the whole DP group
        // each GPU already holds its experts whole, counted above.
        const double experts_per_layer = moe_layers > 0 ? c.moe_experts / moe_layers : 0.0;
        const double gathered = (c.per_layer_total - (moe_layers > 0 ? c.moe_experts / m.layers : 0.0)) / p.tp +
                                (expert_zero_group > 1 ? experts_per_layer / (p.expert_tp() * p.ep) : 0.0);
        b.weights += 2.0 * gathered * w_b;
      }
    } else {
      // Inference and fine-tuning: the base weights in their storage format.
      const double head_b = r.quantize_head ? lin_bytes : emb_bytes;
      b.weights = (dense + experts) * lin_bytes + (nonlayer - sh.head_params) * emb_bytes + sh.head_params * head_b;
      if (finetune) {
        const double aw = r.mode == Mode::kQlora ? 2 : 4;
        const double adapters_here = adapter_params / p.pp / p.tp;
        b.weights += adapters_here * aw;
        b.gradients = adapters_here * aw;
        b.optimizer = adapters_here * 8;
        if (r.mode == Mode::kQlora) {
          // One linear layer dequantised to bf16 at a time.
          const double biggest = std::max<double>(double(m.hidden) * m.ffn, double(m.hidden) * m.heads * m.head_dim);
          b.activations += biggest * 2 / p.tp;
        }
      }
    }
    // FP8 training: Transformer Engine's cached FP8 copies of the layer weights this GPU holds (TE linears and
    // grouped linears cache their quantised weights from the step's first micro-batch). Under ZeRO-3 sharding the
    // weights are gathered per layer and no step-long copy is modelled.
    if (!(p.zero == 3 && zero_group > 1)) b.fp8_weight_cache = (dense + experts) * r.fp8_weight_cache_bytes_per_param;
    // Activations.
    int inflight = 1;
    double held_here = 1;  // micro-batches' worth of the rank's layers it keeps (fractional when interleaved)
    if (training || finetune) {
      // 1F1B: stage s holds PP - s micro-batches' activations at its peak. Interleaved (Megatron-Core's warm-up):
      // rank r runs 2(PP - r - 1) + (V - 1) PP chunk-micro-batches ahead plus the one in flight, which in units of
      // the rank's layers is, for rank 0, Korthikanti et al.'s PP (1 + (PP - 1)/(PP V)) (§4.2.3).
      const int64_t nm = std::max<int64_t>(1, num_micro);
      inflight = static_cast<int>(std::min<int64_t>(p.pp - stage, nm));
      double held = inflight;
      if (p.interleave > 1 && num_micro >= p.pp)
        held = std::min(2.0 * (p.pp - stage - 1) + (p.interleave - 1.0) * p.pp + 1, double(nm) * p.interleave) /
               p.interleave;
      // CPU offloading (PP 1, no recompute): at most layers - N layers' activations on the GPU at a time. An MTP
      // module keeps about one more layer's.
      // Each of the rank's layers keeps its own kind's activations (an MTP module's layer is of the model's last
      // kind); offloaded layers (PP 1) free the mean layer's.
      const int mtp_here = MtpOnStage(p, mtp_layers, stage);
      const int moe_here = moe_at(stage) + (moe_layers > 0 ? mtp_here : 0);
      const int dense_here = LayersOnStage(m, p, stage) + mtp_here - moe_here;
      held_here = held;
      double act = (kept_dense * dense_here + kept_moe * moe_here -
                    act_layer_kept * (training ? r.offload_layers : 0)) * held;
      if (rc == Recompute::kFull) act += act_layer_full;  // one layer recomputed during backward
      if (rc == Recompute::kOp) act += act_layer_full - act_layer;  // one layer's recomputed tensors
      b.activations += act;
      const double logits =
          s_local * static_cast<double>(r.micro_batch) * static_cast<double>(m.vocab) * r.loss_bytes_per_logit / p.tp;
      if (stage == p.pp - 1) b.logits = logits;
      b.logits += mtp_here * logits;  // each MTP module's own output layer and loss
    } else {
      // Inference forward workspace: one layer's transient tensors for one prefill chunk, plus logits of the
      // last position of each sequence (FP32). Under attention DP each GPU's group serves its 1/D of the sequences
      // (the busiest ceil(batch / D)) at TP / D, and holds their KV cache only.
      const int at = p.attention_tp();
      const int64_t seqs = (r.batch + p.attention_dp - 1) / p.attention_dp;
      const double tokens = std::min(static_cast<double>(seqs) * static_cast<double>(r.seq), double(kPrefillChunkTokens));
      const double h = static_cast<double>(m.hidden);
      const double q = double(m.heads) * m.head_dim, kv = double(m.kv_heads) * m.head_dim;
      const double ffn = m.moe ? double(m.moe->expert_ffn) * m.moe->experts_per_token + m.moe->shared_ffn
                               : static_cast<double>(m.ffn);
      b.activations += tokens * 2 * (3 * h + (q + 2 * kv + (m.gated_mlp ? 3 : 2) * ffn) / at);
      if (stage == p.pp - 1) b.logits = static_cast<double>(seqs) * static_cast<double>(m.vocab) * 4 / at;
      b.kv_cache = KvCacheBytes(m, r.kv_bytes_per_elem, seqs, r.seq, at) / p.pp;
    }
    // The caching allocator fragments around tensors allocated and freed every step (activations, logits,
    // gradients); weights, optimizer states and a pre-allocated KV cache are long-lived, large blocks.
    const double dynamic = b.gradients + b.activations + b.logits;
    const bool collectives = p.tp > 1 || p.pp > 1 || p.dp > 1 || p.cp > 1 || p.ep > 1;
    b.overhead = r.overhead.cuda_context_bytes + r.overhead.fragmentation * dynamic +
                 (collectives ? (r.overhead.nccl_buffers_bytes > 0 ? r.overhead.nccl_buffers_bytes : kNcclBufferBytes)
                              : 0.0);
    if (every_rank)
      f.ranks.push_back({LayersOnStage(m, p, stage), MtpOnStage(p, mtp_layers, stage),
                         (training || finetune) ? held_here : 0.0, b.Total()});
    if (b.Total() > best_total) {
      best_total = b.Total();
      best = b;
      best_stage_index = stage;
      best_params = params_here;
      best_inflight = inflight;
    }
    if (p.pp == 1) break;
  }
  f.breakdown = best;
  f.per_gpu_peak_bytes = best_total;
  f.peak_stage = p.pp == 1                     ? "every GPU"
                 : best_stage_index == 0        ? "first pipeline stage"
                 : best_stage_index == p.pp - 1 ? "last pipeline stage"
                                                : "a middle pipeline stage";
  f.params_per_gpu = best_params;
  f.in_flight_micro_batches = best_inflight;
  if (training && r.offload_layers > 0) {
    f.offload_layer_bytes = act_layer_full;
    f.host_offload_bytes = act_layer_full * r.offload_layers;
  }
  f.host_memory_limit_bytes = r.host_memory_per_gpu_bytes;
  f.kv_cache_bytes_per_token = KvBytesPerToken(m, r.kv_bytes_per_elem, 1);
  if (!r.explain) return f;
  if (training || finetune) {
    f.peak_moment = fmt::format(
        "end of the forward pass with {} micro-batch(es) in flight, gradient buffers and optimizer states resident",
        best_inflight);
  } else {
    f.peak_moment = "prefill of a full batch with the KV cache filled to the whole context";
  }
  if (auto beyond = ContextBeyondModelNote(m, r.seq)) f.notes.push_back(std::move(*beyond));
  if (!training && !finetune)
    if (auto stored = StoredFormatNote(m, r.weights)) f.notes.push_back(std::move(*stored));
  if (r.flash_attention) f.notes.push_back("FlashAttention: no s^2 attention-score tensors are stored");
  // Serving an MoE model whose KV cache TP cannot split (MLA's one latent per layer, or fewer KV heads than GPUs): each
  // of the TP GPUs holds every sequence's copy, and attention DP would hold only its own sequences' (§9.7).
  if (!training && !finetune && m.moe && p.tp > 1 && p.attention_dp == 1 && (m.mla || m.kv_heads < p.tp)) {
    // Attention DP with that many groups (attention TP = the KV heads, or 1 for MLA) holds each sequence once.
    const int copies = m.mla ? p.tp : p.tp / std::max(1, m.kv_heads);
    f.notes.push_back(fmt::format(
        "the KV cache is held {} times over the {} TP GPUs ({}); with attention data parallelism (--attention-dp {}) "
        "each GPU would hold 1/{} as much, for more weights per GPU (docs/methodology.md section 9.7)",
        copies, p.tp, m.mla ? "MLA keeps one latent per layer, which TP does not split"
                            : fmt::format("{} KV heads over {} GPUs", m.kv_heads, p.tp),
        copies, copies));
  }
  if (training && r.offload_layers > 0)
    f.notes.push_back(fmt::format("CPU activation offloading: {} of {} layers' activations ({} per layer) move to pinned "
                                  "host memory, {} per GPU; at most {} layers' activations are on the GPU",
                                  r.offload_layers, m.layers, FormatBytes(act_layer_full), FormatBytes(f.host_offload_bytes),
                                  m.layers - r.offload_layers));
  if (training && p.zero == 3 && zero_group > 1)
    f.notes.push_back("ZeRO-3/FSDP: two layers' parameters are gathered at a time (current + prefetch)");
  if (best.fp8_weight_cache > 0)
    f.notes.push_back(fmt::format("FP8 weight cache: Transformer Engine keeps each layer weight's FP8 copy for the "
                                  "step, {:.4g} B per parameter, {} per GPU (Megatron-Core's default "
                                  "disable_parameter_transpose_cache=False)",
                                  r.fp8_weight_cache_bytes_per_param, FormatBytes(best.fp8_weight_cache)));
  return f;
}

FitVerdict CheckFit(const FitResult& f, const GpuSpec& gpu) {
  FitVerdict v;
  v.capacity_bytes = gpu.memory_bytes.value;
  v.headroom_bytes = v.capacity_bytes - f.per_gpu_peak_bytes;
  v.fits = v.headroom_bytes >= 0;
  if (f.host_offload_bytes > 0) {
    v.host_capacity_bytes = f.host_memory_limit_bytes > 0 ? f.host_memory_limit_bytes
                            : gpu.host_memory_per_gpu_bytes ? gpu.host_memory_per_gpu_bytes->value
                                                            : 0.0;
    v.host_fits = v.host_capacity_bytes <= 0 || f.host_offload_bytes <= v.host_capacity_bytes;
    v.fits = v.fits && v.host_fits;
  }
  return v;
}

MinGpus FindMinGpus(const ModelSpec& m, const FitRequest& req, const GpuSpec& gpu, int max_gpus) {
  MinGpus best;
  const bool training = req.mode == Mode::kTrain;
  std::vector<int> tps;
  for (int t : {1, 2, 4, 8})
    if (m.heads % t == 0 && (m.mla || m.kv_heads % t == 0 || t % m.kv_heads == 0)) tps.push_back(t);
  std::string last_error;
  auto evaluate = [&](int t, int pp, int dp, int zero) -> double {
    FitRequest r = req;
    r.explain = false;  // only the peak is needed: no notes, no per-rank table
    r.par = Parallelism{};
    r.par.tp = t;
    r.par.pp = pp;
    r.par.dp = dp;
    r.par.zero = zero;
    r.par.sequence_parallel = t > 1 && training;
    if (training) r.batch = r.micro_batch * dp * std::max(1, pp);  // enough micro-batches to fill the pipeline
    auto est = EstimateMemory(m, r);
    if (!est.ok()) {
      last_error = est.status().message();
      return -1;
    }
    return est->per_gpu_peak_bytes;
  };
  const double cap = gpu.memory_bytes.value;
  auto consider = [&](int t, int pp, int dp, int zero, double peak) {
    const int n = t * pp * dp;
    if (best.gpus == 0 || n < best.gpus || (n == best.gpus && peak < best.per_gpu_peak_bytes)) {
      best.gpus = n;
      best.layout = Parallelism{};
      best.layout.tp = t;
      best.layout.pp = pp;
      best.layout.dp = dp;
      best.layout.zero = zero;
      best.layout.sequence_parallel = t > 1 && training;
      best.per_gpu_peak_bytes = peak;
    }
  };
  // Per-GPU memory never grows with more pipeline stages or (under ZeRO) more data-parallel ranks, so
  // for each TP degree and ZeRO stage the smallest fitting PP and DP are found by bisection.
  for (int t : tps) {
    for (int pp = 1; pp <= m.layers && t * pp <= max_gpus; ++pp) {
      if (best.gpus > 0 && t * pp > best.gpus) break;
      const std::vector<int> zeros = training ? std::vector<int>{0, 1, 2, 3} : std::vector<int>{req.par.zero};
      for (int zero : zeros) {
        const int max_dp = training && zero > 0 ? max_gpus / (t * pp) : 1;
        double peak_hi = evaluate(t, pp, max_dp, zero);
        if (peak_hi < 0 || peak_hi > cap) continue;
        int lo = 1, hi = max_dp;
        while (lo < hi) {
          const int mid = lo + (hi - lo) / 2;
          const double pk = evaluate(t, pp, mid, zero);
          if (pk >= 0 && pk <= cap) {
            hi = mid;
            peak_hi = pk;
          } else {
            lo = mid + 1;
          }
        }
        consider(t, pp, lo, zero, evaluate(t, pp, lo, zero));
      }
    }
  }
  if (best.gpus == 0) {
    best.reason =
        last_error.empty() ? fmt::format("does not fit on up to {} GPUs of {}", max_gpus, gpu.id) : last_error;
  }
  return best;
}

namespace {
template <typename F>
int64_t LargestTrue(int64_t lo, int64_t hi, F ok) {
  if (!ok(lo)) return 0;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (ok(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}
}  // namespace

int64_t MaxBatchThatFits(const ModelSpec& m, FitRequest r, const GpuSpec& gpu) {
  const bool training = r.mode != Mode::kInfer;
  r.explain = false;  // only the peak is needed
  return LargestTrue(1, int64_t(1) << 20, [&](int64_t b) {
    FitRequest q = r;
    if (training) {
      q.micro_batch = b;
      q.batch = b * q.par.dp * std::max<int64_t>(1, q.batch / (r.micro_batch * q.par.dp));
    } else {
      q.batch = b;
    }
    auto e = EstimateMemory(m, q);
    return e.ok() && e->per_gpu_peak_bytes <= gpu.memory_bytes.value;
  });
}

int64_t MaxContextThatFits(const ModelSpec& m, FitRequest r, const GpuSpec& gpu) {
  const int64_t hi = std::max<int64_t>(m.max_positions, 1) ;
  r.explain = false;  // only the peak is needed
  return LargestTrue(1, hi, [&](int64_t s) {
    FitRequest q = r;
    q.seq = s;
    if (q.par.cp > 1 && s % q.par.cp != 0) q.seq = (s / q.par.cp) * q.par.cp;
    if (q.seq < 1) return false;
    auto e = EstimateMemory(m, q);
    return e.ok() && e->per_gpu_peak_bytes <= gpu.memory_bytes.value;
  });
}

}  // namespace suanli
