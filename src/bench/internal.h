// Helpers shared by the bench sources (not public API).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "suanli/bench.h"

namespace suanli {
nlohmann::json BenchResultJson(const BenchResult& r);
}

namespace suanli::detail {
nlohmann::json DeviceInfoJson(const DeviceInfo& d);
DeviceInfo DeviceInfoFrom(const nlohmann::json& j);
nlohmann::json IdleJson(const IdleReport& r);
// The wire form of a Measurement between a benchmark child process and the runner.
std::string MeasurementToText(const Measurement& m);
Measurement MeasurementFromText(const std::string& text);
}  // namespace suanli::detail
