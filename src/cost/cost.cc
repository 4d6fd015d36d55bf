// Total cost of ownership (docs/methodology.md, "Total cost of ownership").
#include "suanli/cost.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "core/data_registry.h"
#include "core/files.h"
#include "core/toml_reader.h"
#include "suanli/text.h"
#include "suanli/units.h"

namespace suanli {

namespace {

Result<std::map<std::string, std::string>> ReadSources(detail::TableReader& root, const std::string& file,
                                                       bool required) {
  std::map<std::string, std::string> sources;
  const toml::table* st = root.SubTable("sources");
  if (!st) {
    if (required) return ParseError(file + ": missing [sources] table: every value must cite a source");
    return sources;
  }
  for (const auto& [k, v] : *st) {
    auto s = v.value<std::string>();
    if (!s || s->empty()) return ParseError(fmt::format("{}: key 'sources.{}' must be a non-empty string", file, k.str()));
    sources.emplace(std::string(k.str()), *s);
  }
  return sources;
}

std::string CiteGpu(const GpuSpec& g, const char* table, const char* key, const Sourced<double>& s) {
  std::string c = fmt::format("{} [{}] {}: {}", g.file, table, key, s.source);
  if (!s.note.empty()) c += " (" + s.note + ")";
  return c;
}

// The keys of [defaults] and of each [hosts.<class>] table: a quantity with a unit ("6250 USD", "575 W") or a plain
// number within [lo, hi] (units in the key name).
struct TcoKey {
  const char* key;
  std::optional<Dimension> dim;  // a quantity; nullopt: a plain number
  double lo, hi;
  Sourced<double> TcoAssumptions::*field;
  double TcoInputs::*input;
  const char* input_name;  // TcoInputs' field name, the provenance key
};
// Bounds far past any real amount per GPU: a typed exponent is an error, not a total of 1e304 USD.
constexpr double kMaxUsdPerGpu = 1e8, kMaxWattsPerGpu = 1e5;
const std::vector<TcoKey>& TcoKeys() {
  static const std::vector<TcoKey> keys = {
#define SUANLI_TCO_KEY(key, dim, lo, hi, name) \
  {key, dim, lo, hi, &TcoAssumptions::name, &TcoInputs::name, #name}
      SUANLI_TCO_KEY("server_share", Dimension::kUsd, 0, kMaxUsdPerGpu, server_share_usd),
      SUANLI_TCO_KEY("network_share", Dimension::kUsd, 0, kMaxUsdPerGpu, network_share_usd),
      SUANLI_TCO_KEY("storage_share", Dimension::kUsd, 0, kMaxUsdPerGpu, storage_share_usd),
      SUANLI_TCO_KEY("host_power", Dimension::kWatts, 0, kMaxWattsPerGpu, host_power_watts),
      SUANLI_TCO_KEY("pue", std::nullopt, 1, 5, pue),
      SUANLI_TCO_KEY("electricity_usd_per_kwh", std::nullopt, 0, 10, electricity_usd_per_kwh),
      SUANLI_TCO_KEY("hosting_usd_per_kw_month", std::nullopt, 0, 100000, hosting_usd_per_kw_month),
      SUANLI_TCO_KEY("staff_usd_per_gpu_year", std::nullopt, 0, 1e7, staff_usd_per_gpu_year),
      SUANLI_TCO_KEY("depreciation_years", std::nullopt, 0.1, 30, depreciation_years),
      SUANLI_TCO_KEY("utilisation", std::nullopt, 0, 1, utilisation),
#undef SUANLI_TCO_KEY
  };
  return keys;
}

// The keys a table sets, each with its citation ("<file> [<table>] <key>: <source> (<note>)").
Result<std::map<std::string, Sourced<double>>> ReadTcoKeys(detail::TableReader& d, const std::string& file,
                                                          const std::string& table) {
  std::map<std::string, Sourced<double>> out;
  for (const TcoKey& k : TcoKeys()) {
    std::optional<Sourced<double>> q;
    if (k.dim) {
      SUANLI_ASSIGN_OR_RETURN(q, d.OptQuantity(k.key, *k.dim));
    } else {
      SUANLI_ASSIGN_OR_RETURN(q, d.OptSourcedNumber(k.key));
    }
    if (!q) continue;
    if (!(q->value >= k.lo && q->value <= k.hi))
      return ParseError(fmt::format("{}: value {} is outside {}..{}", d.Where(k.key), q->value, k.lo, k.hi));
    std::string c = fmt::format("{} [{}] {}: {}", file, table, k.key, q->source);
    if (!q->note.empty()) c += " (" + q->note + ")";
    q->source = std::move(c);
    out.emplace(k.key, *q);
  }
  return out;
}

}  // namespace

Result<TcoAssumptions> ParseTcoToml(std::string_view text, std::string_view file_sv, const TcoAssumptions* base) {
  const std::string file(file_sv);
  SUANLI_ASSIGN_OR_RETURN(toml::table doc, detail::ParseTomlText(text, file));
  detail::TableReader root(doc, file, "");
  SUANLI_ASSIGN_OR_RETURN(auto sources, ReadSources(root, file, base == nullptr));
  detail::TableReader r(doc, file, "", &sources);
  r.SubTable("sources");
  const toml::table* dt = r.SubTable("defaults");
  const toml::table* ht = r.SubTable("hosts");
  SUANLI_RETURN_IF_ERROR(r.CheckNoUnknownKeys());
  if (!dt && !base) return ParseError(file + ": missing [defaults] table");
  TcoAssumptions a = base ? *base : TcoAssumptions{};
  a.file = base ? (base->file + " + " + file) : file;
  if (dt) {
    detail::TableReader d(*dt, file, "defaults", &sources);
    SUANLI_ASSIGN_OR_RETURN(auto set, ReadTcoKeys(d, file, "defaults"));
    SUANLI_RETURN_IF_ERROR(d.CheckNoUnknownKeys());
    for (const TcoKey& k : TcoKeys()) {
      auto it = set.find(k.key);
      if (it == set.end()) {
        if (!base) return ParseError(d.Where(k.key) + " is required but missing");
        continue;
      }
      a.*k.field = it->second;
      // This file's default replaces what earlier files' host classes set for the key.
      for (auto& [name, hc] : a.hosts) hc.values.erase(k.key);
    }
  }
  if (ht) {
    for (const auto& [name, node] : *ht) {
      const std::string where = fmt::format("hosts.{}", name.str());
      const toml::table* t = node.as_table();
      if (!t) return ParseError(fmt::format("{}: '{}' must be a table ([{}])", file, where, where));
      detail::TableReader h(*t, file, where, &sources);
      TcoAssumptions::HostClass& hc = a.hosts[std::string(name.str())];
      SUANLI_ASSIGN_OR_RETURN(auto desc, h.OptString("description"));
      if (desc) hc.description = *desc;
      SUANLI_ASSIGN_OR_RETURN(auto set, ReadTcoKeys(h, file, where));
      SUANLI_RETURN_IF_ERROR(h.CheckNoUnknownKeys());
      for (auto& [k, v] : set) hc.values[k] = std::move(v);
      if (hc.description.empty())
        return ParseError(fmt::format("{}: [{}] needs a description (what kind of machine the class is)", file, where));
    }
  }
  return a;
}

Result<TcoAssumptions> LoadTcoAssumptions(const CatalogOptions& options) {
  std::optional<TcoAssumptions> a;
  if (options.use_embedded) {
    const auto* f = detail::FindEmbeddedFile("data/tco.toml");
    if (!f) return Internal("data/tco.toml is not embedded in this build");
    SUANLI_ASSIGN_OR_RETURN(a, ParseTcoToml(f->content, "data/tco.toml"));
  }
  namespace fs = std::filesystem;
  for (const auto& dir : options.user_dirs) {
    std::error_code ec;
    const fs::path p = fs::path(dir) / "tco.toml";
    if (!fs::is_regular_file(p, ec)) continue;
    SUANLI_ASSIGN_OR_RETURN(std::string text, detail::ReadFile(p.string()));
    SUANLI_ASSIGN_OR_RETURN(a, ParseTcoToml(text, p.string(), a ? &*a : nullptr));
  }
  if (!a) return NotFound("no tco.toml: the embedded defaults are disabled and no user directory has one");
  return *a;
}

std::string HostClassFor(const GpuSpec& gpu) {
  if (gpu.form_factor == "laptop") return "laptop";
  if (gpu.segment == "consumer" || gpu.segment == "workstation") return "workstation";
  if (gpu.form_factor == "superchip") return "superchip";
  if (gpu.form_factor == "pcie" || gpu.form_factor == "nvl" || gpu.form_factor == "pcie-consumer") return "pcie-server";
  return "baseboard";
}

TcoInputs TcoInputsFor(const GpuSpec& gpu, const TcoAssumptions& a) {
  const std::string cls = HostClassFor(gpu);
  auto in = TcoInputsFor(gpu, a, a.hosts.count(cls) ? cls : std::string());
  return *in;  // the class is a.hosts' or none: never an error
}

Result<TcoInputs> TcoInputsFor(const GpuSpec& gpu, const TcoAssumptions& a, std::string_view host_class) {
  const TcoAssumptions::HostClass* hc = nullptr;
  if (!host_class.empty()) {
    auto it = a.hosts.find(std::string(host_class));
    if (it == a.hosts.end()) {
      std::vector<std::string> names;
      for (const auto& [n, c] : a.hosts) names.push_back(n);
      return InvalidArgument(fmt::format("unknown host class '{}'{}; the classes in {} are: {}", host_class,
                                         DidYouMean(host_class, names), a.file, fmt::join(names, ", ")));
    }
    hc = &it->second;
  }
  TcoInputs in;
  in.gpu_id = gpu.id;
  if (hc) {
    in.host_class = std::string(host_class);
    in.host_description = hc->description;
  }
  auto& pv = in.provenance;
  if (gpu.price_purchase_usd) {
    in.gpu_purchase_usd = gpu.price_purchase_usd->value;
    pv["gpu_purchase_usd"] = CiteGpu(gpu, "price", "purchase", *gpu.price_purchase_usd);
  }
  if (gpu.tdp_watts) {
    in.gpu_power_watts = gpu.tdp_watts->value;
    pv["gpu_power_watts"] = CiteGpu(gpu, "power", "tdp", *gpu.tdp_watts);
  }
  // Each assumption's value and where it came from (data file, user file or flag): the host class's where it sets
  // the key, else the defaults'.
  for (const TcoKey& k : TcoKeys()) {
    const Sourced<double>* v = &(a.*k.field);
    if (hc) {
      auto it = hc->values.find(k.key);
      if (it != hc->values.end()) v = &it->second;
    }
    in.*k.input = v->value;
    pv[k.input_name] = v->source;
  }
  auto cloud = [&](const char* kind, const char* key, const std::optional<Sourced<double>>& p) {
    if (!p) return;
    in.cloud.push_back(CloudPrice{kind, p->value, CiteGpu(gpu, "price", key, *p)});
  };
  cloud("on-demand", "cloud_on_demand", gpu.price_on_demand_usd_per_hour);
  cloud("reserved", "cloud_reserved", gpu.price_reserved_usd_per_hour);
  cloud("spot", "cloud_spot", gpu.price_spot_usd_per_hour);
  const std::optional<double> peak = gpu.PeakFlops(Precision::kBf16) ? gpu.PeakFlops(Precision::kBf16)
                                                                      : gpu.PeakFlops(Precision::kFp16);
  if (peak) {
    in.peak_flops = *peak;
    const auto& s = gpu.dense_peak.count(Precision::kBf16) ? gpu.dense_peak.at(Precision::kBf16)
                                                            : gpu.dense_peak.at(Precision::kFp16);
    pv["peak_flops"] = CiteGpu(gpu, "dense", gpu.dense_peak.count(Precision::kBf16) ? "bf16" : "fp16", s);
  }
  return in;
}

Status ValidateTcoInputs(const TcoInputs& in) {
  // Each amount between 0 and a bound far past any real one (an assumption file key's own bound where the amount is
  // one, so a flag cannot set what a file may not): a typed exponent gives an error, not totals of 1e304 USD.
  auto key_max = [](double TcoInputs::*input) {
    for (const TcoKey& k : TcoKeys())
      if (k.input == input) return k.hi;
    return std::numeric_limits<double>::infinity();  // not reached: every caller names a key's input
  };
  auto non_negative = [](double v, const char* what, const char* flag, double hi) -> Status {
    if (!std::isfinite(v) || v < 0)
      return InvalidArgument(fmt::format("{} must be a non-negative number, got {} (set it with {})", what, v, flag));
    if (v > hi) return InvalidArgument(fmt::format("{} must be at most {:g}, got {:g} ({})", what, hi, v, flag));
    return Status::Ok();
  };
  if (in.gpu_purchase_usd < 0 || !std::isfinite(in.gpu_purchase_usd) || in.gpu_purchase_usd > kMaxUsdPerGpu)
    return InvalidArgument(fmt::format("the GPU purchase price must be a positive number of USD, at most {:g}, got {:g} "
                                       "(--gpu-price-usd)", kMaxUsdPerGpu, in.gpu_purchase_usd));
  if (in.gpu_purchase_usd == 0)
    return InvalidArgument(fmt::format("no purchase price for {}: its data file has no [price] purchase; give one with "
                                       "--gpu-price-usd", in.gpu_id.empty() ? "this GPU" : in.gpu_id));
  SUANLI_RETURN_IF_ERROR(non_negative(in.server_share_usd, "the server share per GPU", "--server-usd",
                                      key_max(&TcoInputs::server_share_usd)));
  SUANLI_RETURN_IF_ERROR(non_negative(in.network_share_usd, "the network share per GPU", "--network-usd",
                                      key_max(&TcoInputs::network_share_usd)));
  SUANLI_RETURN_IF_ERROR(non_negative(in.storage_share_usd, "the storage share per GPU", "--storage-usd",
                                      key_max(&TcoInputs::storage_share_usd)));
  SUANLI_RETURN_IF_ERROR(non_negative(in.gpu_power_watts, "the GPU power", "--gpu-watts", kMaxWattsPerGpu));
  SUANLI_RETURN_IF_ERROR(non_negative(in.host_power_watts, "the host power per GPU", "--host-watts",
                                      key_max(&TcoInputs::host_power_watts)));
  SUANLI_RETURN_IF_ERROR(non_negative(in.electricity_usd_per_kwh, "the electricity price", "--usd-per-kwh",
                                      key_max(&TcoInputs::electricity_usd_per_kwh)));
  SUANLI_RETURN_IF_ERROR(non_negative(in.hosting_usd_per_kw_month, "the hosting price per kW-month",
                                      "--hosting-usd-per-kw-month", key_max(&TcoInputs::hosting_usd_per_kw_month)));
  SUANLI_RETURN_IF_ERROR(non_negative(in.hosting_usd_per_rack_month, "the hosting price per rack-month",
                                      "--hosting-usd-per-rack-month", 1e7));
  SUANLI_RETURN_IF_ERROR(non_negative(in.staff_usd_per_gpu_year, "the staff cost per GPU-year",
                                      "--staff-usd-per-gpu-year", key_max(&TcoInputs::staff_usd_per_gpu_year)));
  SUANLI_RETURN_IF_ERROR(non_negative(in.peak_flops, "the peak FLOP/s", "the GPU's data file", 1e18));
  if (!(in.utilisation >= 0 && in.utilisation <= 1))
    return InvalidArgument(fmt::format("utilisation must be within 0..1 (a fraction of hours), got {} (--utilisation)",
                                       in.utilisation));
  if (!(in.pue >= 1 && in.pue <= 5)) return InvalidArgument(fmt::format("PUE must be within 1..5, got {} (--pue)", in.pue));
  if (!(in.depreciation_years > 0 && in.depreciation_years <= 30))
    return InvalidArgument(fmt::format("the depreciation period must be within 0..30 years (exclusive of 0), got {} "
                                       "(--years)", in.depreciation_years));
  if (in.hosting_usd_per_rack_month > 0 && in.gpus_per_rack < 1)
    return InvalidArgument("--gpus-per-rack must be at least 1 when hosting is priced per rack");
  if (in.mfu && !(*in.mfu >= 1e-4 && *in.mfu <= 1))
    return InvalidArgument(fmt::format("MFU must be within 0.0001..1, got {:g} (--mfu)", *in.mfu));
  if (in.tokens_per_s && !(*in.tokens_per_s >= 1e-3 && *in.tokens_per_s <= 1e9))
    return InvalidArgument(
        fmt::format("tokens per second must be within 0.001..1e9, got {:g} (--tokens-per-s)", *in.tokens_per_s));
  if (in.gpus < 1 || in.gpus > 10000000) return InvalidArgument("--gpus must be within 1..10,000,000");
  for (const auto& c : in.cloud) {
    if (!std::isfinite(c.usd_per_hour) || c.usd_per_hour < 0 || c.usd_per_hour > 1e4)
      return InvalidArgument(fmt::format("the {} price must be a number of USD per GPU-hour from 0 to 10000, got {:g}",
                                         c.kind, c.usd_per_hour));
  }
  return Status::Ok();
}

double UsdPerMillionTokens(double usd_per_hour, double tokens_per_s) {
  if (!(tokens_per_s > 0)) return 0;
  return usd_per_hour / (tokens_per_s * 3600.0) * 1e6;
}

double UsdPerPflopDay(double usd_per_hour, double delivered_flops) {
  if (!(delivered_flops > 0)) return 0;
  return usd_per_hour * 24.0 / (delivered_flops / 1e15);
}

Result<TcoResult> ComputeTco(const TcoInputs& in) {
  SUANLI_RETURN_IF_ERROR(ValidateTcoInputs(in));
  TcoResult r;
  const double u = in.utilisation;
  const double used_hours = kHoursPerYear * u;
  r.capex_usd = in.gpu_purchase_usd + in.server_share_usd + in.network_share_usd + in.storage_share_usd;
  r.depreciation_usd_per_year = r.capex_usd / in.depreciation_years;
  r.it_power_watts = in.gpu_power_watts + in.host_power_watts;
  r.average_it_power_watts = r.it_power_watts * u;
  const double it_kwh = r.average_it_power_watts / 1000.0 * kHoursPerYear;
  r.energy_kwh_per_year = it_kwh * in.pue;
  r.power_usd_per_year = it_kwh * in.electricity_usd_per_kwh;
  r.cooling_usd_per_year = it_kwh * (in.pue - 1) * in.electricity_usd_per_kwh;
  if (in.hosting_usd_per_rack_month > 0) {
    r.hosting_usd_per_year = in.hosting_usd_per_rack_month * 12 / in.gpus_per_rack;
  } else {
    r.hosting_usd_per_year = in.hosting_usd_per_kw_month * 12 * r.it_power_watts / 1000.0;
  }
  r.staff_usd_per_year = in.staff_usd_per_gpu_year;
  r.opex_usd_per_year = r.power_usd_per_year + r.cooling_usd_per_year + r.hosting_usd_per_year + r.staff_usd_per_year;
  r.total_usd_per_year = r.depreciation_usd_per_year + r.opex_usd_per_year;
  r.lifetime_usd = r.total_usd_per_year * in.depreciation_years;
  r.usd_per_gpu_hour = r.total_usd_per_year / kHoursPerYear;
  if (used_hours > 0) r.usd_per_used_gpu_hour = r.total_usd_per_year / used_hours;
  r.marginal_usd_per_used_hour = r.it_power_watts / 1000.0 * in.pue * in.electricity_usd_per_kwh;
  // Costs that do not depend on use: what renting has to beat.
  const double fixed_usd_per_year = r.depreciation_usd_per_year + r.hosting_usd_per_year + r.staff_usd_per_year;

  const double delivered_flops = in.peak_flops * in.mfu.value_or(1.0);
  r.pflop_days_at_peak = !in.mfu.has_value();
  r.pflop_days_per_year = delivered_flops / 1e15 * used_hours / 24.0;
  if (r.pflop_days_per_year > 0) r.usd_per_pflop_day = r.total_usd_per_year / r.pflop_days_per_year;
  if (in.tokens_per_s && r.usd_per_used_gpu_hour)
    r.usd_per_million_tokens = UsdPerMillionTokens(*r.usd_per_used_gpu_hour, *in.tokens_per_s);

  for (const auto& c : in.cloud) {
    RentComparison rc;
    rc.price = c;
    rc.usd_per_year = c.usd_per_hour * used_hours;
    rc.usd_per_pflop_day = UsdPerPflopDay(c.usd_per_hour, delivered_flops);
    if (in.tokens_per_s) rc.usd_per_million_tokens = UsdPerMillionTokens(c.usd_per_hour, *in.tokens_per_s);
    // Owning wins when fixed + marginal x H x u < rent x H x u, i.e. u > fixed / (H x (rent - marginal)).
    const double margin = c.usd_per_hour - r.marginal_usd_per_used_hour;
    if (margin > 0) {
      const double ube = fixed_usd_per_year / (kHoursPerYear * margin);
      if (ube <= 1) rc.break_even_utilisation = ube;
    }
    // Months until capex + opex x m = rent x m (both at this utilisation).
    const double monthly_saving = rc.usd_per_year / 12 - r.opex_usd_per_year / 12;
    if (monthly_saving > 0) rc.break_even_months = r.capex_usd / monthly_saving;
    rc.owning_cheaper = r.total_usd_per_year < rc.usd_per_year;
    r.rent.push_back(rc);
  }
  r.fleet_total_usd_per_year = r.total_usd_per_year * in.gpus;
  r.fleet_capex_usd = r.capex_usd * in.gpus;
  r.notes.push_back("prices are indicative (dates and sources in 'provenance'); replace them with your quotes");
  r.notes.push_back("depreciation is straight-line over the period with no residual value; no financing cost");
  r.notes.push_back("power = (GPU TDP + host share) x utilisation, a simplification: idle GPUs still draw "
                    "some power, and busy ones often draw less than TDP");
  if (r.pflop_days_at_peak)
    r.notes.push_back("PFLOP-days are at the dense 16-bit peak (MFU 1); give --mfu for delivered compute");
  return r;
}

}  // namespace suanli
