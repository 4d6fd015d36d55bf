// How long one evaluation of the models takes (Google Benchmark). The planner's search needs a
// training evaluation in microseconds; docs/validation.md §6 records the figures.
#include <benchmark/benchmark.h>

#include "suanli/memory.h"
#include "suanli/perf.h"
#include "suanli/plan.h"

namespace {

struct Fixture {
  suanli::HardwareCatalog hw = *suanli::HardwareCatalog::Load(suanli::CatalogOptions{});
  suanli::ModelCatalog models = *suanli::ModelCatalog::Load(suanli::CatalogOptions{});
  suanli::ModelSpec gpt3 = *models.Resolve("gpt3-175b");
  suanli::ModelSpec llama70b = *models.Resolve("llama-3.1-70b");  // grouped-query attention
  suanli::ModelSpec deepseek = *models.Resolve("deepseek-v3");    // MoE with dense first layers, MLA
  const suanli::GpuSpec* gpu = *hw.FindGpu("a100-sxm-80gb");
  suanli::Cluster cluster = *suanli::MakeCluster(hw, *gpu, 8, "ib-hdr");
  suanli::Efficiency eff = *suanli::LoadEfficiency(gpu->id);
};
Fixture& F() {
  static Fixture f;
  return f;
}

// GPT-3 175B on 1024 A100s: TP=8 PP=8 DP=16, SP + selective recompute.
suanli::TrainConfig Gpt3Layout(bool detail) {
  suanli::TrainConfig c;
  c.fit.par.tp = 8;
  c.fit.par.pp = 8;
  c.fit.par.dp = 16;
  c.fit.par.zero = 1;
  c.fit.par.sequence_parallel = true;
  c.fit.batch = 1024;
  c.fit.seq = 2048;
  c.fit.micro_batch = 1;
  c.fit.recompute = suanli::Recompute::kSelective;
  c.detail = detail;
  return c;
}

void BM_EstimateTraining(benchmark::State& state) {
  auto& f = F();
  const suanli::TrainConfig c = Gpt3Layout(true);
  for (auto _ : state) benchmark::DoNotOptimize(suanli::EstimateTraining(f.gpt3, f.cluster, c, f.eff));
}
BENCHMARK(BM_EstimateTraining);

// The planner's inner loop: the same evaluation without the per-operator table and texts.
void BM_EstimateTrainingNoDetail(benchmark::State& state) {
  auto& f = F();
  const suanli::TrainConfig c = Gpt3Layout(false);
  for (auto _ : state) benchmark::DoNotOptimize(suanli::EstimateTraining(f.gpt3, f.cluster, c, f.eff));
}
BENCHMARK(BM_EstimateTrainingNoDetail);

// The same layout in FP8 on H100s, without the table: Arg(0) prices the gradient GEMMs at the forward's rate
// (gemm_fp8_precise = 1), Arg(1) at the bundled FP32-accumulation rate, which times each FP8 GEMM twice.
void BM_EstimateTrainingFp8H100NoDetail(benchmark::State& state) {
  auto& f = F();
  const suanli::GpuSpec* h100 = *f.hw.FindGpu("h100-sxm");
  const suanli::Cluster cluster = *suanli::MakeCluster(f.hw, *h100, 8, "ib-ndr");
  suanli::Efficiency eff = *suanli::LoadEfficiency(h100->id);
  if (state.range(0) == 0) eff.gemm_fp8_precise = 1;
  suanli::TrainConfig c = Gpt3Layout(false);
  c.dtype = suanli::Precision::kFp8;
  for (auto _ : state) benchmark::DoNotOptimize(suanli::EstimateTraining(f.gpt3, cluster, c, eff));
}
BENCHMARK(BM_EstimateTrainingFp8H100NoDetail)->Arg(0)->Arg(1);

void BM_EstimateMemory(benchmark::State& state) {
  auto& f = F();
  suanli::FitRequest r;
  r.mode = suanli::Mode::kTrain;
  r.par.tp = 8;
  r.par.pp = 8;
  r.par.dp = 16;
  r.batch = 1024;
  r.seq = 2048;
  for (auto _ : state) benchmark::DoNotOptimize(suanli::EstimateMemory(f.gpt3, r));
}
BENCHMARK(BM_EstimateMemory);

// `fit`'s minimum-GPU search for DeepSeek-V3 training on one GPU: thousands of memory estimates over TP, PP (up to
// the 61 layers), DP and ZeRO of a model whose ranks differ (dense first layers), the heaviest `fit` case.
void BM_FindMinGpusDeepSeekV3(benchmark::State& state) {
  auto& f = F();
  suanli::FitRequest r;
  r.mode = suanli::Mode::kTrain;
  r.batch = 1;
  r.seq = 4096;
  for (auto _ : state) benchmark::DoNotOptimize(suanli::FindMinGpus(f.deepseek, r, *f.gpu));
}
BENCHMARK(BM_FindMinGpusDeepSeekV3)->Unit(benchmark::kMillisecond);

void BM_EstimateInference(benchmark::State& state) {
  auto& f = F();
  suanli::InferConfig c;
  c.fit.batch = 32;
  c.fit.par.tp = 8;
  for (auto _ : state) benchmark::DoNotOptimize(suanli::EstimateInference(f.gpt3, f.cluster, c, f.eff));
}
BENCHMARK(BM_EstimateInference);

// A grouped-query model with the default grouped decode kernel: the estimate also evaluates the per-head
// alternative for its note, so this is the inference path's worst case.
void BM_EstimateInferenceGqa(benchmark::State& state) {
  auto& f = F();
  suanli::InferConfig c;
  c.fit.batch = 32;
  c.fit.par.tp = 8;
  c.input_len = 2048;
  c.output_len = 2048;
  for (auto _ : state) benchmark::DoNotOptimize(suanli::EstimateInference(f.llama70b, f.cluster, c, f.eff));
}
BENCHMARK(BM_EstimateInferenceGqa);

// LLaMA-3.1 70B on TP 8, 2048 in / 2048 out, at the most sequences that fit (--batch max).
suanli::InferConfig Llama70bFullLoad() {
  suanli::InferConfig c;
  c.fit.par.tp = 8;
  c.input_len = 2048;
  c.output_len = 2048;
  c.batch_max = true;
  return c;
}

// --batch max: the largest batch whose whole-context KV cache fits (a bisection over the memory model), then the
// estimate at it.
void BM_EstimateInferenceBatchMax(benchmark::State& state) {
  auto& f = F();
  const suanli::InferConfig c = Llama70bFullLoad();
  for (auto _ : state) benchmark::DoNotOptimize(suanli::EstimateInference(f.llama70b, f.cluster, c, f.eff));
}
BENCHMARK(BM_EstimateInferenceBatchMax);

// Speculative decoding with a draft head at full load: the joint bisection over the target's and the draft's
// memory, then the draft's prefill and decode passes and the verification pass beside the plain ones.
void BM_EstimateInferenceSpeculative(benchmark::State& state) {
  auto& f = F();
  suanli::InferConfig c = Llama70bFullLoad();
  c.spec.tokens = 4;
  c.spec.acceptance_length = 3;
  for (auto _ : state) benchmark::DoNotOptimize(suanli::EstimateInference(f.llama70b, f.cluster, c, f.eff));
}
BENCHMARK(BM_EstimateInferenceSpeculative);

// A closed loop of 64 clients (perf infer --concurrency 64): the estimate at batch 1 for the prefill and the cache's
// limit, then the one at the sequences in flight, and the quadratic.
void BM_EstimateClosedLoop(benchmark::State& state) {
  auto& f = F();
  suanli::InferConfig c;
  c.fit.par.tp = 8;
  c.input_len = 2048;
  c.output_len = 512;
  for (auto _ : state) benchmark::DoNotOptimize(suanli::EstimateClosedLoop(f.llama70b, f.cluster, c, 64, f.eff));
}
BENCHMARK(BM_EstimateClosedLoop);

// Disaggregated serving (perf infer --prefill-workers 1 --decode-workers 2 --concurrency 256): the fixed point of the
// decode step and the decode batch, then, the one prefill worker binding, the search for the fewest that keep up.
void BM_EstimateDisaggregated(benchmark::State& state) {
  auto& f = F();
  suanli::InferConfig c;
  c.fit.par.tp = 4;
  c.input_len = 4096;
  c.output_len = 512;
  suanli::DisaggConfig d;
  d.prefill.tp = 4;
  d.prefill_workers = 1;
  d.decode_workers = 2;
  for (auto _ : state)
    benchmark::DoNotOptimize(suanli::EstimateDisaggregated(f.llama70b, f.cluster, c, d, 256, f.eff));
}
BENCHMARK(BM_EstimateDisaggregated)->Unit(benchmark::kMillisecond);

// The planner case: GPT-3 175B on 1024 A100-80GB, global batch 1024, sequence 2048, one thread.
// items_per_second = configurations evaluated per second on one core.
void BM_PlanGpt3On1024A100(benchmark::State& state) {
  auto& f = F();
  suanli::PlanRequest r;
  r.model = &f.gpt3;
  r.cluster = f.cluster;
  r.eff = f.eff;
  r.gpu_counts = {1024};
  r.global_batch = 1024;
  r.seq = 2048;
  r.threads = static_cast<int>(state.range(0));
  int64_t n = 0;
  for (auto _ : state) {
    auto p = suanli::Plan(r);
    n += p->configs_evaluated;
  }
  state.SetItemsProcessed(n);
}
BENCHMARK(BM_PlanGpt3On1024A100)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
