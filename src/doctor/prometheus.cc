// Prometheus text exposition parser for dcgm-exporter scrapes. Groups samples by
// (host, GPU index); MIG-instance samples (GPU_I_ID label) are counted but not merged into the
// whole-GPU values. DCGM "not supported" sentinels (>= 0x7ffffffffffffff0) are treated as absent.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "doctor/util.h"
#include "suanli/doctor.h"

namespace suanli::doctor {

namespace {

using detail::Trim;

// DCGM blank/not-supported values start at DCGM_INT64_BLANK (0x7ffffffffffffff0); see
// dcgm-exporter.md 6c. Compared as double, so anything this large is a sentinel.
constexpr double kDcgmSentinel = 9.2233720368547758e18;
constexpr std::size_t kMaxGpus = 100000;

struct Sample {
  std::string metric;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Parses `name{k="v",...} value [ts]`. Returns false on malformed lines.
bool ParseSample(std::string_view line, Sample* s) {
  std::size_t i = 0;
  while (i < line.size() && (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_' || line[i] == ':')) ++i;
  if (i == 0) return false;
  s->metric = std::string(line.substr(0, i));
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (true) {
      while (i < line.size() && (line[i] == ' ' || line[i] == ',')) ++i;
      if (i >= line.size()) return false;
      if (line[i] == '}') {
        ++i;
        break;
      }
      std::size_t k0 = i;
      while (i < line.size() && line[i] != '=' && line[i] != '}' && line[i] != ',') ++i;
      if (i >= line.size() || line[i] != '=') return false;
      std::string key(Trim(line.substr(k0, i - k0)));
      ++i;
      if (i >= line.size() || line[i] != '"') return false;
      ++i;
      std::string val;
      while (i < line.size() && line[i] != '"') {
        if (line[i] == '\\' && i + 1 < line.size()) {
          char c = line[i + 1];
          val.push_back(c == 'n' ? '\n' : c);
          i += 2;
          continue;
        }
        val.push_back(line[i++]);
        if (val.size() > 4096) return false;
      }
      if (i >= line.size()) return false;
      ++i;  // closing quote
      if (s->labels.size() < 64) s->labels[key] = std::move(val);
    }
  }
  std::string_view rest = Trim(line.substr(i));
  std::size_t sp = rest.find(' ');
  std::string_view num = sp == std::string_view::npos ? rest : rest.substr(0, sp);
  // NaN and +/-Inf are valid sample values in the text format: a sample without a usable value (absent), not a
  // malformed line; so is a number past a double's range.
  if (num == "NaN" || num == "+Inf" || num == "-Inf" || num == "Inf") {
    s->value = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  auto v = detail::LeadingNumber(num);
  // Scientific notation ("1.5e+09") is not covered by LeadingNumber; handle it here.
  if (num.find_first_of("eE") != std::string_view::npos) {
    std::string tmp(num);
    char* end = nullptr;
    const double d = std::strtod(tmp.c_str(), &end);
    if (end != tmp.c_str() + tmp.size()) return false;
    v = std::isfinite(d) ? d : std::numeric_limits<double>::quiet_NaN();
  }
  if (!v) return false;
  s->value = *v;
  return true;
}

std::string Label(const Sample& s, std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    auto it = s.labels.find(k);
    if (it != s.labels.end()) return it->second;
  }
  return "";
}

}  // namespace

Result<PrometheusParse> ParsePrometheus(std::string_view text, std::string_view name) {
  PrometheusParse out;
  std::map<std::pair<std::string, std::string>, std::size_t> by_key;  // (host, gpu) -> index
  std::map<std::pair<std::string, std::string>, std::set<std::string>> mig_ids;
  bool cut = false;
  int64_t bad = 0;
  detail::ForEachLine(
      text,
      [&](std::string_view line, int64_t n) {
        line = Trim(line);
        if (line.empty() || line[0] == '#') return true;
        Sample s;
        if (!ParseSample(line, &s)) {
          if (++bad <= 5) out.problems.push_back(fmt::format("{}:{}: not a Prometheus sample: {}", name, n, detail::Clip(line, 120)));
          return bad < 100000;
        }
        ++out.samples;
        std::string gpu = Label(s, {"gpu"});
        if (gpu.empty()) return true;  // NVSwitch / CPU metrics
        std::string host = Label(s, {"Hostname", "hostname", "instance"});
        auto key = std::make_pair(host, gpu);
        auto it = by_key.find(key);
        if (it == by_key.end()) {
          if (out.gpus.size() >= kMaxGpus) return false;
          GpuTelemetry t;
          t.origin = std::string(name);
          t.origin_line = n;
          t.host = host;
          if (auto i = detail::LeadingInt(gpu); i && *i >= 0 && *i < 100000) t.index = static_cast<int>(*i);
          t.pci_bus_id = NormalizeBusId(Label(s, {"pci_bus_id"}));
          t.uuid = Label(s, {"UUID", "uuid", "gpu_uuid"});
          t.name = Label(s, {"modelName", "model_name"});
          t.driver_version = Label(s, {"DCGM_FI_DRIVER_VERSION"});
          it = by_key.emplace(key, out.gpus.size()).first;
          out.gpus.push_back(std::move(t));
        }
        GpuTelemetry& t = out.gpus[it->second];
        if (!std::isfinite(s.value) || s.value >= kDcgmSentinel || s.value < -kDcgmSentinel) return true;
        if (!Label(s, {"GPU_I_ID"}).empty()) {
          mig_ids[key].insert(Label(s, {"GPU_I_ID"}));
          t.mig_devices = static_cast<int>(mig_ids[key].size());
          t.mig_current = "Enabled";
          return true;
        }
        const std::string& m = s.metric;
        const double v = s.value;
        auto I = [](double x) { return static_cast<int64_t>(x); };
        if (m == "DCGM_FI_DEV_GPU_TEMP" || m == "dcgm_gpu_temp") t.temp_c = v;
        else if (m == "DCGM_FI_DEV_MEMORY_TEMP" || m == "dcgm_memory_temp") t.mem_temp_c = v;
        else if (m == "DCGM_FI_DEV_POWER_USAGE" || m == "dcgm_power_usage") t.power_w = v;
        else if (m == "DCGM_FI_DEV_POWER_MGMT_LIMIT" || m == "DCGM_FI_DEV_ENFORCED_POWER_LIMIT") t.power_limit_w = v;
        else if (m == "DCGM_FI_DEV_GPU_UTIL" || m == "dcgm_gpu_utilization") t.util_gpu_pct = v;
        else if (m == "DCGM_FI_DEV_MEM_COPY_UTIL" || m == "dcgm_mem_copy_utilization") t.util_mem_pct = v;
        else if (m == "DCGM_FI_DEV_FB_USED" || m == "dcgm_fb_used") {
          t.mem_used_mib = v;
          if (t.mem_total_mib) t.mem_total_mib = *t.mem_total_mib + v;
        } else if (m == "DCGM_FI_DEV_FB_FREE" || m == "dcgm_fb_free") {
          t.mem_total_mib = v + t.mem_used_mib.value_or(0);
        } else if (m == "DCGM_FI_DEV_SM_CLOCK" || m == "dcgm_sm_clock") t.sm_clock_mhz = v;
        else if (m == "DCGM_FI_DEV_PCIE_REPLAY_COUNTER" || m == "dcgm_pcie_replay_counter") t.pcie_replays = I(v);
        else if (m == "DCGM_FI_DEV_XID_ERRORS" || m == "dcgm_xid_errors") {
          if (v > 0) t.xid_last = v;
        } else if (m == "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS") t.remap_unc = I(v);
        else if (m == "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS") t.remap_corr = I(v);
        else if (m == "DCGM_FI_DEV_ROW_REMAP_FAILURE") t.remap_failure = v != 0;
        else if (m == "DCGM_FI_DEV_ROW_REMAP_PENDING") t.remap_pending = v != 0;
        else if (m == "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL") t.ecc_vol_uncorr = I(v);
        else if (m == "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL") t.ecc_vol_corr = I(v);
        else if (m == "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL") t.ecc_agg_uncorr = I(v);
        else if (m == "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL") t.ecc_agg_corr = I(v);
        else if (m == "DCGM_FI_DEV_RETIRED_SBE") t.retired_sbe = I(v);
        else if (m == "DCGM_FI_DEV_RETIRED_DBE") t.retired_dbe = I(v);
        else if (m == "DCGM_FI_DEV_RETIRED_PENDING") t.retired_pending = v != 0;
        else if (m == "DCGM_FI_DEV_POWER_VIOLATION") t.throttle_violation_power_s = v / 1e9;  // ns
        else if (m == "DCGM_FI_DEV_THERMAL_VIOLATION") t.throttle_violation_thermal_s = v / 1e9;
        else if (m == "DCGM_FI_DEV_CLOCKS_EVENT_REASONS" || m == "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS") {
          // NVML clocks-event bit mask (nvidia-smi.md 5b).
          const uint64_t b = static_cast<uint64_t>(v);
          t.thr_idle = (b & 0x1) != 0;
          t.thr_app_clocks = (b & 0x2) != 0;
          t.thr_sw_power_cap = (b & 0x4) != 0;
          t.thr_hw_slowdown = (b & 0x8) != 0;
          t.thr_sync_boost = (b & 0x10) != 0;
          t.thr_sw_thermal = (b & 0x20) != 0;
          t.thr_hw_thermal = (b & 0x40) != 0;
          t.thr_power_brake = (b & 0x80) != 0;
        }
        return true;
      },
      65536, &cut);
  if (out.samples == 0) return ParseError(fmt::format("{}: no Prometheus samples found", name));
  if (cut) out.problems.push_back(fmt::format("{}: a line longer than 64 KiB was cut", name));
  if (bad > 5) out.problems.push_back(fmt::format("{}: {} malformed lines in all", name, bad));
  return out;
}

}  // namespace suanli::doctor
