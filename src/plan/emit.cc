// Launch configurations for a planned layout: Megatron-LM arguments, torchrun, DeepSpeed,
// Slurm and a Kubernetes PyTorchJob. Each is annotated with what suanli predicted.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "suanli/plan.h"
#include "suanli/text.h"
#include "suanli/units.h"

namespace suanli {

namespace {

using Arg = std::pair<std::string, std::string>;  // flag, value ("" for a switch)

// Megatron-LM's --moe-layer-freq as a Python list expression (its parser evaluates one), run by run: "[0]*3+[1]*58"
// for DeepSeek-V3, "([0]*1+[1])*24" for every other layer; empty where every layer is MoE (the default, 1).
std::string MoeLayerFreq(const ModelSpec& m) {
  if (!m.moe || m.moe_layer_count() == m.layers) return "";
  const int step = std::max(1, m.moe->layer_step);
  if (m.moe->first_dense_layers == 0 && step > 1 && m.layers % step == 0)
    return fmt::format("([0]*{}+[1])*{}", step - 1, m.layers / step);
  std::string out;
  for (int i = 0; i < m.layers;) {
    const bool moe = m.is_moe_layer(i);
    int j = i;
    while (j < m.layers && m.is_moe_layer(j) == moe) ++j;
    out += fmt::format("{}[{}]*{}", out.empty() ? "" : "+", moe ? 1 : 0, j - i);
    i = j;
  }
  return out;
}

std::vector<Arg> Args(const PlanCandidate& c, const LaunchContext& x) {
  const ModelSpec& m = *x.model;
  const Parallelism& p = c.par;
  std::vector<Arg> a = {
      {"--num-layers", std::to_string(m.layers)},
      {"--hidden-size", std::to_string(m.hidden)},
      {"--num-attention-heads", std::to_string(m.heads)},
      {"--ffn-hidden-size", std::to_string(m.ffn)},
      {"--seq-length", std::to_string(x.seq)},
      {"--max-position-embeddings", std::to_string(std::max<int64_t>(x.seq, m.max_positions))},
      {"--micro-batch-size", std::to_string(c.micro_batch)},
      {"--global-batch-size", std::to_string(x.global_batch)},
      {"--tensor-model-parallel-size", std::to_string(p.tp)},
      {"--pipeline-model-parallel-size", std::to_string(p.pp)},
  };
  if (p.embedding_loss_in_split) {
    a.push_back({"--account-for-embedding-in-pipeline-split", ""});
    a.push_back({"--account-for-loss-in-pipeline-split", ""});
    if (p.interleave > 1) a.push_back({"--num-virtual-stages-per-pipeline-rank", std::to_string(p.interleave)});
  } else if (p.layout) {
    a.push_back({"--pipeline-model-parallel-layout", p.layout->text});
  } else if (p.interleave > 1) {
    a.push_back({"--num-layers-per-virtual-pipeline-stage", std::to_string(m.layers / (p.pp * p.interleave))});
  } else if (const std::string uneven = UnevenSplitLayout(m, p, x.mtp_layers); !uneven.empty()) {
    // Megatron-Core needs the layers divisible by PP unless the split is spelled out; the estimate's split, as a
    // layout (pipeline_parallel_layer_layout.py).
    a.push_back({"--pipeline-model-parallel-layout", uneven});
  }
  if (p.cp > 1) a.push_back({"--context-parallel-size", std::to_string(p.cp)});
  if (p.cp > 1 && c.cp_comm == CpComm::kAllToAll) a.push_back({"--cp-comm-type", "a2a"});  // default p2p
  // The shapes Megatron-LM would otherwise take from its defaults: a head size other than hidden / heads, the
  // attention of MLA models, Qwen3's per-head norms, and no linear biases where the model has none (Megatron-LM adds
  // them by default).
  if (m.mla) {
    a.push_back({"--multi-latent-attention", ""});
    if (m.mla->q_lora_rank > 0) a.push_back({"--q-lora-rank", std::to_string(m.mla->q_lora_rank)});
    a.push_back({"--kv-lora-rank", std::to_string(m.mla->kv_lora_rank)});
    a.push_back({"--qk-head-dim", std::to_string(m.mla->qk_nope_head_dim)});
    a.push_back({"--qk-pos-emb-head-dim", std::to_string(m.mla->qk_rope_head_dim)});
    a.push_back({"--v-head-dim", std::to_string(m.mla->v_head_dim)});
  } else if (m.heads > 0 && int64_t(m.head_dim) * m.heads != m.hidden) {
    a.push_back({"--kv-channels", std::to_string(m.head_dim)});
  }
  if (m.extra_head_norm_dim > 0) a.push_back({"--qk-layernorm", ""});
  if (!m.mlp_bias && !m.attn_out_bias) {
    a.push_back({"--disable-bias-linear", ""});
    if (m.qkv_bias) a.push_back({"--add-qkv-bias", ""});
  }
  // The estimate runs without dropout; Megatron-LM's default is 0.1 on both.
  a.push_back({"--attention-dropout", "0"});
  a.push_back({"--hidden-dropout", "0"});
  if (m.moe) {
    a.push_back({"--num-experts", std::to_string(m.moe->num_experts)});
    a.push_back({"--moe-router-topk", std::to_string(m.moe->experts_per_token)});
    // The experts' and the shared experts' widths (Megatron-LM's default is --ffn-hidden-size, the dense MLP's), and
    // which layers are MoE where not all are (DeepSeek's first dense layers).
    a.push_back({"--moe-ffn-hidden-size", std::to_string(m.moe->expert_ffn)});
    // The estimate times a rank's experts as one grouped GEMM (Transformer Engine's GroupedLinear); without the flag
    // Megatron-LM runs them one after another (SequentialMLP).
    a.push_back({"--moe-grouped-gemm", ""});
    if (m.moe->num_shared_experts > 0 && m.moe->shared_ffn > 0)
      a.push_back({"--moe-shared-expert-intermediate-size", std::to_string(m.moe->shared_ffn)});
    if (const std::string freq = MoeLayerFreq(m); !freq.empty()) a.push_back({"--moe-layer-freq", freq});
    if (m.moe->router_bias) {  // DeepSeek-V3's sigmoid router with its expert-bias correction
      a.push_back({"--moe-router-score-function", "sigmoid"});
      a.push_back({"--moe-router-enable-expert-bias", ""});
    }
    if (p.ep > 1) {
      a.push_back({"--expert-model-parallel-size", std::to_string(p.ep)});
      // The dispatcher the estimate assumed (Megatron-Core's default, allgather, is neither). Only HybridEP
      // reaches across a multi-node NVLink domain (GB200 NVL72); DeepEP elsewhere.
      if (c.moe_dispatcher == MoeDispatcher::kFlex) {
        a.push_back({"--moe-token-dispatcher-type", "flex"});
        a.push_back({"--moe-flex-dispatcher-backend", x.gpus_per_node > 8 ? "hybridep" : "deepep"});
      } else {
        a.push_back({"--moe-token-dispatcher-type", "alltoall"});
      }
    }
    if (p.etp > 0 && p.etp != p.tp) a.push_back({"--expert-tensor-parallel-size", std::to_string(p.etp)});
  }
  if (x.cuda_graphs == CudaGraphs::kFull) {
    a.push_back({"--cuda-graph-impl", "local"});
    a.push_back({"--cuda-graph-scope", "full_iteration"});
  } else if (x.cuda_graphs == CudaGraphs::kPartial) {
    a.push_back({"--cuda-graph-impl", "transformer_engine"});
    a.push_back({"--cuda-graph-scope", m.moe ? "attn moe_router moe_preprocess" : "attn"});
  }
  if (p.sequence_parallel) a.push_back({"--sequence-parallel", ""});
  if (c.tp_overlap) a.push_back({"--tp-comm-overlap", ""});
  if (c.ep_overlap) {
    a.push_back({"--overlap-moe-expert-parallel-comm", ""});
    a.push_back({"--delay-wgrad-compute", ""});
  }
  if (p.zero == 1 || p.zero == 2) a.push_back({"--use-distributed-optimizer", ""});
  // The optimizer's precision (docs/methodology.md §5): Megatron-Core's precision-aware optimizer (Transformer
  // Engine's FusedAdam), whose FP32 main params are kept as 16-bit remainders beside BF16 weights by default.
  if (x.master != MasterCopy::kFp32 || x.moments != MomentsDtype::kFp32) {
    a.push_back({"--use-precision-aware-optimizer", ""});
    if (x.master == MasterCopy::kFp16) a.push_back({"--main-params-dtype", "fp16"});
    if (x.moments != MomentsDtype::kFp32) {
      a.push_back({"--exp-avg-dtype", MomentsDtypeName(x.moments)});
      a.push_back({"--exp-avg-sq-dtype", MomentsDtypeName(x.moments)});
    }
  }
  // The data-parallel overlap the estimate assumed (Megatron-LM's default is none): gradients reduced during the
  // last micro-batch's backward, and with the distributed optimizer the parameters gathered during the next
  // forward (docs/methodology.md §8).
  // The gradients are reduced at 16 bits in the estimate (perf train without --fp32-grads); with --bf16 Megatron-LM
  // accumulates and reduces them in FP32 unless told otherwise, which moves twice the bytes.
  if (p.dp * p.cp > 1 && p.zero < 3) a.push_back({"--grad-reduce-in-bf16", ""});
  if (c.dp_overlap && p.dp * p.cp > 1 && p.zero < 3) {  // gradients are reduced over DP x CP
    a.push_back({"--overlap-grad-reduce", ""});
    if (p.zero >= 1) a.push_back({"--overlap-param-gather", ""});
    // A fixed bucket the estimate assumed (plan --dp-bucket-mb): Megatron-LM counts it in parameters, of the 2-byte
    // gradients --grad-reduce-in-bf16 reduces.
    if (x.dp_bucket_bytes > 0)
      a.push_back({"--ddp-bucket-size", std::to_string(static_cast<int64_t>(std::llround(x.dp_bucket_bytes / 2)))});
  }
  if (p.zero == 3) a.push_back({"--use-torch-fsdp2", ""});
  // The loss the estimate assumed (docs/methodology.md §6.4): without the flag Megatron-LM runs its unfused FP32 path,
  // which moves 52 B per logit against the fused 32 and the single-pass kernel's 6.
  if (x.cross_entropy != CrossEntropyImpl::kUnfused) a.push_back({"--cross-entropy-loss-fusion", ""});
  if (x.cross_entropy == CrossEntropyImpl::kOnline) a.push_back({"--cross-entropy-fusion-impl", "te"});
  if (x.mtp_layers > 0) a.push_back({"--mtp-num-layers", std::to_string(x.mtp_layers)});
  if (c.recompute == Recompute::kSelective) {
    a.push_back({"--recompute-granularity", "selective"});
    // Megatron-Core's default module list is core_attn; any other set is written out (space-separated).
    if (NamesRecomputeModules(c.recompute, c.recompute_modules)) {
      std::string list = RecomputeModulesList(c.recompute_modules);
      for (auto& ch : list)
        if (ch == ',') ch = ' ';
      a.push_back({"--recompute-modules", list});
    }
  }
  if (c.recompute == Recompute::kFull) {
    a.push_back({"--recompute-granularity", "full"});
    if (c.recompute_layers > 0) {  // block: the first N layers of each chunk
      a.push_back({"--recompute-method", "block"});
      a.push_back({"--recompute-num-layers", std::to_string(c.recompute_layers)});
    } else {
      a.push_back({"--recompute-method", "uniform"});
      a.push_back({"--recompute-num-layers", "1"});
    }
  }
  // CPU activation offloading (--cpu-offloading-num-layers N turns --cpu-offloading on in Megatron-LM's arguments).
  if (c.offload_layers > 0) a.push_back({"--cpu-offloading-num-layers", std::to_string(c.offload_layers)});
  if (m.kv_heads < m.heads && !m.mla) {
    a.push_back({"--group-query-attention", ""});
    a.push_back({"--num-query-groups", std::to_string(m.kv_heads)});
  }
  if (m.gated_mlp) a.push_back({"--swiglu", ""});
  if (m.norm == NormKind::kRmsNorm) a.push_back({"--normalization", "RMSNorm"});
  if (m.learned_positions == 0) a.push_back({"--position-embedding-type", "rope"});
  if (!m.tie_embeddings) a.push_back({"--untie-embeddings-and-output-weights", ""});
  a.push_back({"--bf16", ""});
  // The estimate's peak says which GEMM precision it priced: NVFP4 (Megatron-Core --fp4-format e2m1 with its default
  // recipe, nvfp4) at the FP4 peak, FP8 at the FP8 peak.
  const bool fp4 = c.result.peak_flops_per_gpu > 0 && x.gpu && x.gpu->PeakFlops(Precision::kFp4) &&
                   c.result.peak_flops_per_gpu >= *x.gpu->PeakFlops(Precision::kFp4);
  if (fp4) {
    a.push_back({"--fp4-format", "e2m1"});
    a.push_back({"--fp4-recipe", "nvfp4"});
  } else if (c.result.peak_flops_per_gpu > 0 && x.gpu && x.gpu->PeakFlops(Precision::kFp8) &&
             c.result.peak_flops_per_gpu >= *x.gpu->PeakFlops(Precision::kFp8)) {
    a.push_back({"--fp8-format", "hybrid"});
    // Megatron-Core's names: tensorwise is Transformer Engine's current scaling; delayed is the default.
    if (x.fp8_recipe == Fp8Recipe::kCurrent) a.push_back({"--fp8-recipe", "tensorwise"});
    if (x.fp8_recipe == Fp8Recipe::kMxfp8) a.push_back({"--fp8-recipe", "mxfp8"});
    if (x.fp8_params) a.push_back({"--fp8-param-gather", ""});
  }
  a.push_back({"--use-flash-attn", ""});
  if (x.train_iters > 0) a.push_back({"--train-iters", fmt::format("{:.0f}", std::ceil(x.train_iters))});
  return a;
}

// The words of a value, split at spaces (none for an empty value).
std::vector<std::string> SplitWords(const std::string& v) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < v.size()) {
    const size_t j = std::min(v.find(' ', i), v.size());
    if (j > i) out.push_back(v.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

// The words of a list-valued Megatron flag's value (--recompute-modules, --cuda-graph-scope), spaces separating them,
// each quoted as ShellQuote does (a layout's '|', '*', '(').
std::string ShellWord(const std::string& v) {
  std::string out;
  for (const auto& w : SplitWords(v)) out += (out.empty() ? "" : " ") + ShellQuote(w);
  return out;
}

// What the arguments leave to the user: data and tokenizer, whose vocabulary (padded by Megatron-LM to a multiple of
// 128 x TP) sets the output layer the estimate timed at the model's own size.
std::string DataLine(const LaunchContext& x) {
  return fmt::format("# add your data and tokenizer arguments; the estimate used {}'s vocabulary of {}\n",
                     x.model ? CommentText(x.model->id) : "the model", x.model ? x.model->vocab : 0);
}

std::string Prediction(const PlanCandidate& c) {
  const TrainResult& r = c.result;
  std::string s = fmt::format("step {:.3f} s, {:.0f} tokens/s ({:.0f} per GPU), MFU {:.1f}%, {} per GPU", r.step_time_s,
                              r.tokens_per_s, r.tokens_per_s_per_gpu, 100 * r.mfu,
                              FormatBytes(r.memory.per_gpu_peak_bytes));
  if (r.train_time_s > 0) s += fmt::format(", {} to train ({:.0f} GPU-hours)", FormatSeconds(r.train_time_s), r.gpu_hours);
  return s;
}

std::string LayoutLine(const PlanCandidate& c) {
  const Parallelism& p = c.par;
  return fmt::format("TP={} PP={} DP={} CP={} EP={} ZeRO={} SP={} interleave={} micro-batch={} recompute={}", p.tp, p.pp,
                     p.dp, p.cp, p.ep, p.zero, p.sequence_parallel ? "on" : "off", p.interleave, c.micro_batch,
                     RecomputeWords(c.recompute, c.recompute_layers, c.recompute_modules)) +
         (c.offload_layers > 0 ? fmt::format(" cpu-offload={} layers", c.offload_layers) : "") +
         (c.tp_overlap ? " tp-overlap=on" : "") + (c.ep_overlap ? " ep-overlap=on" : "");
}

// The launch files' nodes are hosts (one OS image each): a GB200 NVL72 rack is one NVLink domain of 18 four-GPU hosts.
int Hosts(const LaunchContext& x) { return std::max(1, std::min(x.gpus_per_host, x.gpus_per_node)); }

int Nodes(const PlanCandidate& c, const LaunchContext& x) {
  const int gpus = c.par.gpus();
  return std::max(1, (gpus + Hosts(x) - 1) / Hosts(x));
}

int ProcsPerNode(const PlanCandidate& c, const LaunchContext& x) { return std::min(c.par.gpus(), Hosts(x)); }

// Host memory one node pins for CPU activation offloading (0 without it).
double PinnedHostBytesPerNode(const PlanCandidate& c, const LaunchContext& x) {
  return c.offload_layers > 0 ? c.result.memory.host_offload_bytes * ProcsPerNode(c, x) : 0.0;
}

}  // namespace

std::string MegatronArgs(const PlanCandidate& c, const LaunchContext& x) {
  std::string out = fmt::format("# Megatron-LM (pretrain_gpt.py) arguments generated by suanli {}\n", SUANLI_VERSION);
  out += "# layout: " + LayoutLine(c) + "\n# predicted: " + Prediction(c) + "\n";
  if (c.par.zero == 3) out += "# ZeRO-3 maps to Megatron-Core's torch FSDP2 integration (--use-torch-fsdp2)\n";
  out += DataLine(x);
  for (const auto& [k, v] : Args(c, x)) out += v.empty() ? k + "\n" : k + " " + ShellWord(v) + "\n";
  return out;
}

Status CheckMegatronOptimizer(MasterCopy master, MomentsDtype moments) {
  // fp32, fp16, bf16 and fp8 are all --exp-avg-dtype choices; but the flag that sets them turns on the
  // precision-aware optimizer, which keeps FP32 main params beside BF16 weights as remainders (store_param_remainders,
  // True by default; Megatron-LM has no flag for it).
  if (master == MasterCopy::kFp32 && moments != MomentsDtype::kFp32)
    return InvalidArgument(fmt::format(
        "--moments-dtype {} with FP32 main params: Megatron-LM's --exp-avg-dtype turns on the precision-aware "
        "optimizer, which keeps FP32 main params as 16-bit remainders beside BF16 weights (store_param_remainders, no "
        "flag turns it off); estimate with --master-dtype remainder",
        MomentsDtypeName(moments)));
  if (master == MasterCopy::kBf16 || master == MasterCopy::kNone)
    return InvalidArgument(fmt::format(
        "--master-dtype {}: Megatron-Core's precision-aware optimizer keeps its main params in fp32, fp16 or (the "
        "default with BF16 weights) as 16-bit remainders; for Megatron-LM flags use --master-dtype remainder or fp16 "
        "(a bf16 copy is Apex DistributedFusedAdam's, NeMo 1.x optim.dtype)",
        MasterCopyName(master)));
  return Status::Ok();
}

std::string TorchrunCommand(const PlanCandidate& c, const LaunchContext& x) {
  std::string out = fmt::format("# predicted: {}\n", Prediction(c)) + DataLine(x);
  out += fmt::format(
      "torchrun --nnodes={} --nproc-per-node={} --node-rank=\"${{NODE_RANK:-0}}\" \\\n"
      "  --master-addr=\"${{MASTER_ADDR:-localhost}}\" --master-port=\"${{MASTER_PORT:-29500}}\" \\\n  pretrain_gpt.py",
      Nodes(c, x), ProcsPerNode(c, x));
  for (const auto& [k, v] : Args(c, x)) out += " \\\n    " + (v.empty() ? k : k + " " + ShellWord(v));
  return out + "\n";
}

std::string DeepSpeedConfig(const PlanCandidate& c, const LaunchContext& x) {
  nlohmann::ordered_json j;
  const int dp = c.par.dp;
  j["train_batch_size"] = x.global_batch;
  j["train_micro_batch_size_per_gpu"] = c.micro_batch;
  j["gradient_accumulation_steps"] = x.global_batch / (dp * c.micro_batch);
  j["bf16"] = {{"enabled", true}};
  // DeepSpeed's pipeline engine refuses ZeRO-2 and -3 with more than one stage (deepspeed/runtime/pipe/engine.py:
  // "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism"): such a layout is written with stage 1, which
  // holds every gradient (and under ZeRO-3 every weight) of the stage, and says what that costs.
  const bool pipe_zero = !DeepSpeedRuns(c.par.pp, c.par.zero);
  const int zero_stage = pipe_zero ? 1 : c.par.zero;
  j["zero_optimization"] = {{"stage", zero_stage}, {"overlap_comm", true}, {"contiguous_gradients", true}};
  if (pipe_zero) {
    const FitResult& mem = c.result.memory;
    const double full = mem.params_per_gpu * 2;  // 16-bit gradients and weights, as the estimate reduces them
    const double extra = std::max(0.0, full - mem.breakdown.gradients) +
                         (c.par.zero == 3 ? std::max(0.0, full - mem.breakdown.weights) : 0.0);
    const double peak = mem.per_gpu_peak_bytes + extra;
    const double cap = x.gpu ? x.gpu->memory_bytes.value : 0.0;
    j["suanli_warning"] = fmt::format(
        "the estimate is for ZeRO-{} with PP {}, which DeepSpeed's pipeline engine refuses; this config uses stage 1, "
        "which holds every gradient{} of the pipeline stage: about {} more per GPU, {} in all{} (Megatron-LM runs the "
        "layout as estimated: --emit megatron)",
        c.par.zero, c.par.pp, c.par.zero == 3 ? " and weight" : "", FormatBytes(extra), FormatBytes(peak),
        cap > 0 ? (peak > cap ? fmt::format(", more than the {} GPU holds", FormatBytes(cap))
                              : fmt::format(", within the {} GPU", FormatBytes(cap)))
                : "");
  }
  if (zero_stage == 3) {
    j["zero_optimization"]["stage3_prefetch_bucket_size"] = 5e8;
    j["zero_optimization"]["stage3_param_persistence_threshold"] = 1e6;
  }
  if (c.recompute != Recompute::kNone)
    j["activation_checkpointing"] = {{"partition_activations", c.par.tp > 1}, {"contiguous_memory_optimization", false},
                                     {"cpu_checkpointing", false}};
  // Which modules recompute is the model code's choice under DeepSpeed (it checkpoints what the code wraps).
  if (NamesRecomputeModules(c.recompute, c.recompute_modules))
    j["suanli_note"] = fmt::format(
        "this layout recomputes only these modules of each layer: {} (Megatron-Core's --recompute-modules); DeepSpeed "
        "checkpoints whatever the model code wraps in deepspeed.checkpointing.checkpoint, so the code must wrap "
        "exactly those for the predicted time and memory to hold",
        RecomputeModulesList(c.recompute_modules));
  // DeepSpeed's config has no per-layer activation offload (cpu_checkpointing offloads checkpointed inputs only, and
  // needs recompute): say what the layout relies on instead of writing a config that would not fit.
  if (c.offload_layers > 0)
    j[j.contains("suanli_warning") ? "suanli_warning_offload" : "suanli_warning"] = fmt::format(
        "this layout offloads the activations of the first {} layers to host memory ({} per GPU), which this config "
        "cannot express: the model code must do it (Transformer Engine's get_cpu_offload_context, as Megatron-Core's "
        "--cpu-offloading-num-layers {}); without it the layout does not fit",
        c.offload_layers, FormatBytes(c.result.memory.host_offload_bytes), c.offload_layers);
  j["gradient_clipping"] = 1.0;
  j["steps_per_print"] = 10;
  j["wall_clock_breakdown"] = false;
  // DeepSpeed ignores keys it does not know; this one records what suanli predicted.
  j["suanli_prediction"] = {{"layout", LayoutLine(c)},
                            {"tensor_parallel", c.par.tp},
                            {"pipeline_parallel", c.par.pp},
                            {"step_time_s", c.result.step_time_s},
                            {"tokens_per_s", c.result.tokens_per_s},
                            {"mfu", c.result.mfu},
                            {"per_gpu_peak_bytes", c.result.memory.per_gpu_peak_bytes}};
  return j.dump(2) + "\n";
}

std::string SlurmScript(const PlanCandidate& c, const LaunchContext& x) {
  std::string time_line;
  if (c.result.train_time_s > 0) {
    // Predicted time plus 20% and an hour of margin, in Slurm's D-HH:MM:SS.
    const long secs = static_cast<long>(c.result.train_time_s * 1.2 + 3600);
    time_line = fmt::format("#SBATCH --time={}-{:02d}:{:02d}:{:02d}\n", secs / 86400, (secs % 86400) / 3600,
                            (secs % 3600) / 60, secs % 60);
  }
  std::string out = fmt::format(
      "#!/bin/bash\n"
      "#SBATCH --job-name={}\n"
      "#SBATCH --nodes={}\n"
      "#SBATCH --ntasks-per-node=1\n"
      "#SBATCH --gpus-per-node={}\n"
      "#SBATCH --exclusive\n"
      "{}"
      "# generated by suanli {} for {} on {} x {}\n"
      "# layout: {}\n"
      "# predicted: {}\n"
      "{}"
      "{}"
      "set -euo pipefail\n"
      "export MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\n"
      "export MASTER_PORT=29500\n"
      "srun torchrun --nnodes=\"$SLURM_NNODES\" --nproc-per-node={} \\\n"
      "  --rdzv-id=\"$SLURM_JOB_ID\" --rdzv-backend=c10d --rdzv-endpoint=\"$MASTER_ADDR:$MASTER_PORT\" \\\n"
      "  pretrain_gpt.py",
      x.job_name, Nodes(c, x), ProcsPerNode(c, x), time_line, SUANLI_VERSION, CommentText(x.model->id), c.par.gpus(),
      x.gpu ? x.gpu->id : "gpu", LayoutLine(c), Prediction(c),
      c.offload_layers > 0
          ? fmt::format("# CPU activation offloading pins {} of host memory per node ({} per GPU): the nodes need it "
                        "free on top of the job's other host memory\n",
                        FormatBytes(PinnedHostBytesPerNode(c, x)),
                        FormatBytes(c.result.memory.host_offload_bytes))
          : std::string(),
      DataLine(x), ProcsPerNode(c, x));
  for (const auto& [k, v] : Args(c, x)) out += " \\\n    " + (v.empty() ? k : k + " " + ShellWord(v));
  return out + "\n";
}

std::string KubernetesPyTorchJob(const PlanCandidate& c, const LaunchContext& x) {
  const int nodes = Nodes(c, x);
  std::string args = "                - pretrain_gpt.py\n";
  for (const auto& [k, v] : Args(c, x)) {
    // Each a JSON string, which YAML reads as a double-quoted scalar with its escapes.
    args += fmt::format("                - {}\n", nlohmann::json(k).dump());
    // One list item per word: a list-valued flag's words are separate arguments (argparse nargs).
    for (const auto& word : SplitWords(v)) args += fmt::format("                - {}\n", nlohmann::json(word).dump());
  }
  // CPU activation offloading pins host memory for every GPU of the pod: request at least that much (a request,
  // not a limit: the framework and the data loader need host memory on top of it).
  std::string host_request;
  const double pinned = PinnedHostBytesPerNode(c, x);
  if (pinned > 0)
    host_request = fmt::format("                requests:\n                  memory: \"{}Gi\"\n",
                               static_cast<long long>(std::ceil(pinned / kGiB)));
  auto replica = [&](const char* role, int replicas) {
    return fmt::format(
        "    {}:\n"
        "      replicas: {}\n"
        "      restartPolicy: OnFailure\n"
        "      template:\n"
        "        spec:\n"
        "          containers:\n"
        "            - name: pytorch\n"
        "              image: {}\n"
        "              command:\n"
        "                - torchrun\n"
        "              args:\n"
        "{}"
        "              resources:\n"
        "                limits:\n"
        "                  nvidia.com/gpu: {}\n"
        "{}",
        role, replicas, x.image, args, ProcsPerNode(c, x), host_request);
  };
  std::string out = fmt::format(
      "# generated by suanli {}\n"
      "apiVersion: kubeflow.org/v1\n"
      "kind: PyTorchJob\n"
      "metadata:\n"
      "  name: {}\n"
      "  annotations:\n"
      "    suanli.io/layout: \"{}\"\n"
      "    suanli.io/predicted-step-time-s: \"{:.4g}\"\n"
      "    suanli.io/predicted-tokens-per-s: \"{:.6g}\"\n"
      "    suanli.io/predicted-mfu: \"{:.3f}\"\n"
      "spec:\n"
      "  nprocPerNode: \"{}\"\n"
      "  pytorchReplicaSpecs:\n",
      SUANLI_VERSION, x.job_name, LayoutLine(c), c.result.step_time_s, c.result.tokens_per_s, c.result.mfu,
      ProcsPerNode(c, x));
  out += replica("Master", 1);
  if (nodes > 1) out += replica("Worker", nodes - 1);
  return out;
}


namespace {

// The two comment lines every serving launch line starts with: what was estimated and what it predicted (and, with
// speculative decoding, a third: what was assumed, and whether the line carries it or leaves it to the user).
std::string ServeHeader(const ModelSpec& m, const GpuSpec& g, const std::string& w, const InferConfig& cfg,
                        const InferResult& r, bool spec_in_line = false) {
  const Parallelism& p = cfg.fit.par;
  const std::string spec =
      cfg.spec.tokens > 0
          ? fmt::format("# estimated with speculative decoding ({} tokens per round, acceptance length {:g}, draft: "
                        "{}): {}\n",
                        cfg.spec.tokens, cfg.spec.acceptance_length, CommentText(r.draft),
                        spec_in_line ? "the line's speculative options below"
                                     : "add the engine's speculative-decoding options for that draft")
          : std::string();
  return spec + fmt::format(
      "# suanli {} perf infer: {} on {} x {} (TP={} PP={}{}), weights {}, KV cache {}, batch {}, {} + {} tokens\n"
      "# predicted: {} {}, TPOT {}, {:.0f} output tokens/s per GPU\n",
      SUANLI_VERSION, CommentText(m.id), p.tp * p.pp, g.id, p.tp, p.pp,
      p.attention_dp > 1 ? fmt::format(", attention DP {}: the batch over the {} groups", p.attention_dp, p.attention_dp)
                         : "",
      w, cfg.fit.kv_bytes_per_elem == 1 ? "fp8" : "16-bit",
      ServingBatchWords(cfg, r), cfg.input_len, cfg.output_len, cfg.batch_max ? "prefill of the batch" : "TTFT",
      FormatSeconds(r.ttft_s), FormatSeconds(r.tpot_s), r.output_tokens_per_s_per_gpu);
}

// What drafts for speculative decoding, as far as a launch line needs to name it: a separate model, an EAGLE or
// EAGLE-3 head with its own checkpoint (--draft-repo; EAGLE-3 has its own vocabulary), or the target's MTP module
// (it ships in the target's checkpoint). kUnnamed: a draft head without a checkpoint, which no line can load.
enum class DraftKind { kNone, kModel, kEagle, kEagle3, kMtp, kUnnamed };
DraftKind DraftKindOf(const ModelSpec& m, const Speculation& s) {
  if (s.tokens <= 0) return DraftKind::kNone;
  if (s.draft_model) return s.draft_ref.empty() ? DraftKind::kUnnamed : DraftKind::kModel;
  if (!s.draft_ref.empty()) return s.draft_vocab > 0 ? DraftKind::kEagle3 : DraftKind::kEagle;
  if (m.mtp_layers > 0 && s.draft_vocab == 0) return DraftKind::kMtp;
  return DraftKind::kUnnamed;
}

std::string CommandLine(const std::string& head, const std::vector<Arg>& args) {
  std::string out = head;
  for (const auto& [flag, value] : args) {
    out += " \\\n  ";
    out += flag;
    if (!value.empty()) {
      out += ' ';
      out += ShellQuote(value);  // a serving engine's flags take one word each
    }
  }
  out += '\n';
  return out;
}

// What each engine does with each weight format of the estimate (docs/manual.md, perf infer --emit).
struct EngineFormats {
  const char* name;             // as --emit spells it
  const char* online_fp8;       // --quantization value that makes FP8 of a 16-bit checkpoint on load; nullptr: none
  const char* online_nf4;       // the same for bitsandbytes NF4
  const char* int8_checkpoint;  // the pre-quantised 8-bit weight-only checkpoint it runs; nullptr: none
  const char* nf4_checkpoint;   // the pre-quantised bitsandbytes checkpoint it runs; nullptr: none
};
constexpr EngineFormats kVllmFormats{"vllm", "fp8", "bitsandbytes",
                                     "an 8-bit checkpoint (GPTQ 8-bit or bitsandbytes 8-bit)", nullptr};
constexpr EngineFormats kTrtllmFormats{"trtllm", nullptr, nullptr, nullptr, nullptr};
constexpr EngineFormats kSglangFormats{"sglang", "fp8", nullptr, "an 8-bit GPTQ checkpoint",
                                       "a bitsandbytes 4-bit checkpoint"};

bool Is16Bit(const std::string& w) { return w == "bf16" || w == "fp16" || w == "fp32"; }

// The weights of the estimate as the engine loads them: nothing to add (16-bit, or a checkpoint stored in that
// format, whose config says so), a --quantization value (`quantize`), or an error that says what it needs. A
// checkpoint stored quantised is served as stored, so a 16-bit estimate of it is refused.
Status ResolveWeights(const EngineFormats& e, const ModelSpec& m, const std::string& w, std::string* quantize) {
  if (Is16Bit(w) && !m.stored_quantization.empty())
    return InvalidArgument(fmt::format(
        "--emit {}: {}'s checkpoint is stored quantised ({}); the engine serves it as stored: estimate with --weights {}",
        e.name, m.id, m.stored_quantization, m.stored_weights.empty() ? "in that format" : m.stored_weights));
  if (Is16Bit(w) || (!m.stored_weights.empty() && SameStoredFormat(m.stored_weights, w))) return Status::Ok();
  const bool nf4 = w == "nf4" || w == "nf4-nodq";
  if ((w == "fp8" && e.online_fp8) || (nf4 && e.online_nf4)) {
    *quantize = w == "fp8" ? e.online_fp8 : e.online_nf4;
    return Status::Ok();
  }
  const char* what = w == "fp8" || w == "nvfp4"
                         ? "an NVIDIA ModelOpt checkpoint (e.g. an nvidia/*-FP8 or *-FP4 repository)"
                     : w == "awq" || w == "gptq" || w == "int4" ? "an AWQ or GPTQ checkpoint (4-bit, group 128)"
                     : w == "int8"                              ? e.int8_checkpoint
                     : nf4                                      ? e.nf4_checkpoint
                                                                : nullptr;
  if (!what) {
    const char* kind = w.rfind("q", 0) == 0 ? "llama.cpp's GGUF"
                       : w == "int8"        ? "8-bit weight-only"
                       : nf4                ? "bitsandbytes NF4"
                                            : "gpt-fast's or torchao's 4-bit";
    return InvalidArgument(fmt::format(
        "--emit {}: --weights {} ({}) is not a format this engine serves; the nearest it does: {}", e.name, w, kind,
        w == "int8" ? "fp8, or awq/gptq (4-bit, group 128)" : "awq or gptq (4-bit, group 128)"));
  }
  return InvalidArgument(fmt::format(
      "--emit {}: the engine serves --weights {} from a pre-quantised checkpoint, {}; pass that checkpoint's "
      "config.json as --model (its quantization_config then says how it is stored)",
      e.name, w, what));
}

// --dtype for 16-bit weights in vLLM's and SGLang's words; a GPU without BF16 (Volta, Turing) runs them in FP16 at
// the same tensor rate, which the line then says.
std::string DtypeArg(const GpuSpec& g, const std::string& w, std::string* note) {
  if (w == "bf16" && !g.Supports(Precision::kBf16)) {
    *note = fmt::format("# {} has no BF16: the engine runs the checkpoint in FP16, at the same tensor rate\n", g.id);
    return "float16";
  }
  return w == "bf16" ? "bfloat16" : w == "fp16" ? "float16" : "float32";
}

// `engine` as --emit spells it, `product` as its makers do.
Status CheckVendor(const char* engine, const char* product, const GpuSpec& g,
                   std::initializer_list<std::string_view> vendors, const char* instead) {
  for (auto v : vendors)
    if (g.vendor == v) return Status::Ok();
  return InvalidArgument(
      fmt::format("--emit {}: {} does not run on {} ({}); {}", engine, product, g.id, g.vendor, instead));
}

// The engines keep the KV cache in the model's 16-bit type or in FP8.
Status CheckKvDtype(const char* engine, const InferConfig& cfg) {
  if (cfg.fit.kv_bytes_per_elem == 1 || cfg.fit.kv_bytes_per_elem == 2) return Status::Ok();
  return InvalidArgument(fmt::format("--emit {}: the engine keeps the KV cache in the model's 16-bit type or in fp8 "
                                     "(--kv-dtype)",
                                     engine));
}

// For a windowed model: which KV cache the estimate assumed, and that the engine's handling is to be checked.
std::string SlidingWindowNote(const ModelSpec& m, bool disable_sliding_window, std::string_view check) {
  if (m.sliding_window <= 0) return "";
  return fmt::format("# estimated with {} in the KV cache; {}\n",
                     disable_sliding_window ? "every token (--no-sliding-window)"
                     : m.chunked_window     ? "the current attention chunk's tokens"
                                            : "the sliding window's tokens",
                     check);
}

Result<std::string> VllmServeCommand(const ModelSpec& m, const GpuSpec& g, std::string_view model_ref,
                                     const InferConfig& cfg, const InferResult& r, bool disable_sliding_window) {
  const Parallelism& p = cfg.fit.par;
  const std::string w = cfg.fit.weights.id.empty() ? "bf16" : cfg.fit.weights.id;  // EstimateInference's default
  // Attention DP: vLLM's --data-parallel-size D ranks of TP / D GPUs each, every rank with its own scheduler (its
  // --max-num-seqs is per rank), the experts spread over all of them by --enable-expert-parallel.
  const int adp = std::max(1, p.attention_dp);
  std::vector<Arg> args = {{"--tensor-parallel-size", std::to_string(p.attention_tp())}};
  if (adp > 1) args.push_back({"--data-parallel-size", std::to_string(adp)});
  args.push_back({"--pipeline-parallel-size", std::to_string(p.pp)});
  args.push_back({"--max-model-len", std::to_string(cfg.input_len + cfg.output_len)});
  args.push_back({"--max-num-seqs", std::to_string((r.batch + adp - 1) / adp)});
  std::string quantize, notes;
  SUANLI_RETURN_IF_ERROR(ResolveWeights(kVllmFormats, m, w, &quantize));
  if (Is16Bit(w)) args.push_back({"--dtype", DtypeArg(g, w, &notes)});
  if (!quantize.empty()) args.push_back({"--quantization", quantize});
  SUANLI_RETURN_IF_ERROR(CheckKvDtype("vllm", cfg));
  if (cfg.fit.kv_bytes_per_elem == 1) args.push_back({"--kv-cache-dtype", "fp8"});
  if (disable_sliding_window && m.chunked_window)
    return InvalidArgument(
        "--emit vllm with --no-sliding-window: vLLM's --disable-sliding-window is for sliding windows; this model's "
        "chunked attention (Llama 4) has no flag suanli knows that keeps every token, so estimate it without "
        "--no-sliding-window");
  if (disable_sliding_window && m.sliding_window > 0) args.push_back({"--disable-sliding-window", ""});
  if (p.ep > 1 || adp > 1) {
    if (p.ep != p.tp)
      return InvalidArgument(fmt::format(
          "--emit vllm: vLLM's expert parallelism spans the whole tensor-parallel group{} (EP = TP = {}); --ep {} is "
          "TensorRT-LLM's and SGLang's partial form (--emit trtllm or sglang)",
          adp > 1 ? " and its data-parallel ranks" : "", p.tp, p.ep));
    args.push_back({"--enable-expert-parallel", ""});
  }
  // vLLM's --speculative-config for a chain (vLLM drafts no trees): method draft_model, eagle or eagle3 with the
  // draft's checkpoint, or mtp from the target's own.
  const DraftKind kind = DraftKindOf(m, cfg.spec);
  const bool spec_in_line = cfg.spec.topk == 1 && kind != DraftKind::kNone && kind != DraftKind::kUnnamed;
  if (spec_in_line) {
    nlohmann::json sc = {{"method", kind == DraftKind::kModel    ? "draft_model"
                                    : kind == DraftKind::kEagle  ? "eagle"
                                    : kind == DraftKind::kEagle3 ? "eagle3"
                                                                 : "mtp"}};
    if (kind != DraftKind::kMtp) sc["model"] = cfg.spec.draft_ref;
    sc["num_speculative_tokens"] = cfg.spec.tokens;
    args.push_back({"--speculative-config", sc.dump()});
  }
  std::string out = ServeHeader(m, g, w, cfg, r, spec_in_line) + notes;
  if (g.vendor == "intel")
    out += "# vLLM runs on Gaudi through its vllm-gaudi plugin (HPU); check its documentation for the formats above\n";
  if (cfg.batch_max)
    out += "# vLLM keeps 10% of each GPU free by default (--gpu-memory-utilization 0.9), so it may admit fewer sequences\n";
  if (cfg.decode_attention == DecodeAttention::kPerHead)
    out += "# estimated with a per-query-head decode kernel; vLLM's current attention backends read each KV head once\n";
  return out + CommandLine("vllm serve " + ShellQuote(std::string(model_ref)), args);
}

Result<std::string> TrtllmServeCommand(const ModelSpec& m, const GpuSpec& g, std::string_view model_ref,
                                       const InferConfig& cfg, const InferResult& r, bool disable_sliding_window) {
  const Parallelism& p = cfg.fit.par;
  const std::string w = cfg.fit.weights.id.empty() ? "bf16" : cfg.fit.weights.id;
  SUANLI_RETURN_IF_ERROR(CheckVendor("trtllm", "TensorRT-LLM", g, {"nvidia"}, "--emit vllm or sglang"));
  // Its supported hardware (nvidia.github.io/TensorRT-LLM, supported-hardware and support-matrix pages): Ampere,
  // Ada, Hopper and Blackwell.
  if (g.architecture == "volta" || g.architecture == "turing")
    return InvalidArgument(fmt::format("--emit trtllm: TensorRT-LLM supports Ampere and newer GPUs; {} is {}: --emit "
                                       "vllm or sglang",
                                       g.id, g.architecture));
  // TensorRT-LLM's PyTorch backend runs a checkpoint as stored: 16-bit, or pre-quantised by NVIDIA ModelOpt (FP8,
  // NVFP4) or with AWQ/GPTQ (W4A16). It does not quantise a 16-bit checkpoint on load.
  std::string quantize;
  SUANLI_RETURN_IF_ERROR(ResolveWeights(kTrtllmFormats, m, w, &quantize));
  SUANLI_RETURN_IF_ERROR(CheckKvDtype("trtllm", cfg));
  // --max_num_tokens: the memory model's prefill chunk (8,192 tokens, TensorRT-LLM's default budget per step).
  // Attention DP (enable_attention_dp in the options file): every rank of the TP group is its own attention group
  // with its own scheduler, so D = TP and --max_batch_size counts one rank's sequences.
  const int adp = std::max(1, p.attention_dp);
  if (adp > 1 && adp != p.tp)
    return InvalidArgument(fmt::format("--emit trtllm: TensorRT-LLM's attention DP (enable_attention_dp) runs "
                                       "attention on one GPU per group, --attention-dp = --tp = {}; --attention-dp {} "
                                       "is SGLang's form (--emit sglang)",
                                       p.tp, adp));
  std::vector<Arg> args = {{"--backend", "pytorch"},
                           {"--tp_size", std::to_string(p.tp)},
                           {"--pp_size", std::to_string(p.pp)}};
  if (p.ep > 1) args.push_back({"--ep_size", std::to_string(p.ep)});  // moe_ep_size; moe_tp_size = TP / EP
  args.push_back({"--max_batch_size", std::to_string((r.batch + adp - 1) / adp)});
  args.push_back({"--max_seq_len", std::to_string(cfg.input_len + cfg.output_len)});
  args.push_back({"--max_num_tokens", std::to_string(kPrefillChunkTokens)});
  // Speculative decoding as a chain in the LLM API options file: a draft model (decoding_type DraftTarget) or an
  // EAGLE-3 head (Eagle3; its PyTorch backend takes no EAGLE-1 checkpoints), max_draft_len tokens from
  // speculative_model_dir (the name every release accepts; later ones also speculative_model), or the target's MTP
  // module run K times (MTP, num_nextn_predict_layers). Both this and an FP8 KV cache go in the options file.
  const DraftKind kind = DraftKindOf(m, cfg.spec);
  const bool spec_in_line = cfg.spec.topk == 1 && (kind == DraftKind::kModel || kind == DraftKind::kEagle3 ||
                                                   kind == DraftKind::kMtp);
  std::string options;
  if (adp > 1) options += "enable_attention_dp: true\n";
  if (cfg.fit.kv_bytes_per_elem == 1) options += "kv_cache_config:\n  dtype: fp8\n";
  if (spec_in_line && kind == DraftKind::kMtp)
    options += fmt::format("speculative_config:\n  decoding_type: MTP\n  num_nextn_predict_layers: {}\n",
                           cfg.spec.tokens);
  else if (spec_in_line)
    options += fmt::format("speculative_config:\n  decoding_type: {}\n  max_draft_len: {}\n"
                           "  speculative_model_dir: {}\n",
                           kind == DraftKind::kModel ? "DraftTarget" : "Eagle3", cfg.spec.tokens,
                           nlohmann::json(cfg.spec.draft_ref).dump());  // quoted: YAML reads JSON
  std::string out = ServeHeader(m, g, w, cfg, r, spec_in_line);
  if (cfg.batch_max)
    out += "# TensorRT-LLM sizes its KV cache from the memory left after the weights "
           "(--kv_cache_free_gpu_memory_fraction, 0.9 by default), so it may admit fewer sequences\n";
  out += SlidingWindowNote(m, disable_sliding_window,
                           "check how your TensorRT-LLM version treats the model's sliding window");
  if (!options.empty()) {
    out += "cat > extra-llm-api-options.yml <<'EOF'\n" + options + "EOF\n";
    args.push_back({"--extra_llm_api_options", "extra-llm-api-options.yml"});
  }
  return out + CommandLine("trtllm-serve " + ShellQuote(std::string(model_ref)), args);
}

// SGLang (python/sglang/srt/server_args.py): --tp-size, --pp-size and --ep-size (EP inside the TP group, the MoE
// layers' TP being TP / EP, with the default --moe-a2a-backend none), --context-length, --max-running-requests,
// --chunked-prefill-size, --dtype, --quantization fp8 (online FP8 of a 16-bit checkpoint), --kv-cache-dtype
// fp8_e4m3 (the format its Hopper FA3 backend reads) and the --speculative-* options of a draft model.
Result<std::string> SglangServeCommand(const ModelSpec& m, const GpuSpec& g, std::string_view model_ref,
                                       const InferConfig& cfg, const InferResult& r, bool disable_sliding_window) {
  const Parallelism& p = cfg.fit.par;
  const std::string w = cfg.fit.weights.id.empty() ? "bf16" : cfg.fit.weights.id;
  SUANLI_RETURN_IF_ERROR(CheckVendor("sglang", "SGLang", g, {"nvidia", "amd"}, "--emit vllm"));
  std::string quantize, notes;
  SUANLI_RETURN_IF_ERROR(ResolveWeights(kSglangFormats, m, w, &quantize));
  SUANLI_RETURN_IF_ERROR(CheckKvDtype("sglang", cfg));
  std::vector<Arg> args = {{"--model-path", std::string(model_ref)}, {"--tp-size", std::to_string(p.tp)}};
  // Attention DP: --dp-size D with --enable-dp-attention, attention at TP / D inside the --tp-size GPUs.
  if (p.attention_dp > 1) {
    args.push_back({"--dp-size", std::to_string(p.attention_dp)});
    args.push_back({"--enable-dp-attention", ""});
  }
  if (p.pp > 1) args.push_back({"--pp-size", std::to_string(p.pp)});
  if (p.ep > 1) args.push_back({"--ep-size", std::to_string(p.ep)});
  args.push_back({"--context-length", std::to_string(cfg.input_len + cfg.output_len)});
  args.push_back({"--max-running-requests", std::to_string(r.batch)});
  // SGLang's default chunk grows with the GPU's memory (16,384 tokens from 160 GB): the memory model reserves 8,192.
  args.push_back({"--chunked-prefill-size", std::to_string(kPrefillChunkTokens)});
  if (Is16Bit(w)) args.push_back({"--dtype", DtypeArg(g, w, &notes)});
  if (!quantize.empty()) args.push_back({"--quantization", quantize});
  if (cfg.fit.kv_bytes_per_elem == 1) args.push_back({"--kv-cache-dtype", "fp8_e4m3"});
  // Speculative decoding, as a chain or a tree: a separate draft model (--speculative-algorithm STANDALONE), an EAGLE
  // or EAGLE-3 head (EAGLE, EAGLE3) from --speculative-draft-model-path, or the target's MTP module (NEXTN, from the
  // target's checkpoint); K draft passes (--speculative-num-steps), W candidates each (--speculative-eagle-topk),
  // N tokens verified (K + 1 for a chain).
  const DraftKind kind = DraftKindOf(m, cfg.spec);
  const bool spec_in_line = kind != DraftKind::kNone && kind != DraftKind::kUnnamed;
  if (spec_in_line) {
    args.push_back({"--speculative-algorithm", kind == DraftKind::kModel    ? "STANDALONE"
                                               : kind == DraftKind::kEagle  ? "EAGLE"
                                               : kind == DraftKind::kEagle3 ? "EAGLE3"
                                                                            : "NEXTN"});
    if (kind != DraftKind::kMtp) args.push_back({"--speculative-draft-model-path", cfg.spec.draft_ref});
    args.push_back({"--speculative-num-steps", std::to_string(cfg.spec.tokens)});
    args.push_back({"--speculative-eagle-topk", std::to_string(cfg.spec.topk)});
    args.push_back({"--speculative-num-draft-tokens",
                    std::to_string(cfg.spec.verify_tokens > 0 ? cfg.spec.verify_tokens : cfg.spec.tokens + 1)});
  }
  std::string out = ServeHeader(m, g, w, cfg, r, spec_in_line) + notes;
  if (cfg.batch_max)
    out += "# SGLang sizes its KV cache pool with --mem-fraction-static, which by default leaves several GB of each "
           "GPU for activations and CUDA graphs, so it may admit fewer sequences\n";
  if (p.attention_dp > 1)
    out += "# --max-running-requests is the whole server's sequences here; check whether your SGLang version applies "
           "it per DP rank under --enable-dp-attention\n";
  out += SlidingWindowNote(m, disable_sliding_window,
                           "SGLang honours sliding windows for some architectures only: check yours");
  if (cfg.decode_attention == DecodeAttention::kPerHead)
    out += "# estimated with a per-query-head decode kernel; SGLang's attention backends read each KV head once\n";
  return out + CommandLine("python -m sglang.launch_server", args);
}

}  // namespace

Result<ServeEngine> ParseServeEngine(std::string_view name) {
  const std::string n = ToLower(name);
  if (n == "vllm") return ServeEngine::kVllm;
  if (n == "trtllm") return ServeEngine::kTrtllm;
  if (n == "sglang") return ServeEngine::kSglang;
  const std::vector<std::string> engines = {"vllm", "trtllm", "sglang"};
  return InvalidArgument(fmt::format("--emit '{}': the serving launch lines written are vllm (vllm serve), trtllm "
                                     "(trtllm-serve) and sglang (sglang.launch_server){}",
                                     name, DidYouMean(n, engines)));
}

const char* ServeEngineName(ServeEngine e) {
  switch (e) {
    case ServeEngine::kVllm: return "vllm";
    case ServeEngine::kTrtllm: return "trtllm";
    case ServeEngine::kSglang: return "sglang";
  }
  return "?";
}

Result<std::string> ServeCommand(ServeEngine e, const ModelSpec& m, const GpuSpec& g, std::string_view model_ref,
                                 const InferConfig& cfg, const InferResult& r, bool disable_sliding_window) {
  switch (e) {
    case ServeEngine::kVllm: return VllmServeCommand(m, g, model_ref, cfg, r, disable_sliding_window);
    case ServeEngine::kTrtllm: return TrtllmServeCommand(m, g, model_ref, cfg, r, disable_sliding_window);
    case ServeEngine::kSglang: return SglangServeCommand(m, g, model_ref, cfg, r, disable_sliding_window);
  }
  return Internal("unknown serving engine");
}

}  // namespace suanli
