#include <gtest/gtest.h>

#include <chrono>

#include "suanli/bench.h"

namespace suanli {
namespace {

BenchCase Quick(const char* name) {
  BenchOptions o;
  o.quick = true;
  o.only = {name};
  auto plan = PlanCases({}, o);
  EXPECT_TRUE(plan.ok());
  EXPECT_EQ(plan->size(), 1u);
  return plan->at(0);
}

TEST(BenchCpu, TriadRunsVerifiesEveryElementAndCountsThreeArrays) {
  auto cpu = MakeCpuDevice();
  const BenchCase c = Quick("cpu.mem.triad");
  const auto t0 = std::chrono::steady_clock::now();
  Measurement m = cpu->Run(c);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
  ASSERT_EQ(m.outcome, BenchState::kPass) << m.message;
  EXPECT_EQ(m.checked, c.bytes / 8);
  EXPECT_EQ(m.mismatches, 0);
  EXPECT_EQ(m.nans, 0);
  EXPECT_DOUBLE_EQ(m.work_per_rep, 3.0 * static_cast<double>(c.bytes));
  BenchResult r = Evaluate(c, m, nullptr, Expectations());
  EXPECT_EQ(r.state, BenchState::kPass);
  EXPECT_GT(r.value, 1e8);  // any machine moves more than 100 MB/s
  EXPECT_FALSE(r.peak.has_value());
}

TEST(BenchCpu, GemmsRunAndMatchTheExactReference) {
  auto cpu = MakeCpuDevice();
  for (const char* name : {"cpu.gemm.fp32", "cpu.gemm.fp64"}) {
    const BenchCase c = Quick(name);
    Measurement m = cpu->Run(c);
    ASSERT_EQ(m.outcome, BenchState::kPass) << m.message;
    EXPECT_EQ(m.checked, 256);
    EXPECT_EQ(m.mismatches, 0) << name;
    EXPECT_EQ(m.nans, 0);
    EXPECT_DOUBLE_EQ(m.work_per_rep, 2.0 * 128 * 128 * 128);
    EXPECT_EQ(Evaluate(c, m, nullptr, Expectations()).state, BenchState::kPass);
  }
}

TEST(BenchCpu, HostInfoDescribesTheMachine) {
  HostInfo h = ReadHostInfo();
  EXPECT_GT(h.logical_cpus, 0);
  EXPECT_FALSE(h.hostname.empty());
  EXPECT_GT(h.memory_bytes, 0);
  EXPECT_NE(h.blas.find("OpenBLAS"), std::string::npos);
}

TEST(BenchCpu, GpuCasesAreNotRunOnTheCpu) {
  auto cpu = MakeCpuDevice();
  BenchCase c;
  c.name = "gpu.mem.copy";
  c.kind = BenchKind::kMemCopy;
  EXPECT_EQ(cpu->Run(c).outcome, BenchState::kSkip);
}

}  // namespace
}  // namespace suanli
