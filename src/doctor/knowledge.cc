// Loading of data/doctor/{xid,compat,thresholds}.toml: strict (unknown keys rejected) and every
// entry must cite a source id defined in the file's [sources] table.
#include <fmt/format.h>

#include <algorithm>

#include "core/data_registry.h"
#include "core/toml_reader.h"
#include "suanli/doctor.h"

namespace suanli::doctor {

namespace {

using detail::TableReader;
using Sources = std::map<std::string, std::string>;

Result<Sources> ReadSources(const toml::table& doc, const std::string& file) {
  Sources sources;
  const toml::node* n = doc.get("sources");
  const toml::table* st = n ? n->as_table() : nullptr;
  if (!st) return ParseError(file + ": missing [sources] table: every entry must cite a source");
  for (const auto& [k, v] : *st) {
    auto s = v.value<std::string>();
    if (!s || s->empty()) return ParseError(fmt::format("{}: key 'sources.{}' must be a non-empty string", file, k.str()));
    sources.emplace(std::string(k.str()), *s);
  }
  return sources;
}

Result<std::string> ResolveSource(TableReader& r, const Sources& sources) {
  SUANLI_ASSIGN_OR_RETURN(std::string id, r.String("source"));
  auto it = sources.find(id);
  if (it == sources.end()) {
    std::vector<std::string> ids;
    for (const auto& [k, _] : sources) ids.push_back(k);
    return ParseError(fmt::format("{}: source '{}' is not defined in [sources]", r.Where("source"), id));
  }
  return it->second;
}

// Iterates an array of tables, giving each a TableReader; rejects non-table elements.
template <typename F>
Status ForEachTable(TableReader& root, const std::string& file, const char* key, F&& f) {
  const toml::array* a = root.Array(key);
  if (!a) return Status::Ok();
  std::size_t i = 0;
  for (const auto& e : *a) {
    const toml::table* t = e.as_table();
    if (!t) return ParseError(fmt::format("{}: '{}' must be an array of tables", file, key));
    TableReader r(*t, file, fmt::format("{}[{}]", key, i++));
    SUANLI_RETURN_IF_ERROR(f(r));
    SUANLI_RETURN_IF_ERROR(r.CheckNoUnknownKeys());
  }
  return Status::Ok();
}

Status ParseXid(std::string_view text, const std::string& file, DoctorKnowledge* k) {
  SUANLI_ASSIGN_OR_RETURN(toml::table doc, detail::ParseTomlText(text, file));
  SUANLI_ASSIGN_OR_RETURN(Sources sources, ReadSources(doc, file));
  TableReader root(doc, file, "");
  root.SubTable("sources");
  SUANLI_RETURN_IF_ERROR(ForEachTable(root, file, "xid", [&](TableReader& r) -> Status {
    XidInfo x;
    SUANLI_ASSIGN_OR_RETURN(auto code, r.OptInt("code"));
    if (!code || *code <= 0 || *code > 100000) return ParseError(r.Where("code") + " must be a positive integer");
    x.code = static_cast<int>(*code);
    SUANLI_ASSIGN_OR_RETURN(x.mnemonic, r.String("mnemonic"));
    SUANLI_ASSIGN_OR_RETURN(x.description, r.String("description"));
    SUANLI_ASSIGN_OR_RETURN(x.severity, r.String("severity"));
    if (x.severity != "fatal" && x.severity != "warning" && x.severity != "info")
      return ParseError(r.Where("severity") + " must be fatal, warning or info");
    SUANLI_ASSIGN_OR_RETURN(x.immediate, r.String("immediate"));
    SUANLI_ASSIGN_OR_RETURN(x.investigatory, r.String("investigatory"));
    SUANLI_ASSIGN_OR_RETURN(x.causes, r.String("causes"));
    SUANLI_ASSIGN_OR_RETURN(x.action, r.String("action"));
    SUANLI_ASSIGN_OR_RETURN(auto symp, r.OptBool("sympathetic"));
    x.sympathetic = symp.value_or(false);
    SUANLI_ASSIGN_OR_RETURN(x.source, ResolveSource(r, sources));
    if (!k->xids.emplace(x.code, x).second) return ParseError(fmt::format("{}: Xid {} listed twice", file, x.code));
    return Status::Ok();
  }));
  SUANLI_RETURN_IF_ERROR(ForEachTable(root, file, "sxid", [&](TableReader& r) -> Status {
    SxidRange s;
    SUANLI_ASSIGN_OR_RETURN(auto first, r.OptInt("first"));
    SUANLI_ASSIGN_OR_RETURN(auto last, r.OptInt("last"));
    if (!first || !last || *first <= 0 || *last < *first || *last > 1000000)
      return ParseError(r.Where("first") + ": first and last must be integers with 0 < first <= last");
    s.first = static_cast<int>(*first);
    s.last = static_cast<int>(*last);
    SUANLI_ASSIGN_OR_RETURN(s.name, r.String("name"));
    SUANLI_ASSIGN_OR_RETURN(s.fatality, r.String("class"));
    if (s.fatality != "non-fatal" && s.fatality != "potentially fatal" && s.fatality != "always fatal")
      return ParseError(r.Where("class") + " must be non-fatal, potentially fatal or always fatal");
    SUANLI_ASSIGN_OR_RETURN(s.source, ResolveSource(r, sources));
    k->sxids.push_back(s);
    return Status::Ok();
  }));
  return root.CheckNoUnknownKeys();
}

Status ParseCompat(std::string_view text, const std::string& file, DoctorKnowledge* k) {
  SUANLI_ASSIGN_OR_RETURN(toml::table doc, detail::ParseTomlText(text, file));
  SUANLI_ASSIGN_OR_RETURN(Sources sources, ReadSources(doc, file));
  TableReader root(doc, file, "");
  root.SubTable("sources");
  SUANLI_RETURN_IF_ERROR(ForEachTable(root, file, "cuda_driver", [&](TableReader& r) -> Status {
    CudaDriverMin c;
    SUANLI_ASSIGN_OR_RETURN(c.cuda, r.String("cuda"));
    SUANLI_ASSIGN_OR_RETURN(c.release, r.String("release"));
    SUANLI_ASSIGN_OR_RETURN(c.min_driver, r.String("min_driver"));
    SUANLI_ASSIGN_OR_RETURN(c.source, ResolveSource(r, sources));
    k->cuda_driver_min.push_back(c);
    return Status::Ok();
  }));
  SUANLI_RETURN_IF_ERROR(ForEachTable(root, file, "minor_compat", [&](TableReader& r) -> Status {
    MinorCompat m;
    SUANLI_ASSIGN_OR_RETURN(auto major, r.OptInt("cuda_major"));
    if (!major || *major <= 0 || *major > 100) return ParseError(r.Where("cuda_major") + " must be a CUDA major version");
    m.cuda_major = static_cast<int>(*major);
    SUANLI_ASSIGN_OR_RETURN(m.min_driver, r.String("min_driver"));
    SUANLI_ASSIGN_OR_RETURN(m.source, ResolveSource(r, sources));
    k->minor_compat.push_back(m);
    return Status::Ok();
  }));
  SUANLI_RETURN_IF_ERROR(ForEachTable(root, file, "arch_support", [&](TableReader& r) -> Status {
    ArchSupport a;
    SUANLI_ASSIGN_OR_RETURN(auto major, r.OptInt("cuda_major"));
    if (!major || *major <= 0 || *major > 100) return ParseError(r.Where("cuda_major") + " must be a CUDA major version");
    a.cuda_major = static_cast<int>(*major);
    SUANLI_ASSIGN_OR_RETURN(a.min_cc, r.String("min_cc"));
    SUANLI_ASSIGN_OR_RETURN(a.max_cc, r.String("max_cc"));
    SUANLI_ASSIGN_OR_RETURN(a.source, ResolveSource(r, sources));
    k->arch_support.push_back(a);
    return Status::Ok();
  }));
  SUANLI_RETURN_IF_ERROR(ForEachTable(root, file, "torch", [&](TableReader& r) -> Status {
    TorchRelease t;
    SUANLI_ASSIGN_OR_RETURN(t.version, r.String("version"));
    SUANLI_ASSIGN_OR_RETURN(t.cuda_tags, r.StringList("cuda_tags"));
    SUANLI_ASSIGN_OR_RETURN(t.source, ResolveSource(r, sources));
    k->torch_releases.push_back(t);
    return Status::Ok();
  }));
  SUANLI_RETURN_IF_ERROR(ForEachTable(root, file, "wheel_archs", [&](TableReader& r) -> Status {
    WheelArchs w;
    SUANLI_ASSIGN_OR_RETURN(w.tag, r.String("tag"));
    SUANLI_ASSIGN_OR_RETURN(w.torch_min, r.String("torch_min"));
    SUANLI_ASSIGN_OR_RETURN(w.torch_max, r.String("torch_max"));
    SUANLI_ASSIGN_OR_RETURN(w.archs, r.StringList("archs"));
    if (w.archs.empty()) return ParseError(r.Where("archs") + " must list at least one architecture");
    SUANLI_ASSIGN_OR_RETURN(w.source, ResolveSource(r, sources));
    k->wheel_archs.push_back(w);
    return Status::Ok();
  }));
  SUANLI_RETURN_IF_ERROR(ForEachTable(root, file, "gpu_arch", [&](TableReader& r) -> Status {
    GpuArchByName g;
    SUANLI_ASSIGN_OR_RETURN(g.match, r.String("match"));
    SUANLI_ASSIGN_OR_RETURN(g.cc, r.String("cc"));
    SUANLI_ASSIGN_OR_RETURN(g.source, ResolveSource(r, sources));
    k->gpu_arch_by_name.push_back(g);
    return Status::Ok();
  }));
  SUANLI_RETURN_IF_ERROR(ForEachTable(root, file, "error_signature", [&](TableReader& r) -> Status {
    ErrorSignature e;
    SUANLI_ASSIGN_OR_RETURN(e.id, r.String("id"));
    SUANLI_ASSIGN_OR_RETURN(e.text, r.String("text"));
    SUANLI_ASSIGN_OR_RETURN(e.meaning, r.String("meaning"));
    SUANLI_ASSIGN_OR_RETURN(e.source, ResolveSource(r, sources));
    k->error_signatures.push_back(e);
    return Status::Ok();
  }));
  return root.CheckNoUnknownKeys();
}

// Every threshold the rules read; a missing one is an error at load time, not a silent 0.
const char* const kThresholdKeys[] = {
    "temp_warn_margin_c",  "temp_warn_default_c",   "tlimit_warn_headroom_c", "busy_util_pct",
    "low_power_fraction",  "peer_temp_delta_c",     "peer_power_fraction",    "peer_clock_fraction",
    "mem_full_fraction",   "mem_full_low_util_pct", "oom_fragmentation_fraction", "sbe_volatile_warn",
    "incident_window_s",
};

Status ParseThresholds(std::string_view text, const std::string& file, DoctorKnowledge* k) {
  SUANLI_ASSIGN_OR_RETURN(toml::table doc, detail::ParseTomlText(text, file));
  SUANLI_ASSIGN_OR_RETURN(Sources sources, ReadSources(doc, file));
  TableReader root(doc, file, "");
  root.SubTable("sources");
  const toml::table* t = root.SubTable("threshold");
  if (!t) return ParseError(file + ": missing [threshold] table");
  TableReader r(*t, file, "threshold", &sources);
  for (const char* key : kThresholdKeys) {
    SUANLI_ASSIGN_OR_RETURN(auto v, r.OptSourcedNumber(key));
    if (!v) return ParseError(r.Where(key) + " is required but missing");
    k->thresholds[key] = v->value;
    k->thresholds_source[key] = v->source + (v->note.empty() ? "" : " (" + v->note + ")");
  }
  SUANLI_RETURN_IF_ERROR(r.CheckNoUnknownKeys());
  return root.CheckNoUnknownKeys();
}

}  // namespace

Result<DoctorKnowledge> DoctorKnowledge::FromText(std::string_view xid_toml, std::string_view compat_toml,
                                                  std::string_view thresholds_toml) {
  DoctorKnowledge k;
  SUANLI_RETURN_IF_ERROR(ParseXid(xid_toml, "data/doctor/xid.toml", &k));
  SUANLI_RETURN_IF_ERROR(ParseCompat(compat_toml, "data/doctor/compat.toml", &k));
  SUANLI_RETURN_IF_ERROR(ParseThresholds(thresholds_toml, "data/doctor/thresholds.toml", &k));
  return k;
}

Result<DoctorKnowledge> DoctorKnowledge::LoadEmbedded() {
  const detail::EmbeddedFile* x = detail::FindEmbeddedFile("data/doctor/xid.toml");
  const detail::EmbeddedFile* c = detail::FindEmbeddedFile("data/doctor/compat.toml");
  const detail::EmbeddedFile* t = detail::FindEmbeddedFile("data/doctor/thresholds.toml");
  if (!x || !c || !t) return Internal("doctor data files are not embedded in this build");
  return FromText(x->content, c->content, t->content);
}

const XidInfo* DoctorKnowledge::FindXid(int code) const {
  auto it = xids.find(code);
  return it == xids.end() ? nullptr : &it->second;
}

const SxidRange* DoctorKnowledge::FindSxid(int code) const {
  const SxidRange* best = nullptr;
  for (const auto& s : sxids) {
    if (code >= s.first && code <= s.last && (!best || s.last - s.first < best->last - best->first)) best = &s;
  }
  return best;
}

double DoctorKnowledge::Threshold(const std::string& key) const {
  auto it = thresholds.find(key);
  return it == thresholds.end() ? 0.0 : it->second;
}

}  // namespace suanli::doctor
