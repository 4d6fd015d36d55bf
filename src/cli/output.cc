#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "cli/cli.h"

namespace suanli::cli {

int ExitCodeFor(const Status& s) {
  switch (s.code()) {
    case ErrorCode::kOk: return kExitOk;
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kNotFound:
    case ErrorCode::kParseError:
    case ErrorCode::kUnsupported: return kExitInvalid;
    case ErrorCode::kDoesNotFit: return kExitNoFit;
    case ErrorCode::kIoError:
    case ErrorCode::kInternal: return kExitInternal;
  }
  return kExitInternal;
}

int PrintError(const Status& s) {
  std::fprintf(stderr, "suanli: error: %s\n", s.message().c_str());
  return ExitCodeFor(s);
}

void PrintJson(const nlohmann::json& j) { std::cout << j.dump(2) << "\n"; }

nlohmann::json BreakdownJson(const TrainBreakdown& b) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& term : kBreakdownTerms) j[term.key] = b.*term.value;
  return j;
}

nlohmann::json JsonEnvelope(const char* schema) {
  nlohmann::json j;
  j["schema"] = schema;
  j["suanli_version"] = SUANLI_VERSION;
  return j;
}

static std::size_t DisplayWidth(const std::string& s) {
  std::size_t w = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++w;  // count UTF-8 code points
  return w;
}

std::string Table::Render() const {
  std::vector<std::size_t> w(header_.size(), 0);
  for (std::size_t i = 0; i < header_.size(); ++i) w[i] = DisplayWidth(header_[i]);
  for (const auto& r : rows_)
    for (std::size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], DisplayWidth(r[i]));
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (std::size_t i = 0; i < w.size(); ++i) {
      const std::string c = i < cells.size() ? cells[i] : "";
      out += c;
      if (i + 1 < w.size()) out += std::string(w[i] - DisplayWidth(c) + 2, ' ');
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(header_);
  std::string rule;
  for (std::size_t i = 0; i < w.size(); ++i) rule += std::string(w[i], '-') + (i + 1 < w.size() ? "  " : "");
  out += rule + "\n";
  for (const auto& r : rows_) out += line(r);
  return out;
}

}  // namespace suanli::cli
