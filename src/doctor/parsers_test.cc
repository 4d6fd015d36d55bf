// Unit tests of the doctor parsers: formats, driver-version differences, hostile input.
#include <gtest/gtest.h>

#include <string>

#include "suanli/doctor.h"

namespace suanli::doctor {
namespace {

TEST(DoctorParse, NormalizesBusIds) {
  EXPECT_EQ(NormalizeBusId("00000000:53:00.0"), "0000:53:00.0");
  EXPECT_EQ(NormalizeBusId("PCI:0000:91:00"), "0000:91:00.0");
  EXPECT_EQ(NormalizeBusId("0000:01:00"), "0000:01:00.0");
  EXPECT_EQ(NormalizeBusId("00000009:01:00.0"), "0009:01:00.0");
  EXPECT_EQ(NormalizeBusId("garbage"), "garbage");
}

TEST(DoctorParse, ComparesDriverVersions) {
  EXPECT_LT(CompareVersions("525.60.13", "550.54.14"), 0);
  EXPECT_EQ(CompareVersions("570.26", "570.26.0"), 0);
  EXPECT_GT(CompareVersions("580.105.08", "580.95.05"), 0);
}

TEST(DoctorParse, KernelLogFormatsOldAndNew) {
  const std::string log =
      "[  12.5] NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
      "Jan 3 kernel: NVRM: Xid (0000:01:00): 13, 0005 00000000\n"
      "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress\n"
      "XID 48 An uncorrectable double bit error (DBE) has been detected on GPU (0000:3b:00.0)\n"
      "random line\n"
      "NVRM: GPU 0000:92:00.0: GPU has fallen off the bus.";
  KernelLogParse p = ParseKernelLog(log, "k.log");
  ASSERT_EQ(p.events.size(), 5u);
  EXPECT_EQ(p.lines, 6);
  EXPECT_EQ(p.nvrm_lines, 3);
  EXPECT_EQ(p.events[0].code, 79);
  EXPECT_EQ(p.events[0].pci_bus_id, "0000:91:00.0");
  ASSERT_TRUE(p.events[0].timestamp_s.has_value());
  EXPECT_DOUBLE_EQ(*p.events[0].timestamp_s, 12.5);
  EXPECT_EQ(p.events[1].code, 13);
  EXPECT_EQ(p.events[1].pci_bus_id, "0000:01:00.0");
  EXPECT_EQ(p.events[2].kind, KernelEventKind::kSxid);
  EXPECT_EQ(p.events[2].code, 12028);
  EXPECT_EQ(p.events[2].severity_word, "Non-fatal");
  EXPECT_EQ(p.events[2].device, "nvidia-nvswitch3");
  EXPECT_EQ(p.events[3].code, 48);
  EXPECT_EQ(p.events[3].pci_bus_id, "0000:3b:00.0");
  EXPECT_EQ(p.events[4].kind, KernelEventKind::kFallenOffBus);
  EXPECT_EQ(p.events[4].line, 6);
}

TEST(DoctorParse, KernelLogSurvivesHostileInput) {
  std::string bin(100000, '\0');
  for (std::size_t i = 0; i < bin.size(); ++i) bin[i] = static_cast<char>(i * 7919);
  bin += "NVRM: Xid (PCI:0000:91:00): ";  // truncated at the end
  KernelLogParse p = ParseKernelLog(bin, "bin");
  EXPECT_TRUE(p.events.empty());
  std::string huge_line(200000, 'a');
  huge_line = "NVRM: Xid (PCI:0000:91:00): 79, " + huge_line + "\n";
  p = ParseKernelLog(huge_line, "long");
  EXPECT_TRUE(p.truncated);
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_LE(p.events[0].text.size(), 310u);
  // A code longer than any Xid's or SXid's is not read as its first 7 digits (which named "Xid 9999999" for
  // 999999999999999999999); the line is not an event. Seven digits still are.
  p = ParseKernelLog("NVRM: Xid (PCI:0000:00:00): 999999999999999999999, pid=x\n"
                     "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12345678, Fatal\n"
                     "XID 12345678 something\n"
                     "NVRM: Xid (PCI:0000:00:00): 1234567, pid=x\n",
                     "long-codes");
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].code, 1234567);
  EXPECT_EQ(p.events[0].line, 4);
}

TEST(DoctorParse, XmlOldAndNewElementNames) {
  const std::string old_xml = R"(<?xml version="1.0" ?><nvidia_smi_log><driver_version>470.82.01</driver_version>
    <gpu id="00000000:3B:00.0"><product_name>Tesla V100-SXM2-32GB</product_name>
    <clocks_throttle_reasons><clocks_throttle_reason_gpu_idle>Not Active</clocks_throttle_reason_gpu_idle>
      <clocks_throttle_reason_hw_thermal_slowdown>Active</clocks_throttle_reason_hw_thermal_slowdown></clocks_throttle_reasons>
    <power_readings><power_draw>250.10 W</power_draw><enforced_power_limit>300.00 W</enforced_power_limit></power_readings>
    <ecc_errors><volatile><single_bit><total>3</total></single_bit><double_bit><total>1</total></double_bit></volatile></ecc_errors>
    <temperature><gpu_temp>84 C</gpu_temp><gpu_temp_slow_threshold>87 C</gpu_temp_slow_threshold></temperature>
    <utilization><gpu_util>N/A</gpu_util></utilization>
    </gpu></nvidia_smi_log>)";
  auto r = ParseSmiXml(old_xml, "old.xml");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 1u);
  const GpuTelemetry& g = (*r)[0];
  EXPECT_EQ(g.pci_bus_id, "0000:3b:00.0");
  EXPECT_EQ(g.driver_version, "470.82.01");
  EXPECT_EQ(g.thr_hw_thermal, true);
  EXPECT_DOUBLE_EQ(*g.power_w, 250.10);
  EXPECT_DOUBLE_EQ(*g.power_limit_w, 300.0);
  EXPECT_EQ(*g.ecc_vol_uncorr, 1);
  EXPECT_EQ(*g.ecc_vol_corr, 3);
  EXPECT_DOUBLE_EQ(*g.temp_slowdown_c, 87);
  EXPECT_FALSE(g.util_gpu_pct.has_value());  // N/A is absent, not zero
}

TEST(DoctorParse, RealXmlCaptures) {
  // Every real capture parses with a bus id, name and temperature per GPU.
  for (const char* f : {"qx-a100.xml", "qx-b200.xml", "qx-gb200.xml", "qx-gb300.xml", "qx-h100.xml", "qx-l40s.xml", "qx-t4.xml"}) {
    SCOPED_TRACE(f);
    FILE* fp = std::fopen((std::string(SUANLI_SOURCE_DIR) + "/tests/golden/doctor/real/" + f).c_str(), "rb");
    ASSERT_NE(fp, nullptr);
    std::string text;
    char buf[65536];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, fp)) > 0) text.append(buf, n);
    std::fclose(fp);
    auto r = ParseSmiXml(text, f);
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_FALSE(r->empty());
    for (const auto& g : *r) {
      EXPECT_FALSE(g.pci_bus_id.empty());
      EXPECT_FALSE(g.name.empty());
      EXPECT_TRUE(g.temp_c.has_value());
      EXPECT_TRUE(g.pcie_width_max.has_value());
    }
    // Truncated XML is an error, not a crash.
    EXPECT_FALSE(ParseSmiXml(text.substr(0, text.size() / 2), f).ok());
  }
}

TEST(DoctorParse, CsvWithUnitsAndBracketedNA) {
  const std::string csv =
      "index, pci.bus_id, name, temperature.gpu, power.draw [W], enforced.power.limit [W], utilization.gpu [%], "
      "clocks_event_reasons.sw_power_cap, pcie.link.gen.gpucurrent, pcie.link.gen.gpumax, pcie.link.width.current, "
      "pcie.link.width.max, remapped_rows.pending\n"
      "0, 00000000:18:00.0, NVIDIA H100 80GB HBM3, 71, 698.12 W, 700.00 W, 100 %, Active, 3, 5, 8, 16, [N/A]\n";
  auto r = ParseSmiCsv(csv, "q.csv");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->gpus.size(), 1u);
  const auto& g = r->gpus[0];
  EXPECT_EQ(g.pci_bus_id, "0000:18:00.0");
  EXPECT_DOUBLE_EQ(*g.power_w, 698.12);
  EXPECT_EQ(*g.thr_sw_power_cap, true);
  EXPECT_EQ(*g.pcie_gen_cur, 3);
  EXPECT_FALSE(g.remap_pending.has_value());
  EXPECT_FALSE(ParseSmiCsv("0, 1, 2\n", "noheader.csv").ok());
}

// NaN, +Inf and -Inf are valid values in Prometheus's text format: samples without a usable value, absent, not
// malformed lines (which made doctor say the scrape was unreadable, exit 12). A number with trailing junk is still
// malformed; a timestamp after the value is fine.
TEST(DoctorParse, PrometheusNanAndInfAreAbsentValuesNotBadLines) {
  const std::string prom =
      "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",Hostname=\"n1\"} NaN\n"
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",Hostname=\"n1\"} +Inf\n"
      "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",Hostname=\"n1\"} -Inf\n"
      "DCGM_FI_DEV_MEM_CLOCK{gpu=\"0\",Hostname=\"n1\"} 1e400\n"
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=\"n1\"} 9.9e+01 1700000000000\n"
      "DCGM_FI_DEV_FB_USED{gpu=\"0\",Hostname=\"n1\"} 1e5x\n";
  auto r = ParsePrometheus(prom, "m.prom");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->samples, 5);
  ASSERT_EQ(r->problems.size(), 1u);
  EXPECT_NE(r->problems[0].find("m.prom:6"), std::string::npos) << r->problems[0];
  ASSERT_EQ(r->gpus.size(), 1u);
  EXPECT_FALSE(r->gpus[0].temp_c.has_value());
  EXPECT_FALSE(r->gpus[0].power_w.has_value());
  EXPECT_FALSE(r->gpus[0].sm_clock_mhz.has_value());
  ASSERT_TRUE(r->gpus[0].util_gpu_pct.has_value());
  EXPECT_DOUBLE_EQ(*r->gpus[0].util_gpu_pct, 99);
}

TEST(DoctorParse, PrometheusLabelsSentinelsAndMig) {
  const std::string prom =
      "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n"
      "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-1\",pci_bus_id=\"00000000:53:00.0\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"n1\"} 64\n"
      "DCGM_FI_DEV_MEMORY_TEMP{gpu=\"0\",Hostname=\"n1\"} 9223372036854775794\n"
      "DCGM_FI_DEV_FB_USED{gpu=\"0\",GPU_I_PROFILE=\"1g.10gb\",GPU_I_ID=\"13\",Hostname=\"n1\"} 9216\n"
      "dcgm_gpu_temp{gpu=\"1\",uuid=\"GPU-2\",hostname=\"n1\"} 55\n"
      "broken{gpu=\"0\" 1\n";
  auto r = ParsePrometheus(prom, "m.prom");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->gpus.size(), 2u);
  EXPECT_EQ(r->gpus[0].host, "n1");
  EXPECT_DOUBLE_EQ(*r->gpus[0].temp_c, 64);
  EXPECT_FALSE(r->gpus[0].mem_temp_c.has_value());  // sentinel
  EXPECT_EQ(r->gpus[0].mig_devices, 1);
  EXPECT_FALSE(r->gpus[0].mem_used_mib.has_value());  // MIG instance value not merged
  EXPECT_DOUBLE_EQ(*r->gpus[1].temp_c, 55);
  EXPECT_EQ(r->problems.size(), 1u);
  EXPECT_FALSE(ParsePrometheus("# only comments\n", "e.prom").ok());
}

TEST(DoctorParse, AppLogOomNumbersBothFormats) {
  auto p = ParseAppLog(
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 1 has a total capacity of 79.15 GiB "
      "of which 12.56 MiB is free. Including non-PyTorch memory, this process has 79.12 GiB memory in use. Of the "
      "allocated memory 77.50 GiB is allocated by PyTorch, and 1.12 GiB is reserved by PyTorch but unallocated.\n",
      "a.log");
  ASSERT_EQ(p.events.size(), 1u);
  const auto& n = p.events[0].numbers;
  EXPECT_NEAR(n.at("tried_gib"), 20.0 / 1024, 1e-9);
  EXPECT_NEAR(n.at("total_gib"), 79.15, 1e-9);
  EXPECT_NEAR(n.at("allocated_gib"), 77.50, 1e-9);
  EXPECT_NEAR(n.at("reserved_unallocated_gib"), 1.12, 1e-9);
  EXPECT_NEAR(n.at("reserved_gib"), 78.62, 1e-9);
  EXPECT_EQ(n.at("gpu"), 1);
  p = ParseAppLog("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 23.69 GiB total capacity; 21.84 GiB "
                  "already allocated; 1.12 GiB free; 22.10 GiB reserved in total by PyTorch)\n",
                  "b.log");
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_NEAR(p.events[0].numbers.at("reserved_unallocated_gib"), 0.26, 1e-9);
  EXPECT_NEAR(p.events[0].numbers.at("free_gib"), 1.12, 1e-9);
}

TEST(DoctorParse, AppLogNcclLines) {
  auto p = ParseAppLog(
      "h:1:1 [0] NCCL INFO Channel 00/0 : 7[7] -> 0[0] [receive] via NET/Socket/0\n"
      "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n"
      "h:1:1 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1.\n"
      "[rank2]:[E ProcessGroupNCCL.cpp:607] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, "
      "OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600010 milliseconds before timing out.\n",
      "n.log");
  ASSERT_EQ(p.events.size(), 4u);
  EXPECT_EQ(p.events[0].kind, AppEventKind::kNcclSocket);
  EXPECT_EQ(p.events[1].kind, AppEventKind::kNcclP2pOrNvls);
  EXPECT_EQ(p.events[2].kind, AppEventKind::kNcclP2pDisabled);
  EXPECT_EQ(p.events[3].kind, AppEventKind::kNcclTimeout);
  EXPECT_EQ(p.events[3].rank, 2);
  EXPECT_EQ(p.events[3].numbers.at("seq"), 7);
}

}  // namespace
}  // namespace suanli::doctor

namespace suanli::doctor {
namespace {

KernelLogParse Chunked(std::string_view text, std::size_t chunk) {
  KernelLogScanner s("k.log");
  for (std::size_t i = 0; i < text.size(); i += chunk) s.Feed(text.substr(i, chunk));
  return s.Finish();
}

TEST(DoctorParse, KernelLogScannerMatchesWholeParseAtEverySplit) {
  const std::string log =
      "[1.0] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15\n"
      "[2.0] NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', GPU has fallen off the bus.\n"
      "noise line without markers\n"
      "\n"
      "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32\n"
      "[3.0] NVRM: Xid (PCI:0000:91:00): 45, pid=1, name=python, Ch 00000010";  // no final newline
  const KernelLogParse whole = ParseKernelLog(log, "k.log");
  ASSERT_EQ(whole.events.size(), 3u);
  ASSERT_EQ(whole.lines, 6);
  for (std::size_t chunk = 1; chunk <= log.size(); ++chunk) {
    SCOPED_TRACE(chunk);
    const KernelLogParse p = Chunked(log, chunk);
    EXPECT_EQ(p.lines, whole.lines);
    EXPECT_EQ(p.nvrm_lines, whole.nvrm_lines);
    ASSERT_EQ(p.events.size(), whole.events.size());
    for (std::size_t i = 0; i < p.events.size(); ++i) {
      EXPECT_EQ(p.events[i].code, whole.events[i].code);
      EXPECT_EQ(p.events[i].line, whole.events[i].line);
      EXPECT_EQ(p.events[i].text, whole.events[i].text);
    }
  }
}

TEST(DoctorParse, KernelLogScannerBoundsAHugeLine) {
  KernelLogScanner s("big");
  std::string piece(1 << 20, 'x');
  s.Feed("NVRM: Xid (PCI:0000:01:00): 13, ");
  for (int i = 0; i < 8; ++i) s.Feed(piece);  // 8 MiB without a newline
  s.Feed("\nNVRM: Xid (PCI:0000:02:00): 31, next\n");
  KernelLogParse p = s.Finish();
  EXPECT_TRUE(p.truncated);
  EXPECT_EQ(p.lines, 2);
  ASSERT_EQ(p.events.size(), 2u);
  EXPECT_EQ(p.events[1].line, 2);
}

}  // namespace
}  // namespace suanli::doctor

namespace suanli::doctor {
namespace {

TEST(DoctorParse, CsvLegacyThrottleNamesAndNounits) {
  // Drivers before the "clocks event" rename (~R535) and --format=csv,nounits.
  const std::string csv =
      "index, pci.bus_id, name, clocks_throttle_reasons.hw_thermal_slowdown, clocks_throttle_reasons.sw_power_cap, "
      "power.draw [W], power.limit [W], temperature.gpu, utilization.gpu [%], memory.used [MiB], memory.total [MiB]\n"
      "0, 00000000:3B:00.0, Tesla V100-SXM2-32GB, Active, Not Active, 291.22, 300.00, 86, 100, 30000, 32768\n";
  auto r = ParseSmiCsv(csv, "legacy.csv");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->gpus.size(), 1u);
  const auto& g = r->gpus[0];
  EXPECT_EQ(g.thr_hw_thermal, true);
  EXPECT_EQ(g.thr_sw_power_cap, false);
  EXPECT_DOUBLE_EQ(*g.power_w, 291.22);
  EXPECT_DOUBLE_EQ(*g.power_limit_w, 300.0);
  EXPECT_DOUBLE_EQ(*g.mem_total_mib, 32768);
}

TEST(DoctorParse, XmlMigDevicesAndProcesses) {
  const std::string xml = R"(<nvidia_smi_log><driver_version>580.105.08</driver_version><gpu id="00000000:53:00.0">
    <product_name>NVIDIA H100 80GB HBM3</product_name><mig_mode><current_mig>Enabled</current_mig><pending_mig>Enabled</pending_mig></mig_mode>
    <mig_devices><mig_device><index>0</index></mig_device><mig_device><index>1</index></mig_device></mig_devices>
    <processes><process_info><gpu_instance_id>1</gpu_instance_id><compute_instance_id>0</compute_instance_id><pid>77</pid>
      <type>C</type><process_name>vllm</process_name><used_memory>9000 MiB</used_memory></process_info>
      <process_info><gpu_instance_id>N/A</gpu_instance_id><pid>12</pid><type>G</type><process_name>Xorg</process_name><used_memory>4 MiB</used_memory></process_info>
    </processes></gpu></nvidia_smi_log>)";
  auto r = ParseSmiXml(xml, "mig.xml");
  ASSERT_TRUE(r.ok());
  const auto& g = (*r)[0];
  EXPECT_EQ(g.mig_devices, 2);
  EXPECT_EQ(*g.mig_current, "Enabled");
  ASSERT_EQ(g.processes.size(), 1u);  // the graphics-only Xorg client is not a compute process
  EXPECT_EQ(g.processes[0].gpu_instance_id, 1);
  EXPECT_DOUBLE_EQ(*g.processes[0].used_memory_mib, 9000);
}

}  // namespace
}  // namespace suanli::doctor
