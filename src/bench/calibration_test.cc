#include <gtest/gtest.h>

#include "suanli/bench.h"

namespace suanli {
namespace {

constexpr const char* kExample = R"(schema = "suanli.calibration/1"
gpu = "h100-sxm"
device_name = "NVIDIA H100 80GB HBM3"
measured_at = "2026-12-02T10:00:00Z"

[memory]
bandwidth_bytes_per_s = 2.9e12
convention = "STREAM triad, 2 reads + 1 write counted"

[links]
h2d_pinned_bytes_per_s = 5.3e10
p2p_bytes_per_s = 3.9e11

[kernel]
launch_latency_s = 2.5e-6

[[gemm]]
precision = "bf16"
m = 8192
n = 8192
k = 8192
flops_per_s = 7.4e14

[[gemm]]
precision = "bf16"
m = 1024
n = 1024
k = 1024
flops_per_s = 3.1e14
)";

TEST(BenchCalibration, ParsesTheDocumentedFormat) {
  auto c = ParseCalibrationToml(kExample, "cal.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->gpu, "h100-sxm");
  EXPECT_DOUBLE_EQ(*c->memory_bandwidth_bytes_per_s, 2.9e12);
  ASSERT_EQ(c->gemm.at(Precision::kBf16).size(), 2u);
  EXPECT_EQ(c->gemm.at(Precision::kBf16)[0].m, 1024);  // sorted by shape
  EXPECT_DOUBLE_EQ(c->gemm.at(Precision::kBf16)[1].flops_per_s, 7.4e14);
  EXPECT_DOUBLE_EQ(c->link_bandwidth_bytes_per_s.at("p2p"), 3.9e11);
  EXPECT_DOUBLE_EQ(*c->launch_latency_s, 2.5e-6);
}

TEST(BenchCalibration, WriterOutputParsesBackIdentically) {
  auto c = ParseCalibrationToml(kExample, "cal.toml");
  ASSERT_TRUE(c.ok());
  const std::string text = CalibrationToToml(*c);
  auto back = ParseCalibrationToml(text, "written.toml");
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << text;
  EXPECT_EQ(CalibrationToToml(*back), text);
}

TEST(BenchCalibration, RejectsTyposWrongSchemaAndBadValues) {
  auto typo = ParseCalibrationToml("schema = \"suanli.calibration/1\"\n[memory]\nbandwith_bytes_per_s = 1e12\n", "c.toml");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("c.toml"), std::string::npos);
  EXPECT_FALSE(ParseCalibrationToml("schema = \"suanli.calibration/2\"\n[memory]\nbandwidth_bytes_per_s = 1e12\n", "c").ok());
  EXPECT_FALSE(ParseCalibrationToml("schema = \"suanli.calibration/1\"\n[memory]\nbandwidth_bytes_per_s = -1\n", "c").ok());
  EXPECT_FALSE(ParseCalibrationToml("schema = \"suanli.calibration/1\"\n", "c").ok());  // nothing measured
  EXPECT_FALSE(ParseCalibrationToml(
                   "schema = \"suanli.calibration/1\"\n[[gemm]]\nprecision = \"bf17\"\nm = 1\nn = 1\nk = 1\nflops_per_s = 1\n", "c")
                   .ok());
  EXPECT_FALSE(ParseCalibrationToml(
                   "schema = \"suanli.calibration/1\"\n[links]\nnvlink_bytes_per_s = 1\n", "c")
                   .ok());
}

TEST(BenchCalibration, FromResultsTakesPassingGpuMeasurementsOnly) {
  DeviceInfo d;
  d.index = 0;
  d.name = "NVIDIA H100 80GB HBM3";
  d.catalog_id = "h100-sxm";
  auto res = [](const char* name, BenchKind kind, double v, BenchState s, const char* dev = "gpu0") {
    BenchResult r;
    r.name = name;
    r.kind = kind;
    r.value = v;
    r.state = s;
    r.device = dev;
    return r;
  };
  std::vector<BenchResult> rs = {
      res("gpu.mem.triad", BenchKind::kMemTriad, 2.9e12, BenchState::kPass),
      res("gpu.copy.h2d.pinned", BenchKind::kH2D, 5e10, BenchState::kWarn),
      res("gpu.copy.d2h.pinned", BenchKind::kD2H, 5e10, BenchState::kFail),  // wrong: not a ceiling
      res("gpu.p2p.0-1", BenchKind::kP2P, 3.8e11, BenchState::kPass),
      res("gpu.p2p.0-2", BenchKind::kP2P, 3.9e11, BenchState::kPass),
      res("gpu.p2p.0-3", BenchKind::kP2P, 4.0e11, BenchState::kPass),
      res("gpu.mem.triad", BenchKind::kMemTriad, 1e12, BenchState::kPass, "gpu1"),
  };
  BenchResult g = res("gpu.gemm.bf16.8192", BenchKind::kGemm, 7e14, BenchState::kPass);
  g.precision = "bf16";
  g.gemms = {{"", 8192, 8192, 8192, 1}};
  rs.push_back(g);
  auto c = CalibrationFromResults(rs, d, "2026-12-02T10:00:00Z");
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(*c->memory_bandwidth_bytes_per_s, 2.9e12);
  EXPECT_EQ(c->link_bandwidth_bytes_per_s.count("d2h_pinned"), 0u);
  EXPECT_DOUBLE_EQ(c->link_bandwidth_bytes_per_s.at("p2p"), 3.9e11);  // median over peers
  EXPECT_EQ(c->gemm.at(Precision::kBf16).at(0).k, 8192);
  d.index = 5;
  EXPECT_FALSE(CalibrationFromResults(rs, d, "").ok());
}

}  // namespace
}  // namespace suanli
