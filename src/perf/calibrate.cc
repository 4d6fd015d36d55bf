// Efficiencies from a machine's own measurements (`suanli bench export-calibration`).
#include <fmt/format.h>

#include <algorithm>

#include "suanli/bench.h"
#include "suanli/perf.h"
#include "suanli/units.h"
#include "internal.h"

namespace suanli {

namespace {
// The best achieved rate among large GEMMs (all three dimensions >= 4096, the shapes the model's
// efficiency stands for); the best of any size when no large one was measured.
std::optional<double> BestGemm(const std::vector<CalibrationGemm>& v) {
  std::optional<double> large, any;
  for (const auto& g : v) {
    any = std::max(any.value_or(0.0), g.flops_per_s);
    if (g.m >= 4096 && g.n >= 4096 && g.k >= 4096) large = std::max(large.value_or(0.0), g.flops_per_s);
  }
  return large ? large : any;
}

Status CheckFraction(const char* what, double f, double hi) {
  if (!(f > 0.02 && f <= hi))
    return InvalidArgument(fmt::format("calibration: measured {} is {:.0f}% of the datasheet value, outside 2..{:.0f}%; "
                                       "was the file measured on this GPU?",
                                       what, 100 * f, 100 * hi));
  return Status::Ok();
}
}  // namespace

Result<Efficiency> ApplyCalibration(const Efficiency& base, const Calibration& cal, const GpuSpec& gpu) {
  if (!cal.gpu.empty() && cal.gpu != gpu.id)
    return InvalidArgument(fmt::format("calibration was measured on '{}' ({}), but the estimate is for '{}'", cal.gpu,
                                       cal.device_name, gpu.id));
  Efficiency e = base;
  const std::string where = fmt::format("measured on {} {}{}", cal.device_name.empty() ? cal.gpu : cal.device_name,
                                        cal.device_uuid, cal.measured_at.empty() ? "" : " at " + cal.measured_at);
  if (cal.memory_bandwidth_bytes_per_s) {
    const double f = *cal.memory_bandwidth_bytes_per_s / gpu.memory_bandwidth_bytes_per_s.value;
    SUANLI_RETURN_IF_ERROR(CheckFraction("memory bandwidth", f, 1.05));
    e.memory = std::min(f, 1.0);
    perf_detail::RecordSource(e.sources, "memory", fmt::format("memory = {:.3g}: {} triad {} ({})", e.memory, "bench", 
                                    FormatBandwidth(*cal.memory_bandwidth_bytes_per_s), where));
  }
  for (Precision p : {Precision::kBf16, Precision::kFp16, Precision::kFp8}) {
    auto it = cal.gemm.find(p);
    if (it == cal.gemm.end()) continue;
    auto best = BestGemm(it->second);
    auto peak = gpu.PeakFlops(p);
    if (!best || !peak) continue;
    const double f = *best / *peak;
    SUANLI_RETURN_IF_ERROR(CheckFraction(fmt::format("{} GEMM", PrecisionKey(p)).c_str(), f, 1.2));
    if (p == Precision::kFp8) {
      e.gemm_fp8 = std::min(f, 1.0);
    } else if (p == Precision::kBf16 || !cal.gemm.count(Precision::kBf16)) {
      e.gemm = std::min(f, 1.0);
    } else {
      continue;
    }
    perf_detail::RecordSource(e.sources, p == Precision::kFp8 ? "gemm_fp8" : "gemm",
                              fmt::format("gemm{} = {:.3g}: bench {} GEMM {} ({})", p == Precision::kFp8 ? "_fp8" : "",
                                    std::min(f, 1.0), PrecisionKey(p), FormatFlops(*best), where));
  }
  if (auto it = cal.link_bandwidth_bytes_per_s.find("allreduce_busbw");
      it != cal.link_bandwidth_bytes_per_s.end() && gpu.link_bandwidth_per_direction_bytes_per_s) {
    const double f = it->second / gpu.link_bandwidth_per_direction_bytes_per_s->value;
    SUANLI_RETURN_IF_ERROR(CheckFraction("all-reduce bus bandwidth", f, 2.0));
    // The measured all-reduce sets the all-reduce figure. Above the wire rate it was reduced in the switch
    // (NVLS), which says nothing about the ring collectives, so `link` keeps its value; at or below it the
    // all-reduce ran as a ring, and the ring figure is the measurement too.
    e.link_allreduce = f;
    perf_detail::RecordSource(e.sources, "link_allreduce", fmt::format("link_allreduce = {:.3g}: bench NCCL all-reduce busbw {} ({})", f,
                                    FormatBandwidth(it->second), where));
    if (f <= 1.0) {
      e.link = f;
      perf_detail::RecordSource(e.sources, "link", fmt::format("link = {:.3g}: the same all-reduce, at or below the wire rate: a ring", f));
    }
  }
  // Pinned host copies set the offload copy efficiencies, against the host link (NVLink-C2C, else PCIe).
  if (auto host = HostBandwidthPerDirection(gpu)) {
    for (auto [key, out, name] : {std::tuple{"d2h_pinned", &e.host_d2h, "host_d2h"},
                                  std::tuple{"h2d_pinned", &e.host_h2d, "host_h2d"}}) {
      auto it = cal.link_bandwidth_bytes_per_s.find(key);
      if (it == cal.link_bandwidth_bytes_per_s.end()) continue;
      const double f = it->second / host->value;
      SUANLI_RETURN_IF_ERROR(CheckFraction(fmt::format("pinned {} copy", key).c_str(), f, 1.05));
      *out = std::min(f, 1.0);
      perf_detail::RecordSource(e.sources, name, fmt::format("{} = {:.3g}: bench pinned copy {} of {} ({})", name, *out,
                                      FormatBandwidth(it->second), FormatBandwidth(host->value), where));
    }
  }
  if (cal.launch_latency_s) {
    if (!(*cal.launch_latency_s > 0 && *cal.launch_latency_s < 1e-3))
      return InvalidArgument("calibration: launch latency must be between 0 and 1 ms");
    e.kernel_launch_s = *cal.launch_latency_s;
    perf_detail::RecordSource(e.sources, "kernel_launch", fmt::format("kernel_launch = {}: bench launch latency ({})", FormatSeconds(e.kernel_launch_s), where));
  }
  return e;
}

}  // namespace suanli
