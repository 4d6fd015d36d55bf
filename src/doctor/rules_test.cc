// Rule-level tests on hand-built telemetry: throttle attribution, peers, exit codes, knowledge.
#include <gtest/gtest.h>

#include <limits>

#include "suanli/doctor.h"

namespace suanli::doctor {
namespace {

const DoctorKnowledge& K() {
  static const DoctorKnowledge k = std::move(DoctorKnowledge::LoadEmbedded()).value();
  return k;
}

const Finding* Find(const DoctorReport& r, const std::string& code, std::optional<int> gpu = std::nullopt) {
  for (const auto& f : r.findings)
    if (f.code == code && (!gpu || f.gpu_index == gpu)) return &f;
  return nullptr;
}

GpuTelemetry Busy(int i) {
  GpuTelemetry g;
  g.origin = "test";
  g.index = i;
  g.pci_bus_id = "0000:1" + std::to_string(i) + ":00.0";
  g.name = "NVIDIA H100 80GB HBM3";
  g.util_gpu_pct = 99;
  g.temp_c = 60;
  g.power_w = 650;
  g.power_limit_w = 700;
  g.sm_clock_mhz = 1980;
  return g;
}

TEST(DoctorKnowledgeData, CatalogCoversTheMainXidTable) {
  for (int code : {8, 13, 31, 32, 38, 43, 45, 48, 61, 62, 63, 64, 68, 69, 74, 79, 92, 94, 95, 109, 110, 119, 120, 121,
                   140, 143, 144, 145, 146, 147, 148, 149, 150, 151, 154, 155, 156, 157, 158, 159}) {
    const XidInfo* x = K().FindXid(code);
    ASSERT_NE(x, nullptr) << code;
    EXPECT_FALSE(x->source.empty());
    EXPECT_FALSE(x->action.empty());
  }
  ASSERT_NE(K().FindSxid(20034), nullptr);
  EXPECT_EQ(K().FindSxid(19049)->fatality, "non-fatal");  // the narrow entry wins over 19047-19071
  EXPECT_EQ(K().FindSxid(23005)->fatality, "always fatal");
}

TEST(DoctorKnowledgeData, RejectsUnknownKeysAndMissingSources) {
  auto r = DoctorKnowledge::FromText("[sources]\na = \"x\"\n[[xid]]\ncode = 1\nmnemonic = \"M\"\ndescription = \"d\"\n"
                                     "severity = \"fatal\"\nimmediate = \"I\"\ninvestigatory = \"I\"\ncauses = \"c\"\n"
                                     "action = \"a\"\nsource = \"b\"\n",
                                     "[sources]\na = \"x\"\n", "[sources]\na = \"x\"\n[threshold]\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("source 'b'"), std::string::npos);
  r = DoctorKnowledge::FromText("[sources]\na = \"x\"\n[[xid]]\ncodee = 1\n", "", "");
  ASSERT_FALSE(r.ok());
}

TEST(DoctorRules, ThrottleIsAttributedToItsCause) {
  DoctorInputs in;
  GpuTelemetry g = Busy(0);
  g.thr_sw_power_cap = true;
  g.power_limit_w = 500;
  g.power_default_limit_w = 700;
  g.power_w = 499;
  in.gpus.push_back(g);
  DoctorReport r = Diagnose(in, K());
  const Finding* f = Find(r, "power.cap");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->state, State::kWarn);
  EXPECT_NE(f->action.find("below the default"), std::string::npos);
  EXPECT_EQ(Find(r, "thermal.throttle"), nullptr);
  EXPECT_EQ(ExitCodeForState(r.overall), kExitWarn);
}

TEST(DoctorRules, BusyGpuAtLowPowerAndPeerOutlier) {
  DoctorInputs in;
  for (int i = 0; i < 4; ++i) in.gpus.push_back(Busy(i));
  in.gpus[2].power_w = 300;
  in.gpus[2].sm_clock_mhz = 1400;
  DoctorReport r = Diagnose(in, K());
  ASSERT_NE(Find(r, "power.low_draw", 2), nullptr);
  const Finding* p = Find(r, "peers.outlier", 2);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->evidence.size(), 2u);  // power and clock
  EXPECT_EQ(Find(r, "peers.outlier", 0), nullptr);
}

TEST(DoctorRules, MemoryFullWhileIdleAndMigPending) {
  DoctorInputs in;
  GpuTelemetry g = Busy(0);
  g.util_gpu_pct = 0;
  g.mem_total_mib = 81559;
  g.mem_used_mib = 80000;
  g.mig_current = "Disabled";
  g.mig_pending = "Enabled";
  in.gpus.push_back(g);
  DoctorReport r = Diagnose(in, K());
  EXPECT_NE(Find(r, "memory.full_idle"), nullptr);
  EXPECT_NE(Find(r, "mig.pending_change"), nullptr);
}

TEST(DoctorRules, ExitCodesAreDistinctAndDoNotCollideWithCliCodes) {
  EXPECT_EQ(ExitCodeForState(State::kPass), 0);
  EXPECT_EQ(ExitCodeForState(State::kSkip), 0);
  EXPECT_EQ(ExitCodeForState(State::kWarn), 10);
  EXPECT_EQ(ExitCodeForState(State::kFail), 11);
  EXPECT_EQ(ExitCodeForState(State::kError), 12);
}

TEST(DoctorRules, NothingToDiagnoseIsAnError) {
  DoctorReport r = Diagnose(DoctorInputs{}, K());
  EXPECT_EQ(r.overall, State::kError);
  EXPECT_NE(Find(r, "doctor.no_inputs"), nullptr);
}

TEST(DoctorRules, GarbageInputsGiveErrorFindingsNotCrashes) {
  DoctorInputs in;
  in.smi_xml.push_back({"bad.xml", "<nvidia_smi_log><gpu>"});
  in.smi_csv.push_back({"bad.csv", "\x01\x02\x03"});
  in.prometheus.push_back({"bad.prom", "}{"});
  DoctorReport r = Diagnose(in, K());
  EXPECT_EQ(r.overall, State::kError);
  int errors = 0;
  for (const auto& f : r.findings) errors += f.state == State::kError;
  EXPECT_EQ(errors, 3);
}

// A fuzzer-found input: a last-Xid gauge of 9.2e12 was cast to int (undefined behaviour). Out-of-range,
// fractional or non-finite values are a warning about the scrape, not an Xid.
TEST(DoctorRules, ImpossibleXidGaugeIsReportedNotCast) {
  for (double v : {9.22337e12, 79.5, -3.0, std::numeric_limits<double>::infinity()}) {
    DoctorInputs in;
    GpuTelemetry g = Busy(0);
    g.xid_last = v;
    in.gpus.push_back(g);
    DoctorReport r = Diagnose(in, K());
    const Finding* f = Find(r, "xid.invalid");
    ASSERT_NE(f, nullptr) << v;
    EXPECT_EQ(f->state, State::kWarn);
  }
  DoctorInputs in;
  GpuTelemetry g = Busy(0);
  g.xid_last = 79;
  in.gpus.push_back(g);
  DoctorReport r = Diagnose(in, K());
  EXPECT_NE(Find(r, "xid.79"), nullptr);
  EXPECT_EQ(Find(r, "xid.invalid"), nullptr);
}

TEST(DoctorRules, DriverTooOldNamesTheDriverAndTheWheel) {
  DoctorInputs in;
  ASSERT_TRUE(AddFact("torch=2.6.0+cu126", &in).ok());
  ASSERT_TRUE(AddFact("driver=470.82.01", &in).ok());
  DoctorReport r = Diagnose(in, K());
  const Finding* f = Find(r, "env.driver_too_old");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->state, State::kFail);
  EXPECT_NE(f->action.find("560.28.03"), std::string::npos) << f->action;  // CUDA 12.6 GA minimum
  EXPECT_NE(f->action.find("cu118"), std::string::npos) << f->action;      // the 2.6 wheel that fits 470
  EXPECT_FALSE(AddFact("novalue", &in).ok());
}

// A fact the user types is checked: an unknown key gets "did you mean", and a version that does not read as one
// is an error, not compared as if real (driver=abc once gave a FAIL saying the driver "supports CUDA up to ?").
// A bundle's facts stay lenient (AddFact). Neither bad fact is kept.
TEST(DoctorRules, UserFactsAreCheckedBundleFactsAreNot) {
  DoctorInputs in;
  for (const char* good : {"torch=2.4.0+cu124", "torch=2.5.0a0+git1234", "torch=2.6.0.dev20241112", "driver=550.54.14",
                           "torch=2.0.0.post1", "torch=2.5.0a0+e000cf0ad9.nv24.10", "torch_cuda=None",
                           "torch_cuda=12.4", "compute_cap=9.0", "nccl_version=2.21.5", "TORCH=2.4.1"})
    EXPECT_TRUE(AddUserFact(good, &in).ok()) << good;
  struct Bad {
    const char* fact;
    const char* message;
  };
  for (const Bad& b : {Bad{"driver=abc", "'abc' is not a driver version (e.g. 550.54.14)"},
                       Bad{"driver=580", "is not a driver version"}, Bad{"torch=abc", "is not a torch version"},
                       Bad{"compute_cap=sm90", "is not a compute capability"},
                       Bad{"torch_cuda=cu124", "is not a torch_cuda version"},
                       Bad{"dirver=550.54.14", "unknown fact 'dirver' (did you mean 'driver'?)"}}) {
    DoctorInputs x;
    Status st = AddUserFact(b.fact, &x);
    ASSERT_FALSE(st.ok()) << b.fact;
    EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(st.message().find(b.message), std::string::npos) << st.message();
    EXPECT_TRUE(x.facts.empty()) << b.fact;
  }
  DoctorInputs bundle;
  EXPECT_TRUE(AddFact("gpu_fabric_state=completed", &bundle).ok());
  // A bundle's unreadable driver is an input error and no driver rule runs on it.
  ASSERT_TRUE(AddFact("driver=abc", &bundle).ok());
  ASSERT_TRUE(AddFact("torch=2.6.0+cu126", &bundle).ok());
  DoctorReport r = Diagnose(bundle, K());
  EXPECT_EQ(Find(r, "env.driver_too_old"), nullptr);
  const Finding* bad = Find(r, "input.unreadable");
  ASSERT_NE(bad, nullptr);
  EXPECT_NE(bad->title.find("driver version 'abc' does not read as one"), std::string::npos) << bad->title;
}

}  // namespace
}  // namespace suanli::doctor

namespace suanli::doctor {
namespace {

DoctorReport WithGpuAndTorch(const std::string& name, const std::string& torch) {
  DoctorInputs in;
  GpuTelemetry g;
  g.origin = "test";
  g.index = 0;
  g.name = name;
  in.gpus.push_back(g);
  EXPECT_TRUE(AddFact("torch=" + torch, &in).ok());
  return Diagnose(in, std::move(DoctorKnowledge::LoadEmbedded()).value());
}

bool Has(const DoctorReport& r, const std::string& code) {
  for (const auto& f : r.findings)
    if (f.code == code) return true;
  return false;
}

TEST(DoctorRules, WheelArchitectureCoverage) {
  // P100 (sm_60) is older than everything in the 2.8 cu128 wheel (7.5 and up).
  EXPECT_TRUE(Has(WithGpuAndTorch("Tesla P100-PCIE-16GB", "2.8.0+cu128"), "env.gpu_too_old_for_wheel"));
  // ... but cu126 of the same release still has sm_60.
  EXPECT_FALSE(Has(WithGpuAndTorch("Tesla P100-PCIE-16GB", "2.8.0+cu126"), "env.gpu_too_old_for_wheel"));
  // RTX 5090 (sm_120) is missing from cu126, present in cu128.
  EXPECT_TRUE(Has(WithGpuAndTorch("NVIDIA GeForce RTX 5090", "2.7.1+cu126"), "env.arch_not_in_wheel"));
  EXPECT_FALSE(Has(WithGpuAndTorch("NVIDIA GeForce RTX 5090", "2.7.1+cu128"), "env.arch_not_in_wheel"));
  // A10 (sm_86) runs sm_80 SASS... and the list has 8.6 anyway; H100 with cu118 has sm_90.
  EXPECT_FALSE(Has(WithGpuAndTorch("NVIDIA A10", "2.1.0+cu118"), "env.arch_not_in_wheel"));
  EXPECT_FALSE(Has(WithGpuAndTorch("NVIDIA H100 80GB HBM3", "2.1.0+cu118"), "env.arch_not_in_wheel"));
  // Unknown flavour (no arch list): fall back to the CUDA major's range. CUDA 13 starts at 7.5.
  EXPECT_TRUE(Has(WithGpuAndTorch("Tesla V100-SXM2-32GB", "2.10.0+cu131"), "env.gpu_too_old_for_wheel"));
  EXPECT_FALSE(Has(WithGpuAndTorch("NVIDIA H100 80GB HBM3", "2.10.0+cu131"), "env.gpu_too_old_for_wheel"));
  // GB300 (sm_103): cu130 has 10.0 (same major, lower minor: binary compatible).
  EXPECT_FALSE(Has(WithGpuAndTorch("NVIDIA GB300", "2.9.0+cu130"), "env.arch_not_in_wheel"));
}

}  // namespace
}  // namespace suanli::doctor

namespace suanli::doctor {
namespace {

TEST(DoctorRules, RepeatedIncidentsAreFoldedNotMultiplied) {
  std::string log;
  for (int i = 0; i < 500; ++i)  // one Xid 13 every 120 s: 500 incidents on one GPU
    log += "[" + std::to_string(i * 120) + ".000000] NVRM: Xid (PCI:0000:3b:00): 13, pid=1, name=x, Graphics Exception\n";
  DoctorInputs in;
  in.kernel_logs.push_back({"many.log", log});
  DoctorReport r = Diagnose(in, std::move(DoctorKnowledge::LoadEmbedded()).value());
  int n = 0;
  std::string last;
  for (const auto& f : r.findings)
    if (f.code == "xid.13") {
      ++n;
      if (f.title.find("folded") != std::string::npos) last = f.title;
    }
  EXPECT_EQ(n, 10);
  EXPECT_NE(last.find("10-500 of 500"), std::string::npos) << last;
}

// NUL bytes. Runs of them inside a kernel log that was read (what a file system leaves after a power loss or reset)
// are a WARN naming the first run's line, and the Xid after them still counts; random bytes with NULs among them
// are binary data, an input error; a log without NULs has neither.
TEST(DoctorRules, NulRunsInALogAreAnUncleanStopNotBinaryData) {
  using namespace std::string_literals;
  const std::string crash = "[ 10.0] NVRM: loaded\n"s + std::string(4096, '\0') +
                            "[  0.0] Linux version 6.1\n[ 99.5] NVRM: Xid (PCI:0000:91:00): 79, pid=1, GPU has fallen "
                            "off the bus.\n"s + std::string(16, '\0');
  DoctorInputs in;
  in.kernel_logs.push_back({"kern.log", crash});
  DoctorReport r = Diagnose(in, K());
  const Finding* nul = Find(r, "log.nul_bytes");
  ASSERT_NE(nul, nullptr);
  EXPECT_EQ(nul->state, State::kWarn);
  ASSERT_EQ(nul->evidence.size(), 1u);
  EXPECT_EQ(nul->evidence[0].line, 2);
  EXPECT_NE(nul->evidence[0].text.find("4112 NUL byte(s) in 2 run(s)"), std::string::npos) << nul->evidence[0].text;
  EXPECT_EQ(Find(r, "input.unreadable"), nullptr);
  ASSERT_NE(Find(r, "xid.79"), nullptr);
  EXPECT_EQ(r.overall, State::kFail);

  std::string bin(20000, '\0');
  for (std::size_t i = 0; i < bin.size(); ++i) bin[i] = static_cast<char>(i * 7919 % 251);
  DoctorInputs b;
  b.kernel_logs.push_back({"bin", bin});
  b.app_logs.push_back({"app.bin", bin});
  r = Diagnose(b, K());
  EXPECT_EQ(Find(r, "log.nul_bytes"), nullptr);
  int unreadable = 0;
  for (const auto& f : r.findings)
    if (f.code == "input.unreadable" && f.title.find("binary data, not a text log") != std::string::npos) ++unreadable;
  EXPECT_EQ(unreadable, 2);

  DoctorInputs only_nul;
  only_nul.app_logs.push_back({"zeros.log", std::string(4096, '\0')});
  r = Diagnose(only_nul, K());
  EXPECT_NE(Find(r, "input.unreadable"), nullptr);

  DoctorInputs clean;
  clean.app_logs.push_back({"train.log", "step 1 loss 2.3\n\x1b[32mstep 2\x1b[0m loss 2.2\n"});
  r = Diagnose(clean, K());
  EXPECT_EQ(Find(r, "log.nul_bytes"), nullptr);
  EXPECT_EQ(Find(r, "input.unreadable"), nullptr);
}

}  // namespace
}  // namespace suanli::doctor
