// Inference: prefill (time to first token) and decode (time per output token).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "suanli/perf.h"
#include "suanli/units.h"
#include "perf/internal.h"

namespace suanli {

namespace {

using perf_detail::PeakFor;

struct Pass {
  double time = 0;
  double flops = 0, bytes = 0;
  double compute_time = 0, memory_time = 0;  // GEMM time split by bound, for the verdict
  double expert_imbalance = 0;               // MoE: busiest rank's token-expert pairs / mean
  std::vector<OpCost> ops;
};

// The time of a pass's attention rows (ServingAttention's), per step: each row's time x its count.
double AttentionTime(const std::vector<OpCost>& ops) {
  double a = 0;
  for (const OpCost& o : ops)
    if (o.name == "attention") a += o.time_s * o.count;
  return a;
}

// One forward pass over `tokens` new tokens per sequence x `batch` sequences, attending to `ctx`
// keys, on one GPU of a TP group, through all layers held by one pipeline stage.
// `issue_rate`: thread-instructions per second, needed for per-query-head decode attention.
// `all_logits`: the output head runs on every new token (a speculative verification pass), not only on each
// sequence's last one.
Pass Forward(const ModelSpec& m, const Cluster& cl, const Efficiency& eff, const InferConfig& cfg, double batch,
             double new_tokens, double ctx, bool decode, double issue_rate, bool all_logits = false) {
  const GpuSpec& gpu = *cl.gpu;
  // Attention DP (methodology §9.7): attention, the dense MLPs, the shared experts and the head run on each GPU's
  // attention group of t = TP / D GPUs for the busiest group's ceil(batch / D) sequences (Ta tokens); the routed
  // experts see all T tokens of the replica. Without it D = 1, t = TP and Ta = T.
  const int t = cfg.fit.par.attention_tp();
  const int adp = std::max(1, cfg.fit.par.attention_dp);
  const double T = batch * new_tokens;
  const double batch_a = adp > 1 ? std::ceil(batch / adp) : batch;
  const double Ta = batch_a * new_tokens;
  const double h = double(m.hidden);
  // FP8 and NVFP4 quantise weights and activations and run the GEMMs at that precision's peak; every other
  // format computes in 16 bits (weight-only formats dequantise first).
  const bool low = cfg.compute == Precision::kFp8 || cfg.compute == Precision::kFp4;
  const Precision prec = low ? cfg.compute : Precision::kBf16;
  const double peak = PeakFor(gpu, prec);
  const double gemm_eff = perf_detail::GemmEfficiencyFor(eff, prec);
  const WeightFormat& wf = cfg.fit.weights;
  const double wbytes = prec == Precision::kFp8 ? 1.0 : wf.bits_per_weight / 8;  // bytes per weight as stored
  const double bw = gpu.memory_bandwidth_bytes_per_s.value * eff.memory;
  const ParamCounts pc = CountParams(m);
  Pass p;
  // Weight-only quantisation dequantises on the FP32 pipes once per weight per pass.
  double dq_ops = 0;
  if (!low && wf.bits_per_weight < 16) {
    if (wf.id == "int8") dq_ops = eff.dequant_ops_int8;
    else if (wf.id == "nf4" || wf.id == "nf4-nodq") dq_ops = eff.dequant_ops_nf4;
    else if (wf.id.rfind("q", 0) == 0) dq_ops = eff.dequant_ops_gguf;
    else dq_ops = eff.dequant_ops_int4;
  }
  const double fp32_peak = gpu.PeakFlops(Precision::kFp32).value_or(peak / 16);
  const int layers = static_cast<int>(std::ceil(double(m.layers) / cfg.fit.par.pp));
  const perf_detail::LayerShape sh = perf_detail::Shape(m);
  // GEMM inputs: 1 B in FP8; in NVFP4 the activations are quantised like the weights (4 bits and a scale per 16).
  const double act_bytes = prec == Precision::kFp8 ? 1.0 : prec == Precision::kFp4 ? wbytes : 2.0;
  auto add = [&](const char* name, const GemmTime& g, double layer_frac) {
    p.ops.push_back(OpCost{name, decode ? "decode" : "prefill", g.flops, g.bytes, g.time_s, layer_frac, g.bound});
    p.time += g.time_s * layer_frac;
    p.flops += g.flops * layer_frac;
    p.bytes += g.bytes * layer_frac;
    (g.bound == Bound::kCompute ? p.compute_time : p.memory_time) += g.time_s * layer_frac;
  };
  auto gemm = [&](const char* name, double M, double N, double K, double batch_n, double layer_frac) {
    add(name, EstimateGemm(M, N, K, batch_n, act_bytes, peak, gemm_eff, gpu, eff, wbytes), layer_frac);
  };
  gemm("qkv projection", Ta, sh.attn_proj_params / h / t, h, 1, 1);
  gemm("output projection", Ta, h, sh.out_proj_in / t, 1, 1);
  const double moe_frac = m.moe ? double(m.moe_layer_count()) / m.layers : 0.0;
  const double mats = m.gated_mlp ? 2.0 : 1.0;
  if (moe_frac < 1) {
    gemm("mlp up/gate", Ta, mats * double(m.ffn) / t, h, 1, 1 - moe_frac);
    gemm("mlp down", Ta, h, double(m.ffn) / t, 1, 1 - moe_frac);
  }
  // Routed experts on the busiest rank. With expert parallelism inside the TP group (EP x ETP = TP) each rank
  // holds E / EP whole-width / ETP experts; at EP 1 every rank holds all E experts at 1/TP width.
  const int ep = cfg.fit.par.ep, etp = cfg.fit.par.expert_tp();
  perf_detail::ExpertLoad load{};
  perf_detail::RoutedExpertsTime routed{};
  if (m.moe) {
    const auto& e = *m.moe;
    load = perf_detail::BusiestExpertRank(T, e.num_experts, e.experts_per_token, ep, cfg.moe_imbalance);
    p.expert_imbalance = load.imbalance;
    gemm("router", Ta, e.num_experts, h, 1, moe_frac);
    routed = perf_detail::RoutedExperts(load, T, h, double(e.expert_ffn), etp, m.gated_mlp, act_bytes, wbytes, peak,
                                        gemm_eff, gpu, eff);
    add("experts up/gate", routed.up, moe_frac);
    add("experts down", routed.down, moe_frac);
    // A fused MoE operator's own kernels around the GEMMs; indexed experts (gpt-fast) have none.
    if (cfg.moe_impl == MoeImpl::kFused) {
      p.ops.push_back(OpCost{"MoE routing, row expansion and gather", decode ? "decode" : "prefill", 0,
                             routed.permute_bytes, routed.permute_s, moe_frac,
                             routed.permute_s > 2 * eff.moe_serving_fixed_s ? Bound::kMemory : Bound::kLatency});
      p.time += routed.permute_s * moe_frac;
      p.bytes += routed.permute_bytes * moe_frac;
    }
    if (e.shared_ffn > 0) {
      gemm("shared expert up/gate", Ta, mats * double(e.shared_ffn) / t, h, 1, moe_frac);
      gemm("shared expert down", Ta, h, double(e.shared_ffn) / t, 1, moe_frac);
    }
    // Attention DP: each group's tokens go to the experts of all TP GPUs and come back summed, an all-gather of the
    // hidden states in the GEMMs' input format (TensorRT-LLM quantises before it) and a reduce-scatter of the 16-bit
    // outputs over the TP GPUs, NCCL's (nccl-tests' sizes: the gathered output, the scattered input).
    if (adp > 1) {
      const double gather_bytes = T * h * act_bytes, scatter_bytes = T * h * 2;
      const double time = GroupCollectiveTime(cl, eff, NcclOp::kAllGather, gather_bytes, cfg.fit.par.tp, 1) +
                          GroupCollectiveTime(cl, eff, NcclOp::kReduceScatter, scatter_bytes, cfg.fit.par.tp, 1);
      p.ops.push_back(OpCost{"attention-DP token all-gather + reduce-scatter", decode ? "decode" : "prefill", 0,
                             gather_bytes + scatter_bytes, time, moe_frac, Bound::kCommunication});
      p.time += time * moe_frac;
    }
  }
  // Weight-only quantisation: dequantisation on the FP32 pipes, once per weight read per pass (for MoE, the
  // experts this step's tokens touch on the busiest rank).
  if (dq_ops > 0) {
    double params_read = (pc.attention + pc.mlp_dense) / m.layers / t;
    if (m.moe) {
      const double per_expert = pc.moe_experts / std::max(1, m.moe_layer_count()) / m.moe->num_experts;
      params_read += per_expert / etp * moe_frac * load.touched;
    }
    const double dq_time = params_read * dq_ops / (fp32_peak * 0.8);
    p.ops.push_back(OpCost{"dequantise weights", decode ? "decode" : "prefill", params_read * dq_ops, 0, dq_time, 1,
                           Bound::kCompute});
    p.time += dq_time;
  }
  // Attention: reads the KV cache of each sequence (decode) or computes causal attention (prefill).
  {
    const perf_detail::ServingAttentionTime a = perf_detail::ServingAttention(
        m, t, cfg.fit.kv_bytes_per_elem, batch_a, new_tokens, ctx, decode,
        decode && cfg.decode_attention == DecodeAttention::kPerHead, issue_rate, gpu, eff);
    p.ops.push_back(OpCost{"attention", decode ? "decode" : "prefill", a.flops, a.bytes, a.time_s, 1, a.bound});
    p.time += a.time_s;
    (a.compute_s >= a.memory_s ? p.compute_time : p.memory_time) += std::max(a.compute_s, a.memory_s);
  }
  // Element-wise kernels: norms and the two residual adds per token and, for gated MLPs, the activation on this
  // GPU's shard of the hidden width: read gate and up, write the product, 6 B per element as in training
  // (docs/methodology.md §6.3, §9). TensorRT-LLM v0.9 runs SwiGLU as its own kernel after one fused up/gate GEMM
  // (perf-overview.md, "Known Issues"). A plain GELU is left to the GEMM's epilogue (cuBLASLt's GELU epilogue),
  // so it moves no bytes of its own. MoE layers count the k routed experts' width and the shared experts'.
  // Per token-width element on this GPU: the dense MLP's and shared experts' shard, the routed experts' rows
  // of the busiest rank.
  double act_elems = 0;
  if (m.gated_mlp) {
    act_elems = Ta * double(m.ffn) / t * (1 - moe_frac);
    if (m.moe)
      act_elems += (routed.activation_elements + Ta * double(m.moe->shared_ffn) / t) * moe_frac;
  }
  const double ew_bytes =
      Ta * (m.norms_per_layer * 4 * h + 12 * h) + perf_detail::kGatedActivationBytesPerElement * act_elems;
  const double ew_stream = ew_bytes / bw, ew_launch = 6 * eff.kernel_launch_s;
  const double ew_time = ew_stream + ew_launch;
  // Bound by whichever part is larger: streaming the bytes (a long prefill) or the kernels' fixed cost (decode).
  p.ops.push_back(OpCost{"norms, residuals, activation", decode ? "decode" : "prefill", 0, ew_bytes, ew_time, 1,
                         ew_stream >= ew_launch ? Bound::kMemory : Bound::kLatency});
  p.time += ew_time;
  // Tensor parallelism: two all-reduces per layer (one for a parallel attention + MLP block, whose sum is reduced
  // once), NCCL's or the engine's one-shot kernel for small messages.
  if (t > 1) {
    const ServingAllReduce one = ServingAllReduceTime(cl, eff, Ta * h * 2, t);
    const int n_ar = m.parallel_block ? 1 : 2;
    const double ar = n_ar * one.time_s;
    p.ops.push_back(OpCost{fmt::format("TP all-reduce (x{}, {})", n_ar, one.oneshot ? "one-shot" : "NCCL"),
                           decode ? "decode" : "prefill", 0, Ta * h * 2 * n_ar, ar, 1, Bound::kCommunication});
    p.time += ar;
  }
  // Each operator runs in its share of the layers (MoE and dense layers: layer_frac, set as its count above).
  for (auto& o : p.ops) o.count *= layers;
  p.time *= layers;
  p.compute_time *= layers;
  p.memory_time *= layers;
  // Output head for the last token of each sequence: vocab-parallel over TP, or whole on every rank.
  {
    const double head_params = (m.tie_embeddings ? pc.embedding : pc.lm_head) / (cfg.fit.replicated_embeddings ? 1 : t);
    const double flops = 2 * batch_a * (all_logits ? new_tokens : 1) * head_params;
    const bool quantized = wf.quantizes_embeddings || (cfg.fit.quantize_head && !m.tie_embeddings);
    const double bytes = head_params * (quantized ? wbytes : 2);
    // The head computes at the precision it is stored in: 16-bit unless quantised with the layers.
    const Precision head_prec = quantized ? prec : Precision::kBf16;
    const double tc = flops / (PeakFor(gpu, head_prec) * perf_detail::GemmEfficiencyFor(eff, head_prec));
    const double tm = bytes / bw;
    // A weight-only quantised head is dequantised like the layers' weights (once per weight per pass).
    const double dq = quantized && dq_ops > 0 ? head_params * dq_ops / (fp32_peak * 0.8) : 0.0;
    const double time = std::max(tc, tm) + dq + 2 * eff.kernel_launch_s;
    p.ops.push_back(OpCost{"output head", decode ? "decode" : "prefill", flops, bytes, time, 1,
                           tc >= tm ? Bound::kCompute : Bound::kMemory});
    p.time += time;
  }
  // Pipeline stages run one after another for one batch: the other stages' time is the same again.
  if (cfg.fit.par.pp > 1) {
    const double stage = p.time;
    p.time = stage * cfg.fit.par.pp + (cfg.fit.par.pp - 1) * P2PTime(Ta * h * 2, cl.inter_bw_per_gpu, cl.inter_latency_s);
  }
  return p;
}

// The model that drafts for speculative decoding: the given draft model, or `draft_layers` layers of the target's own
// shape (EAGLE's and MTP's draft layer feeds the target's output head; for an MoE target the layer is an MoE layer,
// as DeepSeek-V3's MTP module is).
ModelSpec DraftSpec(const ModelSpec& m, const InferConfig& cfg) {
  if (cfg.spec.draft_model) return *cfg.spec.draft_model;
  ModelSpec d = m;
  d.id = fmt::format("{} draft layer{}", m.id, cfg.spec.draft_layers == 1 ? "" : "s");
  d.layers = cfg.spec.draft_layers;
  if (cfg.spec.draft_vocab > 0) {
    d.vocab = cfg.spec.draft_vocab;
    d.tie_embeddings = false;
  }
  d.sliding_window_layers = std::min(d.sliding_window_layers, d.layers);
  d.mtp_layers = 0;
  if (d.moe) {
    d.moe->first_dense_layers = 0;
    d.moe->layer_step = 1;
  }
  return d;
}

// The draft's weights and KV cache per GPU for `fit`'s batch and context. A separate draft model holds all its
// weights; a draft head holds its layers' (in the weights' format) and its own 16-bit output head where it has its
// own vocabulary, and shares the target's embedding and head otherwise.
Result<double> DraftBytesPerGpu(const ModelSpec& d, const InferConfig& cfg, const FitRequest& fit) {
  if (cfg.spec.draft_model) {
    FitRequest f = fit;
    f.explain = false;
    SUANLI_ASSIGN_OR_RETURN(FitResult e, EstimateMemory(d, f));
    return e.breakdown.weights + e.breakdown.kv_cache;
  }
  const ParamCounts pc = CountParams(d);
  // Under attention DP (methodology §9.7) the head's routed experts split over all TP GPUs, the rest of its layers
  // over the attention group's TP / D, and each GPU holds the KV cache of its group's ceil(batch / D) sequences.
  const int t = fit.par.tp, at = fit.par.attention_tp(), adp = std::max(1, fit.par.attention_dp);
  const double bytes = fit.weights.bits_per_weight / 8;
  const double layer_params = pc.total - pc.non_layer_total;
  const double layers = (layer_params - pc.moe_experts) * bytes / at + pc.moe_experts * bytes / t;
  // Its own head is split over TP like the target's, or whole on every rank (FitRequest::replicated_embeddings).
  const double head_split = fit.replicated_embeddings ? 1.0 : double(at);
  const double head = cfg.spec.draft_vocab > 0 ? double(cfg.spec.draft_vocab) * double(d.hidden) * 2 / head_split : 0.0;
  return layers + head + KvCacheBytes(d, fit.kv_bytes_per_elem, (fit.batch + adp - 1) / adp, fit.seq, at);
}

}  // namespace

Status CheckSpeculation(const ModelSpec& m, const InferConfig& cfg) {
  if (cfg.spec.tokens == 0) {
    if (cfg.spec.acceptance_length != 0 || cfg.spec.draft_model || cfg.spec.topk != 1 || cfg.spec.verify_tokens != 0)
      return InvalidArgument("--acceptance-length, --draft-model, --speculative-topk and --verify-tokens describe "
                             "speculative decoding: give --speculative-tokens K (the tokens drafted per round) too");
    return Status::Ok();
  }
  if (cfg.spec.tokens < 1 || cfg.spec.tokens > 64)
    return InvalidArgument(fmt::format("--speculative-tokens {} is outside 1..64 (tokens drafted per round)",
                                       cfg.spec.tokens));
  const double tau = cfg.spec.acceptance_length;
  if (tau == 0)
    return InvalidArgument(fmt::format(
        "--speculative-tokens {} needs --acceptance-length: the mean tokens a round emits per sequence, 1 to {} (the "
        "accepted drafts plus the target's own; engines report it as the mean acceptance length)",
        cfg.spec.tokens, cfg.spec.tokens + 1));
  if (!(tau >= 1 && tau <= cfg.spec.tokens + 1))
    return InvalidArgument(fmt::format(
        "--acceptance-length {:g} must be between 1 and {} (tokens a round emits per sequence: the accepted drafts of "
        "--speculative-tokens {} plus the target's own; engines report it as the mean acceptance length)",
        tau, cfg.spec.tokens + 1, cfg.spec.tokens));
  if (cfg.spec.topk < 1 || cfg.spec.topk > 64)
    return InvalidArgument(fmt::format("--speculative-topk {} is outside 1..64 (draft candidates per sequence and "
                                       "pass)", cfg.spec.topk));
  const int max_verify = 1 + cfg.spec.tokens * cfg.spec.topk;
  if (cfg.spec.verify_tokens != 0 && (cfg.spec.verify_tokens < 2 || cfg.spec.verify_tokens > max_verify))
    return InvalidArgument(fmt::format(
        "--verify-tokens {} is outside 2..{} (tokens per sequence the target verifies in a round: at most the root "
        "and --speculative-tokens {} x --speculative-topk {} drafted candidates)",
        cfg.spec.verify_tokens, max_verify, cfg.spec.tokens, cfg.spec.topk));
  if (cfg.spec.draft_vocab < 0 || cfg.spec.draft_vocab > m.vocab)
    return InvalidArgument(fmt::format("--draft-vocab {} is outside 1..{} ({}'s vocabulary)", cfg.spec.draft_vocab,
                                       m.vocab, m.id));
  if (cfg.spec.draft_model && (cfg.spec.draft_vocab > 0 || cfg.spec.draft_layers != 1))
    return InvalidArgument("--draft-layers and --draft-vocab describe a draft head (EAGLE, MTP); a --draft-model "
                           "brings its own layers and vocabulary");
  if (cfg.spec.draft_layers < 1 || cfg.spec.draft_layers > m.layers)
    return InvalidArgument(fmt::format("--draft-layers {} is outside 1..{} (draft layers of {}'s shape)",
                                       cfg.spec.draft_layers, m.layers, m.id));
  if (cfg.fit.par.pp > 1)
    return InvalidArgument(fmt::format("speculative decoding with pipeline parallelism (PP={}) is not modelled",
                                       cfg.fit.par.pp));
  if (cfg.decode_attention == DecodeAttention::kPerHead)
    return InvalidArgument("speculative decoding with --decode-attention per-head is not modelled: its kernel "
                           "decodes one token per sequence");
  if (cfg.fit.par.attention_dp > 1 && cfg.spec.draft_model)
    return InvalidArgument("a separate --draft-model with --attention-dp is not modelled (its layout over the attention "
                           "groups is not); a draft head (MTP, EAGLE) runs in the target's layout");
  if (cfg.spec.draft_model) {
    const ModelSpec& d = *cfg.spec.draft_model;
    if (d.vocab != m.vocab)
      return InvalidArgument(fmt::format(
          "--draft-model {}: its vocabulary ({} tokens) is not {}'s ({}); a draft model shares the target's tokenizer",
          d.id, d.vocab, m.id, m.vocab));
    const int t = cfg.fit.par.tp;
    if (d.heads % t != 0 || d.kv_heads % t != 0)
      return InvalidArgument(fmt::format(
          "--draft-model {} runs at the target's TP {}, which must divide its {} query and {} KV heads",
          d.id, t, d.heads, d.kv_heads));
  }
  return Status::Ok();
}

std::string ServingBatchWords(const InferConfig& cfg, const InferResult& r) {
  if (!cfg.batch_max) return std::to_string(r.batch);
  return fmt::format("{} (the most that fit{})", r.batch,
                     r.batch_limit == "cap" ? fmt::format(", capped at --max-batch {}", cfg.batch_cap) : "");
}

namespace {
// docs/methodology.md §9.5. A pass takes at least the longer of the weights it reads at the datasheet bandwidth and
// its GEMM FLOPs at the datasheet peak of its precision. It reads every weight it needs at least once: the memory
// model's weights per GPU (`weights_per_gpu`) without the input embedding (looked up, not read; at 16 bits, the most
// it could hold, unless tied to the head, which reads it whole), and for an MoE without the experts all of the pass's
// routed tokens miss under uniform routing (a given expert is missed by n tokens with probability (1 - k/E)^n: n = B
// for a decode step, B x S for a prefill). Its FLOPs: 2 per layer matmul weight per token, the output head on one
// token per sequence.
ServingLimit BoundFromWeights(const ModelSpec& m, const GpuSpec& gpu, const InferConfig& cfg, double weights_per_gpu) {
  ServingLimit out;
  const double bw = gpu.memory_bandwidth_bytes_per_s.value;
  // Not derived for attention DP, whose GPUs read and compute different shares of the layers.
  if (cfg.spec.tokens > 0 || cfg.fit.par.pp > 1 || cfg.fit.par.attention_dp > 1 || bw <= 0) return out;
  const ParamCounts pc = CountParams(m);
  const double tp = double(cfg.fit.par.tp);
  const double embedding_bytes =
      m.tie_embeddings ? 0.0 : pc.embedding * 2 / (cfg.fit.replicated_embeddings ? 1.0 : tp);
  const double batch = double(cfg.fit.batch);
  const auto weights_read = [&](double routed) {
    double w = weights_per_gpu - embedding_bytes;
    if (m.moe && pc.total > 0) {
      const double k = m.moe->experts_per_token, e = m.moe->num_experts;
      w -= weights_per_gpu * pc.moe_experts / pc.total * std::pow(1 - k / e, routed);
    }
    return w;
  };
  // The GEMMs' precision as Forward runs them: FP8 and NVFP4 (given, or implied by the weights) at their peak,
  // everything else at the 16-bit one.
  Precision prec = cfg.compute;
  if (prec != Precision::kFp8 && prec != Precision::kFp4) prec = ServingComputePrecision(cfg.fit.weights);
  const double peak = PeakFor(gpu, prec);
  const double head = m.tie_embeddings ? pc.embedding : pc.lm_head;
  const double per_token = std::max(0.0, MatmulParamsPerToken(m) - head);  // the layers' matmul weights
  const auto least = [&](double bytes, double flops) {
    return std::max(bytes > 0 ? bytes / bw : 0.0, peak > 0 ? flops / peak : 0.0);
  };
  // A decode step: one token per sequence through the layers and the head.
  out.decode_step_s = least(weights_read(batch), 2 * batch * (per_token + head) / tp);
  if (out.decode_step_s > 0) out.decode_tokens_per_s = batch / out.decode_step_s;
  // A prefill: every prompt token through the layers, the head on each sequence's last token.
  out.ttft_s = least(weights_read(batch * double(cfg.input_len)),
                     2 * (batch * double(cfg.input_len) * per_token + batch * head) / tp);
  return out;
}
}  // namespace

Result<ServingLimit> ServingBound(const ModelSpec& m, const GpuSpec& gpu, const InferConfig& cfg) {
  FitRequest req = cfg.fit;
  req.mode = Mode::kInfer;
  req.seq = cfg.input_len + cfg.output_len;
  SUANLI_ASSIGN_OR_RETURN(FitResult mem, EstimateMemory(m, req));
  return BoundFromWeights(m, gpu, cfg, mem.breakdown.weights);
}

Result<InferResult> EstimateInference(const ModelSpec& m, const Cluster& cl, const InferConfig& cfg_in,
                                      const Efficiency& eff) {
  if (!cl.gpu) return InvalidArgument("no GPU given");
  InferConfig cfg = cfg_in;
  if (cfg.fit.weights.id.empty()) cfg.fit.weights = *ParseWeightFormat("bf16");
  cfg.fit.mode = Mode::kInfer;
  if (cfg.input_len < 1 || cfg.output_len < 1 || cfg.input_len > (int64_t(1) << 24) || cfg.output_len > (int64_t(1) << 24))
    return InvalidArgument("--input-len and --output-len must be between 1 and 16M tokens");
  if (cfg.input_len + cfg.output_len > (int64_t(1) << 24))
    return InvalidArgument(fmt::format("--input-len + --output-len is {} tokens of context; at most {} (16M)",
                                       cfg.input_len + cfg.output_len, int64_t(1) << 24));
  cfg.fit.seq = cfg.input_len + cfg.output_len;
  // One serving replica of TP x PP GPUs: expert parallelism runs inside its tensor-parallel group.
  auto& par = cfg.fit.par;
  if (par.etp < 0)
    return InvalidArgument(fmt::format("--etp must be at least 1 (omit it for ETP = TP / EP), got {}", par.etp));
  if (par.ep > 1 && m.moe) {
    par.etp = ExpertTpFor(par, Mode::kInfer);
    if (par.ep * par.etp != par.tp || par.dp * par.cp != 1) {
      std::string valid;
      for (int e = 1; e <= par.tp; ++e)
        if (par.tp % e == 0 && m.moe->num_experts % e == 0) valid += (valid.empty() ? "" : ", ") + std::to_string(e);
      return InvalidArgument(fmt::format(
          "--ep {} --etp {} with --tp {}: inference models one replica whose expert parallelism splits the "
          "tensor-parallel group, EP x ETP = TP (TensorRT-LLM's moe_ep_size x moe_tp_size = tp_size); valid EP "
          "for TP {} and {} experts: {} (expert parallelism across data-parallel attention replicas is not modelled)",
          par.ep, par.etp, par.tp, par.tp, m.moe->num_experts, valid));
    }
  }
  if (!(cfg.moe_imbalance >= 1.0 && cfg.moe_imbalance <= 64.0))
    return InvalidArgument(fmt::format(
        "--moe-imbalance {} is outside 1..64 (the busiest GPU's token-expert pairs / the mean; 1 = uniform routing)",
        cfg.moe_imbalance));
  if (cfg.moe_impl != MoeImpl::kFused && !m.moe)
    return InvalidArgument(fmt::format("--moe-impl {} needs an MoE model; {} has no experts",
                                       MoeImplName(cfg.moe_impl), m.id));
  if (cfg.moe_imbalance != 1.0 && !(m.moe && par.ep > 1))
    return InvalidArgument(fmt::format(
        "--moe-imbalance {} needs expert parallelism (--ep > 1 on a MoE model; {} has {}): without it every GPU "
        "computes its shard of every expert, and how tokens spread over the experts does not change the step",
        cfg.moe_imbalance, m.id, m.moe ? "EP 1" : "no experts"));
  for (const auto& [flag, v] : {std::pair{"--request-overhead-ms", cfg.request_overhead_s},
                                std::pair{"--step-overhead-ms", cfg.step_overhead_s}})
    if (!(v >= 0 && v <= 10.0))  // also false for NaN
      return InvalidArgument(fmt::format("{} {:g} is outside 0..10000 ms (host time per request / per forward pass)",
                                         flag, v * 1e3));
  // FP8 and NVFP4 weights are served with activations in the same format (neither is a weight-only format here), so
  // a configuration that names the weights alone computes in them.
  if (cfg.compute == Precision::kBf16 || cfg.compute == Precision::kFp16) {
    const Precision from_weights = ServingComputePrecision(cfg.fit.weights);
    if (from_weights != Precision::kBf16) cfg.compute = from_weights;
  }
  if (cfg.compute == Precision::kFp8) {
    if (!cl.gpu->Supports(Precision::kFp8))
      return InvalidArgument(fmt::format("{} has no FP8 support (FP8 needs Ada, Hopper or newer)", cl.gpu->id));
    cfg.fit.weights = *ParseWeightFormat("fp8");
  } else if (cfg.compute == Precision::kFp4) {
    if (!cl.gpu->Supports(Precision::kFp4))
      return InvalidArgument(fmt::format(
          "{} has no FP4 tensor cores: NVFP4 weights and activations need Blackwell (b200, gb200, rtx-5090); on "
          "this GPU use {}a weight-only 4-bit format (int4, awq, gptq)",
          cl.gpu->id, cl.gpu->Supports(Precision::kFp8) ? "fp8 or " : ""));
    cfg.fit.weights = *ParseWeightFormat("nvfp4");
  } else if (cfg.compute != Precision::kBf16 && cfg.compute != Precision::kFp16) {
    return InvalidArgument("inference computes in bf16, fp16, fp8 or fp4 (NVFP4)");
  }
  // Attention and the unquantised layers run at the 16-bit rate whatever the weights: a GPU file without a 16-bit peak
  // (FP16 or BF16) cannot be priced, where it would otherwise give an infinite time.
  if (perf_detail::PeakFor(*cl.gpu, Precision::kBf16) <= 0)
    return InvalidArgument(fmt::format("{} has no 16-bit peak in its GPU file ([dense] bf16 or fp16): the serving "
                                       "estimate prices attention and 16-bit GEMMs at it",
                                       cl.gpu->id));
  if (cfg.batch_cap < 0)
    return InvalidArgument(fmt::format("--max-batch (the engine's batch limit) must be positive, got {}", cfg.batch_cap));
  if (cfg.batch_cap > 0 && !cfg.batch_max)
    return InvalidArgument("--max-batch caps --batch max (the largest batch that fits); with a fixed batch leave it out");
  SUANLI_RETURN_IF_ERROR(CheckSpeculation(m, cfg));
  const bool spec = cfg.spec.tokens > 0;
  const ModelSpec draft = spec ? DraftSpec(m, cfg) : ModelSpec{};
  if (cfg.batch_max) cfg.fit.batch = 1;  // the memory model's first estimate; the batch is chosen below
  auto mem = EstimateMemory(m, cfg.fit);
  if (!mem.ok()) return mem.status();
  InferResult r;
  r.per_gpu_peak_bytes = mem->per_gpu_peak_bytes;
  r.fits = CheckFit(*mem, *cl.gpu).fits;
  r.max_batch = MaxBatchThatFits(m, cfg.fit, *cl.gpu);
  if (spec) {
    // The draft's weights and KV cache share the GPUs: the largest batch that fits holds both.
    int64_t lo = 0, hi = r.max_batch;
    while (lo < hi) {
      const int64_t b = lo + (hi - lo + 1) / 2;
      FitRequest f = cfg.fit;
      f.batch = b;
      f.explain = false;
      auto target = EstimateMemory(m, f);
      auto extra = DraftBytesPerGpu(draft, cfg, f);
      if (!target.ok() || !extra.ok()) return target.ok() ? extra.status() : target.status();
      if (target->per_gpu_peak_bytes + *extra <= cl.gpu->memory_bytes.value) lo = b;
      else hi = b - 1;
    }
    r.max_batch = lo;
  }
  if (cfg.batch_max) {
    // The most sequences that can be in flight: every one with its KV cache for the whole context (input +
    // output), the reservation of a scheduler that never evicts (TensorRT-LLM's GUARANTEED_NO_EVICT), capped
    // by the engine's batch limit where one is given.
    if (r.max_batch < 1)
      return InvalidArgument(fmt::format(
          "--batch max: {} does not fit on {} x {} even at batch 1 (peak {} per GPU of {}); more GPUs (--tp, --pp), "
          "a smaller weight format or a shorter context would", m.id, cfg.fit.par.tp * cfg.fit.par.pp, cl.gpu->id,
          FormatBytes(mem->per_gpu_peak_bytes), FormatBytes(cl.gpu->memory_bytes.value)));
    cfg.fit.batch = cfg.batch_cap > 0 ? std::min(r.max_batch, cfg.batch_cap) : r.max_batch;
    r.batch_limit = cfg.batch_cap > 0 && cfg.batch_cap < r.max_batch ? "cap" : "memory";
    mem = EstimateMemory(m, cfg.fit);
    if (!mem.ok()) return mem.status();
    r.per_gpu_peak_bytes = mem->per_gpu_peak_bytes;
    r.fits = CheckFit(*mem, *cl.gpu).fits;
  }
  r.batch = cfg.fit.batch;
  if (spec) {
    SUANLI_ASSIGN_OR_RETURN(r.draft_bytes_per_gpu, DraftBytesPerGpu(draft, cfg, cfg.fit));
    r.per_gpu_peak_bytes += r.draft_bytes_per_gpu;
    r.fits = r.fits && r.per_gpu_peak_bytes <= cl.gpu->memory_bytes.value;
  }
  double issue_rate = 0;
  if (cfg.decode_attention == DecodeAttention::kPerHead) {
    auto rate = InstructionIssueRate(*cl.gpu);
    if (!rate.ok())
      return InvalidArgument(fmt::format("--decode-attention per-head: {}", rate.status().message()));
    issue_rate = *rate;
  }
  const double batch = double(cfg.fit.batch);
  Pass prefill = Forward(m, cl, eff, cfg, batch, double(cfg.input_len), double(cfg.input_len), false, issue_rate);
  const double mid_ctx = double(cfg.input_len) + double(cfg.output_len) / 2;
  Pass decode = Forward(m, cl, eff, cfg, batch, 1, mid_ctx, true, issue_rate);
  // The user's serving-engine host overheads (methodology §9.2): the prefill is one forward pass, and the request's
  // own cost is paid before its first token; every decode step is one more pass.
  const double prefill_host = cfg.request_overhead_s + cfg.step_overhead_s;
  if (prefill_host > 0)
    prefill.ops.push_back(OpCost{"host overhead (given)", "prefill", 0, 0, prefill_host, 1, Bound::kLatency});
  if (cfg.step_overhead_s > 0)
    decode.ops.push_back(OpCost{"host overhead (given)", "decode", 0, 0, cfg.step_overhead_s, 1, Bound::kLatency});
  r.ttft_s = prefill.time + prefill_host;
  r.tpot_s = decode.time + cfg.step_overhead_s;
  const double plain_tpot_s = r.tpot_s;
  if (spec) {
    // One round: K draft passes, then the target's pass over the K drafted tokens and the one before them, with logits
    // for every one (methodology §9.4); in a draft tree every draft pass after the first expands spec.topk candidates
    // per sequence and the target verifies spec.verify_tokens under a tree mask. Each pass pays the engine's step
    // overhead. The draft also prefills the prompt before the first token.
    const double k = cfg.spec.tokens;
    const double width = cfg.spec.topk;
    const double verify_tokens = cfg.spec.verify_tokens > 0 ? cfg.spec.verify_tokens : k + 1;
    Pass draft_prefill = Forward(draft, cl, eff, cfg, batch, double(cfg.input_len), double(cfg.input_len), false, 0);
    Pass draft_step = Forward(draft, cl, eff, cfg, batch, 1, mid_ctx, true, 0);
    Pass draft_wide = width > 1 ? Forward(draft, cl, eff, cfg, batch, width, mid_ctx, true, 0, true) : draft_step;
    Pass verify = Forward(m, cl, eff, cfg, batch, verify_tokens, mid_ctx, true, 0, true);
    r.spec_draft_step_s = (draft_step.time + (k - 1) * draft_wide.time) / k + cfg.step_overhead_s;
    r.spec_verify_s = verify.time + cfg.step_overhead_s;
    r.spec_round_s = k * r.spec_draft_step_s + r.spec_verify_s;
    r.tpot_s = r.spec_round_s / cfg.spec.acceptance_length;
    r.ttft_s += draft_prefill.time;
    for (auto& o : draft_prefill.ops) o.name = "draft: " + o.name;
    prefill.ops.insert(prefill.ops.end(), draft_prefill.ops.begin(), draft_prefill.ops.end());
    decode.ops.clear();
    for (auto o : draft_step.ops) {
      o.name = "draft: " + o.name;
      o.count *= width > 1 ? 1 : k;
      decode.ops.push_back(std::move(o));
    }
    if (width > 1)
      for (auto o : draft_wide.ops) {
        o.name = fmt::format("draft ({} candidates): {}", cfg.spec.topk, o.name);
        o.count *= k - 1;
        decode.ops.push_back(std::move(o));
      }
    for (auto o : verify.ops) {
      o.name = "verify: " + o.name;
      decode.ops.push_back(std::move(o));
    }
    if (cfg.step_overhead_s > 0)
      decode.ops.push_back(OpCost{"host overhead (given)", "decode", 0, 0, cfg.step_overhead_s, k + 1, Bound::kLatency});
    decode.compute_time = verify.compute_time + draft_step.compute_time + (k - 1) * draft_wide.compute_time;
    decode.memory_time = verify.memory_time + draft_step.memory_time + (k - 1) * draft_wide.memory_time;
    r.draft = cfg.spec.draft_model ? cfg.spec.draft_model->id
                              : fmt::format("{} decoder layer{} of {}'s shape and {}", cfg.spec.draft_layers,
                                            cfg.spec.draft_layers == 1 ? "" : "s", m.id,
                                            cfg.spec.draft_vocab > 0
                                                ? fmt::format("its own {}-token output head", cfg.spec.draft_vocab)
                                                : std::string("the target's output head"));
  }
  r.decode_tokens_per_s = batch / r.tpot_s;
  // The prefill emits the first output token; output_len - 1 decode steps follow (TPOT = (e2e - TTFT) / (output
  // tokens - 1), as vLLM's benchmarks and AIPerf/LLMeter define it; methodology §9).
  r.e2e_latency_s = r.ttft_s + double(cfg.output_len - 1) * r.tpot_s;
  const int gpus = cfg.fit.par.tp * cfg.fit.par.pp;
  r.output_tokens_per_s_per_gpu = batch * double(cfg.output_len) / r.e2e_latency_s / gpus;
  r.prefill_expert_imbalance = prefill.expert_imbalance;
  r.decode_expert_imbalance = decode.expert_imbalance;
  r.prefill_bound = prefill.compute_time >= prefill.memory_time ? "compute" : "memory";
  r.decode_bound = decode.compute_time >= decode.memory_time ? "compute" : "memory";
  // Validation bands (docs/validation.md §3): MoE serving has its own evidence in a note instead; the decode
  // group is batch-1 decode, the throughput group static batches of 16 and more.
  // With batch_max the run stands for continuous batching at full load: its band is that group's, and the TTFT
  // (the whole batch's prefill) has none.
  if (!m.moe) {
    if (cfg.batch_max) {
      r.throughput_error = evidence::kMaxThroughputError;
    } else {
      r.ttft_error = evidence::kTtftDenseError;
      if (cfg.fit.batch > 1) r.throughput_error = evidence::kThroughputDenseError;
    }
  }
  if (cfg.fit.batch == 1 && cfg.fit.par.ep == 1) r.decode_error = evidence::kDecodeError;  // no EP runs in it
  if (spec) {  // the decode and throughput groups ran without speculation
    r.decode_error = {};
    r.throughput_error = {};
  }
  const ServingLimit limit = BoundFromWeights(m, *cl.gpu, cfg, mem->breakdown.weights);
  r.ttft_bound_s = limit.ttft_s;
  r.decode_step_bound_s = limit.decode_step_s;
  r.decode_tokens_per_s_bound = limit.decode_tokens_per_s;
  r.prefill_ops = prefill.ops;
  r.decode_ops = decode.ops;
  if (!r.fits) r.notes.push_back(fmt::format("does not fit: peak {} per GPU", FormatBytes(r.per_gpu_peak_bytes)));
  r.notes.push_back(spec ? "TTFT = prefill of the whole batch (target and draft); TPOT = one speculation round at "
                           "context input + output/2, divided by the acceptance length"
                         : "TTFT = prefill of the whole batch; TPOT = one decode step at context input + output/2");
  if (spec) {
    r.notes.push_back(fmt::format(
        "speculative decoding: a round is {} draft pass{} of {}{} ({} each on average) and one verification pass over {} "
        "tokens per sequence ({}), {} in all; at {:g} tokens per round that is {} per token, against {} without "
        "speculation ({:.2f}x); the acceptance length is the user's, and the draft's weights and KV cache take {} per "
        "GPU",
        cfg.spec.tokens, cfg.spec.tokens == 1 ? "" : "es", r.draft,
        cfg.spec.topk > 1 ? fmt::format(", {} candidates per sequence after the first", cfg.spec.topk) : "",
        FormatSeconds(r.spec_draft_step_s),
        cfg.spec.verify_tokens > 0 ? cfg.spec.verify_tokens : cfg.spec.tokens + 1, FormatSeconds(r.spec_verify_s),
        FormatSeconds(r.spec_round_s),
        cfg.spec.acceptance_length, FormatSeconds(r.tpot_s), FormatSeconds(plain_tpot_s), plain_tpot_s / r.tpot_s,
        FormatBytes(r.draft_bytes_per_gpu)));
    const auto& t = evidence::kSpeculativeMtpTrtllm;
    const auto& v = evidence::kSpeculativeEagle;
    r.notes.push_back(fmt::format(
        "uncertain: given the measured acceptance length, the speed-up over no speculation was {:+.1f}% to {:+.1f}% "
        "off TensorRT-LLM's MTP on DeepSeek-R1 ({} runs) and {:+.0f}% to {:+.0f}% off EAGLE in vLLM and SGLang ({} runs), "
        "whose draft passes cost 0.7-1.0 ms each, more than their weights explain (docs/validation.md section 5): an "
        "engine's per-pass cost (--step-overhead-ms, paid by every draft pass too) can decide the gain",
        100 * t.lo, 100 * t.hi, t.cases, 100 * v.lo, 100 * v.hi, v.cases));
  }
  if (cfg.compute == Precision::kBf16 && !cl.gpu->Supports(Precision::kBf16) && cfg.fit.weights.id != "fp16")
    r.notes.push_back(fmt::format(
        "{} has no BF16 tensor cores: priced at its FP16 rate, as engines run a BF16 checkpoint there (in FP16: "
        "vLLM and SGLang --dtype float16)",
        cl.gpu->id));
  if (cfg.batch_max)
    r.notes.push_back(fmt::format(
        "batch {}: the most sequences whose KV cache for the whole context ({} tokens) fits{}, as a scheduler that "
        "never evicts reserves it; under continuous batching at full load about this many are in flight, and the "
        "throughput is that of prefilling and decoding them (a request's own TTFT there includes queueing, which "
        "this does not model)",
        r.batch, cfg.fit.seq,
        r.batch_limit == "cap" ? fmt::format(" ({} would fit; capped at {})", r.max_batch, cfg.batch_cap) : ""));
  if (cfg.batch_max && m.moe) {
    const auto& e = evidence::kMoeMaxThroughput013;
    r.notes.push_back(fmt::format(
        "uncertain: at full load, against TensorRT-LLM 0.13's maximum throughput for Mixtral 8x7B ({} runs, experts "
        "under TP) this model was {:.0f}% too fast on average ({:+.1f}% to {:+.0f}%), on every GPU alike; TensorRT-LLM "
        "1.3's fused MoE operator for that shape, timed alone on H100, costs no more than the expert GEMMs priced here, "
        "while experts split into narrow slices by TP (Qwen3 235B-A22B at TP 8) cost up to 1.9x: with an older engine "
        "or narrow split experts expect less than this (docs/validation.md section 5)",
        e.cases, 100 * e.mean, 100 * e.lo, 100 * e.hi));
  }
  if (cfg.batch_max && !m.moe) {
    const auto& e = evidence::kTrtllm013MaxThroughput;
    r.notes.push_back(fmt::format(
        "uncertain: the engine's generation matters at full load: against TensorRT-LLM 0.13's maximum-throughput "
        "table ({} runs) this model was {:.0f}% too fast on average, where TensorRT-LLM 1.0 delivered {:.2f}x what "
        "0.13 did on the same configurations ({} of them; docs/validation.md section 5)",
        e.cases, 100 * e.mean, evidence::kTrtllm10Over013.mean_ratio, evidence::kTrtllm10Over013.pairs));
  }
  if (cfg.compute == Precision::kFp4) {
    const auto& e = evidence::kBlackwellNvfp4MaxThroughput;
    const auto& g = evidence::kFp4MidShapeGemm;
    r.notes.push_back(fmt::format(
        "uncertain: NVFP4 GEMMs run at the rate cuBLAS reached on large square shapes on a B200 (GB200's is derived "
        "from its FP8 rate); against TensorRT-LLM 1.0's maximum throughput with NVFP4 on B200 and GB200 this model "
        "was {:.0f}% to {:.0f}% too fast (mean {:.0f}%, {} runs), and against cuBLAS MXFP4 GEMMs of 128 to 4,096 "
        "rows {:.0f}% to {:.0f}% too fast ({} shapes; docs/validation.md section 5): expect it to be optimistic",
        100 * e.lo, 100 * e.hi, 100 * e.mean, e.cases, 100 * g.lo, 100 * g.hi, g.cases));
  }
  if (auto beyond = ContextBeyondModelNote(m, cfg.fit.seq)) r.notes.push_back(std::move(*beyond));
  if (auto stored = StoredFormatNote(m, cfg.fit.weights)) r.notes.push_back(std::move(*stored));
  if (m.sliding_window > 0 && cfg.fit.seq > m.sliding_window)
    r.notes.push_back(
        m.chunked_window
            ? fmt::format("the KV cache keeps at most the current {}-token attention chunk on {} of {} layers (chunked "
                          "attention), as vLLM's chunked local-attention cache does; an engine that keeps every token fits "
                          "fewer sequences: --no-sliding-window",
                          m.sliding_window, m.sliding_window_layers > 0 ? m.sliding_window_layers : m.layers, m.layers)
            : fmt::format(
                  "the KV cache keeps at most the {}-token sliding window on {} of {} layers, as engines that honour the "
                  "window do; one that keeps every token (TensorRT-LLM 0.13's Mistral runs in docs/validation.md "
                  "section 5) fits fewer sequences: --no-sliding-window",
                  m.sliding_window, m.sliding_window_layers > 0 ? m.sliding_window_layers : m.layers, m.layers));
  // Attention against the engines' kernels timed alone (TensorRT-LLM 1.3, vLLM 0.24, SGLang 0.5.14; `suanli validate
  // --group serving_attention`), where attention is a tenth of the prefill or of a decode step.
  const auto attention_share = [](const Pass& p) { return p.time > 0 ? AttentionTime(p.ops) / p.time : 0.0; };
  if (!spec && cl.gpu->architecture == "hopper" && attention_share(prefill) >= 0.1) {
    const auto& e = evidence::kServingPrefillAttentionHopper;
    r.notes.push_back(fmt::format(
        "uncertain: prefill attention is priced at FlashAttention 2's rate on this GPU ({:.0f}% of the prefill here); "
        "against TensorRT-LLM 1.3's Hopper context kernel and vLLM 0.24's and SGLang 0.5.14's FlashAttention 3, timed "
        "alone at 8,192-token prompts, this model's time was {:.0f}% to {:.0f}% longer ({} held-out runs on H100 and "
        "H200, BF16): with such a kernel expect a shorter TTFT, though whole TensorRT-LLM serving runs on Hopper are "
        "already shorter in this model than measured (docs/validation.md section 5)",
        100 * attention_share(prefill), -100 * e.hi, -100 * e.lo, e.cases));
  }
  if (!spec && cfg.decode_attention == DecodeAttention::kGrouped && attention_share(decode) >= 0.1) {
    const int at = cfg.fit.par.attention_tp(), adp = std::max(1, cfg.fit.par.attention_dp);
    const int kv_per_gpu = std::max(1, (m.kv_heads + at - 1) / at);
    const int64_t seqs_per_gpu = (cfg.fit.batch + adp - 1) / adp;
    if (double(seqs_per_gpu) * kv_per_gpu < 16 && mid_ctx >= 8192) {
      const auto& e = evidence::kServingDecodeAttentionFewHeads;
      r.notes.push_back(fmt::format(
          "uncertain: decode attention is {:.0f}% of a step here, over {} sequence x KV-head pair{} per GPU: too few "
          "blocks to draw the full bandwidth from a long cache. Against TensorRT-LLM 1.3's, vLLM 0.24's and SGLang "
          "0.5.14's decode kernels, timed alone with fewer than 16 pairs at 8,192 keys or more, the model's time was "
          "{:.0f}% short of the measured one on average ({:+.0f}% to {:+.0f}%, {} held-out runs), against {:+.0f}% with "
          "caches of more than 128 MiB (docs/validation.md section 5)",
          100 * attention_share(decode), seqs_per_gpu * kv_per_gpu, seqs_per_gpu * kv_per_gpu == 1 ? "" : "s",
          100 * e.mean, 100 * e.lo, 100 * e.hi, e.cases, 100 * evidence::kServingDecodeAttention.mean));
    }
  }
  if (!spec && m.mla && attention_share(decode) >= 0.1) {
    const auto& e = evidence::kServingMlaDecodeAttention;
    r.notes.push_back(fmt::format(
        "uncertain: MLA decode attention is {:.0f}% of a step here; the engines run it absorbed over the latent cache "
        "(2 x (576 + 512) FLOPs per key and head, where the model counts 4 x 192 at its attention rate); against "
        "TensorRT-LLM 1.3's kernels, timed alone on six GPUs, the model's time was {:.0f}% short of the measured one "
        "on average ({:+.0f}% to {:+.0f}%, {} held-out runs; docs/validation.md section 5)",
        100 * attention_share(decode), 100 * e.mean, 100 * e.lo, 100 * e.hi, e.cases));
  }
  // Where held-out serving runs disagreed with the model (docs/validation.md section 5), say so.
  const bool hopper = cl.gpu->architecture == "hopper";
  const bool fp8 = cfg.compute == Precision::kFp8;
  if (m.moe) {
    const auto& t = evidence::kMoeServingTtft;
    const auto& x = evidence::kMoeServingThroughput;
    const bool fp4 = cfg.compute == Precision::kFp4;
    const auto& op = fp4 ? evidence::kMoeOperatorNvfp4 : evidence::kMoeOperator;
    r.notes.push_back(fmt::format(
        "uncertain: MoE serving speed depends on the stack's expert kernels. TensorRT-LLM 1.3's fused MoE operator, "
        "timed alone on H200 and Blackwell GPUs ({} held-out runs{}; `suanli validate --group moe`): the model's "
        "time was {:.0f}% short of the measured one on average ({:+.0f}% to {:+.0f}% off); against TensorRT-LLM v0.9 "
        "Mixtral runs the predicted "
        "TTFT was {:+.0f}% to {:+.0f}% off the measured one and the predicted throughput {:+.0f}% to {:+.0f}% "
        "(docs/validation.md section 5)",
        op.cases, fp4 ? " of its NVFP4 operator" : " in BF16 and FP8", 100 * op.mean, -100 * op.hi, -100 * op.lo,
        100 * t.lo, 100 * t.hi, 100 * x.lo, 100 * x.hi));
    if (cfg.moe_impl == MoeImpl::kFused && cl.gpu->architecture == "blackwell") {
      const auto& fi = evidence::kMoeOperatorFlashinferBlackwell;
      r.notes.push_back(fmt::format(
          "uncertain: on Blackwell, vLLM 0.24's and SGLang 0.5.14's MoE kernels (FlashInfer's TensorRT-LLM-gen and "
          "CUTLASS paths) ran faster than this model prices a fused MoE operator: its time was {:.0f}% long on "
          "average over {} held-out runs ({:+.0f}% to {:+.0f}% off), most of it the {:.0f} us per MoE layer and pass "
          "fitted on TensorRT-LLM's CUTLASS operator (docs/validation.md section 5)",
          -100 * fi.mean, fi.cases, -100 * fi.hi, -100 * fi.lo, 1e6 * eff.moe_serving_fixed_s));
    }
  }
  if (m.moe && m.mla && cfg.fit.batch <= 8 && !cfg.batch_max)
    r.notes.push_back(fmt::format(
        "uncertain: at small batches an MLA + MoE step is mostly fixed per-kernel costs, and the model counts few "
        "kernels for MLA and MoE routing: DeepSeek-R1 at batch 1 on 8 B200s (TensorRT-LLM, {:.0f} tokens/s) took "
        "{:.2f}x the time per token this model gives (docs/validation.md section 5)",
        evidence::kDeepSeekBatch1Decode.published_tokens_per_s, evidence::kDeepSeekBatch1Decode.time_ratio));
  if (m.moe && cfg.fit.par.ep > 1) {
    // What uniform routing alone puts on the busiest GPU, to set against --moe-imbalance.
    const auto& e = *m.moe;
    const auto uniform = [&](double tokens) {
      return perf_detail::BusiestExpertRank(tokens, e.num_experts, e.experts_per_token, cfg.fit.par.ep).imbalance;
    };
    const std::string routing =
        cfg.moe_imbalance == 1.0
            ? fmt::format("it assumes uniform routing, which puts {:.2f}x the mean token-expert pairs on the busiest "
                          "GPU in prefill and {:.2f}x in a decode step (a real router's hot experts put more there: "
                          "--moe-imbalance)",
                          r.prefill_expert_imbalance, r.decode_expert_imbalance)
            : fmt::format("the busiest GPU routes {:.2f}x the mean token-expert pairs in prefill and {:.2f}x in a "
                          "decode step (--moe-imbalance {:g}; uniform routing gives {:.2f}x and {:.2f}x)",
                          r.prefill_expert_imbalance, r.decode_expert_imbalance, cfg.moe_imbalance,
                          uniform(batch * double(cfg.input_len)), uniform(batch));
    r.notes.push_back(fmt::format(
        "uncertain: expert parallelism in serving is checked only inside serving benchmarks: on {} held-out "
        "closed-loop runs with EP > 1 (DeepSeek-V3/R1 and Qwen3-235B-A22B on TensorRT-LLM, SGLang and vLLM) this "
        "model's time per output token was {:.0f}% longer than measured on average ({:+.0f}% to {:+.0f}%), and on {} "
        "disaggregated decode workers with EP 4 to 32 (DeepSeek-V3/R1 on TensorRT-LLM and SGLang) {:.0f}% longer "
        "({:+.0f}% to {:+.0f}%). The experts are combined with {}, and {}. Published EP-vs-TP comparisons: "
        "TensorRT-LLM's MoE micro-benchmark, Mixtral at 128 tokens, EP 8 12% slower than TP 8 where this model has "
        "them equal; vLLM DeepSeek-R1 on 8 H200s, prefill 3-10% slower under EP 8 where this model has it 7% faster "
        "(docs/validation.md section 5)",
        evidence::kMoeExpertParallelClosedLoopTpot.cases, -100 * evidence::kMoeExpertParallelClosedLoopTpot.mean,
        -100 * evidence::kMoeExpertParallelClosedLoopTpot.hi, -100 * evidence::kMoeExpertParallelClosedLoopTpot.lo,
        evidence::kDisaggExpertParallelTpot.cases, -100 * evidence::kDisaggExpertParallelTpot.mean,
        -100 * evidence::kDisaggExpertParallelTpot.hi, -100 * evidence::kDisaggExpertParallelTpot.lo,
        cfg.fit.par.attention_dp > 1 ? "a reduce-scatter back to the attention groups" : "the TP all-reduce", routing));
  }
  if (cfg.fit.par.attention_dp > 1) {
    const int adp = cfg.fit.par.attention_dp;
    r.notes.push_back(fmt::format(
        "attention DP {}: {} attention groups of {} GPU{}, each running attention, the dense layers, the shared "
        "experts and the output head for {} of the {} sequences and holding only their KV cache; the routed experts "
        "run over all {} GPUs (EP {} x ETP {}) on every group's tokens, gathered before each MoE layer and "
        "reduce-scattered after it (docs/methodology.md section 9.7)",
        adp, adp, cfg.fit.par.attention_tp(), cfg.fit.par.attention_tp() == 1 ? "" : "s",
        cfg.fit.batch % adp == 0 ? fmt::format("{}", cfg.fit.batch / adp)
                                 : fmt::format("at most {}", (cfg.fit.batch + adp - 1) / adp),
        cfg.fit.batch, cfg.fit.par.tp, cfg.fit.par.ep, cfg.fit.par.expert_tp()));
  }
  const bool one_gpu = cfg.fit.par.tp * cfg.fit.par.pp == 1;
  if (prefill_host > 0)
    r.notes.push_back(fmt::format(
        "host overheads as given, not modelled: {:.2f} ms per request and {:.2f} ms per forward pass ({:.0f}% of the "
        "TTFT, {:.0f}% of a decode step)",
        cfg.request_overhead_s * 1e3, cfg.step_overhead_s * 1e3, 100 * prefill_host / r.ttft_s,
        100 * cfg.step_overhead_s / r.tpot_s));
  if (cfg.input_len <= 256 && one_gpu && !m.moe) {
    // The measured shortfall is a cost per request: once the user gives one, the note would contradict it.
    const auto& e = evidence::kShortPromptTtftShortfall;
    if (cfg.request_overhead_s == 0)
      r.notes.push_back(fmt::format(
          "uncertain: no fixed cost per request is modelled; at 128-token prompts on one GPU, TensorRT-LLM v0.9 took "
          "{:.1f} ms longer to the first token than predicted ({:.1f} to {:.1f} ms, {} runs of 6-7B models on A100, "
          "H100, H200 and L40S), {:.0f}% of this prediction; --request-overhead-ms adds such a cost",
          e.mean_s * 1e3, e.lo_s * 1e3, e.hi_s * 1e3, e.cases, 100 * e.mean_s / r.ttft_s));
  } else if (hopper && fp8 && cfg.input_len <= 256) {
    const auto& e = evidence::kHopperFp8ShortPromptTtft;
    r.notes.push_back(fmt::format(
        "uncertain: on H100/H200 in FP8, TensorRT-LLM v0.9 took longer to the first token than predicted at "
        "128-token prompts ({:.0f}% to {:.0f}% under-predicted, {} runs); FP8 activation scaling is not modelled",
        -100 * e.hi, -100 * e.lo, e.cases));
  }
  if (evidence::IsAmdInstinctGpu(cl.gpu->id)) {
    const auto& e = evidence::kAmdInstinctServingLatency;
    r.notes.push_back(fmt::format(
        "uncertain: on MI300X, vLLM's end-to-end latency of LLaMA 3.1 70B and 405B in FP8 over 8 GPUs took {:.0f}% to "
        "{:.0f}% longer than predicted (mean {:.0f}%, {} held-out runs at batch 1-256, the 2024 stack the furthest "
        "off); the model's MI300X rates are Azure's micro-benchmarks of that GPU (docs/validation.md section 5)",
        100 * e.lo, 100 * e.hi, 100 * e.mean, e.cases));
  }
  if (hopper && !fp8 && cfg.fit.batch <= 8) {
    const auto& e = evidence::kHopperSmallBatchDecode;
    r.notes.push_back(fmt::format(
        "uncertain: on H100/H200, small-batch decode in torch.compile (torchao, batch 1) and vLLM (batch 8) took "
        "{:.0f}% to {:.0f}% longer per token than predicted ({} held-out runs; TensorRT-LLM's decode-heavy static "
        "batches on the same GPUs err both ways, docs/validation.md section 5)",
        100 * e.lo, 100 * e.hi, e.cases));
  }
  // A grouped-query model's decode time depends on whether the engine's kernel shares each KV head among
  // its query heads; say what the other kind of kernel would give when it differs.
  if (m.kv_heads < m.heads && cfg.decode_attention == DecodeAttention::kGrouped) {
    if (auto rate = InstructionIssueRate(*cl.gpu); rate.ok()) {
      InferConfig alt = cfg;
      alt.decode_attention = DecodeAttention::kPerHead;
      const Pass per_head = Forward(m, cl, eff, alt, batch, 1, mid_ctx, true, *rate);
      if (per_head.time > 1.1 * decode.time)
        r.notes.push_back(fmt::format(
            "decode assumes a grouped-query-aware attention kernel (each KV head read once); with one thread "
            "block per query head (TensorRT-LLM masked MHA, vLLM PagedAttention v1/v2: --decode-attention "
            "per-head) the time per output token would be {} ({:.1f}x)",
            FormatSeconds(per_head.time), per_head.time / decode.time));
    }
  }
  return r;
}

// docs/methodology.md section 9.6; the equation is perf.h's, rearranged as a quadratic in T:
// (O - 1) T^2 + (P - (O - 1) D - (C - 1) E / k) T - D P = 0, whose positive root is T (T = D at C = 1).
Result<ClosedLoopResult> EstimateClosedLoop(const ModelSpec& m, const Cluster& cl, const InferConfig& cfg,
                                            int64_t concurrency, const Efficiency& eff) {
  if (concurrency < 1)
    return InvalidArgument(fmt::format("--concurrency {} is not a number of clients (at least 1)", concurrency));
  if (cfg.output_len < 2)
    return InvalidArgument(fmt::format("--concurrency needs --output-len of at least 2 (got {}): the time per output "
                                       "token is the interval between a request's output tokens",
                                       cfg.output_len));
  if (cfg.batch_max) return InvalidArgument("--concurrency and --batch max both set the batch; give one");
  if (cfg.spec.tokens > 0)
    return InvalidArgument("--concurrency is not modelled with speculative decoding (its acceptance varies with load)");
  InferConfig one = cfg;
  one.fit.batch = 1;
  SUANLI_ASSIGN_OR_RETURN(const InferResult prefill, EstimateInference(m, cl, one, eff));
  ClosedLoopResult r;
  r.concurrency = concurrency;
  // The engine keeps as many sequences in flight as their KV caches fit at the whole context (as --batch max reserves
  // them); the other clients' requests wait in its queue. One sequence that does not fit is reported as such.
  r.running = concurrency;
  if (prefill.fits && prefill.max_batch >= 1 && prefill.max_batch < concurrency) r.running = prefill.max_batch;
  InferConfig many = cfg;
  many.fit.batch = r.running;
  SUANLI_ASSIGN_OR_RETURN(InferResult decode, EstimateInference(m, cl, many, eff));
  // With attention DP the prompts land k = min(D, running) at a time, one on each attention group: in a closed loop
  // of equal-length requests the clients that finished together ask again together and the engine spreads them over
  // its groups, whose prefills then run side by side on their own GPUs; the step that carries them grows by one
  // group's prefill plus the routed experts' and the gathers' work for all k prompts (the estimate at batch k).
  r.prefills_per_step = 1;
  if (cfg.fit.par.attention_dp > 1) r.prefills_per_step = std::min<int64_t>(cfg.fit.par.attention_dp, r.running);
  double prefill_s = prefill.ttft_s;
  if (r.prefills_per_step > 1) {
    InferConfig k = cfg;
    k.fit.batch = r.prefills_per_step;
    SUANLI_ASSIGN_OR_RETURN(const InferResult together, EstimateInference(m, cl, k, eff));
    prefill_s = together.ttft_s;
  }
  r.prefill_s = prefill_s;
  r.decode_step_s = decode.tpot_s;
  // A prefill lands in a decode step as one pass (continuous batching with mixed or chunked prefill): the weights
  // stream once for the prompt's rows and the decode rows together, so the step grows by the prefill less the
  // decode step's time outside attention (the weight streaming and the per-layer kernels it shares), not by the
  // whole prefill.
  r.mixed_step_extra_s = std::max(0.0, prefill_s - (decode.tpot_s - AttentionTime(decode.decode_ops)));
  const double o = double(cfg.output_len - 1), p = r.prefill_s, d = r.decode_step_s, c = double(r.running);
  const double b = p - o * d - (c - 1) / double(r.prefills_per_step) * r.mixed_step_extra_s;
  r.tpot_s = (-b + std::sqrt(b * b + 4 * o * d * p)) / (2 * o);
  const double cycle_s = p + o * r.tpot_s;
  r.requests_per_s = c / cycle_s;
  // Queued clients wait for a slot: by Little's law, (C - running) waiting over the rate requests leave.
  r.queue_wait_s = double(concurrency - r.running) / r.requests_per_s;
  r.ttft_s = r.prefill_s + r.queue_wait_s;
  if (r.running < concurrency)
    r.notes.push_back(fmt::format(
        "the KV cache holds {} of the {} clients' sequences at their whole context ({} in + {} out): the engine runs "
        "{} at a time and the other {} wait in its queue, {} each on average (in the TTFT)",
        r.running, concurrency, cfg.input_len, cfg.output_len, r.running, concurrency - r.running,
        FormatSeconds(r.queue_wait_s)));
  r.output_tokens_per_s_per_gpu =
      r.requests_per_s * double(cfg.output_len) / double(std::max(1, cfg.fit.par.tp) * std::max(1, cfg.fit.par.pp));
  r.fits = decode.fits;
  r.per_gpu_peak_bytes = decode.per_gpu_peak_bytes;
  if (!m.moe) {
    r.tpot_error = evidence::kConcurrencyTpotError;  // its runs are dense models
  } else if (cfg.fit.par.attention_dp > 1) {
    const bool long_prompt = cfg.input_len >= 4096;
    const auto& e = long_prompt ? evidence::kMoeAttentionDpClosedLoopTpotLong
                                : evidence::kMoeAttentionDpClosedLoopTpotShort;
    r.notes.push_back(fmt::format(
        "uncertain: with attention DP the closed-loop time per output token was checked on {} held-out TensorRT-LLM "
        "runs of DeepSeek-R1 with {}-token prompts (one node of H200s or B200s, attention DP 4 and 8): this model's "
        "time was {:+.0f}% to {:+.0f}% off the measured one (positive: longer), {:+.0f}% on average{} "
        "(docs/validation.md section 5)",
        e.cases, long_prompt ? "8,192" : "1,024", -100 * e.hi, -100 * e.lo, -100 * e.mean,
        long_prompt ? "; the prompts are taken to land one per attention group, their prefills side by side, as in a "
                      "loop of equal-length requests; prompts that arrive one at a time would stall every group"
                    : "; the two B200 releases measured differ by up to 80% on the same configuration"));
  } else {
    const auto& e = evidence::kMoeClosedLoopTpot;
    r.notes.push_back(fmt::format(
        "uncertain: for MoE models the closed-loop time per output token was checked on {} held-out runs (DeepSeek-V3 "
        "and R1, Qwen3-235B-A22B on TensorRT-LLM, vLLM and SGLang, H100 to B300, TP up to 8): this model's time ran "
        "from {:.0f}% shorter to {:.0f}% longer than measured, {:.0f}% longer on average; and on {} of MiniMax-M2.5 "
        "(vLLM 0.16-0.19, H100 to B300, TP 1-8) {:.0f}% shorter to {:.0f}% longer, {:.0f}% shorter on average "
        "(docs/validation.md section 5)",
        e.cases, 100 * e.hi, -100 * e.lo, -100 * e.mean, evidence::kMiniMaxClosedLoopTpot.cases,
        100 * evidence::kMiniMaxClosedLoopTpot.hi, -100 * evidence::kMiniMaxClosedLoopTpot.lo,
        100 * evidence::kMiniMaxClosedLoopTpot.mean));
  }
  r.decode = std::move(decode);
  return r;
}

Parallelism PrefillLayout(const Parallelism& decode, int tp, int ep, int etp, int attention_dp) {
  Parallelism p = decode;
  if (tp > 0) {
    p.tp = tp;
    p.ep = 1;
    p.etp = 0;
    p.attention_dp = 1;
  }
  if (ep > 0) p.ep = ep;
  if (etp > 0) p.etp = etp;
  if (attention_dp > 0) p.attention_dp = attention_dp;
  return p;
}

namespace {

// The closed loop of EstimateDisaggregated without its notes (docs/methodology.md section 9.8).
Result<DisaggResult> SolveDisaggregated(const ModelSpec& m, const Cluster& cl, const InferConfig& decode_cfg,
                                        const DisaggConfig& d, int64_t concurrency, const Efficiency& eff) {
  if (concurrency < 1)
    return InvalidArgument(fmt::format("--concurrency {} is not a number of clients (at least 1)", concurrency));
  if (decode_cfg.output_len < 2)
    return InvalidArgument(fmt::format("disaggregated serving needs --output-len of at least 2 (got {}): the prefill "
                                       "worker emits the first token and the decode worker the rest",
                                       decode_cfg.output_len));
  if (d.prefill_workers < 1 || d.decode_workers < 1)
    return InvalidArgument(fmt::format("--prefill-workers {} and --decode-workers {}: each must be at least 1",
                                       d.prefill_workers, d.decode_workers));
  if (decode_cfg.fit.par.pp > 1 || d.prefill.pp > 1)
    return InvalidArgument("disaggregated serving is modelled without pipeline parallelism (--pp 1)");
  if (decode_cfg.batch_max) return InvalidArgument("--decode-workers and --batch max both set the batch; give one");
  if (decode_cfg.spec.tokens > 0)
    return InvalidArgument("disaggregated serving is not modelled with speculative decoding");
  DisaggResult r;
  r.concurrency = concurrency;
  // The prefill tier: one prompt per attention group at a time, the groups side by side (section 9.7).
  r.prompts_per_prefill = std::max(1, d.prefill.attention_dp);
  InferConfig pc = decode_cfg;
  pc.fit.par = d.prefill;
  pc.fit.batch = r.prompts_per_prefill;
  auto prefill = EstimateInference(m, cl, pc, eff);
  if (!prefill.ok())
    return Status(prefill.status().code(), "prefill worker: " + std::string(prefill.status().message()));
  r.prefill_pass = *prefill;
  r.prefill_s = prefill->ttft_s;
  r.prefill_capacity_per_s = double(d.prefill_workers) * double(r.prompts_per_prefill) / r.prefill_s;
  // The decode worker: what its KV cache holds at the whole context.
  InferConfig dc = decode_cfg;
  dc.fit.batch = 1;
  auto single = EstimateInference(m, cl, dc, eff);
  if (!single.ok()) return Status(single.status().code(), "decode worker: " + std::string(single.status().message()));
  r.fits = prefill->fits && single->fits;
  r.decode_batch_max = std::max<int64_t>(1, single->max_batch);
  r.gpus = d.prefill_workers * d.prefill.tp + d.decode_workers * decode_cfg.fit.par.tp;
  // The KV cache handed over: each GPU of the decode attention group receives its share of the prompt's cache (MLA's
  // latent whole), all in parallel, over NVLink when both workers fit in one NVLink domain, else the network.
  const int decode_attention_tp = std::max(1, decode_cfg.fit.par.attention_tp());
  r.kv_transfer_bytes =
      KvBytesPerToken(m, decode_cfg.fit.kv_bytes_per_elem, decode_attention_tp) * double(decode_cfg.input_len);
  const bool one_domain = d.prefill.tp + decode_cfg.fit.par.tp <= cl.gpus_per_node;
  const double link = one_domain ? cl.intra_bw_per_dir : cl.inter_bw_per_gpu;
  r.kv_link = one_domain ? cl.intra_name : cl.inter_name;
  r.kv_transfer_s = link > 0 ? r.kv_transfer_bytes / link + (one_domain ? cl.intra_latency_s : cl.inter_latency_s) : 0;
  if (!r.fits) {
    const InferResult& short_of = !prefill->fits ? *prefill : *single;
    r.notes.push_back(fmt::format(
        "{}: it needs {} per GPU of the {} a {} has",
        !prefill->fits ? fmt::format("a prefill worker (TP {}) does not fit {} prompt(s) of {} tokens", d.prefill.tp,
                                     r.prompts_per_prefill, decode_cfg.input_len)
                       : fmt::format("a decode worker (TP {}) does not fit one sequence at the whole context ({} + {} "
                                     "tokens)",
                                     decode_cfg.fit.par.tp, decode_cfg.input_len, decode_cfg.output_len),
        FormatBytes(short_of.per_gpu_peak_bytes), FormatBytes(cl.gpu->memory_bytes.value), cl.gpu->id));
    r.decode = *single;
    r.decode_batch_evaluated = 1;
    return r;
  }
  // T and B together: from the largest batch down, T = T_decode(B(T)) until the rounded batch repeats.
  std::map<int64_t, InferResult> at;
  auto decode_at = [&](int64_t b) -> Result<const InferResult*> {
    auto it = at.find(b);
    if (it == at.end()) {
      InferConfig x = decode_cfg;
      x.fit.batch = b;
      SUANLI_ASSIGN_OR_RETURN(InferResult e, EstimateInference(m, cl, x, eff));
      it = at.emplace(b, std::move(e)).first;
    }
    return &it->second;
  };
  const double o = double(decode_cfg.output_len - 1), c = double(concurrency), nd = double(d.decode_workers);
  const double head = r.prefill_s + r.kv_transfer_s;
  struct Flow {
    double lambda, batch;
    std::string bound;
  };
  auto flow = [&](double t) {
    Flow f{c / (head + o * t), 0, "clients"};
    if (f.lambda > r.prefill_capacity_per_s) {
      f.lambda = r.prefill_capacity_per_s;
      f.bound = "prefill";
    }
    f.batch = f.lambda * o * t / nd;
    if (f.batch > double(r.decode_batch_max)) {
      f.batch = double(r.decode_batch_max);
      f.lambda = nd * f.batch / (o * t);
      f.bound = "decode memory";
    }
    return f;
  };
  auto rounded = [&](double b) { return std::clamp<int64_t>(std::llround(b), 1, r.decode_batch_max); };
  int64_t b = rounded(std::ceil(c / nd));
  SUANLI_ASSIGN_OR_RETURN(const InferResult* step, decode_at(b));
  for (int i = 0; i < 64; ++i) {
    const int64_t next = rounded(flow(step->tpot_s).batch);
    if (next == b) break;
    b = next;
    SUANLI_ASSIGN_OR_RETURN(step, decode_at(b));
  }
  r.tpot_s = step->tpot_s;
  r.decode_batch_evaluated = b;
  const Flow f = flow(r.tpot_s);
  r.bound = f.bound;
  r.requests_per_s = f.lambda;
  r.decode_batch = f.batch;
  r.ttft_s = head;
  if (f.bound != "clients") r.ttft_s = std::max(head, c / f.lambda - o * r.tpot_s);
  r.output_tokens_per_s_per_gpu = f.lambda * double(decode_cfg.output_len) / double(std::max(1, r.gpus));
  r.prefill_gpu_utilisation = f.lambda / r.prefill_capacity_per_s;
  r.decode = *step;
  return r;
}

}  // namespace

// docs/methodology.md section 9.8; perf.h states the closed loop this solves.
Result<DisaggResult> EstimateDisaggregated(const ModelSpec& m, const Cluster& cl, const InferConfig& decode_cfg,
                                           const DisaggConfig& d, int64_t concurrency, const Efficiency& eff) {
  SUANLI_ASSIGN_OR_RETURN(DisaggResult r, SolveDisaggregated(m, cl, decode_cfg, d, concurrency, eff));
  if (!r.fits) return r;
  const double nd = double(d.decode_workers);
  // Where the prefill tier binds, the fewest prefill workers at which it no longer does (doubling, then bisection):
  // more of them let more clients decode, which lengthens the decode step, so the answer is the loop's, not mu's.
  std::optional<DisaggResult> enough;
  if (r.bound == "prefill") {
    constexpr int kMostWorkers = 4096;
    int lo = d.prefill_workers, hi = d.prefill_workers;
    DisaggConfig more = d;
    while (hi < kMostWorkers && !enough) {
      lo = hi;
      hi = std::min(kMostWorkers, 2 * hi);
      more.prefill_workers = hi;
      SUANLI_ASSIGN_OR_RETURN(DisaggResult e, SolveDisaggregated(m, cl, decode_cfg, more, concurrency, eff));
      if (e.bound != "prefill") enough = std::move(e);
    }
    while (enough && hi - lo > 1) {
      more.prefill_workers = lo + (hi - lo) / 2;
      SUANLI_ASSIGN_OR_RETURN(DisaggResult e, SolveDisaggregated(m, cl, decode_cfg, more, concurrency, eff));
      if (e.bound == "prefill") {
        lo = more.prefill_workers;
      } else {
        hi = more.prefill_workers;
        enough = std::move(e);
      }
    }
    if (enough) r.prefill_workers_to_keep_up = hi;
  }
  if (r.bound == "prefill")
    r.notes.push_back(fmt::format(
        "the prefill workers bind: they start at most {:.2f} requests/s ({} x {} prompt(s) per {}), so the decode "
        "workers hold {:.0f} of the {} clients' sequences each ({:.0f} in all) and the others wait for a prefill "
        "(in the TTFT); {}",
        r.prefill_capacity_per_s, d.prefill_workers, r.prompts_per_prefill, FormatSeconds(r.prefill_s), r.decode_batch,
        concurrency, r.decode_batch * nd,
        enough ? fmt::format("with {} prefill workers they would keep up: {:.2f} requests/s, {:.1f} output tokens/s per "
                             "GPU over {} GPUs, time per output token {}, TTFT {}",
                             *r.prefill_workers_to_keep_up, enough->requests_per_s,
                             enough->output_tokens_per_s_per_gpu, enough->gpus, FormatSeconds(enough->tpot_s),
                             FormatSeconds(enough->ttft_s))
               : "more prefill workers would raise the throughput"));
  else if (r.bound == "decode memory")
    r.notes.push_back(fmt::format(
        "the decode workers' KV caches bind: each holds {} sequences at the whole context ({} + {} tokens), and the "
        "other clients wait (in the TTFT)",
        r.decode_batch_max, decode_cfg.input_len, decode_cfg.output_len));
  {
    const auto& e = evidence::kDisaggTpot;
    r.notes.push_back(fmt::format(
        "uncertain: the time per output token of disaggregated serving was checked on {} held-out runs (DeepSeek-V3/R1 "
        "decode workers of TensorRT-LLM and SGLang on H200, B200, GB200 and GB300, TP 4-32 with expert parallelism and "
        "attention DP): this model's was {:+.0f}% to {:+.0f}% off the measured one (positive: longer), {:+.0f}% on "
        "average, its worst where thousands of sequences sit on one 32-GPU decode worker; the prefill side and "
        "the TTFT are not checked (docs/validation.md section 5)",
        e.cases, -100 * e.hi, -100 * e.lo, -100 * e.mean));
  }
  return r;
}

}  // namespace suanli
