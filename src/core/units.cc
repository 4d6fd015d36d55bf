#include "suanli/units.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>

namespace suanli {

namespace {

struct UnitDef {
  std::string_view name;
  Dimension dim;
  double factor;  // multiply by this to get SI base value
};

constexpr std::array<UnitDef, 27> kUnits = {{
    {"B", Dimension::kBytes, 1.0},
    {"KB", Dimension::kBytes, 1e3},
    {"MB", Dimension::kBytes, 1e6},
    {"GB", Dimension::kBytes, 1e9},
    {"TB", Dimension::kBytes, 1e12},
    {"KiB", Dimension::kBytes, 1024.0},
    {"MiB", Dimension::kBytes, 1048576.0},
    {"GiB", Dimension::kBytes, 1073741824.0},
    {"TiB", Dimension::kBytes, 1099511627776.0},
    {"MB/s", Dimension::kBytesPerSecond, 1e6},
    {"GB/s", Dimension::kBytesPerSecond, 1e9},
    {"TB/s", Dimension::kBytesPerSecond, 1e12},
    {"Mb/s", Dimension::kBytesPerSecond, 1e6 / 8},
    {"Gb/s", Dimension::kBytesPerSecond, 1e9 / 8},
    {"Tb/s", Dimension::kBytesPerSecond, 1e12 / 8},
    {"GFLOPS", Dimension::kFlopsPerSecond, 1e9},
    {"TFLOPS", Dimension::kFlopsPerSecond, 1e12},
    {"PFLOPS", Dimension::kFlopsPerSecond, 1e15},
    {"TOPS", Dimension::kOpsPerSecond, 1e12},
    {"W", Dimension::kWatts, 1.0},
    {"kW", Dimension::kWatts, 1e3},
    {"ns", Dimension::kSeconds, 1e-9},
    {"us", Dimension::kSeconds, 1e-6},
    {"ms", Dimension::kSeconds, 1e-3},
    {"s", Dimension::kSeconds, 1.0},
    {"USD", Dimension::kUsd, 1.0},
    {"USD/h", Dimension::kUsdPerHour, 1.0},
}};

}  // namespace

const char* DimensionName(Dimension d) {
  switch (d) {
    case Dimension::kBytes: return "a size in bytes";
    case Dimension::kBytesPerSecond: return "a bandwidth";
    case Dimension::kFlopsPerSecond: return "a floating-point rate";
    case Dimension::kOpsPerSecond: return "an integer-operation rate";
    case Dimension::kWatts: return "a power";
    case Dimension::kSeconds: return "a time";
    case Dimension::kUsd: return "a price";
    case Dimension::kUsdPerHour: return "an hourly price";
  }
  return "?";
}

const char* DimensionExampleUnits(Dimension d) {
  switch (d) {
    case Dimension::kBytes: return "B, MB, MiB, GB, GiB, TB";
    case Dimension::kBytesPerSecond: return "GB/s, TB/s (bytes) or Gb/s (bits)";
    case Dimension::kFlopsPerSecond: return "TFLOPS";
    case Dimension::kOpsPerSecond: return "TOPS";
    case Dimension::kWatts: return "W, kW";
    case Dimension::kSeconds: return "ns, us, ms, s";
    case Dimension::kUsd: return "USD";
    case Dimension::kUsdPerHour: return "USD/h";
  }
  return "?";
}

Result<double> ParseQuantity(std::string_view text, Dimension expected) {
  std::string_view s = text;
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  double number = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), number);
  if (ec == std::errc::result_out_of_range)
    return ParseError(fmt::format("'{}': the number is out of range; expected {} such as '80 GB'", text,
                                  DimensionName(expected)));
  if (ec != std::errc() || ptr == s.data()) {
    return ParseError(fmt::format("'{}' does not start with a number; expected {} such as '80 GB' (units: {})",
                                  text, DimensionName(expected), DimensionExampleUnits(expected)));
  }
  std::string_view unit(ptr, s.data() + s.size() - ptr);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  if (unit.empty()) {
    return ParseError(fmt::format("'{}' has no unit; expected {} with one of: {}", text, DimensionName(expected),
                                  DimensionExampleUnits(expected)));
  }
  if (!std::isfinite(number) || number < 0) {
    return ParseError(fmt::format("'{}' must be a finite, non-negative number", text));
  }
  for (const auto& u : kUnits) {
    if (u.name == unit) {
      if (u.dim != expected) {
        return ParseError(fmt::format("'{}' is {}, but {} is expected (units: {})", text, DimensionName(u.dim),
                                      DimensionName(expected), DimensionExampleUnits(expected)));
      }
      return number * u.factor;
    }
  }
  return ParseError(fmt::format("'{}': unknown unit '{}'; expected one of: {}", text, unit,
                                DimensionExampleUnits(expected)));
}

std::string FormatBytes(double bytes) {
  if (bytes >= 1e12) return fmt::format("{:.2f} TB", bytes / 1e12);
  if (bytes >= 1e9) return fmt::format("{:.1f} GB", bytes / 1e9);
  if (bytes >= 1e6) return fmt::format("{:.1f} MB", bytes / 1e6);
  if (bytes >= 1e3) return fmt::format("{:.1f} kB", bytes / 1e3);
  return fmt::format("{:.0f} B", bytes);
}

std::string FormatGiB(double bytes) { return fmt::format("{:.2f} GiB", bytes / kGiB); }

std::string FormatBandwidth(double bps) {
  if (bps >= 1e12) return fmt::format("{:.2f} TB/s", bps / 1e12);
  if (bps >= 1e9) return fmt::format("{:.1f} GB/s", bps / 1e9);
  return fmt::format("{:.1f} MB/s", bps / 1e6);
}

std::string FormatFlops(double f) {
  if (f >= 1e15) return fmt::format("{:.2f} PFLOP/s", f / 1e15);
  if (f >= 1e12) return fmt::format("{:.1f} TFLOP/s", f / 1e12);
  return fmt::format("{:.1f} GFLOP/s", f / 1e9);
}

std::string FormatSeconds(double s) {
  if (s >= 86400 * 2) return fmt::format("{:.1f} days", s / 86400);
  if (s >= 3600 * 2) return fmt::format("{:.1f} h", s / 3600);
  if (s >= 120) return fmt::format("{:.1f} min", s / 60);
  if (s >= 1) return fmt::format("{:.2f} s", s);
  if (s >= 1e-3) return fmt::format("{:.2f} ms", s * 1e3);
  return fmt::format("{:.1f} us", s * 1e6);
}

std::string FormatCount(double n) {
  if (n >= 1e12) return fmt::format("{:.2f}T", n / 1e12);
  if (n >= 1e9) return fmt::format("{:.2f}B", n / 1e9);
  if (n >= 1e6) return fmt::format("{:.1f}M", n / 1e6);
  if (n >= 1e3) return fmt::format("{:.1f}K", n / 1e3);
  return fmt::format("{:.0f}", n);
}

}  // namespace suanli
