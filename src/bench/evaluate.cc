// States, statistics, expectations and the judging of one measurement.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <numeric>

#include "core/data_registry.h"
#include "core/toml_reader.h"
#include "suanli/bench.h"
#include "suanli/text.h"
#include "suanli/units.h"

namespace suanli {

namespace {
constexpr const char* kStateNames[] = {"PASS", "WARN", "FAIL", "SKIP", "ERROR"};

// Severity order used to combine states: SKIP < PASS < WARN < ERROR < FAIL. A wrong result
// (FAIL) outranks "could not run" because it is the one that must never be missed.
int Severity(BenchState s) {
  switch (s) {
    case BenchState::kSkip: return 0;
    case BenchState::kPass: return 1;
    case BenchState::kWarn: return 2;
    case BenchState::kError: return 3;
    case BenchState::kFail: return 4;
  }
  return 4;
}

constexpr const char* kPcieSource =
    "PCI-SIG base specification line rates (Gen3-5 128b/130b coding, Gen6 FLIT 242/256) x lanes from the catalog";

bool PatternMatches(std::string_view pattern, std::string_view name) {
  if (!pattern.empty() && pattern.back() == '*') return name.substr(0, pattern.size() - 1) == pattern.substr(0, pattern.size() - 1);
  return pattern == name;
}
}  // namespace

const char* BenchStateName(BenchState s) { return kStateNames[static_cast<int>(s)]; }

std::optional<BenchState> BenchStateFromName(std::string_view name) {
  for (int i = 0; i < 5; ++i)
    if (name == kStateNames[i]) return static_cast<BenchState>(i);
  return std::nullopt;
}

BenchState WorseState(BenchState a, BenchState b) { return Severity(a) >= Severity(b) ? a : b; }

const char* BenchKindName(BenchKind k) {
  switch (k) {
    case BenchKind::kMemRead: return "mem_read";
    case BenchKind::kMemWrite: return "mem_write";
    case BenchKind::kMemCopy: return "mem_copy";
    case BenchKind::kMemTriad: return "mem_triad";
    case BenchKind::kMemcpyD2D: return "memcpy_d2d";
    case BenchKind::kGemm: return "gemm";
    case BenchKind::kLayerSequence: return "layer_sequence";
    case BenchKind::kH2D: return "h2d";
    case BenchKind::kD2H: return "d2h";
    case BenchKind::kP2P: return "p2p";
    case BenchKind::kLaunchLatency: return "launch_latency";
    case BenchKind::kAllReduce: return "allreduce";
    case BenchKind::kHarnessOverhead: return "harness_overhead";
  }
  return "?";
}

Result<Spread> ComputeSpread(std::vector<double> v) {
  if (v.empty()) return InvalidArgument("no samples");
  for (double x : v)
    if (!std::isfinite(x)) return InvalidArgument("a sample is not finite");
  std::sort(v.begin(), v.end());
  Spread s;
  const std::size_t n = v.size();
  s.samples = static_cast<int>(n);
  s.min = v.front();
  s.max = v.back();
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(n);
  if (n > 1) {
    double ss = 0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(ss / static_cast<double>(n - 1));
  }
  // Distribution-free 95% interval for the median: order statistics at n/2 -+ 1.96 sqrt(n)/2
  // (normal approximation to the binomial). Below 6 samples it is no tighter than the range.
  s.ci95_low = s.min;
  s.ci95_high = s.max;
  if (n >= 6) {
    const double half = 0.98 * std::sqrt(static_cast<double>(n));
    const long lo = std::max(0L, static_cast<long>(std::floor(n / 2.0 - half)));
    const long hi = std::min(static_cast<long>(n) - 1, static_cast<long>(std::ceil(n / 2.0 + half)));
    s.ci95_low = v[static_cast<std::size_t>(lo)];
    s.ci95_high = v[static_cast<std::size_t>(hi)];
  }
  return s;
}

// ---- expectations ---------------------------------------------------------------------------

Result<Expectations> Expectations::Parse(std::string_view text, std::string_view file_sv) {
  const std::string file(file_sv);
  SUANLI_ASSIGN_OR_RETURN(toml::table doc, detail::ParseTomlText(text, file));
  detail::TableReader root(doc, file, "");
  std::map<std::string, std::string> sources;
  const toml::table* st = root.SubTable("sources");
  if (!st) return ParseError(file + ": missing [sources] table: every fraction must cite a source");
  for (const auto& [k, v] : *st) {
    auto s = v.value<std::string>();
    if (!s || s->empty()) return ParseError(fmt::format("{}: key 'sources.{}' must be a non-empty string", file, k.str()));
    sources.emplace(std::string(k.str()), *s);
  }
  SUANLI_ASSIGN_OR_RETURN(auto schema, root.OptInt("schema"));
  if (!schema || *schema != 1) return ParseError(file + ": key 'schema' must be 1");
  Expectations e;
  const toml::array* rows = root.Array("expect");
  if (rows) {
    int i = 0;
    for (const auto& node : *rows) {
      const toml::table* t = node.as_table();
      const std::string path = fmt::format("expect[{}]", i++);
      if (!t) return ParseError(fmt::format("{}: {} must be a table", file, path));
      detail::TableReader r(*t, file, path, &sources);
      Expectation x;
      SUANLI_ASSIGN_OR_RETURN(x.family, r.String("family"));
      SUANLI_ASSIGN_OR_RETURN(x.test, r.String("test"));
      SUANLI_ASSIGN_OR_RETURN(auto pass, r.OptSourcedNumber("pass"));
      SUANLI_ASSIGN_OR_RETURN(auto fail, r.OptSourcedNumber("fail_below"));
      if (!pass || !fail) return ParseError(fmt::format("{}: {} needs both 'pass' and 'fail_below'", file, path));
      if (pass->value > 1.5 || fail->value > pass->value)
        return ParseError(fmt::format("{}: {}: need 0 <= fail_below <= pass <= 1.5 (fractions of the datasheet peak)",
                                      file, path));
      x.pass_fraction = pass->value;
      x.fail_below = fail->value;
      x.source = pass->source == fail->source ? pass->source : pass->source + "; " + fail->source;
      SUANLI_RETURN_IF_ERROR(r.CheckNoUnknownKeys());
      e.rows_.push_back(std::move(x));
    }
  }
  SUANLI_RETURN_IF_ERROR(root.CheckNoUnknownKeys());
  return e;
}

Result<Expectations> Expectations::LoadEmbedded() {
  const detail::EmbeddedFile* f = detail::FindEmbeddedFile("data/bench_expectations.toml");
  if (!f) return Internal("data/bench_expectations.toml is not embedded in this build");
  return Parse(f->content, "embedded:data/bench_expectations.toml");
}

std::string GpuFamily(const GpuSpec& gpu) {
  std::string mem = "other";
  if (gpu.memory_type) {
    const std::string t = ToLower(gpu.memory_type->value);
    if (t.rfind("hbm", 0) == 0) mem = "hbm";
    else if (t.rfind("gddr", 0) == 0) mem = "gddr";
  }
  return gpu.vendor + "-" + mem;
}

const Expectation* Expectations::Find(const GpuSpec& gpu, std::string_view test) const {
  const std::string family = GpuFamily(gpu);
  const Expectation* best = nullptr;
  int best_score = -1;
  for (const auto& x : rows_) {
    const bool by_id = x.family == gpu.id;
    if (!by_id && x.family != family) continue;
    if (!PatternMatches(x.test, test)) continue;
    const int score = (by_id ? 100000 : 0) + static_cast<int>(x.test.size()) + (x.test.back() == '*' ? 0 : 1000);
    if (score > best_score) {
      best = &x;
      best_score = score;
    }
  }
  return best;
}

const GpuSpec* MatchCatalogGpu(const HardwareCatalog& catalog, std::string_view device_name) {
  // Driver names ("NVIDIA H100 80GB HBM3", "Tesla T4", "NVIDIA GeForce RTX 4090") become
  // slugs that the catalog lists as ids or aliases.
  std::string slug;
  for (char c : ToLower(device_name)) {
    if (std::isalnum(static_cast<unsigned char>(c))) slug += c;
    else if (!slug.empty() && slug.back() != '-') slug += '-';
  }
  while (!slug.empty() && slug.back() == '-') slug.pop_back();
  std::vector<std::string> candidates = {slug};
  for (const char* prefix : {"nvidia-", "amd-", "intel-"}) {
    if (slug.rfind(prefix, 0) == 0) candidates.push_back(slug.substr(std::string_view(prefix).size()));
  }
  for (const auto& c : candidates) {
    auto g = catalog.FindGpu(c);
    if (g.ok()) return *g;
  }
  return nullptr;
}

std::optional<Sourced<double>> DatasheetPeak(const BenchCase& c, const GpuSpec& gpu) {
  auto pcie = [&]() -> std::optional<Sourced<double>> {
    if (!gpu.pcie_generation || !gpu.pcie_lanes) return std::nullopt;
    const double lane = PcieLaneBytesPerS(gpu.pcie_generation->value);
    if (lane <= 0) return std::nullopt;
    return Sourced<double>{lane * gpu.pcie_lanes->value, kPcieSource,
                           fmt::format("PCIe Gen{} x{}, one direction", gpu.pcie_generation->value,
                                       gpu.pcie_lanes->value)};
  };
  switch (c.kind) {
    case BenchKind::kMemRead:
    case BenchKind::kMemWrite:
    case BenchKind::kMemCopy:
    case BenchKind::kMemTriad:
    case BenchKind::kMemcpyD2D:
      if (gpu.memory_bandwidth_bytes_per_s.value <= 0) return std::nullopt;
      return gpu.memory_bandwidth_bytes_per_s;
    case BenchKind::kGemm:
    case BenchKind::kLayerSequence: {
      auto it = gpu.dense_peak.find(c.precision);
      if (it == gpu.dense_peak.end()) return std::nullopt;
      return it->second;
    }
    case BenchKind::kH2D:
    case BenchKind::kD2H: return HostBandwidthPerDirection(gpu);  // NVLink-C2C on Grace superchips, else PCIe
    case BenchKind::kP2P:
    case BenchKind::kAllReduce:
      if (gpu.link_bandwidth_per_direction_bytes_per_s) return *gpu.link_bandwidth_per_direction_bytes_per_s;
      return pcie();
    case BenchKind::kLaunchLatency:
    case BenchKind::kHarnessOverhead: return std::nullopt;
  }
  return std::nullopt;
}

BenchResult Evaluate(const BenchCase& c, const Measurement& m, const GpuSpec* gpu, const Expectations& expect) {
  BenchResult r;
  r.name = c.name;
  r.device = c.on_gpu ? fmt::format("gpu{}", c.device) : "cpu";
  r.device_index = c.on_gpu ? c.device : -1;
  r.kind = c.kind;
  r.unit = c.unit;
  r.higher_is_better = c.higher_is_better;
  r.convention = c.convention;
  r.bytes = c.bytes;
  if (c.kind == BenchKind::kGemm || c.kind == BenchKind::kLayerSequence) r.precision = PrecisionKey(c.precision);
  r.gemms = c.gemms;
  r.checked = m.checked;
  r.mismatches = m.mismatches;
  r.nans = m.nans;
  r.check_method = m.check_method;
  if (m.outcome == BenchState::kSkip || m.outcome == BenchState::kError) {
    r.state = m.outcome;
    r.message = m.message.empty() ? "no reason given" : m.message;
    return r;
  }
  // Correctness first: a wrong result is FAIL however fast it was.
  if (m.mismatches > 0 || m.nans > 0) {
    r.state = BenchState::kFail;
    r.message = fmt::format("wrong result: {} of {} checked values differ from the reference, {} NaN/Inf", m.mismatches,
                            m.checked, m.nans);
  } else if (m.checked <= 0) {
    r.state = BenchState::kError;
    r.message = "the result was not verified (no values checked); refusing to report PASS";
  }
  if (m.seconds.empty() || m.work_per_rep <= 0) {
    r.state = WorseState(r.state == BenchState::kSkip ? BenchState::kError : r.state, BenchState::kError);
    if (r.message.empty()) r.message = "no timed repetitions";
    return r;
  }
  std::vector<double> values;
  values.reserve(m.seconds.size());
  for (double s : m.seconds) {
    if (!(s > 0) || !std::isfinite(s)) {
      r.state = WorseState(r.state, BenchState::kError);
      r.message = "a repetition reported a non-positive time (timer error)";
      return r;
    }
    values.push_back(c.higher_is_better ? m.work_per_rep / s : s / m.work_per_rep);
  }
  auto spread = ComputeSpread(values);
  if (!spread.ok()) {
    r.state = BenchState::kError;
    r.message = spread.status().message();
    return r;
  }
  r.spread = *spread;
  r.value = spread->median;
  if (gpu != nullptr) {
    if (auto peak = DatasheetPeak(c, *gpu)) {
      r.peak = peak->value;
      r.peak_source = peak->note.empty() ? peak->source : peak->source + " (" + peak->note + ")";
      if (peak->value > 0) r.fraction = r.value / peak->value;
    }
    if (const Expectation* x = expect.Find(*gpu, c.name)) {
      r.expected_fraction = x->pass_fraction;
      r.fail_below = x->fail_below;
      r.expectation_source = x->source;
    }
  }
  if (r.state == BenchState::kFail || r.state == BenchState::kError) return r;
  r.state = BenchState::kPass;
  if (r.fraction && r.expected_fraction && r.fail_below) {
    if (*r.fraction < *r.fail_below) {
      r.state = BenchState::kFail;
      r.message = fmt::format("{:.1f}% of datasheet peak, below the failure floor {:.0f}%", 100 * *r.fraction,
                              100 * *r.fail_below);
    } else if (*r.fraction < *r.expected_fraction) {
      r.state = BenchState::kWarn;
      r.message = fmt::format("{:.1f}% of datasheet peak, below the expected {:.0f}%", 100 * *r.fraction,
                              100 * *r.expected_fraction);
    }
  } else if (c.on_gpu && gpu == nullptr) {
    r.message = "GPU not in the catalog: no datasheet peak, judged on correctness only";
  } else if (c.on_gpu && !r.expected_fraction && r.peak) {
    r.message = "judged on correctness only (no published fraction for this test and GPU family)";
  }
  // A note from the backend (e.g. "no direct peer access: staged through the host") is kept.
  if (!m.message.empty()) r.message = r.message.empty() ? m.message : r.message + "; " + m.message;
  return r;
}

}  // namespace suanli
