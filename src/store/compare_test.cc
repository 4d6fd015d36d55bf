#include <gtest/gtest.h>

#include "suanli/store.h"

namespace suanli {
namespace {

BenchResult Res(const std::string& name, int dev, double value, BenchState s = BenchState::kPass,
                double rel_spread = 0.01, bool higher_is_better = true) {
  BenchResult r;
  r.name = name;
  r.device = "gpu" + std::to_string(dev);
  r.device_index = dev;
  r.value = value;
  r.unit = higher_is_better ? "B/s" : "s";
  r.higher_is_better = higher_is_better;
  r.state = s;
  r.spread.samples = 10;
  r.spread.median = value;
  r.spread.min = value * (1 - rel_spread);
  r.spread.max = value * (1 + rel_spread);
  return r;
}

StoredRun MakeStored(int64_t id, std::vector<BenchResult> results, int gpus = 2, const std::string& host = "node-a") {
  StoredRun s;
  s.id = id;
  s.run.host.hostname = host;
  for (int i = 0; i < gpus; ++i) {
    DeviceInfo d;
    d.index = i;
    d.is_gpu = true;
    d.name = "NVIDIA H100 80GB HBM3";
    d.uuid = host + "-GPU-" + std::to_string(i);
    s.run.devices.push_back(d);
  }
  s.run.results = std::move(results);
  return s;
}

const DriftFinding* Get(const CompareReport& r, const std::string& against, const std::string& name,
                        const std::string& dev) {
  for (const auto& f : r.findings)
    if (f.against == against && f.name == name && f.device == dev) return &f;
  return nullptr;
}

TEST(StoreCompare, DropBeyondThresholdAgainstOwnBaselineIsFlagged) {
  std::vector<StoredRun> runs = {
      MakeStored(1, {Res("gpu.mem.triad", 0, 3.00e12), Res("gpu.mem.triad", 1, 3.00e12)}),
      MakeStored(2, {Res("gpu.mem.triad", 0, 3.02e12), Res("gpu.mem.triad", 1, 2.98e12)}),
      MakeStored(3, {Res("gpu.mem.triad", 0, 2.55e12), Res("gpu.mem.triad", 1, 2.97e12)}),  // gpu0 lost 15%
  };
  CompareReport rep = CompareRuns(runs, CompareOptions());
  const DriftFinding* g0 = Get(rep, "baseline", "gpu.mem.triad", "gpu0");
  ASSERT_NE(g0, nullptr);
  EXPECT_EQ(g0->state, BenchState::kWarn);
  EXPECT_NEAR(g0->change, 2.55 / 3.01 - 1, 1e-9);
  EXPECT_EQ(g0->reference_samples, 2);
  EXPECT_EQ(Get(rep, "baseline", "gpu.mem.triad", "gpu1")->state, BenchState::kPass);
  // The same drop also shows against the peer in the same node.
  EXPECT_EQ(Get(rep, "peers", "gpu.mem.triad", "gpu0")->state, BenchState::kWarn);
  EXPECT_EQ(Get(rep, "peers", "gpu.mem.triad", "gpu1")->state, BenchState::kPass);
  EXPECT_EQ(rep.Overall(), BenchState::kWarn);
}

TEST(StoreCompare, NoisyMeasurementsNeedALargerDrop) {
  std::vector<StoredRun> runs = {
      MakeStored(1, {Res("gpu.copy.h2d.pageable", 0, 10e9, BenchState::kPass, 0.08)}, 1),
      MakeStored(2, {Res("gpu.copy.h2d.pageable", 0, 8.7e9, BenchState::kPass, 0.08)}, 1),  // -13% but noise +-8%
  };
  CompareReport rep = CompareRuns(runs, CompareOptions());
  const DriftFinding* f = Get(rep, "baseline", "gpu.copy.h2d.pageable", "gpu0");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->state, BenchState::kPass);
  EXPECT_NEAR(f->noise, 0.08, 1e-9);
}

TEST(StoreCompare, LatencyIncreaseIsADropAndHugeDropsFail) {
  std::vector<StoredRun> runs = {
      MakeStored(1, {Res("gpu.launch_latency", 0, 2e-6, BenchState::kPass, 0.01, false), Res("gpu.mem.read", 0, 3e12)}, 1),
      MakeStored(2, {Res("gpu.launch_latency", 0, 3e-6, BenchState::kPass, 0.01, false), Res("gpu.mem.read", 0, 1.5e12)}, 1),
  };
  CompareReport rep = CompareRuns(runs, CompareOptions());
  const DriftFinding* lat = Get(rep, "baseline", "gpu.launch_latency", "gpu0");
  ASSERT_NE(lat, nullptr);
  EXPECT_LT(lat->change, 0);
  EXPECT_NE(lat->state, BenchState::kPass);
  EXPECT_EQ(Get(rep, "baseline", "gpu.mem.read", "gpu0")->state, BenchState::kFail);  // -50%
  EXPECT_EQ(rep.Overall(), BenchState::kFail);
}

TEST(StoreCompare, FailedResultsAreNotPerformanceNumbersAndFirstRunIsTheBaseline) {
  std::vector<StoredRun> runs = {
      MakeStored(1, {Res("gpu.mem.read", 0, 9e12, BenchState::kFail)}, 1),  // wrong result: ignored
      MakeStored(2, {Res("gpu.mem.read", 0, 3e12)}, 1),
  };
  CompareReport rep = CompareRuns(runs, CompareOptions());
  const DriftFinding* f = Get(rep, "baseline", "gpu.mem.read", "gpu0");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->state, BenchState::kSkip);
  EXPECT_EQ(rep.Overall(), BenchState::kPass);
}

TEST(StoreCompare, GpusAreMatchedByUuidNotByIndex) {
  // The same physical GPU (uuid node-a-GPU-1) shows up as gpu0 after a GPU was removed.
  StoredRun a = MakeStored(1, {Res("gpu.mem.read", 0, 3e12), Res("gpu.mem.read", 1, 2e12)});
  StoredRun b = MakeStored(2, {Res("gpu.mem.read", 0, 2e12)}, 1);
  b.run.devices[0].uuid = "node-a-GPU-1";
  CompareReport rep = CompareRuns({a, b}, CompareOptions());
  const DriftFinding* f = Get(rep, "baseline", "gpu.mem.read", "gpu0");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->state, BenchState::kPass);
  EXPECT_DOUBLE_EQ(f->reference, 2e12);
}

TEST(StoreCompare, EachHostComparesItsOwnLatestRun) {
  std::vector<StoredRun> runs = {
      MakeStored(1, {Res("gpu.mem.read", 0, 3e12)}, 1, "node-a"),
      MakeStored(2, {Res("gpu.mem.read", 0, 3e12)}, 1, "node-b"),
      MakeStored(3, {Res("gpu.mem.read", 0, 2e12)}, 1, "node-a"),
  };
  CompareReport rep = CompareRuns(runs, CompareOptions());
  int hosts = 0;
  for (const auto& f : rep.findings) hosts += f.against == "baseline";
  EXPECT_EQ(hosts, 2);
}

}  // namespace
}  // namespace suanli
