// The performance model against published measurements (tests/validation/perf_cases.toml).
//
// The issue's targets are checked on the calibration cases they were first met on (2021-22 Megatron
// training, gpt-fast decode), and Calculon's figures on Korthikanti's cases. Every other group is
// ratcheted at the errors documented in docs/validation.md: a change that makes it worse fails here.
// Where a target is not met, the ratchet value is the honest current figure, not the target.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "suanli/perf.h"
#include "suanli/validate.h"

namespace suanli {
namespace {

struct Limits {
  double mean, worst;
};

// The bundled catalogs, loaded once.
const HardwareCatalog& Hw() {
  static const HardwareCatalog hw = *HardwareCatalog::Load(CatalogOptions{});
  return hw;
}
const ModelCatalog& Models() {
  static const ModelCatalog models = *ModelCatalog::Load(CatalogOptions{});
  return models;
}
// The bundled validation, run once for the tests that read it.
const Result<ValidationReport>& Bundled() {
  static const Result<ValidationReport> rep = RunBundledPerfValidation(Hw(), Models());
  return rep;
}
// Runs a user's cases file named my.toml that references no other file.
Result<ValidationReport> RunCases(const std::string& text) {
  auto no_files = [](const std::string& rel) -> Result<std::string> { return NotFound(rel); };
  return RunPerfValidation(text, "my.toml", Hw(), Models(), no_files);
}
// The one case of a file that must evaluate.
ValidationCase EvaluatedCase(const std::string& text) {
  auto r = RunCases(text);
  if (!r.ok()) {
    ADD_FAILURE() << r.status().message();
    return {};
  }
  if (r->cases.size() != 1) {
    ADD_FAILURE() << r->cases.size() << " cases, expected 1";
    return {};
  }
  EXPECT_TRUE(r->cases[0].failure.empty()) << r->cases[0].failure;
  return r->cases[0];
}
// The failure reported on the one case of `text` once `from` is replaced by `to` (empty when it evaluates).
std::string FailureWith(std::string text, const std::string& from, const std::string& to) {
  text.replace(text.find(from), from.size(), to);
  auto r = RunCases(text);
  if (!r.ok() || r->cases.size() != 1) {
    ADD_FAILURE() << (r.ok() ? "not one case" : r.status().message());
    return {};
  }
  return r->cases[0].failure;
}

// A training row on one node of 8 H100s (TP 1, PP 1, ZeRO-1, micro-batch 1, sequence 4096), with `extra` lines before
// its metric.
std::string EightGpuRow(const char* name, const char* model, int global_batch, const char* extra, double published) {
  return fmt::format(R"([[train]]
group = "training"
role = "holdout"
name = "{}"
source = "test"
model = "{}"
gpu = "h100-sxm"
gpus = 8
tp = 1
pp = 1
zero = 1
micro_batch = 1
global_batch = {}
seq = 4096
{}metric = "tokens_per_s_per_gpu"
published = {}
)",
                     name, model, global_batch, extra, published);
}

TEST(PerfValidation, CalibrationMeetsTargetsAndHoldoutDoesNotRegress) {
  const auto& rep = Bundled();
  ASSERT_TRUE(rep.ok()) << rep.status().message();
  // Issue 3 targets, applied to the calibration cases. Training calibration (Megatron 2021-22, NeMo FP8 on H100,
  // torchtitan FSDP2 and llm-foundry FSDP on A100, which fixed the eager FSDP host cost) meets the mean target
  // (5.7%) but not the worst (31.2%: two llm-foundry A100 rows, docs/validation.md section 5), so its worst is
  // ratcheted at that figure plus one point; the whole target is checked on the 2021-22 Megatron rows below, and
  // Calculon's figures on Korthikanti's. The throughput calibration rows (Mistral 7B, which fixed the per-head
  // decode kernel's instruction count) have no issue target, nor have the GEMM micro-benchmarks (Azure's and, on
  // B200, pytorch/ao's and cuBLAS's large shapes set `gemm`; MAMF's best shapes, 10-18% above the model by design of
  // the 0.945 factor on Ampere and Hopper and 26-27% on Blackwell, where the large shapes sit 0.82 of the best one,
  // set it elsewhere), which are ratcheted at 7.2% / 26.9% plus one point; nor has the `moe` group's H100 calibration
  // (the fused MoE operator's fixed time was fitted there: 8.3% / 58.1%), ratcheted the same way; nor has the
  // `serving_attention` group's H100 TensorRT-LLM prefill rows (the context kernel's fixed time was fitted there:
  // 36.7% / 110.8%, most of it the Hopper kernel's rate at long prompts, which the model does not take; §5).
  const std::map<std::string, Limits> targets = {
      {"training", {0.07, 0.322}}, {"decode", {0.10, 0.20}}, {"throughput", {0.082, 0.211}},
      {"gemm", {0.082, 0.279}}, {"moe", {0.093, 0.591}}, {"serving_attention", {0.377, 1.118}}};
  // Holdout ratchets: the errors documented in docs/validation.md, plus at most one point (training: 10.91% mean since
  // the fortieth session's 13 held-out MLPerf Training v6.0 rows and ten NVFP4 rows, 10.39% before them;
  // 10.39% mean,
  // 109.2% worst since the thirty-seventh session's MI300X rates (10.59% / 112.0% with the thirty-sixth session's two
  // MI300X rows at default rates, 10.08% / 109.2% before them; 9.70% after the
  // thirty-fourth session, 9.79% before GB200's HBM fraction); gemm moved to 15.2% / 65.8% when the held-out cuBLAS MXFP4 rows on B200 came in, twenty-sixth session, and to 16.8% with
  // Azure's eight GB200 FP4 rows against the estimated gemm_fp4, thirty-fourth
  // session, and to 25.6% / 308.0% with Azure's six held-out MI300X hipBLASLt FP8 shapes, thirty-seventh session, whose
  // three smallest take about 40 us each where the model's launch floor is 5 us; max_throughput: TensorRT-LLM 1.0 and 0.13 with its Mixtral rows, first predictions 22.4% / 299.2%, 19.8%
  // since the L40S link fraction was fitted on v0.9's L40S throughput rows (twenty-eighth session; TTFT 14.1%,
  // static-batch throughput 12.4%);
  // 1.0's own runs, 12.0% / 38.4%, are pinned by their band in ErrorBandsMatchTheValidationData; speculative: the
  // speed-up of speculative decoding at the published acceptance length, TensorRT-LLM MTP and vLLM EAGLE, first
  // predictions 25.6% / 63.6%, twenty-seventh session, 24.4% / 63.6% since the one-shot all-reduce, twenty-eighth;
  // decode: 7.8% / 35.3% since the replicated gpt-fast head and the one-shot all-reduce; attention: cuDNN's fused
  // attention on H200 and GB200, thirty-fourth session, first predictions 29.0% / 52.1%, the model pricing it at
  // FlashAttention 2's rate on Hopper and an assumed one on Blackwell; 45.3% / 309.5% since the thirty-sixth session's
  // 80 other shapes of the same benchmark, whose 20 runs at a 128-token sliding window the model prices 2-4x too fast;
  // latency: vLLM's CI on H200, 14.0% / 15.8%, and since the thirty-seventh session Oracle's nine vLLM runs of LLaMA
  // 3.1 405B FP8 on 8 MI300X, first predictions 14-23% too fast, and AMD's three of LLaMA 3.1 70B, 1-10%: 15.0% / 22.9%).
  // Training holdout as
  // a whole is dominated by the 20 MoE runs (-55% to +134%, docs/validation.md section 5); its dense-model runs have
  // their own ratchet below. It is 11.00% since the forty-first session's 59 MLPerf v6.0 rows (10.91% before), 10.92%
  // after the forty-second's EP-1 imbalance fix and 11.04% once it priced the 14 LoRA runs' all-to-all context
  // parallelism (cp_comm_type 'a2a', read in their configs); 10.94% with 21 LoRA runs' FP8 attention, 10.98% with 10
  // more (NVIDIA's v5.1/v6.0 8B NVFP4 and v6.0 DeepSeek-V3 runs), 11.11% with 14 partner 8B runs and the FP8 casts.
  // 11.12% with the forty-third session's FP8 attention by sequence length, 11.19% with its measured BF16 GEMM rates
  // of GB200, GB300 and B300 (aiconfigurator's TensorRT-LLM 1.3 sweep), which had none and now run faster; 11.15%
  // with B300's NVFP4 rate from the same sweep's B300-to-GB300 ratio; 10.92% with the forty-fifth session's measured
  // NCCL times and backward TP overlap. collective: aiconfigurator's nccl-tests sweeps on eight systems, forty-fifth
  // session, first predictions 36.3% / 91.9% (L40S's 4- and 8-GPU runs, 3-12x slower than the model, the worst;
  // docs/validation.md section 5); 12.7% over the 256 held out once the H100 and B200 sweeps became the model's
  // curves (3.7% without L40S, whose PCIe keeps NCCL's cost model). moe: TensorRT-LLM 1.3's fused MoE operator timed
  // alone on seven GPUs, forty-sixth session, first predictions 30.4% / 231.9%; 19.5% / 277.9% over the 408 held out
  // once the operator's gathers and fixed time were priced (fitted on the 48 H100 rows: 8.3% / 58.1%), the worst
  // L40S rows whose weights sit in its L2 in that benchmark. The same change moved max_throughput to 17.3%,
  // throughput to 10.3% / 131.2%, TTFT to 13.3% / 59.1% and latency to 14.8%, ratcheted there. serving_attention:
  // TensorRT-LLM 1.3's and vLLM 0.24's attention for one layer timed alone on seven GPUs, forty-seventh session, first
  // predictions 37.4% / 201.5%; 24.1% / 217.7% over the 1,056 held out once the cases priced the operators' cache
  // write and the model the context kernel's fixed time (fitted on the 36 H100 TensorRT-LLM prefill rows), which also
  // took TTFT to 12.4% / 58.7%; 26.1% / 313.1% with SGLang 0.5.14's 546 held-out rows, a third rule (L40S rows whose
  // cache sits in its L2 the worst), 26.6% with TensorRT-LLM's 360 DeepSeek-V3 MLA rows, a fourth (docs/validation.md
  // sections 4 and 5). concurrency: TensorRT-LLM's, vLLM's and SGLang's time per output token in closed-loop
  // benchmarks at concurrency 1-64 (aiconfigurator's silicon rows), forty-eighth session, first predictions 14.1% /
  // 231.9%; 12.2% / 205.0% once a prefill landing in a decode step shares its weight streaming; 15.2% with 542 MoE
  // rows by a second rule, their first predictions 19.8% / 100.8%; 15.1% once more clients than the KV cache holds
  // queue; 15.8% with 23 attention-DP rows by a third rule, their first predictions 56.8% / 174.4%; 15.8% over 1,245
  // once 168 of the MoE rows, copies of others, were kept once; 15.1% once attention DP's prompts land one per
  // attention group, side by side (fiftieth session; docs/validation.md section 5); 14.4% over 1,620 with 375 rows of
  // MiniMax-M2.5 by a fifth rule, their first predictions 12.2% / 49.4%. disagg: a decode worker's time per
  // output token in aiconfigurator's disaggregated runs, fiftieth session, first predictions (each client decoding)
  // 17.6% / 298.5%; 16.7% / 231.1% once the closed loop runs through the prefill workers (section 5).
  const std::map<std::string, Limits> holdout = {
      {"training", {0.1118, 1.10}}, {"ttft", {0.135, 0.598}}, {"throughput", {0.113, 1.322}},
      {"decode", {0.088, 0.363}}, {"gemm", {0.266, 3.09}}, {"latency", {0.158, 0.239}},
      {"max_throughput", {0.183, 3.002}}, {"speculative", {0.263, 0.646}}, {"attention", {0.460, 3.105}},
      {"collective", {0.138, 0.929}}, {"moe", {0.253, 3.086}}, {"serving_attention", {0.276, 3.142}},
      {"concurrency", {0.145, 2.06}}, {"disagg", {0.168, 2.32}}};
  std::map<std::string, std::map<std::string, std::pair<double, double>>> acc;  // group -> role -> (sum, worst)
  std::map<std::string, std::map<std::string, int>> n;
  for (const auto& c : rep->cases) {
    ASSERT_TRUE(c.failure.empty()) << c.name << ": " << c.failure;
    std::printf("%-10s %-11s %-58s published %10.4g predicted %10.4g error %+6.1f%%\n", c.group.c_str(), c.role.c_str(),
                c.name.c_str(), c.published, c.predicted, 100 * c.error);
    auto& a = acc[c.group][c.role];
    a.first += std::fabs(c.error);
    a.second = std::max(a.second, std::fabs(c.error));
    n[c.group][c.role]++;
  }
  for (const auto& [group, roles] : acc) {
    for (const auto& [role, a] : roles) {
      const double mean = a.first / n[group][role];
      std::printf("group %-10s %-11s n=%2d mean %5.1f%% worst %5.1f%%\n", group.c_str(), role.c_str(), n[group][role],
                  100 * mean, 100 * a.second);
      const auto& limits = role == "calibration" ? targets : holdout;
      auto it = limits.find(group);
      if (it == limits.end()) continue;
      EXPECT_LE(mean, it->second.mean) << group << " " << role << " mean error";
      EXPECT_LE(a.second, it->second.worst) << group << " " << role << " worst error";
    }
  }
  // The issue's training target on the 2021-22 A100 Megatron calibration rows, and Calculon's published
  // error (3.65% mean, 8.87% worst) on Korthikanti's.
  auto subset = [&](auto select) {
    double sum = 0, worst = 0;
    int k = 0;
    for (const auto& c : rep->cases)
      if (select(c)) {
        sum += std::fabs(c.error);
        worst = std::max(worst, std::fabs(c.error));
        k++;
      }
    return std::tuple{k, k ? sum / k : 0.0, worst};
  };
  auto starts = [](const ValidationCase& c, const char* p) { return c.name.rfind(p, 0) == 0; };
  auto [n_meg, mean_meg, worst_meg] =
      subset([&](const ValidationCase& c) { return starts(c, "Korthikanti") || starts(c, "Narayanan"); });
  EXPECT_EQ(n_meg, 18);
  EXPECT_LE(mean_meg, 0.07);
  EXPECT_LE(worst_meg, 0.15);
  auto [n_dense, mean_dense, worst_dense] =
      subset([&](const ValidationCase& c) { return c.group == "training" && c.role == "holdout" && !c.moe; });
  EXPECT_EQ(n_dense, 273);
  // The worst-case ratchet below guards the NVIDIA GPUs; the two MI300X rows (+54% and +73% with that GPU's measured
  // rates, +70% and +112% with the defaults they had before the thirty-seventh session) have their own evidence band
  // (evidence::kAmdInstinctTraining).
  auto [n_measured, mean_measured, worst_measured] = subset([&](const ValidationCase& c) {
    return c.group == "training" && c.role == "holdout" && !c.moe && !evidence::IsAmdInstinctGpu(c.gpu);
  });
  EXPECT_EQ(n_measured, 271);
  // 7.064%, as before the MI300X rows; 7.072% since the thirty-ninth session: its DP overlap window, which lasts as
  // long as the backward takes, its TP, CP and EP waits included (7.071%; data-neutral: 87 rows moved, 3 of the 7 that
  // moved by more than half a point toward the published figure), and ZeRO-3's weight gradient written once per
  // micro-batch, as Megatron-FSDP overwrites the buffer (six rows, 0.1-0.3 points). 7.522% since the fortieth session
  // added MLPerf Training v6.0's four dense rows, held out, the model unchanged: LLaMA-3.1 8B on 1,024 GB200s and 512
  // GB300s (46% and 26% too fast, the strong-scaling end where v5.1's were 34% too fast) and LLaMA-2 70B LoRA on 72
  // and 512 GB300s (31% and 27% too slow: BF16 base weights cast to FP8 every step, which v5.1 kept in FP8). 7.453%
  // with the same session's six v5.1 NVFP4 runs (4.9% mean once the model had an NVFP4 rate), 7.405% with its four
  // Megatron-Bridge NVFP4 rows (NVFP4 parameters); 7.377% with the forty-first session's four v6.0 NVFP4 runs on GB300
  // (LLaMA-3.1 405B on 512 and 2,048 GPUs 10% and 11% too fast, 8B on 8 and 72 within 1.3%), the model unchanged;
  // 7.220% with the v6.0 partners' 21 LLaMA-3.1 8B runs (5.4% mean: B300 8.5% too fast, GB300 within 5%, H100 FP8 6%
  // too slow); the guard follows it down. 7.551% with the partners' four LLaMA-2 70B LoRA runs (GB200 -10%, GB300 -35%
  // to -37%: the frozen BF16 weights' per-micro-batch cast the model charges does not show in them). 7.663% since the
  // forty-second session priced the all-to-all context parallelism (cp_comm_type 'a2a') that 14 LoRA runs' configs
  // set, exposed: their steps 4-6% longer, most of them already too slow. 7.553% once the 21 LoRA runs whose sources
  // say FP8_DPA=1 ran attention in FP8 (cuDNN's measured speed-up on B200, GB200 and GB300), 7.630% once NVIDIA's four
  // LLaMA-3.1 8B NVFP4 runs (config_common_fp8attn.sh) did too, the three on GB300 6.5-7.6% too fast where they were
  // within 1.3%; 7.814% with 14 partner 8B runs' FP8 attention (a per-row reading of their configs) and the FP8 casts
  // of Q, K, V and the output gradient that cuDNN's benchmark leaves out. 7.904% with the forty-third session's
  // measured BF16 GEMM rates of GB200, GB300 and B300 (faster than the estimates they replace: GB200's 16-bit runs
  // further too fast); 7.849% with B300's NVFP4 rate from that sweep's B300-to-GB300 ratio.
  EXPECT_LE(mean_measured, 0.0788);
  // The issue's 7% target held (6.92%) until the sixteenth session added the Llama 3 paper's two 405B runs on 8K and
  // 16K H100s, held out, which the model puts 19% too fast (7.25%), and the eighteenth the Megatron-LM README's nine
  // H100 runs (Megatron-Core r0.8.0, GPT 1.7B-462B), which it puts 14-35% too fast: 9.08%. The nineteenth session's
  // cross-entropy implementations (each stack's bytes per logit, read from its code) made it 8.90%, and the
  // twentieth's Megatron-Core gradient-buffer passes (zero and 1/DP scale, read from its code) 8.69%; the same
  // session's two Megatron-LM README strong-scaling end points (GPT 177B on 96 and 4608 H100s, +29% and +18%) 9.04%,
  // and its per-chunk data-parallel overlap under interleaved pipelines (Megatron-Core's grad_sync_func and
  // param_sync_func), which makes every interleaved run faster, 9.56%; with NeMo 24.07's six fine-tuning runs (SFT
  // and LoRA, packed sequences) 9.50%; with the interleaved schedule's point-to-point transfers overlapped with the
  // next chunk's compute (Megatron's --overlap-p2p-communication, on in Megatron-LM and in NeMo's launcher configs)
  // 10.03%; the twenty-first session's three held-out NeMo AutoModel dense rows (LLaMA 3.1 70B FSDP2 +13.6%, two
  // single-GPU LoRA runs -9% and -12%) 10.08%; the same session's pipeline bubble as the other ranks' fill and drain
  // (a flow shop: the slowest rank no longer counted PP - 1 times, so a last stage slowed by the head shortens it)
  // 10.11%; the twenty-second session's seven torchtitan rows (A100 every-other-layer and per-op recompute, +3% to
  // +16%; H200 Float8, +19% and +21%) left it at 10.11%, and its fifty rows of NVIDIA's DGX Cloud recipes
  // (dgxc-benchmarking: NeMo 24.05-25.04.01, LLaMA 3.1 8B-405B and GPT-3 175B on H100 and GB200; 10.4% mean, the
  // model too fast on 44 of them) 10.22%; then the same session's TP-overlap share (data/efficiency.toml
  // tp_overlap_hidden, from torchtitan's async-TP benchmark: overlap hides 42% of the TP collectives, not all but
  // their contention cost) 8.13%, and with FP8 all-gathers moving one byte per element (Transformer Engine gathers
  // its FP8-cast inputs; the share re-derived with them, 0.48) 8.35%, and with the same repository's twelve
  // Nemotron-4 15B and 340B rows (-1% to -17% of the step) 8.28%; the twenty-third session's three NeMo 24.07
  // Nemotron rows (8B and 22B +16% too fast, 340B +4%) 8.35%, and its delayed-scaling amax all-reduces over TP x DP
  // x CP 8.33%, and Megatron-Core's data-parallel buckets and FSDP's per-block collectives (one ring latency each)
  // 8.24%; the twenty-fourth session's Blackwell GEMM rates from large-shape measurements instead of MAMF's best
  // shape (B200 BF16 0.733 -> 0.639, FP8 0.721 -> 0.633; GB200 BF16 0.689 -> 0.600) 8.00%; the twenty-fifth
  // session's 26 MLPerf Training rows (GPT-3 175B on 256 to 11,616 H100s and 64 B200s, LLaMA-3.1 405B on 512 to
  // 8,192 H100s and 256 to 2,496 GB200s; step times from the submissions' logs; 11.1% mean, all but one too fast,
  // the worst at 10,752 H100s with 8 micro-batches per step) 8.42%, and with its 18 MLPerf LLaMA-2 70B LoRA rows
  // (8 to 1,024 H100, H200, L40S, B200 and GB200 GPUs; 11.8% mean, the model too fast on 14) 8.71%, and with its two
  // MLPerf v5.1 LLaMA-3.1 8B rows (72 and 512 GB200s, +12% and +33% too fast) 8.84%; then the contention cost of
  // overlapped communication refitted on the training calibration rows to Lee et al.'s worst measured 0.40 (from
  // their mean 0.189), with the TP-overlap share re-derived from torchtitan's measurements (0.48 -> 0.65): 7.79%
  // (worst 27.6%); with Oracle's two MLPerf GPT-3 rows (1,536 and 3,072 H100s on RoCE: -5% and -20%) 7.84%; with the
  // L40S link fraction fitted on serving rows (twenty-eighth session; MLPerf's two L40S LoRA runs -22% -> -0.5%)
  // 7.63%; with FP8 parameters (one-byte parameter all-gathers) on the 20 MLPerf rows whose configurations set
  // FP8_PARAMS (thirtieth session: physics they ran, which moves them 0-2 points further toward too fast) 7.67%;
  // with the fixed data-parallel buckets of Apex's DistributedFusedAdam on the 16 MLPerf GPT-3 rows whose
  // configurations set them (100 MB in v3.1, BUCKET_CAP_MB=200 from v4.0; thirty-first session: at DP 128-484 the
  // buckets are 2-7x as many as Megatron-Core's, each paying the ring's latency) 7.52%, and on the 40 dgxc-benchmarking
  // NeMo 1.x rows whose recipes set bucket_cap_mb (50-220 MB) 7.48%; with MLPerf v5.1's two LLaMA-3.1 8B rows taking
  // what their files set (FP8_PARAM_GATHER, BUCKET_SIZE=768000000: fewer collectives, one-byte gathers), which makes
  // them 9 and 6 points faster (-1.9% -> -11.0%, -27.6% -> -33.8%), 7.55%; with NeMo 24.07's 12 pretraining rows
  // taking their launcher yamls' bucket_cap_mb (50-400 MB: at DP <= 64 fewer collectives, 0-2 points faster) 7.57%;
  // with FP8 training's gradient GEMMs at FP32 accumulation on Hopper (thirty-second session: 0.888 of the
  // fast-accumulation rate, from float8_experimental PR #144's layer speed-ups; Transformer Engine and torchao run
  // dgrad and wgrad that way) 7.32%; with each linear's gradient GEMMs timed over their own bytes, the weight
  // gradient's being the gradient buffer that fused stacks read and rewrite on every micro-batch after the step's
  // first (Transformer Engine's fuse_wgrad_accumulation; 4 B per parameter with FP32 gradients; the output layer's
  // and MTP projection's gradients too) 7.07%; with Blackwell's tensor-scaled FP8 casts writing no transposed copy
  // (Transformer Engine's is_non_tn_fp8_gemm_supported: code, not a fit; the GB200 rows 0-1 point further too fast)
  // 7.12%; with Transformer Engine's FP8 weight casts (thirty-third session: once per step with its weight cache, in
  // the pipeline's fill; every micro-batch where a run disables the cache or shards weights with ZeRO-3) 7.04%; with
  // LoRA as NeMo runs it (one adapter on the fused QKV projection where the configs name linear_qkv / attention_qkv,
  // the adapters' input dropout where they set it, the alpha / r scale's pass and the input gradient's sum with the
  // frozen layer's, on the GPU's sequence shard where the adapter drops and sums the layer's input: read from the
  // code, and 0.9 point worse on the 23 LoRA rows) 7.14%; with GB200's HBM fraction from a triad-like kernel (B200's
  // CCCL element-wise add, 0.840, in place of Azure's unnamed-kernel 0.919; thirty-fourth session) 7.05%.
  // The thirty-fifth session's B300 and GB300 catalog entries let in 11 held-out dense GB300 runs (Megatron-Bridge
  // 25.11-26.06 LLaMA 3 8B, 70B, 3.1 405B; MLPerf v5.1 LLaMA-2 70B LoRA and LLaMA-3.1 8B): 7.16% with GB300's GEMM
  // rates from B300's benchmark, 7.10% with its FP8 rate from Azure's sustained sweep on GB300 (-11% to +11%, and the
  // 512-GPU 8B 34% too fast, as on GB200); 7.06% with MLPerf v5.1's LoRA step times over the intervals that span no
  // evaluation (GB200 on 512 GPUs 0.2297 -> 0.2051 s). The thirty-sixth session's two held-out MI300X rows (pytorch/ao's
  // torchtitan LLaMA 3 8B, BF16 and Float8; the model's MI300X rates beyond the GEMM are defaults) made it 7.81%, and
  // the thirty-seventh session's MI300X rates from Azure's micro-benchmarks of that GPU (hipBLASLt FP8, BabelStream,
  // FlashAttention 2, RCCL: +70% -> +54%, +112% -> +73%) 7.57%.
  // Ratcheted at that honest figure, not at the target (earlier: 7.03% in the eighth session, 6.86% before the
  // ninth's block-recompute row, 6.93% before the tenth's two CPU-offload rows).
  // 8.010% since the fortieth session's four MLPerf v6.0 dense rows (7.573% before; the model unchanged); 7.930% with
  // its six v5.1 NVFP4 rows, 7.875% with its four Megatron-Bridge NVFP4 rows; the forty-first session's 25 MLPerf v6.0
  // rows (NVIDIA's four NVFP4 runs, the partners' 21 LLaMA-3.1 8B runs) 7.646%, and with the partners' four LoRA runs
  // 7.969%. 8.077% since the forty-second session's all-to-all context parallelism on 14 LoRA runs (a configuration
  // fact read in their yaml); 7.964% with those runs' FP8 attention, 8.041% with the 8B NVFP4 runs' as well, 8.224%
  // with 14 partner 8B runs' and the FP8 attention casts; 8.313% with the forty-third session's measured BF16 GEMM
  // rates of GB200, GB300 and B300; 8.259% with B300's NVFP4 rate from that sweep's ratio.
  EXPECT_LE(mean_dense, 0.0829);  // 7.573% (7.565% before the thirty-ninth session's DP window and ZeRO-3 write)
  // 46.3%: MLPerf v6.0's LLaMA-3.1 8B on 1,024 GB200s, a 0.072 s step, plus one point (34.2% before: v5.1's on 512
  // GB300s, a 0.085 s step; 33.2% on 512 GB200s).
  EXPECT_LE(worst_measured, 0.474);
  EXPECT_LE(worst_dense, 0.74);      // 73.0%: MI300X Float8, plus one point
  // The README's strong scaling of GPT 177B from 96 to 4608 H100s at a fixed batch: MFU 47% -> 42% (x 0.894). The
  // model's ratio is within 3.5% of it (8.1% short before the per-chunk DP overlap, 0.7% short before the overlapped
  // point-to-point, 2.6% over before the twenty-second session's TP-overlap share: more exposed TP time per
  // micro-batch makes the fixed data-parallel cost at 4608 GPUs a smaller part of the step); the published MFU's
  // rounding alone allows about 1.5%. Held to 4%.
  {
    const ValidationCase *small = nullptr, *large = nullptr;
    for (const auto& c : rep->cases) {
      if (c.name == "Megatron-LM README H100 GPT 177B strong scaling x96 TP8 PP6 DP2") small = &c;
      if (c.name == "Megatron-LM README H100 GPT 177B strong scaling x4608 TP8 PP6 DP96") large = &c;
    }
    ASSERT_TRUE(small && large);
    const double ratio_error =
        (large->predicted / small->predicted) / (large->published / small->published) - 1;
    EXPECT_LE(std::fabs(ratio_error), 0.04) << ratio_error;
  }
  // Calculon's 3.65% / 8.87% on Korthikanti's eight runs: matched on the mean, to within 0.05 points (3.68% since the
  // forty-fifth session's measured NCCL times, which made A100's tensor-parallel collectives slower, and its
  // column-parallel backward overlap, which hides part of them again; 3.47% before), beaten on the worst (7.7%).
  auto [n_k, mean_k, worst_k] = subset([&](const ValidationCase& c) { return starts(c, "Korthikanti"); });
  EXPECT_EQ(n_k, 8);
  EXPECT_LE(mean_k, 0.0370);
  EXPECT_LE(worst_k, 0.0887);
  // Every case is in a known group, and the bundled set is complete.
  EXPECT_GE(rep->cases.size(), 400u);  // 438 end-to-end runs and 39 GEMM shapes
}

// Every bundled run ran on its hardware, so each is also a check that the memory model does not call a real run
// impossible (docs/validation.md §2). Five still come out over the GPU's memory, by 3-7%; the test names them, so
// that a change adding a sixth, or fixing one, shows here.
TEST(PerfValidation, RunsThatRanFitTheMemoryModel) {
  const auto& rep = Bundled();
  ASSERT_TRUE(rep.ok()) << rep.status().message();
  std::set<std::string> over;
  int runs = 0;
  for (const auto& c : rep->cases) {
    // concurrency: a closed-loop benchmark whose clients' caches do not all fit still runs; the engine holds fewer
    // sequences at once and queues the rest, which the estimate reports as DOES NOT FIT (methodology §9.6).
    if (c.group == "gemm" || c.group == "concurrency" || !c.failure.empty()) continue;
    ++runs;
    if (!c.fits) over.insert(c.name);
  }
  EXPECT_GE(runs, 430);
  const std::set<std::string> known = {
      // FlashAttention's fused loss computes its gradient in place; the model keeps the FP32 logits (§2).
      "flash-attention GPT3-355M a100 x8",
      // Meta's own pipeline schedule, not Megatron's in-flight micro-batches.
      "Llama 3 paper 405B H100 x8192 TP8 PP16 VP8 DP64 seq 8192",
      // NeMo 24.07's packed SFT: its optimizer settings are not in the table.
      "NeMo 24.07 SFT LLaMA-2 70B H100 FP8 x16 TP4 PP4 packed",
      // Megatron-Bridge's GB300 MXFP8 recipes at 104% and 107%: settings the case keys do not carry (the recipes'
      // BF16 Adam moments among them, left at the default as on the neighbouring GB200 rows).
      "Megatron-Bridge 26.04.01 GB300 LLaMA-3 70B MXFP8 x64 PP4 VP5",
      "Megatron-Bridge 26.06 GB300 LLaMA-3.1 405B MXFP8 x256 TP2 PP8 CP2 VP4 SP"};
  EXPECT_EQ(over, known);
}

// The notes `suanli perf` prints for configurations the model is known to get wrong quote figures from this
// data (suanli/perf.h, namespace evidence). Recomputed here, so a model change that moves them fails until the
// figures and docs/validation.md §5 are updated together.
TEST(PerfValidation, CaveatFiguresMatchTheValidationData) {
  const auto& rep = Bundled();
  ASSERT_TRUE(rep.ok());
  auto has = [](const std::string& s, const char* part) { return s.find(part) != std::string::npos; };
  // `on_speed`: signed as fast_error (a step time's error negated); otherwise the error as it is (the serving classes
  // are signed on the latency).
  // `value`: the signed figure a case adds to the class.
  auto check_by = [&](const ValidationEvidence& want, auto select, const char* what, auto value) {
    int n = 0;
    double sum = 0, lo = 1e9, hi = -1e9;
    for (const auto& c : rep->cases) {
      if (!select(c)) continue;
      n++;
      const double e = value(c);
      sum += e;
      lo = std::min(lo, e);
      hi = std::max(hi, e);
    }
    EXPECT_EQ(n, want.cases) << what;
    if (n == 0) return;
    std::printf("evidence %s: %d runs, mean %.4f, %.4f to %.4f\n", what, n, sum / n, lo, hi);
    EXPECT_NEAR(sum / n, want.mean, 0.005) << what;
    EXPECT_NEAR(lo, want.lo, 0.005) << what;
    EXPECT_NEAR(hi, want.hi, 0.005) << what;
  };
  auto check = [&](const ValidationEvidence& want, auto select, const char* what, bool on_speed = false) {
    check_by(want, select, what, [&](const ValidationCase& c) { return on_speed ? c.fast_error() : c.error; });
  };
  check(evidence::kEagerFsdpFoundryH100,
        [&](const ValidationCase& c) { return has(c.name, "llm-foundry") && has(c.name, "h100"); },
        "llm-foundry eager FSDP on H100 (held out)");
  check(evidence::kMoeServingTtft, [&](const ValidationCase& c) { return c.group == "ttft" && has(c.name, "mixtral"); },
        "Mixtral TTFT");
  check(evidence::kMoeServingThroughput,
        [&](const ValidationCase& c) { return c.group == "throughput" && has(c.name, "mixtral"); }, "Mixtral throughput");
  auto moe_operator = [&](const ValidationCase& c) {
    return c.group == "moe" && c.role == "holdout" && c.gpu != "l40s";
  };
  auto trtllm = [&](const ValidationCase& c) { return has(c.name, " TRT-LLM "); };
  check(evidence::kMoeOperator,
        [&](const ValidationCase& c) { return moe_operator(c) && trtllm(c) && !has(c.name, " fp4 "); },
        "TensorRT-LLM 1.3 fused MoE operator, BF16 and FP8", true);
  check(evidence::kMoeOperatorNvfp4,
        [&](const ValidationCase& c) { return moe_operator(c) && trtllm(c) && has(c.name, " fp4 "); },
        "TensorRT-LLM 1.3 fused MoE operator, NVFP4", true);
  check(evidence::kMoeOperatorFlashinferBlackwell,
        [&](const ValidationCase& c) {
          return moe_operator(c) && !trtllm(c) &&
                 (c.gpu == "b200" || c.gpu == "b300" || c.gpu == "gb200" || c.gpu == "gb300");
        },
        "vLLM and SGLang MoE on Blackwell", true);
  // Serving attention, decode, L40S apart: caches over 128 MiB (beyond every listed GPU's L2), and fewer than 16
  // sequence x KV-head pairs at 8,192 keys or more.
  auto decode_attention = [&](const ValidationCase& c, bool few) {
    if (c.group != "serving_attention" || !has(c.name, " decode ") || has(c.name, " MLA ") || c.gpu == "l40s")
      return false;
    int batch = 0, context = 0, heads = 0, kv = 0;
    std::sscanf(c.name.substr(c.name.find(" (")).c_str(), " (%d/%dx", &heads, &kv);
    std::sscanf(c.name.substr(c.name.find(" batch ")).c_str(), " batch %d context %d", &batch, &context);
    const double cache = double(batch) * context * kv * 128 * 2 * (has(c.name, " fp8 cache") ? 1 : 2);
    return few ? batch * kv < 16 && context >= 8192 : cache > 128.0 * (1 << 20);
  };
  check(evidence::kServingDecodeAttention, [&](const ValidationCase& c) { return decode_attention(c, false); },
        "decode attention, caches over 128 MiB", true);
  check(evidence::kServingDecodeAttentionFewHeads, [&](const ValidationCase& c) { return decode_attention(c, true); },
        "decode attention, fewer than 16 pairs at 8K keys or more", true);
  check(evidence::kMoeClosedLoopTpot,
        [&](const ValidationCase& c) {
          return c.group == "concurrency" && c.moe && !has(c.name, " attention-DP") && !has(c.name, " MiniMax-M2.5 ");
        },
        "MoE closed-loop time per output token", true);
  check(evidence::kMiniMaxClosedLoopTpot,
        [&](const ValidationCase& c) { return c.group == "concurrency" && has(c.name, " MiniMax-M2.5 "); },
        "MiniMax-M2.5 closed-loop time per output token", true);
  check(evidence::kMoeExpertParallelClosedLoopTpot,
        [&](const ValidationCase& c) {
          return c.group == "concurrency" && c.moe && !has(c.name, " attention-DP") && !has(c.name, " EP1 ") &&
                 has(c.name, " EP") && !has(c.name, " MiniMax-M2.5 ");
        },
        "MoE closed-loop time per output token, EP > 1", true);
  check(evidence::kMoeAttentionDpClosedLoopTpotShort,
        [&](const ValidationCase& c) {
          return c.group == "concurrency" && has(c.name, " attention-DP") && has(c.name, " 1024/") &&
                 !has(c.name, " MiniMax-M2.5 ");
        },
        "MoE closed-loop time per output token, attention DP, 1,024-token prompts", true);
  check(evidence::kMoeAttentionDpClosedLoopTpotLong,
        [&](const ValidationCase& c) {
          return c.group == "concurrency" && has(c.name, " attention-DP") && has(c.name, " 8192/") &&
                 !has(c.name, " MiniMax-M2.5 ");
        },
        "MoE closed-loop time per output token, attention DP, 8,192-token prompts", true);
  check(evidence::kDisaggTpot, [&](const ValidationCase& c) { return c.group == "disagg"; },
        "disaggregated decode workers' time per output token", true);
  check(evidence::kDisaggExpertParallelTpot,
        [&](const ValidationCase& c) {
          return c.group == "disagg" && c.moe && has(c.name, " EP") && !has(c.name, " EP1 ");
        },
        "disaggregated decode workers with EP > 1", true);
  check(evidence::kServingMlaDecodeAttention,
        [&](const ValidationCase& c) { return c.group == "serving_attention" && has(c.name, " MLA decode "); },
        "TensorRT-LLM 1.3 MLA decode", true);
  check(evidence::kServingPrefillAttentionHopper,
        [&](const ValidationCase& c) {
          return c.group == "serving_attention" && has(c.name, " prefill ") && !has(c.name, " MLA ") &&
                 (c.gpu == "h100-sxm" || c.gpu == "h200-sxm") && has(c.name, "prompt 8192") &&
                 (has(c.name, " bf16 batch") || has(c.name, " bf16 over bf16 "));
        },
        "Hopper prefill attention, BF16, 8K", true);
  auto hopper = [&](const ValidationCase& c) { return has(c.name, "h100-sxm") || has(c.name, "h200-sxm"); };
  check(evidence::kBlackwellNvfp4MaxThroughput,
        [&](const ValidationCase& c) {
          return c.group == "max_throughput" && has(c.name, "TRT-LLM 1.0 ") && (c.gpu == "b200" || c.gpu == "gb200");
        },
        "NVFP4 maximum throughput on B200/GB200");
  check(evidence::kAttentionCudnn,
        [&](const ValidationCase& c) {
          return c.group == "attention" && has(c.name, "cudnn-frontend SDPA") && !has(c.name, " window ");
        },
        "cuDNN fused attention on H200, GB200 and GB300, full causal");
  check(evidence::kAttentionSmallWindow,
        [&](const ValidationCase& c) { return c.group == "attention" && has(c.name, " window 128 "); },
        "cuDNN sliding-window attention, 128-token window (GB200, GB300)");
  check(evidence::kAttentionWideWindow,
        [&](const ValidationCase& c) { return c.group == "attention" && has(c.name, " window 1024 "); },
        "cuDNN sliding-window attention, 1024-token window (H200)");
  check(evidence::kFp4MidShapeGemm,
        [&](const ValidationCase& c) {
          return c.group == "gemm" && has(c.name, "DeepGEMM PR 348 cuBLAS mxfp4") && !has(c.name, "8192x8192x8192");
        },
        "cuBLAS MXFP4 GEMMs of 128-4,096 rows on B200");
  check(evidence::kSpeculativeMtpTrtllm,
        [&](const ValidationCase& c) { return c.group == "speculative" && has(c.name, "TRT-LLM MTP"); },
        "TensorRT-LLM MTP speculative speed-up");
  check(evidence::kSpeculativeEagle,
        [&](const ValidationCase& c) { return c.group == "speculative" && has(c.name, "EAGLE"); },
        "vLLM and SGLang EAGLE speculative speed-up");
  check(evidence::kTrtllm013MaxThroughput,
        [&](const ValidationCase& c) { return c.group == "max_throughput" && has(c.name, "TRT-LLM 0.13 ") && !c.moe; },
        "TensorRT-LLM 0.13 maximum throughput");
  {
    // TensorRT-LLM 1.0 against 0.13 on the configurations both maximum-throughput tables have: the same model, GPU,
    // TP, precision and ISL/OSL (LLaMA 3.3 70B in 1.0's table is LLaMA 3.1 70B in 0.13's: the same architecture).
    auto config = [](const ValidationCase& c, const char* prefix) -> std::string {
      std::string n = c.name.substr(std::string(prefix).size());
      for (const auto& [from, to] : {std::pair<std::string, std::string>{"LLaMA v3.1 ", "Llama 3.1 "},
                                     {"Llama 3.3 70B", "Llama 3.1 70B"}})
        if (n.rfind(from, 0) == 0) n = to + n.substr(from.size());
      return n;
    };
    std::map<std::string, double> newer;
    for (const auto& c : rep->cases)
      if (c.group == "max_throughput" && has(c.name, "TRT-LLM 1.0 ")) newer[config(c, "TRT-LLM 1.0 ")] = c.published;
    int pairs = 0;
    double sum = 0;
    for (const auto& c : rep->cases)
      if (c.group == "max_throughput" && has(c.name, "TRT-LLM 0.13 "))
        if (auto it = newer.find(config(c, "TRT-LLM 0.13 ")); it != newer.end()) {
          pairs++;
          sum += it->second / c.published;
        }
    EXPECT_EQ(pairs, evidence::kTrtllm10Over013.pairs);
    ASSERT_GT(pairs, 0);
    std::printf("evidence TensorRT-LLM 1.0 / 0.13: %d configurations, mean ratio %.4f\n", pairs, sum / pairs);
    EXPECT_NEAR(sum / pairs, evidence::kTrtllm10Over013.mean_ratio, 0.005);
  }
  check(evidence::kMoeMaxThroughput013,
        [&](const ValidationCase& c) { return c.group == "max_throughput" && has(c.name, "TRT-LLM 0.13 ") && c.moe; },
        "TensorRT-LLM 0.13 maximum throughput, Mixtral");
  check(evidence::kHopperFp8ShortPromptTtft,
        [&](const ValidationCase& c) {
          return c.group == "ttft" && has(c.name, "v0.9") && hopper(c) && has(c.name, "ISL 128") &&
                 !has(c.name, "mixtral");
        },
        "Hopper FP8 TTFT at 128 tokens");
  // On the time: measured / predicted - 1, from tokens/s rows (torchao on H100) and latency rows.
  auto slower = [](const ValidationCase& c) {
    return c.metric == "decode_tokens_per_s" ? c.error : 1 / (1 + c.error) - 1;
  };
  check_by(evidence::kHopperSmallBatchDecode,
           [&](const ValidationCase& c) {
             const bool torchao_h100 = c.name.rfind("torchao", 0) == 0 && c.gpu == "h100-sxm";
             return torchao_h100 || (c.group == "latency" && hopper(c));
           },
           "small-batch decode on Hopper (torchao H100, vLLM H200)", slower);
  check_by(evidence::kAmdInstinctServingLatency,
           [&](const ValidationCase& c) { return c.group == "latency" && evidence::IsAmdInstinctGpu(c.gpu); },
           "vLLM latency on MI300X (Oracle, AMD)", slower);
  {
    // Absolute: measured minus predicted seconds, one GPU, 128-token prompts, v0.9, dense models.
    const auto& want = evidence::kShortPromptTtftShortfall;
    int n = 0;
    double sum = 0, lo = 1e9, hi = -1e9;
    for (const auto& c : rep->cases) {
      if (c.group != "ttft" || !has(c.name, "v0.9") || !has(c.name, " TP1 ") || !has(c.name, "ISL 128") ||
          has(c.name, "mixtral"))
        continue;
      const double d = c.published - c.predicted;
      n++;
      sum += d;
      lo = std::min(lo, d);
      hi = std::max(hi, d);
    }
    EXPECT_EQ(n, want.cases) << "single-GPU TTFT shortfall at 128 tokens";
    if (n > 0) {
      EXPECT_NEAR(sum / n, want.mean_s, 0.05e-3);
      EXPECT_NEAR(lo, want.lo_s, 0.05e-3);
      EXPECT_NEAR(hi, want.hi_s, 0.05e-3);
    }
  }
  // Weak scaling: dgxc-benchmarking's configurations at their smallest and largest GPU count (the case names differ
  // only in " x<GPUs> "); what the published step grew beyond the model's.
  {
    std::map<std::string, std::vector<std::pair<int, const ValidationCase*>>> pairs;
    for (const auto& c : rep->cases) {
      if (c.group != "training" || c.name.rfind("dgxc-benchmarking", 0) != 0) continue;
      const size_t x = c.name.find(" x");
      const size_t end = c.name.find(' ', x + 2);
      ASSERT_NE(x, std::string::npos) << c.name;
      pairs[c.name.substr(0, x) + c.name.substr(end)].push_back({std::stoi(c.name.substr(x + 2, end - x - 2)), &c});
    }
    int n = 0;
    double sum = 0, lo = 1e9, hi = -1e9;
    for (auto& [key, v] : pairs) {
      if (v.size() < 2) continue;
      std::sort(v.begin(), v.end());
      const ValidationCase& small = *v.front().second;
      const ValidationCase& large = *v.back().second;
      ASSERT_EQ(small.metric, "step_time_s") << key;
      const double miss = (large.published / small.published) / (large.predicted / small.predicted) - 1;
      n++;
      sum += miss;
      lo = std::min(lo, miss);
      hi = std::max(hi, miss);
    }
    const auto& want = evidence::kWeakScalingShortfall;
    std::printf("evidence weak scaling: %d runs, mean %.4f, %.4f to %.4f\n", n, sum / n, lo, hi);
    EXPECT_EQ(n, want.cases);
    EXPECT_NEAR(sum / n, want.mean, 0.0005);
    EXPECT_NEAR(lo, want.lo, 0.0005);
    EXPECT_NEAR(hi, want.hi, 0.0005);
  }
  check(evidence::kFp8TrainingMegatronCore,
        [&](const ValidationCase& c) {
          return !c.moe && !has(c.name, " NVFP4 ") &&
                 (((c.name.rfind("NeMo 24.07", 0) == 0 || c.name.rfind("Megatron-Bridge", 0) == 0) &&
                   !has(c.name, " SFT ") && !has(c.name, " LoRA ")) ||
                  (c.name.rfind("dgxc-benchmarking", 0) == 0 && has(c.name, " FP8 ")) ||
                  (c.name.rfind("MLPerf Training", 0) == 0 && !has(c.name, " LoRA ") && !has(c.name, " NVFP4 ")));
        },
        "Megatron-Core FP8 training", true);
  check(evidence::kNvfp4TrainingMegatronCore, [&](const ValidationCase& c) { return has(c.name, " NVFP4 "); },
        "NVFP4 training (MLPerf v5.1 and v6.0, Megatron-Bridge)", true);
  check(evidence::kLoraFinetuning, [&](const ValidationCase& c) { return has(c.name, " LoRA "); },
        "LoRA fine-tuning", true);
  check(evidence::kLoraFrozen16BitFp8,
        [&](const ValidationCase& c) {
          return has(c.name, " LoRA ") && has(c.name, "MLPerf Training v6.0") && c.gpu == "gb300";
        },
        "LoRA over 16-bit frozen weights in FP8 without the weight cache (GB300, NeMo 26.04)", true);
  check(evidence::kEagerFsdpTorchtitan,
        [&](const ValidationCase& c) { return c.name.rfind("torchtitan FSDP2", 0) == 0; },
        "torchtitan eager FSDP2");
  check(evidence::kFp8TrainingTorchtitan,
        [&](const ValidationCase& c) { return c.name.rfind("torchtitan Trainy", 0) == 0; },
        "torchtitan Float8 (H200)");
  check(evidence::kH100Bf16FusedTraining,
        [&](const ValidationCase& c) {
          return c.name.rfind("Megatron-LM README", 0) == 0 || c.name.rfind("Llama 3 paper", 0) == 0 ||
                 (has(c.name, "NeMo AutoModel") && has(c.name, "compiled")) ||
                 (c.name.rfind("dgxc-benchmarking", 0) == 0 && !c.moe && has(c.name, " H100 ") && has(c.name, " BF16 "));
        },
        "16-bit fused-stack training on H100", true);
  check(evidence::kBlackwellDenseTraining,
        [&](const ValidationCase& c) {
          return c.group == "training" && !c.moe && evidence::IsBlackwellTrainingGpu(c.gpu);
        },
        "dense training on B200 and GB200", true);
  check(evidence::kBlackwellUltraDenseTraining,
        [&](const ValidationCase& c) { return c.group == "training" && !c.moe && c.gpu == "gb300"; },
        "dense training on GB300", true);
  check(evidence::kCpAllToAllTraining,
        [&](const ValidationCase& c) {
          return c.group == "training" && has(c.name, "LoRA") &&
                 (c.name.ends_with("CP8") || (has(c.name, "b200_preview") && c.name.ends_with("CP2")));
        },
        "all-to-all context parallelism (MLPerf LoRA)", true);
  {  // the note's "slow on N and fast on M"
    int fast = 0;
    for (const auto& c : rep->cases)
      if (c.group == "training" && !c.moe && c.gpu == "gb300" && c.fast_error() > 0) ++fast;
    EXPECT_EQ(fast, evidence::kBlackwellUltraDenseTrainingFast);
  }
  check(evidence::kB300DenseTraining,
        [&](const ValidationCase& c) { return c.group == "training" && !c.moe && c.gpu == "b300"; },
        "dense training on B300", true);
  check(evidence::kAmdInstinctTraining,
        [&](const ValidationCase& c) { return c.group == "training" && evidence::IsAmdInstinctGpu(c.gpu); },
        "training on AMD Instinct", true);
  check(evidence::kShortStepTraining,
        [&](const ValidationCase& c) {
          return c.group == "training" && !c.moe && !evidence::IsAmdInstinctGpu(c.gpu) && c.step_time_s > 0 &&
                 c.step_time_s < evidence::kShortStepSeconds;
        },
        "dense training with steps under 0.7 s", true);
  {
    int n = 0;
    double sum = 0, lo = 1e9, hi = -1e9;
    for (const char* size : {"22B", "175B", "530B", "1T"}) {
      const ValidationCase *sel = nullptr, *full = nullptr;
      for (const auto& c : rep->cases) {
        if (c.name == std::string("Korthikanti ") + size + ", SP + selective") sel = &c;
        if (c.name == std::string("Korthikanti ") + size + ", full recompute") full = &c;
      }
      ASSERT_TRUE(sel && full) << size;
      const double r = (sel->predicted / full->predicted) / (sel->published / full->published) - 1;
      n++;
      sum += r;
      lo = std::min(lo, r);
      hi = std::max(hi, r);
    }
    EXPECT_EQ(n, evidence::kSameJobRatio.cases);
    EXPECT_NEAR(sum / n, evidence::kSameJobRatio.mean, 0.005);
    EXPECT_NEAR(lo, evidence::kSameJobRatio.lo, 0.005);
    EXPECT_NEAR(hi, evidence::kSameJobRatio.hi, 0.005);
  }
  check(evidence::kMoeTrainingCalibration,
        [&](const ValidationCase& c) { return c.group == "training" && c.moe && c.role == "calibration"; },
        "MoE training, calibration (Megatron-LM recipes)");
  check(evidence::kMoeTrainingHoldout,
        [&](const ValidationCase& c) {
          return c.group == "training" && c.moe && c.role == "holdout" && !has(c.name, " 25.11 ") &&
                 !has(c.name, "NeMo AutoModel") && !has(c.name, "Grok-1") && !has(c.name, "Llama 4 Maverick");
        },
        "MoE training, held out (Megatron-Bridge 26.04.01-26.08, model card, ModelZoo, MLPerf v6.0)", true);
  check(evidence::kMoeTrainingCoarseExperts,
        [&](const ValidationCase& c) { return c.group == "training" && c.moe && has(c.name, "Grok-1"); },
        "MoE training, coarse experts (Grok-1, NeMo recipes)", true);
  check(evidence::kMoeTrainingLlama4Nemo,
        [&](const ValidationCase& c) { return c.group == "training" && has(c.name, "Llama 4 Maverick"); },
        "MoE training, Llama 4 Maverick (NeMo recipes)", true);
  check(evidence::kMoeTrainingAutomodel,
        [&](const ValidationCase& c) { return c.group == "training" && c.moe && has(c.name, "NeMo AutoModel"); },
        "MoE training, NeMo AutoModel");
  check(evidence::kMoeTrainingMegatronBridge2511,
        [&](const ValidationCase& c) { return c.group == "training" && c.moe && has(c.name, " 25.11 "); },
        "MoE training, Megatron-Bridge 25.11");
}

// The error band every estimate carries (suanli/perf.h, evidence::k*Error) is the mean, 90th percentile and
// worst absolute error of its validation group in the bundled data; recomputed here so the two cannot drift.
TEST(PerfValidation, ErrorBandsMatchTheValidationData) {
  const auto& rep = Bundled();
  ASSERT_TRUE(rep.ok());
  auto check = [&](const ErrorBand& want, bool dense_only) {
    std::vector<double> v;
    std::set<std::string> gpus;
    int fast = 0;
    double fast_sum = 0;
    const std::string prefix = want.runs_named;
    for (const auto& c : rep->cases)
      if (c.group == want.group && !(dense_only && c.moe) && c.name.rfind(prefix, 0) == 0) {
        v.push_back(std::fabs(c.error));
        gpus.insert(c.gpu);
        fast += c.fast_error() > 0;
        fast_sum += c.fast_error();
      }
    ASSERT_EQ(static_cast<int>(v.size()), want.cases) << want.group;
    EXPECT_EQ(gpus, std::set<std::string>(want.gpus.begin(), want.gpus.end())) << want.group;
    std::sort(v.begin(), v.end());
    double sum = 0;
    for (double x : v) sum += x;
    const size_t p90 = static_cast<size_t>(std::ceil(0.9 * v.size())) - 1;  // nearest rank
    {
      double total = 0;
      for (double x : v) total += x;
      std::printf("band %s: %zu runs, mean %.4f, p90 %.4f, worst %.4f, %d fast, mean signed %.4f\n", want.group,
                  v.size(), total / v.size(), v[p90], v.back(), fast, fast_sum / v.size());
    }
    EXPECT_NEAR(sum / v.size(), want.mean_abs, 0.001) << want.group;
    EXPECT_NEAR(v[p90], want.p90_abs, 0.001) << want.group;
    EXPECT_NEAR(v.back(), want.worst_abs, 0.001) << want.group;
    EXPECT_EQ(fast, want.fast_cases) << want.group;
    EXPECT_NEAR(fast_sum / v.size(), want.mean_fast, 0.001) << want.group;
  };
  check(evidence::kTrainingError, true);
  check(evidence::kDecodeError, false);
  check(evidence::kTtftDenseError, true);
  check(evidence::kThroughputDenseError, true);
  check(evidence::kMaxThroughputError, true);
  check(evidence::kConcurrencyTpotError, true);
}

// A user's own cases file: a misspelt key, a wrong type or an unknown role is an error naming the file, the
// case and the key (with a suggestion), never a case silently evaluated with defaults.
// One user serving row (LLaMA-2 7B on an H100, batch 1, 128-token prompt, TTFT) that the key-checking tests edit.
const std::string kUserTtftRow = R"([[infer]]
name = "mine"
model = "llama-2-7b"
gpu = "h100-sxm"
batch = 1
input_len = 128
output_len = 1
metric = "ttft_s"
published = 0.006
)";

TEST(PerfValidation, CaseFilesAreCheckedKeyByKey) {
  const std::string good = kUserTtftRow;
  EXPECT_GT(EvaluatedCase(good).predicted, 0);

  auto typo = RunCases(good + "\n[[train]]\nname = \"t\"\nmodel = \"llama-2-7b\"\natention = \"flash\"\n"
                       "published = 1\n");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("my.toml: [[train]] 't': unknown key 'atention'"), std::string::npos)
      << typo.status().message();
  EXPECT_NE(typo.status().message().find("did you mean 'attention'"), std::string::npos) << typo.status().message();

  std::string wrong_type = good;
  wrong_type.replace(wrong_type.find("batch = 1"), 9, "batch = \"1\"");
  auto wt = RunCases(wrong_type);
  ASSERT_FALSE(wt.ok());
  EXPECT_NE(wt.status().message().find("'batch' must be an integer"), std::string::npos) << wt.status().message();

  auto role = RunCases(good + "role = \"calibrate\"\n");
  ASSERT_FALSE(role.ok());
  EXPECT_NE(role.status().message().find("role 'calibrate' must be calibration or holdout"), std::string::npos);

  auto swap_text = [](std::string& text, const std::string& from, const std::string& to) {
    text.replace(text.find(from), from.size(), to);
  };
  // A value the model cannot use is reported on that case, and the case counts as a 100% error.
  const std::string bad_kernel = R"([[train]]
name = "k"
model = "llama-2-7b"
gpu = "h100-sxm"
gpus = 8
global_batch = 8
micro_batch = 1
attention = "flash3"
metric = "step_time_s"
published = 1
)";
  auto bk = RunCases(bad_kernel);
  ASSERT_TRUE(bk.ok()) << bk.status().message();
  EXPECT_NE(bk->cases[0].failure.find("unknown attention kernel 'flash3'"), std::string::npos) << bk->cases[0].failure;

  // The weights' format: a quantised one is a LoRA key, and FP8 parameters need FP8 GEMMs; both are reported on
  // their case.
  std::string base = bad_kernel;
  swap_text(base, "attention = \"flash3\"", "weights = \"int4\"");
  auto bw = RunCases(base);
  ASSERT_TRUE(bw.ok()) << bw.status().message();
  EXPECT_NE(bw->cases[0].failure.find("full training takes only \"fp8\" (FP8 parameters)"), std::string::npos)
      << bw->cases[0].failure;
  std::string f8 = bad_kernel;
  swap_text(f8, "attention = \"flash3\"", "weights = \"fp8\"");
  auto bw8 = RunCases(f8);
  ASSERT_TRUE(bw8.ok()) << bw8.status().message();
  EXPECT_NE(bw8->cases[0].failure.find("needs --dtype fp8"), std::string::npos) << bw8->cases[0].failure;

  // An FP8 recipe on a 16-bit run, and an unknown recipe, are reported on their case.
  std::string recipe = bad_kernel;
  auto swap = [](std::string& text, const std::string& from, const std::string& to) {
    text.replace(text.find(from), from.size(), to);
  };
  swap(recipe, "attention = \"flash3\"", "fp8_recipe = \"current\"");
  auto r16 = RunCases(recipe);
  ASSERT_TRUE(r16.ok()) << r16.status().message();
  EXPECT_NE(r16->cases[0].failure.find("fp8_recipe is set but dtype is not \"fp8\""), std::string::npos)
      << r16->cases[0].failure;
  swap(recipe, "fp8_recipe = \"current\"", "dtype = \"fp8\"\nfp8_recipe = \"mxfp9\"");
  auto r9 = RunCases(recipe);
  ASSERT_TRUE(r9.ok()) << r9.status().message();
  EXPECT_NE(r9->cases[0].failure.find("unknown FP8 recipe 'mxfp9' (did you mean 'mxfp8'"), std::string::npos)
      << r9->cases[0].failure;

  // An integer beyond int's range is named, not wrapped (4294967296 would wrap to 0: full recompute of every layer).
  std::string huge = bad_kernel;
  swap(huge, "attention = \"flash3\"", "recompute = \"full\"\nrecompute_layers = 4294967296");
  auto rh = RunCases(huge);
  ASSERT_TRUE(rh.ok()) << rh.status().message();
  EXPECT_NE(rh->cases[0].failure.find("'recompute_layers' = 4294967296 is out of range"), std::string::npos)
      << rh->cases[0].failure;
}

// A user's serving row can carry expert parallelism (ep, etp, moe_imbalance) as `perf infer` does: the case's
// prediction is EstimateInference's for that layout, and a layout the model rejects is reported on the case.
TEST(PerfValidation, InferCasesTakeExpertParallelism) {
  const std::string row = R"([[infer]]
name = "ep"
model = "mixtral-8x7b"
gpu = "h100-sxm"
tp = 8
ep = 8
moe_imbalance = 2.0
batch = 64
input_len = 128
output_len = 1
metric = "ttft_s"
published = 0.1
)";
  const ValidationCase got = EvaluatedCase(row);
  auto gpu = Hw().FindGpu("h100-sxm");
  auto eff = LoadEfficiency("h100-sxm");
  auto model = Models().Resolve("mixtral-8x7b");
  auto cl = MakeCluster(Hw(), **gpu, 8, "ib-ndr");
  ASSERT_TRUE(gpu.ok() && eff.ok() && model.ok() && cl.ok());
  InferConfig c;
  c.fit.par.tp = 8;
  c.fit.par.ep = 8;
  c.moe_imbalance = 2.0;
  c.fit.batch = 64;
  c.input_len = 128;
  c.output_len = 1;
  auto direct = EstimateInference(*model, *cl, c, *eff);
  ASSERT_TRUE(direct.ok()) << direct.status().message();
  EXPECT_DOUBLE_EQ(got.predicted, direct->ttft_s);
  c.moe_imbalance = 1.0;
  auto uniform = EstimateInference(*model, *cl, c, *eff);
  ASSERT_TRUE(uniform.ok());
  EXPECT_GT(got.predicted, uniform->ttft_s);  // the key reached the model

  const std::string outside = FailureWith(row, "ep = 8", "ep = 16");
  EXPECT_NE(outside.find("valid EP for TP 8 and 8 experts"), std::string::npos) << outside;
}

// A row's cp_comm is perf train's --cp-comm: Ulysses all-to-alls are exposed where the ring hides under attention, so
// the same row reads slower; it needs CP, as the CLI does, and a typo gets "did you mean".
TEST(PerfValidation, TrainCasesTakeTheContextParallelExchange) {
  const std::string row = EightGpuRow("cp row", "llama-3.1-8b", 16, "cp = 4\n", 10000);
  const double ring = EvaluatedCase(row).predicted;
  std::string a2a = row;
  a2a.replace(a2a.find("cp = 4"), 6, "cp = 4\ncp_comm = \"a2a\"");
  EXPECT_LT(EvaluatedCase(a2a).predicted, ring);
  const std::string typo = FailureWith(a2a, "\"a2a\"", "\"ulyses\"");
  EXPECT_NE(typo.find("cp_comm: unknown context-parallel exchange 'ulyses' (did you mean 'ulysses'?)"),
            std::string::npos)
      << typo;
  // fp8_attention is perf train's --fp8-attention: on a GPU with a measured FP8 speed-up the row reads faster; outside
  // FP8 training it is refused as the CLI refuses it.
  std::string fp8 = EightGpuRow("fp8 attention row", "llama-3.1-8b", 16, "dtype = \"fp8\"\n", 10000);
  fp8.replace(fp8.find("h100-sxm"), 8, "gb300");
  std::string fp8_attn = fp8;
  fp8_attn.replace(fp8_attn.find("dtype"), 0, "fp8_attention = true\n");
  EXPECT_GT(EvaluatedCase(fp8_attn).predicted, EvaluatedCase(fp8).predicted);
  const std::string bf16_attn = FailureWith(fp8_attn, "dtype = \"fp8\"", "dtype = \"bf16\"");
  EXPECT_NE(bf16_attn.find("it needs --dtype fp8 or fp4, not bf16"), std::string::npos) << bf16_attn;
  const std::string no_cp = FailureWith(a2a, "cp = 4\n", "");
  EXPECT_NE(no_cp.find("cp_comm sets how context-parallel ranks exchange attention's inputs: it needs cp > 1"),
            std::string::npos)
      << no_cp;
}

// A training row's moe_dispatcher, cuda_graphs and cross_entropy reach the model (the flex dispatcher's lighter
// exchange, the full-iteration graph's smaller MoE-layer overhead, the loss's bytes per logit), and a misspelt value
// names its key.
TEST(PerfValidation, TrainCasesTakeTheDispatcherCudaGraphsAndLoss) {
  const std::string row = R"([[train]]
group = "training"
role = "holdout"
name = "flex row"
source = "test"
model = "qwen3-30b-a3b"
gpu = "h100-sxm"
gpus = 16
tp = 1
pp = 1
ep = 16
moe_imbalance = 1.0
micro_batch = 1
global_batch = 256
seq = 4096
metric = "tokens_per_s_per_gpu"
published = 10000
)";
  const double plain = EvaluatedCase(row).predicted;
  std::string flex = row;
  flex.replace(flex.find("moe_imbalance"), 0, "moe_dispatcher = \"flex\"\n");
  EXPECT_GT(EvaluatedCase(flex).predicted, plain);
  std::string graphed = row;
  graphed.replace(graphed.find("moe_imbalance"), 0, "cuda_graphs = \"full\"\n");
  EXPECT_GT(EvaluatedCase(graphed).predicted, plain);
  const std::string typo = FailureWith(row, "moe_imbalance", "moe_dispatcher = \"flexx\"\nmoe_imbalance");
  EXPECT_NE(typo.find("moe_dispatcher: unknown MoE token dispatcher 'flexx' (did you mean 'flex'?)"), std::string::npos)
      << typo;
  // A dispatcher where no token leaves the GPU (EP 1) or on a dense model is refused, as perf train refuses it.
  std::string ep1 = flex;
  ep1.replace(ep1.find("ep = 16"), 7, "ep = 1");
  const std::string no_ep = FailureWith(ep1, "moe_imbalance = 1.0\n", "");
  EXPECT_NE(no_ep.find("moe_dispatcher sets how tokens reach experts on other GPUs: it needs an MoE model and ep > 1"),
            std::string::npos)
      << no_ep;
  // So is an imbalance factor where every GPU holds every expert (EP 1): there is no busiest rank to wait for.
  std::string ep1_plain = row;
  ep1_plain.replace(ep1_plain.find("ep = 16"), 7, "ep = 1");
  const std::string no_ep_imbalance = FailureWith(ep1_plain, "moe_imbalance = 1.0", "moe_imbalance = 1.2");
  EXPECT_NE(no_ep_imbalance.find("moe_imbalance 1.2 needs expert parallelism (ep > 1)"), std::string::npos)
      << no_ep_imbalance;
  const std::string dense = FailureWith(flex, "qwen3-30b-a3b", "llama-3.1-8b");
  EXPECT_NE(dense.find("ep > 1 (llama-3.1-8b is dense)"), std::string::npos) << dense;
  const std::string graphs = FailureWith(row, "moe_imbalance", "cuda_graphs = \"ful\"\nmoe_imbalance");
  EXPECT_NE(graphs.find("cuda_graphs: unknown CUDA graph setting 'ful'"), std::string::npos) << graphs;
  // cross_entropy: Megatron-LM's unfused FP32 loss is slower than the fused default, a single-pass one faster.
  std::string unfused = row, online = row;
  unfused.replace(unfused.find("moe_imbalance"), 0, "cross_entropy = \"unfused\"\n");
  online.replace(online.find("moe_imbalance"), 0, "cross_entropy = \"te\"\n");
  EXPECT_LT(EvaluatedCase(unfused).predicted, plain);
  EXPECT_GT(EvaluatedCase(online).predicted, plain);
  const std::string ce = FailureWith(row, "moe_imbalance", "cross_entropy = \"fusd\"\nmoe_imbalance");
  EXPECT_NE(ce.find("cross_entropy: unknown cross-entropy implementation 'fusd' (did you mean 'fused'?)"),
            std::string::npos)
      << ce;
}

// The optimizer's precision keys: 16-bit states move fewer bytes in the optimizer step (a faster step), and a typo
// names the valid values.
TEST(PerfValidation, TrainCasesTakeTheOptimizerPrecision) {
  const std::string row = EightGpuRow("optimizer row", "llama-3.1-8b", 8, "", 10000);
  const double plain = EvaluatedCase(row).predicted;
  std::string apex = row;
  apex.replace(apex.find("micro_batch"), 0, "master_dtype = \"bf16\"\nmoments_dtype = \"bf16\"\n");
  EXPECT_GT(EvaluatedCase(apex).predicted, plain);
  const std::string typo = FailureWith(row, "micro_batch", "master_dtype = \"remainders\"\nmicro_batch");
  EXPECT_NE(typo.find("master_dtype: unknown master-weight copy 'remainders'"), std::string::npos) << typo;
  EXPECT_NE(typo.find("did you mean 'remainder'"), std::string::npos) << typo;
  const std::string bad = FailureWith(row, "micro_batch", "moments_dtype = \"int4\"\nmicro_batch");
  EXPECT_NE(bad.find("moments_dtype: unknown Adam moments dtype 'int4' (valid: fp32, bf16, fp16, fp8)"),
            std::string::npos)
      << bad;
}

// dp_bucket_mb: a fixed data-parallel bucket (Apex DistributedFusedAdam's bucket_cap_mb). 1 MB buckets make an 8B
// model's 16 GB of gradients thousands of collectives, each paying its latency: slower than Megatron-Core's rule.
TEST(PerfValidation, TrainCasesTakeTheDataParallelBucket) {
  const std::string row = EightGpuRow("bucket row", "llama-3.1-8b", 8, "", 10000);
  const double plain = EvaluatedCase(row).predicted;
  std::string tiny = row;
  tiny.replace(tiny.find("micro_batch"), 0, "dp_bucket_mb = 1\n");
  EXPECT_LT(EvaluatedCase(tiny).predicted, plain);
  const std::string negative = FailureWith(row, "micro_batch", "dp_bucket_mb = -5\nmicro_batch");
  EXPECT_NE(negative.find("dp_bucket_mb -5 is outside (0, 1e6] MB"), std::string::npos) << negative;
  // Megatron-Core's bucket_size, in parameters of 2-byte gradients: 524288 parameters are the same 1 MB bucket.
  std::string params = row;
  params.replace(params.find("micro_batch"), 0, "dp_bucket_params = 524288\n");
  EXPECT_DOUBLE_EQ(EvaluatedCase(params).predicted, EvaluatedCase(tiny).predicted);
  const std::string both = FailureWith(row, "micro_batch", "dp_bucket_mb = 1\ndp_bucket_params = 524288\nmicro_batch");
  EXPECT_NE(both.find("dp_bucket_mb and dp_bucket_params both set"), std::string::npos) << both;
}

// Fine-tuning keys: mode "lora" with its rank and comma-separated targets, packed_doc_tokens; a LoRA row is faster
// than the same full training row, and keys that do not belong or are empty name themselves.
TEST(PerfValidation, TrainCasesTakeLoraAndPacking) {
  const std::string row = EightGpuRow("fine-tuning row", "llama-2-7b", 32, "packed_doc_tokens = 256\n", 20000);
  const double full = EvaluatedCase(row).predicted;
  std::string lora = row;
  lora.replace(lora.find("metric"), 0, "mode = \"lora\"\nlora_rank = 32\nlora_targets = \"q, k,v\"\n");
  EXPECT_GT(EvaluatedCase(lora).predicted, full);
  const std::string no_mode = FailureWith(row, "metric", "lora_rank = 8\nmetric");
  EXPECT_NE(no_mode.find("lora_rank, lora_targets and lora_dropout need mode = \"lora\""), std::string::npos) << no_mode;
  const std::string empty =
      FailureWith(row, "metric", "mode = \"lora\"\nlora_targets = \" , \"\nmetric");
  EXPECT_NE(empty.find("lora_targets is empty"), std::string::npos) << empty;
  const std::string bad_mode = FailureWith(row, "metric", "mode = \"qlora\"\nmetric");
  EXPECT_NE(bad_mode.find("mode \"qlora\" is not one of train, lora"), std::string::npos) << bad_mode;
  const std::string megatron = FailureWith(row, "tokens_per_s_per_gpu", "mfu_megatron");
  EXPECT_NE(megatron.find("LoRA and packed rows take"), std::string::npos) << megatron;
}

// A file of the source tree (empty when it cannot be read).
std::string ReadSourceFile(const std::string& rel) {
  const std::string path = std::string(SUANLI_SOURCE_DIR) + "/" + rel;
  std::string text;
  if (std::FILE* f = std::fopen(path.c_str(), "rb")) {
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
    std::fclose(f);
  }
  return text;
}

// `suanli validate --efficiency FILE`: the cases run with the given table instead of the bundled one. The bundled
// table given as a file reproduces the bundled figures exactly; an edited constant moves only the rows it belongs
// to (the MoE-layer multiple: MoE rows, not dense ones); a bad value is refused before any case runs, naming it.
TEST(PerfValidation, AnEfficiencyTableReplacesTheBundledOne) {
  const std::string text = ReadSourceFile("data/efficiency.toml");
  ASSERT_FALSE(text.empty());
  ASSERT_TRUE(Bundled().ok());
  const EfficiencyTable same{text, "efficiency.toml"};
  auto again = RunBundledPerfValidation(Hw(), Models(), &same);
  ASSERT_TRUE(again.ok()) << again.status().message();
  ASSERT_EQ(again->cases.size(), Bundled()->cases.size());
  for (size_t i = 0; i < again->cases.size(); ++i)
    EXPECT_EQ(again->cases[i].predicted, Bundled()->cases[i].predicted) << again->cases[i].name;

  const std::string key = "layer_time_eager = { value = 1.8,";
  ASSERT_NE(text.find(key), std::string::npos);
  std::string edited = text;
  edited.replace(edited.find(key), key.size(), "layer_time_eager = { value = 1.2,");
  const EfficiencyTable lower{edited, "edited.toml"};
  auto moved = RunBundledPerfValidation(Hw(), Models(), &lower);
  ASSERT_TRUE(moved.ok()) << moved.status().message();
  int moe_faster = 0;
  for (size_t i = 0; i < moved->cases.size(); ++i) {
    const auto& before = Bundled()->cases[i];
    const auto& after = moved->cases[i];
    if (before.group != "training") continue;
    if (!before.moe) {
      EXPECT_EQ(after.predicted, before.predicted) << before.name;
    }
    if (before.moe && after.fast_error() > before.fast_error()) ++moe_faster;
  }
  EXPECT_GE(moe_faster, 7);  // at least the seven calibration runs the eager multiple was fitted on

  std::string bad = text;
  bad.replace(bad.find(key), key.size(), "layer_time_eager = { value = 0.5,");
  const EfficiencyTable wrong{bad, "bad.toml"};
  auto refused = RunBundledPerfValidation(Hw(), Models(), &wrong);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("bad.toml: key 'moe_training.layer_time_eager': 0.5 is outside 1..5"),
            std::string::npos)
      << refused.status().message();
}

// The leave-one-out figure `perf train` quotes for the MoE-layer multiples (evidence::kMoeLayerMultipleLeaveOneOut)
// is recomputed here the way scripts/fit_scan.py computes it: the calibration runs alone, each multiple scanned in
// 0.05 steps (eager 1.0-3.0 on the runs without a full-iteration graph, full-graph 1.0-2.5 on those with one), and
// every run's error at the value that is best (lowest mean absolute error, then lowest value) on the others.
TEST(PerfValidation, MoeLayerMultipleLeaveOneOutMatchesTheQuotedFigure) {
  const std::string cases = ReadSourceFile("tests/validation/perf_cases.toml");
  const std::string eff = ReadSourceFile("data/efficiency.toml");
  ASSERT_FALSE(cases.empty());
  ASSERT_FALSE(eff.empty());
  std::string eager_rows, graph_rows;
  for (size_t at = cases.find("[[train]]"); at != std::string::npos;) {
    const size_t next = cases.find("\n[[", at + 1);
    const std::string block = cases.substr(at, next == std::string::npos ? std::string::npos : next + 1 - at);
    if (block.find("name = \"Megatron-LM recipe") != std::string::npos &&
        block.find("role = \"calibration\"") != std::string::npos)
      (block.find("cuda_graphs = \"full\"") != std::string::npos ? graph_rows : eager_rows) += block;
    at = next == std::string::npos ? next : next + 1;
  }
  auto no_files = [](const std::string& rel) -> Result<std::string> { return NotFound(rel); };
  // Absolute error per run, per grid value.
  auto scan = [&](const std::string& rows, const std::string& key, double lo, double hi) {
    std::vector<std::vector<double>> err;  // [value][run]
    for (int i = 0; lo + 0.05 * i <= hi + 1e-9; ++i) {
      const std::string at = key + " = { value = ";
      std::string table = eff;
      const size_t p = table.find(at);
      EXPECT_NE(p, std::string::npos) << key;
      if (p == std::string::npos) return err;
      const size_t end = table.find(',', p);
      table.replace(p + at.size(), end - p - at.size(), fmt::format("{:.2f}", lo + 0.05 * i));
      const EfficiencyTable t{table, "scan.toml"};
      auto rep = RunPerfValidation(rows, "calibration.toml", Hw(), Models(), no_files, &t);
      EXPECT_TRUE(rep.ok()) << rep.status().message();
      if (!rep.ok()) return err;
      std::vector<double> e;
      for (const auto& c : rep->cases) e.push_back(std::fabs(c.error));
      err.push_back(e);
    }
    return err;
  };
  std::vector<double> loo;
  for (const auto& err : {scan(eager_rows, "layer_time_eager", 1.0, 3.0), scan(graph_rows, "layer_time_full_graph", 1.0, 2.5)}) {
    ASSERT_FALSE(err.empty());
    const size_t runs = err[0].size();
    ASSERT_GE(runs, 2u);
    for (size_t left = 0; left < runs; ++left) {
      size_t best = 0;
      double best_mean = 1e9;
      for (size_t v = 0; v < err.size(); ++v) {
        double sum = 0;
        for (size_t r = 0; r < runs; ++r)
          if (r != left) sum += err[v][r];
        if (sum / (runs - 1) < best_mean - 1e-12) best_mean = sum / (runs - 1), best = v;
      }
      loo.push_back(err[best][left]);
    }
  }
  const auto& want = evidence::kMoeLayerMultipleLeaveOneOut;
  ASSERT_EQ(static_cast<int>(loo.size()), want.cases);
  double sum = 0, worst = 0;
  for (double e : loo) sum += e, worst = std::max(worst, e);
  std::printf("evidence MoE multiple leave-one-out: %zu runs, mean %.4f, worst %.4f\n", loo.size(), sum / loo.size(), worst);
  EXPECT_NEAR(sum / loo.size(), want.mean_abs, 0.005);
  EXPECT_NEAR(worst, want.worst_abs, 0.005);
}

// interleave_auto: a run that did not publish its interleaving takes the fastest depth that fits, said in the detail;
// it needs pp > 1 and excludes interleave. model_tflops_megatron is Korthikanti's model FLOPs per second per GPU, the
// MFU by the same formula times the 16-bit peak.
TEST(PerfValidation, InterleaveAutoPicksTheFastestDepthThatFits) {
  const std::string row = R"([[train]]
group = "training"
name = "auto row"
source = "test"
model = "llama-3.1-70b"
gpu = "h100-sxm"
gpus = 64
tp = 8
pp = 4
interleave_auto = true
micro_batch = 1
global_batch = 64
seq = 4096
sequence_parallel = true
metric = "model_tflops_megatron"
published = 400
)";
  const ValidationCase autoc = EvaluatedCase(row);
  EXPECT_NE(autoc.detail.find(", interleave "), std::string::npos) << autoc.detail;
  // No fixed depth that divides the 20 layers per stage beats it.
  for (int v : {1, 2, 4, 5, 10, 20}) {
    std::string fixed = row;
    fixed.replace(fixed.find("interleave_auto = true"), 22, fmt::format("interleave = {}", v));
    EXPECT_LE(EvaluatedCase(fixed).predicted, autoc.predicted * (1 + 1e-12)) << v;
  }
  std::string mfu = row;
  mfu.replace(mfu.find("model_tflops_megatron"), 21, "mfu_megatron");
  EXPECT_NEAR(autoc.predicted, EvaluatedCase(mfu).predicted * 989.4, 1e-6 * autoc.predicted);
  EXPECT_NE(FailureWith(row, "pp = 4", "pp = 1").find("interleave_auto needs pp > 1"), std::string::npos);
  EXPECT_NE(FailureWith(row, "interleave_auto = true", "interleave_auto = true\ninterleave = 2")
                .find("interleave_auto and interleave are both set"),
            std::string::npos);
}

// A user's serving row can carry their engine's host costs (request_overhead_ms, step_overhead_ms): the TTFT grows
// by exactly both, and an out-of-range value is reported on the case, naming the flag it mirrors.
TEST(PerfValidation, InferCasesTakeHostOverheads) {
  const std::string plain = kUserTtftRow;
  std::string given = plain;
  given.replace(given.find("batch = 1"), 9, "batch = 1\nrequest_overhead_ms = 1.0\nstep_overhead_ms = 0.25");
  const double base = EvaluatedCase(plain).predicted;
  EXPECT_NEAR(EvaluatedCase(given).predicted - base, 1.25e-3, 1e-12);
  const std::string negative = FailureWith(plain, "batch = 1", "batch = 1\nstep_overhead_ms = -2.0");
  EXPECT_NE(negative.find("--step-overhead-ms -2 is outside"), std::string::npos) << negative;
}

// GEMM micro-benchmark rows go through EstimateGemm: the predicted TFLOP/s is the shape's FLOPs over its modelled
// time, a misspelt shape key is an error, and a precision the GPU lacks is reported on the case.
TEST(PerfValidation, GemmCasesUseTheShapeModel) {
  const std::string good = R"([[gemm]]
name = "g"
gpu = "h100-sxm"
dtype = "fp8"
m = 8192
n = 8192
k = 8192
metric = "tflops"
published = 1290.1
)";
  const ValidationCase ok = EvaluatedCase(good);
  EXPECT_EQ(ok.group, "gemm");
  auto gpu = Hw().FindGpu("h100-sxm");
  auto eff = LoadEfficiency("h100-sxm");
  ASSERT_TRUE(gpu.ok() && eff.ok());
  const GemmTime g = EstimateGemm(8192, 8192, 8192, 1, 1, *(*gpu)->PeakFlops(Precision::kFp8), eff->gemm_fp8, **gpu, *eff);
  EXPECT_NEAR(ok.predicted, g.flops / g.time_s / 1e12, 1e-6);
  // Below the FP8 peak x efficiency (1979 x 0.677 = 1340 TFLOP/s): wave quantisation and the launch floor cost time.
  EXPECT_LT(ok.predicted, 1979 * eff->gemm_fp8);
  EXPECT_GT(ok.predicted, 0.9 * 1979 * eff->gemm_fp8);

  std::string typo = good;
  typo.replace(typo.find("k = 8192"), 8, "kk = 8192");
  auto t = RunCases(typo);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("my.toml: [[gemm]] 'g': unknown key 'kk'"), std::string::npos)
      << t.status().message();

  std::string a100_fp8 = good;
  a100_fp8.replace(a100_fp8.find("h100-sxm"), 8, "a100-sxm-80gb");
  auto nf = RunCases(a100_fp8);
  ASSERT_TRUE(nf.ok()) << nf.status().message();
  EXPECT_NE(nf->cases[0].failure.find("has no fp8 peak"), std::string::npos) << nf->cases[0].failure;

  std::string no_gpu = good;
  no_gpu.erase(no_gpu.find("gpu = \"h100-sxm\"\n"), std::string("gpu = \"h100-sxm\"\n").size());
  auto ng = RunCases(no_gpu);
  ASSERT_TRUE(ng.ok()) << ng.status().message();
  EXPECT_NE(ng->cases[0].failure.find("case has no 'gpu'"), std::string::npos) << ng->cases[0].failure;
}

// An attention-kernel case is timed as the training model times its fused attention (perf_detail::FusedAttentionForward):
// the FLOPs over the 16-bit peak at the GPU's `attention` fraction plus the launch floor, the backward 2.5x the
// forward's FLOPs and time (so the same rate); a causal pass attends to half the keys. Checked against that formula
// written out here from the catalog's peak and the efficiency table, and the inputs a case cannot have are errors.
TEST(PerfValidation, AttentionCasesTimeTheTrainingModelsKernel) {
  const std::string good = R"([[attention]]
name = "a"
gpu = "h200-sxm"
dtype = "bf16"
batch = 1
heads = 64
kv_heads = 8
head_dim = 128
seq = 8192
causal = true
pass = "fwd"
metric = "tflops"
published = 644
)";
  const ValidationCase fwd = EvaluatedCase(good);
  EXPECT_EQ(fwd.group, "attention");
  auto gpu = Hw().FindGpu("h200-sxm");
  auto eff = LoadEfficiency("h200-sxm");
  ASSERT_TRUE(gpu.ok() && eff.ok());
  const double peak = *(*gpu)->PeakFlops(Precision::kBf16);
  const double flops = 4.0 * 8192 * (8192 / 2.0) * 128 * 64;
  const double time = flops / (peak * eff->attention) + eff->kernel_launch_s;
  EXPECT_NEAR(fwd.predicted, flops / time / 1e12, 1e-6);
  EXPECT_LT(fwd.predicted, peak * eff->attention / 1e12);  // the launch floor costs a little

  std::string bwd = good;
  bwd.replace(bwd.find("pass = \"fwd\""), 12, "pass = \"bwd\"");
  EXPECT_NEAR(EvaluatedCase(bwd).predicted, fwd.predicted, 1e-9);
  std::string full = good;
  full.replace(full.find("causal = true"), 13, "causal = false");
  const ValidationCase nc = EvaluatedCase(full);  // twice the FLOPs, so the launch floor weighs half as much
  EXPECT_NEAR(nc.predicted, 2 * flops / (2 * flops / (peak * eff->attention) + eff->kernel_launch_s) / 1e12, 1e-6);
  EXPECT_GT(nc.predicted, fwd.predicted);

  auto failure = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    text.replace(text.find(from), from.size(), to);
    auto r = RunCases(text);
    if (!r.ok()) return std::string(r.status().message());
    return r->cases[0].failure;
  };
  EXPECT_NE(failure("pass = \"fwd\"", "pass = \"both\"").find("'pass' is 'both'; valid: fwd, bwd"), std::string::npos);
  EXPECT_NE(failure("kv_heads = 8", "kv_heads = 7").find("'heads' (64) must be a multiple of 'kv_heads' (7)"),
            std::string::npos);
  EXPECT_NE(failure("dtype = \"bf16\"", "dtype = \"fp8\"").find("must be bf16 or fp16"), std::string::npos);
  EXPECT_NE(failure("seq = 8192", "seq = 0").find("'seq' must be an integer from 1"), std::string::npos);
  EXPECT_NE(failure("head_dim = 128", "headdim = 128").find("unknown key 'headdim'"), std::string::npos);
}

// A collective case is timed as the training and serving estimates time their collectives: NCCL's all-reduce,
// all-gather and reduce-scatter through DescribeCollective (the in-switch all-reduce where the case's nvls leaves it
// on), all-to-all through GroupAllToAllTime, over one node's ranks; the inputs a case cannot have are errors.
TEST(PerfValidation, CollectiveCasesTimeTheModelsCollectives) {
  const std::string good = R"([[collective]]
name = "c"
gpu = "h100-sxm"
op = "all_gather"
gpus = 4
bytes = 67108864
metric = "time_s"
published = 0.0002
)";
  const ValidationCase ag = EvaluatedCase(good);
  EXPECT_EQ(ag.group, "collective");
  auto gpu = Hw().FindGpu("h100-sxm");
  auto eff = LoadEfficiency("h100-sxm");
  ASSERT_TRUE(gpu.ok() && eff.ok());
  auto cl = MakeCluster(Hw(), **gpu, 8, "ib-ndr");
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_NEAR(ag.predicted, GroupCollectiveTime(*cl, *eff, NcclOp::kAllGather, 67108864.0, 4, 1), 1e-15);
  // On H100 the time is nccl-tests' own (data/nccl_curves.toml: 195.13 us at 64 MiB over 4 GPUs), more than 3/4 of
  // the buffer at the link's bus bandwidth.
  EXPECT_NEAR(ag.predicted, 195.13e-6, 1e-9);
  const double ring = 0.75 * 67108864.0 / ((*gpu)->link_bandwidth_per_direction_bytes_per_s->value * eff->link);
  EXPECT_GT(ag.predicted, ring);
  EXPECT_TRUE(ag.within_bound());  // 200 us is more than 3/4 x 64 MiB at the datasheet 450 GB/s (112 us)
  EXPECT_NEAR(ag.fast_error(), -ag.error, 1e-15);  // a time: positive fast_error means the model was too fast

  auto with = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  // All-reduce over 8 GPUs: with NVLS off a ring, with it (the default) the faster in-switch reduction.
  const std::string ar = with("op = \"all_gather\"\ngpus = 4", "op = \"all_reduce\"\ngpus = 8");
  const ValidationCase nvls = EvaluatedCase(ar);
  const ValidationCase ring_ar =
      EvaluatedCase(with("op = \"all_gather\"\ngpus = 4", "op = \"all_reduce\"\ngpus = 8\nnvls = false"));
  EXPECT_LT(nvls.predicted, ring_ar.predicted);
  EXPECT_NEAR(nvls.predicted, GroupCollectiveTime(*cl, *eff, NcclOp::kAllReduce, 67108864.0, 8, 1), 1e-15);
  cl->nvls = false;
  EXPECT_NEAR(ring_ar.predicted, GroupCollectiveTime(*cl, *eff, NcclOp::kAllReduce, 67108864.0, 8, 1), 1e-15);
  const ValidationCase a2a = EvaluatedCase(with("op = \"all_gather\"", "op = \"all_to_all\""));
  EXPECT_NEAR(a2a.predicted, GroupAllToAllTime(*cl, *eff, 67108864.0, 4, 1), 1e-15);
  // A published time below the least the link allows is flagged (3/4 x 64 MiB at 450 GB/s = 112 us).
  EXPECT_FALSE(EvaluatedCase(with("published = 0.0002", "published = 0.0001")).within_bound());

  const auto failure = [&](const std::string& from, const std::string& to) { return FailureWith(good, from, to); };
  EXPECT_NE(failure("op = \"all_gather\"", "op = \"allgather\"").find("did you mean 'all_gather'"),
            std::string::npos);
  EXPECT_NE(failure("gpus = 4", "gpus = 16").find("'gpus' = 16 must be from 2 to 'gpus_per_node' (8)"),
            std::string::npos);
  EXPECT_NE(failure("gpus = 4", "gpus = 1").find("must be from 2"), std::string::npos);
  EXPECT_NE(failure("bytes = 67108864", "bytes = 0").find("'bytes' must be an integer from 1"), std::string::npos);
  EXPECT_NE(failure("metric = \"time_s\"", "metric = \"busbw\"").find("(valid: time_s)"), std::string::npos);
  const auto typo = RunCases(with("bytes = 67108864", "size = 67108864"));  // a key error stops the whole file
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("unknown key 'size'"), std::string::npos);
}

// An MoE case ([[moe]]) prices the stated load on one rank as the inference estimate prices routed experts
// (perf_detail::RoutedExperts): the two grouped GEMMs, the gated activation's 6 B per element, the row expansion and
// finalising gather's bytes at the achievable bandwidth, and the fused operator's fixed time from data/efficiency.toml.
TEST(PerfValidation, MoeCasesPriceTheRoutedExperts) {
  const std::string good = R"([[moe]]
name = "m"
gpu = "h100-sxm"
dtype = "fp8"
tokens = 128
hidden = 4096
expert_ffn = 14336
pairs = 256
experts_touched = 8
metric = "time_s"
published = 0.0005
)";
  const ValidationCase c = EvaluatedCase(good);
  EXPECT_EQ(c.group, "moe");
  const GpuSpec& g = **Hw().FindGpu("h100-sxm");
  const Efficiency eff = *LoadEfficiency("h100-sxm");
  EXPECT_NEAR(eff.moe_serving_fixed_s, 15e-6, 1e-12);  // data/efficiency.toml [moe_serving]
  const double peak = *g.PeakFlops(Precision::kFp8), rate = eff.gemm_fp8;  // H100 has its own FP8 rate
  // 8 experts of 32 rows: up/gate 32 x 28672 x 4096, down 32 x 4096 x 14336, FP8 operands.
  const GemmTime up = EstimateGemm(32, 2 * 14336, 4096, 8, 1, peak, rate, g, eff, 1);
  const GemmTime down = EstimateGemm(32, 4096, 14336, 8, 1, peak, rate, g, eff, 1);
  const double bw = g.memory_bandwidth_bytes_per_s.value * eff.memory;
  // Expansion: each pair's 16-bit row read, written at 1 B; gather: each pair's 16-bit output read, 128 rows written.
  const double permute_bytes = 256.0 * 4096 * (2 + 1 + 2) + 128.0 * 4096 * 2;
  const double want = up.time_s + down.time_s + 6.0 * 256 * 14336 / bw + permute_bytes / bw + 15e-6;
  EXPECT_NEAR(c.predicted, want, 1e-12);
  EXPECT_NE(c.detail.find("routing and gathers"), std::string::npos);
  // The bound: the 8 touched experts' FP8 weights (1.41 GB) at the datasheet 3.35 TB/s.
  EXPECT_NEAR(c.bound, 8.0 * 3 * 4096 * 14336 / g.memory_bandwidth_bytes_per_s.value, 1e-12);
  EXPECT_TRUE(c.within_bound());

  auto with = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  // Expert TP halves each expert's width; a non-gated MLP has one up GEMM and no activation pass.
  EXPECT_LT(EvaluatedCase(with("experts_touched = 8", "experts_touched = 8\netp = 2")).predicted, c.predicted);
  EXPECT_LT(EvaluatedCase(with("experts_touched = 8", "experts_touched = 8\ngated = false")).predicted, c.predicted);
  // Weights that fit in L2 (one FP8 expert of Qwen3 30B-A3B's shape, 4.7 MB of H100's 50 MiB) stay there in a
  // benchmark that repeats the operator: only the FLOPs bound the time.
  const ValidationCase small =
      EvaluatedCase(with("tokens = 128\nhidden = 4096\nexpert_ffn = 14336\npairs = 256\nexperts_touched = 8",
                         "tokens = 1\nhidden = 2048\nexpert_ffn = 768\npairs = 1\nexperts_touched = 1"));
  EXPECT_NEAR(small.bound, 2.0 * 3 * 2048 * 768 / peak, 1e-15);

  const auto failure = [&](const std::string& from, const std::string& to) { return FailureWith(good, from, to); };
  EXPECT_NE(failure("pairs = 256", "pairs = 4").find("'pairs' (4) must lie between 'experts_touched' (8)"),
            std::string::npos);
  EXPECT_NE(failure("pairs = 256", "pairs = 2000").find("'tokens' x 'experts_touched' (1024)"), std::string::npos);
  EXPECT_NE(failure("experts_touched = 8", "experts_touched = 8\netp = 3").find("positive divisor"),
            std::string::npos);
  EXPECT_NE(failure("dtype = \"fp8\"", "dtype = \"int8\"").find("must be fp16, bf16, fp8 or fp4"), std::string::npos);
  EXPECT_NE(failure("metric = \"time_s\"", "metric = \"tflops\"").find("(valid: time_s)"), std::string::npos);
  const auto typo = RunCases(with("pairs = 256", "pair = 256"));
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("did you mean 'pairs'"), std::string::npos);
}

// A serving attention case ([[serving_attention]]) prices one layer's attention as the inference estimate does
// (perf_detail::ServingAttention): decode reads each sequence's cache once (one KV head of 128 per GPU here, BF16) and
// Q and the output, at the achievable bandwidth, plus one kernel's fixed time; prefill is causal, s / 2 keys per
// query at 4 x head_dim FLOPs per key and query head, at the 16-bit peak x attention, plus the context kernel's fixed
// time (data/efficiency.toml [serving_attention]). The case adds one more kernel floor: the engines' operators write
// the cache in a kernel the estimate counts among its element-wise launches.
TEST(PerfValidation, ServingAttentionCasesPriceOneLayer) {
  const std::string good = R"([[serving_attention]]
name = "a"
gpu = "h100-sxm"
phase = "decode"
batch = 16
context = 8192
heads = 8
kv_heads = 1
head_dim = 128
metric = "time_s"
published = 0.00004
)";
  const ValidationCase c = EvaluatedCase(good);
  EXPECT_EQ(c.group, "serving_attention");
  const GpuSpec& g = **Hw().FindGpu("h100-sxm");
  const Efficiency eff = *LoadEfficiency("h100-sxm");
  const double bw = g.memory_bandwidth_bytes_per_s.value;
  const double cache = 16.0 * 8192 * 1 * 128 * 2 * 2;  // K and V, 2 B each
  const double qo = 16.0 * 8 * 128 * 4;                 // Q read and the output written, 16-bit
  const double floor = eff.kernel_launch_s;
  EXPECT_NEAR(c.predicted, (cache + qo) / (bw * eff.memory) + 2 * floor, 1e-12);
  EXPECT_NE(c.detail.find("cache write 5.0 us"), std::string::npos) << c.detail;
  EXPECT_NE(c.detail.find("memory-bound"), std::string::npos);
  // 67 MB is beyond H100's 50 MiB L2: the cache read once at the datasheet bandwidth bounds it.
  EXPECT_NEAR(c.bound, cache / bw, 1e-15);

  auto with = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  // An FP8 cache halves the bytes; a cache within L2 has only the FLOP bound (the benchmark replays one layer).
  const ValidationCase fp8 = EvaluatedCase(with("head_dim = 128", "head_dim = 128\nkv_dtype = \"fp8\""));
  EXPECT_NEAR(fp8.predicted - 2 * floor, (cache / 2 + qo) / (bw * eff.memory), 1e-12);
  const ValidationCase small = EvaluatedCase(with("context = 8192", "context = 1024"));
  EXPECT_LT(small.bound, 1e-7);
  // Prefill: 8 sequences of 2,048 tokens, causal, at the 16-bit rate; an FP8 kernel only lowers the FLOP bound.
  const ValidationCase pre = EvaluatedCase(
      with("phase = \"decode\"\nbatch = 16\ncontext = 8192", "phase = \"prefill\"\nbatch = 8\ncontext = 2048"));
  const double flops = 8.0 * 2048 * 1024 * 4 * 128 * 8;
  EXPECT_NEAR(eff.serving_prefill_attention_fixed_s, 9e-6, 1e-12);  // data/efficiency.toml [serving_attention]
  EXPECT_NEAR(pre.predicted,
              flops / (*g.PeakFlops(Precision::kBf16) * eff.attention) + 2 * floor + eff.serving_prefill_attention_fixed_s,
              1e-12);
  EXPECT_NE(pre.detail.find("compute-bound"), std::string::npos);
  // The estimate's own attention row is the same function (a decode step of LLaMA-3.1 70B on eight GPUs).
  InferConfig ic;
  ic.fit.par.tp = 8;
  ic.fit.batch = 16;
  ic.input_len = 8192 - 64;
  ic.output_len = 128;
  auto r = EstimateInference(*Models().Resolve("llama-3.1-70b"), *MakeCluster(Hw(), g, 8, "ib-ndr"), ic, eff);
  ASSERT_TRUE(r.ok()) << r.status().message();
  int rows = 0;
  for (const OpCost& o : r->decode_ops) {
    if (o.name != "attention") continue;
    ++rows;
    EXPECT_NEAR(o.time_s, c.predicted - floor, 1e-12);  // one layer's, at the step's mean context input + output / 2
  }
  EXPECT_EQ(rows, 1);

  const auto failure = [&](const std::string& from, const std::string& to) { return FailureWith(good, from, to); };
  EXPECT_NE(failure("phase = \"decode\"", "phase = \"generate\"").find("valid: decode, prefill"), std::string::npos);
  EXPECT_NE(failure("kv_heads = 1", "kv_heads = 3").find("must be a multiple of 'kv_heads' (3)"), std::string::npos);
  EXPECT_NE(failure("context = 8192", "context = 0").find("'context' must be an integer from 1"), std::string::npos);
  EXPECT_NE(failure("head_dim = 128", "head_dim = 128\nattn_dtype = \"int8\"").find("valid: bf16, fp16, fp8"),
            std::string::npos);
  EXPECT_NE(failure("phase = \"decode\"", "phase = \"prefill\"\ndecode_attention = \"per-head\"")
                .find("phase = \"decode\" only"),
            std::string::npos);
  EXPECT_NE(failure("metric = \"time_s\"", "metric = \"tflops\"").find("(valid: time_s)"), std::string::npos);
  EXPECT_NE(failure("gpu = \"h100-sxm\"", "gpu = \"a100-sxm-80gb\"\nattn_dtype = \"fp8\"").find("has no fp8 peak"),
            std::string::npos);  // an FP8 kernel on a GPU without FP8 tensor cores
  // An MLA layer: the 576-wide latent cache (kv_lora_rank + qk_rope_head_dim) once per token, whatever the heads.
  const std::string mla_keys = "kv_lora_rank = 512\nqk_nope_head_dim = 128\nqk_rope_head_dim = 64\nv_head_dim = 128";
  const ValidationCase mla = EvaluatedCase(
      with("heads = 8\nkv_heads = 1\nhead_dim = 128", "heads = 16\nkv_heads = 16\nhead_dim = 192\n" + mla_keys));
  EXPECT_NEAR(mla.bound, 16.0 * 8192 * 576 * 2 / bw, 1e-15);
  EXPECT_NE(failure("head_dim = 128", "head_dim = 192\nkv_lora_rank = 512").find("needs all of kv_lora_rank"),
            std::string::npos);
  EXPECT_NE(failure("heads = 8\nkv_heads = 1\nhead_dim = 128", "heads = 16\nkv_heads = 1\nhead_dim = 192\n" + mla_keys)
                .find("'kv_heads' (1) must equal 'heads' (16)"),
            std::string::npos);
  EXPECT_NE(failure("heads = 8\nkv_heads = 1\nhead_dim = 128", "heads = 16\nkv_heads = 16\nhead_dim = 128\n" + mla_keys)
                .find("must be qk_nope_head_dim + qk_rope_head_dim (192)"),
            std::string::npos);
  const auto typo = RunCases(with("context = 8192", "contxt = 8192"));
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("did you mean 'context'"), std::string::npos);
}

}  // namespace
// The DeepSeek-R1 batch-1 figure the MLA + MoE caveat prints: TensorRT-LLM's 111 tokens/s without MTP on 8 B200s
// against this model's step for the MTP rows' configuration (NVFP4, TP 8, BF16 KV cache, 1,024 in / 2,048 out).
TEST(PerfValidation, DeepSeekBatchOneCaveatMatchesTheModel) {
  const ModelSpec m = *Models().Resolve("deepseek-v3");
  const GpuSpec& g = **Hw().FindGpu("b200");
  InferConfig c;
  c.fit.weights = *ParseWeightFormat("nvfp4");
  c.compute = Precision::kFp4;
  c.fit.par.tp = 8;
  c.input_len = 1024;
  c.output_len = 2048;
  auto r = EstimateInference(m, *MakeCluster(Hw(), g, 8, "ib-ndr"), c, *LoadEfficiency(g.id));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto& e = evidence::kDeepSeekBatch1Decode;
  std::printf("evidence DeepSeek-R1 batch 1 on 8 B200: measured / predicted time per token %.3f\n",
              (1 / e.published_tokens_per_s) / r->tpot_s);
  EXPECT_NEAR((1 / e.published_tokens_per_s) / r->tpot_s, e.time_ratio, 0.01);
  bool noted = false;
  for (const auto& n : r->notes) noted |= n.find("MLA + MoE step") != std::string::npos;
  EXPECT_TRUE(noted);
}

// The physical bound of a serving figure (ValidationCase::bound): for a rate, every weight a decode step needs read
// once per step at the datasheet bandwidth, the input embedding left out, an MoE's unpicked experts left out under
// uniform routing; for the time to first token, the prefill's GEMM FLOPs at the datasheet peak or its weights at the
// datasheet bandwidth. A published figure beyond it is flagged, not dropped.
TEST(PerfValidation, PublishedFiguresCarryTheirPhysicalBound) {
  auto decode_row = [](const char* model, int batch, double published, const char* extra = "") {
    return fmt::format(R"([[infer]]
name = "mine"
model = "{}"
gpu = "a100-sxm-80gb"
weights = "fp16"
kv_dtype = "fp16"
batch = {}
input_len = 1
output_len = 128
{}metric = "decode_tokens_per_s"
published = {}
)",
                       model, batch, extra, published);
  };
  const GpuSpec& a100 = **Hw().FindGpu("a100-sxm-80gb");
  const ModelSpec llama = *Models().Resolve("llama-2-7b");
  const ParamCounts pc = CountParams(llama);
  // LLaMA-2 7B in FP16 on one GPU: all of its 16-bit weights but the input embedding, once a step.
  const double want = a100.memory_bandwidth_bytes_per_s.value / (2 * pc.total - 2 * pc.embedding);
  const ValidationCase one = EvaluatedCase(decode_row("llama-2-7b", 1, 100));
  EXPECT_NEAR(one.bound, want, 0.002 * want);
  EXPECT_TRUE(one.within_bound());
  EXPECT_FALSE(EvaluatedCase(decode_row("llama-2-7b", 1, 1.01 * want)).within_bound());
  // A dense step reads the same weights for any batch: the bound grows with it.
  EXPECT_NEAR(EvaluatedCase(decode_row("llama-2-7b", 8, 100)).bound, 8 * one.bound, 1e-9 * one.bound);
  // Mixtral (8 experts, top-2): at batch 1 a step reads 2 of each layer's 8 experts; at batch 64 all but a
  // (6/8)^64 share of them.
  const ModelSpec mixtral = *Models().Resolve("mixtral-8x7b");
  const ParamCounts mc = CountParams(mixtral);
  const double full = 2 * mc.total - 2 * mc.embedding;
  const double b1 = EvaluatedCase(decode_row("mixtral-8x7b", 1, 10, "tp = 2\n")).bound;
  const double b64 = EvaluatedCase(decode_row("mixtral-8x7b", 64, 10, "tp = 2\n")).bound;
  const double bw = a100.memory_bandwidth_bytes_per_s.value;
  // (Within 1%: at TP 2 each GPU also holds the replicated norms and router.)
  EXPECT_NEAR(b1, bw / ((full - 2 * mc.moe_experts * 0.75) / 2), 0.01 * b1);
  EXPECT_NEAR(b64, 64 * bw / ((full - 2 * mc.moe_experts * std::pow(0.75, 64)) / 2), 0.01 * b64);
  EXPECT_GT(b1, 3 * b64 / 64);  // batch 1 reads about a quarter of the experts
  // The time to first token: LLaMA-2 7B (BF16) on one H100, 128 prompt tokens, is bound by its weights
  // (13.2 GB at 3.35 TB/s, 3.9 ms); at 8,192 tokens by its GEMM FLOPs at the 16-bit peak (2 per layer weight per
  // token, the head on the last token only). A published time under it is flagged.
  const GpuSpec& h100 = **Hw().FindGpu("h100-sxm");
  const ValidationCase short_prompt = EvaluatedCase(kUserTtftRow);
  const double weights_s = (2 * pc.total - 2 * pc.embedding) / h100.memory_bandwidth_bytes_per_s.value;
  EXPECT_NEAR(short_prompt.bound, weights_s, 0.002 * weights_s);
  EXPECT_TRUE(short_prompt.within_bound());  // published 6 ms
  std::string fast = kUserTtftRow;
  fast.replace(fast.find("published = 0.006"), 17, "published = 0.003");
  EXPECT_FALSE(EvaluatedCase(fast).within_bound());
  std::string long_prompt = kUserTtftRow;
  long_prompt.replace(long_prompt.find("input_len = 128"), 15, "input_len = 8192");
  const double flops = 2 * (8192 * (pc.active - pc.embedding - pc.lm_head) + pc.lm_head);
  const double peak = *h100.PeakFlops(Precision::kBf16);
  EXPECT_NEAR(EvaluatedCase(long_prompt).bound, flops / peak, 1e-6 * flops / peak);
  // Not figures at a stated batch: no bound (the engine's batch under --batch max is not the case's).
  std::string max_row = decode_row("llama-2-7b", 1, 100);
  max_row.replace(max_row.find("batch = 1"), 9, "batch_max = true");
  max_row.replace(max_row.find("metric = \"decode_tokens_per_s\""), 30, "metric = \"output_tokens_per_s\"");
  EXPECT_EQ(EvaluatedCase(max_row).bound, 0);
  // A static batch's output throughput counts the whole run: the prefill's bound, then output - 1 decode steps'.
  std::string thr = decode_row("llama-2-7b", 16, 100);
  thr.replace(thr.find("input_len = 1"), 13, "input_len = 2048");
  thr.replace(thr.find("metric = \"decode_tokens_per_s\""), 30, "metric = \"output_tokens_per_s_per_gpu\"");
  InferConfig ic;
  ic.fit.weights = *ParseWeightFormat("fp16");
  ic.fit.kv_bytes_per_elem = 2;
  ic.fit.batch = 16;
  ic.input_len = 2048;
  ic.output_len = 128;
  auto lim = ServingBound(llama, a100, ic);
  ASSERT_TRUE(lim.ok()) << lim.status().message();
  EXPECT_GT(lim->ttft_s, 0);
  EXPECT_NEAR(EvaluatedCase(thr).bound, 16.0 * 128 / (lim->ttft_s + 127 * lim->decode_step_s),
              1e-9 * EvaluatedCase(thr).bound);
  // Training: the step's least work, 6 FLOPs per matmul weight per token, at the dense peak (LLaMA-3.1 8B in BF16
  // on H100s); MFU at most 1.
  const ModelSpec l8 = *Models().Resolve("llama-3.1-8b");
  const ParamCounts p8 = CountParams(l8);
  const double per_gpu = *h100.PeakFlops(Precision::kBf16) / (6 * (p8.active - p8.embedding));
  const ValidationCase train = EvaluatedCase(EightGpuRow("t", "llama-3.1-8b", 64, "", 9000));
  EXPECT_NEAR(train.bound, per_gpu, 1e-9 * per_gpu);
  EXPECT_TRUE(train.within_bound());
  EXPECT_FALSE(EvaluatedCase(EightGpuRow("t", "llama-3.1-8b", 64, "", 1.01 * per_gpu)).within_bound());
  // The bundled set: one published figure is above its bound, TensorRT-LLM v0.9's Mixtral on two A100s at batch 32
  // (801 output tokens/s per GPU; 93 GB of FP16 weights, 46.7 GB per GPU read every step, and the prefill, allow at
  // most 663).
  const auto& rep = Bundled();
  ASSERT_TRUE(rep.ok());
  std::set<std::string> above;
  int bounded = 0;
  for (const auto& c : rep->cases) {
    if (c.bound > 0) ++bounded;
    if (!c.within_bound()) above.insert(c.name);
  }
  EXPECT_GE(bounded, 560);  // every training and GEMM row, and every serving figure at a stated batch
  EXPECT_EQ(above, std::set<std::string>{"TRT-LLM v0.9 mixtral-8x7b a100-sxm-80gb fp16 b32 TP2 2048/2048"});
  for (const auto& g : rep->groups) EXPECT_EQ(g.beyond_bound, g.group == "throughput" ? 1 : 0) << g.group;
}

}  // namespace suanli

namespace suanli {
namespace {
// ValidationCase::command: a user's file in another folder names its config relative to that folder, the harness's
// own defaults are written out (ZeRO 0, no recompute, 8 GPUs per node on ib-ndr, 2,048 tokens: not the CLI's), and a
// serving case's fixed node and prompt default likewise; a kernel case has none.
TEST(PerfValidation, CaseCommandsNameTheConfigBesideTheCasesFileAndWriteOutTheDefaults) {
  const std::string config = R"({"model_type": "llama", "hidden_size": 1024, "intermediate_size": 4096,
    "num_hidden_layers": 4, "num_attention_heads": 16, "num_key_value_heads": 16, "vocab_size": 32000,
    "max_position_embeddings": 4096})";
  auto read = [&](const std::string& rel) -> Result<std::string> {
    if (rel == "configs/tiny.json") return config;
    return NotFound(rel);
  };
  const std::string rows = R"([[train]]
name = "tiny"
config = "configs/tiny.json"
gpu = "h100-sxm"
gpus = 8
global_batch = 16
metric = "step_time_s"
published = 1
[[infer]]
name = "serve"
model = "llama-2-7b"
gpu = "h100"
metric = "ttft_s"
published = 0.01
[[gemm]]
name = "g"
gpu = "h100-sxm"
dtype = "bf16"
m = 4096
n = 4096
k = 4096
metric = "tflops"
published = 600
)";
  auto rep = RunPerfValidation(rows, "/home/me/runs/mine.toml", Hw(), Models(), read);
  ASSERT_TRUE(rep.ok()) << rep.status().message();
  ASSERT_EQ(rep->cases.size(), 3u);
  for (const auto& c : rep->cases) ASSERT_TRUE(c.failure.empty()) << c.name << ": " << c.failure;
  const std::vector<std::string> train = {
      "perf", "train", "--model", "/home/me/runs/configs/tiny.json", "--gpu", "h100-sxm", "--gpus", "8",
      "--gpus-per-node", "8", "--inter-node", "ib-ndr", "--tp", "1", "--pp", "1", "--cp", "1", "--zero", "0",
      "--global-batch", "16", "--seq", "2048", "--recompute", "none", "--flops", "megatron"};
  EXPECT_EQ(rep->cases[0].command, train);
  EXPECT_GT(rep->cases[0].step_time_s, 0);
  const std::vector<std::string> infer = {"perf", "infer", "--model", "llama-2-7b", "--gpu", "h100", "--gpus-per-node",
                                          "8", "--inter-node", "ib-ndr", "--tp", "1", "--batch", "1", "--input-len",
                                          "128", "--output-len", "128"};
  EXPECT_EQ(rep->cases[1].command, infer);
  EXPECT_GT(rep->cases[1].ttft_s, 0);
  EXPECT_GT(rep->cases[1].tpot_s, 0);
  EXPECT_TRUE(rep->cases[2].command.empty());
}
}  // namespace
}  // namespace suanli
