// Validation harness for the memory model: every case in memory_cases.toml, predicted vs
// published, with the error per case printed (the numbers in docs/validation.md §2 come from
// this output).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <toml++/toml.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "suanli/hardware.h"
#include "suanli/memory.h"
#include "suanli/model.h"

namespace suanli {
namespace {

const std::string kDir = std::string(SUANLI_SOURCE_DIR) + "/tests/validation/";

toml::table LoadCases() { return toml::parse_file(kDir + "memory_cases.toml"); }

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One unit in the last printed digit of a number written as text ("0.47" -> 0.01, "257" -> 1).
double LastDigitUnit(const std::string& printed) {
  const auto dot = printed.find('.');
  if (dot == std::string::npos) return 1.0;
  return std::pow(10.0, -static_cast<double>(printed.size() - dot - 1));
}

TEST(MemoryValidation, ZeroPaperTable1IsReproducedExactly) {
  auto cases = LoadCases();
  int n = 0;
  for (const auto& node : *cases["zero"].as_array()) {
    const auto& t = *node.as_table();
    const double psi = t["params"].value<double>().value();
    for (const auto& row : *t["rows"].as_array()) {
      const auto& r = *row.as_array();
      const int nd = static_cast<int>(r[0].value<double>().value());
      for (int stage = 1; stage <= 3; ++stage) {
        const std::string printed = r[stage].value<std::string>().value();
        const double published = std::stod(printed);
        const double got = ShardModelStates(psi, 2, 2, 12, stage, nd).Total() / 1e9;
        std::printf("ZeRO-%d  %6.0fB params  N_d=%4d  published %8.2f GB  predicted %9.3f GB\n", stage, psi / 1e9, nd,
                    published, got);
        EXPECT_NEAR(got, published, LastDigitUnit(printed) + 1e-9) << "stage " << stage << " N_d " << nd;
        ++n;
      }
    }
  }
  EXPECT_EQ(n, 54);
}

ModelSpec GptBlock(int64_t h, int a, int layers) {
  ModelSpec m;
  m.id = "gpt";
  m.model_type = "gpt2";
  m.hidden = h;
  m.heads = m.kv_heads = a;
  m.head_dim = static_cast<int>(h / a);
  m.layers = layers;
  m.ffn = 4 * h;
  m.vocab = 51200;
  m.gated_mlp = false;
  m.norm = NormKind::kLayerNorm;
  return m;
}

TEST(MemoryValidation, KorthikantiActivationWorkedValues) {
  auto cases = LoadCases();
  const double s = 2048, b = 1;
  const int t = 8;
  struct Col {
    const char* name;
    int tp;
    bool sp;
    Recompute rc;
  };
  const Col cols[] = {{"none", 1, false, Recompute::kNone},          {"TP", t, false, Recompute::kNone},
                      {"TP+SP", t, true, Recompute::kNone},          {"TP+sel", t, false, Recompute::kSelective},
                      {"TP+SP+sel", t, true, Recompute::kSelective}, {"full", 1, false, Recompute::kFull}};
  int n = 0;
  for (const auto& node : *cases["activation"].as_array()) {
    const auto& c = *node.as_table();
    const ModelSpec m = GptBlock(c["hidden"].value<int64_t>().value(), static_cast<int>(c["heads"].value<int64_t>().value()),
                                 static_cast<int>(c["layers"].value<int64_t>().value()));
    const auto& mib = *c["mib"].as_array();
    for (int i = 0; i < 6; ++i) {
      const double published = mib[i].value<double>().value();
      // Korthikanti's setting: dropout masks stored, no FlashAttention.
      const double got =
          LayerActivationBytes(m, s, b, cols[i].tp, cols[i].sp, cols[i].rc, /*flash=*/false, /*dropout=*/true) /
          1048576.0;
      std::printf("Korthikanti %-10s %-10s published %7.1f MiB  predicted %8.2f MiB\n",
                  c["name"].value<std::string>()->c_str(), cols[i].name, published, got);
      EXPECT_NEAR(got, published, 0.5) << c["name"].value<std::string>().value() << " " << cols[i].name;
      ++n;
    }
  }
  EXPECT_EQ(n, 24);
}

TEST(MemoryValidation, MeasuredFineTuningPeaks) {
  auto cases = LoadCases();
  auto hw = HardwareCatalog::Load(CatalogOptions{});
  ASSERT_TRUE(hw.ok());
  for (const auto& node : *cases["finetune"].as_array()) {
    const auto& c = *node.as_table();
    const std::string name = c["name"].value<std::string>().value();
    auto m = ParseHfConfig(ReadText(kDir + c["config"].value<std::string>().value()), name);
    ASSERT_TRUE(m.ok()) << m.status().message();
    FitRequest r;
    r.mode = *ParseMode(c["mode"].value<std::string>().value());
    r.weights = *ParseWeightFormat(c["weights"].value_or(std::string("bf16")));
    r.batch = c["batch"].value<int64_t>().value();
    r.micro_batch = r.batch;
    r.seq = c["seq"].value<int64_t>().value();
    r.lora_rank = static_cast<int>(c["lora_rank"].value_or(int64_t{16}));
    if (auto* targets = c["lora_targets"].as_array()) {
      r.lora_targets.clear();
      for (const auto& x : *targets) r.lora_targets.push_back(x.value<std::string>().value());
    }
    r.gradient_checkpointing = c["gradient_checkpointing"].value_or(true);
    auto est = EstimateMemory(*m, r);
    ASSERT_TRUE(est.ok()) << name << ": " << est.status().message();
    const GpuSpec* gpu = *hw->FindGpu(c["gpu"].value<std::string>().value());
    const double gb = est->per_gpu_peak_bytes / 1e9;
    const std::string expect = c["expect"].value<std::string>().value();
    if (expect == "fits") {
      const double measured = c["measured_gb"].value<double>().value();
      const double tol = c["tolerance"].value<double>().value();
      const double err = (gb - measured) / measured;
      std::printf("fine-tune %-28s measured %6.1f GB  predicted %6.1f GB  error %+5.1f%%\n", name.c_str(), measured, gb,
                  err * 100);
      EXPECT_LE(std::fabs(err), tol) << name;
      EXPECT_TRUE(CheckFit(*est, *gpu).fits) << name;
    } else if (expect == "oom") {
      std::printf("fine-tune %-28s measured OOM on %s  predicted %6.1f GB (capacity %.1f GB)\n", name.c_str(),
                  gpu->id.c_str(), gb, gpu->memory_bytes.value / 1e9);
      EXPECT_FALSE(CheckFit(*est, *gpu).fits) << name;
    } else {
      const double limit = c["limit_gb"].value<double>().value();
      std::printf("fine-tune %-28s published < %.0f GB  predicted %6.1f GB\n", name.c_str(), limit, gb);
      EXPECT_LE(gb, limit) << name;
    }
  }
}

}  // namespace
}  // namespace suanli
