#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdlib>
#include <thread>

#include "bench/internal.h"
#include "suanli/bench.h"
#include "suanli/store.h"

namespace suanli {
namespace {

const HardwareCatalog& Catalog() {
  static const HardwareCatalog c = [] {
    CatalogOptions o;
    auto r = HardwareCatalog::Load(o);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return std::move(r).value();
  }();
  return c;
}

const Expectations& Expect() {
  static const Expectations e = [] {
    auto r = Expectations::LoadEmbedded();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return std::move(r).value();
  }();
  return e;
}

const GpuSpec& Gpu(const char* id) { return **Catalog().FindGpu(id); }

// ---- statistics and states --------------------------------------------------------------------

TEST(BenchSpread, MedianMinMaxAndInterval) {
  auto s = ComputeSpread({5, 1, 3});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->median, 3);
  EXPECT_EQ(s->min, 1);
  EXPECT_EQ(s->max, 5);
  EXPECT_EQ(s->ci95_low, 1);  // fewer than 6 samples: the range
  EXPECT_EQ(s->ci95_high, 5);
  EXPECT_DOUBLE_EQ(s->stddev, 2);
  auto e = ComputeSpread({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(e->median, 2.5);
  std::vector<double> many;
  for (int i = 1; i <= 100; ++i) many.push_back(i);
  auto m = ComputeSpread(many);
  EXPECT_DOUBLE_EQ(m->median, 50.5);
  EXPECT_GT(m->ci95_low, 35);   // about 50 -+ 10
  EXPECT_LT(m->ci95_low, 45);
  EXPECT_GT(m->ci95_high, 55);
  EXPECT_LT(m->ci95_high, 65);
}

TEST(BenchSpread, RejectsEmptyAndNonFinite) {
  EXPECT_FALSE(ComputeSpread({}).ok());
  EXPECT_FALSE(ComputeSpread({1, NAN}).ok());
  EXPECT_FALSE(ComputeSpread({1, INFINITY}).ok());
}

TEST(BenchState, NamesAndSeverity) {
  for (auto s : {BenchState::kPass, BenchState::kWarn, BenchState::kFail, BenchState::kSkip, BenchState::kError})
    EXPECT_EQ(BenchStateFromName(BenchStateName(s)), s);
  EXPECT_FALSE(BenchStateFromName("OK").has_value());
  EXPECT_EQ(WorseState(BenchState::kPass, BenchState::kSkip), BenchState::kPass);
  EXPECT_EQ(WorseState(BenchState::kWarn, BenchState::kPass), BenchState::kWarn);
  EXPECT_EQ(WorseState(BenchState::kError, BenchState::kWarn), BenchState::kError);
  EXPECT_EQ(WorseState(BenchState::kError, BenchState::kFail), BenchState::kFail);
}

// ---- expectations and catalog matching --------------------------------------------------------

TEST(BenchExpectations, EmbeddedFileParsesAndEveryRowHasASource) {
  ASSERT_FALSE(Expect().all().empty());
  for (const auto& x : Expect().all()) {
    EXPECT_FALSE(x.source.empty()) << x.test;
    EXPECT_LE(x.fail_below, x.pass_fraction) << x.test;
  }
}

TEST(BenchExpectations, MostSpecificRowWins) {
  auto e = Expectations::Parse(R"(schema = 1
[sources]
s = "test"
[[expect]]
family = "nvidia-hbm"
test = "gpu.mem.*"
pass = { value = 0.8, source = "s" }
fail_below = { value = 0.5, source = "s" }
[[expect]]
family = "nvidia-hbm"
test = "gpu.mem.copy"
pass = { value = 0.85, source = "s" }
fail_below = { value = 0.6, source = "s" }
[[expect]]
family = "h100-sxm"
test = "gpu.mem.*"
pass = { value = 0.9, source = "s" }
fail_below = { value = 0.7, source = "s" }
)",
                               "t.toml");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_DOUBLE_EQ(e->Find(Gpu("a100"), "gpu.mem.read")->pass_fraction, 0.8);
  EXPECT_DOUBLE_EQ(e->Find(Gpu("a100"), "gpu.mem.copy")->pass_fraction, 0.85);
  EXPECT_DOUBLE_EQ(e->Find(Gpu("h100"), "gpu.mem.copy")->pass_fraction, 0.9);  // a GPU id beats a family
  EXPECT_EQ(e->Find(Gpu("rtx-4090"), "gpu.mem.copy"), nullptr);                // nvidia-gddr: no row
  EXPECT_EQ(e->Find(Gpu("a100"), "gpu.memx"), nullptr);
}

TEST(BenchExpectations, RejectsUnknownKeysMissingSourcesAndBadOrder) {
  const char* head = "schema = 1\n[sources]\ns = \"x\"\n[[expect]]\nfamily = \"nvidia-hbm\"\ntest = \"t\"\n";
  auto typo = Expectations::Parse(std::string(head) + "pass = { value = 0.8, source = \"s\" }\nfail_below = { value = 0.5, source = \"s\" }\npasss = 1\n", "t.toml");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("passs"), std::string::npos);
  auto nosrc = Expectations::Parse(std::string(head) + "pass = { value = 0.8 }\nfail_below = { value = 0.5, source = \"s\" }\n", "t.toml");
  EXPECT_FALSE(nosrc.ok());
  auto order = Expectations::Parse(std::string(head) + "pass = { value = 0.5, source = \"s\" }\nfail_below = { value = 0.8, source = \"s\" }\n", "t.toml");
  EXPECT_FALSE(order.ok());
}

TEST(BenchCatalogMatch, DriverNamesFindTheirCatalogEntry) {
  const std::pair<const char*, const char*> cases[] = {
      {"NVIDIA H100 80GB HBM3", "h100-sxm"},        {"NVIDIA A100-SXM4-80GB", "a100-sxm-80gb"},
      {"NVIDIA A100-SXM4-40GB", "a100-sxm-40gb"},   {"NVIDIA A100 80GB PCIe", "a100-pcie-80gb"},
      {"NVIDIA H100 PCIe", "h100-pcie"},            {"NVIDIA H200", "h200-sxm"},
      {"NVIDIA B200", "b200"},                      {"NVIDIA L40S", "l40s"},
      {"NVIDIA GB200", "gb200"},                    {"NVIDIA GB300", "gb300"},  // the captures' product_name
      {"Tesla T4", "t4"},                           {"NVIDIA GeForce RTX 4090", "rtx-4090"},
      {"NVIDIA RTX 6000 Ada Generation", "rtx-6000-ada"}, {"Tesla V100-SXM2-32GB", "v100-sxm-32gb"},
  };
  for (const auto& [name, id] : cases) {
    const GpuSpec* g = MatchCatalogGpu(Catalog(), name);
    ASSERT_NE(g, nullptr) << name;
    EXPECT_EQ(g->id, id) << name;
  }
  EXPECT_EQ(MatchCatalogGpu(Catalog(), "NVIDIA Imaginary X9"), nullptr);
  EXPECT_EQ(GpuFamily(Gpu("h100")), "nvidia-hbm");
  EXPECT_EQ(GpuFamily(Gpu("rtx-4090")), "nvidia-gddr");
}

// ---- judging ----------------------------------------------------------------------------------

BenchCase MemCase(const char* name = "gpu.mem.copy") {
  BenchCase c;
  c.name = name;
  c.kind = BenchKind::kMemCopy;
  c.bytes = 1 << 30;
  c.unit = "B/s";
  return c;
}

Measurement Ok(double work, std::vector<double> seconds) {
  Measurement m;
  m.seconds = std::move(seconds);
  m.work_per_rep = work;
  m.checked = 1000;
  return m;
}

TEST(BenchEvaluate, FractionOfDatasheetDecidesPassWarnFail) {
  const GpuSpec& h100 = Gpu("h100");  // 3.35 TB/s; HBM copy: PASS >= 80%, FAIL < 55%
  const double peak = h100.memory_bandwidth_bytes_per_s.value;
  auto at = [&](double fraction) {
    return Evaluate(MemCase(), Ok(fraction * peak, {1.0, 1.0, 1.0}), &h100, Expect());
  };
  BenchResult pass = at(0.9);
  EXPECT_EQ(pass.state, BenchState::kPass);
  EXPECT_NEAR(*pass.fraction, 0.9, 1e-12);
  EXPECT_DOUBLE_EQ(*pass.peak, peak);
  EXPECT_FALSE(pass.peak_source.empty());
  EXPECT_FALSE(pass.expectation_source.empty());
  EXPECT_EQ(at(0.7).state, BenchState::kWarn);
  EXPECT_EQ(at(0.5).state, BenchState::kFail);
}

TEST(BenchEvaluate, WrongResultIsFailEvenWhenFast) {
  const GpuSpec& h100 = Gpu("h100");
  Measurement m = Ok(10 * h100.memory_bandwidth_bytes_per_s.value, {1.0});
  m.mismatches = 1;
  BenchResult r = Evaluate(MemCase(), m, &h100, Expect());
  EXPECT_EQ(r.state, BenchState::kFail);
  EXPECT_NE(r.message.find("wrong result"), std::string::npos);
  m.mismatches = 0;
  m.nans = 3;
  EXPECT_EQ(Evaluate(MemCase(), m, &h100, Expect()).state, BenchState::kFail);
}

TEST(BenchEvaluate, UnverifiedResultIsNeverPass) {
  Measurement m = Ok(1e12, {1.0});
  m.checked = 0;
  BenchResult r = Evaluate(MemCase(), m, &Gpu("h100"), Expect());
  EXPECT_EQ(r.state, BenchState::kError);
}

TEST(BenchEvaluate, SkipAndErrorPassThroughWithTheirReason) {
  Measurement m;
  m.outcome = BenchState::kSkip;
  m.message = "FP8 not supported";
  BenchResult r = Evaluate(MemCase(), m, nullptr, Expect());
  EXPECT_EQ(r.state, BenchState::kSkip);
  EXPECT_EQ(r.message, "FP8 not supported");
  m.outcome = BenchState::kError;
  m.message = "out of memory";
  EXPECT_EQ(Evaluate(MemCase(), m, nullptr, Expect()).state, BenchState::kError);
  Measurement none = Ok(1, {});
  EXPECT_EQ(Evaluate(MemCase(), none, nullptr, Expect()).state, BenchState::kError);
}

TEST(BenchEvaluate, LatencyIsSecondsPerLaunchAndHasNoPeak) {
  BenchCase c;
  c.name = "gpu.launch_latency";
  c.kind = BenchKind::kLaunchLatency;
  c.unit = "s";
  c.higher_is_better = false;
  BenchResult r = Evaluate(c, Ok(1000, {0.004, 0.002, 0.003}), &Gpu("h100"), Expect());
  EXPECT_EQ(r.state, BenchState::kPass);
  EXPECT_DOUBLE_EQ(r.value, 3e-6);
  EXPECT_DOUBLE_EQ(r.spread.min, 2e-6);
  EXPECT_FALSE(r.peak.has_value());
}

TEST(BenchEvaluate, GemmPeakIsThePrecisionsDensePeakAndPcieFromTheCatalog) {
  BenchCase g;
  g.name = "gpu.gemm.bf16.8192";
  g.kind = BenchKind::kGemm;
  g.precision = Precision::kBf16;
  g.unit = "FLOP/s";
  auto peak = DatasheetPeak(g, Gpu("h100"));
  ASSERT_TRUE(peak.has_value());
  EXPECT_NEAR(peak->value, 989.4e12, 1e9);
  g.precision = Precision::kFp8;
  EXPECT_FALSE(DatasheetPeak(g, Gpu("a100")).has_value());  // A100 has no FP8
  BenchCase h;
  h.kind = BenchKind::kH2D;
  auto pcie = DatasheetPeak(h, Gpu("h100"));  // Gen5 x16: 32 GT/s * 128/130 / 8 * 16
  ASSERT_TRUE(pcie.has_value());
  EXPECT_NEAR(pcie->value, 63.0e9, 0.1e9);
}

// ---- layer shapes and planning ----------------------------------------------------------------

ModelSpec Model(const char* id) {
  auto mc = ModelCatalog::Load(CatalogOptions());
  EXPECT_TRUE(mc.ok());
  auto m = mc->Resolve(id);
  EXPECT_TRUE(m.ok());
  return *m;
}

TEST(BenchLayerGemms, Llama8bShapesAndBackwardIsTwiceForward) {
  const ModelSpec m = Model("llama-3.1-8b");  // h 4096, 32 heads, 8 KV heads, ffn 14336
  auto fwd = LayerGemms(m, 1, 2048, true);
  ASSERT_TRUE(fwd.ok());
  auto find = [&](const std::vector<GemmShape>& v, const std::string& n) {
    for (const auto& g : v)
      if (g.name == n) return g;
    ADD_FAILURE() << n;
    return GemmShape{};
  };
  const GemmShape qkv = find(*fwd, "qkv.fwd");
  EXPECT_EQ(qkv.m, 2048);
  EXPECT_EQ(qkv.n, (32 + 2 * 8) * 128);
  EXPECT_EQ(qkv.k, 4096);
  EXPECT_EQ(find(*fwd, "mlp.up.fwd").n, 2 * 14336);
  EXPECT_EQ(find(*fwd, "attn.scores.fwd").batch, 32);
  auto all = LayerGemms(m, 1, 2048, false);
  ASSERT_TRUE(all.ok());
  double f = 0, b = 0;
  for (const auto& g : *all) (g.name.find(".fwd") != std::string::npos ? f : b) += g.Flops();
  EXPECT_NEAR(b / f, 2.0, 1e-9);
  // Linear layers: 2 * tokens * params-per-layer (excluding norms) in the forward pass.
  const ParamCounts pc = CountParams(m);
  double linear = 0;
  for (const auto& g : *fwd)
    if (g.name.rfind("attn.", 0) != 0) linear += g.Flops();
  EXPECT_NEAR(linear / (2.0 * 2048 * pc.per_layer_total), 1.0, 0.01);
}

TEST(BenchLayerGemms, MoeAndMlaModelsProduceShapes) {
  auto mix = LayerGemms(Model("mixtral-8x7b"), 1, 1024, true);
  ASSERT_TRUE(mix.ok());
  bool experts = false;
  for (const auto& g : *mix) experts |= (g.name == "experts.up.fwd" && g.m == 2 * 1024);
  EXPECT_TRUE(experts);
  auto ds = LayerGemms(Model("deepseek-v3"), 1, 1024, false);
  ASSERT_TRUE(ds.ok());
  EXPECT_LE(ds->size(), 64u);  // fits the plugin's request
}

DeviceInfo FakeGpu(int index, const char* name = "NVIDIA H100 80GB HBM3", const char* cc = "9.0") {
  DeviceInfo d;
  d.index = index;
  d.is_gpu = true;
  d.name = name;
  d.uuid = "GPU-0000000" + std::to_string(index);
  d.pci_bus_id = "0000:1" + std::to_string(index) + ":00.0";
  d.compute_capability = cc;
  d.memory_bytes = 80.0 * (1 << 30);
  d.l2_bytes = 50.0 * (1 << 20);
  return d;
}

TEST(BenchPlan, CpuOnlyWithoutGpusAndPerGpuCasesWithThem) {
  BenchOptions o;
  auto cpu = PlanCases({}, o);
  ASSERT_TRUE(cpu.ok());
  for (const auto& c : *cpu) EXPECT_FALSE(c.on_gpu) << c.name;
  EXPECT_EQ(cpu->size(), 3u);
  auto two = PlanCases({FakeGpu(0), FakeGpu(1)}, o);
  ASSERT_TRUE(two.ok());
  int p2p = 0, allreduce = 0;
  for (const auto& c : *two) {
    p2p += c.kind == BenchKind::kP2P;
    allreduce += c.kind == BenchKind::kAllReduce;
    if (c.kind == BenchKind::kMemTriad && c.on_gpu) {
      EXPECT_GE(c.bytes, 8 * 50 * (1 << 20));  // many times the L2
    }
  }
  EXPECT_EQ(p2p, 2);
  EXPECT_EQ(allreduce, 1);
}

TEST(BenchPlan, OnlyAcceptsCasesOfLargerNodes) {
  std::vector<DeviceInfo> eight;
  for (int i = 0; i < 8; ++i) eight.push_back(FakeGpu(i));
  auto plan = PlanCases(eight, BenchOptions{{"gpu.p2p.3-5"}});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->size(), 1u);
  EXPECT_EQ(plan->at(0).peer, 5);
}

TEST(BenchPlan, UnsupportedPrecisionIsPlannedAsSkipWithTheReason) {
  auto plan = PlanCases({FakeGpu(0, "NVIDIA A100-SXM4-80GB", "8.0")}, BenchOptions{{"gpu.gemm.fp8"}});
  ASSERT_TRUE(plan.ok());
  ASSERT_FALSE(plan->empty());
  for (const auto& c : *plan) EXPECT_NE(c.skip_reason.find("8.9"), std::string::npos);
}

TEST(BenchPlan, OnlyFiltersByNameOrPrefixAndSuggestsOnTypos) {
  BenchOptions o;
  o.only = {"cpu.gemm"};
  auto plan = PlanCases({}, o);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->size(), 2u);
  o.only = {"cpu.gem"};  // not a whole component
  auto bad = PlanCases({}, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("did you mean"), std::string::npos);
  o.only = {"gpu.mem.triad"};  // a GPU case on a machine without GPUs is not "unknown"
  auto none = PlanCases({}, o);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

// Options out of range are errors naming the flag, from the plan as from the check itself; the bounds are accepted.
// A time limit of 1e300 s once overflowed the watchdog's clock and timed every case out at once.
TEST(BenchPlan, OptionsOutOfRangeAreErrors) {
  struct Bad {
    double time_limit_s;
    int64_t micro_batch, seq;
    const char* flag;
  };
  for (const Bad& b : {Bad{0, 1, 2048, "--time-limit"}, Bad{1e300, 1, 2048, "--time-limit"},
                       Bad{std::nan(""), 1, 2048, "--time-limit"}, Bad{60, 0, 2048, "--micro-batch"},
                       Bad{60, 1, 0, "--seq"}, Bad{60, 1, (int64_t{1} << 20) + 1, "--seq"}}) {
    BenchOptions o;
    o.time_limit_s = b.time_limit_s;
    o.micro_batch = b.micro_batch;
    o.seq = b.seq;
    Status st = ValidateBenchOptions(o);
    ASSERT_FALSE(st.ok()) << b.flag;
    EXPECT_EQ(st.message().rfind(b.flag, 0), 0u) << st.message();
    EXPECT_FALSE(PlanCases({}, o).ok()) << b.flag;
  }
  BenchOptions edge;
  edge.time_limit_s = 86400;
  edge.micro_batch = 4096;
  edge.seq = int64_t{1} << 20;
  EXPECT_TRUE(ValidateBenchOptions(edge).ok());
}

TEST(BenchPlan, ModelAddsLayerShapesAndTheTrainingBaseline) {
  BenchOptions o;
  o.model = Model("llama-3.1-8b");
  o.only = {"gpu.train", "gpu.gemm.bf16.llama-3-1-8b"};
  auto plan = PlanCases({FakeGpu(0)}, o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  bool train = false;
  for (const auto& c : *plan) train |= c.kind == BenchKind::kLayerSequence;
  EXPECT_TRUE(train);
  EXPECT_GT(plan->size(), 4u);
}

// The model's linear-layer shapes are also planned in FP8 (not the batched attention cores), and skipped with
// the reason on a GPU without FP8.
TEST(BenchPlan, ModelShapesAreAlsoPlannedInFp8) {
  BenchOptions o;
  o.model = Model("llama-3.1-8b");
  o.seq = 128;  // a short prompt: M = 128
  o.only = {"gpu.gemm.fp8.llama-3-1-8b"};
  DeviceInfo hopper = FakeGpu(0);
  hopper.compute_capability = "9.0";
  auto plan = PlanCases({hopper}, o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->size(), 4u);  // qkv, attention out, MLP up, MLP down
  for (const auto& c : *plan) {
    EXPECT_EQ(c.precision, Precision::kFp8) << c.name;
    EXPECT_EQ(c.gemms.at(0).m, 128) << c.name;
    EXPECT_TRUE(c.skip_reason.empty()) << c.name << ": " << c.skip_reason;
  }
  DeviceInfo ampere = FakeGpu(0);
  ampere.compute_capability = "8.0";
  auto old = PlanCases({ampere}, o);
  ASSERT_TRUE(old.ok());
  for (const auto& c : *old) EXPECT_NE(c.skip_reason.find("8.9"), std::string::npos) << c.name;
}

// ---- running through a fake device ------------------------------------------------------------

// A scripted GPU backend: bandwidth tests at `fraction` of the H100 datasheet, GEMMs at 75%,
// and optionally a wrong result on one device.
class FakeDevice : public BenchDevice {
 public:
  int gpus = 2;
  double fraction = 0.9;
  int corrupt_device = -1;
  int busy_device = -1;
  std::string unavailable;
  std::string Kind() const override { return "fake"; }
  Status Available() override { return unavailable.empty() ? Status::Ok() : Unsupported(unavailable); }
  Result<std::vector<DeviceInfo>> Devices() override {
    std::vector<DeviceInfo> v;
    for (int i = 0; i < gpus; ++i) v.push_back(FakeGpu(i));
    return v;
  }
  IdleReport CheckIdle(const DeviceInfo& d) override {
    IdleReport r;
    r.known = true;
    if (d.index == busy_device) {
      r.idle = false;
      r.reasons = {"1 other compute process on the GPU"};
    }
    return r;
  }
  Measurement Run(const BenchCase& c) override {
    const GpuSpec& h100 = Gpu("h100");
    Measurement m;
    m.checked = 256;
    m.check_method = "fake";
    m.seconds = {1.0, 1.01, 0.99, 1.0, 1.02};
    if (c.kind == BenchKind::kGemm || c.kind == BenchKind::kLayerSequence) {
      m.work_per_rep = 0.75 * h100.PeakFlops(c.precision).value_or(1e12);
    } else if (c.kind == BenchKind::kLaunchLatency) {
      m.work_per_rep = 1000;
      m.seconds = {0.003, 0.003, 0.003};
    } else {
      m.work_per_rep = fraction * h100.memory_bandwidth_bytes_per_s.value;
    }
    if (c.kind == BenchKind::kMemcpyD2D) m.work_per_rep *= 1.02;
    if (c.device == corrupt_device && c.kind == BenchKind::kMemTriad) m.mismatches = 5;
    return m;
  }
};

BenchEnv Env(BenchDevice* gpu, Isolation* iso) {
  BenchEnv env;
  env.gpu = gpu;
  env.cpu = nullptr;
  env.isolation = iso;
  env.catalog = &Catalog();
  env.expectations = &Expect();
  env.suanli_version = "test";
  env.now_utc = [] { return std::string("2026-01-01T00:00:00Z"); };
  return env;
}

const BenchResult* Find(const BenchRun& run, const std::string& name, const std::string& device) {
  for (const auto& r : run.results)
    if (r.name == name && r.device == device) return &r;
  return nullptr;
}

TEST(BenchRunner, FakeNodeRunsEveryCaseAndJudgesIt) {
  FakeDevice fake;
  fake.corrupt_device = 1;
  auto iso = MakeInProcessIsolation();
  BenchOptions o;
  o.quick = true;
  auto run = RunBench(Env(&fake, iso.get()), o);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  ASSERT_EQ(run->devices.size(), 2u);
  EXPECT_EQ(run->devices[0].catalog_id, "h100-sxm");
  const BenchResult* triad0 = Find(*run, "gpu.mem.triad", "gpu0");
  ASSERT_NE(triad0, nullptr);
  EXPECT_EQ(triad0->state, BenchState::kPass);
  EXPECT_NEAR(*triad0->fraction, 0.9, 1e-9);
  EXPECT_EQ(Find(*run, "gpu.mem.triad", "gpu1")->state, BenchState::kFail);  // wrong result on gpu1
  EXPECT_EQ(Find(*run, "gpu.gemm.bf16.512", "gpu0")->state, BenchState::kPass);
  const BenchResult* harness = Find(*run, "gpu.harness.overhead", "gpu0");
  ASSERT_NE(harness, nullptr);
  EXPECT_NEAR(harness->value, 1 / 1.02, 1e-9);
  EXPECT_EQ(harness->state, BenchState::kPass);
  EXPECT_NE(Find(*run, "gpu.nccl.allreduce", "gpu0"), nullptr);
  EXPECT_NE(Find(*run, "gpu.p2p.1-0", "gpu1"), nullptr);
  EXPECT_EQ(Find(*run, "cpu.mem.triad", "cpu")->state, BenchState::kSkip);  // no CPU backend in this env
  EXPECT_EQ(run->Overall(), BenchState::kFail);
}

TEST(BenchRunner, BusyGpuCapsPassAtWarn) {
  FakeDevice fake;
  fake.busy_device = 0;
  auto iso = MakeInProcessIsolation();
  BenchOptions o;
  o.quick = true;
  o.only = {"gpu.mem.read"};
  auto run = RunBench(Env(&fake, iso.get()), o);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(Find(*run, "gpu.mem.read", "gpu0")->state, BenchState::kWarn);
  EXPECT_NE(Find(*run, "gpu.mem.read", "gpu0")->message.find("not idle"), std::string::npos);
  EXPECT_EQ(Find(*run, "gpu.mem.read", "gpu1")->state, BenchState::kPass);
}

TEST(BenchRunner, NoGpuMeansEveryGpuCaseIsSkipWithTheReason) {
  FakeDevice fake;
  fake.unavailable = "built without CUDA";
  auto iso = MakeInProcessIsolation();
  auto cpu = MakeCpuDevice();
  BenchEnv env = Env(&fake, iso.get());
  env.cpu = cpu.get();
  BenchOptions o;
  o.quick = true;
  o.only = {"gpu.mem", "cpu.gemm.fp32"};
  auto run = RunBench(env, o);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->gpu_backend_status, "built without CUDA");
  int skipped = 0;
  for (const auto& r : run->results) {
    if (r.device == "gpu") {
      EXPECT_EQ(r.state, BenchState::kSkip);
      EXPECT_EQ(r.message, "built without CUDA");
      ++skipped;
    }
  }
  EXPECT_EQ(skipped, 5);
  EXPECT_EQ(Find(*run, "cpu.gemm.fp32", "cpu")->state, BenchState::kPass);
  EXPECT_EQ(run->Overall(), BenchState::kPass);
}

TEST(BenchRunner, HungOrFailingGpuDiscoveryIsErrorNotSkip) {
  class Broken : public FakeDevice {
   public:
    bool hang = false;
    Result<std::vector<DeviceInfo>> Devices() override {
      if (hang)
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
      return Internal("cudaGetDeviceProperties: unspecified launch failure");
    }
  } broken;
  auto iso = MakeChildProcessIsolation();
  BenchOptions o;
  o.quick = true;
  o.only = {"gpu.mem.read"};
  o.time_limit_s = 0.5;
  auto run = RunBench(Env(&broken, iso.get()), o);
  ASSERT_TRUE(run.ok());
  ASSERT_EQ(run->results.size(), 1u);
  EXPECT_EQ(run->results[0].state, BenchState::kError);
  EXPECT_NE(run->results[0].message.find("unspecified launch failure"), std::string::npos);
  broken.hang = true;
  auto hung = RunBench(Env(&broken, iso.get()), o);
  ASSERT_TRUE(hung.ok());
  EXPECT_EQ(hung->results[0].state, BenchState::kError);
  EXPECT_NE(hung->results[0].message.find("timed out"), std::string::npos);
}

TEST(BenchRunner, OneGpuSkipsPeerAndCollectiveTests) {
  FakeDevice fake;
  fake.gpus = 1;
  auto iso = MakeInProcessIsolation();
  BenchOptions o;
  o.quick = true;
  o.only = {"gpu.nccl", "gpu.p2p"};
  auto run = RunBench(Env(&fake, iso.get()), o);
  ASSERT_TRUE(run.ok());
  const BenchResult* ar = Find(*run, "gpu.nccl.allreduce", "gpu0");
  ASSERT_NE(ar, nullptr);
  EXPECT_EQ(ar->state, BenchState::kSkip);
  EXPECT_EQ(ar->message, "needs two or more GPUs");
}

TEST(BenchRunner, JsonRoundTripKeepsEveryField) {
  FakeDevice fake;
  auto iso = MakeInProcessIsolation();
  BenchOptions o;
  o.quick = true;
  o.only = {"gpu.mem.copy", "gpu.gemm.bf16.512"};
  auto run = RunBench(Env(&fake, iso.get()), o);
  ASSERT_TRUE(run.ok());
  const std::string text = BenchRunToJson(*run);
  auto back = BenchRunFromJson(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(BenchRunToJson(*back), text);
  auto j = nlohmann::json::parse(text);
  const auto& r0 = j["results"][0];
  for (const char* key : {"name", "device", "value", "unit", "state", "spread", "peak", "fraction_of_peak"})
    EXPECT_TRUE(r0.contains(key)) << key;
  EXPECT_FALSE(BenchRunFromJson("{\"schema\": \"other/1\"}").ok());
}

// ---- the watchdog -----------------------------------------------------------------------------

TEST(BenchWatchdog, ChildProcessReturnsOutput) {
  auto iso = MakeChildProcessIsolation();
  auto r = iso->Run([] { return std::string(100000, 'x'); }, 10);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->size(), 100000u);
}

TEST(BenchWatchdog, HungBenchmarkIsKilledAndReportedAsError) {
  auto iso = MakeChildProcessIsolation();
  auto r = iso->Run(
      [] {
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
        return std::string();
      },
      0.3);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("timed out"), std::string::npos);
}

TEST(BenchWatchdog, CrashedBenchmarkIsReportedAsError) {
  auto iso = MakeChildProcessIsolation();
  auto r = iso->Run(
      []() -> std::string {
        raise(SIGKILL);
        return "unreachable";
      },
      10);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("crashed"), std::string::npos);
}

TEST(BenchWatchdog, TimedOutCaseBecomesAnErrorResult) {
  class Hang : public FakeDevice {
    Measurement Run(const BenchCase& c) override {
      if (c.name == "gpu.mem.read")
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
      return FakeDevice::Run(c);
    }
  } hang;
  hang.gpus = 1;
  auto iso = MakeChildProcessIsolation();
  BenchOptions o;
  o.quick = true;
  o.only = {"gpu.mem.read", "gpu.mem.write"};
  o.time_limit_s = 0.5;
  auto run = RunBench(Env(&hang, iso.get()), o);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(Find(*run, "gpu.mem.read", "gpu0")->state, BenchState::kError);
  EXPECT_NE(Find(*run, "gpu.mem.read", "gpu0")->message.find("watchdog"), std::string::npos);
  EXPECT_EQ(Find(*run, "gpu.mem.write", "gpu0")->state, BenchState::kPass);  // the next case still runs
}

TEST(BenchCuda, MissingPluginIsSkipNotCrash) {
  auto dev = MakeCudaDevice("/nonexistent/libsuanli_cuda.so");
  Status s = dev->Available();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("not found"), std::string::npos);
  BenchCase c = MemCase();
  EXPECT_EQ(dev->Run(c).outcome, BenchState::kSkip);
  EXPECT_EQ(MakeCudaDevice("")->Available().message(), "built without CUDA");
}

TEST(BenchCuda, NotAPluginIsSkipWithTheReason) {
  // Any shared library without the entry point: the C library itself.
  auto dev = MakeCudaDevice("/lib/x86_64-linux-gnu/libc.so.6");
  if (!dev->Available().ok()) GTEST_SKIP() << "no libc.so.6 at the Debian path";
  Measurement m = dev->Run(MemCase());
  EXPECT_EQ(m.outcome, BenchState::kSkip);
  EXPECT_NE(m.message.find("suanli_cuda_plugin"), std::string::npos) << m.message;
}

#ifdef SUANLI_TEST_FAKE_PLUGIN
// The real adapter, dlopen and ABI check, through a plugin with synthetic GPUs, in child processes.
TEST(BenchCuda, FakePluginRunsEndToEndThroughTheAdapter) {
  auto dev = MakeCudaDevice(SUANLI_TEST_FAKE_PLUGIN);
  ASSERT_TRUE(dev->Available().ok());
  auto iso = MakeChildProcessIsolation();
  BenchOptions o;
  o.quick = true;
  o.only = {"gpu"};
  auto run = RunBench(Env(dev.get(), iso.get()), o);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  ASSERT_EQ(run->devices.size(), 2u);
  EXPECT_EQ(run->devices[1].uuid, "GPU-fake0000-0000-0000-0000-000000000001");
  EXPECT_EQ(run->devices[1].catalog_id, "h100-sxm");
  EXPECT_EQ(run->devices[1].cuda_version, "13.0 (runtime 13.0)");
  const BenchResult* triad = Find(*run, "gpu.mem.triad", "gpu1");
  ASSERT_NE(triad, nullptr);
  EXPECT_EQ(triad->state, BenchState::kPass);
  EXPECT_NEAR(*triad->fraction, 0.9, 0.01);
  EXPECT_EQ(Find(*run, "gpu.harness.overhead", "gpu0")->state, BenchState::kPass);
  EXPECT_EQ(Find(*run, "gpu.nccl.allreduce", "gpu0")->state, BenchState::kPass);
  EXPECT_NEAR(Find(*run, "gpu.launch_latency", "gpu0")->value, 2.5e-6, 0.05e-6);
  EXPECT_EQ(run->Overall(), BenchState::kPass);
  auto cal = CalibrationFromResults(run->results, run->devices[0], run->started_at);
  ASSERT_TRUE(cal.ok());
  auto back = ParseCalibrationToml(CalibrationToToml(*cal), "exported.toml");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_NEAR(*back->memory_bandwidth_bytes_per_s, 0.9 * 3.35e12, 0.02e12);
  EXPECT_EQ(back->gemm.at(Precision::kBf16).size(), 2u);
  EXPECT_GT(back->link_bandwidth_bytes_per_s.at("p2p"), 0);
}

// NVML through a fake library: serial and driver version recorded, a busy or hot GPU caps PASS at
// WARN with the reason, an idle one is untouched; and the identity reaches the store.
TEST(BenchCuda, IdleCheckAndIdentityComeFromNvml) {
  auto dev = MakeCudaDevice(SUANLI_TEST_FAKE_PLUGIN, SUANLI_TEST_FAKE_NVML);
  setenv("SUANLI_FAKE_NVML_BUSY", "1", 1);
  auto iso = MakeChildProcessIsolation();
  BenchOptions o;
  o.quick = true;
  o.only = {"gpu.mem.read"};
  auto run = RunBench(Env(dev.get(), iso.get()), o);
  unsetenv("SUANLI_FAKE_NVML_BUSY");
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  ASSERT_EQ(run->devices.size(), 2u);
  EXPECT_EQ(run->devices[1].serial, "1650000000001");
  EXPECT_EQ(run->devices[0].driver_version, "580.105.08");
  const IdleReport& busy = run->idle.at(1);
  EXPECT_TRUE(busy.known);
  EXPECT_FALSE(busy.idle);
  EXPECT_EQ(busy.compute_processes.value_or(-1), 1);
  EXPECT_EQ(busy.sm_clock_max_mhz.value_or(0), 1980);
  EXPECT_TRUE(run->idle.at(0).idle);
  EXPECT_EQ(Find(*run, "gpu.mem.read", "gpu0")->state, BenchState::kPass);
  const BenchResult* r1 = Find(*run, "gpu.mem.read", "gpu1");
  EXPECT_EQ(r1->state, BenchState::kWarn);
  EXPECT_NE(r1->message.find("1 other compute process"), std::string::npos) << r1->message;
  EXPECT_NE(r1->message.find("utilisation 60%"), std::string::npos) << r1->message;

  setenv("SUANLI_FAKE_NVML_HOT", "0", 1);
  auto hot = RunBench(Env(dev.get(), iso.get()), o);
  unsetenv("SUANLI_FAKE_NVML_HOT");
  ASSERT_TRUE(hot.ok());
  EXPECT_EQ(Find(*hot, "gpu.mem.read", "gpu0")->state, BenchState::kWarn);
  EXPECT_NE(Find(*hot, "gpu.mem.read", "gpu0")->message.find("slowdown threshold"), std::string::npos);
}
#endif

TEST(BenchCuda, WithoutNvmlTheIdleStateIsUnknownNotIdle) {
  auto dev = MakeCudaDevice("/nonexistent/plugin.so", "/nonexistent/libnvidia-ml.so.1");
  DeviceInfo d = FakeGpu(0);
  IdleReport r = dev->CheckIdle(d);
  EXPECT_FALSE(r.known);
  EXPECT_TRUE(r.reasons.empty());
}

}  // namespace
}  // namespace suanli
