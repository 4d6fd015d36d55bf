// The live path through fakes: a machine profile (nvidia-smi XML) as the GPU backend and a
// fake host (files, environment, commands), so it runs on machines without a GPU.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "suanli/doctor.h"

namespace suanli::doctor {
namespace {

std::string ReadGolden(const std::string& rel) {
  std::ifstream f(std::string(SUANLI_SOURCE_DIR) + "/tests/golden/doctor/" + rel, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class FakeHost : public HostProbe {
 public:
  std::map<std::string, std::string> files, env;
  std::map<std::string, std::string> commands;  // argv[0] -> output
  std::optional<std::string> ReadFile(const std::string& p) override {
    auto it = files.find(p);
    return it == files.end() ? std::nullopt : std::optional<std::string>(it->second);
  }
  std::optional<std::string> GetEnv(const std::string& n) override {
    auto it = env.find(n);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  }
  std::map<std::string, std::string> Environ() override { return env; }
  std::optional<std::string> Run(const std::vector<std::string>& argv) override {
    std::string key = argv[0];
    if (argv.size() > 1) key += " " + argv[1];
    auto it = commands.find(key);
    return it == commands.end() ? std::nullopt : std::optional<std::string>(it->second);
  }
  std::vector<std::string> ListDir(const std::string& p) override {
    if (p == "/usr/local") return {"bin", "cuda-12.4", "lib"};
    if (p == "/sys/bus/pci/devices") {
      std::vector<std::string> out;
      for (const auto& [path, _] : files)
        if (path.rfind("/sys/bus/pci/devices/", 0) == 0 && path.size() > 34 && path.substr(path.size() - 7) == "/vendor")
          out.push_back(path.substr(21, path.size() - 21 - 7));
      return out;
    }
    return {};
  }
};

const DoctorKnowledge& K() {
  static const DoctorKnowledge k = std::move(DoctorKnowledge::LoadEmbedded()).value();
  return k;
}

TEST(DoctorLive, FakeMachineWithOldDriverAndNewWheel) {
  auto backend = MakeFakeBackend(ReadGolden("real/qx-a100.xml"), "a100");
  ASSERT_TRUE(backend.ok()) << backend.status().message();
  FakeHost host;
  host.files["/proc/driver/nvidia/version"] =
      "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15  Thu Jan 9 2025\nGCC version:  gcc 12\n";
  host.commands["dmesg"] = ReadGolden("fixtures/kernel-xid94-63.log");
  host.commands["python3 -c"] = "\n/usr/lib/python3.11\n/opt/venv/lib/python3.11/site-packages\n";
  host.files["/opt/venv/lib/python3.11/site-packages/torch/version.py"] =
      "from typing import Optional\n__version__ = '2.9.0+cu130'\ndebug = False\ncuda: Optional[str] = '13.0'\n";
  host.env["CUDA_VISIBLE_DEVICES"] = "0";
  host.files["/proc/sys/kernel/hostname"] = "gpu-node-07\n";
  host.commands["ldconfig -p"] =
      "812 libs found in cache `/etc/ld.so.cache'\n\tlibcudart.so.12 (libc6,x86-64) => /usr/local/cuda/lib64/libcudart.so.12\n"
      "\tlibcuda.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcuda.so.1\n\tlibc.so.6 (libc6,x86-64) => /lib/libc.so.6\n";
  host.env["NCCL_IB_DISABLE"] = "1";
  DoctorInputs in;
  CollectLive(host, **backend, &in);
  EXPECT_EQ(in.gpus.size(), 1u);
  EXPECT_EQ(in.facts["torch"], "2.9.0+cu130");
  EXPECT_EQ(in.facts["torch_cuda"], "13.0");
  EXPECT_EQ(in.facts["kernel_module_version"], "570.86.15");
  EXPECT_EQ(in.facts["cuda_toolkits"], "12.4");
  EXPECT_EQ(in.facts["hostname"], "gpu-node-07");
  EXPECT_EQ(in.facts["cuda_libraries"], "libcuda.so.1,libcudart.so.12");
  EXPECT_EQ(in.facts["nccl_ib_disable"], "1");
  ASSERT_EQ(in.kernel_logs.size(), 1u);
  DoctorReport r = Diagnose(in, K());
  bool driver_old = false, xid94 = false;
  for (const auto& f : r.findings) {
    driver_old |= f.code == "env.driver_too_old" && f.state == State::kFail;
    xid94 |= f.code == "xid.94";
  }
  EXPECT_TRUE(driver_old);  // the A100 profile's driver 570 < 580 needed by CUDA 13
  EXPECT_TRUE(xid94);
}

void AddPciDevice(FakeHost& h, const std::string& bus, const std::string& vendor, const std::string& cls) {
  h.files["/sys/bus/pci/devices/" + bus + "/vendor"] = vendor + "\n";
  h.files["/sys/bus/pci/devices/" + bus + "/class"] = cls + "\n";
}

bool HasFinding(const DoctorReport& r, const std::string& code, State st) {
  for (const auto& f : r.findings)
    if (f.code == code && f.state == st) return true;
  return false;
}

TEST(DoctorLive, NoNvmlAndNoGpuIsSkipNotCrash) {
  auto backend = MakeUnavailableBackend("NVML not available: libnvidia-ml.so.1 could not be loaded");
  FakeHost host;
  AddPciDevice(host, "0000:00:00.0", "0x8086", "0x060000");
  DoctorInputs in;
  CollectLive(host, *backend, &in);
  DoctorReport r = Diagnose(in, K());
  EXPECT_TRUE(HasFinding(r, "nvml.unavailable", State::kSkip));
  EXPECT_TRUE(HasFinding(r, "gpu.none", State::kSkip));
}

TEST(DoctorLive, GpuOnPciButNoDriverIsFail) {
  auto backend = MakeUnavailableBackend("nvmlInit failed: Driver Not Loaded (NVML error 9)");
  FakeHost host;
  AddPciDevice(host, "0000:17:00.0", "0x10de", "0x030200");
  AddPciDevice(host, "0000:05:00.0", "0x10de", "0x068000");  // an NVSwitch bridge: not a GPU
  DoctorInputs in;
  CollectLive(host, *backend, &in);
  EXPECT_EQ(in.facts["pci_nvidia_gpus"], "0000:17:00.0");
  DoctorReport r = Diagnose(in, K());
  EXPECT_TRUE(HasFinding(r, "env.driver_not_loaded", State::kFail));
}

TEST(DoctorLive, GpuOnPciMissingFromTheDriverIsFail) {
  auto backend = MakeFakeBackend(ReadGolden("real/qx-a100.xml"), "a100");  // one GPU at 0000:06:00.0
  ASSERT_TRUE(backend.ok());
  FakeHost host;
  AddPciDevice(host, "0000:06:00.0", "0x10de", "0x030200");
  AddPciDevice(host, "0000:07:00.0", "0x10de", "0x030200");
  DoctorInputs in;
  CollectLive(host, **backend, &in);
  DoctorReport r = Diagnose(in, K());
  EXPECT_TRUE(HasFinding(r, "gpu.missing", State::kFail));
}

TEST(DoctorLive, RealNvmlBackendNeverCrashes) {
  // On a machine without a driver this reports "not available"; with one it returns GPUs.
  auto nvml = MakeNvmlBackend();
  auto q = nvml->Query();
  if (!q.ok()) {
    EXPECT_FALSE(q.status().message().empty());
  }
}

TEST(DoctorLive, CollectWritesABundleThatLoadsBack) {
  auto backend = MakeFakeBackend(ReadGolden("fixtures/smi-a100-degraded.xml"), "degraded");
  ASSERT_TRUE(backend.ok());
  FakeHost host;
  host.commands["dmesg"] = ReadGolden("fixtures/kernel-xid79.log");
  host.commands["nvidia-smi -q"] = ReadGolden("fixtures/smi-a100-degraded.xml");
  const std::string dir = (std::filesystem::temp_directory_path() / "suanli_doctor_bundle_test").string();
  std::filesystem::remove_all(dir);
  auto files = WriteBundle(host, **backend, dir);
  ASSERT_TRUE(files.ok()) << files.status().message();
  EXPECT_GE(files->size(), 4u);
  DoctorInputs in;
  ASSERT_TRUE(LoadBundle(dir, &in).ok());
  EXPECT_EQ(in.kernel_logs_parsed.size(), 1u);  // kernel logs are streamed
  EXPECT_EQ(in.smi_xml.size(), 1u);
  EXPECT_EQ(in.smi_csv.size(), 1u);  // nvml.csv
  DoctorReport r = Diagnose(in, K());
  std::set<std::string> codes;
  for (const auto& f : r.findings) codes.insert(f.code);
  EXPECT_TRUE(codes.count("xid.79"));
  EXPECT_TRUE(codes.count("thermal.throttle"));
  EXPECT_TRUE(codes.count("ecc.uncorrectable"));
  std::filesystem::remove_all(dir);
  DoctorInputs empty;
  EXPECT_FALSE(LoadBundle(dir, &empty).ok());
}

}  // namespace
}  // namespace suanli::doctor
