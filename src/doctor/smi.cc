// nvidia-smi parsers: `-q -x` XML (pugixml) and `--query-gpu` / `--query-compute-apps` CSV.
// Element and field names changed across drivers (clocks_throttle_* -> clocks_event_*,
// power_readings -> gpu_power_readings, *_threshold -> *_tlimit_threshold, pre-Ampere ECC
// layout); each value is looked up under every known name, newest first.
#include <fmt/format.h>

#include <pugixml.hpp>

#include <map>

#include "doctor/util.h"
#include "suanli/doctor.h"

namespace suanli::doctor {

namespace {

using detail::LeadingInt;
using detail::LeadingNumber;
using detail::ParseFlag;
using detail::Trim;

// Text of the first existing path among `paths` ("a/b/c"), or nullopt (missing or N/A).
std::optional<std::string> Text(const pugi::xml_node& n, std::initializer_list<const char*> paths) {
  for (const char* path : paths) {
    pugi::xml_node cur = n;
    std::string_view p(path);
    bool ok = true;
    while (!p.empty()) {
      std::size_t slash = p.find('/');
      std::string part(p.substr(0, slash));
      cur = cur.child(part.c_str());
      if (!cur) {
        ok = false;
        break;
      }
      p = slash == std::string_view::npos ? std::string_view() : p.substr(slash + 1);
    }
    if (!ok) continue;
    std::string_view v = Trim(cur.child_value());
    if (detail::IsNotAvailable(v)) continue;
    return std::string(v);
  }
  return std::nullopt;
}

std::optional<double> Num(const pugi::xml_node& n, std::initializer_list<const char*> paths) {
  auto t = Text(n, paths);
  return t ? LeadingNumber(*t) : std::nullopt;
}
std::optional<int64_t> Int(const pugi::xml_node& n, std::initializer_list<const char*> paths) {
  auto t = Text(n, paths);
  return t ? LeadingInt(*t) : std::nullopt;
}
std::optional<int> SmallInt(const pugi::xml_node& n, std::initializer_list<const char*> paths) {
  auto v = Int(n, paths);
  if (!v || *v < 0 || *v > 1024) return std::nullopt;
  return static_cast<int>(*v);
}
std::optional<bool> Flag(const pugi::xml_node& n, std::initializer_list<const char*> paths) {
  auto t = Text(n, paths);
  return t ? ParseFlag(*t) : std::nullopt;
}

// Sum of the listed counters that exist (ECC totals across SRAM/DRAM or the old layout).
std::optional<int64_t> SumOf(const pugi::xml_node& n, std::initializer_list<const char*> paths) {
  std::optional<int64_t> total;
  for (const char* p : paths) {
    auto v = Int(n, {p});
    if (v) total = total.value_or(0) + *v;
  }
  return total;
}

void ParseXmlGpu(const pugi::xml_node& g, const std::string& driver, const std::string& cuda, std::string_view name,
                 int index, GpuTelemetry* t) {
  t->origin = std::string(name);
  t->index = index;
  t->pci_bus_id = NormalizeBusId(Text(g, {"pci/pci_bus_id"}).value_or(g.attribute("id").value()));
  t->uuid = Text(g, {"uuid"}).value_or("");
  t->name = Text(g, {"product_name"}).value_or("");
  t->driver_version = driver;
  t->cuda_version = cuda;
  if (auto minor = SmallInt(g, {"minor_number"})) (void)minor;  // index is the document order

  t->temp_c = Num(g, {"temperature/gpu_temp"});
  t->mem_temp_c = Num(g, {"temperature/memory_temp"});
  // Absolute thresholds (drivers up to R570). The R580 "*_tlimit_threshold" values are relative
  // to T.Limit (e.g. "-2 C"), not temperatures, so they are not mixed in here; the rules use
  // gpu_temp_tlimit (degrees of headroom below T.Limit) instead.
  t->temp_slowdown_c = Num(g, {"temperature/gpu_temp_slow_threshold"});
  t->temp_shutdown_c = Num(g, {"temperature/gpu_temp_max_threshold"});
  t->temp_max_operating_c = Num(g, {"temperature/gpu_temp_max_gpu_threshold"});
  t->tlimit_headroom_c = Num(g, {"temperature/gpu_temp_tlimit"});

  t->power_w = Num(g, {"gpu_power_readings/average_power_draw", "gpu_power_readings/power_draw",
                       "gpu_power_readings/instant_power_draw", "power_readings/power_draw",
                       "power_readings/average_power_draw"});
  t->power_limit_w = Num(g, {"gpu_power_readings/current_power_limit", "gpu_power_readings/enforced_power_limit",
                             "power_readings/enforced_power_limit", "power_readings/power_limit"});
  t->power_default_limit_w = Num(g, {"gpu_power_readings/default_power_limit", "power_readings/default_power_limit"});
  t->power_max_limit_w = Num(g, {"gpu_power_readings/max_power_limit", "power_readings/max_power_limit"});

  t->util_gpu_pct = Num(g, {"utilization/gpu_util"});
  t->util_mem_pct = Num(g, {"utilization/memory_util"});
  t->mem_total_mib = Num(g, {"fb_memory_usage/total"});
  t->mem_used_mib = Num(g, {"fb_memory_usage/used"});
  t->sm_clock_mhz = Num(g, {"clocks/sm_clock"});
  t->sm_clock_max_mhz = Num(g, {"max_clocks/sm_clock"});

  t->pcie_gen_cur = SmallInt(g, {"pci/pci_gpu_link_info/pcie_gen/current_link_gen"});
  t->pcie_gen_max = SmallInt(g, {"pci/pci_gpu_link_info/pcie_gen/max_device_link_gen",
                                 "pci/pci_gpu_link_info/pcie_gen/max_link_gen"});
  t->pcie_gen_host_max = SmallInt(g, {"pci/pci_gpu_link_info/pcie_gen/max_host_link_gen"});
  t->pcie_width_cur = SmallInt(g, {"pci/pci_gpu_link_info/link_widths/current_link_width"});
  t->pcie_width_max = SmallInt(g, {"pci/pci_gpu_link_info/link_widths/max_link_width"});
  t->pcie_replays = Int(g, {"pci/replay_counter"});

  // Clock event reasons: new names (R535+) first, then the legacy "throttle" names.
  auto reason = [&](const char* suffix) {
    std::string a = std::string("clocks_event_reasons/clocks_event_reason_") + suffix;
    std::string b = std::string("clocks_throttle_reasons/clocks_throttle_reason_") + suffix;
    return Flag(g, {a.c_str(), b.c_str()});
  };
  t->thr_idle = reason("gpu_idle");
  t->thr_app_clocks = reason("applications_clocks_setting");
  t->thr_sw_power_cap = reason("sw_power_cap");
  t->thr_hw_slowdown = reason("hw_slowdown");
  t->thr_hw_thermal = reason("hw_thermal_slowdown");
  t->thr_power_brake = reason("hw_power_brake_slowdown");
  t->thr_sync_boost = reason("sync_boost");
  t->thr_sw_thermal = reason("sw_thermal_slowdown");
  if (auto us = Num(g, {"clocks_event_reasons_counters/clocks_event_reasons_counters_sw_power_cap"}))
    t->thr_power_s = *us / 1e6;
  auto sw_th = Num(g, {"clocks_event_reasons_counters/clocks_event_reasons_counters_sw_therm_slowdown"});
  auto hw_th = Num(g, {"clocks_event_reasons_counters/clocks_event_reasons_counters_hw_therm_slowdown"});
  if (sw_th || hw_th) t->thr_thermal_s = (sw_th.value_or(0) + hw_th.value_or(0)) / 1e6;

  if (auto ecc = Text(g, {"ecc_mode/current_ecc"})) t->ecc_enabled = ParseFlag(*ecc);
  // Ampere+ layout (sram/dram split), Turing (sram_uncorrectable) and pre-Ampere totals.
  t->ecc_vol_corr = SumOf(g, {"ecc_errors/volatile/sram_correctable", "ecc_errors/volatile/dram_correctable",
                              "ecc_errors/volatile/single_bit/total"});
  t->ecc_vol_uncorr = SumOf(g, {"ecc_errors/volatile/sram_uncorrectable_parity",
                                "ecc_errors/volatile/sram_uncorrectable_secded", "ecc_errors/volatile/sram_uncorrectable",
                                "ecc_errors/volatile/dram_uncorrectable", "ecc_errors/volatile/double_bit/total"});
  t->ecc_agg_corr = SumOf(g, {"ecc_errors/aggregate/sram_correctable", "ecc_errors/aggregate/dram_correctable",
                              "ecc_errors/aggregate/single_bit/total"});
  t->ecc_agg_uncorr = SumOf(g, {"ecc_errors/aggregate/sram_uncorrectable_parity",
                                "ecc_errors/aggregate/sram_uncorrectable_secded",
                                "ecc_errors/aggregate/sram_uncorrectable", "ecc_errors/aggregate/dram_uncorrectable",
                                "ecc_errors/aggregate/double_bit/total"});
  t->remap_corr = Int(g, {"remapped_rows/remapped_row_corr"});
  t->remap_unc = Int(g, {"remapped_rows/remapped_row_unc"});
  t->remap_pending = Flag(g, {"remapped_rows/remapped_row_pending"});
  t->remap_failure = Flag(g, {"remapped_rows/remapped_row_failure"});
  t->retired_sbe = Int(g, {"retired_pages/multiple_single_bit_retirement/retired_count"});
  t->retired_dbe = Int(g, {"retired_pages/double_bit_retirement/retired_count"});
  t->retired_pending = Flag(g, {"retired_pages/pending_retirement", "retired_pages/pending_blacklist"});
  t->mig_current = Text(g, {"mig_mode/current_mig"});
  t->mig_pending = Text(g, {"mig_mode/pending_mig"});
  t->recovery_action = Text(g, {"gpu_recovery_action"});
  int migs = 0;
  for (pugi::xml_node m : g.child("mig_devices").children("mig_device")) {
    (void)m;
    ++migs;
  }
  t->mig_devices = migs;
  for (pugi::xml_node p : g.child("processes").children("process_info")) {
    GpuProcess proc;
    proc.pid = LeadingInt(p.child_value("pid")).value_or(0);
    proc.name = detail::Clip(p.child_value("process_name"), 200);
    proc.used_memory_mib = LeadingNumber(p.child_value("used_memory"));
    if (auto gi = LeadingInt(p.child_value("gpu_instance_id")); gi && *gi >= 0 && *gi < 1000)
      proc.gpu_instance_id = static_cast<int>(*gi);
    std::string type = std::string(Trim(p.child_value("type")));
    if (type == "G") continue;  // graphics-only clients (display server) do not compete for compute
    t->processes.push_back(proc);
  }
}

}  // namespace

Result<std::vector<GpuTelemetry>> ParseSmiXml(std::string_view text, std::string_view name) {
  pugi::xml_document doc;
  // parse_default without DOCTYPE/PI processing; pugixml does not expand external entities.
  pugi::xml_parse_result r = doc.load_buffer(text.data(), text.size(), pugi::parse_default, pugi::encoding_utf8);
  if (!r) {
    return ParseError(fmt::format("{}: not valid nvidia-smi XML at byte {}: {}", name, r.offset, r.description()));
  }
  pugi::xml_node root = doc.child("nvidia_smi_log");
  if (!root) return ParseError(fmt::format("{}: no <nvidia_smi_log> root element (is this `nvidia-smi -q -x` output?)", name));
  const std::string driver = Text(root, {"driver_version"}).value_or("");
  const std::string cuda = Text(root, {"cuda_version"}).value_or("");
  std::vector<GpuTelemetry> out;
  int index = 0;
  for (pugi::xml_node g : root.children("gpu")) {
    GpuTelemetry t;
    ParseXmlGpu(g, driver, cuda, name, index++, &t);
    out.push_back(std::move(t));
    if (index > 4096) break;
  }
  return out;
}

// ---- CSV -------------------------------------------------------------------------------

Result<SmiCsvParse> ParseSmiCsv(std::string_view text, std::string_view name) {
  SmiCsvParse out;
  std::vector<std::string> header;
  bool apps = false, cut = false;
  int64_t rows = 0;
  Status error;
  detail::ForEachLine(
      text,
      [&](std::string_view line, int64_t n) {
        if (Trim(line).empty() || Trim(line)[0] == '#') return true;
        auto cells = detail::Split(line, ',');
        if (header.empty()) {
          for (auto c : cells) {
            std::string h(c);
            if (auto b = h.find(" ["); b != std::string::npos) h.resize(b);  // "memory.total [MiB]"
            header.push_back(h);
          }
          bool known = false;
          for (const auto& h : header) {
            if (h == "pid") apps = true;
            if (h == "pci.bus_id" || h == "index" || h == "name" || h == "gpu_name" || h == "uuid" || h == "pid" ||
                h == "temperature.gpu" || h == "gpu_bus_id")
              known = true;
          }
          if (!known) {
            error = ParseError(fmt::format(
                "{}:{}: no recognisable header (run nvidia-smi --query-gpu=... --format=csv without 'noheader')", name, n));
            return false;
          }
          return true;
        }
        if (cells.size() != header.size()) {
          out.problems.push_back(fmt::format("{}:{}: {} fields, header has {}", name, n, cells.size(), header.size()));
          if (out.problems.size() > 20) return false;
          return true;
        }
        if (++rows > 100000) return false;
        std::map<std::string_view, std::string_view> f;
        for (std::size_t i = 0; i < header.size(); ++i) f[header[i]] = cells[i];
        auto get = [&](std::initializer_list<const char*> keys) -> std::optional<std::string_view> {
          for (const char* k : keys) {
            auto it = f.find(k);
            if (it != f.end() && !detail::IsNotAvailable(it->second)) return it->second;
          }
          return std::nullopt;
        };
        auto num = [&](std::initializer_list<const char*> keys) -> std::optional<double> {
          auto v = get(keys);
          return v ? LeadingNumber(*v) : std::nullopt;
        };
        auto inum = [&](std::initializer_list<const char*> keys) -> std::optional<int64_t> {
          auto v = get(keys);
          return v ? LeadingInt(*v) : std::nullopt;
        };
        auto small = [&](std::initializer_list<const char*> keys) -> std::optional<int> {
          auto v = inum(keys);
          if (!v || *v < 0 || *v > 1024) return std::nullopt;
          return static_cast<int>(*v);
        };
        auto flag = [&](std::initializer_list<const char*> keys) -> std::optional<bool> {
          auto v = get(keys);
          return v ? ParseFlag(*v) : std::nullopt;
        };
        if (apps) {
          GpuProcess p;
          p.pid = inum({"pid"}).value_or(0);
          p.name = detail::Clip(get({"process_name"}).value_or(""), 200);
          p.used_memory_mib = num({"used_gpu_memory", "used_memory"});
          out.processes.emplace_back(NormalizeBusId(get({"gpu_bus_id", "pci.bus_id"}).value_or("")), p);
          return true;
        }
        GpuTelemetry t;
        t.origin = std::string(name);
        t.origin_line = n;
        if (auto i = small({"index"})) t.index = *i;
        t.pci_bus_id = NormalizeBusId(get({"pci.bus_id", "gpu_bus_id"}).value_or(""));
        t.uuid = std::string(get({"uuid", "gpu_uuid"}).value_or(""));
        t.name = std::string(get({"name", "gpu_name"}).value_or(""));
        t.driver_version = std::string(get({"driver_version"}).value_or(""));
        if (auto cc = get({"compute_cap"})) t.compute_capability = std::string(*cc);
        t.temp_c = num({"temperature.gpu"});
        t.mem_temp_c = num({"temperature.memory"});
        t.tlimit_headroom_c = num({"temperature.gpu.tlimit"});
        t.power_w = num({"power.draw.average", "power.draw", "power.draw.instant"});
        t.power_limit_w = num({"enforced.power.limit", "power.limit"});
        t.power_default_limit_w = num({"power.default_limit"});
        t.power_max_limit_w = num({"power.max_limit"});
        t.util_gpu_pct = num({"utilization.gpu"});
        t.util_mem_pct = num({"utilization.memory"});
        t.mem_total_mib = num({"memory.total"});
        t.mem_used_mib = num({"memory.used"});
        t.sm_clock_mhz = num({"clocks.current.sm", "clocks.sm"});
        t.sm_clock_max_mhz = num({"clocks.max.sm"});
        t.pcie_gen_cur = small({"pcie.link.gen.gpucurrent", "pcie.link.gen.current"});
        t.pcie_gen_max = small({"pcie.link.gen.gpumax", "pcie.link.gen.max"});
        t.pcie_gen_host_max = small({"pcie.link.gen.hostmax"});
        t.pcie_width_cur = small({"pcie.link.width.current"});
        t.pcie_width_max = small({"pcie.link.width.max"});
        const bool new_names = f.count("clocks_event_reasons.active") || f.count("clocks_event_reasons.sw_power_cap");
        auto reason = [&](const char* suffix) {
          std::string a = std::string("clocks_event_reasons.") + suffix;
          std::string b = std::string("clocks_throttle_reasons.") + suffix;
          return new_names ? flag({a.c_str()}) : flag({b.c_str()});
        };
        t.thr_idle = reason("gpu_idle");
        t.thr_app_clocks = reason("applications_clocks_setting");
        t.thr_sw_power_cap = reason("sw_power_cap");
        t.thr_hw_slowdown = reason("hw_slowdown");
        t.thr_hw_thermal = reason("hw_thermal_slowdown");
        t.thr_power_brake = reason("hw_power_brake_slowdown");
        t.thr_sw_thermal = reason("sw_thermal_slowdown");
        t.thr_sync_boost = reason("sync_boost");
        if (auto us = num({"clocks_event_reasons_counters.sw_power_cap"})) t.thr_power_s = *us / 1e6;
        auto sw = num({"clocks_event_reasons_counters.sw_thermal_slowdown"});
        auto hw = num({"clocks_event_reasons_counters.hw_thermal_slowdown"});
        if (sw || hw) t.thr_thermal_s = (sw.value_or(0) + hw.value_or(0)) / 1e6;
        if (auto e = get({"ecc.mode.current"})) t.ecc_enabled = ParseFlag(*e);
        t.ecc_vol_corr = inum({"ecc.errors.corrected.volatile.total"});
        t.ecc_vol_uncorr = inum({"ecc.errors.uncorrected.volatile.total"});
        t.ecc_agg_corr = inum({"ecc.errors.corrected.aggregate.total"});
        t.ecc_agg_uncorr = inum({"ecc.errors.uncorrected.aggregate.total"});
        t.remap_corr = inum({"remapped_rows.correctable"});
        t.remap_unc = inum({"remapped_rows.uncorrectable"});
        t.remap_pending = flag({"remapped_rows.pending"});
        t.remap_failure = flag({"remapped_rows.failure"});
        t.retired_sbe = inum({"retired_pages.single_bit_ecc.count", "retired_pages.sbe"});
        t.retired_dbe = inum({"retired_pages.double_bit.count", "retired_pages.dbe"});
        t.retired_pending = flag({"retired_pages.pending"});
        if (auto m = get({"mig.mode.current"})) t.mig_current = std::string(*m);
        if (auto m = get({"mig.mode.pending"})) t.mig_pending = std::string(*m);
        if (auto r = get({"gpu_recovery_action"})) t.recovery_action = std::string(*r);
        out.gpus.push_back(std::move(t));
        return true;
      },
      65536, &cut);
  if (!error.ok()) return error;
  if (header.empty()) return ParseError(fmt::format("{}: empty CSV", name));
  if (cut) out.problems.push_back(fmt::format("{}: a line longer than 64 KiB was cut", name));
  return out;
}

}  // namespace suanli::doctor
