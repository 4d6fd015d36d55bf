// The calibration file: measured ceilings for the performance model (docs/bench-method.md §8).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/toml_reader.h"
#include "suanli/bench.h"

namespace suanli {

namespace {
constexpr const char* kSchema = "suanli.calibration/1";
// Link keys and the case each is measured by.
struct LinkKey {
  const char* key;
  const char* case_name;
};
constexpr LinkKey kLinkKeys[] = {
    {"h2d_pinned", "gpu.copy.h2d.pinned"},
    {"d2h_pinned", "gpu.copy.d2h.pinned"},
    {"h2d_pageable", "gpu.copy.h2d.pageable"},
    {"d2h_pageable", "gpu.copy.d2h.pageable"},
    {"p2p", "gpu.p2p."},  // prefix: the median over this GPU's peers
    {"allreduce_busbw", "gpu.nccl.allreduce"},
};

Result<double> PositiveNumber(detail::TableReader& r, std::string_view key, bool required) {
  SUANLI_ASSIGN_OR_RETURN(auto v, r.OptNumber(key));
  if (!v) {
    if (required) return ParseError(r.Where(key) + " is required but missing");
    return 0.0;
  }
  if (!std::isfinite(*v) || *v <= 0) return ParseError(r.Where(key) + " must be a positive number");
  return *v;
}
}  // namespace

Result<Calibration> ParseCalibrationToml(std::string_view text, std::string_view file_sv) {
  const std::string file(file_sv);
  SUANLI_ASSIGN_OR_RETURN(toml::table doc, detail::ParseTomlText(text, file));
  detail::TableReader root(doc, file, "");
  Calibration c;
  SUANLI_ASSIGN_OR_RETURN(std::string schema, root.String("schema"));
  if (schema != kSchema) return ParseError(fmt::format("{}: schema '{}' is not supported (expected '{}')", file, schema, kSchema));
  SUANLI_ASSIGN_OR_RETURN(auto gpu, root.OptString("gpu"));
  SUANLI_ASSIGN_OR_RETURN(auto name, root.OptString("device_name"));
  SUANLI_ASSIGN_OR_RETURN(auto uuid, root.OptString("device_uuid"));
  SUANLI_ASSIGN_OR_RETURN(auto at, root.OptString("measured_at"));
  c.gpu = gpu.value_or("");
  c.device_name = name.value_or("");
  c.device_uuid = uuid.value_or("");
  c.measured_at = at.value_or("");
  if (const toml::table* mt = root.SubTable("memory")) {
    detail::TableReader m(*mt, file, "memory");
    SUANLI_ASSIGN_OR_RETURN(double bw, PositiveNumber(m, "bandwidth_bytes_per_s", true));
    c.memory_bandwidth_bytes_per_s = bw;
    SUANLI_ASSIGN_OR_RETURN(auto conv, m.OptString("convention"));
    (void)conv;  // informational
    SUANLI_RETURN_IF_ERROR(m.CheckNoUnknownKeys());
  }
  if (const toml::array* ga = root.Array("gemm")) {
    int i = 0;
    for (const auto& node : *ga) {
      const std::string path = fmt::format("gemm[{}]", i++);
      const toml::table* t = node.as_table();
      if (!t) return ParseError(fmt::format("{}: {} must be a table", file, path));
      detail::TableReader g(*t, file, path);
      SUANLI_ASSIGN_OR_RETURN(std::string pk, g.String("precision"));
      auto p = PrecisionFromKey(pk);
      if (!p) return ParseError(g.Where("precision") + ": unknown precision '" + pk + "' (fp32, tf32, fp16, bf16, fp8, int8)");
      CalibrationGemm e;
      for (auto [key, dst] : {std::pair<const char*, int64_t*>{"m", &e.m}, {"n", &e.n}, {"k", &e.k}}) {
        SUANLI_ASSIGN_OR_RETURN(auto v, g.OptInt(key));
        if (!v || *v <= 0) return ParseError(g.Where(key) + " must be a positive integer");
        *dst = *v;
      }
      SUANLI_ASSIGN_OR_RETURN(e.flops_per_s, PositiveNumber(g, "flops_per_s", true));
      SUANLI_RETURN_IF_ERROR(g.CheckNoUnknownKeys());
      c.gemm[*p].push_back(e);
    }
  }
  for (auto& [p, v] : c.gemm)
    std::sort(v.begin(), v.end(), [](const CalibrationGemm& a, const CalibrationGemm& b) {
      return std::tie(a.m, a.n, a.k) < std::tie(b.m, b.n, b.k);
    });
  if (const toml::table* lt = root.SubTable("links")) {
    detail::TableReader l(*lt, file, "links");
    for (const auto& lk : kLinkKeys) {
      const std::string key = std::string(lk.key) + "_bytes_per_s";
      SUANLI_ASSIGN_OR_RETURN(double v, PositiveNumber(l, key, false));
      if (v > 0) c.link_bandwidth_bytes_per_s[lk.key] = v;
    }
    SUANLI_RETURN_IF_ERROR(l.CheckNoUnknownKeys());
  }
  if (const toml::table* kt = root.SubTable("kernel")) {
    detail::TableReader k(*kt, file, "kernel");
    SUANLI_ASSIGN_OR_RETURN(double v, PositiveNumber(k, "launch_latency_s", true));
    c.launch_latency_s = v;
    SUANLI_RETURN_IF_ERROR(k.CheckNoUnknownKeys());
  }
  SUANLI_RETURN_IF_ERROR(root.CheckNoUnknownKeys());
  if (!c.memory_bandwidth_bytes_per_s && c.gemm.empty() && c.link_bandwidth_bytes_per_s.empty() &&
      !c.launch_latency_s)
    return ParseError(file + ": no measurement in the file ([memory], [[gemm]] or [links])");
  return c;
}

std::string CalibrationToToml(const Calibration& c) {
  auto q = [](const std::string& s) {
    std::string o = "\"";
    for (char ch : s) {
      if (ch == '"' || ch == '\\') o += '\\';
      if (static_cast<unsigned char>(ch) >= 0x20) o += ch;
    }
    return o + "\"";
  };
  std::string out = "# Measured ceilings from `suanli bench` for `suanli perf --calibration`. Units are in the key names;\n"
                    "# all rates are per GPU. Format: docs/bench-method.md section 8.\n";
  out += fmt::format("schema = {}\n", q(kSchema));
  if (!c.gpu.empty()) out += fmt::format("gpu = {}\n", q(c.gpu));
  if (!c.device_name.empty()) out += fmt::format("device_name = {}\n", q(c.device_name));
  if (!c.device_uuid.empty()) out += fmt::format("device_uuid = {}\n", q(c.device_uuid));
  if (!c.measured_at.empty()) out += fmt::format("measured_at = {}\n", q(c.measured_at));
  if (c.memory_bandwidth_bytes_per_s) {
    out += fmt::format("\n[memory]\nbandwidth_bytes_per_s = {:.6g}\n", *c.memory_bandwidth_bytes_per_s);
    out += "convention = \"STREAM triad, 2 reads + 1 write counted\"\n";
  }
  if (!c.link_bandwidth_bytes_per_s.empty()) {
    out += "\n[links]\n";
    for (const auto& [k, v] : c.link_bandwidth_bytes_per_s) out += fmt::format("{}_bytes_per_s = {:.6g}\n", k, v);
  }
  if (c.launch_latency_s) out += fmt::format("\n[kernel]\nlaunch_latency_s = {:.6g}\n", *c.launch_latency_s);
  for (const auto& [p, rows] : c.gemm) {
    for (const auto& g : rows) {
      out += fmt::format("\n[[gemm]]\nprecision = {}\nm = {}\nn = {}\nk = {}\nflops_per_s = {:.6g}\n", q(PrecisionKey(p)),
                         g.m, g.n, g.k, g.flops_per_s);
    }
  }
  return out;
}

Result<Calibration> CalibrationFromResults(const std::vector<BenchResult>& results, const DeviceInfo& device,
                                           const std::string& measured_at) {
  Calibration c;
  c.gpu = device.catalog_id;
  c.device_name = device.name;
  c.device_uuid = device.uuid;
  c.measured_at = measured_at;
  const std::string dev = fmt::format("gpu{}", device.index);
  std::vector<double> p2p;
  for (const auto& r : results) {
    if (r.device != dev || (r.state != BenchState::kPass && r.state != BenchState::kWarn) || r.value <= 0) continue;
    if (r.name == "gpu.mem.triad") c.memory_bandwidth_bytes_per_s = r.value;
    if (r.name == "gpu.launch_latency") c.launch_latency_s = r.value;
    if (r.kind == BenchKind::kGemm && r.gemms.size() == 1) {
      auto p = PrecisionFromKey(r.precision);
      if (p) c.gemm[*p].push_back({r.gemms[0].m, r.gemms[0].n, r.gemms[0].k, r.value});
    }
    for (const auto& lk : kLinkKeys) {
      if (std::string_view(lk.key) == "p2p") {
        if (r.name.rfind(lk.case_name, 0) == 0) p2p.push_back(r.value);
      } else if (r.name == lk.case_name) {
        c.link_bandwidth_bytes_per_s[lk.key] = r.value;
      }
    }
  }
  if (!p2p.empty()) {
    std::sort(p2p.begin(), p2p.end());
    c.link_bandwidth_bytes_per_s["p2p"] = p2p[p2p.size() / 2];
  }
  for (auto& [p, v] : c.gemm)
    std::sort(v.begin(), v.end(), [](const CalibrationGemm& a, const CalibrationGemm& b) {
      return std::tie(a.m, a.n, a.k) < std::tie(b.m, b.n, b.k);
    });
  if (!c.memory_bandwidth_bytes_per_s && c.gemm.empty() && c.link_bandwidth_bytes_per_s.empty() &&
      !c.launch_latency_s)
    return NotFound(fmt::format("no PASS or WARN GPU measurement for {} ({}) to calibrate from", dev, device.name));
  return c;
}

}  // namespace suanli
