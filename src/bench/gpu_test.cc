// Tests that need a real GPU: they run the CUDA plugin for real and SKIP, with the reason, on a
// machine without one (or in a build without CUDA). Sizes are small except for the harness
// overhead check, which must use buffers far beyond the L2 to mean anything.
#include <gtest/gtest.h>

#include "suanli/bench.h"

namespace suanli {
namespace {

#ifdef SUANLI_TEST_CUDA_PLUGIN
constexpr const char* kPlugin = SUANLI_TEST_CUDA_PLUGIN;
#else
constexpr const char* kPlugin = "";
#endif

// The GPUs, discovered in a child process (CUDA must never be initialised in the test process,
// which forks for the watchdog tests), or a reason to skip.
std::vector<DeviceInfo> Gpus(BenchDevice* dev, std::string* why) {
  if (!BuiltWithCuda()) {
    *why = "built without CUDA";
    return {};
  }
  Status a = dev->Available();
  if (!a.ok()) {
    *why = a.message();
    return {};
  }
  auto iso = MakeChildProcessIsolation();
  std::vector<DeviceInfo> out;
  auto text = iso->Run(
      [&] {
        auto d = dev->Devices();
        if (!d.ok()) return "E" + d.status().message();
        return "O" + std::to_string(d->size());
      },
      60);
  if (!text.ok()) {
    *why = text.status().message();
    return {};
  }
  if ((*text)[0] == 'E') {
    *why = text->substr(1);
    return {};
  }
  const int n = std::stoi(text->substr(1));
  for (int i = 0; i < n; ++i) {
    DeviceInfo d;
    d.index = i;
    d.is_gpu = true;
    out.push_back(d);
  }
  if (out.empty()) *why = "no CUDA GPU found";
  return out;
}

TEST(BenchGpu, PluginLoadsOrSaysWhyNot) {
  auto dev = MakeCudaDevice(kPlugin);
  std::string why;
  auto gpus = Gpus(dev.get(), &why);
  if (gpus.empty()) {
    EXPECT_FALSE(why.empty());
    GTEST_SKIP() << why;
  }
  SUCCEED();
}

TEST(BenchGpu, EveryQuickCaseRunsAndVerifies) {
  auto dev = MakeCudaDevice(kPlugin);
  std::string why;
  auto gpus = Gpus(dev.get(), &why);
  if (gpus.empty()) GTEST_SKIP() << why;
  CatalogOptions co;
  auto catalog = HardwareCatalog::Load(co);
  ASSERT_TRUE(catalog.ok());
  auto expect = Expectations::LoadEmbedded();
  ASSERT_TRUE(expect.ok());
  auto iso = MakeChildProcessIsolation();
  BenchEnv env;
  env.gpu = dev.get();
  env.isolation = iso.get();
  env.catalog = &*catalog;
  env.expectations = &*expect;
  BenchOptions o;
  o.quick = true;
  o.time_limit_s = 60;
  o.only = {"gpu"};
  auto model = ModelCatalog::Load(co);
  ASSERT_TRUE(model.ok());
  o.model = *model->Resolve("llama-3.2-1b");
  o.seq = 256;
  auto run = RunBench(env, o);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  for (const auto& r : run->results) {
    if (r.name == "gpu.harness.overhead") continue;  // quick buffers fit in L2: not meaningful here
    EXPECT_NE(r.state, BenchState::kError) << r.name << " " << r.device << ": " << r.message;
    EXPECT_EQ(r.mismatches, 0) << r.name << " " << r.device;
    EXPECT_EQ(r.nans, 0) << r.name << " " << r.device;
    if (r.state != BenchState::kSkip) {
      EXPECT_GT(r.checked, 0) << r.name;
    }
  }
}

// The harness itself must not distort what it measures: our copy kernel, timed by the harness,
// within 5% of a bare cudaMemcpy D2D of the same (large) size timed the same way.
TEST(BenchGpu, HarnessOverheadIsWithinAFewPercentOfBareMemcpy) {
  auto dev = MakeCudaDevice(kPlugin);
  std::string why;
  auto gpus = Gpus(dev.get(), &why);
  if (gpus.empty()) GTEST_SKIP() << why;
  CatalogOptions co;
  auto catalog = HardwareCatalog::Load(co);
  auto expect = Expectations::LoadEmbedded();
  auto iso = MakeChildProcessIsolation();
  BenchEnv env;
  env.gpu = dev.get();
  env.isolation = iso.get();
  env.catalog = &*catalog;
  env.expectations = &*expect;
  BenchOptions o;
  o.only = {"gpu.harness.overhead", "gpu.mem.copy", "gpu.mem.memcpy_d2d"};
  auto run = RunBench(env, o);
  ASSERT_TRUE(run.ok());
  for (const auto& r : run->results) {
    std::fprintf(stderr, "%s %s %s %.6g %s %s\n", r.name.c_str(), r.device.c_str(), BenchStateName(r.state), r.value,
                 r.unit.c_str(), r.message.c_str());
    if (r.name == "gpu.harness.overhead") {
      EXPECT_EQ(r.state, BenchState::kPass) << r.message;
    }
  }
}

}  // namespace
}  // namespace suanli
