// Physical quantities with explicit units. Data files write quantities as strings
// "<number> <unit>" (e.g. "3.35 TB/s", "80 GiB", "400 Gb/s"); this header parses them
// into SI base values (bytes, bytes/s, FLOP/s, W, s, USD) and formats them back.
//
// Conventions (stated because they are the usual source of 2x and 8x mistakes):
//   GB = 1e9 bytes, GiB = 2^30 bytes; GB/s = 1e9 bytes/s; Gb/s = 1e9 bits/s = 1.25e8 bytes/s.
//   TFLOPS = 1e12 floating-point operations per second; TOPS = 1e12 integer operations/s.
#pragma once

#include <string>
#include <string_view>

#include "suanli/status.h"

namespace suanli {

// What a quantity measures. A data-file key declares which dimension it expects;
// a value in a different dimension is rejected with the key named.
enum class Dimension { kBytes, kBytesPerSecond, kFlopsPerSecond, kOpsPerSecond, kWatts, kSeconds, kUsd, kUsdPerHour };

const char* DimensionName(Dimension d);
// Example units for error messages, e.g. "GB, GiB, MB, MiB".
const char* DimensionExampleUnits(Dimension d);

// Parses "<number> <unit>" into the SI base value of `expected`.
// Errors: no unit, unknown unit, unit of another dimension, non-finite or negative number.
Result<double> ParseQuantity(std::string_view text, Dimension expected);

constexpr double kGB = 1e9;
constexpr double kGiB = 1073741824.0;
constexpr double kMiB = 1048576.0;
constexpr double kTera = 1e12;

// Human formatting: "14.0 GB" (decimal) and "13.0 GiB"; rates "989 TFLOP/s", "3.35 TB/s".
std::string FormatBytes(double bytes);      // decimal GB, the unit datasheets use
std::string FormatGiB(double bytes);
std::string FormatBandwidth(double bytes_per_s);
std::string FormatFlops(double flops_per_s);
std::string FormatSeconds(double s);
std::string FormatCount(double n);          // 6.74B, 70.6B, 124M

}  // namespace suanli
