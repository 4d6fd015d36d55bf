// JSON form of bench runs ("suanli.bench/1"): written to stdout with --json and stored whole
// in the history database; parsed back by the store.
#include <nlohmann/json.hpp>

#include "bench/internal.h"
#include "suanli/bench.h"
#include "suanli/store.h"

namespace suanli {

using json = nlohmann::json;

namespace {

json Opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

std::optional<double> OptFrom(const json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  return j[key].get<double>();
}

json SpreadJson(const Spread& s) {
  return {{"samples", s.samples}, {"median", s.median}, {"min", s.min},           {"max", s.max},
          {"mean", s.mean},       {"stddev", s.stddev}, {"ci95_low", s.ci95_low}, {"ci95_high", s.ci95_high}};
}

Spread SpreadFrom(const json& j) {
  Spread s;
  s.samples = j.value("samples", 0);
  s.median = j.value("median", 0.0);
  s.min = j.value("min", 0.0);
  s.max = j.value("max", 0.0);
  s.mean = j.value("mean", 0.0);
  s.stddev = j.value("stddev", 0.0);
  s.ci95_low = j.value("ci95_low", 0.0);
  s.ci95_high = j.value("ci95_high", 0.0);
  return s;
}

BenchKind KindFrom(const std::string& name) {
  for (int k = 0; k <= static_cast<int>(BenchKind::kHarnessOverhead); ++k)
    if (name == BenchKindName(static_cast<BenchKind>(k))) return static_cast<BenchKind>(k);
  return BenchKind::kMemRead;
}

}  // namespace

namespace detail {

json DeviceInfoJson(const DeviceInfo& d) {
  return {{"index", d.index},
          {"is_gpu", d.is_gpu},
          {"name", d.name},
          {"uuid", d.uuid},
          {"serial", d.serial},
          {"pci_bus_id", d.pci_bus_id},
          {"driver_version", d.driver_version},
          {"cuda_version", d.cuda_version},
          {"compute_capability", d.compute_capability},
          {"sm_count", d.sm_count},
          {"memory_bytes", d.memory_bytes},
          {"l2_bytes", d.l2_bytes},
          {"catalog_id", d.catalog_id}};
}

DeviceInfo DeviceInfoFrom(const json& j) {
  DeviceInfo d;
  d.index = j.value("index", 0);
  d.is_gpu = j.value("is_gpu", false);
  d.name = j.value("name", "");
  d.uuid = j.value("uuid", "");
  d.serial = j.value("serial", "");
  d.pci_bus_id = j.value("pci_bus_id", "");
  d.driver_version = j.value("driver_version", "");
  d.cuda_version = j.value("cuda_version", "");
  d.compute_capability = j.value("compute_capability", "");
  d.sm_count = j.value("sm_count", 0);
  d.memory_bytes = j.value("memory_bytes", 0.0);
  d.l2_bytes = j.value("l2_bytes", 0.0);
  d.catalog_id = j.value("catalog_id", "");
  return d;
}

std::string MeasurementToText(const Measurement& m) {
  json j = {{"outcome", BenchStateName(m.outcome)}, {"message", m.message},   {"seconds", m.seconds},
            {"work_per_rep", m.work_per_rep},       {"checked", m.checked},   {"mismatches", m.mismatches},
            {"nans", m.nans},                       {"check_method", m.check_method}};
  return j.dump();
}

Measurement MeasurementFromText(const std::string& text) {
  Measurement m;
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    m.outcome = BenchState::kError;
    m.message = "the benchmark process returned unreadable output";
    return m;
  }
  m.outcome = BenchStateFromName(j.value("outcome", "ERROR")).value_or(BenchState::kError);
  m.message = j.value("message", "");
  if (j.contains("seconds")) m.seconds = j["seconds"].get<std::vector<double>>();
  m.work_per_rep = j.value("work_per_rep", 0.0);
  m.checked = j.value("checked", int64_t{0});
  m.mismatches = j.value("mismatches", int64_t{0});
  m.nans = j.value("nans", int64_t{0});
  m.check_method = j.value("check_method", "");
  return m;
}

json IdleJson(const IdleReport& r) {
  return {{"known", r.known},
          {"idle", r.idle},
          {"reasons", r.reasons},
          {"temperature_c", Opt(r.temperature_c)},
          {"sm_clock_mhz", Opt(r.sm_clock_mhz)},
          {"sm_clock_max_mhz", Opt(r.sm_clock_max_mhz)},
          {"compute_processes", r.compute_processes ? json(*r.compute_processes) : json(nullptr)}};
}

}  // namespace detail

json BenchResultJson(const BenchResult& r) {
  json gemms = json::array();
  for (const auto& g : r.gemms)
    gemms.push_back({{"name", g.name}, {"m", g.m}, {"n", g.n}, {"k", g.k}, {"batch", g.batch}});
  return {{"name", r.name},
          {"device", r.device},
          {"device_index", r.device_index},
          {"kind", BenchKindName(r.kind)},
          {"state", BenchStateName(r.state)},
          {"message", r.message},
          {"value", r.value},
          {"unit", r.unit},
          {"higher_is_better", r.higher_is_better},
          {"spread", SpreadJson(r.spread)},
          {"peak", Opt(r.peak)},
          {"peak_source", r.peak_source},
          {"fraction_of_peak", Opt(r.fraction)},
          {"expected_fraction", Opt(r.expected_fraction)},
          {"fail_below_fraction", Opt(r.fail_below)},
          {"expectation_source", r.expectation_source},
          {"convention", r.convention},
          {"bytes", r.bytes},
          {"precision", r.precision},
          {"gemms", gemms},
          {"check", {{"checked", r.checked}, {"mismatches", r.mismatches}, {"nans", r.nans}, {"method", r.check_method}}}};
}

std::string BenchResultJsonKey() { return "results"; }

std::string BenchRunToJson(const BenchRun& run) {
  json j;
  j["schema"] = "suanli.bench/1";
  j["suanli_version"] = run.suanli_version;
  j["started_at"] = run.started_at;
  json numa = json::array();
  for (const auto& n : run.host.numa) numa.push_back({{"id", n.id}, {"cpus", n.cpus}, {"memory_bytes", n.memory_bytes}});
  j["host"] = {{"hostname", run.host.hostname}, {"cpu_model", run.host.cpu_model},
               {"logical_cpus", run.host.logical_cpus}, {"memory_bytes", run.host.memory_bytes},
               {"kernel", run.host.kernel}, {"numa", numa}, {"blas", run.host.blas}};
  j["gpu_backend"] = run.gpu_backend_status;
  json devs = json::array();
  for (const auto& d : run.devices) devs.push_back(detail::DeviceInfoJson(d));
  j["devices"] = devs;
  json idle = json::object();
  for (const auto& [i, r] : run.idle) idle[std::to_string(i)] = detail::IdleJson(r);
  j["idle"] = idle;
  json results = json::array();
  for (const auto& r : run.results) results.push_back(BenchResultJson(r));
  j["results"] = results;
  j["overall"] = BenchStateName(run.Overall());
  return j.dump(2);
}

Result<BenchRun> BenchRunFromJson(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return ParseError("bench run JSON does not parse");
  if (j.value("schema", "") != "suanli.bench/1")
    return ParseError("bench run JSON has schema '" + j.value("schema", "") + "', expected suanli.bench/1");
  try {
    BenchRun run;
    run.suanli_version = j.value("suanli_version", "");
    run.started_at = j.value("started_at", "");
    const json& h = j.at("host");
    run.host.hostname = h.value("hostname", "");
    run.host.cpu_model = h.value("cpu_model", "");
    run.host.logical_cpus = h.value("logical_cpus", 0);
    run.host.memory_bytes = h.value("memory_bytes", 0.0);
    run.host.kernel = h.value("kernel", "");
    run.host.blas = h.value("blas", "");
    for (const auto& n : h.value("numa", json::array()))
      run.host.numa.push_back({n.value("id", 0), n.value("cpus", ""), n.value("memory_bytes", 0.0)});
    run.gpu_backend_status = j.value("gpu_backend", "");
    for (const auto& d : j.value("devices", json::array())) run.devices.push_back(detail::DeviceInfoFrom(d));
    const json idle = j.value("idle", json::object());
    for (const auto& [k, v] : idle.items()) {
      IdleReport r;
      r.known = v.value("known", false);
      r.idle = v.value("idle", true);
      r.reasons = v.value("reasons", std::vector<std::string>());
      r.temperature_c = OptFrom(v, "temperature_c");
      r.sm_clock_mhz = OptFrom(v, "sm_clock_mhz");
      r.sm_clock_max_mhz = OptFrom(v, "sm_clock_max_mhz");
      if (v.contains("compute_processes") && !v["compute_processes"].is_null())
        r.compute_processes = v["compute_processes"].get<int>();
      run.idle[std::stoi(k)] = r;
    }
    for (const auto& r : j.at("results")) {
      BenchResult x;
      x.name = r.at("name").get<std::string>();
      x.device = r.value("device", "");
      x.device_index = r.value("device_index", -1);
      x.kind = KindFrom(r.value("kind", ""));
      auto st = BenchStateFromName(r.value("state", ""));
      if (!st) return ParseError("bench run JSON: result '" + x.name + "' has an unknown state");
      x.state = *st;
      x.message = r.value("message", "");
      x.value = r.value("value", 0.0);
      x.unit = r.value("unit", "");
      x.higher_is_better = r.value("higher_is_better", true);
      if (r.contains("spread")) x.spread = SpreadFrom(r["spread"]);
      x.peak = OptFrom(r, "peak");
      x.peak_source = r.value("peak_source", "");
      x.fraction = OptFrom(r, "fraction_of_peak");
      x.expected_fraction = OptFrom(r, "expected_fraction");
      x.fail_below = OptFrom(r, "fail_below_fraction");
      x.expectation_source = r.value("expectation_source", "");
      x.convention = r.value("convention", "");
      x.bytes = r.value("bytes", int64_t{0});
      x.precision = r.value("precision", "");
      for (const auto& g : r.value("gemms", json::array()))
        x.gemms.push_back({g.value("name", ""), g.value("m", int64_t{0}), g.value("n", int64_t{0}),
                           g.value("k", int64_t{0}), g.value("batch", int64_t{1})});
      if (r.contains("check")) {
        const json& c = r["check"];
        x.checked = c.value("checked", int64_t{0});
        x.mismatches = c.value("mismatches", int64_t{0});
        x.nans = c.value("nans", int64_t{0});
        x.check_method = c.value("method", "");
      }
      run.results.push_back(std::move(x));
    }
    return run;
  } catch (const json::exception& e) {
    return ParseError(std::string("bench run JSON: ") + e.what());
  }
}

}  // namespace suanli
