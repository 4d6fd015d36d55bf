#include "suanli/perf.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <cmath>

#include "core/data_registry.h"
#include "core/toml_reader.h"
#include "suanli/text.h"
#include "suanli/units.h"
#include "perf/internal.h"

namespace suanli {

namespace {
// GEMM tile used for wave/tile quantisation (CUTLASS/cuBLAS 16-bit kernels on Ampere/Hopper
// commonly use 128x128 or 128x256 CTA tiles; docs/methodology.md §6.2).
constexpr double kTileM = 128, kTileN = 128;
// Exponent of the smooth roofline (RooflineTime). Chosen on the calibration cases only (training and
// decode groups, docs/validation.md §4): p = 1, 1.5, 2, 3 give training 5.4/5.9/6.9/7.5% and decode
// 10.4/5.4/4.5/4.0% mean error; 1.5 is the best joint choice.
constexpr double kRooflineP = 1.5;
// Kernels per transformer layer outside the GEMMs and attention (norms, residual adds, activation,
// rotary), each paying the launch floor.
constexpr double kElementwiseKernelsPerLayer = 6;
using perf_detail::kFlashBackwardFactor;
// FP8 training: bytes per element of a fused cast-transpose (read 16-bit, write FP8 and FP8 transpose).
constexpr double kFp8CastBytesPerElement = 4;
constexpr const char* kFp8CastOpName = "FP8 cast + transpose";
constexpr const char* kNvfp4CastOpName = "NVFP4 cast (amax, both layouts)";
constexpr const char* kLoraOpName = "LoRA adapters";
// The gradient GEMMs' time beyond twice the forward GEMMs' (their own bytes, the weight gradient's buffer, FP8's FP32
// accumulation): one row per layer kind, once per gradient pass.
constexpr const char* kGradGemmOpName = "gradient GEMMs beyond 2x forward (gradient buffer; FP32 accumulation in FP8)";
// Eager PyTorch element-wise work beyond fused kernels.
constexpr const char* kEagerOpName = "eager element-wise (unfused)";
constexpr const char* kCrossEntropyOpName = "cross-entropy";
// MoE token permutation and unpermutation: backward moves the same bytes once (not twice, as GEMMs).
constexpr const char* kMoePermuteOpName = "token permute + unpermute";
// Context parallelism's ring exchange of K and V blocks: once in the forward pass, twice in the backward (K, V and
// their gradients).
constexpr const char* kCpRingOpName = "CP K/V ring exchange";
constexpr const char* kCpAllToAllOpName = "CP all-to-all (Q, K, V in, output back)";
// From this many GPUs `perf train` quotes the weak-scaling evidence: the large end of the smallest measured pair
// (dgxc-benchmarking's LLaMA 3.1 8B, 8 -> 128 H100s).
constexpr int kWeakScalingNoteGpus = 128;
// `perf train` says that attention is priced below cuDNN's measured rate once attention is this share of the step.
constexpr double kAttentionNoteShare = 0.10;
// Sliding windows at most this wide get the small-window kernel note: the evidence is at 128 tokens (2-4x slower than
// priced) and at 1024 (as priced), so the note stops between them.
constexpr int kSmallWindowTokens = 512;
// Optimizer step traffic per locally held parameter: every state byte read and written (master copy and moments:
// 12 B each way for Adam with FP32 master weights), the gradient read, the 16-bit weight written; where the
// optimizer keeps no full copy of the weights (16-bit remainders, or none), the weight is also read to rebuild the
// value it updates. 28 B for the default Adam (2 x 12 + 2 + 2), which LoRA's adapters are also charged.
double OptimizerStepBytesPerParam(const FitResult& mem, MasterCopy master, bool lora) {
  if (lora) return 2 * 12 + 2 + 2;
  const bool reads_weight =
      master == MasterCopy::kRemainder || master == MasterCopy::kNone || mem.weight_bytes_per_param >= 4;
  return 2 * mem.optimizer_bytes_per_param + mem.grad_bytes_per_param +
         mem.weight_bytes_per_param * (reads_weight ? 2 : 1);
}
// Megatron-Core's DDP keeps every local gradient in one contiguous buffer and passes over all of it, not only the
// optimizer's 1/DP shard, every step (core_v0.8.0 distributed/param_and_grad_buffer.py): zero_() before the first
// micro-batch (one write of each gradient element) and, with DP > 1, an in-place multiply by 1/DP before each
// bucket's reduce (a read and a write; gradient_scaling_factor, the default since average_in_collective is off).
// Counted in gradient-element widths per locally held parameter. Not counted: the NaN check of Megatron-LM's
// training loop (--check-for-nan-in-loss-and-grad, one more read) and eager PyTorch's gradient handling.
constexpr const char* kGradBufferOpName = "gradient buffer: zero + 1/DP scale (Megatron-Core DDP)";
constexpr double kGradBufferZeroWidths = 1, kGradBufferScaleWidths = 2;
// Cross-entropy over the vocabulary, per logit on this GPU (CrossEntropyImpl; docs/methodology.md §6.4): bytes
// and kernels of the forward and of the backward pass.
struct LossTraffic {
  double fwd_bytes, bwd_bytes;
  int fwd_kernels, bwd_kernels;
};
LossTraffic LossTrafficOf(CrossEntropyImpl c) {
  switch (c) {
    // Megatron-Core fused_cross_entropy.py: FP32 copy + max (read 2, write 4), subtract + exp + sum in place
    // (read 4, write 4), divide in place (read 4, write 4); backward: scale the saved softmax in place, which
    // torch.compile writes back, and cast to 16-bit (read 4, write 4 + 2).
    case CrossEntropyImpl::kFused: return {22, 10, 3, 1};
    // Megatron-LM cross_entropy.py without fusion: .float() (read 2, write 4), max (read 4), sub_ (8), exp in
    // place (8), sum (read 4), div_ (8); backward: mul_ (8) and the cast back to 16-bit (read 4, write 2).
    case CrossEntropyImpl::kUnfused: return {38, 14, 8, 3};
    // Transformer Engine's Triton cross-entropy: the forward reads the logits once (online max and sum); the
    // backward reads them and writes the gradient in their place.
    case CrossEntropyImpl::kOnline: return {2, 4, 2, 1};
  }
  return {22, 10, 3, 1};
}

}  // namespace

Result<AttentionImpl> ParseAttentionImpl(std::string_view name) {
  if (name == "flash" || name == "fa2") return AttentionImpl::kFlash;
  if (name == "flash1" || name == "fa1" || name == "triton") return AttentionImpl::kFlash1;
  if (name == "unfused") return AttentionImpl::kUnfused;
  return InvalidArgument(fmt::format(
      "unknown attention kernel '{}': use flash (FlashAttention-2), flash1 (FlashAttention 1.x; alias triton) "
      "or unfused", name));
}

const char* AttentionImplName(AttentionImpl a) {
  switch (a) {
    case AttentionImpl::kFlash: return "flash";
    case AttentionImpl::kFlash1: return "flash1";
    case AttentionImpl::kUnfused: return "unfused";
  }
  return "?";
}

Result<Fp8Recipe> ParseFp8Recipe(std::string_view name) {
  if (name == "delayed") return Fp8Recipe::kDelayed;
  if (name == "current" || name == "cs" || name == "fp8-cs" || name == "tensorwise") return Fp8Recipe::kCurrent;
  if (name == "mxfp8" || name == "mx" || name == "fp8-mx") return Fp8Recipe::kMxfp8;
  return InvalidArgument(fmt::format(
      "unknown FP8 recipe '{}'{}: use delayed (DelayedScaling), current (Float8CurrentScaling, FP8-CS; aliases cs, "
      "fp8-cs, tensorwise) or mxfp8 (MXFP8 block scaling; aliases mx, fp8-mx)",
      name, DidYouMean(name, {"delayed", "current", "tensorwise", "mxfp8", "fp8-cs", "fp8-mx"})));
}

const char* Fp8RecipeName(Fp8Recipe r) {
  switch (r) {
    case Fp8Recipe::kDelayed: return "delayed";
    case Fp8Recipe::kCurrent: return "current";
    case Fp8Recipe::kMxfp8: return "mxfp8";
    case Fp8Recipe::kNvfp4: return "nvfp4";
  }
  return "?";
}

Result<MoeDispatcher> ParseMoeDispatcher(std::string_view name) {
  if (name == "alltoall" || name == "a2a") return MoeDispatcher::kAllToAll;
  if (name == "flex" || name == "deepep" || name == "hybridep") return MoeDispatcher::kFlex;
  return InvalidArgument(fmt::format(
      "unknown MoE token dispatcher '{}'{}: use alltoall (NCCL all-to-all; alias a2a) or flex (DeepEP or HybridEP; "
      "aliases deepep, hybridep)",
      name, DidYouMean(name, {"alltoall", "a2a", "flex", "deepep", "hybridep"})));
}

Result<CpComm> ParseCpComm(std::string_view name) {
  if (name == "p2p" || name == "ring") return CpComm::kP2P;
  if (name == "a2a" || name == "alltoall" || name == "ulysses") return CpComm::kAllToAll;
  return InvalidArgument(fmt::format(
      "unknown context-parallel exchange '{}'{}: use p2p (a K/V ring; alias ring) or a2a (Ulysses all-to-all; aliases "
      "alltoall, ulysses)",
      name, DidYouMean(name, {"p2p", "ring", "a2a", "alltoall", "ulysses"})));
}

const char* CpCommName(CpComm c) {
  switch (c) {
    case CpComm::kP2P: return "p2p";
    case CpComm::kAllToAll: return "a2a";
  }
  return "?";
}

Result<CrossEntropyImpl> ParseCrossEntropyImpl(std::string_view name) {
  if (name == "fused" || name == "native") return CrossEntropyImpl::kFused;
  if (name == "unfused") return CrossEntropyImpl::kUnfused;
  if (name == "online" || name == "te") return CrossEntropyImpl::kOnline;
  return InvalidArgument(fmt::format(
      "unknown cross-entropy implementation '{}'{}: use fused (Megatron-Core --cross-entropy-loss-fusion; alias "
      "native), unfused (Megatron-LM's default FP32 path) or online (single-pass kernels: "
      "--cross-entropy-fusion-impl te, Liger; alias te)",
      name, DidYouMean(name, {"fused", "native", "unfused", "online", "te"})));
}

const char* CrossEntropyImplName(CrossEntropyImpl c) {
  switch (c) {
    case CrossEntropyImpl::kFused: return "fused";
    case CrossEntropyImpl::kUnfused: return "unfused";
    case CrossEntropyImpl::kOnline: return "online";
  }
  return "?";
}

const char* MoeDispatcherName(MoeDispatcher d) {
  switch (d) {
    case MoeDispatcher::kAllToAll: return "alltoall";
    case MoeDispatcher::kFlex: return "flex";
  }
  return "?";
}

Result<CudaGraphs> ParseCudaGraphs(std::string_view name) {
  if (name == "none") return CudaGraphs::kNone;
  if (name == "partial") return CudaGraphs::kPartial;
  if (name == "full" || name == "full_iteration" || name == "full-iteration") return CudaGraphs::kFull;
  return InvalidArgument(fmt::format(
      "unknown CUDA graph setting '{}'{}: use none, partial (per-layer graphs of some modules) or full (the whole "
      "iteration; alias full_iteration)",
      name, DidYouMean(name, {"none", "partial", "full", "full_iteration"})));
}

const char* CudaGraphsName(CudaGraphs g) {
  switch (g) {
    case CudaGraphs::kNone: return "none";
    case CudaGraphs::kPartial: return "partial";
    case CudaGraphs::kFull: return "full";
  }
  return "?";
}

Status CheckTokensAndPrice(double tokens, double price_per_gpu_hour) {
  // Upper bounds far past any real job (the largest published pretraining corpora are a few times 1e13 tokens), so
  // that a typo's exponent gives an error, not a time to train with hundreds of digits.
  constexpr double kMaxTokens = 1e18, kMaxPrice = 1e6;
  if (!(tokens >= 0 && tokens <= kMaxTokens))
    return InvalidArgument(fmt::format("--tokens must be a number of tokens from 0 to {:g}, got {:g}", kMaxTokens, tokens));
  if (!(price_per_gpu_hour >= 0 && price_per_gpu_hour <= kMaxPrice))
    return InvalidArgument(fmt::format("--price-per-gpu-hour must be a USD amount from 0 to {:g}, got {:g}", kMaxPrice,
                                       price_per_gpu_hour));
  return Status::Ok();
}

double Fp8WeightCacheBytesPerParam(const GpuSpec& gpu, Fp8Recipe recipe, bool fp8_params) {
  // Both layouts, less the row-wise one that NVFP4 parameters are themselves.
  if (recipe == Fp8Recipe::kNvfp4) return kNvfp4BytesPerElement * (fp8_params ? 1 : 2);
  const double layouts = recipe == Fp8Recipe::kMxfp8 ? 2 * (1 + 1.0 / 32) : perf_detail::NonTnFp8Gemms(gpu) ? 1 : 2;
  return layouts - (fp8_params ? 1 : 0);
}

Status CheckFp8Training(const GpuSpec& gpu, Fp8Recipe r) {
  if (r == Fp8Recipe::kNvfp4) {
    const std::string cc = gpu.compute_capability ? gpu.compute_capability->value : std::string();
    if (gpu.PeakFlops(Precision::kFp4).value_or(0) > 0 && !cc.empty() && std::atof(cc.c_str()) >= 10.0)
      return Status::Ok();
    return InvalidArgument(fmt::format(
        "--dtype fp4 (NVFP4 training) needs Blackwell's FP4 tensor cores (compute capability 10.0 or newer with an "
        "FP4 peak in the catalog); {} has {}; use --dtype fp8",
        gpu.id, cc.empty() ? std::string("no known compute capability") : "sm " + cc +
                    (gpu.PeakFlops(Precision::kFp4).value_or(0) > 0 ? "" : " and no FP4 peak")));
  }
  if (!gpu.Supports(Precision::kFp8))
    return InvalidArgument(fmt::format("{} has no FP8 support (FP8 needs Hopper, Ada or newer)", gpu.id));
  if (r != Fp8Recipe::kMxfp8) return Status::Ok();
  const std::string cc = gpu.compute_capability ? gpu.compute_capability->value : std::string();
  if (!cc.empty() && std::atof(cc.c_str()) >= 10.0) return Status::Ok();
  return InvalidArgument(fmt::format(
      "the mxfp8 recipe needs Blackwell tensor cores (compute capability 10.0 or newer); {} is {}; use "
      "--fp8-recipe delayed or current", gpu.id, cc.empty() ? std::string("of unknown compute capability") : "sm " + cc));
}

Result<Precision> ParseTrainDtype(std::string_view name) {
  if (name == "bf16") return Precision::kBf16;
  if (name == "fp16") return Precision::kFp16;
  if (name == "fp8") return Precision::kFp8;
  if (name == "fp4" || name == "nvfp4") return Precision::kFp4;
  return InvalidArgument(fmt::format("unknown training dtype '{}' (valid: bf16, fp16, fp8, fp4){}", name,
                                     DidYouMean(name, {"bf16", "fp16", "fp8", "fp4", "nvfp4"})));
}

Result<DecodeAttention> ParseDecodeAttention(std::string_view name) {
  if (name == "grouped" || name == "xqa") return DecodeAttention::kGrouped;
  if (name == "per-head" || name == "mmha") return DecodeAttention::kPerHead;
  return InvalidArgument(fmt::format(
      "unknown decode attention kernel '{}': use grouped (each KV head read once; alias xqa) or per-head (one "
      "thread block per query head; alias mmha)",
      name));
}

const char* DecodeAttentionName(DecodeAttention a) {
  return a == DecodeAttention::kPerHead ? "per-head" : "grouped";
}

Result<MoeImpl> ParseMoeImpl(std::string_view name) {
  if (name == "fused") return MoeImpl::kFused;
  if (name == "indexed") return MoeImpl::kIndexed;
  return InvalidArgument(fmt::format("unknown MoE implementation '{}': use fused (a fused MoE operator: vLLM, SGLang, "
                                     "TensorRT-LLM) or indexed (expert weights indexed per token: gpt-fast){}",
                                     name, DidYouMean(name, std::vector<std::string>{"fused", "indexed"})));
}

const char* MoeImplName(MoeImpl i) { return i == MoeImpl::kIndexed ? "indexed" : "fused"; }

Result<double> InstructionIssueRate(const GpuSpec& gpu) {
  if (gpu.vendor != "nvidia" || !gpu.compute_capability)
    return InvalidArgument(fmt::format(
        "{}: the instruction-issue model (4 warp schedulers x 32 lanes per SM) is for NVIDIA GPUs with a compute "
        "capability in the catalog", gpu.id));
  const auto fp32 = gpu.PeakFlops(Precision::kFp32);
  if (!gpu.sm_count || !fp32)
    return InvalidArgument(fmt::format("{}: the catalog needs the SM count and the FP32 peak to derive the SM clock", gpu.id));
  const std::string& cc = gpu.compute_capability->value;
  const bool lanes64 = cc.rfind("7.", 0) == 0 || cc == "8.0";
  const double fp32_lanes = lanes64 ? 64 : 128;
  const double clock_hz = *fp32 / (2 * fp32_lanes * gpu.sm_count->value);
  return gpu.sm_count->value * 128.0 * clock_hz;
}

const char* BoundName(Bound b) {
  switch (b) {
    case Bound::kCompute: return "compute";
    case Bound::kMemory: return "memory";
    case Bound::kLatency: return "latency";
    case Bound::kCommunication: return "communication";
    case Bound::kIssue: return "issue";
    case Bound::kCalibrated: return "calibrated";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------
// Efficiency data.

namespace {
template <typename T>
std::string Note(const Sourced<T>& v) {
  return v.note.empty() ? "" : " (" + v.note + ")";
}
}  // namespace

Result<Efficiency> ParseEfficiencyToml(std::string_view text, std::string_view file_sv, std::string_view gpu_id) {
  const std::string file(file_sv);
  SUANLI_ASSIGN_OR_RETURN(toml::table doc, detail::ParseTomlText(text, file));
  std::map<std::string, std::string> sources;
  if (const toml::table* st = doc["sources"].as_table()) {
    for (const auto& [k, v] : *st) sources[std::string(k.str())] = v.value_or(std::string());
  } else {
    return ParseError(file + ": missing [sources]");
  }
  Efficiency e;
  auto apply = [&](const toml::table& t, const std::string& path) -> Status {
    detail::TableReader r(t, file, path, &sources);
    auto frac = [&](const char* key, double* out, double lo, double hi, const char* hint = "") -> Status {
      SUANLI_ASSIGN_OR_RETURN(auto v, r.OptSourcedNumber(key));
      if (v) {
        if (!(v->value >= lo && v->value <= hi))  // NaN too
          return ParseError(fmt::format("{}: {} is outside {}..{}{}", r.Where(key), v->value, lo, hi, hint));
        *out = v->value;
        perf_detail::RecordSource(e.sources, key, fmt::format("{} = {:.3g}: {}{}", key, v->value, v->source, Note(*v)));
      }
      return Status::Ok();
    };
    SUANLI_RETURN_IF_ERROR(frac("gemm", &e.gemm, 0.05, 1.0));
    SUANLI_RETURN_IF_ERROR(frac("gemm_fp8", &e.gemm_fp8, 0.05, 1.0));
    SUANLI_RETURN_IF_ERROR(frac("gemm_fp4", &e.gemm_fp4, 0.05, 1.0));
    SUANLI_RETURN_IF_ERROR(frac("gemm_fp8_precise", &e.gemm_fp8_precise, 0.3, 1.0,
                                " (the FP32-accumulation rate over the fast-accumulation rate of the same GEMM)"));
    SUANLI_RETURN_IF_ERROR(frac("memory", &e.memory, 0.05, 1.0));
    SUANLI_RETURN_IF_ERROR(frac("attention", &e.attention, 0.05, 1.0));
    SUANLI_RETURN_IF_ERROR(frac("attention_fp8", &e.attention_fp8, 1.0, 3.0,
                                " (FP8 attention's forward and backward speed-up over the 16-bit kernel)"));
    SUANLI_ASSIGN_OR_RETURN(auto fp8_seq, r.OptSourcedCurve("attention_fp8_seq", "seq", "speedup"));
    if (fp8_seq) {
      for (const auto& [len, speedup] : fp8_seq->value) {
        if (!(speedup >= 0.3 && speedup <= 3.0))
          return ParseError(fmt::format("{}: speed-up {} at {} tokens is outside 0.3..3 (FP8 attention's forward and "
                                        "backward speed-up over the 16-bit kernel)",
                                        r.Where("attention_fp8_seq"), speedup, len));
      }
      e.attention_fp8_by_seq = fp8_seq->value;
      std::string pts;
      for (const auto& [len, speedup] : fp8_seq->value)
        pts += fmt::format("{}{:.0f}: {:.3g}", pts.empty() ? "" : ", ", len, speedup);
      perf_detail::RecordSource(e.sources, "attention_fp8_seq",
                                fmt::format("attention_fp8_seq = {}: {}{}", pts, fp8_seq->source, Note(*fp8_seq)));
    }
    SUANLI_RETURN_IF_ERROR(frac("link", &e.link, 0.05, 1.0,
                                "; a bus bandwidth above the wire rate comes from an in-switch all-reduce (NVLS) and "
                                "belongs in link_allreduce"));
    SUANLI_RETURN_IF_ERROR(frac("link_allreduce", &e.link_allreduce, 0.05, 2.0));
    SUANLI_RETURN_IF_ERROR(frac("network", &e.network, 0.05, 1.0));
    SUANLI_RETURN_IF_ERROR(frac("overlap_slowdown", &e.overlap_slowdown, 0.0, 1.0));
    SUANLI_RETURN_IF_ERROR(frac("tp_overlap_hidden", &e.tp_overlap_hidden, 0.0, 1.0));
    SUANLI_RETURN_IF_ERROR(frac("gpu_speed_spread", &e.gpu_speed_spread, 0.0, 0.2));
    SUANLI_RETURN_IF_ERROR(frac("host_d2h", &e.host_d2h, 0.05, 1.0));
    SUANLI_RETURN_IF_ERROR(frac("host_h2d", &e.host_h2d, 0.05, 1.0));
    SUANLI_ASSIGN_OR_RETURN(auto kl, r.OptQuantity("kernel_launch", Dimension::kSeconds));
    if (kl) {
      if (kl->value > 1e-3) return ParseError(r.Where("kernel_launch") + " must be below 1 ms");
      e.kernel_launch_s = kl->value;
      perf_detail::RecordSource(e.sources, "kernel_launch", fmt::format("kernel_launch = {}: {}{}",
                                                                        FormatSeconds(kl->value), kl->source, Note(*kl)));
    }
    return r.CheckNoUnknownKeys();
  };
  if (const toml::table* d = doc["default"].as_table()) SUANLI_RETURN_IF_ERROR(apply(*d, "default"));
  if (const toml::table* g = doc["gpu"].as_table()) {
    if (const toml::table* mine = (*g)[gpu_id].as_table()) SUANLI_RETURN_IF_ERROR(apply(*mine, "gpu." + std::string(gpu_id)));
  }
  // Where a curve is measured it sets the FP8 attention speed-up and the single figure is its 8K reading: a table that
  // changes one without the other would have the figure silently ignored.
  if (!e.attention_fp8_by_seq.empty() && e.attention_fp8 > 0) {
    Efficiency curve_only;
    curve_only.attention_fp8_by_seq = e.attention_fp8_by_seq;
    const double at_8k = perf_detail::Fp8AttentionSpeedup(curve_only, 8192);
    if (std::fabs(at_8k - e.attention_fp8) > 0.005)
      return ParseError(fmt::format(
          "{}: for {}, attention_fp8 = {} disagrees with attention_fp8_seq, which reads {:.3f} at 8,192 tokens; the "
          "curve sets the speed-up at every length and attention_fp8 is its 8K figure, so change both or leave "
          "attention_fp8 out",
          file, gpu_id, e.attention_fp8, at_8k));
  }
  if (const toml::table* da = doc["decode_attention"].as_table()) {
    detail::TableReader r(*da, file, "decode_attention", &sources);
    SUANLI_ASSIGN_OR_RETURN(auto v, r.OptSourcedNumber("per_head_instructions"));
    if (v) {
      if (v->value < 1 || v->value > 100)
        return ParseError(fmt::format("{}: {} is outside 1..100", r.Where("per_head_instructions"), v->value));
      e.per_head_decode_instructions = v->value;
      perf_detail::RecordSource(e.sources, "decode_attention.per_head_instructions",
                                fmt::format("decode_attention.per_head_instructions = {:.3g}: {}{}", v->value,
                                            v->source, Note(*v)));
    }
    SUANLI_RETURN_IF_ERROR(r.CheckNoUnknownKeys());
  }
  if (const toml::table* ef = doc["eager_fsdp"].as_table()) {
    detail::TableReader r(*ef, file, "eager_fsdp", &sources);
    SUANLI_ASSIGN_OR_RETURN(auto v, r.OptQuantity("host_per_layer", Dimension::kSeconds));
    if (v) {
      if (v->value < 0 || v->value > 0.1)
        return ParseError(fmt::format("{}: {} s is outside 0..0.1 s", r.Where("host_per_layer"), v->value));
      e.eager_fsdp_host_per_layer_s = v->value;
      perf_detail::RecordSource(e.sources, "eager_fsdp.host_per_layer",
                                fmt::format("eager_fsdp.host_per_layer = {:.3g} s: {}{}", v->value, v->source, Note(*v)));
    }
    SUANLI_RETURN_IF_ERROR(r.CheckNoUnknownKeys());
  }
  if (const toml::table* ms = doc["moe_serving"].as_table()) {
    detail::TableReader r(*ms, file, "moe_serving", &sources);
    SUANLI_ASSIGN_OR_RETURN(auto v, r.OptQuantity("fixed", Dimension::kSeconds));
    if (v) {
      if (v->value < 0 || v->value > 1e-3)
        return ParseError(fmt::format("{}: {} s is outside 0..1 ms", r.Where("fixed"), v->value));
      e.moe_serving_fixed_s = v->value;
      perf_detail::RecordSource(e.sources, "moe_serving.fixed",
                                fmt::format("moe_serving.fixed = {:.3g} s: {}{}", v->value, v->source, Note(*v)));
    }
    SUANLI_RETURN_IF_ERROR(r.CheckNoUnknownKeys());
  }
  if (const toml::table* sa = doc["serving_attention"].as_table()) {
    detail::TableReader r(*sa, file, "serving_attention", &sources);
    SUANLI_ASSIGN_OR_RETURN(auto v, r.OptQuantity("prefill_fixed", Dimension::kSeconds));
    if (v) {
      if (v->value < 0 || v->value > 1e-3)
        return ParseError(fmt::format("{}: {} s is outside 0..1 ms", r.Where("prefill_fixed"), v->value));
      e.serving_prefill_attention_fixed_s = v->value;
      perf_detail::RecordSource(
          e.sources, "serving_attention.prefill_fixed",
          fmt::format("serving_attention.prefill_fixed = {:.3g} s: {}{}", v->value, v->source, Note(*v)));
    }
    SUANLI_RETURN_IF_ERROR(r.CheckNoUnknownKeys());
  }
  if (const toml::table* oa = doc["oneshot_allreduce"].as_table()) {
    detail::TableReader r(*oa, file, "oneshot_allreduce", &sources);
    for (auto [key, out] : {std::pair{"latency", &e.oneshot_allreduce_latency_s},
                            std::pair{"per_peer", &e.oneshot_allreduce_per_peer_s}}) {
      SUANLI_ASSIGN_OR_RETURN(auto v, r.OptQuantity(key, Dimension::kSeconds));
      if (!v) continue;
      if (v->value < 0 || v->value > 1e-4)
        return ParseError(fmt::format("{}: {} s is outside 0..100 us", r.Where(key), v->value));
      *out = v->value;
      perf_detail::RecordSource(e.sources, fmt::format("oneshot_allreduce.{}", key),
                                fmt::format("oneshot_allreduce.{} = {:.3g} us: {}{}", key, v->value * 1e6, v->source,
                                            Note(*v)));
    }
    SUANLI_ASSIGN_OR_RETURN(auto l, r.OptSourcedNumber("link"));
    if (l) {
      if (l->value < 0.01 || l->value > 1)
        return ParseError(fmt::format("{}: {} is outside 0.01..1 (a fraction of the link's bandwidth per direction)",
                                      r.Where("link"), l->value));
      e.oneshot_allreduce_link = l->value;
      perf_detail::RecordSource(e.sources, "oneshot_allreduce.link",
                                fmt::format("oneshot_allreduce.link = {:.3g}: {}{}", l->value, l->source, Note(*l)));
    }
    SUANLI_RETURN_IF_ERROR(r.CheckNoUnknownKeys());
  }
  if (const toml::table* mt = doc["moe_training"].as_table()) {
    detail::TableReader r(*mt, file, "moe_training", &sources);
    for (auto [key, field] : {std::pair{"layer_time_eager", &e.moe_layer_time_eager},
                              std::pair{"layer_time_full_graph", &e.moe_layer_time_full_graph}}) {
      SUANLI_ASSIGN_OR_RETURN(auto v, r.OptSourcedNumber(key));
      if (!v) continue;
      if (v->value < 1 || v->value > 5)
        return ParseError(fmt::format("{}: {} is outside 1..5 (a multiple of the operators' time)", r.Where(key), v->value));
      *field = v->value;
      perf_detail::RecordSource(e.sources, fmt::format("moe_training.{}", key),
                                fmt::format("moe_training.{} = {:.3g}: {}{}", key, v->value, v->source, Note(*v)));
    }
    SUANLI_RETURN_IF_ERROR(r.CheckNoUnknownKeys());
  }
  if (const toml::table* dq = doc["dequant"].as_table()) {
    detail::TableReader r(*dq, file, "dequant", &sources);
    for (auto [key, out] : {std::pair{"int8", &e.dequant_ops_int8}, {"int4", &e.dequant_ops_int4},
                            {"nf4", &e.dequant_ops_nf4}, {"gguf", &e.dequant_ops_gguf}}) {
      SUANLI_ASSIGN_OR_RETURN(auto v, r.OptSourcedNumber(key));
      if (!v) continue;
      *out = v->value;
      perf_detail::RecordSource(e.sources, fmt::format("dequant.{}", key),
                                fmt::format("dequant.{} = {:.3g} instructions per weight: {}{}", key, v->value,
                                            v->source, Note(*v)));
    }
    SUANLI_RETURN_IF_ERROR(r.CheckNoUnknownKeys());
  }
  return e;
}

Result<Efficiency> LoadEfficiency(std::string_view gpu_id) {
  const auto* f = detail::FindEmbeddedFile("data/efficiency.toml");
  if (!f) return Internal("data/efficiency.toml is not embedded");
  return ParseEfficiencyToml(f->content, "embedded:data/efficiency.toml", gpu_id);
}

// ---------------------------------------------------------------------------------------
// Cluster and collectives.

Result<Cluster> MakeCluster(const HardwareCatalog& hw, const GpuSpec& gpu, int gpus_per_node,
                            std::string_view inter_node, int nics_per_node) {
  if (gpus_per_node < 1 || gpus_per_node > 1024)
    return InvalidArgument(fmt::format("--gpus-per-node must be between 1 and 1024, got {}", gpus_per_node));
  if (nics_per_node < 0 || nics_per_node > 1024)
    return InvalidArgument(fmt::format(
        "--nics-per-node must be between 1 and 1024 (omit it for one NIC per GPU), got {}", nics_per_node));
  Cluster c;
  c.gpu = &gpu;
  c.gpus_per_node = gpus_per_node;
  if (gpu.link_bandwidth_per_direction_bytes_per_s && (!gpu.link_peers || gpus_per_node <= gpu.link_peers->value)) {
    c.intra_bw_per_dir = gpu.link_bandwidth_per_direction_bytes_per_s->value;
    c.intra_name = gpu.link_kind ? gpu.link_kind->value : "gpu link";
    if (gpu.link_kind) {
      auto ic = hw.FindInterconnect(gpu.link_kind->value);
      if (ic.ok() && (*ic)->latency_s) c.intra_latency_s = (*ic)->latency_s->value;
      SUANLI_RETURN_IF_ERROR(BundledNcclCurves().status());  // a broken bundled file is an error, not the cost model
      c.nccl_curve = NcclCurveFor(gpu.link_kind->value);
    }
  } else {
    // No GPU link (or more GPUs than a bridge joins): peer traffic crosses PCIe.
    const int gen = gpu.pcie_generation ? gpu.pcie_generation->value : 4;
    auto ic = hw.FindInterconnect(fmt::format("pcie-gen{}-x16", gen));
    if (!ic.ok()) return ic.status();
    c.intra_bw_per_dir = (*ic)->bandwidth_per_direction_bytes_per_s.value;
    if ((*ic)->latency_s) c.intra_latency_s = (*ic)->latency_s->value;
    c.intra_name = (*ic)->id;
    c.intra_nvlink = false;
  }
  if (auto host = HostBandwidthPerDirection(gpu)) {
    c.host_bw_per_dir = host->value;
    c.host_link_name = gpu.host_link_kind ? gpu.host_link_kind->value
                                          : fmt::format("PCIe Gen{} x{}", gpu.pcie_generation->value,
                                                        gpu.pcie_lanes ? gpu.pcie_lanes->value : 16);
  }
  auto net = hw.FindInterconnect(inter_node);
  if (!net.ok()) return net.status();
  const int nics = nics_per_node > 0 ? nics_per_node : gpus_per_node;
  c.inter_bw_per_gpu = (*net)->bandwidth_per_direction_bytes_per_s.value * nics / gpus_per_node;
  if ((*net)->latency_s) c.inter_latency_s = (*net)->latency_s->value;
  c.inter_name = fmt::format("{} x{} per node", (*net)->id, nics);
  c.inter_id = (*net)->id;
  c.nic_bw_per_dir = (*net)->bandwidth_per_direction_bytes_per_s.value;
  c.nics_per_node = nics;
  return c;
}

NetworkSummary DescribeNetwork(const Cluster& c, const Efficiency& e) {
  NetworkSummary n;
  n.intra_name = c.intra_name;
  n.intra_nvlink = c.intra_nvlink;
  n.intra_bytes_per_s = c.intra_bw_per_dir;
  // What the collectives use: a group of the whole node, and (below) a ring of one rank per node.
  const NcclGroup node = GroupNccl(c, e, c.gpus_per_node, 1, Collective::kAllReduce);
  n.intra_busbw_bytes_per_s = node.busbw;
  n.intra_nvls_busbw_bytes_per_s = node.nvls_busbw;
  n.intra_latency_s = c.intra_latency_s;
  n.fabric = c.inter_id;
  n.nic_bytes_per_s = c.nic_bw_per_dir;
  n.nics_per_node = c.nics_per_node;
  n.gpus_per_node = c.gpus_per_node;
  n.inter_bytes_per_s_per_gpu = c.inter_bw_per_gpu;
  n.inter_busbw_bytes_per_s_per_gpu = GroupBusBandwidth(c, e, 2, c.gpus_per_node, Collective::kRing);
  n.inter_latency_s = c.inter_latency_s;
  return n;
}

double AllToAllTime(double bytes, int n, double busbw, double alpha) {
  if (n <= 1 || bytes <= 0) return 0;
  return double(n - 1) / n * bytes / busbw + (n - 1) * alpha;
}
double P2PTime(double bytes, double bw, double alpha) { return bytes <= 0 ? 0 : bytes / bw + alpha; }

namespace {
CurveOp CurveOpOf(NcclOp op) {
  switch (op) {
    case NcclOp::kAllReduce: return CurveOp::kAllReduce;
    case NcclOp::kAllGather: return CurveOp::kAllGather;
    case NcclOp::kReduceScatter: return CurveOp::kReduceScatter;
  }
  return CurveOp::kAllReduce;
}
int RanksPerNode(const Cluster& c, int n, int stride) {
  if (stride >= c.gpus_per_node) return 1;
  return std::max(1, std::min(n, c.gpus_per_node / std::max(1, stride)));
}

// NCCL src/graph/tuning.cc @01afd20a. Latencies in microseconds, indexed [algorithm: tree, ring][protocol:
// LL, LL128, Simple]; the per-hop ones also by the hardware of the hop [NVLink, PCIe, network].
constexpr double kNcclBaseLatencyUs[2][3] = {{4.4, 4.4, 0}, {3.6, 10.0, 8.4}};
constexpr double kNcclHopLatencyUs[3][2][3] = {{{.52, 1.2, 28}, {.47, 1.9, 3.4}},
                                               {{1.0, 1.9, 28}, {1.0, 2.5, 5.7}},
                                               {{5.0, 8.5, 50}, {2.7, 4.0, 9.6}}};
// Trees' bandwidth by message size, powers of two from 64 B to 128 MB, per protocol.
constexpr double kNcclTreeCorrection[3][22] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .5, .6, .6, .7, .7, .8, .9, .9, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .5, .5, .6, .6, .7, .8, .9}};
constexpr const char* kNcclProtocol[3] = {"LL", "LL128", "Simple"};
constexpr int kTree = 0, kRing = 1, kLL = 0, kLL128 = 1, kSimple = 2, kNet = 2;
}  // namespace

NcclChoice NcclCollective(NcclOp op, double bytes, const NcclGroup& g) {
  NcclChoice best;
  if (g.ranks <= 1 || !(bytes > 0)) return best;
  best.time_s = std::numeric_limits<double>::infinity();  // also the answer without a usable bus bandwidth
  if (!(g.busbw > 0)) return best;
  const auto consider = [&](double latency_us, double algbw, const char* algorithm, int protocol) {
    const double t = latency_us * 1e-6 + bytes / algbw;
    if (t < best.time_s) best = NcclChoice{t, algorithm, kNcclProtocol[protocol]};
  };
  const int n = g.ranks, nodes = std::clamp(g.nodes, 1, n), ppn = n / nodes;
  const bool all_reduce = op == NcclOp::kAllReduce;
  const int steps = all_reduce ? 2 * (n - 1) : n - 1;
  const int inter_steps = all_reduce ? 2 * (nodes - 1) : nodes - 1;
  const int hw = g.nvlink ? 0 : 1;
  const double chunks = std::floor(bytes / 64);
  const int log_size = chunks >= 1 ? int(std::floor(std::log2(chunks))) : 0;
  const int tree_levels = int(std::floor(std::log2(double(nodes))));
  const auto hop = [&](int hardware, int algorithm, int protocol) {
    double lat = kNcclHopLatencyUs[hardware][algorithm][protocol];
    if (hardware != kNet && nodes > 1 && protocol == kLL) lat *= 1.8;
    return lat;
  };
  for (int p = kLL; p <= kSimple; ++p) {
    if (p == kLL128 && !g.nvlink) continue;  // NCCL enables LL128 only over NVLink
    // Ring: every step one hop, the inter-node ones over the network.
    double bw = g.busbw;
    if (p == kLL) bw *= nodes > 1 || all_reduce ? 1.0 / 4 : 1.0 / 3;
    if (p == kLL128) bw *= ppn < 2 ? 0.7 : 0.92;
    double lat = kNcclBaseLatencyUs[kRing][p] + (steps - inter_steps) * hop(hw, kRing, p) +
                 inter_steps * hop(kNet, kRing, p);
    if (p == kSimple && nodes > 1 && all_reduce && bytes >= n / 16.0 * 65536) lat *= 1.9;  // ring plateau
    consider(lat, bw * n / steps, "ring", p);
    if (p == kSimple && all_reduce && g.nvls_busbw > 0) consider(lat, g.nvls_busbw * n / steps, "nvls", p);
    if (!all_reduce) continue;
    // Tree (all-reduce only): a chain inside each node, a double binary tree across nodes; algbw = busbw / 2.
    double tbw = std::min(g.busbw * 0.9, nodes > 2 ? 80e9 : 110e9);
    if (p == kLL) tbw /= 3.8;
    if (p == kLL128) tbw *= nodes == 1 ? 7.0 / 9 : 0.915;
    if (log_size < 22) tbw *= kNcclTreeCorrection[p][log_size];
    const double tlat = kNcclBaseLatencyUs[kTree][p] +
                        2 * ((ppn - 1) * hop(hw, kTree, p) + tree_levels * hop(kNet, kTree, p));
    consider(tlat, tbw * 0.5, "tree", p);
  }
  return best;
}

double GroupBusBandwidth(const Cluster& c, const Efficiency& e, int n, int stride, Collective kind) {
  const bool in_switch = kind == Collective::kAllReduce && c.nvls && e.link_allreduce > 0;
  const double intra = c.intra_bw_per_dir * (in_switch ? e.link_allreduce : e.link);
  const int k = RanksPerNode(c, n, stride);
  if (n <= k) return intra;
  return std::min(intra, k * c.inter_bw_per_gpu * e.network);
}

double GroupLatency(const Cluster& c, int n, int stride) {
  return n <= RanksPerNode(c, n, stride) ? c.intra_latency_s : c.inter_latency_s;
}

NcclGroup GroupNccl(const Cluster& c, const Efficiency& e, int n, int stride, Collective kind) {
  NcclGroup g;
  g.ranks = std::max(1, n);
  const int k = RanksPerNode(c, g.ranks, stride);
  g.nodes = (g.ranks + k - 1) / k;
  g.nvlink = c.intra_nvlink;
  g.busbw = GroupBusBandwidth(c, e, g.ranks, stride, Collective::kRing);
  if (kind == Collective::kAllReduce) {
    const double in_switch = GroupBusBandwidth(c, e, g.ranks, stride, Collective::kAllReduce);
    if (in_switch > g.busbw) g.nvls_busbw = in_switch;
  }
  return g;
}

const char* NcclOpName(NcclOp op) {
  switch (op) {
    case NcclOp::kAllReduce: return "all-reduce";
    case NcclOp::kAllGather: return "all-gather";
    case NcclOp::kReduceScatter: return "reduce-scatter";
  }
  return "collective";
}

CollectiveCall DescribeCollective(const Cluster& c, const Efficiency& e, NcclOp op, double bytes, int n, int stride,
                                  std::string what, std::string runs) {
  CollectiveCall call;
  call.what = std::move(what);
  call.runs = std::move(runs);
  call.op = op;
  call.bytes = bytes;
  call.ranks = std::max(1, n);
  if (n <= 1 || !(bytes > 0)) return call;
  const NcclGroup g = GroupNccl(c, e, n, stride, op == NcclOp::kAllReduce ? Collective::kAllReduce : Collective::kRing);
  const NcclChoice ch = NcclCollective(op, bytes, g);
  call.nodes = g.nodes;
  call.algorithm = ch.algorithm;
  call.protocol = ch.protocol;
  call.time_s = ch.time_s;
  if (const double t = g.nodes == 1 ? MeasuredCollectiveTime(c, e, CurveOpOf(op), bytes, n) : -1; t > 0) {
    call.algorithm = "measured";
    call.protocol = op == NcclOp::kAllReduce && c.nvls && e.link_allreduce > 0 ? "nccl-tests" : "nccl-tests ring";
    call.time_s = t;
  }
  if (call.time_s > 0 && std::isfinite(call.time_s)) {
    call.algbw_bytes_per_s = bytes / call.time_s;
    const double factor = op == NcclOp::kAllReduce ? 2.0 * (n - 1) / n : double(n - 1) / n;
    call.busbw_bytes_per_s = call.algbw_bytes_per_s * factor;
  }
  return call;
}

double GroupCollectiveTime(const Cluster& c, const Efficiency& e, NcclOp op, double bytes, int n, int stride) {
  if (n <= 1 || !(bytes > 0)) return 0;
  const auto kind = op == NcclOp::kAllReduce ? Collective::kAllReduce : Collective::kRing;
  const NcclGroup g = GroupNccl(c, e, n, stride, kind);
  // Inside one NVLink domain with measured curves: nccl-tests' times (docs/methodology.md §7); elsewhere the cost model.
  if (g.nodes == 1)
    if (const double t = MeasuredCollectiveTime(c, e, CurveOpOf(op), bytes, n); t > 0) return t;
  return NcclCollective(op, bytes, g).time_s;
}

ServingAllReduce ServingAllReduceTime(const Cluster& c, const Efficiency& e, double bytes, int n) {
  const double nccl = GroupCollectiveTime(c, e, NcclOp::kAllReduce, bytes, n, 1);
  if (n <= 1 || !(bytes > 0) || !c.intra_nvlink || n > c.gpus_per_node) return {nccl, false};
  const double peers = n - 1;
  const double oneshot = e.oneshot_allreduce_latency_s + e.oneshot_allreduce_per_peer_s * peers +
                         peers * bytes / (c.intra_bw_per_dir * e.oneshot_allreduce_link);
  return oneshot < nccl ? ServingAllReduce{oneshot, true} : ServingAllReduce{nccl, false};
}

double GroupAllToAllTime(const Cluster& c, const Efficiency& e, double bytes, int n, int stride) {
  if (n <= 1 || bytes <= 0) return 0;
  const double intra = c.intra_bw_per_dir * e.link;
  const int k = RanksPerNode(c, n, stride);
  if (n <= k) {
    if (const double t = MeasuredCollectiveTime(c, e, CurveOp::kAllToAll, bytes, n); t > 0) return t;
    return AllToAllTime(bytes, n, intra, c.intra_latency_s);
  }
  const double off_node = bytes * double(n - k) / n / (c.inter_bw_per_gpu * e.network);
  const double on_node = bytes * double(k - 1) / n / intra;
  return std::max(off_node, on_node) + (n - 1) * c.inter_latency_s;
}

double ExpertGroupHitProbability(int experts, int k, int groups) {
  if (experts <= 0 || k <= 0 || groups <= 1) return 1;
  const double per_group = double(experts) / groups;
  // P(no expert of the group among the k) = prod_i (E - E/g - i) / (E - i).
  double miss = 1;
  for (int i = 0; i < k && miss > 0; ++i) miss *= std::max(0.0, (experts - per_group - i) / (experts - i));
  return 1 - miss;
}

namespace {
// Copies of one token under the flex dispatcher: over NVLink to each other GPU of the group holding one of its
// experts (directly or, for a remote node, forwarded from the GPU that received it there), and over the network
// to each other node holding one.
struct FlexCopies {
  int nodes = 1;
  double nvlink = 0, network = 0;
};
FlexCopies FlexDispatchCopies(const Cluster& c, int experts, int k, int n, int stride) {
  FlexCopies f;
  const int r = RanksPerNode(c, n, stride);
  f.nodes = (n + r - 1) / r;
  f.nvlink = double(n - f.nodes) * ExpertGroupHitProbability(experts, k, n);
  f.network = double(f.nodes - 1) * ExpertGroupHitProbability(experts, k, f.nodes);
  return f;
}
}  // namespace

double FlexDispatchTime(const Cluster& c, const Efficiency& e, double token_bytes, int experts, int k, int n,
                        int stride) {
  if (n <= 1 || token_bytes <= 0) return 0;
  const FlexCopies f = FlexDispatchCopies(c, experts, k, n, stride);
  const double on_node = token_bytes * f.nvlink / (c.intra_bw_per_dir * e.link);
  if (f.nodes == 1) return on_node + (n - 1) * c.intra_latency_s;
  const double off_node = token_bytes * f.network / (c.inter_bw_per_gpu * e.network);
  return std::max(off_node, on_node) + (n - 1) * c.inter_latency_s;
}

// ---------------------------------------------------------------------------------------
// Operators.

double OverlapCost(double compute, double comm, double slowdown) {
  compute = std::max(0.0, compute);
  comm = std::max(0.0, comm);
  return std::max(comm, compute + slowdown * std::min(comm, compute)) - compute;
}

double ChunkedOverlapCost(double chunk_window, double gap, int chunks, double comm, double slowdown) {
  chunks = std::max(1, chunks);
  chunk_window = std::max(0.0, chunk_window);
  gap = std::max(0.0, gap);
  comm = std::max(0.0, comm);
  const double part = comm / chunks;
  double free = -std::numeric_limits<double>::infinity();
  for (int k = 0; k < chunks; ++k) free = std::max(free, k * gap - chunk_window) + part;
  const double left = std::max(0.0, free - (chunks - 1) * gap);
  return std::max(left, slowdown * (comm - left));
}

double RooflineTime(double t_compute, double t_memory) {
  // A smooth roofline: the p-norm of the two times. p = infinity is the ideal max() (perfect overlap
  // of loads and math); p = 1 is no overlap. Near the ridge point neither pipe saturates, and kernels
  // reach roughly 2^(-1/p) of the ideal roofline (docs/methodology.md §6.2).
  const double hi = std::max(t_compute, t_memory), lo = std::min(t_compute, t_memory);
  if (hi <= 0) return 0;
  // p = 1.5 without pow(): r^1.5 = r sqrt(r) and x^(2/3) = cbrt(x)^2 (the model calls this for every operator).
  static_assert(kRooflineP == 1.5);
  const double r = lo / hi, c = std::cbrt(1.0 + r * std::sqrt(r));
  return hi * c * c;
}

bool BandCoversGpu(const ErrorBand& band, std::string_view gpu_id) {
  for (const char* g : band.gpus)
    if (gpu_id == g) return true;
  return false;
}

RidgePoint RidgePointFor(const GpuSpec& gpu, const Efficiency& eff, Precision gemm_precision) {
  RidgePoint r;
  const double bw = gpu.memory_bandwidth_bytes_per_s.value;
  if (bw <= 0) return r;
  const bool low = (gemm_precision == Precision::kFp8 || gemm_precision == Precision::kFp4) &&
                   gpu.PeakFlops(gemm_precision).value_or(0) > 0;
  const Precision p = low ? gemm_precision : Precision::kBf16;
  const double peak = perf_detail::PeakFor(gpu, p);
  const double gemm = perf_detail::GemmEfficiencyFor(eff, p);
  r.precision = p == Precision::kFp4 ? "FP4" : p == Precision::kFp8 ? "FP8" : "16-bit";
  r.achievable_flops_per_byte = peak * gemm / (bw * eff.memory);
  r.datasheet_flops_per_byte = peak / bw;
  return r;
}

GemmTime EstimateGemm(double m, double n, double k, double batch, double elem_bytes, double peak, double gemm_eff,
                      const GpuSpec& gpu, const Efficiency& eff, double weight_elem_bytes) {
  if (weight_elem_bytes < 0) weight_elem_bytes = elem_bytes;
  GemmTime g;
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) return g;
  g.flops = 2 * m * n * k * batch;
  g.bytes = (m * k * elem_bytes + k * n * weight_elem_bytes + m * n * 2) * batch;  // 16-bit output
  const double sms = gpu.sm_count ? gpu.sm_count->value : 108;
  // Tile quantisation (padding to whole tiles) and wave quantisation (the last wave of CTAs
  // leaves SMs idle). Split-K raises the CTA count when the output is too small to fill the GPU.
  // Skinny GEMMs (decode, small batches) use short tiles: M pads to a power of two between 16 (the
  // tensor-core MMA height) and 128, not to a full 128-row tile.
  const double tile_m = std::clamp(std::exp2(std::ceil(std::log2(std::max(1.0, m)))), 16.0, kTileM);
  const double tm = std::ceil(m / tile_m), tn = std::ceil(n / kTileN);
  double tiles = tm * tn * batch;
  const double pad = (m * n) / (tm * tile_m * tn * kTileN);
  if (tiles < sms) tiles *= std::max(1.0, std::min(std::floor(sms / tiles), std::floor(k / 512)));
  const double waves = std::ceil(tiles / sms);
  const double wave_util = tiles / (waves * sms);
  g.utilisation = pad * wave_util;
  double t_compute = g.flops / (peak * gemm_eff * g.utilisation);
  if (m < 16) {
    // Matrix-vector kernels (batch-1 decode) run on the CUDA cores rather than pad M to the 16-row MMA.
    const double fp32 = gpu.PeakFlops(Precision::kFp32).value_or(0);
    if (fp32 > 0) t_compute = std::min(t_compute, g.flops / (fp32 * gemm_eff));
  }
  const double t_memory = g.bytes / (gpu.memory_bandwidth_bytes_per_s.value * eff.memory);
  g.bound = t_compute >= t_memory ? Bound::kCompute : Bound::kMemory;
  g.compute_s = t_compute;
  g.memory_s = t_memory;
  g.time_s = RooflineTime(t_compute, t_memory) + eff.kernel_launch_s;
  if (eff.kernel_launch_s > std::max(t_compute, t_memory)) g.bound = Bound::kLatency;
  return g;
}

namespace {
// The two gradient GEMMs of Y (M x N) = X (M x K) W (K x N), given its forward `fwd` (docs/methodology.md §8): dX = dY
// W^T and dW = X^T dY, each at the forward's compute term (its tiles and waves) divided by `rate` (FP8's FP32
// accumulation), over its own bytes: dX reads dY and W and writes 16-bit dX; dW reads X and dY and moves
// `wgrad_out_bytes` per weight element (the gradient buffer). `frozen`: the data gradient alone. GradientGemms gives
// the two apart (data gradient, weight gradient: 0 when frozen), GradientGemmsTime their sum.
std::pair<double, double> GradientGemms(const GemmTime& fwd, double M, double N, double K, double batch,
                                        double elem_bytes, double rate, double wgrad_out_bytes, bool frozen,
                                        const GpuSpec& gpu, const Efficiency& eff) {
  const double t_c = fwd.compute_s / rate, bw = gpu.memory_bandwidth_bytes_per_s.value * eff.memory, a = elem_bytes;
  const double dgrad = RooflineTime(t_c, (M * N * a + K * N * a + M * K * 2) * batch / bw) + eff.kernel_launch_s;
  const double wgrad =
      frozen ? 0.0
             : RooflineTime(t_c, (M * K * a + M * N * a + K * N * wgrad_out_bytes) * batch / bw) + eff.kernel_launch_s;
  return {dgrad, wgrad};
}
double GradientGemmsTime(const GemmTime& fwd, double M, double N, double K, double batch, double elem_bytes,
                         double rate, double wgrad_out_bytes, bool frozen, const GpuSpec& gpu, const Efficiency& eff) {
  const auto [dgrad, wgrad] = GradientGemms(fwd, M, N, K, batch, elem_bytes, rate, wgrad_out_bytes, frozen, gpu, eff);
  return dgrad + wgrad;
}

using perf_detail::LayerShape;
using perf_detail::PeakFor;
using perf_detail::Shape;

// Accumulates operators of one micro-batch on one GPU.
struct OpList {
  std::vector<OpCost> ops;
  std::vector<CollectiveCall> collectives;
  void Add(std::string name, std::string phase, double flops, double bytes, double time, double count, Bound b) {
    ops.push_back(OpCost{std::move(name), std::move(phase), flops, bytes, time, count, b});
  }
  double Time(const char* phase = nullptr) const {
    double t = 0;
    for (const auto& o : ops)
      if (!phase || o.phase == phase) t += o.time_s * o.count;
    return t;
  }
};

struct PassTimes {
  double fwd = 0, bwd = 0, recompute = 0;   // compute, one layer, one micro-batch
  double tp_comm = 0;                        // TP communication per layer per micro-batch (fwd+bwd+recompute)
  double ep_comm = 0, cp_comm = 0;
  double cp_hidden = 0;                      // the CP ring's time hidden under attention (fwd+bwd)
  double fwd_flops = 0, bwd_flops = 0, recompute_flops = 0;
  double fp8_cast_fwd = 0, fp8_cast_bwd = 0;  // FP8 training: cast + transpose of GEMM inputs / output grads
  // The layer's linears: their forward GEMMs, and their data- and weight-gradient GEMMs (the data gradient alone where
  // they are frozen).
  double gemm_fwd = 0, gemm_bwd = 0;
  double moe_permute = 0;                     // MoE token permutation and unpermutation, one pass
  // The backward's tensor-parallel collectives run under the column-parallel linears' gradient GEMMs, as far as they
  // outlast or slow them (contention): part of the backward pass's time, outside an MoE layer's multiple.
  double tp_bwd_overlapped = 0;
  double shared_fwd = 0, shared_bwd = 0;      // MoE layers: the shared experts' GEMMs, forward and gradients,
  double shared_recompute = 0;                // and their forward again where it is recomputed
  double eager_fwd = 0, eager_bwd = 0;        // eager PyTorch element-wise work beyond the fused kernels
  double lora_fwd = 0, lora_bwd = 0;          // LoRA adapters: their GEMMs and element-wise passes
};

struct LayerContext {
  const ModelSpec* m;
  const GpuSpec* gpu;
  const Efficiency* eff;
  const Cluster* cluster;
  double tokens;       // tokens of this micro-batch on this GPU (b * s / cp)
  double seq;          // full sequence length (keys attended to)
  double micro_batch;
  int tp, cp, ep;
  bool sp;
  int etp;             // expert tensor parallelism (= tp unless folded)
  double peak, gemm_eff, elem_bytes;
  AttentionImpl attention;
  double moe_imbalance;
  bool moe_layer;
  bool dropout;
  bool eager;
  Fp8Recipe fp8_recipe = Fp8Recipe::kDelayed;
  double rc_share = 1;  // share of the layers that recompute under Recompute::kFull (block recompute: N / chunk)
  MoeDispatcher dispatcher = MoeDispatcher::kAllToAll;
  CpComm cp_comm = CpComm::kP2P;
  bool fp8_attention = false;  // TrainConfig::fp8_attention
  bool tp_grad_overlap = true;  // TrainConfig::tp_grad_overlap, and not eager
  double attn_seq = 0;  // tokens attention works over (packed documents); 0 = seq
  // LoRA: frozen base linears (no weight gradient) and the adapters' (input, output) widths on this GPU.
  bool frozen = false;
  double lora_rank = 0;
  double lora_dropout = 0;  // dropout on each adapter's input (FitRequest::lora_dropout)
  std::vector<LoraShape> adapters;
  RecomputeModules recompute_modules;  // selective recompute: the modules given (none: core_attn)
  // FP8 training: the gradient GEMMs' rate over the forward's (Efficiency::gemm_fp8_precise); 1 otherwise.
  double grad_gemm_rate = 1;
  bool nvfp4_rht = false;  // NVFP4: the weight gradient's operands go through the random Hadamard transform
  // Bytes per weight-gradient element the weight-gradient GEMM moves: it writes its output, and where the stack fuses
  // gradient accumulation (Megatron-Core, NeMo) reads and rewrites the gradient buffer instead (WeightGradOutputBytes).
  double wgrad_out_bytes = 2;
};

// Groups of the layer's collectives: TP (stride 1), CP (stride TP), EP (inside the DP x CP ranks, stride TP).
double TpBusBw(const LayerContext& c, int n, int stride = 1, Collective kind = Collective::kRing) {
  return GroupBusBandwidth(*c.cluster, *c.eff, n, stride, kind);
}
double TpAlpha(const LayerContext& c, int n, int stride = 1) { return GroupLatency(*c.cluster, n, stride); }

// The causal kernel length, in tokens, whose FP8 attention speed-up applies to a layer whose queries attend to
// `attended` keys on average (Fp8AttentionSpeedup).
double Fp8AttentionKernelTokens(const LayerContext& c, double attended) {
  return 2.0 * attended / (c.cp > 1 && c.cp_comm == CpComm::kP2P ? c.cp : 1);
}

// One transformer layer: forward operators (added to `ops` when non-null) and pass times.
PassTimes Layer(const LayerContext& c, Recompute rc, OpList* ops) {
  const ModelSpec& m = *c.m;
  const LayerShape sh = Shape(m);
  const double T = c.tokens, h = double(m.hidden), t = c.tp;
  PassTimes p;
  // Y (M x N) = X (M x K) W (K x N) and its two gradient GEMMs (GradientGemmsTime), the weight gradient's output the
  // gradient buffer (c.wgrad_out_bytes per element). `fp8_linear`: a linear Transformer Engine runs in FP8 (not the
  // router), whose gradient GEMMs accumulate in FP32 at c.grad_gemm_rate of the forward's rate.
  std::pair<double, double> last_grad;  // the data and weight gradient GEMMs' times of the last linear `gemm` added
  auto gemm = [&](const char* name, double M, double N, double K, double batch = 1, bool fp8_linear = true) {
    const GemmTime g = EstimateGemm(M, N, K, batch, c.elem_bytes, c.peak, c.gemm_eff, *c.gpu, *c.eff);
    if (ops) ops->Add(name, "forward", g.flops, g.bytes, g.time_s, 1, g.bound);
    p.fwd += g.time_s;
    p.fwd_flops += g.flops;
    p.gemm_fwd += g.time_s;
    last_grad = GradientGemms(g, M, N, K, batch, c.elem_bytes, fp8_linear ? c.grad_gemm_rate : 1.0, c.wgrad_out_bytes,
                              c.frozen, *c.gpu, *c.eff);
    p.gemm_bwd += last_grad.first + last_grad.second;
    return g;
  };
  gemm("qkv projection", T, sh.attn_proj_params / h / t, h);
  // The column-parallel linears' gradient GEMMs, the windows of their backward collectives (below): QKV's, and the
  // dense MLP's up/gate projection's (none in an MoE layer).
  const std::pair<double, double> qkv_grad = last_grad;
  std::pair<double, double> mlp_up_grad{0, 0};
  // Attention core.
  double attn_time = 0, attn_flops = 0;
  const double heads_local = m.heads / t;
  const double d_qk = sh.q_dim / m.heads;
  if (c.attention != AttentionImpl::kUnfused) {
    // Causal: each query attends to half the keys on average (FlashAttention skips masked blocks), at most the
    // window on windowed layers. Per attended key, 2 x (qk head dim + v head dim) FLOPs per head: QK^T at the query's
    // width, PV at the value's (MLA: 192 and 128; the two are equal elsewhere).
    const double attended = perf_detail::MeanAttendedKeys(m, c.attn_seq > 0 ? c.attn_seq : c.seq, false);
    attn_flops = 2.0 * T * attended * (sh.q_dim + sh.out_proj_in) / t;
    const double bytes = T * (sh.q_dim + 2 * sh.kv_dim + sh.out_proj_in) / t * 2;
    const perf_detail::FusedAttentionTime fa = perf_detail::FusedAttentionForward(
        *c.gpu, *c.eff, attn_flops, bytes, c.attention == AttentionImpl::kFlash1);
    attn_time = fa.time_s;
    // FP8 attention: cuDNN's measured speed-up over its 16-bit kernel, forward and backward alike (the backward's
    // time follows the forward's below), read at the length of the kernels this layer runs: the causal benchmark's
    // L attends to L/2 keys per query on average, and the K/V ring runs CP kernels over a CP-th of the sequence each
    // (the all-to-all gathers the whole sequence for a CP-th of the heads).
    const bool fp8_attn = c.fp8_attention && perf_detail::HasFp8AttentionRate(*c.eff);
    if (fp8_attn) attn_time /= perf_detail::Fp8AttentionSpeedup(*c.eff, Fp8AttentionKernelTokens(c, attended));
    if (ops)
      ops->Add(c.attention == AttentionImpl::kFlash ? (fp8_attn ? "attention (flash, FP8)" : "attention (flash)")
                                                    : "attention (flash1)",
               "forward", attn_flops, bytes, attn_time, 1, fa.compute_bound ? Bound::kCompute : Bound::kMemory);
  } else {
    // Unfused (Megatron 2021-22): two batched GEMMs over the full s x s score matrix, and a fused
    // scale-mask-softmax(-dropout) kernel streaming the scores.
    const double sq = T / c.micro_batch;  // queries per sequence on this GPU
    const GemmTime qk = EstimateGemm(sq, c.seq, d_qk, c.micro_batch * heads_local, 2, c.peak, c.gemm_eff, *c.gpu, *c.eff);
    const double d_v = sh.out_proj_in / m.heads;
    const GemmTime pv = EstimateGemm(sq, d_v, c.seq, c.micro_batch * heads_local, 2, c.peak, c.gemm_eff, *c.gpu, *c.eff);
    const double scores = c.micro_batch * heads_local * sq * c.seq;
    // Read scores, write probabilities (16-bit); with attention dropout also write the 1-byte mask and the
    // dropped-out probabilities that feed the second GEMM.
    const double sm_bytes = scores * (c.dropout ? 7.0 : 4.0);
    const double sm_time = sm_bytes / (c.gpu->memory_bandwidth_bytes_per_s.value * c.eff->memory) + c.eff->kernel_launch_s;
    attn_flops = qk.flops + pv.flops;
    attn_time = qk.time_s + pv.time_s + sm_time;
    if (ops) {
      ops->Add("attention scores QK^T", "forward", qk.flops, qk.bytes, qk.time_s, 1, qk.bound);
      ops->Add("softmax (fused)", "forward", 0, sm_bytes, sm_time, 1, Bound::kMemory);
      ops->Add("attention x V", "forward", pv.flops, pv.bytes, pv.time_s, 1, pv.bound);
    }
  }
  p.fwd += attn_time;
  p.fwd_flops += attn_flops;
  gemm("output projection", T, h, sh.out_proj_in / t);
  // MLP or experts.
  double ffn_width = double(m.ffn);
  // Elements entering the MLP's first GEMM and leaving its last one, per GPU: T x h for a dense MLP; for
  // experts, the k copies of each dispatched token (with the busiest expert's load), plus the shared experts'.
  double mlp_in_elems = T * h, shared_in_elems = 0;
  // Forward time and FLOPs of the MLP block's parts, for selective recompute of the modules: the MLP's (or the
  // MoE layer's) computation, the shared experts', and one pass of the expert all-to-all.
  GemmTime mlp_part, shared_part;
  const auto add_to = [](GemmTime& sum, const GemmTime& g) {
    sum.time_s += g.time_s;
    sum.flops += g.flops;
  };
  double a2a_pass = 0;
  if (c.moe_layer && m.moe) {
    const auto& e = *m.moe;
    add_to(mlp_part, gemm("router", T, e.num_experts, h, 1, false));
    const double local_experts = double(e.num_experts) / c.ep;
    // Tokens a rank's experts see: its share of the micro-batch (T / TP) gathered over the expert-TP group, then
    // exchanged over EP. With ETP = TP that is the whole micro-batch of the TP group; the expert FLOPs per rank
    // are the same for every ETP, only the GEMM shapes change.
    const double etp = c.etp;
    const double expert_tokens = T * etp / t;
    const double tokens_per_expert = expert_tokens * e.experts_per_token / e.num_experts * c.ep * c.moe_imbalance;
    const double mats = m.gated_mlp ? 2 : 1;
    add_to(mlp_part, gemm("experts up/gate", tokens_per_expert, mats * e.expert_ffn / etp, h, local_experts));
    add_to(mlp_part, gemm("experts down", tokens_per_expert, h, e.expert_ffn / etp, local_experts));
    if (e.shared_ffn > 0) {
      const double bwd_before = p.gemm_bwd;
      add_to(shared_part, gemm("shared expert up/gate", T, mats * e.shared_ffn / t, h));
      add_to(shared_part, gemm("shared expert down", T, h, e.shared_ffn / t));
      p.shared_fwd = shared_part.time_s;
      p.shared_bwd = p.gemm_bwd - bwd_before;
    }
    ffn_width = double(e.expert_ffn) * e.experts_per_token + e.shared_ffn;
    mlp_in_elems = expert_tokens * e.experts_per_token * c.moe_imbalance * h;
    if (e.shared_ffn > 0) shared_in_elems = T * h;
    // Token permutation (Megatron-Core's fused moe_permute / moe_unpermute): before dispatch each of the rank's own
    // tokens (its sequence-parallel shard, T / TP: Megatron-Core runs MoE with TP only under SP) is copied to its k
    // expert slots (read E x h, write E x k x h) and after combine the k expert outputs are weighted and summed back
    // (read E x k x h, write E x h), 16-bit; backward moves the same bytes.
    const double local_tokens = T / t;
    double perm_bytes = 2.0 * 2 * local_tokens * h * (1 + e.experts_per_token);
    int perm_kernels = 2;
    // The all-to-all dispatcher also reorders what it received by local expert (rank-major chunks to
    // expert-major, Megatron-Core's sort_chunks_by_idxs, "permutation 2") when a rank holds more than one expert,
    // and restores the order before the combine: a read and a write of every received copy each way. The flex
    // dispatcher (DeepEP, HybridEP) receives each token once and permutes it into its expert slots as above.
    if (c.dispatcher == MoeDispatcher::kAllToAll && c.ep > 1 && local_experts > 1) {
      perm_bytes += 2.0 * 2 * expert_tokens * e.experts_per_token * c.moe_imbalance * h * 2;
      perm_kernels += 2;
    }
    p.moe_permute = perm_bytes / (c.gpu->memory_bandwidth_bytes_per_s.value * c.eff->memory) +
                    perm_kernels * c.eff->kernel_launch_s;
    if (ops) ops->Add(kMoePermuteOpName, "forward", 0, perm_bytes, p.moe_permute, 1, Bound::kMemory);
    p.fwd += p.moe_permute;
    mlp_part.time_s += p.moe_permute;
    // Dispatch and combine all-to-all over the EP group (each token's hidden state to k experts).
    if (c.ep > 1) {
      // EP ranks sit outside the TP x CP block, or, folded (ETP < TP), right after the expert-TP ranks.
      const int stride = c.etp == c.tp ? c.tp * c.cp : c.etp;
      // The all-to-all moves the rank's own tokens' k copies; the expert-TP all-gather after it (below, with the TP
      // collectives) collects the group's (Megatron-Core MoEAlltoAllTokenDispatcher, core_r0.9.0 and later).
      double bytes = local_tokens * e.experts_per_token * h * 2, a2a = 0;
      if (c.dispatcher == MoeDispatcher::kFlex) {
        a2a = 2 * FlexDispatchTime(*c.cluster, *c.eff, expert_tokens * h * 2, e.num_experts, e.experts_per_token,
                                   c.ep, stride);
        // Bytes each GPU sends per dispatch, for the table: its NVLink and its network copies.
        const FlexCopies f = FlexDispatchCopies(*c.cluster, e.num_experts, e.experts_per_token, c.ep, stride);
        bytes = expert_tokens * h * 2 * (f.nvlink + f.network);
      } else {
        a2a = 2 * GroupAllToAllTime(*c.cluster, *c.eff, bytes, c.ep, stride);
      }
      p.ep_comm = a2a * 2;  // forward and backward
      a2a_pass = a2a;
      if (ops)
        ops->Add(c.dispatcher == MoeDispatcher::kFlex ? "expert dispatch + combine (flex)" : "expert all-to-all (x2)",
                 "forward", 0, bytes * 2, a2a, 1, Bound::kCommunication);
    }
  } else {
    add_to(mlp_part, gemm("mlp up/gate", T, (m.gated_mlp ? 2.0 : 1.0) * ffn_width / t, h));
    mlp_up_grad = last_grad;
    add_to(mlp_part, gemm("mlp down", T, h, ffn_width / t));
  }
  // FP8 training (Transformer Engine): the 16-bit activation entering each FP8 GEMM (forward) and the
  // gradient leaving it (backward) are cast with a fused cast-transpose, since Hopper's FP8 GEMMs need
  // both layouts: read 2 B, write the FP8 value and its FP8 transpose, 4 B per element. No credit is
  // taken for casts fused into a layer norm. Weights are cast once per step (cached across micro-batches)
  // and not counted.
  if (c.elem_bytes < 2) {  // FP8 or NVFP4 GEMM operands
    const double mats = m.gated_mlp ? 2.0 : 1.0;
    // GEMM inputs: QKV (norm output), output projection (attention output), MLP up (norm output; for experts
    // the dispatched tokens), MLP down (activation output).
    const double qkv_in = T * h, proj_in = T * sh.out_proj_in / t, fc1_in = mlp_in_elems + shared_in_elems,
                 fc2_in = T * ffn_width / t;
    const double in_elems = qkv_in + proj_in + fc1_in + fc2_in;
    const double grad_elems = T * (sh.attn_proj_params / h / t + h + mats * ffn_width / t) + mlp_in_elems + shared_in_elems;
    const double bw = c.gpu->memory_bandwidth_bytes_per_s.value * c.eff->memory;
    const perf_detail::Fp8CastCost cc = perf_detail::Fp8CastExtra(
        c.fp8_recipe, proj_in + fc2_in + (c.moe_layer && m.moe ? fc1_in : 0.0), in_elems, grad_elems,
        c.moe_layer && m.moe ? 1 : 2, c.nvfp4_rht && !c.frozen);  // norm-fed casts: QKV, and the dense MLP's up projection
    double amax_reduce = 0;  // per pass: two amax all-reduces (column-parallel inputs fwd, row-parallel grads bwd)
    if ((c.fp8_recipe == Fp8Recipe::kCurrent || c.fp8_recipe == Fp8Recipe::kNvfp4) && c.sp && c.tp > 1)
      amax_reduce = 2 * GroupCollectiveTime(*c.cluster, *c.eff, NcclOp::kAllReduce, 4, c.tp, 1);
    // The transposed FP8 copy feeds the weight gradient: frozen weights (LoRA) need only the plain cast, and so do
    // tensor-scaled recipes on GPUs whose FP8 GEMMs take any layout (Blackwell); MXFP8 writes both layouts anyway.
    // NVFP4 writes both layouts on every GPU: FP4 GEMMs take only the TN layout.
    const bool nvfp4 = c.fp8_recipe == Fp8Recipe::kNvfp4;
    const bool one_layout =
        c.frozen || (!nvfp4 && c.fp8_recipe != Fp8Recipe::kMxfp8 && perf_detail::NonTnFp8Gemms(*c.gpu));
    const double cast_bytes = nvfp4 ? perf_detail::Nvfp4CastBytesPerElement(one_layout)
                                    : kFp8CastBytesPerElement - (one_layout ? 1 : 0);
    // FP8 attention (where its rate is measured): Q, K and V quantised before the kernel and the output gradient
    // before its backward, read 2 B and write 1 B per element, plus an amax read of 2 B under a current-scaling recipe
    // (Transformer Engine's DPA recipe follows the GEMMs'); cuDNN's benchmark times the kernel on FP8 inputs alone.
    double attn_fwd_bytes = 0, attn_bwd_bytes = 0;
    int attn_kernels = 0;
    if (c.fp8_attention && perf_detail::HasFp8AttentionRate(*c.eff)) {
      const double per_elem = 3.0 + (c.fp8_recipe == Fp8Recipe::kDelayed ? 0.0 : 2.0);
      attn_fwd_bytes = T * (sh.q_dim + 2 * sh.kv_dim) / t * per_elem;
      attn_bwd_bytes = T * sh.out_proj_in / t * per_elem;
      attn_kernels = 1;
    }
    const double fwd_bytes = in_elems * cast_bytes + cc.fwd_bytes + attn_fwd_bytes;
    const double bwd_bytes = grad_elems * cast_bytes + cc.bwd_bytes + attn_bwd_bytes;
    p.fp8_cast_fwd = fwd_bytes / bw + (4 + cc.fwd_kernels + attn_kernels) * c.eff->kernel_launch_s + amax_reduce;
    p.fp8_cast_bwd = bwd_bytes / bw + (4 + cc.bwd_kernels + attn_kernels) * c.eff->kernel_launch_s + amax_reduce;
    if (ops) ops->Add(nvfp4 ? kNvfp4CastOpName : kFp8CastOpName, "forward", 0, fwd_bytes, p.fp8_cast_fwd, 1, Bound::kMemory);
    p.fwd += p.fp8_cast_fwd;
  }
  // Element-wise, memory-bound: norms, residual adds (+ dropout), activation, rotary.
  const double tok_rep = c.sp ? T / t : T;  // SP shards the replicated region over TP
  double ew = tok_rep * (m.norms_per_layer * 4 * h + 2 * 6 * h);
  ew += T * (m.gated_mlp ? 6.0 : 4.0) * ffn_width / t;
  if (sh.rotary) ew += T * 4 * (sh.q_dim + sh.kv_dim) / t;
  const double ew_time = ew / (c.gpu->memory_bandwidth_bytes_per_s.value * c.eff->memory) +
                         kElementwiseKernelsPerLayer * c.eff->kernel_launch_s;
  if (ops) ops->Add("norms, residuals, activation", "forward", 0, ew, ew_time, 1, Bound::kMemory);
  p.fwd += ew_time;

  // Eager PyTorch: what the reference implementations move beyond the fused kernels counted above, in bytes
  // per element (docs/methodology.md §6.3): RMSNorm in FP32 steps (forward 36 against 4, backward 58 against
  // 8), rotate-half RoPE on Q and K (22 against 4, 25 against 8), SwiGLU as two kernels (10 against 6,
  // 18 against 12). LayerNorm and GELU are single kernels in eager mode too and cost nothing extra.
  if (c.eager && (m.norm == NormKind::kRmsNorm || sh.rotary || m.gated_mlp)) {
    const double rms = m.norm == NormKind::kRmsNorm ? m.norms_per_layer : 0;
    const double rope = sh.rotary ? (sh.q_dim + sh.kv_dim) / t : 0;
    const double glu = m.gated_mlp ? ffn_width / t : 0;
    // Norms run on the sequence-parallel shard like the fused ones above (tok_rep); RoPE and SwiGLU on T.
    const double fwd_b = tok_rep * rms * (36 - 4) * h + T * (rope * (22 - 4) + glu * (10 - 6));
    const double bwd_b = tok_rep * rms * (58 - 8) * h + T * (rope * (25 - 8) + glu * (18 - 12));
    const double bw = c.gpu->memory_bandwidth_bytes_per_s.value * c.eff->memory;
    // Extra kernels: 5 forward / 8 backward per RMSNorm, 8 / 10 for RoPE, 1 / 2 for SwiGLU.
    const double k_fwd = 5 * rms + (rope > 0 ? 8 : 0) + (glu > 0 ? 1 : 0);
    const double k_bwd = 8 * rms + (rope > 0 ? 10 : 0) + (glu > 0 ? 2 : 0);
    p.eager_fwd = fwd_b / bw + k_fwd * c.eff->kernel_launch_s;
    p.eager_bwd = bwd_b / bw + k_bwd * c.eff->kernel_launch_s;
    if (ops) ops->Add(kEagerOpName, "forward", 0, fwd_b, p.eager_fwd, 1, Bound::kMemory);
    p.fwd += p.eager_fwd;
  }

  double mlp_side_comm = 0;  // the MLP block's TP collective, one pass
  double cp_a2a_pass = 0;    // the Ulysses all-to-alls of one forward pass (a recomputed attention repeats them)
  // One block's TP collective ahead of its GEMM input (the SP all-gather, or the all-reduce without SP): what a
  // recomputed forward that saved the reduce-scatter outputs repeats.
  double tp_gather_pass = 0;
  double tp_fwd_pass = 0;  // the layer's TP collectives of one forward pass
  // Tensor-parallel communication: 2 all-reduces per layer forward (or all-gather + reduce-scatter
  // with SP: the same bytes on a ring, without the in-switch reduction, each with its own latency); the backward's
  // below.
  if (c.tp > 1) {
    const double bytes = T * h * 2;
    // Under FP8 the sequence-parallel all-gathers move the GEMM inputs already cast to FP8, one byte per element
    // (Transformer Engine gathers its quantised layer-norm output and output gradient; torchao's Float8 TP gathers
    // float8); the reduce-scatters move the 16-bit GEMM outputs.
    const double ag_share = c.elem_bytes == 1 ? 0.5 : 1.0;
    const auto tp_collective = [&](double b, int n) {
      if (!c.sp) return GroupCollectiveTime(*c.cluster, *c.eff, NcclOp::kAllReduce, b, n, 1);
      return GroupCollectiveTime(*c.cluster, *c.eff, NcclOp::kAllGather, b * ag_share, n, 1) +
             GroupCollectiveTime(*c.cluster, *c.eff, NcclOp::kReduceScatter, b, n, 1);
    };
    const double one = tp_collective(bytes, c.tp);
    tp_gather_pass =
        c.sp ? GroupCollectiveTime(*c.cluster, *c.eff, NcclOp::kAllGather, bytes * ag_share, c.tp, 1) : one;
    // An MoE block keeps its tokens on their sequence-parallel shard: its routed experts' collective is the
    // expert-TP all-gather of the dispatched copies after the all-to-all (expert_tokens x k x h, 16-bit: the
    // dispatcher moves unquantised states) and the reduce-scatter before the combine, over the ETP group (none at
    // ETP 1); shared experts gather and scatter the block's tokens like a dense MLP.
    double moe_side = one;
    if (c.moe_layer && m.moe) {
      const auto& e = *m.moe;
      const double e_bytes = T * double(c.etp) / t * e.experts_per_token * h * 2;
      moe_side = c.etp > 1 ? GroupCollectiveTime(*c.cluster, *c.eff, NcclOp::kAllGather, e_bytes, c.etp, 1) +
                                 GroupCollectiveTime(*c.cluster, *c.eff, NcclOp::kReduceScatter, e_bytes, c.etp, 1)
                           : 0.0;
      if (e.shared_ffn > 0) moe_side += one;
    }
    // Backward. Without the overlap (--no-tp-grad-overlap; eager stacks) each block repeats its forward collectives,
    // exposed. Megatron-LM (since 2022) and Transformer Engine overlap a column-parallel linear's backward
    // communication with its gradient GEMMs: the input-gradient reduce-scatter (all-reduce without SP) runs under the
    // weight-gradient GEMM and, under SP, the re-gather of the input for that GEMM under the data-gradient GEMM
    // (Megatron-Core tensor_parallel/layers.py LinearWithGradAccumulationAndAsyncCommunication; TE's Linear), at
    // the contention cost, within the two GEMMs' time. The row-parallel linear's output-gradient all-gather (SP) has
    // no GEMM before it and stays exposed. Routed experts keep their exposed expert-TP collectives.
    // Each window is its GEMM's own time, so a faster GEMM never lengthens the pass: what it stops hiding it saved.
    // The exposed part is TP communication; the overlapped part's cost belongs to the backward pass (its GEMMs run
    // longer, or wait at their end), so the data-parallel overlap window, which is the backward, keeps it.
    const auto block_bwd = [&](std::pair<double, double> grad) {
      if (!c.tp_grad_overlap) return one;
      const double s = c.eff->overlap_slowdown;
      if (!c.sp) {  // the all-reduce under the weight gradient
        p.tp_bwd_overlapped += OverlapCost(grad.second, one, s);
        return 0.0;
      }
      // The output gradient's all-gather (exposed), the input's re-gather under the data gradient, the input
      // gradient's reduce-scatter under the weight gradient.
      p.tp_bwd_overlapped += OverlapCost(grad.first, tp_gather_pass, s) + OverlapCost(grad.second, one - tp_gather_pass, s);
      return tp_gather_pass;
    };
    tp_fwd_pass = one + moe_side;
    p.tp_comm = tp_fwd_pass + block_bwd(qkv_grad) + (c.moe_layer && m.moe ? moe_side : block_bwd(mlp_up_grad));
    mlp_side_comm = moe_side;
    if (ops) {
      ops->Add(c.sp ? "TP all-gather + reduce-scatter (x2)" : "TP all-reduce (x2)", "forward", 0, 2 * bytes,
               one + moe_side, 1, Bound::kCommunication);
      const char* plain = "2 per layer and micro-batch in the forward pass, 2 in the backward";
      if (c.sp) {
        ops->collectives.push_back(DescribeCollective(
            *c.cluster, *c.eff, NcclOp::kAllGather, bytes * ag_share, c.tp, 1, "TP all-gather (sequence parallel)",
            c.tp_grad_overlap ? "2 per layer and micro-batch in the forward pass; in the backward 2 exposed and 2 "
                                "(the inputs' re-gathers) under the data-gradient GEMMs"
                              : plain));
        ops->collectives.push_back(DescribeCollective(
            *c.cluster, *c.eff, NcclOp::kReduceScatter, bytes, c.tp, 1, "TP reduce-scatter (sequence parallel)",
            c.tp_grad_overlap ? "2 per layer and micro-batch in the forward pass; in the backward 2 under the "
                                "weight-gradient GEMMs"
                              : plain));
      } else {
        ops->collectives.push_back(DescribeCollective(
            *c.cluster, *c.eff, NcclOp::kAllReduce, bytes, c.tp, 1, "TP all-reduce",
            c.tp_grad_overlap ? "2 per layer and micro-batch in the forward pass; in the backward 2 under the "
                                "weight-gradient GEMMs"
                              : plain));
      }
    }
  }
  // Context parallelism: ring exchange of K and V blocks (forward; backward exchanges K, V and grads).
  if (c.cp > 1 && c.cp_comm == CpComm::kAllToAll) {
    // Ulysses: before attention each rank sends the other CP ranks their heads' share of its Q, K and V rows and
    // receives its heads' rows of theirs; after it the output goes back the same way. Backward mirrors it (the
    // output gradient in, the Q, K and V gradients back). 16-bit, nothing to hide it under: attention waits for its
    // inputs and the next GEMM for the output.
    // With FP8 attention Transformer Engine exchanges Q, K and V (and their gradients) in FP8; the output stays 16-bit.
    const double qkv_elem = c.fp8_attention ? 1.0 : 2.0;
    const double bytes = T * ((sh.q_dim + 2 * sh.kv_dim) * qkv_elem + sh.out_proj_in * 2) / t;
    const double a2a = GroupAllToAllTime(*c.cluster, *c.eff, bytes, c.cp, c.tp);
    p.cp_comm = 2 * a2a;
    cp_a2a_pass = a2a;
    if (ops) ops->Add(kCpAllToAllOpName, "forward", 0, bytes, a2a, 1, Bound::kCommunication);
  } else if (c.cp > 1) {
    const double kv_bytes = T * 2 * sh.kv_dim / t * 2;
    const double ring = (c.cp - 1) * P2PTime(kv_bytes, TpBusBw(c, c.cp, c.tp), TpAlpha(c, c.cp, c.tp));
    p.cp_comm = std::max(0.0, ring - attn_time) + std::max(0.0, 2 * ring - attn_time * kFlashBackwardFactor);
    p.cp_hidden = std::min(ring, attn_time) + std::min(2 * ring, attn_time * kFlashBackwardFactor);
    if (ops) ops->Add(kCpRingOpName, "forward", 0, (c.cp - 1) * kv_bytes, ring, 1, Bound::kCommunication);
  }

  // Backward: the linears' data and weight gradients (p.gemm_bwd, in `gemm` above), attention per its kernel,
  // element-wise about twice the traffic.
  const double gemm_fwd_flops = p.fwd_flops - attn_flops;
  const bool flash = c.attention != AttentionImpl::kUnfused;
  const double attn_bwd = flash ? attn_time * kFlashBackwardFactor : 2 * attn_time;
  // LoRA: the frozen linears need the data gradient only, not the weight gradient.
  const double gemm_passes = c.frozen ? 1 : 2;
  p.bwd = p.gemm_bwd + attn_bwd + 2 * ew_time + p.fp8_cast_bwd + p.eager_bwd + p.moe_permute + p.tp_bwd_overlapped;
  // The forward GEMMs' rows count their gradients as gemm_passes forward-equivalents; this row carries the rest, per
  // gradient pass (signed: a gradient GEMM can move fewer bytes than its forward).
  const double grad_gemm_extra = (p.gemm_bwd - gemm_passes * p.gemm_fwd) / gemm_passes;
  if (ops && std::abs(grad_gemm_extra) > 1e-12)
    ops->Add(kGradGemmOpName, "backward", 0, 0, grad_gemm_extra, 1, Bound::kCompute);
  p.bwd_flops = gemm_passes * gemm_fwd_flops + attn_flops * (flash ? kFlashBackwardFactor : 2);
  // LoRA adapters, unfused as PEFT and NeMo run them (NeMo's ParallelLinearAdapter): with adapter dropout the input
  // dropped (read it, write the copy and a 1-byte mask), x A (rank r), then B, in 16-bit, the product scaled by
  // alpha / r (a pass over it) and added to the frozen layer's output (read both, write the sum). Backward: the two
  // GEMMs' data and weight gradients (twice their forward), the scale's and the dropout's passes again, and the
  // adapter's input gradient added to the frozen layer's (autograd sums the two branches' gradients of the shared
  // input: read both, write the sum); the output sum's gradient reaches both branches without a kernel.
  if (!c.adapters.empty()) {
    const double peak16 = PeakFor(*c.gpu, Precision::kBf16);
    const double bw = c.gpu->memory_bandwidth_bytes_per_s.value * c.eff->memory;
    const double launch = c.eff->kernel_launch_s;
    const bool drop = c.lora_dropout > 0;
    double a_gemm = 0, a_elem_fwd = 0, a_elem_bwd = 0, a_flops = 0, a_bytes = 0;
    for (const LoraShape& a : c.adapters) {
      const double in = a.in, out = a.out;
      const GemmTime down = EstimateGemm(T, c.lora_rank, in, 1, 2, peak16, c.eff->gemm, *c.gpu, *c.eff);
      const GemmTime up = EstimateGemm(T, out, c.lora_rank, 1, 2, peak16, c.eff->gemm, *c.gpu, *c.eff);
      // A column-parallel adapter's input is the layer's, sequence-sharded under sequence parallelism: it is dropped
      // before the gather and its gradient summed after the reduce-scatter, on the GPU's 1/TP share of the tokens.
      const double t_in = a.column_parallel && c.sp ? T / c.tp : T;
      const double drop_bytes = drop ? 5 * t_in * in : 0.0;
      const double scale_bytes = 4 * T * out, add_bytes = 6 * T * out;
      a_gemm += down.time_s + up.time_s;
      a_elem_fwd += (drop_bytes + scale_bytes + add_bytes) / bw + (drop ? 3 : 2) * launch;
      const double accumulate_bytes = 6 * t_in * in;
      a_elem_bwd += (drop_bytes + scale_bytes + accumulate_bytes) / bw + (drop ? 3 : 2) * launch;
      a_flops += down.flops + up.flops;
      a_bytes += down.bytes + up.bytes + drop_bytes + scale_bytes + add_bytes;
    }
    if (ops)
      ops->Add(fmt::format("{} (rank {:g}, {} per layer{})", kLoraOpName, c.lora_rank, c.adapters.size(),
                           drop ? ", input dropout" : ""),
               "forward", a_flops, a_bytes, a_gemm + a_elem_fwd, 1, Bound::kMemory);
    p.lora_fwd = a_gemm + a_elem_fwd;
    p.lora_bwd = 2 * a_gemm + a_elem_bwd;
    p.fwd += p.lora_fwd;
    p.bwd += p.lora_bwd;
    p.fwd_flops += a_flops;
    p.bwd_flops += 2 * a_flops;
  }
  if (rc == Recompute::kFull) {
    // Per layer on average: block recompute reruns the forward of a share of the layers only.
    p.recompute = p.fwd * c.rc_share;
    p.shared_recompute = p.shared_fwd * c.rc_share;
    p.recompute_flops = p.fwd_flops * c.rc_share;
    p.tp_comm += tp_fwd_pass * c.rc_share;  // the recomputed forward repeats its collectives
    p.cp_comm += cp_a2a_pass * c.rc_share;  // and its Ulysses all-to-alls (the K/V ring's exposure is not redone)
  } else if (rc == Recompute::kOp) {
    // torchtitan's per-op policy reruns every op whose output it did not save: the even-numbered matrix multiplies
    // (wk, wo and the MLP's up projection, or fc2 of a plain MLP), every element-wise op and FP8 cast, and the TP
    // collectives other than the reduce-scatters (the all-gathers under SP, the all-reduces without).
    const auto rerun = [&](double M, double N, double K) {
      const GemmTime g = EstimateGemm(M, N, K, 1, c.elem_bytes, c.peak, c.gemm_eff, *c.gpu, *c.eff);
      p.recompute += g.time_s;
      p.recompute_flops += g.flops;
    };
    rerun(T, sh.kv_dim / t, h);
    rerun(T, h, sh.out_proj_in / t);
    if (m.gated_mlp)
      rerun(T, ffn_width / t, h);
    else
      rerun(T, h, ffn_width / t);
    p.recompute += ew_time + p.eager_fwd + p.fp8_cast_fwd;
    p.tp_comm += 2 * tp_gather_pass;  // attention's and the MLP's
  } else if (rc == Recompute::kSelective) {
    // Megatron-Core's selective recompute reruns the forward of the checkpointed modules in the backward pass
    // (docs/methodology.md §4); a recomputed MLP or MoE block repeats its TP collective and its all-to-all.
    const RecomputeModules mods = EffectiveRecomputeModules(rc, c.recompute_modules);
    const double bw = c.gpu->memory_bandwidth_bytes_per_s.value * c.eff->memory;
    const double act_per_width = m.gated_mlp ? 6.0 : 4.0;  // activation bytes per element of the MLP's width
    if (mods.core_attn) {
      p.recompute += attn_time;
      p.recompute_flops += attn_flops;
      p.cp_comm += cp_a2a_pass;  // Transformer Engine's attention module holds the Ulysses all-to-alls
    }
    if (mods.layernorm) {
      // input_layernorm and pre_mlp_layernorm: read 2h, write 2h per token each, on the sequence-parallel shard.
      p.recompute += tok_rep * 2 * 4 * h / bw + 2 * c.eff->kernel_launch_s;
    }
    const bool moe_block = c.moe_layer && m.moe;
    if (mods.mla_up_proj && m.mla) {
      const auto& a = *m.mla;
      const auto up = [&](double n, double k) {
        const GemmTime g = EstimateGemm(T, n / t, k, 1, c.elem_bytes, c.peak, c.gemm_eff, *c.gpu, *c.eff);
        p.recompute += g.time_s;
        p.recompute_flops += g.flops;
      };
      if (a.q_lora_rank > 0) up(double(m.heads) * (a.qk_nope_head_dim + a.qk_rope_head_dim), a.q_lora_rank);
      up(double(m.heads) * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank);
    }
    if (!moe_block && mods.mlp) {
      p.recompute += mlp_part.time_s + T * act_per_width * ffn_width / t / bw + c.eff->kernel_launch_s;
      p.recompute_flops += mlp_part.flops;
      p.tp_comm += mlp_side_comm;
    }
    if (moe_block) {
      const auto& e = *m.moe;
      const double routed_act = T * act_per_width * double(e.expert_ffn) * e.experts_per_token / t / bw +
                                c.eff->kernel_launch_s;
      const double shared_act = e.shared_ffn > 0 ? T * act_per_width * double(e.shared_ffn) / t / bw : 0.0;
      if (mods.moe) {
        p.recompute += mlp_part.time_s + shared_part.time_s + routed_act + shared_act;
        p.shared_recompute += shared_part.time_s;
        p.recompute_flops += mlp_part.flops + shared_part.flops;
        p.tp_comm += mlp_side_comm;
        p.ep_comm += a2a_pass;
      } else {
        if (mods.moe_act) p.recompute += routed_act;
        if (mods.shared_experts) {
          p.recompute += shared_part.time_s + shared_act;
          p.shared_recompute += shared_part.time_s;
          p.recompute_flops += shared_part.flops;
        }
      }
    }
  }
  return p;
}

}  // namespace

double MatmulParamsPerToken(const ModelSpec& m) {
  const ParamCounts c = CountParams(m);
  return c.active - (m.tie_embeddings ? 0.0 : c.embedding);
}

double ModelFlopsPerToken(const ModelSpec& m, double seq, FlopConvention conv) {
  if (conv == FlopConvention::kMegatron) {
    const double h = double(m.hidden), L = m.layers, V = double(m.vocab);
    return 72.0 * L * h * h * (1 + seq / (6 * h) + V / (12 * h * L)) / 1.0;
  }
  const double n = MatmulParamsPerToken(m);
  const double attn_dim = m.mla ? double(m.heads) * (m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim)
                                : double(m.heads) * m.head_dim;
  return 6 * n + 12.0 * m.layers * attn_dim * seq;
}

double LoraFlopsPerToken(const ModelSpec& m, double seq, double adapter_params) {
  const double n = MatmulParamsPerToken(m);
  const double attn_dim = m.mla ? double(m.heads) * (m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim)
                                : double(m.heads) * m.head_dim;
  return 4 * n + 12.0 * m.layers * attn_dim * seq + 6 * adapter_params;
}

std::optional<TrainResult> FewestBlockRecomputeThatFits(const ModelSpec& m, const Cluster& cl, TrainConfig cfg,
                                                        const Efficiency& eff, int64_t* evaluated) {
  cfg.fit.recompute = Recompute::kFull;
  cfg.micro_batch_auto = cfg.recompute_auto = false;
  int lo = 1, hi = static_cast<int>(std::floor(RecomputeChunkLayers(m, cfg.fit.par))) - 1;
  std::optional<TrainResult> best;
  while (lo <= hi) {
    cfg.fit.recompute_layers = (lo + hi) / 2;
    if (evaluated) ++*evaluated;
    auto r = EstimateTraining(m, cl, cfg, eff);
    if (r.ok() && r->fits) {
      best = std::move(r).value();
      hi = cfg.fit.recompute_layers - 1;
    } else {
      lo = cfg.fit.recompute_layers + 1;
    }
  }
  return best;
}

std::vector<RecomputeModules> RecomputeModuleLadder(const ModelSpec& m, AttentionImpl attention, Precision dtype,
                                                    Fp8Recipe fp8_recipe) {
  const bool moe = m.moe_layer_count() > 0;
  const bool dense_mlps = m.moe_layer_count() < m.layers;
  const bool no_norm_act = dtype == Precision::kFp8 && fp8_recipe == Fp8Recipe::kDelayed;
  std::vector<RecomputeModules> ladder;
  const auto add = [&](RecomputeModules r) {
    r.mla_up_proj = m.mla.has_value();
    r.core_attn = attention == AttentionImpl::kUnfused;
    ladder.push_back(r);
  };
  if (!no_norm_act) {
    RecomputeModules light;
    light.layernorm = true;
    if (moe) {
      light.moe_act = true;
      light.shared_experts = m.moe->shared_ffn > 0;
    }
    add(light);
  }
  RecomputeModules heavy;
  heavy.layernorm = !no_norm_act;
  heavy.mlp = dense_mlps;
  heavy.moe = moe;
  add(heavy);
  return ladder;
}

Result<TrainResult> FastestInterleave(const ModelSpec& m, const Cluster& cl, TrainConfig cfg, const Efficiency& eff) {
  if (cfg.fit.par.pp < 2) return InvalidArgument("choosing the interleaving needs PP > 1");
  if (cfg.fit.par.layout) return InvalidArgument("a --pp-layout sets the interleaving itself");
  const int64_t units = m.layers + (cfg.fit.par.embedding_loss_in_split ? 2 : 0);
  std::optional<TrainResult> best;
  Status last = Status::Ok();
  // No interleaving is always tried (EstimateTraining judges the layout, so `last` holds its error if nothing
  // estimates); deeper interleaving only where the depth divides the stage.
  for (int v = 1; v == 1 || int64_t{cfg.fit.par.pp} * v <= units; ++v) {
    if (v > 1 && units % (int64_t{cfg.fit.par.pp} * v) != 0) continue;
    cfg.fit.par.interleave = v;
    auto r = EstimateTraining(m, cl, cfg, eff);
    if (!r.ok()) {
      last = r.status();
      continue;
    }
    if (!best || (r->fits && !best->fits) || (r->fits == best->fits && r->step_time_s < best->step_time_s))
      best = std::move(r).value();
  }
  if (!best) return last;
  return *std::move(best);
}

std::optional<TrainResult> FewestOffloadLayersThatFit(const ModelSpec& m, const Cluster& cl, TrainConfig cfg,
                                                      const Efficiency& eff, int64_t* evaluated) {
  cfg.micro_batch_auto = cfg.recompute_auto = false;
  int lo = 1, hi = m.layers - 1;
  std::optional<TrainResult> best;
  while (lo <= hi) {
    cfg.fit.offload_layers = (lo + hi) / 2;
    if (evaluated) ++*evaluated;
    auto r = EstimateTraining(m, cl, cfg, eff);
    if (!r.ok()) return std::nullopt;  // the layout cannot offload (PP > 1, recompute): no layer count helps
    if (r->fits) {
      best = std::move(r).value();
      hi = cfg.fit.offload_layers - 1;
    } else {
      lo = cfg.fit.offload_layers + 1;
    }
  }
  return best;
}

double OffloadStallSeconds(int layers, int offloaded, double fwd_s, double bwd_s, double gap_s, double d2h_s,
                           double h2d_s) {
  if (layers <= 0 || offloaded <= 0) return 0;
  offloaded = std::min(offloaded, layers - 1);
  if (offloaded <= 0) return 0;
  const int room = layers - offloaded;  // activation sets the GPU may hold
  std::vector<double> off_end(offloaded + 1), bwd_end(layers + 2);
  // Forward: layer i (1-based) needs a free set, i.e. layer i - room's offload done when that one is offloaded.
  double t = 0, d2h = 0;
  for (int i = 1; i <= layers; ++i) {
    if (i > room) t = std::max(t, off_end[i - room]);
    t += fwd_s;
    if (i <= offloaded) off_end[i] = d2h = std::max(d2h, t) + d2h_s;
  }
  t += gap_s;
  // Backward, layers L .. 1: the reload of layer j (j <= offloaded, in order offloaded .. 1) needs its offload done
  // and a set freed, which is the backward of layer j + room.
  double h2d = 0;
  for (int i = layers; i >= 1; --i) {
    if (i <= offloaded) {
      h2d = std::max({h2d, off_end[i], bwd_end[i + room]}) + h2d_s;
      t = std::max(t, h2d);
    }
    t += bwd_s;
    bwd_end[i] = t;
  }
  return std::max(0.0, t - (layers * (fwd_s + bwd_s) + gap_s));
}

Status CheckEpOverlap(const ModelSpec& m, const Parallelism& par, Recompute recompute) {
  if (!m.moe || par.ep <= 1)
    return InvalidArgument("--ep-overlap overlaps the expert all-to-all: it needs an MoE model and --ep > 1");
  if (par.pp > 1 && par.interleave <= 1)
    return InvalidArgument(
        "--ep-overlap with --pp > 1 needs an interleaved schedule (--interleave 2 or more), as Megatron-Core requires");
  if (recompute == Recompute::kFull)
    return InvalidArgument("--ep-overlap does not run with --recompute full (Megatron-Core requires no full recompute); "
                           "use --recompute none or selective");
  return Status::Ok();
}

// Ulysses context parallelism splits heads over the CP ranks: each TP rank's query heads and K/V heads must divide
// among them (Transformer Engine asserts both).
Status CheckCpComm(const ModelSpec& m, const Parallelism& par, CpComm cp_comm) {
  if (cp_comm == CpComm::kP2P) return Status::Ok();
  if (par.cp <= 1)
    return InvalidArgument("--cp-comm sets how context-parallel ranks exchange attention's inputs: it needs --cp > 1");
  const int kv = m.mla ? m.heads : m.kv_heads;
  if (m.heads % (par.tp * par.cp) != 0 || kv % (par.tp * par.cp) != 0) {
    std::string valid;
    for (int cp = 2; cp <= m.heads; ++cp)
      if (m.heads % (par.tp * cp) == 0 && kv % (par.tp * cp) == 0) valid += (valid.empty() ? "" : ", ") + std::to_string(cp);
    return InvalidArgument(fmt::format(
        "--cp-comm a2a splits attention heads over the CP ranks: {} has {} query and {} K/V heads, which TP {} x CP {} "
        "does not divide; {} (or --cp-comm p2p)",
        m.id, m.heads, kv, par.tp, par.cp,
        valid.empty() ? fmt::format("no CP > 1 does at TP {}", par.tp) : "CP " + valid + " would"));
  }
  return Status::Ok();
}

// What `perf train` models beyond pretraining: LoRA fine-tuning (Mode::kLora) and packed sequences; the settings
// that do not combine with them are errors that say so.
Status CheckTrainMode(const ModelSpec& m, const TrainConfig& cfg) {
  const Mode mode = cfg.fit.mode;
  if (mode == Mode::kQlora)
    return InvalidArgument("perf train models --mode train and lora; QLoRA's 4-bit base weights (dequantised for "
                           "every use) are not modelled: time it as --mode lora for a lower bound");
  if (mode != Mode::kTrain && mode != Mode::kLora && mode != Mode::kInfer)
    return InvalidArgument("perf train takes --mode train or lora");
  if (mode == Mode::kLora) {
    if (m.moe) return InvalidArgument(fmt::format("--mode lora is not modelled for mixture-of-experts models ({})", m.id));
    if (cfg.fit.par.zero >= 3)
      return InvalidArgument("--mode lora with --zero 3: sharding the frozen base weights is not modelled; use --zero 0-2 "
                             "(they only shard the adapters' states)");
    if (cfg.fit.offload_layers > 0) return InvalidArgument("--mode lora does not combine with --offload-layers");
    if (cfg.fit.recompute == Recompute::kFull && cfg.fit.recompute_layers > 0)
      return InvalidArgument("--mode lora recomputes every layer or none (--recompute full or none), not "
                             "--recompute-layers");
    if (cfg.fit.recompute == Recompute::kSelective || cfg.fit.recompute == Recompute::kOp)
      return InvalidArgument(fmt::format("--mode lora recomputes every layer or none (--recompute full or none), not {}",
                                         cfg.fit.recompute == Recompute::kOp ? "--recompute op"
                                                                             : "selected modules"));
    if (cfg.convention == FlopConvention::kMegatron)
      return InvalidArgument("--flops megatron counts pretraining's three passes; --mode lora reports the 6n count "
                             "of what LoRA runs (forward and data gradient)");
    if (cfg.fit.lora_rank < 1 || cfg.fit.lora_rank > 65536)
      return InvalidArgument(fmt::format("--lora-rank must be between 1 and 65536, got {}", cfg.fit.lora_rank));
    const std::string& w = cfg.fit.weights.id;
    if (!w.empty() && w != "bf16" && w != "fp16" && w != "fp8")
      return InvalidArgument(fmt::format("--weights {} for --mode lora: perf train times 16-bit or FP8 base weights "
                                         "(bf16, fp16, fp8); quantised ones are dequantised at every use, which is not "
                                         "modelled (`suanli fit --mode lora --weights {}` gives their memory)",
                                         w, w));
    if (w == "fp8" && cfg.dtype != Precision::kFp8)
      return InvalidArgument("--weights fp8 keeps the base weights as Transformer Engine FP8 tensors, which its FP8 "
                             "GEMMs read: it needs --dtype fp8");
  } else if (cfg.fit.weights.id == "nvfp4") {
    // Full training with NVFP4 parameters (Megatron-Core --fp4-param-gather, Megatron-Bridge fp4_param_gather).
    if (cfg.dtype != Precision::kFp4)
      return InvalidArgument("--weights nvfp4 keeps the weights as Transformer Engine NVFP4 tensors (Megatron-Core "
                             "--fp4-param-gather), which its NVFP4 GEMMs read: it needs --dtype fp4");
  } else if (!cfg.fit.weights.id.empty() && cfg.fit.weights.id != "bf16") {
    // Full training: 16-bit weights, or FP8 parameters under FP8 training.
    if (cfg.fit.weights.id != "fp8")
      return InvalidArgument(fmt::format("--weights {}: full training keeps 16-bit weights (bf16) or, with --dtype fp8, "
                                         "FP8 parameters (fp8), or with --dtype fp4 NVFP4 parameters (nvfp4); quantised "
                                         "base weights are for --mode lora",
                                         cfg.fit.weights.id));
    if (cfg.dtype != Precision::kFp8)
      return InvalidArgument("--weights fp8 keeps the weights as Transformer Engine FP8 tensors (Megatron-Core "
                             "--fp8-param-gather, NeMo fp8_params), which its FP8 GEMMs read: it needs --dtype fp8");
  }
  if (cfg.packed_doc_tokens != 0) {
    if (cfg.packed_doc_tokens < 1 || cfg.packed_doc_tokens > cfg.fit.seq)
      return InvalidArgument(fmt::format("--packed-doc-tokens {} is outside 1..{} (the sequence length)",
                                         cfg.packed_doc_tokens, cfg.fit.seq));
    if (cfg.attention == AttentionImpl::kUnfused)
      return InvalidArgument("--packed-doc-tokens needs a FlashAttention-class kernel (variable-length attention); "
                             "--attention unfused attends over the whole sequence");
    if (cfg.fit.par.cp > 1) return InvalidArgument("--packed-doc-tokens with --cp > 1 is not modelled");
    if (cfg.convention == FlopConvention::kMegatron)
      return InvalidArgument("--flops megatron counts attention over the whole sequence; use --flops 6n with "
                             "--packed-doc-tokens");
  }
  return Status::Ok();
}

Status CheckTpOnlyAmaxReduction(const TrainConfig& cfg) {
  if (cfg.tp_only_amax_reduction && (cfg.dtype != Precision::kFp8 || cfg.fp8_recipe != Fp8Recipe::kDelayed))
    return InvalidArgument(
        "--tp-only-amax-red applies to FP8 delayed scaling (--dtype fp8, --fp8-recipe delayed); current scaling and "
        "MXFP8 reduce no amax history");
  return Status::Ok();
}

Result<TrainResult> EstimateTraining(const ModelSpec& m, const Cluster& cl, const TrainConfig& cfg_in,
                                     const Efficiency& eff) {
  if (!cl.gpu) return InvalidArgument("no GPU given");
  // Written so that NaN fails too: a NaN factor would otherwise reach every MoE term as a silent NaN time.
  if (!(cfg_in.dp_bucket_bytes >= 0 && cfg_in.dp_bucket_bytes <= kMaxDpBucketMb * kMiB))
    return InvalidArgument(fmt::format("--dp-bucket-mb {} is outside 0..1e6 MB (0: Megatron-Core's rule)",
                                       cfg_in.dp_bucket_bytes / kMiB));
  if (!(cfg_in.moe_imbalance >= 1.0 && cfg_in.moe_imbalance <= 64.0))
    return InvalidArgument(fmt::format("--moe-imbalance {} is outside 1..64 (the busiest expert's tokens / the mean)",
                                       cfg_in.moe_imbalance));
  SUANLI_RETURN_IF_ERROR(CheckTokensAndPrice(cfg_in.tokens, cfg_in.price_per_gpu_hour));
  if (!cfg_in.fp8_weight_cache && (!QuantizedTraining(cfg_in.dtype) || cfg_in.eager))
    return InvalidArgument("--no-fp8-weight-cache applies to FP8 or NVFP4 training with Transformer Engine (--dtype "
                           "fp8 or fp4, not --eager): only it caches quantised copies of the weights");
  if (cfg_in.dtype == Precision::kFp4 && cfg_in.eager)
    return InvalidArgument("--dtype fp4 is Transformer Engine's NVFP4 recipe; --eager (PyTorch without it) has no NVFP4 "
                           "training path in this model");
  if (!cfg_in.nvfp4_rht && cfg_in.dtype != Precision::kFp4)
    return InvalidArgument("--no-nvfp4-rht applies to NVFP4 training (--dtype fp4)");
  const GpuSpec& gpu = *cl.gpu;
  TrainConfig cfg = cfg_in;
  if (cfg.dtype == Precision::kFp4) cfg.fp8_recipe = Fp8Recipe::kNvfp4;
  else if (cfg.fp8_recipe == Fp8Recipe::kNvfp4)
    return InvalidArgument("the nvfp4 recipe is --dtype fp4's own; with --dtype fp8 use delayed, current or mxfp8");
  if (cfg.fit.weights.id.empty()) cfg.fit.weights = *ParseWeightFormat("bf16");
  SUANLI_RETURN_IF_ERROR(CheckTrainMode(m, cfg));
  const bool lora = cfg.fit.mode == Mode::kLora;
  if (!lora) cfg.fit.mode = Mode::kTrain;
  cfg.fit.explain = cfg.detail;
  cfg.fit.flash_attention = cfg.attention != AttentionImpl::kUnfused;  // memory follows the kernel choice
  // NVFP4: the kept GEMM inputs are counted at FP8's byte (Transformer Engine keeps their 4.5-bit column-wise copy),
  // an overestimate of 0.44 B per kept input element (docs/methodology.md §6.3).
  cfg.fit.fp8_activations = QuantizedTraining(cfg.dtype);
  cfg.fit.fp8_weight_cache_bytes_per_param =
      QuantizedTraining(cfg.dtype) && !cfg.eager && cfg.fp8_weight_cache
          ? Fp8WeightCacheBytesPerParam(gpu, cfg.fp8_recipe,
                                        QuantizedParameters(cfg.fit.weights.id))
          : 0;
  const Parallelism& par = cfg.fit.par;

  // Automatic micro-batch / recompute: the fastest setting that fits.
  if (cfg.micro_batch_auto || cfg.recompute_auto) {
    std::vector<int64_t> mbs;
    if (cfg.micro_batch_auto) {
      const int64_t per_rank = cfg.fit.batch / std::max(1, par.dp);
      for (int64_t b = 1; b <= std::min<int64_t>(per_rank, 64); b *= 2)
        if (per_rank % b == 0) mbs.push_back(b);
      if (mbs.empty()) mbs.push_back(1);
    } else {
      mbs.push_back(cfg.fit.micro_batch);
    }
    // Selective recompute of the attention core saves only FlashAttention's log-sum-exp for a second attention
    // forward, so the search tries it with unfused attention only (as the planner does).
    std::vector<Recompute> rcs = {cfg.fit.recompute};
    if (cfg.recompute_auto) {
      rcs = {Recompute::kNone, Recompute::kFull};
      if (cfg.attention == AttentionImpl::kUnfused) rcs.insert(rcs.begin() + 1, Recompute::kSelective);
    }
    std::optional<TrainResult> best, best_any;
    Status last = Status::Ok();
    auto consider = [&](const Result<TrainResult>& r) {
      if (!r.ok()) {
        last = r.status();
        return;
      }
      if (r->fits && (!best || r->step_time_s < best->step_time_s)) best = *r;
      if (!best_any || r->shortfall_bytes < best_any->shortfall_bytes) best_any = *r;
    };
    for (int64_t b : mbs) {
      bool none_fits = false, full_fits = false;
      for (Recompute rc : rcs) {
        TrainConfig c2 = cfg;
        c2.micro_batch_auto = c2.recompute_auto = false;
        c2.fit.micro_batch = b;
        c2.fit.recompute = rc;
        if (rc != Recompute::kFull) c2.fit.recompute_layers = 0;  // block recompute only applies to full
        auto r = EstimateTraining(m, cl, c2, eff);
        if (r.ok() && rc == Recompute::kNone) none_fits = r->fits;
        if (r.ok() && rc == Recompute::kFull && c2.fit.recompute_layers == 0) full_fits = r->fits;
        consider(r);
      }
      // Between the two: recompute of selected modules (Megatron-Core's --recompute-modules), cheaper than whole
      // layers, and block recompute of the fewest layers per chunk that fits (memory falls and time rises with
      // every layer recomputed, so the smallest N that fits is the fastest block setting).
      if (cfg.recompute_auto && !none_fits && cfg.fit.mode == Mode::kTrain) {
        for (const RecomputeModules& mods : RecomputeModuleLadder(m, cfg.attention, cfg.dtype, cfg.fp8_recipe)) {
          TrainConfig c2 = cfg;
          c2.micro_batch_auto = c2.recompute_auto = false;
          c2.fit.micro_batch = b;
          c2.fit.recompute = Recompute::kSelective;
          c2.fit.recompute_layers = 0;
          c2.fit.recompute_modules = mods;
          consider(EstimateTraining(m, cl, c2, eff));
        }
      }
      if (cfg.recompute_auto && full_fits && !none_fits) {
        TrainConfig c2 = cfg;
        c2.micro_batch_auto = c2.recompute_auto = false;
        c2.fit.micro_batch = b;
        if (auto fit_block = FewestBlockRecomputeThatFits(m, cl, c2, eff)) consider(*fit_block);
      }
    }
    if (best) {
      best->notes.push_back(fmt::format(
          "chosen automatically: micro-batch {}, recompute {} (fastest that fits)", best->micro_batch,
          RecomputeWords(best->recompute, best->recompute_layers, best->recompute_modules)));
      return *best;
    }
    if (best_any) return *best_any;
    return last;
  }

  SUANLI_RETURN_IF_ERROR(ValidateRequest(m, cfg.fit));
  if (cfg.ep_overlap) SUANLI_RETURN_IF_ERROR(CheckEpOverlap(m, par, cfg.fit.recompute));
  SUANLI_RETURN_IF_ERROR(CheckCpComm(m, par, cfg.cp_comm));
  if (cfg.fp8_attention) {
    if (cfg.dtype != Precision::kFp8 && cfg.dtype != Precision::kFp4)
      return InvalidArgument(fmt::format("--fp8-attention runs attention in FP8 inside Transformer Engine's FP8 "
                                         "autocast: it needs --dtype fp8 or fp4, not {}",
                                         PrecisionKey(cfg.dtype)));
    if (cfg.attention != AttentionImpl::kFlash || cfg.eager)
      return InvalidArgument("--fp8-attention is Transformer Engine's fused attention: it needs --attention flash "
                             "and no --eager");
  }
  const double rc_share = RecomputedLayerShare(m, par, cfg.fit.recompute, cfg.fit.recompute_layers);
  if (cfg.fit.batch % (par.dp * cfg.fit.micro_batch) != 0)
    return InvalidArgument("global batch must be divisible by DP x micro-batch");
  TrainResult res;
  res.micro_batch = cfg.fit.micro_batch;
  res.recompute = cfg.fit.recompute;
  res.recompute_layers = cfg.fit.recompute == Recompute::kFull ? cfg.fit.recompute_layers : 0;
  res.recompute_modules = EffectiveRecomputeModules(cfg.fit.recompute, cfg.fit.recompute_modules);
  res.offload_layers = cfg.fit.offload_layers;
  res.interleave = par.interleave;
  const int n_gpus = par.gpus();
  const double s = double(cfg.fit.seq);
  const double b = double(cfg.fit.micro_batch);
  const int mb_count = static_cast<int>(cfg.fit.batch / (par.dp * cfg.fit.micro_batch));
  res.num_micro_batches = mb_count;

  // Memory (a single-pass loss keeps no FP32 copy of the logits).
  FitRequest fit = cfg.fit;
  if (cfg.cross_entropy == CrossEntropyImpl::kOnline) fit.loss_bytes_per_logit = 4;
  if (lora) fit.gradient_checkpointing = cfg.fit.recompute == Recompute::kFull;
  auto mem = EstimateMemory(m, fit);
  if (!mem.ok()) return mem.status();
  res.memory = *mem;
  const FitVerdict fv = CheckFit(*mem, gpu);
  res.fits = fv.fits;
  res.shortfall_bytes = std::max(0.0, -fv.headroom_bytes);
  res.host_capacity_bytes = fv.host_capacity_bytes;
  res.host_shortfall_bytes = fv.host_fits ? 0.0 : mem->host_offload_bytes - fv.host_capacity_bytes;

  // Precision.
  double peak = PeakFor(gpu, cfg.dtype);
  double gemm_eff = eff.gemm;
  double elem = 2;
  if (cfg.dtype == Precision::kFp8) {
    SUANLI_RETURN_IF_ERROR(CheckFp8Training(gpu, cfg.fp8_recipe));
    if (cfg.fit.recompute == Recompute::kSelective && cfg.fp8_recipe == Fp8Recipe::kDelayed &&
        (cfg.fit.recompute_modules.moe_act || cfg.fit.recompute_modules.layernorm))
      return InvalidArgument(fmt::format(
          "--recompute-modules {} with FP8 needs --fp8-recipe current or mxfp8: Megatron-Core refuses moe_act and "
          "layernorm recompute under delayed scaling",
          RecomputeModulesList(cfg.fit.recompute_modules)));
    gemm_eff = perf_detail::GemmEfficiencyFor(eff, Precision::kFp8);
    elem = 1;
  } else if (cfg.dtype == Precision::kFp4) {
    SUANLI_RETURN_IF_ERROR(CheckFp8Training(gpu, Fp8Recipe::kNvfp4));
    gemm_eff = perf_detail::GemmEfficiencyFor(eff, Precision::kFp4);
    elem = kNvfp4BytesPerElement;
  }
  if (peak <= 0) return InvalidArgument(fmt::format("{} has no {} peak in the catalog", gpu.id, PrecisionKey(cfg.dtype)));
  res.peak_flops_per_gpu = peak;

  // The imbalance factor is the busiest expert-parallel rank's extra rows; with EP 1 every GPU holds every expert
  // and runs all of the step's token-expert pairs however the router spreads them (methodology section 8).
  const double moe_imbalance = par.ep > 1 ? cfg.moe_imbalance : 1.0;
  LayerContext lc{&m, &gpu, &eff, &cl, b * s / par.cp, s, b, par.tp, par.cp, par.ep, par.sequence_parallel,
                  par.expert_tp(), peak, gemm_eff, elem, cfg.attention, moe_imbalance, false, cfg.fit.dropout,
                  cfg.eager, cfg.fp8_recipe, rc_share, cfg.moe_dispatcher, cfg.cp_comm, cfg.fp8_attention};
  lc.attn_seq = cfg.packed_doc_tokens > 0 ? double(cfg.packed_doc_tokens) : 0.0;
  lc.recompute_modules = cfg.fit.recompute_modules;
  lc.tp_grad_overlap = cfg.tp_grad_overlap && !cfg.eager;
  if (cfg.dtype == Precision::kFp8) lc.grad_gemm_rate = eff.gemm_fp8_precise;
  lc.nvfp4_rht = cfg.dtype == Precision::kFp4 && cfg.nvfp4_rht;
  lc.wgrad_out_bytes = perf_detail::WeightGradOutputBytes(cfg.eager, cfg.fit.fp32_grads ? 4 : 2,
                                                          cfg.fit.batch / (par.dp * cfg.fit.micro_batch),
                                                          par.zero == 3 && par.dp * par.cp > 1);
  if (lora) {
    SUANLI_ASSIGN_OR_RETURN(lc.adapters, LoraTargetShapes(m, cfg.fit.lora_targets, par.tp));
    lc.frozen = true;
    lc.lora_rank = cfg.fit.lora_rank;
    lc.lora_dropout = cfg.fit.lora_dropout;
  }
  OpList ops;
  OpList* opsp = cfg.detail ? &ops : nullptr;
  PassTimes dense = Layer(lc, cfg.fit.recompute, opsp);
  PassTimes moe;
  double moe_overhead = 1;
  double moe_overhead_share = 0;  // the share of an MoE layer's time that the multiple adds
  const int moe_layers = m.moe_layer_count();
  if (moe_layers > 0) {
    lc.moe_layer = true;
    OpList moe_ops;
    moe = Layer(lc, cfg.fit.recompute, opsp ? &moe_ops : nullptr);
    // Megatron-Core's MoE layers take longer than their operators add up to (docs/validation.md §4): the calibrated
    // multiple, by CUDA-graph mode, on the layer's computation (its collectives are modelled on their own).
    moe_overhead = cfg.cuda_graphs == CudaGraphs::kFull ? eff.moe_layer_time_full_graph : eff.moe_layer_time_eager;
    // The shared experts' GEMMs are ordinary dense GEMMs beside the routed machinery and are not multiplied.
    const double before = moe.fwd + moe.bwd + moe.recompute;
    moe.fwd = (moe.fwd - moe.shared_fwd) * moe_overhead + moe.shared_fwd;
    moe.bwd = (moe.bwd - moe.shared_bwd - moe.tp_bwd_overlapped) * moe_overhead + moe.shared_bwd + moe.tp_bwd_overlapped;
    moe.recompute = (moe.recompute - moe.shared_recompute) * moe_overhead + moe.shared_recompute;
    const double after = moe.fwd + moe.bwd + moe.recompute;
    moe_overhead_share = after > 0 ? (after - before) / after : 0;
    for (auto& o : moe_ops.ops) {
      o.name = "[moe] " + o.name;
      ops.ops.push_back(o);
    }
  }
  // The slowest of the job's GPUs sets the pace (docs/methodology.md §8): every kernel of the critical path takes
  // `lag` times a typical GPU's.
  const double lag = perf_detail::SlowestGpuLag(eff.gpu_speed_spread, par.gpus());
  for (PassTimes* p : {&dense, &moe}) {
    p->fwd *= lag;
    p->bwd *= lag;
    p->recompute *= lag;
  }
  // Per stage: layers, and the head on the last stage.
  auto stage_layers = [&](int st) { return LayersOnStage(m, par, st); };
  int max_stage_layers = 0;  // the fullest stage: the first of an uneven split, a middle one with embedding_loss_in_split
  for (int st = 0; st < par.pp; ++st) max_stage_layers = std::max(max_stage_layers, stage_layers(st));
  const double moe_frac = m.layers > 0 ? double(moe_layers) / m.layers : 0;
  auto per_layer = [&](double dense_v, double moe_v) { return (1 - moe_frac) * dense_v + moe_frac * moe_v; };
  const double lf = per_layer(dense.fwd, moe.fwd), lb = per_layer(dense.bwd, moe.bwd),
               lr = per_layer(dense.recompute, moe.recompute);
  const double ltp = per_layer(dense.tp_comm, moe.tp_comm), lep = moe_frac * moe.ep_comm;
  // Logits and loss on the last stage.
  const double T = b * s / par.cp;
  // The output layer stays in 16-bit under FP8 training: Transformer Engine's FP8 covers the transformer
  // layers' linears, and Megatron's output layer is not one of them.
  const double peak16 = PeakFor(gpu, Precision::kBf16);
  const double head_elem = QuantizedTraining(cfg.dtype) ? 2.0 : elem;
  const GemmTime head = QuantizedTraining(cfg.dtype)
                            ? EstimateGemm(T, double(m.vocab) / par.tp, double(m.hidden), 1, 2, peak16, eff.gemm, gpu, eff)
                            : EstimateGemm(T, double(m.vocab) / par.tp, double(m.hidden), 1, elem, peak, gemm_eff, gpu, eff);
  // Its gradients as every linear's (a frozen head, LoRA: the data gradient alone); 16-bit, so at the forward's rate.
  const double head_grads = GradientGemmsTime(head, T, double(m.vocab) / par.tp, double(m.hidden), 1, head_elem, 1.0,
                                              lc.wgrad_out_bytes, lora, gpu, eff);
  const double logits_here = T * double(m.vocab) / par.tp;
  const LossTraffic lt = LossTrafficOf(cfg.cross_entropy);
  const double hbm = gpu.memory_bandwidth_bytes_per_s.value * eff.memory;
  const double loss_fwd_t = logits_here * lt.fwd_bytes / hbm + lt.fwd_kernels * eff.kernel_launch_s;
  const double loss_bwd_t = logits_here * lt.bwd_bytes / hbm + lt.bwd_kernels * eff.kernel_launch_s;
  if (opsp) {
    ops.Add("logits (output head)", "forward", head.flops, head.bytes, head.time_s, 1, head.bound);
    ops.Add(kCrossEntropyOpName, "forward", 0, logits_here * lt.fwd_bytes, loss_fwd_t, 1, Bound::kMemory);
  }
  const double head_time = (head.time_s + head_grads + loss_fwd_t + loss_bwd_t) * lag;

  // Eager PyTorch FSDP: host-side time per layer per micro-batch that the GPU waits for (forward and backward;
  // a recomputed forward adds half the backward's share again, i.e. passes / 3 of forward + backward + forward).
  const bool eager_fsdp = cfg.eager && par.zero == 3;
  // torchtitan's per-op checkpointing reruns most of the forward's kernels too.
  const double host_passes = 1.0 + (cfg.fit.recompute == Recompute::kOp ? 1.0 : rc_share) / 3.0;
  const double host_layer = eager_fsdp ? eff.eager_fsdp_host_per_layer_s * host_passes : 0;
  // CPU activation offloading (PP 1, so one stage holds every layer): the copies of each offloaded layer's
  // activations to the host and back, against one layer's forward and backward, each as long as it takes: its compute
  // stretched by the layer's exposed TP, CP and EP collectives (during which the copies go on).
  double offload_stall = 0, offload_d2h = 0, offload_h2d = 0;
  if (cfg.fit.offload_layers > 0) {
    if (cl.host_bw_per_dir <= 0)
      return InvalidArgument(fmt::format("--offload-layers: the catalog has no host link (PCIe or NVLink-C2C) for {}; "
                                         "add [pcie] or [host_link] to its GPU file", gpu.id));
    const double bytes = res.memory.offload_layer_bytes;
    offload_d2h = bytes / (cl.host_bw_per_dir * eff.host_d2h);
    offload_h2d = bytes / (cl.host_bw_per_dir * eff.host_h2d);
    const double layer_comm = ltp * (cfg.tp_overlap ? 1 - eff.tp_overlap_hidden : 1.0) +
                              (cfg.ep_overlap ? 0.0 : lep) + per_layer(dense.cp_comm, moe.cp_comm);
    const double stretch = lf + lb > 0 ? 1 + layer_comm / (lf + lb) : 1.0;
    offload_stall = OffloadStallSeconds(m.layers, cfg.fit.offload_layers, lf * stretch, lb * stretch, head_time,
                                        offload_d2h, offload_h2d);
  }
  // A multi-token-prediction module (--mtp-layers): one more layer of the model's last kind (an MoE layer where the
  // model has them), the projection of [norm(h); norm(embedding of the next token)] (2h to h, column-parallel), and
  // the shared output layer and loss again (Megatron-Core's MultiTokenPredictionBlock), forward and backward.
  const bool mtp_moe = moe_layers > 0;
  const PassTimes& mtp_layer = mtp_moe ? moe : dense;
  double mtp_time = 0;
  if (cfg.fit.mtp_layers > 0) {
    const GemmTime proj = EstimateGemm(T, double(m.hidden) / par.tp, 2.0 * m.hidden, 1, elem, peak, gemm_eff, gpu, eff);
    const double proj_grads = GradientGemmsTime(proj, T, double(m.hidden) / par.tp, 2.0 * m.hidden, 1, elem,
                                                lc.grad_gemm_rate, lc.wgrad_out_bytes, false, gpu, eff);
    mtp_time = mtp_layer.fwd + mtp_layer.bwd + mtp_layer.recompute + (proj.time_s + proj_grads) * lag + head_time;
    if (opsp) ops.Add("MTP projection (2h to h)", "forward", proj.flops, proj.bytes, proj.time_s, 1, proj.bound);
  }
  // FP8 weight casts (Transformer Engine, not eager): each TE linear quantises its weight on the step's first
  // micro-batch and keeps the copy for the others (Megatron-Core passes is_first_microbatch), or on every micro-batch
  // without the cache (--no-fp8-weight-cache: disable_parameter_transpose_cache=True; torchao's Float8 linears cast
  // every time, and the compiled torchtitan runs it serves are ZeRO-3, below). A memory-bound pass over the
  // layer's linear weights on this GPU (the router stays 16-bit) and a kernel per weight tensor (two with current
  // scaling: amax, then cast): grouped expert linears cast each local expert's weight on its own.
  double wcast_dense = 0, wcast_moe = 0, wbytes_dense = 0, wbytes_moe = 0;  // seconds and bytes per layer per cast
  if (QuantizedTraining(cfg.dtype) && !cfg.eager) {
    const ParamCounts& pc = res.memory.params;
    const bool fp8_params = QuantizedParameters(cfg.fit.weights.id);
    const double cast_b = perf_detail::Fp8WeightCastBytesPerParam(gpu, cfg.fp8_recipe, fp8_params);
    const double kernels_per_tensor =
        cast_b <= 0                                                                   ? 0.0
        : fp8_params                                                                  ? 1.0
        : cfg.fp8_recipe == Fp8Recipe::kCurrent || cfg.fp8_recipe == Fp8Recipe::kNvfp4 ? 2.0
                                                                                      : 1.0;
    const int dense_layers = m.layers - moe_layers;
    const double attn_w = pc.attention / std::max(1, m.layers) / par.tp;
    if (dense_layers > 0) {
      const double w = attn_w + pc.mlp_dense / dense_layers / par.tp;
      wbytes_dense = w * cast_b;
      wcast_dense = (wbytes_dense / hbm + 4 * kernels_per_tensor * eff.kernel_launch_s) * lag;
    }
    if (moe_layers > 0) {
      const double local_experts = double(m.moe->num_experts) / par.ep;
      const double w = attn_w + pc.moe_shared / moe_layers / par.tp +
                       pc.moe_experts / moe_layers / (double(par.expert_tp()) * par.ep);
      const double tensors = 2 + 2 * local_experts + (pc.moe_shared > 0 ? 2 : 0);
      wbytes_moe = w * cast_b;
      wcast_moe = (wbytes_moe / hbm + tensors * kernels_per_tensor * eff.kernel_launch_s) * lag;
    }
  }
  // Under ZeRO-3 sharding the weights are gathered per micro-batch and no step-long copy is kept (the memory model's
  // rule too), so they are cast each time.
  const bool wcast_every_mb = !cfg.fp8_weight_cache || (par.zero == 3 && par.dp * par.cp > 1);
  double wcast_sum = 0, wbytes_sum = 0;  // cached: every rank's casts once, and their bytes
  double stage_wcast = 0, stage_wbytes = 0;  // the pacing rank's casts, once; their bytes
  // FP8 delayed scaling (Transformer Engine): at the exit of each model chunk's fp8_autocast, after its forward and
  // after its backward, one max all-reduce of the chunk's amaxes over Megatron-Core's amax-reduction group (TP x DP x
  // CP ranks since core_r0.9.0, TP x CP before it and with --tp-only-amax-red: get_amax_reduction_group), issued on
  // the compute stream and waited for (async_op=False): exposed, a latency-bound collective whose group grows with
  // data parallelism. Amaxes per layer: about 3 forward and 2 backward per GEMM module, four modules, 4 bytes each.
  double delayed_amax_mb = 0;
  if (cfg.dtype == Precision::kFp8 && cfg.fp8_recipe == Fp8Recipe::kDelayed) {
    const int chunks = par.pp > 1 ? par.interleave : 1;
    const double layers_per_chunk = std::max(1.0, double(LayersOnStage(m, par, 0)) / chunks);
    const int group = par.tp * par.cp * (cfg.tp_only_amax_reduction ? 1 : par.dp);
    delayed_amax_mb = chunks * (GroupCollectiveTime(cl, eff, NcclOp::kAllReduce, layers_per_chunk * 12 * 4, group, 1) +
                                GroupCollectiveTime(cl, eff, NcclOp::kAllReduce, layers_per_chunk * 8 * 4, group, 1));
  }
  // ZeRO-3 / FSDP: parameters gathered for forward and backward and gradients reduce-scattered, every micro-batch,
  // on a stream of their own: on each pipeline rank they overlap all the rank does for that micro-batch, its compute
  // and its waits for TP, CP and EP collectives, which run slower meanwhile (the stage loop below).
  // Parameters whose gradients and optimizer states this GPU keeps: all it holds, or under LoRA its share of the
  // adapters (the frozen weights have neither).
  const double params_gpu =
      lora ? res.memory.trainable_params / (double(par.tp) * par.pp) : res.memory.params_per_gpu;
  const int dp_group = par.dp * par.cp;
  const double grad_width = cfg.fit.fp32_grads ? 4 : 2;  // bytes per gradient the reductions move
  // Bytes per parameter the parameter all-gathers move: the 16-bit weights, or under FP8 parameters (--weights fp8:
  // Megatron-Core --fp8-param-gather, NeMo fp8_params) one byte for the layers' weights and two for the embedding
  // and output layer, which stay 16-bit.
  const ParamCounts& pcount = res.memory.params;
  const double nonlayer_share = pcount.total > 0 ? pcount.non_layer_total / pcount.total : 0.0;
  // NVFP4 parameters (--weights nvfp4): 0.5625 B for the layers' weights.
  const double gather_b = lora                                ? 2.0
                          : cfg.fit.weights.id == "fp8"   ? 1.0 + nonlayer_share
                          : cfg.fit.weights.id == "nvfp4" ? kNvfp4BytesPerElement * (1 - nonlayer_share) + 2 * nonlayer_share
                                                          : 2.0;
  // ZeRO-0 reduces gradients with an all-reduce; ZeRO-1/2 with a reduce-scatter and an all-gather of the updated
  // parameters (the same volume), and ZeRO-3 gathers and reduce-scatters: only the all-reduce can use NVLS.
  const auto dp_collective = [&](NcclOp op, double bytes) {
    return GroupCollectiveTime(cl, eff, op, bytes, dp_group, par.tp);
  };
  // Megatron-Core's DDP reduces and gathers in buckets of max(40M, 1M x DP) parameters when it overlaps them
  // (distributed_data_parallel.py: the default bucket_size), one collective per bucket, each paying the ring's latency;
  // Apex's DistributedFusedAdam (NeMo 1.x) in buckets of a fixed number of gradient bytes, splitting tensors across
  // them (--dp-bucket-mb: apex/contrib/optimizers/distributed_fused_adam.py sizes a bucket as bucket_cap_mb x 2^20
  // bytes of its grad_sync_dtype); a Megatron-Core bucket_size given in parameters is taken the same way.
  const double bucket_params =
      cfg.dp_bucket_bytes > 0 ? cfg.dp_bucket_bytes / grad_width : std::max(40e6, 1e6 * dp_group);
  const double dp_buckets =
      cfg.dp_overlap && par.zero < 3 ? std::max(1.0, std::ceil(params_gpu / bucket_params)) : 1.0;
  const auto dp_bucketed = [&](NcclOp op, double bytes) { return dp_buckets * dp_collective(op, bytes / dp_buckets); };
  double zero3_comm_mb = 0;
  if (par.zero == 3 && dp_group > 1) {
    // FSDP (PyTorch FSDP1/2, Megatron FSDP) shards and gathers per wrapped unit, a transformer block: one
    // all-gather per block in the forward, one in the backward and one reduce-scatter of its gradients, each
    // paying the ring's latency.
    const double pbytes = params_gpu * gather_b;
    const double units = std::max(1, max_stage_layers);
    const double gbytes3 = params_gpu * grad_width;
    zero3_comm_mb = units * (2 * dp_collective(NcclOp::kAllGather, pbytes / units) +
                             dp_collective(NcclOp::kReduceScatter, gbytes3 / units));
    if (opsp) {
      const std::string runs = fmt::format("per block ({} on the busiest stage) and micro-batch", units);
      ops.collectives.push_back(DescribeCollective(cl, eff, NcclOp::kAllGather, pbytes / units, dp_group, par.tp,
                                                   "FSDP parameter all-gather (one block)", "2 " + runs));
      ops.collectives.push_back(DescribeCollective(cl, eff, NcclOp::kReduceScatter,
                                                   gbytes3 / units, dp_group, par.tp,
                                                   "FSDP gradient reduce-scatter (one block)", "1 " + runs));
    }
  }
  double stage_compute = 0, stage_comm = 0, stage_host = 0, zero3_exposed_mb = 0;
  double ranks_total = 0;            // every rank's time per micro-batch, summed: the pipeline's fill and drain
  int stage_moe = 0, stage_mtp = 0;  // the pacing stage's MoE layers and MTP modules
  const std::vector<int> moe_per_stage = moe_layers > 0 ? MoeLayersPerStage(m, par) : std::vector<int>();
  // The slowest stage sets the pace: the first holds the most layers of an uneven split, the last adds the head,
  // with the embedding and loss counted as layers the middle ones hold one layer more than both, and a custom
  // layout (--pp-layout) puts layers and MTP modules where it says.
  for (int st = 0; st < par.pp; ++st) {
    const int ls = stage_layers(st);
    const int mtp = MtpOnStage(par, cfg.fit.mtp_layers, st);
    // The rank's own mix of dense and MoE layers (DeepSeek's first dense layers sit on the first rank).
    const int ls_moe = moe_per_stage.empty() ? 0 : moe_per_stage[static_cast<size_t>(st)], ls_dense = ls - ls_moe;
    const double rank_tp = ls_dense * dense.tp_comm + ls_moe * moe.tp_comm, rank_ep = ls_moe * moe.ep_comm,
                 rank_cp = ls_dense * dense.cp_comm + ls_moe * moe.cp_comm,
                 rank_cp_hidden = ls_dense * dense.cp_hidden + ls_moe * moe.cp_hidden;
    const double layer_work = ls_dense * (dense.fwd + dense.bwd + dense.recompute) +
                              ls_moe * (moe.fwd + moe.bwd + moe.recompute) +
                              mtp * (mtp_layer.fwd + mtp_layer.bwd + mtp_layer.recompute);
    double comp = layer_work + mtp * (mtp_time - (mtp_layer.fwd + mtp_layer.bwd + mtp_layer.recompute)) +
                  (st == par.pp - 1 ? head_time : 0);
    const double rank_wcast = ls_dense * wcast_dense + ls_moe * wcast_moe + mtp * (mtp_moe ? wcast_moe : wcast_dense);
    const double rank_wbytes = ls_dense * wbytes_dense + ls_moe * wbytes_moe + mtp * (mtp_moe ? wbytes_moe : wbytes_dense);
    if (wcast_every_mb) {
      comp += rank_wcast;
    } else {
      wcast_sum += rank_wcast;
      wbytes_sum += rank_wbytes;
    }
    // With --tp-overlap the share tp_overlap_hidden of the TP collectives hides under the layer's GEMMs (the rest
    // stays exposed), and with --ep-overlap the expert all-to-all under the other micro-batch's compute, both at
    // the contention cost (one compute window shared).
    const double mtp_tp = mtp * mtp_layer.tp_comm, mtp_ep = mtp * mtp_layer.ep_comm;
    const double tp_hidden = cfg.tp_overlap ? eff.tp_overlap_hidden * (rank_tp + mtp_tp) : 0.0;
    const double hidden_comm = tp_hidden + (cfg.ep_overlap ? rank_ep + mtp_ep : 0);
    // The window includes the waits for offloaded activations (PP 1, so this one rank's): the collectives run on
    // their own streams while the compute stream waits for a copy.
    // The attention time that already hides the CP ring exchange is not there again for them (otherwise a faster
    // attention kernel would expose more of the ring and of these at once, and a step could get slower).
    double comm = OverlapCost(std::max(0.0, layer_work + offload_stall - rank_cp_hidden), hidden_comm,
                              eff.overlap_slowdown);
    comm += (rank_tp + mtp_tp - tp_hidden) + (cfg.ep_overlap ? 0 : rank_ep + mtp_ep) + rank_cp + delayed_amax_mb;
    const double host = (ls + mtp) * host_layer;
    // Each rank's ZeRO-3 traffic is exposed where its own micro-batch does not hide it: a rank with less work (no
    // output head) leaves more of it exposed, and fills and drains the pipeline no faster than its collectives allow.
    // The gathers go on while the GPU waits for activation copies too (offload stalls: PP 1, so this one rank's).
    const double z3 =
        zero3_comm_mb > 0 ? OverlapCost(comp + comm + offload_stall, zero3_comm_mb, eff.overlap_slowdown) : 0.0;
    const double rank_time = comp + comm + host + z3;
    if (cfg.detail && par.pp > 1) res.pipeline_ranks.push_back({ls, mtp, st == par.pp - 1, rank_time});
    ranks_total += rank_time;
    if (rank_time > stage_compute + stage_comm + stage_host + zero3_exposed_mb) {
      stage_compute = comp;
      stage_comm = comm;
      stage_host = host;
      zero3_exposed_mb = z3;
      stage_moe = ls_moe;
      stage_mtp = mtp;
      stage_wcast = rank_wcast;
      stage_wbytes = rank_wbytes;
    }
  }
  // The calibrated MoE-layer overhead inside the pacing stage's compute, per micro-batch.
  const double moe_overhead_mb =
      moe_overhead > 1 ? (stage_moe + (mtp_moe ? stage_mtp : 0)) * moe_overhead_share *
                             (moe.fwd + moe.bwd + moe.recompute)
                       : 0;
  // Pipeline point-to-point: activations forward, gradients backward, per micro-batch per boundary
  // (Megatron's scatter-gather optimisation sends 1/TP of the tensor per rank).
  double p2p = 0, p2p_total = 0;
  if (par.pp > 1) {
    // Adjacent stages are TP x CP x DP ranks apart: point-to-point over each GPU's own NIC across nodes.
    const bool inter = par.tp * par.cp * par.dp >= cl.gpus_per_node;
    const double bw = inter ? cl.inter_bw_per_gpu * eff.network : cl.intra_bw_per_dir * eff.link;
    const double alpha = inter ? cl.inter_latency_s : cl.intra_latency_s;
    p2p_total = 2 * P2PTime(T * m.hidden * 2 / par.tp, bw, alpha) * par.interleave;
    // The interleaved schedule posts each chunk's sends and receives before the next chunk's compute and waits for
    // them after it (Megatron-LM's --overlap-p2p-communication, on unless --no-overlap-p2p-communication; core_v0.8.0
    // schedules.py); the plain 1F1B schedule's are blocking.
    p2p = par.interleave > 1 ? OverlapCost(stage_compute, p2p_total, eff.overlap_slowdown) : p2p_total;
  }
  const double t_mb = stage_compute + stage_comm + p2p + zero3_exposed_mb + stage_host + offload_stall;
  // The bubble: filling and draining the pipeline takes every other rank's time per micro-batch once (a flow shop of
  // identical jobs: makespan = the sum of the stage times + (m - 1) x the slowest; (PP - 1) x the slowest when the
  // ranks are equal), over VP with interleaving (Narayanan et al. 2021 §2.2), and waits for every hop's transfer,
  // overlapped or not.
  const double pacing_rank = stage_compute + stage_comm + stage_host + zero3_exposed_mb;
  const double bubble =
      ((ranks_total - pacing_rank) + double(par.pp - 1) * (t_mb - pacing_rank - p2p + p2p_total)) / par.interleave;
  // Cached weight casts: each rank's casts lengthen its first micro-batch's forward, once per step. The pacing rank
  // does its own, and the pipeline's fill waits for the other ranks' first model chunk's (over VP with interleaving,
  // as the bubble does).
  const double wcast_fill = wcast_every_mb ? 0.0 : stage_wcast + (wcast_sum - stage_wcast) / par.interleave;
  const double fill_wbytes = wcast_every_mb ? 0.0 : stage_wbytes + (wbytes_sum - stage_wbytes) / par.interleave;
  const double pipeline = mb_count * t_mb + bubble + wcast_fill;

  // Data-parallel gradient reduction (ZeRO 0-2: all-reduce volume; 1-2 as reduce-scatter + all-gather).
  double dp_comm = 0, dp_exposed = 0;
  if (dp_group > 1 && par.zero < 3) {
    // Gradients move at their own width (4 B with --fp32-grads); the all-gather after the sharded optimizer step
    // moves the updated 16-bit parameters (Megatron's distributed optimizer gathers the model's bf16/fp16 copy).
    const double gbytes = params_gpu * grad_width;
    const double reduce = par.zero == 0 ? dp_bucketed(NcclOp::kAllReduce, gbytes)
                                        : dp_bucketed(NcclOp::kReduceScatter, gbytes);
    const double gather = par.zero == 0 ? 0.0 : dp_bucketed(NcclOp::kAllGather, params_gpu * gather_b);
    dp_comm = reduce + gather;
    if (opsp) {
      const std::string runs = fmt::format("{:.0f} per step (one per bucket)", dp_buckets);
      ops.collectives.push_back(DescribeCollective(
          cl, eff, par.zero == 0 ? NcclOp::kAllReduce : NcclOp::kReduceScatter, gbytes / dp_buckets, dp_group, par.tp,
          par.zero == 0 ? "DP gradient all-reduce (one bucket)" : "DP gradient reduce-scatter (one bucket)", runs));
      if (par.zero > 0)
        ops.collectives.push_back(DescribeCollective(cl, eff, NcclOp::kAllGather, params_gpu * gather_b / dp_buckets,
                                                     dp_group, par.tp, "DP parameter all-gather (one bucket)", runs));
    }
    // Overlap windows: the gradients are reduced during the backward pass of the last micro-batch on this stage;
    // the updated parameters are gathered during the forward pass of the next step's first micro-batch (Megatron-Core
    // --overlap-param-gather: each module's forward pre-hook waits for its bucket; FSDP's forward prefetch).
    // Under an interleaved pipeline Megatron-Core issues both per model chunk (core_v0.8.0 schedules.py: grad_sync_func
    // when a chunk's last micro-batch has gone backward, param_sync_func before a chunk's first forward). A GPU's
    // chunks finish their last backward (and start their first forward) PP micro-batch steps of one chunk apart, so
    // the earlier chunks' collectives hide under the later chunks' work.
    const int v = par.pp > 1 ? par.interleave : 1;
    // A window lasts as long as the passes take, waits for the layers' TP, CP and EP collectives and for offloaded
    // activations' copies included (the reductions run on a stream of their own meanwhile): the compute stretched by
    // the rank's exposed share.
    const double stretch =
        stage_compute > 0 ? (stage_compute + stage_comm + offload_stall) / stage_compute : 1.0;
    const double bwd_chunk = cfg.dp_overlap ? stretch * max_stage_layers * (lb + lr) / v : 0;
    const double fwd_chunk = cfg.dp_overlap ? stretch * max_stage_layers * lf / v : 0;
    const double p_steps = v > 1 ? par.pp : 0;
    dp_exposed = ChunkedOverlapCost(bwd_chunk, p_steps * bwd_chunk, v, reduce, eff.overlap_slowdown) +
                 ChunkedOverlapCost(fwd_chunk, p_steps * fwd_chunk, v, gather, eff.overlap_slowdown);
  }
  // Optimizer step over the locally held (sharded) parameters.
  const double local_params = par.zero >= 1 ? params_gpu / dp_group : params_gpu;
  const double opt_bytes = local_params * OptimizerStepBytesPerParam(*mem, cfg.fit.master, lora);
  const double achievable_bw = gpu.memory_bandwidth_bytes_per_s.value * eff.memory;
  const double t_adam = opt_bytes / achievable_bw + 10 * eff.kernel_launch_s;
  // Megatron-Core DDP's passes over the whole local gradient buffer (eager PyTorch and ZeRO-3 keep no such buffer).
  const double grad_buffer_bytes =
      cfg.eager || par.zero >= 3
          ? 0.0
          : params_gpu * grad_width *
                (kGradBufferZeroWidths + (dp_group > 1 ? kGradBufferScaleWidths : 0));
  const double t_grad_buffer = grad_buffer_bytes > 0 ? grad_buffer_bytes / achievable_bw + eff.kernel_launch_s : 0.0;
  const double t_opt = t_adam + t_grad_buffer;
  if (opsp) {
    if (cfg.fit.recompute == Recompute::kOp) {
      // The per-operator rows above count no recompute; torchtitan's per-op policy reruns part of each layer.
      const double n = double(mb_count) * max_stage_layers;
      ops.Add("recompute: torchtitan per-op (wk, wo, up or fc2, element-wise)", "step", n * dense.recompute_flops, 0,
              n * dense.recompute, 1, Bound::kCompute);
    }
    ops.Add(lora || cfg.fit.optimizer == Optimizer::kAdam
                ? std::string("optimizer step (Adam)")
                : fmt::format("optimizer step ({})", OptimizerName(cfg.fit.optimizer)),
            "step", 0, opt_bytes, t_adam, 1, Bound::kMemory);
    if (t_grad_buffer > 0) ops.Add(kGradBufferOpName, "step", 0, grad_buffer_bytes, t_grad_buffer, 1, Bound::kMemory);
    if (stage_wcast > 0)
      ops.Add(wcast_every_mb ? "FP8 weight casts, every micro-batch (no weight cache)"
                             : "FP8 weight casts, first micro-batch (cached for the step)",
              "step", 0, wcast_every_mb ? mb_count * stage_wbytes : fill_wbytes,
              wcast_every_mb ? mb_count * stage_wcast : wcast_fill, 1, Bound::kMemory);
    if (dp_comm > 0) {
      const double gbytes = params_gpu * grad_width;
      if (par.zero == 0)
        ops.Add("DP gradient all-reduce", "step", 0, gbytes, dp_comm, 1, Bound::kCommunication);
      else
        ops.Add("DP gradient reduce-scatter + parameter all-gather", "step", 0, gbytes + params_gpu * gather_b, dp_comm, 1,
                Bound::kCommunication);
    }
    if (stage_host > 0) ops.Add("host overhead (eager FSDP)", "step", 0, 0, mb_count * stage_host, 1, Bound::kLatency);
    if (moe_overhead > 1)
      ops.Add(fmt::format("MoE layers beyond their operators (calibrated x{:.2f}, CUDA graphs {})", moe_overhead,
                          CudaGraphsName(cfg.cuda_graphs)),
              "step", 0, 0, mb_count * moe_overhead_mb, 1, Bound::kCalibrated);
    if (cfg.fit.offload_layers > 0) {
      const double n = cfg.fit.offload_layers * double(mb_count);
      ops.Add("activation offload to host (D2H)", "step", 0, n * res.memory.offload_layer_bytes, n * offload_d2h, 1,
              Bound::kCommunication);
      ops.Add("activation reload from host (H2D)", "step", 0, n * res.memory.offload_layer_bytes, n * offload_h2d, 1,
              Bound::kCommunication);
    }
  }

  res.step_time_s = pipeline + dp_exposed + t_opt;
  res.breakdown_s.moe_overhead = mb_count * moe_overhead_mb;
  res.breakdown_s.compute = mb_count * stage_compute - res.breakdown_s.moe_overhead + wcast_fill;
  res.breakdown_s.communication_exposed = mb_count * (stage_comm + p2p + zero3_exposed_mb) + dp_exposed;
  res.breakdown_s.pipeline_bubble = bubble;
  res.breakdown_s.optimizer = t_opt;
  res.breakdown_s.host = mb_count * stage_host;
  res.breakdown_s.offload = mb_count * offload_stall;
  res.communication_total_s =
      mb_count * (max_stage_layers * (ltp + lep) + p2p_total + zero3_comm_mb + delayed_amax_mb) + dp_comm;

  // Throughput and utilisation.
  const double tokens_step = double(cfg.fit.batch) * s;
  res.tokens_per_s = tokens_step / res.step_time_s;
  res.tokens_per_s_per_gpu = res.tokens_per_s / n_gpus;
  const double attn_s = cfg.packed_doc_tokens > 0 ? double(cfg.packed_doc_tokens) : s;
  res.model_flops_per_step = (lora ? LoraFlopsPerToken(m, attn_s, res.memory.trainable_params)
                                   : ModelFlopsPerToken(m, attn_s, cfg.convention)) *
                             tokens_step;
  // MTP modules are model work too (6N convention): each token goes through the projection, one more layer and the
  // output layer again, 6 x those matmul parameters plus the layer's attention.
  if (cfg.fit.mtp_layers > 0 && cfg.convention == FlopConvention::k6N) {
    const ParamCounts pc = CountParams(m);
    const double h = double(m.hidden);
    const double moe_active_mlp = pc.active - (pc.total - pc.moe_experts - pc.moe_shared - pc.router);
    const double layer = pc.attention / m.layers +
                         (moe_layers > 0 ? moe_active_mlp / moe_layers : pc.mlp_dense / std::max(1, m.layers - moe_layers));
    const double attn_dim = m.mla ? double(m.heads) * (m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim)
                                  : double(m.heads) * m.head_dim;
    const double per_token = 6 * (2 * h * h + layer + double(m.vocab) * h) + 12.0 * attn_dim * attn_s;
    res.model_flops_per_step += cfg.fit.mtp_layers * per_token * tokens_step;
  }
  double recompute_frac = 0;
  if (cfg.fit.recompute == Recompute::kFull) recompute_frac = rc_share / 3.0;  // one more forward of 3 passes
  const double hw_extra = per_layer(dense.recompute_flops, moe.recompute_flops) * m.layers / par.pp;
  const double hw_model = per_layer(dense.fwd_flops + dense.bwd_flops, moe.fwd_flops + moe.bwd_flops) * m.layers / par.pp;
  res.hardware_flops_per_step = res.model_flops_per_step * (1 + (hw_model > 0 ? hw_extra / hw_model : recompute_frac));
  res.model_tflops_per_gpu = res.model_flops_per_step / res.step_time_s / n_gpus / 1e12;
  res.mfu = res.model_flops_per_step / (res.step_time_s * n_gpus * peak);
  res.hfu = res.hardware_flops_per_step / (res.step_time_s * n_gpus * peak);
  if (cfg.tokens > 0) {
    res.train_time_s = cfg.tokens / res.tokens_per_s;
    res.gpu_hours = res.train_time_s * n_gpus / 3600;
    res.cost_usd = res.gpu_hours * cfg.price_per_gpu_hour;
  }
  // The training band is over dense models; MoE training has its own evidence, quoted in a note.
  if (!m.moe) res.error = evidence::kTrainingError;
  if (!cfg.detail) return res;
  res.convention = cfg.convention == FlopConvention::kMegatron
                       ? "Megatron: 72*B*s*L*h^2*(1 + s/6h + V/12hL) per step (Narayanan et al. 2021 eq. 3 without recompute)"
                   : lora ? "LoRA: 4N + 12*L*d_attn*s + 6 x adapter parameters per token (the frozen matmuls run forward "
                            "and data gradient); N = matmul parameters (active, without the input-embedding lookup)"
                          : "6N + 12*L*d_attn*s per token (PaLM appendix B); N = matmul parameters (active, without the "
                            "input-embedding lookup)";
  if (cfg.packed_doc_tokens > 0) res.convention += fmt::format("; s = the packed documents' {} tokens", cfg.packed_doc_tokens);
  if (lora) {
    const auto& e = evidence::kLoraFinetuning;
    const auto& f = evidence::kLoraFrozen16BitFp8;
    static_assert(evidence::kLoraFrozen16BitFp8.cases == 5, "the note spells the count out");
    const std::string frozen16 =
        QuantizedTraining(cfg.dtype) && !QuantizedParameters(cfg.fit.weights.id) && !cfg.fp8_weight_cache
            ? fmt::format("; with FP8 compute over 16-bit frozen weights and no FP8 copy kept between micro-batches, "
                          "as MLPerf v6.0's five GB300 runs in NeMo 26.04, the model was {:.0f}% to {:.0f}% too slow on "
                          "all of them: the cast of the frozen weights it charges every micro-batch did not show in "
                          "their steps, so expect the step to be shorter (docs/validation.md section 5)",
                          -100 * f.hi, -100 * f.lo)
            : std::string();
    res.notes.push_back(fmt::format(
        "LoRA rank {} on {} matrices per layer: {} trainable parameters; the frozen base weights get no gradient, so "
        "their matmuls run forward and data gradient only, and data-parallel traffic and the optimizer carry the "
        "adapters alone; adapters run unfused (16-bit, their output added to the frozen layer's: methodology section 8). "
        "Checked on {} published LoRA runs (NeMo 24.07 on H100 in FP8 with packed sequences, NeMo AutoModel on one H100 in "
        "BF16, MLPerf Training's LLaMA-2 70B on 8 to 1,024 H100, H200, L40S, B200, GB200 and GB300 GPUs in FP8, v4.0 to v6.0): {:+.0f}% to "
        "{:+.0f}% off (positive: too fast){}",
        cfg.fit.lora_rank, lc.adapters.size(), FormatCount(res.memory.trainable_params), e.cases, 100 * e.lo,
        100 * e.hi, frozen16));
  }
  // Which term dominates.
  const BreakdownTerm* dom = &kBreakdownTerms[0];
  for (const auto& term : kBreakdownTerms)
    if (res.breakdown_s.*term.value > res.breakdown_s.*dom->value) dom = &term;
  res.dominant = fmt::format("{} ({:.0f}% of the step)", dom->words, 100 * res.breakdown_s.*dom->value / res.step_time_s);
  // Occurrences per step on the critical stage: layer operators once per layer per micro-batch in the
  // forward pass, again in the recomputed forward, and their backward at 2x (FlashAttention 2.5x) the time;
  // `count` folds all of that in so that time x count is the operator's share of the step.
  const double passes_rc = rc_share;
  for (auto& o : ops.ops) {
    if (o.name.find(kGradGemmOpName) != std::string::npos) {  // once per gradient GEMM pass of each layer
      const bool moe_op = o.name.rfind("[moe]", 0) == 0;
      o.count = mb_count * double(max_stage_layers) * (lora ? 1.0 : 2.0) * (moe_op ? moe_frac : 1 - moe_frac);
      continue;
    }
    if (o.phase != "forward") continue;
    const bool head_op = o.name == "logits (output head)" || o.name == kCrossEntropyOpName;
    const bool comm = o.bound == Bound::kCommunication;
    const bool flash_op = o.name == "attention (flash)" || o.name == "attention (flash1)";
    double bwd = flash_op ? kFlashBackwardFactor : 2.0;
    if (o.name == kCrossEntropyOpName && o.time_s > 0) bwd = loss_bwd_t / o.time_s;
    if (o.name == "logits (output head)" && o.time_s > 0) bwd = head_grads / o.time_s;
    const bool moe_op = o.name.rfind("[moe]", 0) == 0;
    const PassTimes& pt = moe_op ? moe : dense;
    if ((o.name.find(kFp8CastOpName) != std::string::npos || o.name.find(kNvfp4CastOpName) != std::string::npos) &&
        pt.fp8_cast_fwd > 0)
      bwd = pt.fp8_cast_bwd / pt.fp8_cast_fwd;
    if (o.name.find(kEagerOpName) != std::string::npos && pt.eager_fwd > 0) bwd = pt.eager_bwd / pt.eager_fwd;
    if (o.name.rfind(kLoraOpName, 0) == 0 && pt.lora_fwd > 0) bwd = pt.lora_bwd / pt.lora_fwd;
    if (o.name.find(kMoePermuteOpName) != std::string::npos) bwd = 1.0;
    // LoRA: the frozen matmuls run their data gradient only.
    if (lora && (o.name == "qkv projection" || o.name == "output projection" || o.name == "mlp up/gate" ||
                 o.name == "mlp down"))
      bwd = 1.0;
    const double layers_here = head_op ? 1.0 : double(max_stage_layers);
    // Collectives: once forward and once backward (the CP ring twice: K and V, then their gradients), and again
    // in a recomputed forward.
    const double comm_bwd = o.name == kCpRingOpName ? 2.0 : 1.0;
    o.count = mb_count * layers_here * (comm ? (1 + comm_bwd + passes_rc) : (1 + bwd + (head_op ? 0 : passes_rc)));
    // Dense and MoE layers each list all their operators; weight them by the share of layers of each kind.
    if (moe_op) o.count *= moe_frac;
    else if (!head_op) o.count *= 1 - moe_frac;
  }
  // An all-MoE model has no dense layer: its dense rows would all count zero.
  std::erase_if(ops.ops, [](const OpCost& o) { return o.phase != "step" && o.count == 0; });
  res.ops = std::move(ops.ops);
  res.collectives = std::move(ops.collectives);
  if (cfg.detail)
    if (auto beyond = ContextBeyondModelNote(m, cfg.fit.seq)) res.notes.push_back(std::move(*beyond));
  if (cfg.detail && cfg.dtype == Precision::kBf16 && !gpu.Supports(Precision::kBf16))
    res.notes.push_back(fmt::format(
        "{} has no BF16 tensor cores: the step is priced at its FP16 rate, what a run in FP16 with loss scaling "
        "(--dtype fp16) gets; in BF16 its matmuls would not run on tensor cores",
        gpu.id));
  // FP8 training's gradient GEMMs run without fast accumulation (methodology §6.3); where its cost was not measured for
  // this GPU's tensor cores (Ada: the same limited-precision FP8 accumulator as Hopper) the rate is 1, and says so.
  if (cfg.detail && cfg.dtype == Precision::kFp8 && gpu.architecture == "ada" && eff.gemm_fp8_precise >= 1)
    res.notes.push_back(fmt::format(
        "uncertain: FP8 training runs its gradient GEMMs with FP32 accumulation (no cuBLASLt fast accumulation), which "
        "costs Hopper about a tenth of their rate (gemm_fp8_precise in data/efficiency.toml); no measurement exists for "
        "{}'s Ada tensor cores, so none is charged and the step may be longer (docs/methodology.md section 6.3)",
        gpu.id));
  if (res.shortfall_bytes > 0)
    res.notes.push_back(fmt::format("does not fit: needs {} more per GPU", FormatBytes(res.shortfall_bytes)));
  if (res.host_shortfall_bytes > 0)
    res.notes.push_back(fmt::format("does not fit: the offloaded activations need {} of host memory per GPU, {} more "
                                    "than the {} per GPU there is",
                                    FormatBytes(mem->host_offload_bytes), FormatBytes(res.host_shortfall_bytes),
                                    FormatBytes(res.host_capacity_bytes)));
  else if (cfg.detail && mem->host_offload_bytes > 0 && res.host_capacity_bytes > 0)
    res.notes.push_back(fmt::format("host memory: the offloaded activations take {} of the {} per GPU",
                                    FormatBytes(mem->host_offload_bytes), FormatBytes(res.host_capacity_bytes)));
  else if (cfg.detail && mem->host_offload_bytes > 0 && res.host_capacity_bytes <= 0)
    res.notes.push_back(fmt::format("unchecked: the offloaded activations need {} of pinned host memory per GPU; the "
                                    "catalog does not know this server's host memory (--host-memory checks it)",
                                    FormatBytes(mem->host_offload_bytes)));
  if (cfg.detail && cfg.dtype == Precision::kFp4) {
    const auto& e = evidence::kNvfp4TrainingMegatronCore;
    res.notes.push_back(fmt::format(
        "uncertain: NVFP4 training (Transformer Engine's NVFP4BlockScaling: every layer GEMM in NVFP4, the output layer "
        "in 16 bits, attention in {}) is checked against {} runs (MLPerf Training v5.1's and v6.0's, NeMo 25.09 and "
        "26.04 without the Hadamard transform: LLaMA-3.1 405B on 512 to 8,192 GB200s and 72 to 4,096 GB300s, 8B on 8 to 72 "
        "B200s, B300s, GB200s and GB300s, NVIDIA's and its partners'; Megatron-Bridge 26.04.01 and "
        "26.06 with it and NVFP4 parameters: LLaMA-3 70B and 3.1 405B on GB200 and GB300), where its throughput was "
        "{:+.0f}% to "
        "{:+.0f}% off (mean {:+.0f}%; positive: too fast); the kept GEMM inputs are counted at FP8's byte, so the memory "
        "is a little high; 2D weight scaling and stochastic rounding are not modelled (docs/methodology.md section 6.3)",
        cfg.fp8_attention ? "FP8 (--fp8-attention)" : "16 bits", e.cases, 100 * e.lo, 100 * e.hi, 100 * e.mean));
  }
  if (cfg.detail && cfg.dtype == Precision::kFp8 && !m.moe) {  // MoE: the MoE note below covers its FP8 runs
    const auto& e = evidence::kFp8TrainingMegatronCore;
    const auto& t = evidence::kFp8TrainingTorchtitan;
    res.notes.push_back(fmt::format(
        "uncertain: FP8 training is checked against {} Megatron-Core runs with Transformer Engine (NeMo 23.09 to "
        "26.04 on H100, B200, GB200 and GB300, MLPerf Training submissions among them; Megatron-Bridge 25.11 to 26.06 on "
        "H100, B200, GB200 and GB300), where its throughput was "
        "{:+.0f}% to {:+.0f}% off (mean {:+.0f}%; positive: too fast), and {} torchtitan Float8 runs (FSDP2, compiled, "
        "H200), {:+.0f}% to {:+.0f}%; other FP8 stacks are unmeasured (docs/validation.md)",
        e.cases, 100 * e.lo, 100 * e.hi, 100 * e.mean, t.cases, 100 * t.lo, 100 * t.hi));
  }
  // A class of published runs the model is checked on: "uncertain: on N published <runs> this model was lo to hi off
  // (mean ...)<why> (docs/validation.md section 5)"; where it was optimistic, <why> ends "expect the step to take longer".
  auto checked_on = [&](const ValidationEvidence& e, std::string_view runs, std::string_view why) {
    res.notes.push_back(fmt::format("uncertain: on {} published {} this model was {:+.0f}% to {:+.0f}% off (mean "
                                    "{:+.0f}%; positive: too fast){} (docs/validation.md section 5)",
                                    e.cases, runs, 100 * e.lo, 100 * e.hi, 100 * e.mean, why));
  };
  auto optimistic_on = [&](const ValidationEvidence& e, std::string_view runs, std::string_view why) {
    checked_on(e, runs, std::string(why) + "; expect the step to take longer");
  };
  if (cfg.detail && cfg.fp8_attention) {
    const double kernel_tokens =
        Fp8AttentionKernelTokens(lc, perf_detail::MeanAttendedKeys(m, lc.attn_seq > 0 ? lc.attn_seq : lc.seq, false));
    res.notes.push_back(
        perf_detail::HasFp8AttentionRate(eff)
            ? fmt::format("FP8 attention at {:.2f}x the 16-bit kernel's speed over forward and backward, cuDNN's own "
                          "benchmark on this GPU {} (data/efficiency.toml {})",
                          perf_detail::Fp8AttentionSpeedup(eff, kernel_tokens),
                          eff.attention_fp8_by_seq.empty()
                              ? std::string("at one length")
                              : fmt::format("read at the causal kernel length of this layout, {:.0f} tokens",
                                            kernel_tokens),
                          eff.attention_fp8_by_seq.empty() ? "attention_fp8" : "attention_fp8_seq")
            : fmt::format("uncertain: --fp8-attention: no FP8 attention measurement for {} (data/efficiency.toml "
                          "attention_fp8), so attention is priced at the 16-bit rate",
                          gpu.id));
  }
  if (cfg.detail && par.cp > 1 && cfg.cp_comm == CpComm::kAllToAll)
    checked_on(evidence::kCpAllToAllTraining,
               "runs with context parallelism by all-to-all (MLPerf Training's LLaMA-2 70B LoRA, CP 2 and 8 on B200, "
               "GB200 and GB300)",
               "; the all-to-alls are priced from their bytes at the link rate, none of it hidden, and most of that "
               "spread is the LoRA runs' own (with the K/V ring the GB300 runs are too slow as well)");
  if (cfg.detail && !m.moe && !cfg.eager && cfg.dtype != Precision::kFp8 && evidence::IsH100Gpu(gpu.id))
    optimistic_on(evidence::kH100Bf16FusedTraining,
                  "16-bit runs of fused stacks on H100 (NVIDIA's NeMo recipes for LLaMA 3.1, GPT-3 and Nemotron-4, "
                  "Megatron-Core r0.8.0 GPT 1.7B-462B, the Llama 3 paper's 405B, NeMo AutoModel's compiled FSDP2 LLaMA "
                  "3.1 70B)",
                  ", the larger models with tensor and pipeline parallelism the most, though it matches H100 GEMM "
                  "micro-benchmarks and eager-FSDP H100 runs");
  if (cfg.detail && !m.moe && evidence::IsBlackwellTrainingGpu(gpu.id))
    optimistic_on(evidence::kBlackwellDenseTraining,
                  "dense-model training runs on B200 and GB200 (NVIDIA's NeMo recipes and Megatron-Bridge, and MLPerf "
                  "Training submissions by NVIDIA and its partners; BF16, FP8, MXFP8 and NVFP4)",
                  ", which the GEMM rates measured on these GPUs do not explain; attention there is an assumption");
  if (cfg.detail && !m.moe && evidence::IsBlackwellUltraGpu(gpu.id)) {
    if (gpu.id == "b300")
      optimistic_on(evidence::kB300DenseTraining,
                    "dense-model training runs on B300 (MLPerf Training v6.0 partners' LLaMA-3.1 8B in NVFP4 on 8 and 64 "
                    "GPUs)",
                    ", too fast on all of them, where GB300's runs of the same configuration are within 8%; B300's FP4 "
                    "rate is GB300's sustained one over the two GPUs' measured ratio and its FP8 rate a best-shape "
                    "benchmark, neither measured at training shapes");
    else
      checked_on(evidence::kBlackwellUltraDenseTraining,
                 "dense-model training runs on GB300 (Megatron-Bridge 25.11-26.06 and MLPerf Training v5.1 and v6.0, "
                 "NVIDIA's and its partners': LLaMA 3 8B, 70B, 3.1 405B and LLaMA-2 70B LoRA, FP8, MXFP8 and NVFP4)",
                 fmt::format(", slow on {} and fast on {}; the FP8 GEMM rate here is Azure's sustained measurement on "
                             "GB300, the 16-bit one a TensorRT-LLM GEMM sweep on GB300, attention an assumption",
                             evidence::kBlackwellUltraDenseTraining.cases - evidence::kBlackwellUltraDenseTrainingFast,
                             evidence::kBlackwellUltraDenseTrainingFast));
  }
  if (cfg.detail && evidence::IsAmdInstinctGpu(gpu.id))
    optimistic_on(evidence::kAmdInstinctTraining,
                  "dense-model training runs on MI300X (torchtitan, FSDP2, compiled: LLaMA 3 8B on 8 GPUs, BF16 and "
                  "Float8)",
                  "; MI300X's rates are Azure's micro-benchmarks of that GPU (hipBLASLt, BabelStream, FlashAttention 2, "
                  "RCCL; +70% and +112% with default rates); the rest is the ROCm stack");
  if (cfg.detail && !m.moe && !evidence::IsAmdInstinctGpu(gpu.id) && res.fits &&
      res.step_time_s < evidence::kShortStepSeconds)
    checked_on(evidence::kShortStepTraining,
               fmt::format("dense-model runs whose step this model puts under {:g} s (MLPerf Training's LLaMA-2 70B LoRA "
                           "and LLaMA-3.1 8B on up to 1,024 GPUs, small GPT and MPT models)",
                           evidence::kShortStepSeconds),
               ": a step this short pays per-step costs that do not shrink with it (optimizer and gradient-norm "
               "launches, host synchronisation), which the model leaves out; expect it to take longer");
  // Attention at FlashAttention 2's rate (an assumption on Blackwell) where the fused stacks run cuDNN's kernel, which
  // the `attention` group measured faster: worth saying where attention is a sizeable share of the step.
  if (cfg.detail && !cfg.eager && cfg.attention == AttentionImpl::kFlash && evidence::IsCudnnAttentionEvidenceGpu(gpu.id)) {
    double attn_s = 0;
    for (const auto& o : res.ops)
      if (o.name.ends_with("attention (flash)")) attn_s += o.time_s * o.count;  // dense and "[moe] " layers
    const double share = res.step_time_s > 0 ? attn_s / res.step_time_s : 0;
    if (share >= kAttentionNoteShare) {
      const auto& e = evidence::kAttentionCudnn;
      res.notes.push_back(fmt::format(
          "uncertain: attention is {:.0f}% of this step, priced at {:.3f} of the 16-bit peak ({}); cuDNN's fused "
          "attention, which Transformer Engine runs on this GPU generation (Megatron-Core, NeMo, Megatron-Bridge), was "
          "measured against that price in {} held-out kernel runs on H200, GB200 and GB300 (LLaMA 3.1's, DeepSeek-V3's and "
          "Kimi's MLA and Qwen3.5's shapes, causal, 2K-32K tokens), where the model was {:+.0f}% to "
          "{:+.0f}% off (mean {:+.0f}%; negative: the kernel was faster; `suanli validate --group attention`), so with "
          "those stacks attention itself likely runs faster than priced here, most at long sequences; their end-to-end "
          "runs are nonetheless predicted too fast, this price standing in for a cost the model lacks "
          "(docs/validation.md section 5)",
          100 * share, eff.attention,
          evidence::IsBlackwellTrainingGpu(gpu.id) || evidence::IsBlackwellUltraGpu(gpu.id)
              ? "an assumption on Blackwell"
              : "FlashAttention 2's measured rate",
          e.cases, 100 * e.lo, 100 * e.hi, 100 * e.mean));
    }
  }
  // A small sliding window (GPT-OSS: 128 tokens on half its layers): cuDNN's kernel ran far slower than priced there.
  // Llama 4's chunks are another kernel and far wider.
  if (cfg.detail && !cfg.eager && m.sliding_window > 0 && m.sliding_window <= kSmallWindowTokens &&
      m.sliding_window_layers > 0 && !m.chunked_window) {
    const auto& w = evidence::kAttentionWideWindow;
    const auto& small = evidence::kAttentionSmallWindow;  // signed on speed: the kernel ran 1 + error times longer
    checked_on(small,
               "cuDNN sliding-window kernel runs at a 128-token window (head dimension 64, GB200 and GB300, held out)",
               fmt::format(": {} of this model's {} layers attend within a {}-token window, priced at the "
                           "fused-attention roofline; at a 1024-token window on H200 it was within {:+.0f}% to "
                           "{:+.0f}% ({} runs); expect those layers' attention to take {:.0f}-{:.0f}x longer",
                           m.sliding_window_layers, m.layers, m.sliding_window, 100 * w.lo, 100 * w.hi, w.cases,
                           1 + small.lo, 1 + small.hi));
  }
  if (cfg.detail && par.gpus() >= kWeakScalingNoteGpus) {
    const auto& e = evidence::kWeakScalingShortfall;
    res.notes.push_back(fmt::format(
        "uncertain: at scale: in {} weak-scaling pairs of NVIDIA's recipes (the same work per GPU on 4-32x the GPUs, up "
        "to 2,304 H100s) the published step grew {:.1f}% to {:.1f}% (mean {:.1f}%) more than this model's, which has "
        "few costs of scale beyond its collectives; on {} GPUs expect up to that much more (docs/validation.md section 5)",
        e.cases, std::round(1000 * e.lo) / 10 + 0.0, 100 * e.hi, 100 * e.mean, par.gpus()));
  }
  if (cfg.detail && m.moe) {
    const auto& cal = evidence::kMoeTrainingCalibration;
    const auto& loo = evidence::kMoeLayerMultipleLeaveOneOut;
    const auto& e = evidence::kMoeTrainingHoldout;
    const auto& old = evidence::kMoeTrainingMegatronBridge2511;
    const auto& other = evidence::kMoeTrainingAutomodel;
    const auto& coarse = evidence::kMoeTrainingCoarseExperts;
    const auto& l4 = evidence::kMoeTrainingLlama4Nemo;
    res.notes.push_back(fmt::format(
        "calibrated: each MoE layer takes {:.2f}x the time its operators add up to, its shared experts' GEMMs excepted "
        "(CUDA graphs {}; {:.2f}x "
        "without a full-iteration graph, {:.2f}x with one), a multiple fitted on {} Megatron-LM recipe runs "
        "({:+.0f}% to {:+.0f}% off after the fit; a run left out of the fit is {:.0f}% off on average, {:.0f}% at "
        "worst); what fills the time is not identified (docs/validation.md section 4){}",
        moe_overhead, CudaGraphsName(cfg.cuda_graphs), eff.moe_layer_time_eager, eff.moe_layer_time_full_graph,
        cal.cases, 100 * cal.lo, 100 * cal.hi, 100 * loo.mean_abs, 100 * loo.worst_abs,
        cfg.eager ? "; it was measured on Megatron-Core, and no eager-PyTorch MoE run (torchtitan, HF) checks it" : ""));
    res.notes.push_back(fmt::format(
        "uncertain: MoE training is checked against {} held-out Megatron-Core runs (Qwen3 30B-A3B and 235B-A22B, "
        "GPT-OSS 20B and 120B, DeepSeek-V3, MLPerf Training v6.0's among them; on H100, B200, GB200, B300 and GB300), where its throughput was {:+.0f}% to {:+.0f}% off (mean "
        "{:+.0f}%; positive: too fast), {} runs of the older Megatron-Bridge 25.11 stack ({:+.0f}% to {:+.0f}%), and {} "
        "runs of NeMo AutoModel's PyTorch FSDP2 stack ({:+.0f}% to {:+.0f}%: there the multiple makes the model too "
        "slow), {} runs of Grok-1's 8 wide experts in NVIDIA's NeMo recipes ({:+.0f}% to {:+.0f}%: the multiple, "
        "fitted on narrow experts, over-charges wide ones), and {} runs of Llama 4 Maverick in the same recipes "
        "({:+.0f}% to {:+.0f}%, the H100 runs at EP 128 the slowest); the model knows neither the stack's version nor "
        "its kernels (docs/validation.md section 5)",
        e.cases, 100 * e.lo, 100 * e.hi, 100 * e.mean, old.cases, 100 * old.lo, 100 * old.hi, other.cases,
        100 * other.lo, 100 * other.hi, coarse.cases, 100 * coarse.lo, 100 * coarse.hi, l4.cases, 100 * l4.lo,
        100 * l4.hi));
  }
  if (cfg.fit.offload_layers > 0) {
    res.notes.push_back(fmt::format(
        "CPU activation offloading over {} ({}/s per direction at the copy efficiencies {:.2f} D2H, {:.2f} H2D): {} "
        "per layer goes out in {} and back in {}, against {} forward and {} backward compute per layer; the compute "
        "waits {} per micro-batch",
        cl.host_link_name, FormatBytes(cl.host_bw_per_dir), eff.host_d2h, eff.host_h2d,
        FormatBytes(res.memory.offload_layer_bytes), FormatSeconds(offload_d2h), FormatSeconds(offload_h2d),
        FormatSeconds(lf), FormatSeconds(lb), FormatSeconds(offload_stall)));
    res.notes.push_back("uncertain: the offload copies' own HBM traffic (contention with memory-bound kernels) is not "
                        "modelled; checked against 2 Megatron-Bridge GB200 runs only (docs/validation.md)");
  }
  if (cfg.detail && eager_fsdp) {
    const auto& h = evidence::kEagerFsdpFoundryH100;
    const auto& t = evidence::kEagerFsdpTorchtitan;
    res.notes.push_back(fmt::format(
        "uncertain: eager FSDP's host cost ({:.1f} ms per layer per micro-batch) was fitted on llm-foundry's A100 runs; "
        "on its {} held-out H100 runs the model was off by {:+.0f}% to {:+.0f}% (mean {:+.1f}%), on {} torchtitan "
        "FSDP2 runs (A100) optimistic by {:.0f}% to {:.0f}% (mean {:.1f}%; docs/validation.md section 4)",
        1e3 * eff.eager_fsdp_host_per_layer_s, h.cases, 100 * h.lo, 100 * h.hi, 100 * h.mean, t.cases, 100 * t.lo,
        100 * t.hi, 100 * t.mean));
  } else if (cfg.detail && par.zero == 3 && !cfg.eager) {
    res.notes.push_back(fmt::format(
        "assumed: a stack with fused kernels and no host-side cost per layer; if this is eager PyTorch FSDP "
        "(Composer, torchtitan, HF Trainer without torch.compile) pass --eager, which adds {:.1f} ms per layer per "
        "micro-batch fitted on llm-foundry's A100 runs (docs/validation.md section 4)",
        1e3 * eff.eager_fsdp_host_per_layer_s));
  }
  // A pipeline without interleaving that spends a noticeable share of the step in its bubble: the fastest depth that
  // fits, at the same micro-batch and recompute (estimated without detail, so this does not recurse).
  if (cfg.detail && par.pp > 1 && par.interleave == 1 && !par.layout &&
      res.breakdown_s.pipeline_bubble > 0.05 * res.step_time_s) {
    TrainConfig alt = cfg;
    alt.detail = false;
    alt.micro_batch_auto = alt.recompute_auto = false;
    alt.fit.micro_batch = res.micro_batch;
    alt.fit.recompute = res.recompute;
    alt.fit.recompute_layers = res.recompute_layers;
    auto best = FastestInterleave(m, cl, alt, eff);
    if (best.ok() && best->fits && best->interleave > 1 && best->step_time_s < 0.98 * res.step_time_s) {
      const int units = m.layers + (par.embedding_loss_in_split ? 2 : 0);
      res.notes.push_back(fmt::format(
          "hint: --interleave {} ({} layer{} per virtual stage) would take the step from {} to {}: the bubble falls "
          "from {} to {}, at the cost of {}x the pipeline's point-to-point transfers",
          best->interleave, units / (par.pp * best->interleave), units / (par.pp * best->interleave) == 1 ? "" : "s",
          FormatSeconds(res.step_time_s),
          FormatSeconds(best->step_time_s), FormatSeconds(res.breakdown_s.pipeline_bubble),
          FormatSeconds(best->breakdown_s.pipeline_bubble), best->interleave));
    }
  }
  return res;
}

}  // namespace suanli
