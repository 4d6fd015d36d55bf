// Internal helpers shared by the training and inference halves of the performance model.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "suanli/hardware.h"
#include "suanli/model.h"
#include "suanli/perf.h"

namespace suanli::perf_detail {

// Records where an efficiency value came from as "key = value: source" in `sources`, replacing the line of an
// earlier value of the same key (a GPU's entry over the defaults, a calibration file over the data file), so the
// list names only the values in use.
inline void RecordSource(std::vector<std::string>& sources, std::string_view key, std::string line) {
  const std::string prefix = std::string(key) + " = ";
  std::erase_if(sources, [&](const std::string& s) { return s.starts_with(prefix); });
  sources.push_back(std::move(line));
}

// The GPU's FP8 GEMMs take operands in any layout (Transformer Engine's is_non_tn_fp8_gemm_supported: compute
// capability 10.x and 13 or newer), so a tensor-scaled FP8 cast writes no transposed copy for the weight gradient;
// Hopper's and Ada's FP8 GEMMs take only the TN layout. An unknown capability counts as TN-only.
inline bool NonTnFp8Gemms(const GpuSpec& gpu) {
  if (!gpu.compute_capability) return false;
  const double cc = std::atof(gpu.compute_capability->value.c_str());
  return (cc >= 10.0 && cc < 12.0) || cc >= 13.0;
}

// Bytes per layer weight parameter one Transformer Engine weight cast moves: reading the 16-bit weight (current
// scaling reads it once more for its amax) and writing the FP8 copies Fp8WeightCacheBytesPerParam counts. Under FP8
// parameters the row-wise copy exists: Hopper and Ada make the transpose from it (1 B read, 1 B written), Blackwell
// needs none, and MXFP8 parameters are quantised in both layouts by the optimizer step.
// NVFP4: the 16-bit weight read for its amax and again for the cast, both layouts written; under NVFP4 parameters the
// gathered row-wise copy read and its column-wise copy written.
inline double Fp8WeightCastBytesPerParam(const GpuSpec& gpu, Fp8Recipe recipe, bool fp8_params) {
  if (recipe == Fp8Recipe::kNvfp4) return fp8_params ? 2 * kNvfp4BytesPerElement : 2 + 2 + 2 * kNvfp4BytesPerElement;
  if (fp8_params) return recipe != Fp8Recipe::kMxfp8 && !NonTnFp8Gemms(gpu) ? 2 : 0;
  return 2 + (recipe == Fp8Recipe::kCurrent ? 2 : 0) + Fp8WeightCacheBytesPerParam(gpu, recipe, false);
}

// Bytes per weight-gradient element the weight-gradient GEMM moves, averaged over a step of `micro_batches`
// micro-batches. Fused stacks (Megatron-Core's --gradient-accumulation-fusion, NeMo's gradient_accumulation_fusion:
// Transformer Engine's fuse_wgrad_accumulation) write the GEMM's output into the gradient buffer at its width
// (`grad_width`: 4 with FP32 gradients): the step's first micro-batch overwrites it (accumulate=False), every later
// one reads and rewrites it (beta = 1). Under ZeRO-3 sharding (`sharded`) every micro-batch's gradients are
// reduce-scattered as its backward ends, and Megatron-FSDP has Transformer Engine overwrite the unsharded buffer
// (megatron_fsdp.py: overwrite_main_grad for optim_grads_params): one write each time. Eager PyTorch's autograd writes
// a 16-bit gradient.
inline double WeightGradOutputBytes(bool eager, double grad_width, double micro_batches, bool sharded = false) {
  if (eager) return 2;
  if (sharded) return grad_width;
  return grad_width * (2 - 1 / std::max(1.0, micro_batches));
}

struct LayerShape {
  double attn_proj_params;  // everything in attention except the output projection
  double out_proj_in;       // input dim of the output projection (heads x v head dim)
  double q_dim;             // query width (heads x qk head dim)
  double kv_dim;            // cached K width per token (for decode traffic), all heads
  bool rotary;
};

inline LayerShape Shape(const ModelSpec& m) {
  LayerShape s;
  const ParamCounts c = CountParams(m);
  const double attn_per_layer = c.attention / m.layers;
  if (m.mla) {
    s.out_proj_in = double(m.heads) * m.mla->v_head_dim;
    s.q_dim = double(m.heads) * (m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim);
  } else {
    s.out_proj_in = double(m.heads) * m.head_dim;
    s.q_dim = s.out_proj_in;
  }
  s.attn_proj_params = attn_per_layer - s.out_proj_in * m.hidden;
  s.kv_dim = double(m.kv_heads) * m.head_dim;
  // Rotary unless the model has a learned position table or uses ALiBi (BLOOM; MPT, whose alternative to ALiBi
  // is a learned table, so it never rotates).
  s.rotary = m.learned_positions == 0 && m.model_type != "bloom" && m.model_type != "mpt";
  return s;
}

// Mean number of keys a query attends to, averaged over the layers: a causal prefill of `ctx` tokens (each query
// sees the keys up to itself: ctx / 2 on average) or one decode step at context `ctx` (ctx keys). Windowed layers
// see at most the window w: in a prefill longer than w, query i sees min(i, w), a mean of w - w^2 / (2 ctx).
// FlashAttention and cuDNN skip the key blocks outside the window, so the FLOPs follow the attended keys.
inline double MeanAttendedKeys(const ModelSpec& m, double ctx, bool decode) {
  const double full = decode ? ctx : ctx / 2;
  if (m.sliding_window <= 0 || m.layers <= 0) return full;
  const double w = m.sliding_window;
  double windowed = decode ? std::min(ctx, w) : (w >= ctx ? ctx / 2 : w - w * w / (2 * ctx));
  if (m.chunked_window && ctx > w) {
    // Chunked attention (Llama 4): a query sees the keys of its own chunk up to itself. Prefill over ctx = n w + r
    // tokens: n full chunks of w / 2 keys per query on average and a last one of r / 2; a decode step past the first
    // chunk sees w / 2 keys on average over the chunk's positions.
    const double n = std::floor(ctx / w), rest = ctx - n * w;
    windowed = decode ? w / 2 : (n * w * (w / 2) + rest * (rest / 2)) / ctx;
  }
  const double share = double(m.sliding_window_layers) / m.layers;
  return (1 - share) * full + share * windowed;
}

// Expected largest of `ranks` independent Binomial(n, q) counts: E[max] = sum_{j=0}^{n-1} (1 - F(j)^ranks), F the
// binomial CDF. With expert parallelism, the experts a step touches on its busiest rank (docs/methodology.md
// section 9.1). n is small (experts per rank), so the sum is exact; ranks = 1 gives the mean n q.
inline double ExpectedMaxBinomial(int n, double q, int ranks) {
  if (n <= 0 || !(q > 0)) return 0;
  if (q >= 1) return n;
  double e = 0, pmf = std::pow(1 - q, n), cdf = 0;
  for (int j = 0; j < n; ++j) {
    cdf += pmf;
    e += 1 - std::pow(std::min(1.0, cdf), ranks);
    pmf *= double(n - j) / (j + 1) * q / (1 - q);
  }
  return e;
}

// Expected largest of r independent standard normal draws: integral of x d(Phi(x)^r), by the midpoint rule on
// [-8, 8] (0 for r = 1; 0.564 for 2, 1.029 for 4, 1.424 for 8, 1.766 for 16).
inline double ExpectedMaxStdNormal(int r) {
  if (r <= 1) return 0;
  constexpr int kSteps = 1600;
  constexpr double kLo = -8, kHi = 8, kDx = (kHi - kLo) / kSteps;
  double e = 0;
  for (int i = 0; i < kSteps; ++i) {
    const double x = kLo + (i + 0.5) * kDx;
    const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
    const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
    e += x * r * std::pow(cdf, r - 1) * pdf * kDx;
  }
  return e;
}

// E[max of n standard normals] by Blom's approximation, Phi^-1((n - 0.375) / (n + 0.25)): +4.5% at n = 2, +0.7% at
// 8, within 0.5% of the integral above from 16 to 10^6 (a unit test checks it); cheap enough for every estimate. 0 for
// n <= 1.
// The inverse standard normal CDF is Acklam's rational approximation (relative error below 1.2e-9).
inline double InverseStdNormalCdf(double p) {
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                                 1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                                 6.680131188771972e+01,  -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                                 -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                 3.754408661907416e+00};
  constexpr double kLow = 0.02425;
  if (p <= 0) return -INFINITY;
  if (p >= 1) return INFINITY;
  if (p < kLow) {
    const double q = std::sqrt(-2 * std::log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  if (p > 1 - kLow) return -InverseStdNormalCdf(1 - p);
  const double q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}
inline double ExpectedMaxStdNormalFast(double n) {
  return n <= 1 ? 0.0 : InverseStdNormalCdf((n - 0.375) / (n + 0.25));
}
// How much longer a synchronous job's kernels take on its slowest of `gpus` GPUs than on a typical one:
// 1 + spread x E[max of `gpus` standard normals] (Efficiency::gpu_speed_spread).
inline double SlowestGpuLag(double spread, double gpus) {
  return spread > 0 ? 1 + spread * ExpectedMaxStdNormalFast(gpus) : 1.0;
}

// One inference step's routed-expert work on the busiest rank of an expert-parallel group (uniform routing: each
// of `tokens` picks k distinct experts of E, the E experts split evenly over `ep` ranks).
struct ExpertLoad {
  double touched;            // experts with at least one token on the busiest rank
  double assignments;        // token-expert pairs on the busiest rank
  double tokens_per_expert;  // GEMM rows per touched expert, at least 1
  double imbalance;          // assignments / the mean pairs per rank, T k / ep
};

// `imbalance` (serving's --moe-imbalance): the busiest rank routes that multiple of the mean pairs, T k / ep,
// where it is more than uniform routing gives (a real router's hot experts), still at most T min(k, local).
// Uniform routing never puts less than the mean there, so 1 changes nothing.
inline ExpertLoad BusiestExpertRank(double tokens, int experts, int k, int ep, double imbalance = 1) {
  ExpertLoad l;
  const int local = experts / std::max(1, ep);
  const double q = 1 - std::pow(1 - double(k) / experts, tokens);  // chance a given expert is touched
  // Counts are whole numbers summing over the ranks, so the busiest rank holds at least ceil(total / ep): a step
  // touches at least k experts and routes T k pairs (one token on Mixtral's 8 ranks: a rank always has one).
  const auto ceil_share = [&](double total) { return std::ceil(total / std::max(1, ep) - 1e-9); };
  l.touched = ep <= 1 ? experts * q : std::max(ExpectedMaxBinomial(local, q, ep), ceil_share(std::min(tokens, 1.0) * k));
  // A token's picks that land on one rank are hypergeometric (E experts, `local` of them there, k drawn):
  // mean k / ep, variance k (1/ep)(1 - 1/ep)(E - k)/(E - 1); over the tokens, normal, and the busiest of ep ranks
  // lies ExpectedMaxStdNormal(ep) standard deviations above the mean, and never above tokens x min(k, local).
  const double share = 1.0 / std::max(1, ep);
  const double var = experts > 1 ? tokens * k * share * (1 - share) * (experts - k) / (experts - 1) : 0.0;
  l.assignments = std::min(tokens * std::min(k, local),
                           std::max(ep <= 1 ? 0.0 : ceil_share(tokens * k),
                                    tokens * k * share + ExpectedMaxStdNormal(ep) * std::sqrt(var)));
  l.assignments = std::min(tokens * std::min(k, local), std::max(l.assignments, imbalance * tokens * k * share));
  l.tokens_per_expert = std::max(1.0, l.assignments / std::max(1.0, l.touched));
  l.imbalance = tokens > 0 && k > 0 ? l.assignments / (tokens * k * share) : 1.0;
  return l;
}

inline double PeakFor(const GpuSpec& g, Precision p) {
  if (auto v = g.PeakFlops(p)) return *v;
  if (p == Precision::kBf16) {
    if (auto v = g.PeakFlops(Precision::kFp16)) return *v;  // V100, T4: FP16 tensor cores only
  }
  return 0;
}

// FlashAttention-2's backward pass does 2.5x the forward FLOPs (5 matmuls vs 2; Dao 2023 §3.2), timed at the
// forward's rate.
inline constexpr double kFlashBackwardFactor = 2.5;

// One fused (FlashAttention-style) attention forward pass on one GPU: `flops` at the 16-bit peak times the
// `attention` fraction (Triton's FlashAttention 1 at kFlash1RelativeSpeed of it), or Q, K, V and the output's
// `bytes` at the memory fraction where that takes longer, plus the launch floor. The backward pass takes
// kFlashBackwardFactor times as long. The training model and `validate`'s attention-kernel cases both use it.
struct FusedAttentionTime {
  double time_s = 0;
  bool compute_bound = true;
};
inline FusedAttentionTime FusedAttentionForward(const GpuSpec& gpu, const Efficiency& eff, double flops, double bytes,
                                                bool flash1) {
  const double kernel_eff = eff.attention * (flash1 ? kFlash1RelativeSpeed : 1.0);
  const double t_c = flops / (PeakFor(gpu, Precision::kBf16) * kernel_eff);
  const double t_m = bytes / (gpu.memory_bandwidth_bytes_per_s.value * eff.memory);
  return {std::max(t_c, t_m) + eff.kernel_launch_s, t_c >= t_m};
}

// FP8 fused attention where its speed-up over the 16-bit kernel is measured on this GPU (Efficiency::attention_fp8,
// attention_fp8_by_seq); elsewhere --fp8-attention prices attention at the 16-bit rate.
inline bool HasFp8AttentionRate(const Efficiency& e) { return e.attention_fp8 > 0 || !e.attention_fp8_by_seq.empty(); }

// That speed-up for a causal kernel over `seq_len` tokens (cuDNN's benchmark: one sequence, every query attending to
// the keys before it): log-linear in the length between measured points, the end points' values beyond them; the
// single figure where no curve was measured; 1 where nothing was.
inline double Fp8AttentionSpeedup(const Efficiency& e, double seq_len) {
  const auto& c = e.attention_fp8_by_seq;
  if (c.empty()) return e.attention_fp8 > 0 ? e.attention_fp8 : 1.0;
  if (!(seq_len > c.front().first)) return c.front().second;
  if (seq_len >= c.back().first) return c.back().second;
  size_t i = 1;
  while (c[i].first < seq_len) ++i;
  if (c[i].first == seq_len) return c[i].second;
  const double w = std::log(seq_len / c[i - 1].first) / std::log(c[i].first / c[i - 1].first);
  return c[i - 1].second + w * (c[i].second - c[i - 1].second);
}

// The achievable fraction of `PeakFor(g, p)` for a large GEMM: the precision's own measurement where the
// efficiency table has one, else the next wider precision's (FP4 -> FP8 -> 16-bit).
inline double GemmEfficiencyFor(const Efficiency& e, Precision p) {
  if (p == Precision::kFp4 && e.gemm_fp4 > 0) return e.gemm_fp4;
  if ((p == Precision::kFp4 || p == Precision::kFp8) && e.gemm_fp8 > 0) return e.gemm_fp8;
  return e.gemm;
}

// Bytes per element an NVFP4 cast moves: the 16-bit tensor read and its NVFP4 copies written, in both layouts (the
// forward GEMM's and the weight gradient's: FP4 GEMMs take only the TN layout), or the row-wise one alone where no
// weight gradient follows (frozen weights).
inline double Nvfp4CastBytesPerElement(bool one_layout) { return 2 + kNvfp4BytesPerElement * (one_layout ? 1 : 2); }

// What an FP8 recipe adds to the cast-transpose of every GEMM input (forward) and output gradient (backward),
// which every recipe pays (kFp8CastBytesPerElement per element, one kernel per cast). Transformer Engine's
// Float8CurrentScalingQuantizer::quantize_impl (transformer_engine/pytorch/csrc/quantizer.cpp) computes the
// amax in one kernel, the scale in a second and casts in a third. A norm or activation kernel that computes
// the amax while it writes its output (TE's FUSED_NORM_AMAX_FP8 path) leaves only the scale kernel; any other
// tensor is read once more (2 B per element) for its amax. In Megatron-Core those fused inputs are the two fed
// by TE's LayerNormLinear (QKV, and the dense MLP's up projection); the activation and every backward gradient
// come from Megatron's own kernels or the attention backward, so they take the separate read. MXFP8 writes one
// 1-byte E8M0 scale per 32 values in each of its two layouts and has no amax pass. Delayed scaling adds nothing.
// NVFP4 (Transformer Engine's NVFP4 quantizer: the per-tensor scale from the amax, then the cast) reads every tensor
// once more for its amax, no norm kernel computing it for NVFP4, and with the random Hadamard transform (`rht`) once
// more again for the amax of the transformed copy that feeds the weight gradient; the cast's own bytes are in
// Nvfp4CastBytesPerElement.
struct Fp8CastCost {
  double fwd_bytes = 0, bwd_bytes = 0;
  int fwd_kernels = 0, bwd_kernels = 0;
};
// plain_fwd_elems: forward GEMM-input elements no fused norm produced; fused_fwd_casts: how many of the four
// forward casts take their amax from a norm kernel (2 in a dense Megatron-Core layer, 1 in an MoE layer).
inline Fp8CastCost Fp8CastExtra(Fp8Recipe r, double plain_fwd_elems, double in_elems, double grad_elems,
                                int fused_fwd_casts, bool rht = false) {
  Fp8CastCost c;
  if (r == Fp8Recipe::kNvfp4) {
    const int passes = rht ? 2 : 1;
    c.fwd_bytes = 2.0 * passes * in_elems;
    c.bwd_bytes = 2.0 * passes * grad_elems;
    c.fwd_kernels = 4 * passes;
    c.bwd_kernels = 4 * passes;
    return c;
  }
  if (r == Fp8Recipe::kCurrent) {
    c.fwd_bytes = 2 * plain_fwd_elems;
    c.bwd_bytes = 2 * grad_elems;
    c.fwd_kernels = 2 * (4 - fused_fwd_casts) + fused_fwd_casts;
    c.bwd_kernels = 2 * 4;
  } else if (r == Fp8Recipe::kMxfp8) {
    c.fwd_bytes = in_elems * 2.0 / 32;
    c.bwd_bytes = grad_elems * 2.0 / 32;
  }
  return c;
}

// Serving's routed experts on one rank for a given load (docs/methodology.md §9): `load.touched` experts, each an
// up/gate GEMM (tokens_per_expert rows, (gated ? 2 : 1) x expert_ffn / etp columns, `hidden` deep) and a down GEMM
// (tokens_per_expert x hidden, expert_ffn / etp deep); for a gated MLP the activation's element-wise pass over the
// rank's token-expert pairs at the dense MLP's 6 B per element (read gate and up, write the product); and the fused
// operator's own kernels around them: the row expansion gathers each pair's 16-bit token row and writes it at the
// GEMM's input width, the finalising gather reads each pair's 16-bit output row and writes the rank's `tokens` rows,
// plus Efficiency::moe_serving_fixed_s for routing, expert maps and those kernels' fixed time. The inference estimate
// and the `moe` validation group both price the block with this.
// A gated MLP's activation pass per element of its width: read gate and up, write the product (16-bit).
inline constexpr double kGatedActivationBytesPerElement = 6;
struct RoutedExpertsTime {
  GemmTime up, down;
  double activation_elements = 0;
  double permute_bytes = 0;  // the expansion's and the finalising gather's bytes
  double permute_s = 0;      // their time: the bytes at the achievable bandwidth plus the fixed time
};
inline RoutedExpertsTime RoutedExperts(const ExpertLoad& load, double tokens, double hidden, double expert_ffn,
                                       int etp, bool gated, double act_bytes, double weight_bytes, double peak,
                                       double gemm_eff, const GpuSpec& gpu, const Efficiency& eff) {
  RoutedExpertsTime r;
  r.permute_bytes = load.assignments * hidden * (2 + act_bytes + 2) + tokens * hidden * 2;
  r.permute_s = r.permute_bytes / (gpu.memory_bandwidth_bytes_per_s.value * eff.memory) + eff.moe_serving_fixed_s;
  const double width = expert_ffn / std::max(1, etp);
  r.up = EstimateGemm(load.tokens_per_expert, (gated ? 2.0 : 1.0) * width, hidden, load.touched, act_bytes, peak,
                      gemm_eff, gpu, eff, weight_bytes);
  r.down = EstimateGemm(load.tokens_per_expert, hidden, width, load.touched, act_bytes, peak, gemm_eff, gpu, eff,
                        weight_bytes);
  r.activation_elements = gated ? load.assignments * width : 0.0;
  return r;
}

// Serving's attention for one layer on one GPU of a TP group (docs/methodology.md §9): `batch` sequences of
// `new_tokens` queries each attending to `ctx` keys (decode: one new token over its cache; prefill: causal over the
// prompt; sliding-window layers see at most the window). FLOPs per attended key and query head: QK^T at the query's
// width and PV at the value's, 2 x (d_qk + d_v); MLA prefill runs the expanded heads (DeepSeek-V3: 192 and 128), MLA
// decode keeps 4 x d_qk (the engines run it absorbed, FlashMLA counting 2 x (576 + 512) per key and head, at a rate
// its README puts at 1.8x the model's attention rate on that die; TensorRT-LLM 1.3's MLA decode, timed alone, ran 25%
// slower than this price on average, which the estimate quotes but does not take, docs/validation.md section 5).
// Bytes: the KV cache once (`kv_bytes_per_elem` per element), Q read and the output written in 16 bits. Time: the
// larger of the FLOPs at the 16-bit peak x Efficiency::attention and the bytes at the achievable bandwidth, plus one
// kernel's fixed time, and in prefill the context kernel's own fixed time beyond it
// (Efficiency::serving_prefill_attention_fixed_s). With
// `per_head` (one thread block per query head, decode only) the compute term is the instructions each block issues
// for every cached K and V element, at `issue_rate` thread-instructions per second. The inference estimate and the
// `serving_attention` validation group both price attention with this.
struct ServingAttentionTime {
  double flops = 0, bytes = 0, time_s = 0;
  double compute_s = 0, memory_s = 0;  // the two roofline terms, before the fixed time
  Bound bound = Bound::kMemory;
};
inline ServingAttentionTime ServingAttention(const ModelSpec& m, int tp, double kv_bytes_per_elem, double batch,
                                             double new_tokens, double ctx, bool decode, bool per_head,
                                             double issue_rate, const GpuSpec& gpu, const Efficiency& eff) {
  ServingAttentionTime a;
  const double t = std::max(1, tp);
  const double q_dim = double(m.heads) * m.head_dim;
  double per_key = 4.0 * m.head_dim;
  if (m.mla && !decode) per_key = 2.0 * (m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim + m.mla->v_head_dim);
  const double keys = MeanAttendedKeys(m, ctx, decode);
  a.flops = batch * new_tokens * keys * per_key * double(m.heads) / t;
  // KV cache read per layer (sliding-window layers hold at most the window), plus Q and the output.
  const double kv_per_layer =
      KvCacheBytes(m, kv_bytes_per_elem, 1, static_cast<int64_t>(ctx), tp) / std::max(1, m.layers);
  a.bytes = batch * kv_per_layer + batch * new_tokens * q_dim / t * 4;
  a.compute_s = a.flops / (PeakFor(gpu, Precision::kBf16) * eff.attention);
  a.memory_s = a.bytes / (gpu.memory_bandwidth_bytes_per_s.value * eff.memory);
  const bool heads_issue = decode && per_head;
  if (heads_issue) a.compute_s = batch * keys * q_dim / t * 2 * eff.per_head_decode_instructions / issue_rate;
  a.time_s = std::max(a.compute_s, a.memory_s) + eff.kernel_launch_s +
             (decode ? 0.0 : eff.serving_prefill_attention_fixed_s);
  a.bound = a.compute_s >= a.memory_s ? (heads_issue ? Bound::kIssue : Bound::kCompute) : Bound::kMemory;
  return a;
}

}  // namespace suanli::perf_detail
