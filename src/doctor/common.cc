// Shared helpers of suanli doctor: states, bus ids, versions, text utilities.
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "doctor/util.h"
#include "suanli/doctor.h"

namespace suanli::doctor {

const char* StateName(State s) {
  switch (s) {
    case State::kPass: return "PASS";
    case State::kSkip: return "SKIP";
    case State::kWarn: return "WARN";
    case State::kError: return "ERROR";
    case State::kFail: return "FAIL";
  }
  return "?";
}

int StateRank(State s) { return static_cast<int>(s); }

int ExitCodeForState(State overall) {
  switch (overall) {
    case State::kPass:
    case State::kSkip: return kExitHealthy;
    case State::kWarn: return kExitWarn;
    case State::kError: return kExitError;
    case State::kFail: return kExitFail;
  }
  return kExitError;
}

std::string NormalizeBusId(std::string_view id) {
  std::string_view s = detail::Trim(id);
  if (detail::StartsWith(s, "PCI:") || detail::StartsWith(s, "pci:")) s.remove_prefix(4);
  // Split domain:bus:device[.function]
  std::vector<std::string_view> parts = detail::Split(s, ':');
  if (parts.size() == 2) parts.insert(parts.begin(), std::string_view("0"));
  if (parts.size() != 3) return std::string(s);
  auto hex_ok = [](std::string_view p) {
    if (p.empty() || p.size() > 8) return false;
    for (char c : p)
      if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
    return true;
  };
  std::string_view dom = parts[0], bus = parts[1], devfn = parts[2];
  std::string_view dev = devfn, fn = "0";
  if (auto dot = devfn.find('.'); dot != std::string_view::npos) {
    dev = devfn.substr(0, dot);
    fn = devfn.substr(dot + 1);
  }
  if (!hex_ok(dom) || !hex_ok(bus) || !hex_ok(dev) || !hex_ok(fn)) return std::string(s);
  // nvidia-smi writes an 8-digit domain (00000000); the kernel writes 4. Keep the low 4 digits.
  unsigned long d = std::strtoul(std::string(dom).c_str(), nullptr, 16);
  unsigned long b = std::strtoul(std::string(bus).c_str(), nullptr, 16);
  unsigned long v = std::strtoul(std::string(dev).c_str(), nullptr, 16);
  unsigned long f = std::strtoul(std::string(fn).c_str(), nullptr, 16);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04lx:%02lx:%02lx.%lx", d & 0xffff, b & 0xff, v & 0xff, f & 0xf);
  return buf;
}

int CompareVersions(std::string_view a, std::string_view b) {
  auto parts = [](std::string_view v) {
    std::vector<long> out;
    for (auto p : detail::Split(v, '.')) {
      long x = 0;
      std::size_t i = 0;
      while (i < p.size() && std::isdigit(static_cast<unsigned char>(p[i])) && x < 100000000) {
        x = x * 10 + (p[i] - '0');
        ++i;
      }
      out.push_back(x);
    }
    return out;
  };
  auto pa = parts(a), pb = parts(b);
  const std::size_t n = std::max(pa.size(), pb.size());
  for (std::size_t i = 0; i < n; ++i) {
    long x = i < pa.size() ? pa[i] : 0, y = i < pb.size() ? pb[i] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

namespace detail {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool Contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

bool ContainsNoCase(std::string_view s, std::string_view p) {
  if (p.empty()) return true;
  if (p.size() > s.size()) return false;
  for (std::size_t i = 0; i + p.size() <= s.size(); ++i) {
    std::size_t j = 0;
    while (j < p.size() && std::tolower(static_cast<unsigned char>(s[i + j])) ==
                               std::tolower(static_cast<unsigned char>(p[j])))
      ++j;
    if (j == p.size()) return true;
  }
  return false;
}

std::string Clip(std::string_view s, std::size_t max) {
  s = Trim(s);
  std::string out;
  out.reserve(std::min(s.size(), max) + 3);
  for (std::size_t i = 0; i < s.size() && i < max; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    out.push_back((c < 0x20 && c != '\t') || c == 0x7f ? '?' : static_cast<char>(c));
  }
  if (s.size() > max) out += "...";
  return out;
}

bool IsNotAvailable(std::string_view v) {
  v = Trim(v);
  if (!v.empty() && v.front() == '[' && v.back() == ']') v = v.substr(1, v.size() - 2);
  return v.empty() || v == "N/A" || v == "Not Supported" || v == "Unknown Error" || v == "Unknown" ||
         v == "Insufficient Permissions" || v == "Requested functionality has been deprecated" || v == "Not Available";
}

std::optional<double> LeadingNumber(std::string_view v) {
  v = Trim(v);
  if (IsNotAvailable(v)) return std::nullopt;
  if (v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) {
    uint64_t x = 0;
    std::size_t i = 2;
    for (; i < v.size() && i < 18 && std::isxdigit(static_cast<unsigned char>(v[i])); ++i) {
      char c = static_cast<char>(std::tolower(static_cast<unsigned char>(v[i])));
      x = x * 16 + static_cast<uint64_t>(c <= '9' ? c - '0' : c - 'a' + 10);
    }
    if (i == 2) return std::nullopt;
    return static_cast<double>(x);
  }
  std::size_t i = 0;
  if (i < v.size() && (v[i] == '-' || v[i] == '+')) ++i;
  const std::size_t digits_start = i;
  while (i < v.size() && (std::isdigit(static_cast<unsigned char>(v[i])) || v[i] == '.')) ++i;
  if (i == digits_start || i > 40) return std::nullopt;
  std::string num(v.substr(0, i));
  char* end = nullptr;
  double d = std::strtod(num.c_str(), &end);
  if (end == num.c_str() || !std::isfinite(d)) return std::nullopt;
  return d;
}

std::optional<int64_t> LeadingInt(std::string_view v) {
  auto d = LeadingNumber(v);
  if (!d || *d < -9.2e18 || *d > 9.2e18) return std::nullopt;
  return static_cast<int64_t>(*d);
}

std::optional<bool> ParseFlag(std::string_view v) {
  v = Trim(v);
  if (v == "Active" || v == "Yes" || v == "Enabled" || v == "True" || v == "true") return true;
  if (v == "Not Active" || v == "No" || v == "Disabled" || v == "False" || v == "false") return false;
  return std::nullopt;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t pos = 0;
  while (true) {
    std::size_t e = s.find(sep, pos);
    if (e == std::string_view::npos) {
      out.push_back(Trim(s.substr(pos)));
      break;
    }
    out.push_back(Trim(s.substr(pos, e - pos)));
    pos = e + 1;
  }
  return out;
}

std::optional<double> MemoryToGiB(std::string_view number, std::string_view unit) {
  auto n = LeadingNumber(number);
  if (!n) return std::nullopt;
  unit = Trim(unit);
  double f = 0;
  if (unit == "GiB") f = 1;
  else if (unit == "MiB") f = 1.0 / 1024;
  else if (unit == "KiB") f = 1.0 / (1024 * 1024);
  else if (unit == "TiB") f = 1024;
  else if (unit == "GB") f = 1e9 / 1073741824.0;
  else if (unit == "MB") f = 1e6 / 1073741824.0;
  else if (unit == "KB") f = 1e3 / 1073741824.0;
  else if (unit == "B" || unit == "bytes") f = 1.0 / 1073741824.0;
  else return std::nullopt;
  return *n * f;
}

void CountNulBytes(std::string_view text, int64_t first_line, NulBytes* n) {
  if (text.empty() || !std::memchr(text.data(), '\0', text.size())) return;
  int64_t line = first_line;
  bool in_run = false;
  for (const char ch : text) {
    const auto b = static_cast<unsigned char>(ch);
    if (b == 0) {
      ++n->bytes;
      if (!in_run) {
        ++n->runs;
        if (n->first_line == 0) n->first_line = line;
      }
      in_run = true;
      continue;
    }
    in_run = false;
    ++n->other_bytes;
    if (b == '\n') ++line;
    else if (b < 0x20 && b != '\t' && b != '\r' && b != '\f' && b != 0x1b) ++n->control_bytes;
  }
}

bool LooksLikeVersion(std::string_view v, bool suffix_ok) {
  std::size_t i = 0, parts = 0;
  while (true) {
    const std::size_t start = i;
    while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) ++i;
    if (i == start) return false;
    ++parts;
    if (i < v.size() && v[i] == '.' && i + 1 < v.size() && std::isdigit(static_cast<unsigned char>(v[i + 1]))) {
      ++i;
      continue;
    }
    break;
  }
  if (parts < 2) return false;
  if (i == v.size()) return true;
  return suffix_ok && (v[i] == '+' || v[i] == 'a' || v[i] == 'b' || v.substr(i, 2) == "rc" || v.substr(i, 4) == ".dev" ||
                       v.substr(i, 5) == ".post");
}

}  // namespace detail
}  // namespace suanli::doctor
