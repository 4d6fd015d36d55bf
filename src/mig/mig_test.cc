#include "suanli/mig.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <random>
#include <sstream>

#include "suanli/hardware.h"
#include "suanli/model.h"
#include "suanli/units.h"

namespace suanli {
namespace {

const std::vector<MigGpu>& Tables() {
  static const std::vector<MigGpu> t = [] {
    CatalogOptions o;
    auto r = LoadMigTables(o);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : std::vector<MigGpu>{};
  }();
  return t;
}

const MigGpu& Gpu(std::string_view id) {
  auto g = FindMigGpu(Tables(), id);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return **g;
}

int ProfileIndex(const MigGpu& g, std::string_view name) {
  for (std::size_t i = 0; i < g.profiles.size(); ++i)
    if (g.profiles[i].name == name) return static_cast<int>(i);
  ADD_FAILURE() << "no profile " << name;
  return -1;
}

// An independent validity check (not CheckMigLayout): slices, limits, compute, +me.
void ExpectValidLayout(const MigGpu& g, const std::vector<MigInstance>& layout) {
  std::vector<int> owner(g.memory_slices, -1);
  std::map<int, int> count;
  int compute = 0, me = 0;
  ASSERT_LE(static_cast<int>(layout.size()), g.max_instances);
  for (std::size_t i = 0; i < layout.size(); ++i) {
    const MigProfile& p = g.profiles.at(layout[i].profile);
    bool allowed = false;
    for (int s : p.placements) allowed |= (s == layout[i].start);
    EXPECT_TRUE(allowed) << p.name << " at " << layout[i].start;
    for (int s = layout[i].start; s < layout[i].start + p.memory_slices; ++s) {
      ASSERT_LT(s, g.memory_slices);
      EXPECT_EQ(owner[s], -1) << "memory slice " << s << " used twice";
      owner[s] = static_cast<int>(i);
    }
    compute += p.compute_slices;
    me += p.media_engines;
    EXPECT_LE(++count[layout[i].profile], p.max_instances) << p.name;
  }
  EXPECT_LE(compute, g.compute_slices);
  EXPECT_LE(me, 1);
}

TEST(MigTables, AllEmbeddedTablesParseAndNameCatalogGpus) {
  ASSERT_EQ(Tables().size(), 9u);  // data/mig/*.toml: A100 40/80, H100 80/94, H200, B200, GB200, B300, GB300
  CatalogOptions o;
  auto hw = HardwareCatalog::Load(o);
  ASSERT_TRUE(hw.ok());
  for (const auto& t : Tables()) {
    EXPECT_EQ(t.memory_slices, 8);
    EXPECT_EQ(t.compute_slices, 7);
    EXPECT_EQ(t.profiles.size(), 7u) << t.id;
    for (const auto& gid : t.gpus) EXPECT_TRUE(hw->FindGpu(gid).ok()) << t.id << " names unknown GPU " << gid;
    for (const auto& p : t.profiles) {
      EXPECT_FALSE(p.source.empty());
      EXPECT_FALSE(p.memory_bytes.source.empty());
      // Real memory never exceeds the memory-slice share of the whole GPU's name size by much.
      EXPECT_GT(p.memory_bytes.value, 0);
    }
  }
}

TEST(MigTables, H100RealMemoryAndIds) {
  const MigGpu& g = Gpu("h100-sxm");
  EXPECT_EQ(g.id, "h100-80gb");
  const MigProfile* p = g.FindProfile("1g.10gb");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->id, 19);
  EXPECT_DOUBLE_EQ(p->memory_bytes.value, 9.75 * kGiB);
  EXPECT_EQ(p->ResourceName(), "nvidia.com/mig-1g.10gb");
  EXPECT_TRUE(g.FindProfile("20")->media_engines);
  EXPECT_EQ(g.FindProfile("9")->name, "3g.40gb");
}

TEST(MigTables, UnknownGpuSaysWhichHaveMig) {
  auto r = FindMigGpu(Tables(), "h100-sxn");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("did you mean 'h100-sxm'"), std::string::npos) << r.status().message();
  auto l4 = FindMigGpu(Tables(), "l4");
  ASSERT_FALSE(l4.ok());
  EXPECT_NE(l4.status().message().find("MIG-capable"), std::string::npos);
}

TEST(MigTables, RejectsBadFiles) {
  const std::string head =
      "id = \"x\"\nname = \"X\"\ngpus = []\ndevice_filter = []\nmemory_slices = 8\ncompute_slices = 7\n"
      "max_instances = 7\nsource = \"s\"\n[sources]\ns = \"test\"\n";
  const std::string prof =
      "[[profiles]]\nname = \"3g.40gb\"\nid = 9\ncompute_slices = 3\nmemory_slices = 4\nmax_instances = 2\n"
      "source = \"s\"\nmemory = { value = \"39.5 GiB\", source = \"s\" }\n";
  EXPECT_TRUE(ParseMigToml(head + prof + "placements = [0, 4]\n", "t").ok());
  auto past = ParseMigToml(head + prof + "placements = [0, 5]\n", "t");
  EXPECT_FALSE(past.ok());
  EXPECT_NE(past.status().message().find("exceeds"), std::string::npos);
  auto typo = ParseMigToml(head + prof + "placements = [0]\nplacement = [4]\n", "t");
  EXPECT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("did you mean 'placements'"), std::string::npos) << typo.status().message();
}

TEST(MigPlacement, CheckRejectsOverlapsAndLimits) {
  const MigGpu& g = Gpu("h100-80gb");
  const int g1 = ProfileIndex(g, "1g.10gb"), g3 = ProfileIndex(g, "3g.40gb"), g4 = ProfileIndex(g, "4g.40gb");
  const int me = ProfileIndex(g, "1g.10gb+me");
  EXPECT_TRUE(CheckMigLayout(g, {{g4, 0}, {g3, 4}}).ok());
  EXPECT_FALSE(CheckMigLayout(g, {{g4, 0}, {g1, 3}}).ok());      // overlap
  EXPECT_FALSE(CheckMigLayout(g, {{g1, 7}}).ok());                // 1g.10gb cannot start at 7
  EXPECT_FALSE(CheckMigLayout(g, {{g3, 2}}).ok());                // 3g starts at 0 or 4
  EXPECT_FALSE(CheckMigLayout(g, {{me, 0}, {me, 1}}).ok());       // one +me
  EXPECT_FALSE(CheckMigLayout(g, {{g4, 0}, {g4, 4}}).ok());       // 4g: one instance, and 4g at 4 is not allowed
}

TEST(MigPlacement, PlaceOnGpuFindsTheOnlyArrangement) {
  const MigGpu& g = Gpu("h100-80gb");
  const int g1 = ProfileIndex(g, "1g.10gb"), g2 = ProfileIndex(g, "2g.20gb"), g3 = ProfileIndex(g, "3g.40gb");
  // 3g at 0 would leave 2g@4 and 1g@6 and no start for the second 1g: the 3g must go to 4.
  auto p = PlaceOnGpu(g, {g1, g3, g1, g2});
  ASSERT_TRUE(p.has_value());
  ExpectValidLayout(g, *p);
  for (const auto& in : *p) {
    if (in.profile == g3) {
      EXPECT_EQ(in.start, 4);
    }
  }
  EXPECT_FALSE(PlaceOnGpu(g, {g3, g3, g1}).has_value());   // 9 memory slices
  EXPECT_FALSE(PlaceOnGpu(g, {g3, g3, g2}).has_value());   // 8 compute slices
  EXPECT_TRUE(PlaceOnGpu(g, {g3, g3}).has_value());
}

MigDemand Demand(const std::string& name, double gib, int compute = 1, bool media = false) {
  return MigDemand{name, gib * kGiB, compute, media};
}

TEST(MigPack, SevenSmallServicesShareOneH100) {
  const MigGpu& g = Gpu("h100-sxm");
  std::vector<MigDemand> d;
  for (int i = 0; i < 7; ++i) d.push_back(Demand(fmt::format("s{}", i), 8.0));
  auto plan = PackMig(g, d, MigOptions{});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->gpus.size(), 1u);
  EXPECT_TRUE(plan->proven_minimal);
  EXPECT_EQ(plan->gpus[0].instances.size(), 7u);
  for (const auto& in : plan->gpus[0].instances) EXPECT_EQ(g.profiles[in.profile].name, "1g.10gb");
  ExpectValidLayout(g, plan->gpus[0].instances);
  // An eighth needs a second GPU (7 instances, 7 compute slices per GPU).
  d.push_back(Demand("s7", 8.0));
  auto plan8 = PackMig(g, d, MigOptions{});
  ASSERT_TRUE(plan8.ok());
  EXPECT_EQ(plan8->gpus.size(), 2u);
}

// The expected layout is what `nvidia-smi mig -lgi` shows on real H100s with this mix
// (2g.20gb 0:2, 1g.10gb 2:1 and 3:1, 3g.40gb 4:4; NVIDIA/DCGM issue #138).
TEST(MigPack, ThreeTwoOneOneMixOnOneGpu) {
  const MigGpu& g = Gpu("h100-sxm");
  std::vector<MigDemand> d = {Demand("small-a", 7), Demand("big", 30), Demand("mid", 15, 2), Demand("small-b", 9)};
  auto plan = PackMig(g, d, MigOptions{});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->gpus.size(), 1u);
  std::map<std::string, int> counts;
  for (const auto& in : plan->gpus[0].instances) ++counts[g.profiles[in.profile].name];
  EXPECT_EQ(counts, (std::map<std::string, int>{{"1g.10gb", 2}, {"2g.20gb", 1}, {"3g.40gb", 1}}));
  EXPECT_EQ(g.profiles[plan->assignments[1].profile].name, "3g.40gb");
  EXPECT_EQ(g.profiles[plan->assignments[2].profile].name, "2g.20gb");  // compute=2 rules out 1g.20gb
  ExpectValidLayout(g, plan->gpus[0].instances);
  EXPECT_EQ(NvidiaSmiCommands(g, plan->gpus[0], 0),
            "# GPU 0 (NVIDIA H100 80GB): 2g.20gb@0:2 1g.10gb@2:1 1g.10gb@3:1 3g.40gb@4:4\n"
            "sudo nvidia-smi -i 0 -mig 1\n"
            "sudo nvidia-smi mig -i 0 -cgi 14,19,19,9 -C\n");
}

TEST(MigPack, ReserveAndWholeGpu) {
  const MigGpu& g = Gpu("h100-sxm");
  // 9.5 GiB fits 1g.10gb (9.75 GiB) without a reserve, not with 5%.
  auto a = PackMig(g, {Demand("x", 9.5)}, MigOptions{0.0});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(g.profiles[a->assignments[0].profile].name, "1g.10gb");
  auto b = PackMig(g, {Demand("x", 9.5)}, MigOptions{0.05});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(g.profiles[b->assignments[0].profile].name, "1g.20gb");
  // More than a 4g.40gb holds: a whole GPU, not MIG.
  auto c = PackMig(g, {Demand("big", 60), Demand("small", 5)}, MigOptions{});
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->assignments[0].whole_gpu);
  EXPECT_FALSE(c->assignments[1].whole_gpu);
  EXPECT_EQ(c->gpus.size(), 1u);
  EXPECT_FALSE(PackMig(g, {Demand("x", 1)}, MigOptions{1.0}).ok());
}

TEST(MigPack, SpareComputeUpgradesKeepTheLayoutValid) {
  const MigGpu& g = Gpu("h100-sxm");
  // Two 1g.20gb (2 compute, 4 memory slices): both can become 2g.20gb at the same slices.
  auto plan = PackMig(g, {Demand("a", 15), Demand("b", 15)}, MigOptions{});
  ASSERT_TRUE(plan.ok());
  auto up = SpareComputeUpgrades(g, *plan);
  ASSERT_EQ(up.size(), 2u);
  for (const auto& u : up) {
    EXPECT_EQ(g.profiles[u.from_profile].name, "1g.20gb");
    EXPECT_EQ(g.profiles[u.to_profile].name, "2g.20gb");
  }
  // A full GPU (seven 1g.10gb) has nothing to spare; 3g.40gb alone at slice 0 can become 4g.40gb.
  std::vector<MigDemand> seven;
  for (int i = 0; i < 7; ++i) seven.push_back(Demand(fmt::format("s{}", i), 5));
  EXPECT_TRUE(SpareComputeUpgrades(g, *PackMig(g, seven, MigOptions{})).empty());
  auto big = PackMig(g, {Demand("x", 30)}, MigOptions{});
  auto upb = SpareComputeUpgrades(g, *big);
  ASSERT_EQ(upb.size(), 1u);
  EXPECT_EQ(g.profiles[upb[0].to_profile].name, "4g.40gb");
}

TEST(MigPack, MediaNeedsThePlusMeProfileAndOnlyOnePerGpu) {
  const MigGpu& g = Gpu("h100-sxm");
  auto plan = PackMig(g, {Demand("v1", 5, 1, true), Demand("v2", 5, 1, true)}, MigOptions{});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->gpus.size(), 2u);
  EXPECT_EQ(g.profiles[plan->assignments[0].profile].name, "1g.10gb+me");
}

// Property: for random service sets on every table, every GPU's layout is valid, every service
// is placed exactly once in a profile that holds it, and the GPU count is at least the bound.
TEST(MigPack, RandomServiceSetsAlwaysPackValidly) {
  std::mt19937 rng(20261202);
  for (const auto& g : Tables()) {
    const double biggest = g.profiles.back().memory_bytes.value;  // 7g
    for (int trial = 0; trial < 150; ++trial) {
      const int n = 1 + static_cast<int>(rng() % 20);
      std::vector<MigDemand> d;
      for (int i = 0; i < n; ++i) {
        const double frac = std::uniform_real_distribution<double>(0.01, 0.7)(rng);
        const int compute = 1 + static_cast<int>(rng() % 4 == 0 ? rng() % 4 : 0);
        const bool media = rng() % 15 == 0;
        d.push_back(MigDemand{fmt::format("s{}", i), frac * biggest, compute, media});
      }
      const double reserve = (rng() % 2) ? 0.05 : 0.0;
      auto plan = PackMig(g, d, MigOptions{reserve});
      ASSERT_TRUE(plan.ok()) << g.id << ": " << plan.status().ToString();
      std::vector<int> seen(d.size(), 0);
      for (std::size_t gi = 0; gi < plan->gpus.size(); ++gi) {
        ExpectValidLayout(g, plan->gpus[gi].instances);
        EXPECT_TRUE(CheckMigLayout(g, plan->gpus[gi].instances).ok());
        EXPECT_FALSE(plan->gpus[gi].instances.empty());
        for (const auto& in : plan->gpus[gi].instances) {
          ASSERT_GE(in.service, 0);
          ++seen[in.service];
          const MigAssignment& a = plan->assignments[in.service];
          EXPECT_EQ(a.profile, in.profile);
          EXPECT_EQ(a.gpu, static_cast<int>(gi));
          const MigProfile& p = g.profiles[in.profile];
          EXPECT_GE(p.memory_bytes.value * (1 - reserve), d[in.service].memory_bytes);
          EXPECT_GE(p.compute_slices, d[in.service].min_compute_slices);
          EXPECT_EQ(p.media_engines, d[in.service].media);
        }
      }
      for (std::size_t i = 0; i < d.size(); ++i)
        EXPECT_EQ(seen[i], plan->assignments[i].whole_gpu ? 0 : 1) << g.id << " service " << i;
      EXPECT_GE(static_cast<int>(plan->gpus.size()), plan->lower_bound_gpus);
    }
  }
}

// The fewest GPUs by brute force: every partition of the items into groups (restricted growth
// strings), each group checked with PlaceOnGpu.
int BruteForceMinGpus(const MigGpu& g, const std::vector<int>& items) {
  const int n = static_cast<int>(items.size());
  int best = n;
  std::vector<int> label(n, 0);
  std::function<void(int, int)> rec = [&](int i, int groups) {
    if (groups >= best) return;
    if (i == n) {
      for (int k = 0; k < groups; ++k) {
        std::vector<int> profs;
        for (int j = 0; j < n; ++j)
          if (label[j] == k) profs.push_back(items[j]);
        if (!PlaceOnGpu(g, profs)) return;
      }
      best = groups;
      return;
    }
    for (int k = 0; k <= groups && k < n; ++k) {
      label[i] = k;
      rec(i + 1, std::max(groups, k + 1));
    }
  };
  rec(0, 0);
  return best;
}

TEST(MigPack, ProvenMinimalMatchesBruteForce) {
  std::mt19937 rng(7);
  const MigGpu& g = Gpu("h100-80gb");
  const double sizes[] = {5, 9, 15, 18, 30, 37};  // GiB: 1g.10gb, 1g.10gb, 1g.20gb, 1g.20gb, 3g, 3g
  int proven = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 9);
    std::vector<MigDemand> d;
    for (int i = 0; i < n; ++i) d.push_back(Demand(fmt::format("s{}", i), sizes[rng() % 6], 1 + (rng() % 3 == 0)));
    auto plan = PackMig(g, d, MigOptions{});
    ASSERT_TRUE(plan.ok());
    std::vector<int> items;
    for (const auto& a : plan->assignments) items.push_back(a.profile);
    const int bf = BruteForceMinGpus(g, items);
    EXPECT_EQ(static_cast<int>(plan->gpus.size()), bf) << "trial " << trial;  // <= 16 instances: exhaustive
    if (plan->proven_minimal) {
      ++proven;
      EXPECT_EQ(static_cast<int>(plan->gpus.size()), bf) << "trial " << trial;
    }
  }
  EXPECT_GT(proven, 150);
}

TEST(MigServices, ParsesTheCompactSpec) {
  auto s = ParseServiceSpec("llama-3.1-8b:int4:ctx=8192:users=4");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->model, "llama-3.1-8b");
  EXPECT_EQ(s->weights, "int4");
  EXPECT_EQ(s->context, 8192);
  EXPECT_EQ(s->users, 4);
  EXPECT_EQ(s->name, "llama-3.1-8b");
  auto t = ParseServiceSpec("qwen2.5-7b:ctx=4096:name=chat:replicas=3:compute=2:kv=fp8");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->weights, "bf16");
  EXPECT_EQ(t->replicas, 3);
  EXPECT_EQ(t->min_compute_slices, 2);
  EXPECT_EQ(t->name, "chat");
  auto bad = ParseServiceSpec("llama-3.1-8b:int4:user=4");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("did you mean 'users'"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(ParseServiceSpec("llama-3.1-8b:users=0").ok());
  EXPECT_FALSE(ParseServiceSpec("llama-3.1-8b:int3").ok());
  EXPECT_FALSE(ParseServiceSpec(":int4").ok());
}

TEST(MigServices, ParsesAServicesFile) {
  auto v = ParseServicesToml(
      "[[service]]\nmodel = \"llama-3.1-8b\"\nweights = \"int4\"\ncontext = 8192\nusers = 4\n"
      "[[service]]\nname = \"embed\"\nmodel = \"llama-3.2-1b\"\nreplicas = 2\n",
      "s.toml");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  ASSERT_EQ(v->size(), 2u);
  EXPECT_EQ((*v)[1].replicas, 2);
  auto typo = ParseServicesToml("[[service]]\nmodel = \"x\"\nuser = 3\n", "s.toml");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("did you mean 'users'"), std::string::npos) << typo.status().message();
}

TEST(MigServices, SizesWithTheMemoryModel) {
  CatalogOptions o;
  auto mc = ModelCatalog::Load(o);
  ASSERT_TRUE(mc.ok());
  auto m = mc->Resolve("llama-3.1-8b");
  ASSERT_TRUE(m.ok());
  auto s = ParseServiceSpec("llama-3.1-8b:int4:ctx=8192:users=4");
  ASSERT_TRUE(s.ok());
  auto f = SizeService(*m, *s);
  ASSERT_TRUE(f.ok());
  // int4 weights (~5 GB) + 4 x 8192 tokens x 128 KiB KV (4.3 GB) + overhead: between 9 and 13 GB.
  EXPECT_GT(f->per_gpu_peak_bytes, 9e9);
  EXPECT_LT(f->per_gpu_peak_bytes, 13e9);
  auto p = SmallestProfileFor(Gpu("h100-sxm"), f->per_gpu_peak_bytes, 1, false, 0.05);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(Gpu("h100-sxm").profiles[*p].name, "1g.20gb");
}

// A minimal YAML reader for the block subset the emitter writes (mappings, "- " sequences of
// mappings, [a, b] flow lists, scalars), so the test checks structure rather than bytes only.
nlohmann::json ParseYamlSubset(const std::string& text) {
  struct Line {
    int indent;
    std::string body;
  };
  std::vector<Line> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (l.find_first_not_of(' ') == std::string::npos) continue;
    const int ind = static_cast<int>(l.find_first_not_of(' '));
    lines.push_back({ind, l.substr(ind)});
  }
  auto scalar = [](std::string v) -> nlohmann::json {
    if (v.empty()) return nullptr;
    if (v == "true") return true;
    if (v == "false") return false;
    if (v.front() == '"') return v.substr(1, v.size() - 2);
    if (v.front() == '[') {
      nlohmann::json a = nlohmann::json::array();
      std::string inner = v.substr(1, v.size() - 2);
      std::istringstream is(inner);
      for (std::string item; std::getline(is, item, ',');) a.push_back(std::stoi(item));
      return a;
    }
    if (v.find_first_not_of("0123456789") == std::string::npos) return std::stoi(v);
    return v;
  };
  std::size_t i = 0;
  std::function<nlohmann::json(int)> block = [&](int indent) -> nlohmann::json {
    nlohmann::json node;
    while (i < lines.size() && lines[i].indent >= indent) {
      Line l = lines[i];
      if (l.indent != indent) throw std::runtime_error("bad indentation at: " + l.body);
      if (l.body.rfind("- ", 0) == 0) {
        if (node.is_null()) node = nlohmann::json::array();
        // A sequence item: re-read its first line as a mapping at indent + 2.
        lines[i].indent += 2;
        lines[i].body = l.body.substr(2);
        node.push_back(block(indent + 2));
        continue;
      }
      const std::size_t c = l.body.find(": ") != std::string::npos ? l.body.find(": ") : l.body.size() - 1;
      if (l.body.back() != ':' && l.body.find(": ") == std::string::npos) throw std::runtime_error("no key: " + l.body);
      std::string key = l.body.substr(0, c);
      if (key.front() == '"') key = key.substr(1, key.size() - 2);
      const std::string rest = c + 2 <= l.body.size() ? l.body.substr(c + 2) : "";
      ++i;
      if (node.is_null()) node = nlohmann::json::object();
      if (rest.empty()) node[key] = block(indent + 2);
      else node[key] = scalar(rest);
    }
    return node;
  };
  return block(0);
}

TEST(MigEmit, MigPartedYamlIsStructurallyValid) {
  const MigGpu& g = Gpu("h100-sxm");
  std::vector<MigDemand> d = {Demand("a", 30), Demand("b", 15, 2), Demand("c", 7), Demand("d", 7), Demand("e", 30),
                              Demand("f", 15, 2), Demand("g", 7), Demand("h", 7)};
  auto packed = PackMig(g, d, MigOptions{});
  ASSERT_TRUE(packed.ok());
  EXPECT_EQ(packed->gpus.size(), 2u);  // first-fit decreasing gives 3; the exhaustive search finds 2
  EXPECT_TRUE(packed->proven_minimal);
  // Golden output from a fixed plan: two GPUs with the same layout share one entry.
  MigPlan plan;
  const int g1 = ProfileIndex(g, "1g.10gb"), g2 = ProfileIndex(g, "2g.20gb"), g3 = ProfileIndex(g, "3g.40gb");
  for (int k = 0; k < 2; ++k) plan.gpus.push_back(MigGpuLayout{{{g2, 0, 0}, {g1, 2, 1}, {g1, 3, 2}, {g3, 4, 3}}});
  const std::string y = MigPartedYaml(g, plan, 1, "suanli");
  EXPECT_EQ(y,
            "version: v1\n"
            "mig-configs:\n"
            "  suanli:\n"
            "    - devices: [0, 1]\n"
            "      mig-enabled: true\n"
            "      mig-devices:\n"
            "        \"1g.10gb\": 2\n"
            "        \"2g.20gb\": 1\n"
            "        \"3g.40gb\": 1\n"
            "    - devices: [2]\n"
            "      mig-enabled: false\n");
  nlohmann::json j = ParseYamlSubset(y);
  EXPECT_EQ(j["version"], "v1");
  const auto& entries = j["mig-configs"]["suanli"];
  ASSERT_TRUE(entries.is_array());
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0]["devices"], nlohmann::json::array({0, 1}));
  EXPECT_EQ(entries[0]["mig-enabled"], true);
  EXPECT_EQ(entries[0]["mig-devices"]["1g.10gb"], 2);
  EXPECT_EQ(entries[1]["mig-enabled"], false);
  // Every profile named is a real profile and the counts place validly.
  for (const auto& e : entries) {
    if (!e["mig-enabled"].get<bool>()) continue;
    std::vector<int> profs;
    for (const auto& [name, n] : e["mig-devices"].items()) {
      ASSERT_NE(g.FindProfile(name), nullptr) << name;
      for (int k = 0; k < n.get<int>(); ++k) profs.push_back(ProfileIndex(g, name));
    }
    EXPECT_TRUE(PlaceOnGpu(g, profs).has_value());
  }
}

}  // namespace
}  // namespace suanli
