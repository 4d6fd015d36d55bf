#include "suanli/hardware.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "scratch_dir.h"

namespace suanli {
namespace {

const char* kMinimalGpu = R"(
id = "test-gpu"
name = "Test GPU"
vendor = "nvidia"
architecture = "hopper"
form_factor = "sxm"
segment = "datacenter"
[sources]
ds = "a datasheet"
[dense]
bf16 = { value = "100 TFLOPS", source = "ds" }
[memory]
capacity = { value = "10 GiB", source = "ds" }
bandwidth = { value = "1 TB/s", source = "ds" }
)";

TEST(ParseGpuToml, MinimalFileLoads) {
  auto g = ParseGpuToml(kMinimalGpu, "test.toml");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->id, "test-gpu");
  EXPECT_DOUBLE_EQ(*g->PeakFlops(Precision::kBf16), 100e12);
  EXPECT_FALSE(g->PeakFlops(Precision::kFp8).has_value());  // absent = unsupported
  EXPECT_EQ(g->memory_bytes.source, "a datasheet");
}

TEST(ParseGpuToml, UnknownKeyIsAnErrorNamingFileAndKey) {
  std::string text = std::string(kMinimalGpu) + "\n[power]\ntdpp = { value = \"700 W\", source = \"ds\" }\n";
  auto g = ParseGpuToml(text, "bad.toml");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("bad.toml"), std::string::npos);
  EXPECT_NE(g.status().message().find("power.tdpp"), std::string::npos);
  EXPECT_NE(g.status().message().find("did you mean 'tdp'"), std::string::npos);
}

// Values the models divide by or compare are checked where the file is read, each an error naming the key: an SM
// count of 0 gave a NaN time to first token, a link bandwidth of 0 a step time of "inf days".
TEST(ParseGpuToml, ImpossibleValuesAreErrorsNamingTheKey) {
  const std::string base(kMinimalGpu);
  auto with_root = [&](const std::string& line, const char* vendor = "nvidia") {
    std::string t = base;
    t.replace(t.find("segment = \"datacenter\"\n"), 23, "segment = \"datacenter\"\n" + line + "\n");
    t.replace(t.find("vendor = \"nvidia\""), 17, std::string("vendor = \"") + vendor + "\"");
    return t;
  };
  struct Bad {
    std::string text;
    const char* key;
  };
  for (const Bad& b : {Bad{with_root("sm_count = { value = 0, source = \"ds\" }"), "sm_count"},
                       Bad{with_root("mig_max_instances = { value = 99, source = \"ds\" }"), "mig_max_instances"},
                       Bad{with_root("launch_year = { value = 22, source = \"ds\" }"), "launch_year"},
                       Bad{with_root("compute_capability = { value = \"sm90\", source = \"ds\" }"), "compute_capability"},
                       Bad{with_root("compute_capability = { value = \"9.0\", source = \"ds\" }", "amd"),
                           "compute_capability"},
                       Bad{base + "[link]\nkind = { value = \"nvlink4\", source = \"ds\" }\nbandwidth_per_direction = { "
                                  "value = \"0 GB/s\", source = \"ds\" }\n",
                           "link.bandwidth_per_direction"},
                       Bad{base + "[power]\ntdp = { value = \"0 W\", source = \"ds\" }\n", "power.tdp"},
                       // A typed exponent: positive, and not physical (1e-30 GB/s gave a step of 5e25 days).
                       Bad{base + "[link]\nkind = { value = \"nvlink4\", source = \"ds\" }\nbandwidth_per_direction = { "
                                  "value = \"1e-30 GB/s\", source = \"ds\" }\n",
                           "link.bandwidth_per_direction"}}) {
    auto g = ParseGpuToml(b.text, "bad.toml");
    ASSERT_FALSE(g.ok()) << b.key;
    EXPECT_NE(g.status().message().find(std::string("bad.toml: key '") + b.key + "'"), std::string::npos)
        << g.status().message();
  }
  std::string slow = base;
  slow.replace(slow.find("\"1 TB/s\""), 8, "\"1e-9 TB/s\"");
  auto tiny_bw = ParseGpuToml(slow, "bad.toml");
  ASSERT_FALSE(tiny_bw.ok());
  EXPECT_NE(tiny_bw.status().message().find("key 'memory.bandwidth': 1000 B/s is outside 1 GB/s to 1 PB/s"),
            std::string::npos)
      << tiny_bw.status().message();
  auto net = ParseInterconnectsToml("[sources]\nx = \"t\"\n[[interconnect]]\nid = \"n\"\nname = \"N\"\nclass = "
                                    "\"network\"\nbandwidth_per_direction = { value = \"50 GB/s\", source = \"x\" "
                                    "}\nlatency = { value = \"1e9 s\", source = \"x\" }\n",
                                    "net.toml");
  ASSERT_FALSE(net.ok());
  EXPECT_NE(net.status().message().find("key 'interconnect[0].latency': 1e+09 s is outside 0 to 1 s"), std::string::npos)
      << net.status().message();
  for (const std::string& good : {with_root("sm_count = { value = 132, source = \"ds\" }"),
                                  with_root("compute_capability = { value = \"10.3\", source = \"ds\" }"),
                                  with_root("compute_capability = { value = \"gfx942\", source = \"ds\" }", "amd")}) {
    auto g = ParseGpuToml(good, "good.toml");
    EXPECT_TRUE(g.ok()) << g.status().message();
  }
}

// The host path: [host_link] (NVLink-C2C on Grace superchips) wins over PCIe; without it PCIe generation x lanes
// (Gen5: 32 GT/s, 128b/130b, so 3.94 GB/s per lane and direction). Half a [host_link], or an impossible PCIe
// generation, is an error naming the file.
TEST(ParseGpuToml, HostLinkOrPcieGivesTheHostBandwidth) {
  auto bare = ParseGpuToml(kMinimalGpu, "t.toml");
  ASSERT_TRUE(bare.ok());
  EXPECT_FALSE(HostBandwidthPerDirection(*bare).has_value());
  const std::string pcie = std::string(kMinimalGpu) + "[pcie]\ngeneration = { value = 5, source = \"ds\" }\n" +
                           "lanes = { value = 16, source = \"ds\" }\n";
  auto p = ParseGpuToml(pcie, "t.toml");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_NEAR(HostBandwidthPerDirection(*p)->value, 16 * 32e9 * 128 / 130 / 8, 1);
  auto c2c = ParseGpuToml(pcie + "[host_link]\nkind = { value = \"nvlink-c2c\", source = \"ds\" }\n" +
                              "bandwidth_per_direction = { value = \"450 GB/s\", source = \"ds\" }\n",
                          "t.toml");
  ASSERT_TRUE(c2c.ok()) << c2c.status().message();
  EXPECT_DOUBLE_EQ(HostBandwidthPerDirection(*c2c)->value, 450e9);
  EXPECT_FALSE(c2c->host_memory_per_gpu_bytes.has_value());
  const std::string c2c_text = pcie + "[host_link]\nkind = { value = \"nvlink-c2c\", source = \"ds\" }\n" +
                               "bandwidth_per_direction = { value = \"450 GB/s\", source = \"ds\" }\n";
  auto mem = ParseGpuToml(c2c_text + "memory_per_gpu = { value = \"240 GB\", source = \"ds\" }\n", "t.toml");
  ASSERT_TRUE(mem.ok()) << mem.status().message();
  EXPECT_DOUBLE_EQ(mem->host_memory_per_gpu_bytes->value, 240e9);
  auto zero = ParseGpuToml(c2c_text + "memory_per_gpu = { value = \"0 GB\", source = \"ds\" }\n", "z.toml");
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("memory_per_gpu"), std::string::npos) << zero.status().message();
  auto half = ParseGpuToml(pcie + "[host_link]\nkind = { value = \"nvlink-c2c\", source = \"ds\" }\n", "half.toml");
  ASSERT_FALSE(half.ok());
  EXPECT_NE(half.status().message().find("half.toml: [host_link] needs both"), std::string::npos) << half.status().message();
  std::string gen9 = pcie;
  gen9.replace(gen9.find("value = 5"), 9, "value = 9");
  auto g9 = ParseGpuToml(gen9, "gen.toml");
  ASSERT_FALSE(g9.ok());
  EXPECT_NE(g9.status().message().find("not one of 1-6"), std::string::npos) << g9.status().message();
}

TEST(ParseGpuToml, MissingUnitIsAnError) {
  std::string text = kMinimalGpu;
  text.replace(text.find("\"10 GiB\""), 8, "\"10\"");
  auto g = ParseGpuToml(text, "nounit.toml");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("memory.capacity"), std::string::npos);
  EXPECT_NE(g.status().message().find("no unit"), std::string::npos);
}

TEST(ParseGpuToml, UndefinedSourceIsAnError) {
  std::string text = kMinimalGpu;
  text.replace(text.find("source = \"ds\" }\n[memory]"), 15, "source = \"dz\" }");
  auto g = ParseGpuToml(text, "src.toml");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("'dz' is not defined"), std::string::npos);
}

TEST(ParseGpuToml, TruncatedAndBinaryInputGiveErrors) {
  EXPECT_FALSE(ParseGpuToml(std::string(kMinimalGpu).substr(0, 120), "t.toml").ok());
  EXPECT_FALSE(ParseGpuToml(std::string("\x00\xff\xfe[[[", 7), "b.toml").ok());
}

class Catalog : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto c = HardwareCatalog::Load(CatalogOptions{});
    ASSERT_TRUE(c.ok()) << c.status().message();
    catalog_ = new HardwareCatalog(std::move(c).value());
  }
  static void TearDownTestSuite() { delete catalog_; }
  static HardwareCatalog* catalog_;
};
HardwareCatalog* Catalog::catalog_ = nullptr;

TEST_F(Catalog, HasEveryRequiredSku) {
  for (const char* id : {"v100-sxm-16gb", "v100-sxm-32gb", "a100-sxm-40gb", "a100-sxm-80gb", "a100-pcie-40gb",
                         "a100-pcie-80gb", "h100-sxm", "h100-pcie", "h100-nvl", "h200-sxm", "h200-nvl", "b200",
                         "gb200", "l40s", "l4", "a10", "t4", "rtx-a6000", "rtx-6000-ada", "rtx-3090", "rtx-4090",
                         "rtx-5090", "rtx-4060-laptop", "mi250x", "mi300x", "mi325x", "gaudi2", "gaudi3"}) {
    auto g = catalog_->FindGpu(id);
    EXPECT_TRUE(g.ok()) << id;
  }
}

TEST_F(Catalog, AliasesResolveToCanonicalIds) {
  EXPECT_EQ((*catalog_->FindGpu("h100"))->id, "h100-sxm");
  EXPECT_EQ((*catalog_->FindGpu("H100"))->id, "h100-sxm");
  EXPECT_EQ((*catalog_->FindGpu("4090"))->id, "rtx-4090");
}

TEST_F(Catalog, UnknownGpuSuggestsNearest) {
  auto g = catalog_->FindGpu("h100-smx");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("did you mean"), std::string::npos);
}

TEST_F(Catalog, DatasheetValuesAndSources) {
  const GpuSpec* h = *catalog_->FindGpu("h100-sxm");
  EXPECT_NEAR(*h->PeakFlops(Precision::kBf16), 989.4e12, 1e12);
  EXPECT_NEAR(h->memory_bandwidth_bytes_per_s.value, 3.35e12, 1e9);
  EXPECT_FALSE(h->memory_bytes.source.empty());
  // FP8 needs Hopper or newer; FP4 needs Blackwell.
  EXPECT_FALSE((*catalog_->FindGpu("a100-sxm-80gb"))->Supports(Precision::kFp8));
  EXPECT_TRUE(h->Supports(Precision::kFp8));
  EXPECT_FALSE(h->Supports(Precision::kFp4));
  EXPECT_TRUE((*catalog_->FindGpu("b200"))->Supports(Precision::kFp4));
  // V100 has FP16 tensor cores but no BF16.
  EXPECT_FALSE((*catalog_->FindGpu("v100-sxm-32gb"))->Supports(Precision::kBf16));
}

TEST_F(Catalog, EveryValueCarriesASource) {
  for (const auto& g : catalog_->gpus()) {
    for (const auto& [p, s] : g.dense_peak) EXPECT_FALSE(s.source.empty()) << g.id << " " << PrecisionKey(p);
    EXPECT_FALSE(g.memory_bytes.source.empty()) << g.id;
    EXPECT_FALSE(g.memory_bandwidth_bytes_per_s.source.empty()) << g.id;
    EXPECT_GT(g.memory_bytes.value, 1e9) << g.id;
  }
}

// A GPU's reference fabric ([network] fabric) is the default --inter-node: it must be a network the interconnect
// catalog has (a typo gets "did you mean", a GPU link is refused), and a GPU without one gets ib-ndr.
TEST_F(Catalog, AReferenceFabricMustBeANetworkBetweenNodes) {
  auto with_fabric = [&](const char* fabric) {
    auto g = ParseGpuToml(std::string(kMinimalGpu) + "[network]\nfabric = { value = \"" + fabric + "\", source = \"ds\" }\n",
                          "t.toml");
    EXPECT_TRUE(g.ok()) << g.status().message();
    return HardwareCatalog::FromSpecs({*g}, catalog_->interconnects());
  };
  auto ok = with_fabric("ib-hdr");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->DefaultFabric(ok->gpus()[0]), "ib-hdr");
  auto typo = with_fabric("ib-nrd");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("t.toml: [network] fabric"), std::string::npos) << typo.status().message();
  EXPECT_NE(typo.status().message().find("ib-ndr"), std::string::npos) << typo.status().message();
  auto link = with_fabric("nvlink4");
  ASSERT_FALSE(link.ok());
  EXPECT_NE(link.status().message().find("not a network between nodes"), std::string::npos) << link.status().message();
  auto bare = ParseGpuToml(kMinimalGpu, "t.toml");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(catalog_->DefaultFabric(*bare), "ib-ndr");
  // The bundled catalog: DGX A100's HDR, DGX H100's NDR.
  EXPECT_EQ(catalog_->DefaultFabric(**catalog_->FindGpu("a100-sxm-80gb")), "ib-hdr");
  EXPECT_EQ(catalog_->DefaultFabric(**catalog_->FindGpu("h100-sxm")), "ib-ndr");
}

TEST_F(Catalog, InterconnectsUseBytesPerSecond) {
  auto ndr = catalog_->FindInterconnect("ib-ndr");
  ASSERT_TRUE(ndr.ok()) << ndr.status().message();
  EXPECT_NEAR((*ndr)->bandwidth_per_direction_bytes_per_s.value, 50e9, 1e9);  // 400 Gb/s
  for (const char* id : {"nvlink3", "nvlink4", "nvlink5", "pcie-gen3-x16", "pcie-gen4-x16", "pcie-gen5-x16",
                         "pcie-gen6-x16", "ib-hdr", "ib-xdr", "roce-200g", "eth-1g", "eth-10g", "eth-25g", "eth-100g",
                         "eth-400g"}) {
    EXPECT_TRUE(catalog_->FindInterconnect(id).ok()) << id;
  }
}

}  // namespace
}  // namespace suanli

namespace suanli {
namespace {


TEST(UserCatalog, UserFileOverridesBuiltInAndAddsNew) {
  const testing::ScratchDir scratch("override");
  const std::string& dir = scratch.path();
  std::filesystem::create_directories(dir + "/gpus");
  std::string text = kMinimalGpu;
  std::ofstream(dir + "/gpus/new.toml") << text;
  text.replace(text.find("test-gpu"), 8, "h100-sxm");
  std::ofstream(dir + "/gpus/h100.toml") << text;
  CatalogOptions o;
  o.user_dirs.push_back(dir);
  auto c = HardwareCatalog::Load(o);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->FindGpu("test-gpu").ok());
  EXPECT_DOUBLE_EQ((*c->FindGpu("h100-sxm"))->memory_bytes.value, 10 * 1073741824.0);  // replaced
  EXPECT_EQ((*c->FindGpu("h100-sxm"))->file, dir + "/gpus/h100.toml");
}

TEST(UserCatalog, BadUserFileNamesTheFile) {
  const testing::ScratchDir scratch("bad");
  const std::string& dir = scratch.path();
  std::filesystem::create_directories(dir + "/gpus");
  std::ofstream(dir + "/gpus/broken.toml") << "id = \"x\"\n[memory\n";
  CatalogOptions o;
  o.user_dirs.push_back(dir);
  auto c = HardwareCatalog::Load(o);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("broken.toml"), std::string::npos);
}

}  // namespace
}  // namespace suanli
