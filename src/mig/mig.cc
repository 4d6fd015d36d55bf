// MIG tables, placement checks and packing (docs/methodology.md, "MIG packing").
#include "suanli/mig.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>

#include "core/data_registry.h"
#include "core/files.h"
#include "core/toml_reader.h"
#include "suanli/text.h"
#include "suanli/units.h"

namespace suanli {

using detail::ReadSources;

namespace {


Result<std::string> ResolveSource(detail::TableReader& r, const std::map<std::string, std::string>& sources,
                                  std::string_view key) {
  SUANLI_ASSIGN_OR_RETURN(std::string id, r.String(key));
  auto it = sources.find(id);
  if (it == sources.end()) {
    std::vector<std::string> ids;
    for (const auto& [k, _] : sources) ids.push_back(k);
    return ParseError(fmt::format("{}: source '{}' is not defined in [sources]{}", r.Where(key), id, DidYouMean(id, ids)));
  }
  return it->second;
}

Result<int> SmallInt(detail::TableReader& r, std::string_view key, int lo, int hi) {
  SUANLI_ASSIGN_OR_RETURN(auto v, r.OptInt(key));
  if (!v) return ParseError(r.Where(key) + " is required but missing");
  if (*v < lo || *v > hi) return ParseError(fmt::format("{} must be within {}..{}, got {}", r.Where(key), lo, hi, *v));
  return static_cast<int>(*v);
}

constexpr int kMaxSlices = 8;

// Bit mask of the memory slices [start, start + size).
uint32_t SliceMask(int start, int size) { return ((1u << size) - 1u) << start; }

}  // namespace

const MigProfile* MigGpu::FindProfile(std::string_view name_or_id) const {
  for (const auto& p : profiles)
    if (p.name == name_or_id || std::to_string(p.id) == name_or_id) return &p;
  return nullptr;
}

Result<MigGpu> ParseMigToml(std::string_view text, std::string_view file_sv) {
  const std::string file(file_sv);
  SUANLI_ASSIGN_OR_RETURN(toml::table doc, detail::ParseTomlText(text, file));
  detail::TableReader root(doc, file, "");
  SUANLI_ASSIGN_OR_RETURN(auto sources, ReadSources(root, file));
  detail::TableReader r(doc, file, "", &sources);
  r.SubTable("sources");
  MigGpu g;
  g.file = file;
  SUANLI_ASSIGN_OR_RETURN(g.id, r.String("id"));
  SUANLI_ASSIGN_OR_RETURN(g.name, r.String("name"));
  SUANLI_ASSIGN_OR_RETURN(g.gpus, r.StringList("gpus"));
  SUANLI_ASSIGN_OR_RETURN(g.device_filter, r.StringList("device_filter"));
  // Every MIG-capable GPU so far has 8 memory slices, 7 compute slices and at most 7 instances;
  // the limit of 8 keeps the exhaustive placement search small.
  SUANLI_ASSIGN_OR_RETURN(g.memory_slices, SmallInt(r, "memory_slices", 1, kMaxSlices));
  SUANLI_ASSIGN_OR_RETURN(g.compute_slices, SmallInt(r, "compute_slices", 1, kMaxSlices));
  SUANLI_ASSIGN_OR_RETURN(g.max_instances, SmallInt(r, "max_instances", 1, kMaxSlices));
  SUANLI_ASSIGN_OR_RETURN(g.source, ResolveSource(r, sources, "source"));
  SUANLI_ASSIGN_OR_RETURN(auto note, r.OptString("note"));
  g.note = note.value_or("");
  const toml::array* profiles = r.Array("profiles");
  if (!profiles || profiles->empty())
    return ParseError(r.Where("profiles") + ": at least one [[profiles]] table is required");
  if (profiles->size() > 32) return ParseError(r.Where("profiles") + ": more than 32 profiles");
  for (std::size_t i = 0; i < profiles->size(); ++i) {
    const toml::table* pt = (*profiles)[i].as_table();
    if (!pt) return ParseError(fmt::format("{}: profiles[{}] must be a table", file, i));
    detail::TableReader p(*pt, file, fmt::format("profiles[{}]", i), &sources);
    MigProfile prof;
    SUANLI_ASSIGN_OR_RETURN(prof.name, p.String("name"));
    SUANLI_ASSIGN_OR_RETURN(prof.id, SmallInt(p, "id", 0, 1000));
    SUANLI_ASSIGN_OR_RETURN(prof.compute_slices, SmallInt(p, "compute_slices", 1, g.compute_slices));
    SUANLI_ASSIGN_OR_RETURN(prof.memory_slices, SmallInt(p, "memory_slices", 1, g.memory_slices));
    SUANLI_ASSIGN_OR_RETURN(prof.max_instances, SmallInt(p, "max_instances", 1, g.max_instances));
    SUANLI_ASSIGN_OR_RETURN(prof.source, ResolveSource(p, sources, "source"));
    SUANLI_ASSIGN_OR_RETURN(prof.memory_bytes, p.Quantity("memory", Dimension::kBytes));
    const toml::array* pl = p.Array("placements");
    if (!pl || pl->empty()) return ParseError(p.Where("placements") + " must be a non-empty array of start slices");
    for (const auto& e : *pl) {
      if (!e.is_integer()) return ParseError(p.Where("placements") + " must hold integers");
      const int64_t s = e.as_integer()->get();
      if (s < 0 || s + prof.memory_slices > g.memory_slices)
        return ParseError(fmt::format("{}: start {} + {} memory slices exceeds the GPU's {} slices", p.Where("placements"),
                                      s, prof.memory_slices, g.memory_slices));
      if (!prof.placements.empty() && s <= prof.placements.back())
        return ParseError(p.Where("placements") + " must be strictly increasing start slices");
      prof.placements.push_back(static_cast<int>(s));
    }
    SUANLI_RETURN_IF_ERROR(p.CheckNoUnknownKeys());
    // The name states the compute slices ("3g.") and the +me suffix; they must agree with the fields.
    const std::string expect = fmt::format("{}g.", prof.compute_slices);
    if (prof.name.rfind(expect, 0) != 0)
      return ParseError(fmt::format("{}: name '{}' does not start with '{}' (compute_slices = {})", p.Where("name"),
                                    prof.name, expect, prof.compute_slices));
    prof.media_engines = prof.name.size() > 3 && prof.name.compare(prof.name.size() - 3, 3, "+me") == 0;
    if (!(prof.memory_bytes.value > 0)) return ParseError(p.Where("memory") + " must be positive");
    for (const auto& other : g.profiles) {
      if (other.name == prof.name || other.id == prof.id)
        return ParseError(fmt::format("{}: duplicate profile '{}' / ID {}", p.Where("name"), prof.name, prof.id));
    }
    g.profiles.push_back(std::move(prof));
  }
  SUANLI_RETURN_IF_ERROR(r.CheckNoUnknownKeys());
  return g;
}

Result<std::vector<MigGpu>> LoadMigTables(const CatalogOptions& options) {
  std::map<std::string, MigGpu> by_id;
  if (options.use_embedded) {
    for (const auto& f : detail::EmbeddedFilesUnder("data/mig/", ".toml")) {
      SUANLI_ASSIGN_OR_RETURN(MigGpu g, ParseMigToml(f.content, "embedded:" + std::string(f.path)));
      by_id[g.id] = std::move(g);
    }
  }
  namespace fs = std::filesystem;
  for (const auto& dir : options.user_dirs) {
    std::error_code ec;
    const fs::path mdir = fs::path(dir) / "mig";
    if (!fs::is_directory(mdir, ec)) continue;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(mdir, ec))
      if (e.path().extension() == ".toml") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& p : files) {
      SUANLI_ASSIGN_OR_RETURN(std::string text, detail::ReadFile(p.string()));
      SUANLI_ASSIGN_OR_RETURN(MigGpu g, ParseMigToml(text, p.string()));
      by_id[g.id] = std::move(g);
    }
  }
  std::vector<MigGpu> out;
  for (auto& [_, g] : by_id) out.push_back(std::move(g));
  return out;
}

Result<const MigGpu*> FindMigGpu(const std::vector<MigGpu>& tables, std::string_view id) {
  const std::string want = ToLower(id);
  for (const auto& t : tables) {
    if (t.id == want) return &t;
    for (const auto& g : t.gpus)
      if (g == want) return &t;
  }
  std::vector<std::string> names;
  auto add = [&](const std::string& n) {
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  };
  for (const auto& t : tables) {
    add(t.id);
    for (const auto& g : t.gpus) add(g);
  }
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  return NotFound(fmt::format("GPU '{}' has no MIG table (MIG-capable: {}){}", id, list, DidYouMean(id, names)));
}

Status CheckMigLayout(const MigGpu& gpu, const std::vector<MigInstance>& layout) {
  uint32_t used = 0;
  int compute = 0, media = 0;
  std::map<int, int> count;
  if (static_cast<int>(layout.size()) > gpu.max_instances)
    return InvalidArgument(fmt::format("{} instances exceed the {} GPU-instance limit of {}", layout.size(), gpu.id,
                                       gpu.max_instances));
  for (const auto& in : layout) {
    if (in.profile < 0 || in.profile >= static_cast<int>(gpu.profiles.size()))
      return InvalidArgument(fmt::format("profile index {} is not a {} profile", in.profile, gpu.id));
    const MigProfile& p = gpu.profiles[in.profile];
    if (std::find(p.placements.begin(), p.placements.end(), in.start) == p.placements.end())
      return InvalidArgument(fmt::format("{} cannot start at memory slice {}", p.name, in.start));
    if (in.start + p.memory_slices > gpu.memory_slices)
      return InvalidArgument(fmt::format("{} at slice {} runs past the GPU's {} memory slices", p.name, in.start,
                                         gpu.memory_slices));
    const uint32_t m = SliceMask(in.start, p.memory_slices);
    if (used & m) return InvalidArgument(fmt::format("{} at slice {} overlaps another instance's memory slices", p.name, in.start));
    used |= m;
    compute += p.compute_slices;
    if (p.media_engines) ++media;
    if (++count[in.profile] > p.max_instances)
      return InvalidArgument(fmt::format("more than {} instances of {}", p.max_instances, p.name));
  }
  if (compute > gpu.compute_slices)
    return InvalidArgument(fmt::format("{} compute slices exceed the GPU's {}", compute, gpu.compute_slices));
  if (media > 1) return InvalidArgument("more than one +me (media engines) instance on one GPU");
  return Status::Ok();
}

namespace {

// Depth-first placement of `order` (profile indices, largest first) onto free slices.
bool PlaceRec(const MigGpu& gpu, const std::vector<int>& order, std::size_t i, uint32_t used,
              std::vector<MigInstance>* out) {
  if (i == order.size()) return true;
  const MigProfile& p = gpu.profiles[order[i]];
  // Identical profiles: keep starts increasing, so each set of positions is tried once.
  int min_start = -1;
  if (i > 0 && order[i - 1] == order[i]) min_start = (*out)[i - 1].start;
  for (int s : p.placements) {
    if (s <= min_start) continue;
    const uint32_t m = SliceMask(s, p.memory_slices);
    if (used & m) continue;
    out->push_back(MigInstance{order[i], s, -1});
    if (PlaceRec(gpu, order, i + 1, used | m, out)) return true;
    out->pop_back();
  }
  return false;
}

bool ProfileBefore(const MigGpu& g, int a, int b) {
  const MigProfile& pa = g.profiles[a];
  const MigProfile& pb = g.profiles[b];
  if (pa.memory_slices != pb.memory_slices) return pa.memory_slices > pb.memory_slices;
  if (pa.compute_slices != pb.compute_slices) return pa.compute_slices > pb.compute_slices;
  // Fewer allowed placements first: the most constrained profile is placed first.
  if (pa.placements.size() != pb.placements.size()) return pa.placements.size() < pb.placements.size();
  return a < b;
}

}  // namespace

std::optional<std::vector<MigInstance>> PlaceOnGpu(const MigGpu& gpu, const std::vector<int>& profiles) {
  if (static_cast<int>(profiles.size()) > gpu.max_instances) return std::nullopt;
  int compute = 0, media = 0, mem = 0;
  std::map<int, int> count;
  for (int p : profiles) {
    if (p < 0 || p >= static_cast<int>(gpu.profiles.size())) return std::nullopt;
    const MigProfile& pr = gpu.profiles[p];
    compute += pr.compute_slices;
    mem += pr.memory_slices;
    media += pr.media_engines ? 1 : 0;
    if (++count[p] > pr.max_instances) return std::nullopt;
  }
  if (compute > gpu.compute_slices || mem > gpu.memory_slices || media > 1) return std::nullopt;
  std::vector<int> order = profiles;
  std::sort(order.begin(), order.end(), [&](int a, int b) { return ProfileBefore(gpu, a, b); });
  std::vector<MigInstance> out;
  if (!PlaceRec(gpu, order, 0, 0, &out)) return std::nullopt;
  std::sort(out.begin(), out.end(), [](const MigInstance& a, const MigInstance& b) { return a.start < b.start; });
  return out;
}

// ---- services ---------------------------------------------------------------------------

namespace {

Result<int64_t> ParsePositive(std::string_view key, std::string_view v, int64_t max) {
  int64_t x = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || ptr != v.data() + v.size() || x < 1 || x > max)
    return InvalidArgument(fmt::format("service '{}={}': expected a whole number from 1 to {}", key, v, max));
  return x;
}

constexpr int64_t kMaxContext = int64_t(1) << 24;   // 16M tokens
constexpr int64_t kMaxUsers = 1 << 20;
constexpr int kMaxReplicas = 4096;

Status CheckService(const MigService& s) {
  if (s.model.empty()) return InvalidArgument("a service needs a model");
  SUANLI_RETURN_IF_ERROR(ParseWeightFormat(s.weights).status());
  SUANLI_RETURN_IF_ERROR(ParseKvDtype(s.kv_dtype).status());
  if (s.context < 1 || s.context > kMaxContext) return InvalidArgument(fmt::format("service {}: context must be 1..{}", s.name, kMaxContext));
  if (s.users < 1 || s.users > kMaxUsers) return InvalidArgument(fmt::format("service {}: users must be 1..{}", s.name, kMaxUsers));
  if (s.replicas < 1 || s.replicas > kMaxReplicas)
    return InvalidArgument(fmt::format("service {}: replicas must be 1..{}", s.name, kMaxReplicas));
  if (s.min_compute_slices < 1 || s.min_compute_slices > 7)
    return InvalidArgument(fmt::format("service {}: compute must be 1..7 slices", s.name));
  return Status::Ok();
}

}  // namespace

Result<MigService> ParseServiceSpec(std::string_view spec) {
  MigService s;
  std::vector<std::string_view> parts;
  std::size_t pos = 0;
  while (true) {
    const std::size_t c = spec.find(':', pos);
    parts.push_back(spec.substr(pos, c == std::string_view::npos ? std::string_view::npos : c - pos));
    if (c == std::string_view::npos) break;
    pos = c + 1;
  }
  if (parts.empty() || parts[0].empty())
    return InvalidArgument(fmt::format("service '{}': expected model[:weights][:ctx=N][:users=N]...", spec));
  s.model = std::string(parts[0]);
  static const std::vector<std::string> kKeys = {"ctx", "context", "users", "kv", "replicas", "compute", "name", "media"};
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::string_view p = parts[i];
    const std::size_t eq = p.find('=');
    if (eq == std::string_view::npos) {
      if (p == "media") {
        s.media = true;
      } else if (i == 1) {
        s.weights = std::string(p);
      } else {
        return InvalidArgument(fmt::format("service '{}': '{}' is not key=value (keys: ctx, users, kv, replicas, "
                                           "compute, name, media; the weight format goes second){}",
                                           spec, p, DidYouMean(p, kKeys)));
      }
      continue;
    }
    const std::string key(p.substr(0, eq));
    const std::string_view val = p.substr(eq + 1);
    if (key == "ctx" || key == "context") {
      SUANLI_ASSIGN_OR_RETURN(s.context, ParsePositive(key, val, kMaxContext));
    } else if (key == "users") {
      SUANLI_ASSIGN_OR_RETURN(s.users, ParsePositive(key, val, kMaxUsers));
    } else if (key == "kv") {
      s.kv_dtype = std::string(val);
    } else if (key == "replicas") {
      SUANLI_ASSIGN_OR_RETURN(int64_t r, ParsePositive(key, val, kMaxReplicas));
      s.replicas = static_cast<int>(r);
    } else if (key == "compute") {
      SUANLI_ASSIGN_OR_RETURN(int64_t c, ParsePositive(key, val, 7));
      s.min_compute_slices = static_cast<int>(c);
    } else if (key == "name") {
      if (val.empty()) return InvalidArgument(fmt::format("service '{}': empty name", spec));
      s.name = std::string(val);
    } else if (key == "weights") {
      s.weights = std::string(val);
    } else {
      return InvalidArgument(fmt::format("service '{}': unknown key '{}'{}", spec, key, DidYouMean(key, kKeys)));
    }
  }
  if (s.name.empty()) s.name = s.model;
  SUANLI_RETURN_IF_ERROR(CheckService(s));
  return s;
}

Result<std::vector<MigService>> ParseServicesToml(std::string_view text, std::string_view file_sv) {
  const std::string file(file_sv);
  SUANLI_ASSIGN_OR_RETURN(toml::table doc, detail::ParseTomlText(text, file));
  detail::TableReader root(doc, file, "");
  const toml::array* arr = root.Array("service");
  SUANLI_RETURN_IF_ERROR(root.CheckNoUnknownKeys());
  if (!arr || arr->empty()) return ParseError(file + ": no [[service]] tables");
  std::vector<MigService> out;
  for (std::size_t i = 0; i < arr->size(); ++i) {
    const toml::table* t = (*arr)[i].as_table();
    if (!t) return ParseError(fmt::format("{}: service[{}] must be a table", file, i));
    detail::TableReader r(*t, file, fmt::format("service[{}]", i));
    MigService s;
    SUANLI_ASSIGN_OR_RETURN(s.model, r.String("model"));
    SUANLI_ASSIGN_OR_RETURN(auto name, r.OptString("name"));
    s.name = name.value_or(s.model);
    SUANLI_ASSIGN_OR_RETURN(auto w, r.OptString("weights"));
    if (w) s.weights = *w;
    SUANLI_ASSIGN_OR_RETURN(auto kv, r.OptString("kv_dtype"));
    if (kv) s.kv_dtype = *kv;
    SUANLI_ASSIGN_OR_RETURN(auto ctx, r.OptInt("context"));
    if (ctx) s.context = *ctx;
    SUANLI_ASSIGN_OR_RETURN(auto users, r.OptInt("users"));
    if (users) s.users = *users;
    SUANLI_ASSIGN_OR_RETURN(auto rep, r.OptInt("replicas"));
    if (rep) {
      if (*rep < 1 || *rep > kMaxReplicas) return ParseError(r.Where("replicas") + fmt::format(" must be 1..{}", kMaxReplicas));
      s.replicas = static_cast<int>(*rep);
    }
    SUANLI_ASSIGN_OR_RETURN(auto comp, r.OptInt("compute"));
    if (comp) {
      if (*comp < 1 || *comp > 7) return ParseError(r.Where("compute") + " must be 1..7");
      s.min_compute_slices = static_cast<int>(*comp);
    }
    SUANLI_ASSIGN_OR_RETURN(auto media, r.OptBool("media"));
    s.media = media.value_or(false);
    SUANLI_RETURN_IF_ERROR(r.CheckNoUnknownKeys());
    Status st = CheckService(s);
    if (!st.ok()) return st.WithContext(fmt::format("{}: service[{}]", file, i));
    out.push_back(std::move(s));
  }
  return out;
}

Result<FitResult> SizeService(const ModelSpec& model, const MigService& service) {
  SUANLI_RETURN_IF_ERROR(CheckService(service));
  FitRequest r;
  r.mode = Mode::kInfer;
  SUANLI_ASSIGN_OR_RETURN(r.weights, ParseWeightFormat(service.weights));
  SUANLI_ASSIGN_OR_RETURN(r.kv_bytes_per_elem, ParseKvDtype(service.kv_dtype));
  r.batch = service.users;
  r.seq = service.context;
  return EstimateMemory(model, r);
}

// ---- packing ------------------------------------------------------------------------------

std::optional<int> SmallestProfileFor(const MigGpu& gpu, double bytes, int min_compute, bool media, double reserve) {
  std::optional<int> best;
  for (int i = 0; i < static_cast<int>(gpu.profiles.size()); ++i) {
    const MigProfile& p = gpu.profiles[i];
    if (p.compute_slices >= gpu.compute_slices) continue;  // the whole GPU: no MIG
    if (p.media_engines != media) continue;
    if (p.compute_slices < min_compute) continue;
    if (p.memory_bytes.value * (1 - reserve) < bytes) continue;
    if (!best) {
      best = i;
      continue;
    }
    const MigProfile& b = gpu.profiles[*best];
    auto key = [](const MigProfile& x) { return std::make_tuple(x.memory_bytes.value, x.compute_slices, x.memory_slices); };
    if (key(p) < key(b)) best = i;
  }
  return best;
}

namespace {

struct Packer {
  const MigGpu& gpu;
  std::vector<int> items;          // profile index per item (items sorted largest first)
  std::vector<std::vector<int>> bins;  // item indices per GPU
  std::vector<std::vector<int>> best;
  long budget = 50000;             // search nodes for the exhaustive improvement
  bool exhausted = false;

  std::vector<int> ProfilesOf(const std::vector<int>& bin, int extra) const {
    std::vector<int> p;
    for (int i : bin) p.push_back(items[i]);
    if (extra >= 0) p.push_back(items[extra]);
    return p;
  }
  bool Fits(const std::vector<int>& bin, int item) const { return PlaceOnGpu(gpu, ProfilesOf(bin, item)).has_value(); }

  // Exhaustive: item i goes into an existing bin or into one new bin (symmetry broken by
  // opening bins in order); prunes at best.size() - 1 bins.
  void Search(std::size_t i, std::size_t limit) {
    if (--budget < 0) {
      exhausted = true;
      return;
    }
    if (i == items.size()) {
      if (bins.size() < best.size()) best = bins;
      return;
    }
    for (std::size_t b = 0; b < bins.size(); ++b) {
      if (!Fits(bins[b], static_cast<int>(i))) continue;
      bins[b].push_back(static_cast<int>(i));
      Search(i + 1, limit);
      bins[b].pop_back();
      if (best.size() <= limit || exhausted) return;
    }
    if (bins.size() + 1 < best.size()) {
      bins.push_back({static_cast<int>(i)});
      Search(i + 1, limit);
      bins.pop_back();
    }
  }
};

}  // namespace

Result<MigPlan> PackMig(const MigGpu& gpu, const std::vector<MigDemand>& demands, const MigOptions& options) {
  if (!(options.reserve >= 0 && options.reserve < 1)) return InvalidArgument("reserve must be within 0..1 (exclusive of 1)");
  MigPlan plan;
  plan.assignments.resize(demands.size());
  std::vector<int> demand_of_item;
  std::vector<int> item_profiles;
  for (std::size_t d = 0; d < demands.size(); ++d) {
    const MigDemand& dm = demands[d];
    if (!(dm.memory_bytes >= 0) || !std::isfinite(dm.memory_bytes))
      return InvalidArgument(fmt::format("service {}: memory must be a non-negative number", dm.name));
    MigAssignment& a = plan.assignments[d];
    a.demand = static_cast<int>(d);
    auto p = SmallestProfileFor(gpu, dm.memory_bytes, dm.min_compute_slices, dm.media, options.reserve);
    if (!p) {
      if (dm.media) {
        // A media service that does not fit a +me slice: say so rather than silently giving a whole GPU.
        bool any_me = false;
        for (const auto& pr : gpu.profiles) any_me |= pr.media_engines;
        if (!any_me) return Unsupported(fmt::format("service {}: {} has no +me profile", dm.name, gpu.id));
      }
      a.whole_gpu = true;
      continue;
    }
    a.profile = *p;
    a.usable_bytes = gpu.profiles[*p].memory_bytes.value * (1 - options.reserve);
    demand_of_item.push_back(static_cast<int>(d));
    item_profiles.push_back(*p);
  }
  // Largest first (memory slices, then compute slices).
  std::vector<int> order(item_profiles.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return ProfileBefore(gpu, item_profiles[a], item_profiles[b]); });
  Packer pk{gpu, {}, {}, {}};
  for (int o : order) pk.items.push_back(item_profiles[o]);

  // Lower bound: memory slices, compute slices, instance count, and the per-profile limits.
  int mem = 0, comp = 0, media = 0;
  std::map<int, int> count;
  for (int p : pk.items) {
    mem += gpu.profiles[p].memory_slices;
    comp += gpu.profiles[p].compute_slices;
    media += gpu.profiles[p].media_engines ? 1 : 0;
    ++count[p];
  }
  auto ceil_div = [](int a, int b) { return (a + b - 1) / b; };
  int lb = std::max({ceil_div(mem, gpu.memory_slices), ceil_div(comp, gpu.compute_slices),
                     ceil_div(static_cast<int>(pk.items.size()), gpu.max_instances), media});
  for (const auto& [p, n] : count) lb = std::max(lb, ceil_div(n, gpu.profiles[p].max_instances));
  plan.lower_bound_gpus = lb;
  if (lb > options.max_gpus)
    return InvalidArgument(fmt::format("the services need at least {} GPUs, more than the limit of {}", lb, options.max_gpus));

  // First-fit decreasing with an exact placement check per GPU.
  for (std::size_t i = 0; i < pk.items.size(); ++i) {
    bool placed = false;
    for (auto& bin : pk.bins) {
      if (pk.Fits(bin, static_cast<int>(i))) {
        bin.push_back(static_cast<int>(i));
        placed = true;
        break;
      }
    }
    if (!placed) pk.bins.push_back({static_cast<int>(i)});
  }
  pk.best = pk.bins;
  plan.proven_minimal = static_cast<int>(pk.best.size()) <= lb;
  // Exhaustive improvement for small sets (every GPU holds at most 7 instances, so 16 items
  // means at most a few GPUs; the node budget bounds the worst case).
  if (!plan.proven_minimal && pk.items.size() <= 16) {
    pk.bins.clear();
    pk.Search(0, static_cast<std::size_t>(lb));
    plan.proven_minimal = !pk.exhausted || static_cast<int>(pk.best.size()) <= lb;
  }

  for (const auto& bin : pk.best) {
    std::vector<int> profs = pk.ProfilesOf(bin, -1);
    auto placed = PlaceOnGpu(gpu, profs);
    if (!placed) return Internal("MIG packing produced a GPU with no valid placement");
    // Give each placed instance a service: match by profile in bin order.
    std::vector<bool> taken(bin.size(), false);
    MigGpuLayout layout;
    for (auto& inst : *placed) {
      for (std::size_t k = 0; k < bin.size(); ++k) {
        if (!taken[k] && pk.items[bin[k]] == inst.profile) {
          taken[k] = true;
          inst.service = demand_of_item[order[bin[k]]];
          break;
        }
      }
      layout.instances.push_back(inst);
    }
    SUANLI_RETURN_IF_ERROR(CheckMigLayout(gpu, layout.instances));
    const int g = static_cast<int>(plan.gpus.size());
    for (const auto& inst : layout.instances) plan.assignments[inst.service].gpu = g;
    plan.gpus.push_back(std::move(layout));
  }
  return plan;
}

std::vector<MigUpgrade> SpareComputeUpgrades(const MigGpu& gpu, const MigPlan& plan) {
  std::vector<MigUpgrade> out;
  for (std::size_t g = 0; g < plan.gpus.size(); ++g) {
    std::vector<MigInstance> layout = plan.gpus[g].instances;
    for (std::size_t i = 0; i < layout.size(); ++i) {
      const MigProfile& from = gpu.profiles[layout[i].profile];
      int best = -1;
      for (int p = 0; p < static_cast<int>(gpu.profiles.size()); ++p) {
        const MigProfile& to = gpu.profiles[p];
        if (to.memory_slices != from.memory_slices || to.compute_slices <= from.compute_slices ||
            to.media_engines != from.media_engines || to.compute_slices >= gpu.compute_slices)
          continue;
        if (best >= 0 && to.compute_slices <= gpu.profiles[best].compute_slices) continue;
        std::vector<MigInstance> trial = layout;
        trial[i].profile = p;
        if (CheckMigLayout(gpu, trial).ok()) best = p;
      }
      if (best < 0) continue;
      out.push_back(MigUpgrade{static_cast<int>(g), static_cast<int>(i), layout[i].profile, best});
      layout[i].profile = best;
    }
  }
  return out;
}

// ---- emitters -----------------------------------------------------------------------------

std::string NvidiaSmiCommands(const MigGpu& gpu, const MigGpuLayout& layout, int gpu_index) {
  std::string ids, where;
  for (const auto& in : layout.instances) {
    const MigProfile& p = gpu.profiles[in.profile];
    if (!ids.empty()) ids += ',';
    ids += std::to_string(p.id);
    where += fmt::format("{}{}@{}:{}", where.empty() ? "" : " ", p.name, in.start, p.memory_slices);
  }
  std::string out = fmt::format("# GPU {} ({}): {}\n", gpu_index, gpu.name, where.empty() ? "no instances" : where);
  out += fmt::format("sudo nvidia-smi -i {} -mig 1\n", gpu_index);
  if (!ids.empty()) out += fmt::format("sudo nvidia-smi mig -i {} -cgi {} -C\n", gpu_index, ids);
  return out;
}

std::string MigPartedYaml(const MigGpu& gpu, const MigPlan& plan, int whole_gpus, std::string_view config_name) {
  std::string y = "version: v1\nmig-configs:\n";
  y += fmt::format("  {}:\n", config_name);
  // Identical layouts (same profile counts) share one entry listing all their devices.
  std::vector<std::pair<std::map<std::string, int>, std::vector<int>>> groups;
  for (std::size_t g = 0; g < plan.gpus.size(); ++g) {
    std::map<std::string, int> counts;
    for (const auto& in : plan.gpus[g].instances) ++counts[gpu.profiles[in.profile].name];
    bool merged = false;
    for (auto& [c, devs] : groups) {
      if (c == counts) {
        devs.push_back(static_cast<int>(g));
        merged = true;
        break;
      }
    }
    if (!merged) groups.push_back({counts, {static_cast<int>(g)}});
  }
  auto dev_list = [](const std::vector<int>& d) {
    std::string s;
    for (int i : d) s += (s.empty() ? "" : ", ") + std::to_string(i);
    return "[" + s + "]";
  };
  for (const auto& [counts, devs] : groups) {
    y += fmt::format("    - devices: {}\n", dev_list(devs));
    y += "      mig-enabled: true\n";
    y += "      mig-devices:\n";
    for (const auto& [name, n] : counts) y += fmt::format("        \"{}\": {}\n", name, n);
  }
  if (whole_gpus > 0) {
    std::vector<int> devs;
    for (int i = 0; i < whole_gpus; ++i) devs.push_back(static_cast<int>(plan.gpus.size()) + i);
    y += fmt::format("    - devices: {}\n", dev_list(devs));
    y += "      mig-enabled: false\n";
  }
  return y;
}

}  // namespace suanli
