#include "suanli/hardware.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/data_registry.h"
#include "core/files.h"
#include "core/toml_reader.h"
#include "suanli/text.h"

namespace suanli {

using detail::ReadSources;

namespace {
struct PrecisionName {
  Precision p;
  const char* key;
};
constexpr PrecisionName kPrecisionNames[] = {
    {Precision::kFp64, "fp64"},         {Precision::kFp64Tensor, "fp64_tensor"}, {Precision::kFp32, "fp32"},
    {Precision::kTf32, "tf32"},         {Precision::kBf16, "bf16"},              {Precision::kFp16, "fp16"},
    {Precision::kFp8, "fp8"},           {Precision::kInt8, "int8"},              {Precision::kFp4, "fp4"},
    {Precision::kFp16Fp16Acc, "fp16_fp16acc"}, {Precision::kFp8Fp16Acc, "fp8_fp16acc"},
};

const std::set<std::string, std::less<>> kVendors = {"nvidia", "amd", "intel"};
const std::set<std::string, std::less<>> kSegments = {"datacenter", "workstation", "consumer"};

Status CheckOneOf(const std::string& value, const std::set<std::string, std::less<>>& valid, const std::string& where) {
  if (valid.count(value)) return Status::Ok();
  std::vector<std::string> v(valid.begin(), valid.end());
  std::string list;
  for (const auto& s : v) list += (list.empty() ? "" : ", ") + s;
  return ParseError(fmt::format("{}: '{}' is not valid (valid: {}){}", where, value, list, DidYouMean(value, v)));
}

}  // namespace

const char* PrecisionKey(Precision p) {
  for (const auto& n : kPrecisionNames)
    if (n.p == p) return n.key;
  return "?";
}

std::optional<Precision> PrecisionFromKey(std::string_view key) {
  for (const auto& n : kPrecisionNames)
    if (key == n.key) return n.p;
  return std::nullopt;
}

const std::vector<Precision>& AllPrecisions() {
  static const std::vector<Precision> all = [] {
    std::vector<Precision> v;
    for (const auto& n : kPrecisionNames) v.push_back(n.p);
    return v;
  }();
  return all;
}

std::optional<double> GpuSpec::PeakFlops(Precision p) const {
  auto it = dense_peak.find(p);
  if (it == dense_peak.end()) return std::nullopt;
  return it->second.value;
}

std::string DefaultUserDataDir() {
  if (const char* h = std::getenv("SUANLI_HOME"); h && *h) return h;
  if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x) return std::string(x) + "/suanli";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.config/suanli";
  return ".suanli";
}

namespace {
// A rate the models divide by must be physical, not just positive: a typed exponent (1e-30 GB/s) once gave a step
// time of 5e25 days. `what` names the range in words for the message.
Status CheckRange(double v, double lo, double hi, const std::string& where, const char* unit, const char* what) {
  if (v >= lo && v <= hi) return Status::Ok();
  return ParseError(fmt::format("{}: {:g} {} is outside {}", where, v, unit, what));
}
}  // namespace

Result<GpuSpec> ParseGpuToml(std::string_view text, std::string_view file_sv) {
  const std::string file(file_sv);
  SUANLI_ASSIGN_OR_RETURN(toml::table doc, detail::ParseTomlText(text, file));
  detail::TableReader root(doc, file, "");
  SUANLI_ASSIGN_OR_RETURN(auto sources, ReadSources(root, file));
  detail::TableReader r(doc, file, "", &sources);
  r.SubTable("sources");
  GpuSpec g;
  g.file = file;
  SUANLI_ASSIGN_OR_RETURN(g.id, r.String("id"));
  if (g.id != ToLower(g.id) || g.id.find(' ') != std::string::npos)
    return ParseError(r.Where("id") + ": ids are lowercase without spaces, got '" + g.id + "'");
  SUANLI_ASSIGN_OR_RETURN(g.name, r.String("name"));
  SUANLI_ASSIGN_OR_RETURN(g.vendor, r.String("vendor"));
  SUANLI_RETURN_IF_ERROR(CheckOneOf(g.vendor, kVendors, r.Where("vendor")));
  SUANLI_ASSIGN_OR_RETURN(g.architecture, r.String("architecture"));
  SUANLI_ASSIGN_OR_RETURN(g.form_factor, r.String("form_factor"));
  SUANLI_ASSIGN_OR_RETURN(g.segment, r.String("segment"));
  SUANLI_RETURN_IF_ERROR(CheckOneOf(g.segment, kSegments, r.Where("segment")));
  SUANLI_ASSIGN_OR_RETURN(g.aliases, r.StringList("aliases"));
  for (auto& a : g.aliases) a = ToLower(a);
  SUANLI_ASSIGN_OR_RETURN(g.launch_year, r.OptSourcedInt("launch_year"));
  SUANLI_ASSIGN_OR_RETURN(g.compute_capability, r.OptSourcedString("compute_capability"));
  SUANLI_ASSIGN_OR_RETURN(g.sm_count, r.OptSourcedInt("sm_count"));
  SUANLI_ASSIGN_OR_RETURN(g.ecc, r.OptSourcedBool("ecc"));
  SUANLI_ASSIGN_OR_RETURN(g.mig_max_instances, r.OptSourcedInt("mig_max_instances"));
  SUANLI_ASSIGN_OR_RETURN(g.fp64_reduced, r.OptSourcedBool("fp64_reduced"));
  // Values the models divide by or compare must be physical: an SM count of 0 gave a NaN time to first token.
  if (g.sm_count && (g.sm_count->value < 1 || g.sm_count->value > 4096))
    return ParseError(r.Where("sm_count") + fmt::format(": {} SMs is not 1-4096", g.sm_count->value));
  if (g.mig_max_instances && (g.mig_max_instances->value < 0 || g.mig_max_instances->value > 64))
    return ParseError(r.Where("mig_max_instances") + fmt::format(": {} is not 0-64", g.mig_max_instances->value));
  if (g.launch_year && (g.launch_year->value < 1990 || g.launch_year->value > 2100))
    return ParseError(r.Where("launch_year") + fmt::format(": {} is not a year from 1990 to 2100", g.launch_year->value));
  if (g.compute_capability && g.vendor == "amd") {
    // AMD names the ISA: gfx90a, gfx942, gfx950.
    const std::string& cc = g.compute_capability->value;
    if (cc.size() < 4 || cc.rfind("gfx", 0) != 0 ||
        !std::all_of(cc.begin() + 3, cc.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)); }))
      return ParseError(r.Where("compute_capability") + ": '" + cc + "' is not an AMD ISA name (e.g. \"gfx942\")");
  } else if (g.compute_capability) {
    const std::string& cc = g.compute_capability->value;
    const auto dot = cc.find('.');
    const auto digits = [](std::string_view x) {
      return !x.empty() && x.size() <= 3 && std::all_of(x.begin(), x.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (dot == std::string::npos || !digits(std::string_view(cc).substr(0, dot)) ||
        !digits(std::string_view(cc).substr(dot + 1)))
      return ParseError(r.Where("compute_capability") + ": '" + cc + "' is not MAJOR.MINOR (e.g. \"9.0\")");
  }

  if (const toml::table* t = r.SubTable("dense")) {
    detail::TableReader d(*t, file, "dense", &sources);
    for (const auto& n : kPrecisionNames) {
      const Dimension dim = n.p == Precision::kInt8 ? Dimension::kOpsPerSecond : Dimension::kFlopsPerSecond;
      SUANLI_ASSIGN_OR_RETURN(auto q, d.OptQuantity(n.key, dim));
      if (q) {
        if (q->value <= 0) return ParseError(d.Where(n.key) + ": a peak rate must be positive; omit unsupported formats");
        SUANLI_RETURN_IF_ERROR(CheckRange(q->value, 1e9, 1e18, d.Where(n.key), "FLOP/s", "1 GFLOP/s to 1 EFLOP/s"));
        g.dense_peak.emplace(n.p, *q);
      }
    }
    SUANLI_RETURN_IF_ERROR(d.CheckNoUnknownKeys());
  } else {
    return ParseError(file + ": missing [dense] table of peak rates");
  }

  const toml::table* mt = r.SubTable("memory");
  if (!mt) return ParseError(file + ": missing [memory] table");
  {
    detail::TableReader m(*mt, file, "memory", &sources);
    SUANLI_ASSIGN_OR_RETURN(g.memory_bytes, m.Quantity("capacity", Dimension::kBytes));
    SUANLI_RETURN_IF_ERROR(CheckRange(g.memory_bytes.value, 1e8, 1e14, m.Where("capacity"), "B", "100 MB to 100 TB"));
    SUANLI_ASSIGN_OR_RETURN(g.memory_type, m.OptSourcedString("type"));
    SUANLI_ASSIGN_OR_RETURN(g.memory_bandwidth_bytes_per_s, m.Quantity("bandwidth", Dimension::kBytesPerSecond));
    SUANLI_RETURN_IF_ERROR(
        CheckRange(g.memory_bandwidth_bytes_per_s.value, 1e9, 1e15, m.Where("bandwidth"), "B/s", "1 GB/s to 1 PB/s"));
    SUANLI_ASSIGN_OR_RETURN(g.l2_bytes, m.OptQuantity("l2", Dimension::kBytes));
    SUANLI_RETURN_IF_ERROR(m.CheckNoUnknownKeys());
  }
  if (const toml::table* lt = r.SubTable("link")) {
    detail::TableReader l(*lt, file, "link", &sources);
    SUANLI_ASSIGN_OR_RETURN(g.link_kind, l.OptSourcedString("kind"));
    SUANLI_ASSIGN_OR_RETURN(g.link_bandwidth_per_direction_bytes_per_s,
                            l.OptQuantity("bandwidth_per_direction", Dimension::kBytesPerSecond));
    SUANLI_ASSIGN_OR_RETURN(g.link_peers, l.OptSourcedInt("peers"));
    SUANLI_RETURN_IF_ERROR(l.CheckNoUnknownKeys());
    if (!g.link_kind || !g.link_bandwidth_per_direction_bytes_per_s)
      return ParseError(file + ": [link] needs both 'kind' and 'bandwidth_per_direction'");
    if (g.link_bandwidth_per_direction_bytes_per_s->value <= 0)  // 0 once gave a step time of "inf days"
      return ParseError(l.Where("bandwidth_per_direction") + " must be positive; omit [link] for a GPU without one");
    SUANLI_RETURN_IF_ERROR(CheckRange(g.link_bandwidth_per_direction_bytes_per_s->value, 1e6, 1e14,
                                      l.Where("bandwidth_per_direction"), "B/s", "1 MB/s to 100 TB/s"));
    if (g.link_peers && (g.link_peers->value < 1 || g.link_peers->value > 1024))
      return ParseError(l.Where("peers") + fmt::format(": {} is not 1-1024", g.link_peers->value));
  }
  if (const toml::table* pt = r.SubTable("pcie")) {
    detail::TableReader p(*pt, file, "pcie", &sources);
    SUANLI_ASSIGN_OR_RETURN(g.pcie_generation, p.OptSourcedInt("generation"));
    SUANLI_ASSIGN_OR_RETURN(g.pcie_lanes, p.OptSourcedInt("lanes"));
    SUANLI_RETURN_IF_ERROR(p.CheckNoUnknownKeys());
    if (g.pcie_generation && PcieLaneBytesPerS(g.pcie_generation->value) <= 0)
      return ParseError(p.Where("generation") + fmt::format(": PCIe generation {} is not one of 1-6", g.pcie_generation->value));
    if (g.pcie_lanes && (g.pcie_lanes->value < 1 || g.pcie_lanes->value > 32))
      return ParseError(p.Where("lanes") + fmt::format(": {} lanes is not 1-32", g.pcie_lanes->value));
  }
  if (const toml::table* ht = r.SubTable("host_link")) {
    detail::TableReader h(*ht, file, "host_link", &sources);
    SUANLI_ASSIGN_OR_RETURN(g.host_link_kind, h.OptSourcedString("kind"));
    SUANLI_ASSIGN_OR_RETURN(g.host_link_bandwidth_per_direction_bytes_per_s,
                            h.OptQuantity("bandwidth_per_direction", Dimension::kBytesPerSecond));
    SUANLI_ASSIGN_OR_RETURN(g.host_memory_per_gpu_bytes, h.OptQuantity("memory_per_gpu", Dimension::kBytes));
    SUANLI_RETURN_IF_ERROR(h.CheckNoUnknownKeys());
    if (!g.host_link_kind || !g.host_link_bandwidth_per_direction_bytes_per_s)
      return ParseError(file + ": [host_link] needs both 'kind' and 'bandwidth_per_direction'");
    SUANLI_RETURN_IF_ERROR(CheckRange(g.host_link_bandwidth_per_direction_bytes_per_s->value, 1e6, 1e14,
                                      h.Where("bandwidth_per_direction"), "B/s", "1 MB/s to 100 TB/s"));
    if (g.host_memory_per_gpu_bytes && g.host_memory_per_gpu_bytes->value <= 0)
      return ParseError(h.Where("memory_per_gpu") + " must be positive");
  }
  if (const toml::table* nt = r.SubTable("network")) {
    detail::TableReader n(*nt, file, "network", &sources);
    SUANLI_ASSIGN_OR_RETURN(g.reference_fabric, n.OptSourcedString("fabric"));
    SUANLI_ASSIGN_OR_RETURN(g.reference_nvlink_domain, n.OptSourcedInt("nvlink_domain"));
    SUANLI_ASSIGN_OR_RETURN(g.reference_gpus_per_host, n.OptSourcedInt("gpus_per_host"));
    SUANLI_RETURN_IF_ERROR(n.CheckNoUnknownKeys());
    if (g.reference_nvlink_domain && (g.reference_nvlink_domain->value < 1 || g.reference_nvlink_domain->value > 1024))
      return ParseError(n.Where("nvlink_domain") + fmt::format(": {} GPUs is not 1-1024", g.reference_nvlink_domain->value));
    if (g.reference_gpus_per_host && (g.reference_gpus_per_host->value < 1 || g.reference_gpus_per_host->value > 64))
      return ParseError(n.Where("gpus_per_host") + fmt::format(": {} GPUs is not 1-64", g.reference_gpus_per_host->value));
  }
  if (const toml::table* pw = r.SubTable("power")) {
    detail::TableReader p(*pw, file, "power", &sources);
    SUANLI_ASSIGN_OR_RETURN(g.tdp_watts, p.OptQuantity("tdp", Dimension::kWatts));
    if (g.tdp_watts && g.tdp_watts->value <= 0) return ParseError(p.Where("tdp") + " must be positive");
    SUANLI_RETURN_IF_ERROR(p.CheckNoUnknownKeys());
  }
  if (const toml::table* pr = r.SubTable("price")) {
    detail::TableReader p(*pr, file, "price", &sources);
    SUANLI_ASSIGN_OR_RETURN(g.price_purchase_usd, p.OptQuantity("purchase", Dimension::kUsd));
    SUANLI_ASSIGN_OR_RETURN(g.price_on_demand_usd_per_hour, p.OptQuantity("cloud_on_demand", Dimension::kUsdPerHour));
    SUANLI_ASSIGN_OR_RETURN(g.price_spot_usd_per_hour, p.OptQuantity("cloud_spot", Dimension::kUsdPerHour));
    SUANLI_ASSIGN_OR_RETURN(g.price_reserved_usd_per_hour, p.OptQuantity("cloud_reserved", Dimension::kUsdPerHour));
    SUANLI_RETURN_IF_ERROR(p.CheckNoUnknownKeys());
  }
  SUANLI_RETURN_IF_ERROR(r.CheckNoUnknownKeys());
  return g;
}

double PcieLaneBytesPerS(int generation) {
  switch (generation) {
    case 1: return 2.5e9 * 8 / 10 / 8;
    case 2: return 5e9 * 8 / 10 / 8;
    case 3: return 8e9 * 128 / 130 / 8;
    case 4: return 16e9 * 128 / 130 / 8;
    case 5: return 32e9 * 128 / 130 / 8;
    case 6: return 64e9 * 242 / 256 / 8;
    default: return 0;
  }
}

std::optional<Sourced<double>> HostBandwidthPerDirection(const GpuSpec& gpu) {
  if (gpu.host_link_bandwidth_per_direction_bytes_per_s) {
    Sourced<double> s = *gpu.host_link_bandwidth_per_direction_bytes_per_s;
    if (gpu.host_link_kind) s.note = gpu.host_link_kind->value + (s.note.empty() ? "" : "; " + s.note);
    return s;
  }
  if (!gpu.pcie_generation) return std::nullopt;
  const int lanes = gpu.pcie_lanes ? gpu.pcie_lanes->value : 16;
  return Sourced<double>{PcieLaneBytesPerS(gpu.pcie_generation->value) * lanes,
                         "PCI-SIG base specification line rates (Gen3-5 128b/130b coding, Gen6 FLIT 242/256) x lanes "
                         "from the catalog",
                         fmt::format("PCIe Gen{} x{}, one direction", gpu.pcie_generation->value, lanes)};
}

Result<std::vector<Interconnect>> ParseInterconnectsToml(std::string_view text, std::string_view file_sv) {
  const std::string file(file_sv);
  SUANLI_ASSIGN_OR_RETURN(toml::table doc, detail::ParseTomlText(text, file));
  detail::TableReader root(doc, file, "");
  SUANLI_ASSIGN_OR_RETURN(auto sources, ReadSources(root, file));
  const toml::array* arr = root.Array("interconnect");
  if (!arr) return ParseError(file + ": missing [[interconnect]] entries");
  SUANLI_RETURN_IF_ERROR(root.CheckNoUnknownKeys());
  std::vector<Interconnect> out;
  std::size_t i = 0;
  for (const auto& node : *arr) {
    const toml::table* t = node.as_table();
    const std::string path = fmt::format("interconnect[{}]", i++);
    if (!t) return ParseError(file + ": " + path + " must be a table");
    detail::TableReader r(*t, file, path, &sources);
    Interconnect ic;
    SUANLI_ASSIGN_OR_RETURN(ic.id, r.String("id"));
    SUANLI_ASSIGN_OR_RETURN(ic.name, r.String("name"));
    SUANLI_ASSIGN_OR_RETURN(ic.cls, r.String("class"));
    SUANLI_RETURN_IF_ERROR(CheckOneOf(ic.cls, {"gpu-link", "switch", "pcie", "network"}, r.Where("class")));
    SUANLI_ASSIGN_OR_RETURN(ic.bandwidth_per_direction_bytes_per_s,
                            r.Quantity("bandwidth_per_direction", Dimension::kBytesPerSecond));
    SUANLI_RETURN_IF_ERROR(CheckRange(ic.bandwidth_per_direction_bytes_per_s.value, 1e6, 1e14,
                                      r.Where("bandwidth_per_direction"), "B/s", "1 MB/s to 100 TB/s"));
    SUANLI_ASSIGN_OR_RETURN(ic.latency_s, r.OptQuantity("latency", Dimension::kSeconds));
    if (ic.latency_s) SUANLI_RETURN_IF_ERROR(CheckRange(ic.latency_s->value, 0, 1, r.Where("latency"), "s", "0 to 1 s"));
    SUANLI_RETURN_IF_ERROR(r.CheckNoUnknownKeys());
    out.push_back(std::move(ic));
  }
  return out;
}

Result<HardwareCatalog> HardwareCatalog::FromSpecs(std::vector<GpuSpec> gpus, std::vector<Interconnect> links) {
  HardwareCatalog c;
  std::map<std::string, std::string> owner;  // name -> file
  for (const auto& g : gpus) {
    std::vector<std::string> names = g.aliases;
    names.push_back(g.id);
    for (const auto& n : names) {
      auto [it, inserted] = owner.emplace(n, g.file);
      if (!inserted) {
        return ParseError(fmt::format("{}: GPU name '{}' is already used by {}", g.file, n, it->second));
      }
    }
  }
  c.gpus_ = std::move(gpus);
  std::sort(c.gpus_.begin(), c.gpus_.end(), [](const GpuSpec& a, const GpuSpec& b) { return a.id < b.id; });
  c.links_ = std::move(links);
  // A reference fabric must be a network the interconnect catalog has.
  for (const auto& g : c.gpus_) {
    if (!g.reference_fabric) continue;
    auto net = c.FindInterconnect(g.reference_fabric->value);
    if (!net.ok())
      return ParseError(fmt::format("{}: [network] fabric: {}", g.file, net.status().message()));
    if ((*net)->cls != "network")
      return ParseError(fmt::format("{}: [network] fabric '{}' is a {}, not a network between nodes (valid: an "
                                    "interconnect of class network, e.g. ib-ndr, roce-400g)",
                                    g.file, g.reference_fabric->value, (*net)->cls));
  }
  return c;
}

std::string HardwareCatalog::DefaultFabric(const GpuSpec& gpu) const {
  return gpu.reference_fabric ? gpu.reference_fabric->value : std::string(kDefaultFabric);
}

int HardwareCatalog::DefaultGpusPerNode(const GpuSpec& gpu) {
  return gpu.reference_nvlink_domain ? gpu.reference_nvlink_domain->value : 8;
}

int HardwareCatalog::GpusPerHost(const GpuSpec& gpu, int gpus_per_node) {
  const int host = gpu.reference_gpus_per_host ? gpu.reference_gpus_per_host->value : gpus_per_node;
  return std::max(1, std::min(host, gpus_per_node));
}

Result<HardwareCatalog> HardwareCatalog::Load(const CatalogOptions& options) {
  std::map<std::string, GpuSpec> by_id;
  std::map<std::string, Interconnect> links;
  auto add_links = [&](std::string_view text, const std::string& file) -> Status {
    SUANLI_ASSIGN_OR_RETURN(auto v, ParseInterconnectsToml(text, file));
    for (auto& l : v) links[l.id] = std::move(l);
    return Status::Ok();
  };
  if (options.use_embedded) {
    for (const auto& f : detail::EmbeddedFilesUnder("data/gpus/", ".toml")) {
      SUANLI_ASSIGN_OR_RETURN(GpuSpec g, ParseGpuToml(f.content, "embedded:" + std::string(f.path)));
      by_id[g.id] = std::move(g);
    }
    if (const auto* f = detail::FindEmbeddedFile("data/interconnects.toml")) {
      SUANLI_RETURN_IF_ERROR(add_links(f->content, "embedded:data/interconnects.toml"));
    }
  }
  namespace fs = std::filesystem;
  for (const auto& dir : options.user_dirs) {
    std::error_code ec;
    const fs::path gdir = fs::path(dir) / "gpus";
    if (fs::is_directory(gdir, ec)) {
      std::vector<fs::path> files;
      for (const auto& e : fs::directory_iterator(gdir, ec))
        if (e.path().extension() == ".toml") files.push_back(e.path());
      std::sort(files.begin(), files.end());
      for (const auto& p : files) {
        SUANLI_ASSIGN_OR_RETURN(std::string text, detail::ReadFile(p.string()));
        SUANLI_ASSIGN_OR_RETURN(GpuSpec g, ParseGpuToml(text, p.string()));
        by_id[g.id] = std::move(g);  // a user file overrides the embedded one with the same id
      }
    }
    const fs::path ic = fs::path(dir) / "interconnects.toml";
    if (fs::is_regular_file(ic, ec)) {
      SUANLI_ASSIGN_OR_RETURN(std::string text, detail::ReadFile(ic.string()));
      SUANLI_RETURN_IF_ERROR(add_links(text, ic.string()));
    }
  }
  std::vector<GpuSpec> gpus;
  for (auto& [id, g] : by_id) gpus.push_back(std::move(g));
  std::vector<Interconnect> lv;
  for (auto& [id, l] : links) lv.push_back(std::move(l));
  return FromSpecs(std::move(gpus), std::move(lv));
}

std::vector<std::vector<std::string>> HardwareCatalog::GpuNames() const {
  std::vector<std::vector<std::string>> names;
  for (const auto& g : gpus_) {
    names.push_back({g.id});
    names.back().insert(names.back().end(), g.aliases.begin(), g.aliases.end());
  }
  return names;
}

Result<const GpuSpec*> HardwareCatalog::FindGpu(std::string_view id_in) const {
  const std::string id = ToLower(id_in);
  for (const auto& g : gpus_) {
    if (g.id == id) return &g;
    for (const auto& a : g.aliases)
      if (a == id) return &g;
  }
  return NotFound(fmt::format("unknown GPU '{}'{}; `suanli gpus` lists the catalog", id_in, DidYouMean(id, GpuNames())));
}

Result<const Interconnect*> HardwareCatalog::FindInterconnect(std::string_view id_in) const {
  const std::string id = ToLower(id_in);
  std::vector<std::string> ids;
  for (const auto& l : links_) {
    if (l.id == id) return &l;
    ids.push_back(l.id);
  }
  return NotFound(fmt::format("unknown interconnect '{}'{}; `suanli gpus --links` lists them", id_in,
                              DidYouMean(id, ids)));
}

}  // namespace suanli
