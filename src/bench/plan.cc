// Which benchmarks run where: the case list for a set of GPUs plus the CPU fallback, and the
// GEMM shapes of one transformer layer.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "suanli/bench.h"
#include "suanli/text.h"
#include "suanli/units.h"

namespace suanli {

namespace {

// Buffer sizing: nvbandwidth uses 512 MiB and dcgmproftester 100 MB; we take at least 256 MiB
// per array and at least 8x the L2 so that no array fits in cache (docs/bench-method.md §2).
constexpr double kMinStreamBytes = 256 * kMiB;
constexpr double kL2Multiple = 8;
constexpr double kQuickStreamBytes = 8 * kMiB;
constexpr double kCopyBytes = 256 * kMiB;
constexpr double kAllReduceBytes = 1024 * kMiB;
constexpr int64_t kCpuTriadBytes = 64 << 20;       // per array; 3 arrays = 192 MiB, beyond any LLC
constexpr int64_t kCpuTriadQuickBytes = 2 << 20;
constexpr int64_t kCpuGemmN = 2048;
constexpr int64_t kCpuGemmQuickN = 128;

struct PrecisionNeed {
  Precision p;
  int min_cc;  // compute capability x 10
  const char* why;
};
// Tensor-core formats by architecture: TF32/BF16 from Ampere (8.0), FP8 from Ada/Hopper (8.9),
// INT8 IMMA through cuBLASLt from Turing (7.5) (NVIDIA CUDA C++ Programming Guide, "Compute
// Capabilities" feature tables; cuBLASLt docs, cublasLtMatmul data-type table).
constexpr PrecisionNeed kGemmPrecisions[] = {
    {Precision::kFp32, 0, ""},
    {Precision::kTf32, 80, "TF32 tensor cores need compute capability 8.0 or later"},
    {Precision::kFp16, 70, "FP16 tensor cores need compute capability 7.0 or later"},
    {Precision::kBf16, 80, "BF16 needs compute capability 8.0 or later"},
    {Precision::kFp8, 89, "FP8 (e4m3) GEMM needs compute capability 8.9 or later"},
    {Precision::kInt8, 75, "INT8 IMMA GEMM needs compute capability 7.5 or later"},
};

int CcTimesTen(const std::string& cc) {
  int major = 0, minor = 0;
  if (std::sscanf(cc.c_str(), "%d.%d", &major, &minor) < 1) return 0;
  return major * 10 + minor;
}

const char* FlopUnit(Precision p) { return p == Precision::kInt8 ? "OP/s" : "FLOP/s"; }

bool Selected(const std::string& name, const std::vector<std::string>& only) {
  if (only.empty()) return true;
  for (const auto& o : only) {
    if (o.empty()) continue;
    if (o.back() == '*') {
      if (name.compare(0, o.size() - 1, o, 0, o.size() - 1) == 0) return true;
    } else if (name == o || (name.size() > o.size() && name.compare(0, o.size(), o) == 0 && name[o.size()] == '.')) {
      return true;
    }
  }
  return false;
}

std::string Slug(std::string_view s) {
  std::string out;
  for (char c : ToLower(s)) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-') ? c : '-';
  return out;
}

}  // namespace

Result<std::vector<GemmShape>> LayerGemms(const ModelSpec& m, int64_t micro_batch, int64_t seq, bool forward_only) {
  if (m.hidden <= 0 || m.heads <= 0) return InvalidArgument(fmt::format("model '{}' has no hidden size or heads", m.id));
  if (micro_batch < 1 || seq < 1) return InvalidArgument("micro-batch and sequence must be at least 1");
  const int64_t t = micro_batch * seq;  // tokens
  const int64_t h = m.hidden;
  const int64_t hd = m.head_dim > 0 ? m.head_dim : h / m.heads;
  const int64_t kvh = m.kv_heads > 0 ? m.kv_heads : m.heads;
  std::vector<GemmShape> fwd;      // linear layers: {name, m=tokens, n=out, k=in}
  auto linear = [&](std::string name, int64_t rows, int64_t in, int64_t out) {
    if (in > 0 && out > 0 && rows > 0) fwd.push_back({std::move(name), rows, out, in, 1});
  };
  int64_t v_dim = hd, qk_dim = hd;
  if (m.mla) {
    const MlaSpec& a = *m.mla;
    qk_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;
    v_dim = a.v_head_dim;
    if (a.q_lora_rank > 0) {
      linear("q_a", t, h, a.q_lora_rank);
      linear("q_b", t, a.q_lora_rank, m.heads * qk_dim);
    } else {
      linear("q", t, h, m.heads * qk_dim);
    }
    linear("kv_a", t, h, a.kv_lora_rank + a.qk_rope_head_dim);
    linear("kv_b", t, a.kv_lora_rank, m.heads * (a.qk_nope_head_dim + a.v_head_dim));
  } else {
    linear("qkv", t, h, (m.heads + 2 * kvh) * hd);
  }
  // Attention core, one batched GEMM per (sequence, head), full (non-causal) square.
  std::vector<GemmShape> attn_fwd = {{"attn.scores", seq, seq, qk_dim, micro_batch * m.heads},
                                     {"attn.context", seq, v_dim, seq, micro_batch * m.heads}};
  linear("attn_out", t, m.heads * v_dim, h);
  const int mlp_mats = m.gated_mlp ? 2 : 1;  // gate+up fused into one GEMM
  if (m.moe && m.moe->num_experts > 0) {
    const MoeSpec& e = *m.moe;
    linear("router", t, h, e.num_experts);
    linear("experts.up", t * e.experts_per_token, h, mlp_mats * e.expert_ffn);
    linear("experts.down", t * e.experts_per_token, e.expert_ffn, h);
    if (e.shared_ffn > 0) {
      linear("shared.up", t, h, mlp_mats * e.shared_ffn);
      linear("shared.down", t, e.shared_ffn, h);
    }
  } else {
    if (m.ffn <= 0) return InvalidArgument(fmt::format("model '{}' has no MLP size (ffn)", m.id));
    linear("mlp.up", t, h, mlp_mats * m.ffn);
    linear("mlp.down", t, m.ffn, h);
  }
  std::vector<GemmShape> out;
  for (const auto& g : fwd) out.push_back({g.name + ".fwd", g.m, g.n, g.k, 1});
  for (const auto& g : attn_fwd) out.push_back({g.name + ".fwd", g.m, g.n, g.k, g.batch});
  if (forward_only) return out;
  for (const auto& g : fwd) {
    out.push_back({g.name + ".dgrad", g.m, g.k, g.n, 1});  // dX = dY W^T
    out.push_back({g.name + ".wgrad", g.k, g.n, g.m, 1});  // dW = X^T dY
  }
  const int64_t bh = micro_batch * m.heads;
  out.push_back({"attn.context.dprobs", seq, seq, v_dim, bh});  // dP = dO V^T
  out.push_back({"attn.context.dv", seq, v_dim, seq, bh});      // dV = P^T dO
  out.push_back({"attn.scores.dq", seq, qk_dim, seq, bh});      // dQ = dS K
  out.push_back({"attn.scores.dk", seq, qk_dim, seq, bh});      // dK = dS^T Q
  return out;
}

Status ValidateBenchOptions(const BenchOptions& o) {
  constexpr double kDay = 86400;
  if (!(o.time_limit_s > 0 && o.time_limit_s <= kDay))
    return InvalidArgument(fmt::format("--time-limit must be above 0 and at most {:g} s (a day), got {:g}", kDay,
                                       o.time_limit_s));
  if (o.micro_batch < 1 || o.micro_batch > 4096)
    return InvalidArgument(fmt::format("--micro-batch must be between 1 and 4096, got {}", o.micro_batch));
  if (o.seq < 1 || o.seq > (int64_t{1} << 20))
    return InvalidArgument(fmt::format("--seq must be between 1 and 1048576 tokens, got {}", o.seq));
  return Status::Ok();
}

Result<std::vector<BenchCase>> PlanCases(const std::vector<DeviceInfo>& gpus, const BenchOptions& o) {
  SUANLI_RETURN_IF_ERROR(ValidateBenchOptions(o));
  std::vector<BenchCase> all;
  auto add = [&](BenchCase c) {
    c.time_limit_s = o.time_limit_s;
    all.push_back(std::move(c));
  };
  const std::string gemm_conv = "2*m*n*k FLOP per GEMM (multiply-add = 2), dense, no sparsity";
  std::vector<GemmShape> model_fwd, model_layer;
  std::string model_slug;
  if (o.model) {
    SUANLI_ASSIGN_OR_RETURN(model_fwd, LayerGemms(*o.model, o.micro_batch, o.seq, true));
    SUANLI_ASSIGN_OR_RETURN(model_layer, LayerGemms(*o.model, o.micro_batch, o.seq, false));
    model_slug = Slug(o.model->id);
  }
  for (const DeviceInfo& d : gpus) {
    const int cc = CcTimesTen(d.compute_capability);
    double stream = std::max(kMinStreamBytes, kL2Multiple * d.l2_bytes);
    if (d.memory_bytes > 0) stream = std::min(stream, d.memory_bytes / 8);  // triad holds 3 arrays
    if (o.quick) stream = kQuickStreamBytes;
    const auto stream_bytes = static_cast<int64_t>(stream) / 4096 * 4096;
    struct MemCase { const char* name; BenchKind kind; const char* conv; };
    const MemCase mem[] = {
        {"gpu.mem.read", BenchKind::kMemRead, "bytes read once (1x buffer); 16-byte loads"},
        {"gpu.mem.write", BenchKind::kMemWrite, "bytes written once (1x buffer); 16-byte stores"},
        {"gpu.mem.copy", BenchKind::kMemCopy, "read + write counted (2x buffer); 16-byte accesses"},
        {"gpu.mem.triad", BenchKind::kMemTriad, "STREAM: 2 reads + 1 write counted (3x buffer); 16-byte accesses"},
        {"gpu.mem.memcpy_d2d", BenchKind::kMemcpyD2D, "cudaMemcpyAsync D2D, read + write counted (2x buffer)"},
    };
    for (const auto& mc : mem) {
      BenchCase c;
      c.name = mc.name;
      c.kind = mc.kind;
      c.device = d.index;
      c.bytes = stream_bytes;
      c.unit = "B/s";
      c.convention = mc.conv;
      add(c);
    }
    {
      BenchCase c;
      c.name = "gpu.harness.overhead";
      c.kind = BenchKind::kHarnessOverhead;
      c.device = d.index;
      c.bytes = stream_bytes;
      c.unit = "ratio";
      c.convention = "our copy kernel's bandwidth / bare cudaMemcpy D2D bandwidth, same size, same timing";
      add(c);
    }
    const std::vector<int64_t> sizes = o.quick ? std::vector<int64_t>{256, 512} : std::vector<int64_t>{1024, 4096, 8192};
    for (const auto& pn : kGemmPrecisions) {
      for (int64_t n : sizes) {
        BenchCase c;
        c.name = fmt::format("gpu.gemm.{}.{}", PrecisionKey(pn.p), n);
        c.kind = BenchKind::kGemm;
        c.device = d.index;
        c.precision = pn.p;
        c.gemms = {{"", n, n, n, 1}};
        c.unit = FlopUnit(pn.p);
        c.convention = gemm_conv;
        if (cc > 0 && cc < pn.min_cc) c.skip_reason = fmt::format("{} (this GPU: {})", pn.why, d.compute_capability);
        add(c);
      }
    }
    if (o.model) {
      for (const auto& g : model_fwd) {
        BenchCase c;
        c.name = fmt::format("gpu.gemm.bf16.{}.{}", model_slug, g.name);
        c.kind = BenchKind::kGemm;
        c.device = d.index;
        c.precision = Precision::kBf16;
        c.gemms = {g};
        c.unit = "FLOP/s";
        c.convention = gemm_conv + fmt::format("; micro-batch {} x sequence {}", o.micro_batch, o.seq);
        if (cc > 0 && cc < 80) c.skip_reason = "BF16 needs compute capability 8.0 or later";
        add(c);
      }
      // The same linear-layer shapes in FP8 (W8A8 serving and FP8 training run them): at short prompts
      // (small M) these are the rates the inference model has no measurement for (docs/validation.md §5).
      for (const auto& g : model_fwd) {
        if (g.batch != 1) continue;  // attention cores stay 16-bit
        BenchCase c;
        c.name = fmt::format("gpu.gemm.fp8.{}.{}", model_slug, g.name);
        c.kind = BenchKind::kGemm;
        c.device = d.index;
        c.precision = Precision::kFp8;
        c.gemms = {g};
        c.unit = FlopUnit(Precision::kFp8);
        c.convention = gemm_conv + fmt::format("; micro-batch {} x sequence {}", o.micro_batch, o.seq);
        if (cc > 0 && cc < 89)
          c.skip_reason = fmt::format("FP8 (e4m3) GEMM needs compute capability 8.9 or later (this GPU: {})",
                                      d.compute_capability);
        else if (g.m % 16 != 0 || g.n % 16 != 0 || g.k % 16 != 0)
          c.skip_reason = fmt::format("FP8 GEMMs in cuBLASLt need every dimension a multiple of 16 ({} x {} x {})",
                                      g.m, g.n, g.k);
        add(c);
      }
      BenchCase c;
      c.name = fmt::format("gpu.train.{}", model_slug);
      c.kind = BenchKind::kLayerSequence;
      c.device = d.index;
      c.precision = Precision::kBf16;
      c.gemms = model_layer;
      c.reps = 10;
      c.unit = "FLOP/s";
      c.convention = fmt::format(
          "forward + backward GEMMs of one layer (linear layers, full attention core), BF16, micro-batch {} x "
          "sequence {}; 2*m*n*k FLOP each; elementwise ops, softmax and norms not included",
          o.micro_batch, o.seq);
      if (cc > 0 && cc < 80) c.skip_reason = "BF16 needs compute capability 8.0 or later";
      add(c);
    }
    const auto copy_bytes = static_cast<int64_t>(o.quick ? kQuickStreamBytes : kCopyBytes);
    for (BenchKind k : {BenchKind::kH2D, BenchKind::kD2H}) {
      for (bool pinned : {true, false}) {
        BenchCase c;
        c.name = fmt::format("gpu.copy.{}.{}", k == BenchKind::kH2D ? "h2d" : "d2h", pinned ? "pinned" : "pageable");
        c.kind = k;
        c.device = d.index;
        c.bytes = copy_bytes;
        c.pinned = pinned;
        c.reps = 10;
        c.unit = "B/s";
        c.convention = "bytes copied once, one direction, cudaMemcpyAsync";
        add(c);
      }
    }
    for (const DeviceInfo& p : gpus) {
      if (p.index == d.index) continue;
      BenchCase c;
      c.name = fmt::format("gpu.p2p.{}-{}", d.index, p.index);
      c.kind = BenchKind::kP2P;
      c.device = d.index;
      c.peer = p.index;
      c.bytes = copy_bytes;
      c.reps = 10;
      c.unit = "B/s";
      c.convention = "bytes copied once, one direction (device -> peer), cudaMemcpyPeerAsync";
      add(c);
    }
    {
      BenchCase c;
      c.name = "gpu.launch_latency";
      c.kind = BenchKind::kLaunchLatency;
      c.device = d.index;
      c.unit = "s";
      c.higher_is_better = false;
      c.convention = "seconds per empty-kernel launch, 1000 back-to-back launches per repetition on one stream";
      add(c);
    }
  }
  if (gpus.size() >= 2) {
    BenchCase c;
    c.name = "gpu.nccl.allreduce";
    c.kind = BenchKind::kAllReduce;
    c.device = gpus.front().index;
    c.bytes = static_cast<int64_t>(o.quick ? kQuickStreamBytes : kAllReduceBytes);
    c.unit = "B/s";
    c.convention = fmt::format(
        "bus bandwidth (nccl-tests): algbw x 2(n-1)/n, n = {} GPUs, float32 sum, one process", gpus.size());
    add(c);
  }
  // The CPU fallback always runs.
  {
    BenchCase c;
    c.name = "cpu.mem.triad";
    c.kind = BenchKind::kMemTriad;
    c.on_gpu = false;
    c.device = -1;
    c.bytes = o.quick ? kCpuTriadQuickBytes : kCpuTriadBytes;
    c.reps = o.quick ? 5 : 10;
    c.warmup = 1;
    c.unit = "B/s";
    c.convention = "STREAM: 2 reads + 1 write counted (3x array of doubles), all hardware threads; write-allocate not counted";
    add(c);
    for (Precision p : {Precision::kFp32, Precision::kFp64}) {
      BenchCase g;
      const int64_t n = o.quick ? kCpuGemmQuickN : (p == Precision::kFp32 ? kCpuGemmN : kCpuGemmN / 2);
      g.name = fmt::format("cpu.gemm.{}", PrecisionKey(p));
      g.kind = BenchKind::kGemm;
      g.on_gpu = false;
      g.device = -1;
      g.precision = p;
      g.gemms = {{"", n, n, n, 1}};
      g.reps = o.quick ? 5 : 10;
      g.warmup = 1;
      g.unit = "FLOP/s";
      g.convention = gemm_conv + "; BLAS (OpenBLAS) on all hardware threads";
      add(g);
    }
  }
  std::vector<std::string> planned;
  for (const auto& c : all) planned.push_back(c.name);
  std::vector<BenchCase> out;
  for (auto& c : all)
    if (Selected(c.name, o.only)) out.push_back(std::move(c));
  // An --only entry that selects nothing is a usage error, with suggestions from the names of
  // a full plan (so that a GPU test asked for on a CPU-only machine is not called "unknown").
  if (o.only.empty()) return out;
  std::vector<std::string> known = KnownCaseNames(o);
  known.insert(known.end(), planned.begin(), planned.end());  // e.g. gpu.p2p.3-5 on an 8-GPU node
  for (const auto& entry : o.only) {
    bool any = false;
    for (const auto& n : known) any |= Selected(n, {entry});
    if (!any) {
      return InvalidArgument(fmt::format("--only '{}' matches no benchmark{}; run `suanli bench --list`", entry,
                                         DidYouMean(entry, known)));
    }
  }
  return out;
}

std::vector<std::string> KnownCaseNames(const BenchOptions& options) {
  // A representative two-GPU Hopper node: every case kind appears.
  BenchOptions o = options;
  o.only.clear();
  DeviceInfo a;
  a.index = 0;
  a.is_gpu = true;
  a.compute_capability = "9.0";
  DeviceInfo b = a;
  b.index = 1;
  auto plan = PlanCases({a, b}, o);
  std::vector<std::string> names;
  if (!plan.ok()) return names;
  for (const auto& c : *plan)
    if (std::find(names.begin(), names.end(), c.name) == names.end()) names.push_back(c.name);
  return names;
}

}  // namespace suanli
