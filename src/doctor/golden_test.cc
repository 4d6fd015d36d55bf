// Golden tests: each fixture under tests/golden/doctor -> the findings it must produce. The
// real nvidia-smi captures of healthy machines must produce no WARN, FAIL or ERROR.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "suanli/doctor.h"

namespace suanli::doctor {
namespace {

const DoctorKnowledge& K() {
  static const DoctorKnowledge k = [] {
    auto r = DoctorKnowledge::LoadEmbedded();
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? std::move(r).value() : DoctorKnowledge{};
  }();
  return k;
}

std::string Read(const std::string& rel) {
  std::ifstream f(std::string(SUANLI_SOURCE_DIR) + "/tests/golden/doctor/" + rel, std::ios::binary);
  EXPECT_TRUE(f.good()) << rel;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

enum Kind { kKernel, kXml, kCsv, kApp, kProm };
struct Case {
  const char* name;
  std::vector<std::pair<Kind, const char*>> files;
  std::vector<std::string> facts;
  std::vector<std::string> expect;  // "STATE code" or "STATE code @bus" that must be present
  State overall;
};

DoctorReport RunCase(const Case& c, bool streamed = false) {
  DoctorInputs in;
  for (const auto& [kind, file] : c.files) {
    TextInput t{file, Read(file)};
    switch (kind) {
      case kKernel: {
        // Whole-text and streamed (7-byte pieces) paths must give the same findings.
        if (!streamed) {
          in.kernel_logs.push_back(t);
        } else {
          KernelLogScanner sc(t.name);
          for (std::size_t i = 0; i < t.text.size(); i += 7) sc.Feed(std::string_view(t.text).substr(i, 7));
          in.kernel_logs_parsed.push_back(sc.Finish());
        }
        break;
      }
      case kXml: in.smi_xml.push_back(t); break;
      case kCsv: in.smi_csv.push_back(t); break;
      case kApp: in.app_logs.push_back(t); break;
      case kProm: in.prometheus.push_back(t); break;
    }
  }
  for (const auto& f : c.facts) EXPECT_TRUE(AddFact(f, &in).ok());
  return Diagnose(in, K());
}

std::set<std::string> Keys(const DoctorReport& r) {
  std::set<std::string> s;
  for (const auto& f : r.findings) {
    s.insert(std::string(StateName(f.state)) + " " + f.code);
    if (!f.pci_bus_id.empty()) s.insert(std::string(StateName(f.state)) + " " + f.code + " @" + f.pci_bus_id);
    if (!f.host.empty()) s.insert(std::string(StateName(f.state)) + " " + f.code + " @" + f.host);
  }
  return s;
}

std::string Dump(const DoctorReport& r) {
  std::string s;
  for (const auto& f : r.findings) s += std::string(StateName(f.state)) + " " + f.code + " " + f.pci_bus_id + " " + f.title + "\n";
  return s;
}

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      // ---- real captures of healthy machines: no false alarms
      {"real a100 xml", {{kXml, "real/qx-a100.xml"}}, {}, {"PASS thermal.temperature"}, State::kPass},
      {"real b200 xml", {{kXml, "real/qx-b200.xml"}}, {}, {"PASS thermal.temperature"}, State::kPass},
      {"real gb200 xml", {{kXml, "real/qx-gb200.xml"}}, {}, {"PASS thermal.temperature"}, State::kPass},
      {"real gb300 xml", {{kXml, "real/qx-gb300.xml"}}, {}, {"PASS thermal.temperature"}, State::kPass},
      {"real h100 xml", {{kXml, "real/qx-h100.xml"}}, {}, {"PASS pcie.link_degraded"}, State::kPass},
      {"real l40s xml (x8 at idle)", {{kXml, "real/qx-l40s.xml"}}, {}, {"SKIP pcie.link_degraded"}, State::kPass},
      {"real t4 xml (x8 at idle)", {{kXml, "real/qx-t4.xml"}}, {}, {"SKIP pcie.link_degraded"}, State::kPass},
      {"real h100 idle csv", {{kCsv, "real/h100-idle-gpu.csv"}, {kCsv, "real/h100-idle-apps.csv"}}, {}, {"PASS mig.state"}, State::kPass},
      {"real h100 load csv (MIG, 3 processes)", {{kCsv, "real/h100-load-gpu.csv"}, {kCsv, "real/h100-load-apps.csv"}}, {},
       {"PASS gpu.shared", "PASS mig.state"}, State::kPass},
      {"real h200 idle csv", {{kCsv, "real/h200-idle-gpu.csv"}, {kCsv, "real/h200-idle-apps.csv"}}, {}, {}, State::kPass},
      {"real h200 load csv", {{kCsv, "real/h200-load-gpu.csv"}, {kCsv, "real/h200-load-apps.csv"}}, {}, {}, State::kPass},
      {"real rtx4080s idle csv", {{kCsv, "real/rtx4080s-idle-gpu.csv"}, {kCsv, "real/rtx4080s-idle-apps.csv"}}, {}, {}, State::kPass},
      {"real rtx4080s load csv (2 ffmpeg at 7%)", {{kCsv, "real/rtx4080s-load-gpu.csv"}, {kCsv, "real/rtx4080s-load-apps.csv"}}, {},
       {"PASS gpu.shared"}, State::kPass},
      // ---- kernel logs
      {"xid 79 burst", {{kKernel, "fixtures/kernel-xid79.log"}}, {},
       {"FAIL xid.79 @0000:91:00.0", "WARN xid.45 @0000:91:00.0"}, State::kFail},
      {"xid 48 + 63 + 45 + 154", {{kKernel, "fixtures/kernel-xid48-63.log"}}, {},
       {"FAIL xid.48 @0000:3b:00.0", "FAIL xid.63", "WARN xid.45", "FAIL xid.154"}, State::kFail},
      {"xid 94 + 63", {{kKernel, "fixtures/kernel-xid94-63.log"}}, {}, {"FAIL xid.94", "WARN xid.63", "WARN xid.45"}, State::kFail},
      {"xid 45 alone", {{kKernel, "fixtures/kernel-xid45-alone.log"}}, {}, {"WARN xid.45"}, State::kWarn},
      {"old formats, SXid, NVLink, mismatch", {{kKernel, "fixtures/kernel-mixed-old.log"}}, {},
       {"WARN xid.13 @0000:01:00.0", "WARN xid.31", "WARN sxid.12028", "FAIL sxid.20034", "FAIL xid.74", "WARN xid.149",
        "FAIL xid.154 @0009:01:00.0", "FAIL env.nvml_mismatch"},
       State::kFail},
      {"clean kernel log", {{kKernel, "fixtures/kernel-clean.log"}}, {}, {"PASS kernel.clean"}, State::kPass},
      {"xid 79 mapped to GPU index via XML", {{kKernel, "fixtures/kernel-xid79.log"}, {kXml, "fixtures/smi-8gpu-bus91.xml"}}, {},
       {"FAIL xid.79 @0000:91:00.0"}, State::kFail},
      // ---- application logs
      {"oom fragmentation", {{kApp, "fixtures/app-oom-fragmentation.log"}}, {}, {"FAIL oom.fragmentation"}, State::kFail},
      {"oom shortage (old message)", {{kApp, "fixtures/app-oom-shortage.log"}}, {}, {"FAIL oom.out_of_memory"}, State::kFail},
      {"nccl sockets", {{kApp, "fixtures/app-nccl-socket.log"}}, {}, {"WARN nccl.socket_transport"}, State::kWarn},
      {"nccl timeout", {{kApp, "fixtures/app-nccl-timeout.log"}}, {}, {"FAIL nccl.timeout"}, State::kFail},
      {"env errors", {{kApp, "fixtures/app-env-errors.log"}}, {},
       {"FAIL env.driver_too_old", "FAIL env.fork_after_cuda_init", "FAIL app.illegal_memory_access"}, State::kFail},
      {"arch not in wheel (log only)", {{kApp, "fixtures/app-arch.log"}}, {}, {"FAIL env.arch_not_in_wheel"}, State::kFail},
      // ---- facts
      {"driver 525 + cu124: minor-version compat only", {}, {"torch=2.4.0+cu124", "driver=525.60.13"},
       {"WARN env.driver_too_old"}, State::kWarn},
      {"driver 535 + cu130: too old", {}, {"torch=2.9.0+cu130", "driver=535.104.05"}, {"FAIL env.driver_too_old"}, State::kFail},
      {"driver 550 + cu121: fine", {}, {"torch=2.3.1+cu121", "driver=550.54.15"}, {"PASS env.driver_too_old"}, State::kPass},
      {"B200 with a cu121 wheel", {{kXml, "real/qx-b200.xml"}}, {"torch=2.5.1+cu121"}, {"FAIL env.arch_not_in_wheel"}, State::kFail},
      {"T4 with cu128 (2.8) is fine, P100 is not", {{kXml, "real/qx-t4.xml"}}, {"torch=2.8.0+cu128"}, {"PASS env.driver_too_old"},
       State::kPass},
      {"cpu torch on a GPU machine", {{kXml, "real/qx-a100.xml"}}, {"torch=2.4.0+cpu"}, {"FAIL env.torch_cpu_only"}, State::kFail},
      // ---- fleet
      {"dcgm fleet: one hot GPU, one Xid 79",
       {{kProm, "fixtures/metrics-node-1.prom"}, {kProm, "fixtures/metrics-node-2.prom"}, {kProm, "fixtures/metrics-node-3.prom"}},
       {},
       {"FAIL thermal.throttle @node-2", "WARN peers.outlier @node-2", "FAIL xid.79 @node-3"},
       State::kFail},
      // ---- telemetry failures (own XML fixture built from the A100 capture)
      {"degraded a100", {{kXml, "fixtures/smi-a100-degraded.xml"}}, {},
       {"FAIL thermal.throttle", "WARN pcie.link_degraded", "FAIL ecc.uncorrectable", "WARN memory.row_remap_pending",
        "WARN power.cap", "WARN gpu.shared", "FAIL thermal.temperature"},
       State::kFail},
  };
  return cases;
}

TEST(DoctorGolden, EveryFixtureGivesItsFindings) {
  for (const auto& c : Cases()) {
    SCOPED_TRACE(c.name);
    for (bool streamed : {false, true}) {
      SCOPED_TRACE(streamed ? "streamed" : "whole");
      DoctorReport r = RunCase(c, streamed);
      auto keys = Keys(r);
      for (const auto& e : c.expect) EXPECT_TRUE(keys.count(e)) << "missing '" << e << "' in:\n" << Dump(r);
      EXPECT_EQ(StateName(r.overall), std::string(StateName(c.overall))) << Dump(r);
    }
  }
}

TEST(DoctorGolden, FleetRanksTheBadNodeFirst) {
  Case c{"fleet", {{kProm, "fixtures/metrics-node-1.prom"}, {kProm, "fixtures/metrics-node-2.prom"}, {kProm, "fixtures/metrics-node-3.prom"}}, {}, {}, State::kFail};
  DoctorReport r = RunCase(c);
  ASSERT_EQ(r.gpus.size(), 12u);
  EXPECT_EQ(r.gpus[0].host, "node-2");
  EXPECT_EQ(r.gpus[0].index, 3);
  EXPECT_EQ(r.gpus[0].state, State::kFail);
  EXPECT_EQ(r.gpus[11].state, State::kPass);
}

TEST(DoctorGolden, KernelXidIsMappedToTheGpuIndexByBusId) {
  // smi-8gpu-bus91.xml is the H100 capture with GPU 6 moved to bus 91: the Xid 79 names bus 91.
  Case c{"map", {{kKernel, "fixtures/kernel-xid79.log"}, {kXml, "fixtures/smi-8gpu-bus91.xml"}}, {}, {}, State::kFail};
  DoctorReport r = RunCase(c);
  bool found = false;
  for (const auto& f : r.findings)
    if (f.code == "xid.79") {
      found = true;
      EXPECT_EQ(f.gpu_index, 6);
    }
  EXPECT_TRUE(found);
  for (const auto& g : r.gpus)
    if (g.index == 6) {
      EXPECT_EQ(g.state, State::kFail);
    }
}

TEST(DoctorGolden, GpusNamedOnlyByTheKernelLogAreSummarised) {
  Case c{"k", {{kKernel, "fixtures/kernel-mixed-old.log"}}, {}, {}, State::kFail};
  DoctorReport r = RunCase(c);
  std::set<std::string> buses;
  for (const auto& g : r.gpus) buses.insert(g.pci_bus_id);
  EXPECT_TRUE(buses.count("0000:01:00.0"));   // Xid 13/31
  EXPECT_TRUE(buses.count("0009:01:00.0"));   // Xid 149/154
  EXPECT_FALSE(buses.count("0000:05:00.0"));  // an NVSwitch (SXid), not a GPU
  ASSERT_FALSE(r.gpus.empty());
  EXPECT_EQ(r.gpus[0].state, State::kFail);
}

TEST(DoctorGolden, EvidenceCarriesFileAndLine) {
  Case c{"xid79", {{kKernel, "fixtures/kernel-xid79.log"}}, {}, {}, State::kFail};
  DoctorReport r = RunCase(c);
  const Finding* x = nullptr;
  for (const auto& f : r.findings)
    if (f.code == "xid.79") x = &f;
  ASSERT_NE(x, nullptr);
  ASSERT_FALSE(x->evidence.empty());
  EXPECT_EQ(x->evidence[0].file, "fixtures/kernel-xid79.log");
  EXPECT_EQ(x->evidence[0].line, 6);
  EXPECT_NE(x->action.find("Drain"), std::string::npos);
}

}  // namespace
}  // namespace suanli::doctor
