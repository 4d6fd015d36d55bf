// Small text helpers shared by the doctor parsers (internal).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "suanli/doctor.h"

namespace suanli::doctor::detail {

std::string_view Trim(std::string_view s);
bool StartsWith(std::string_view s, std::string_view p);
bool Contains(std::string_view s, std::string_view p);
bool ContainsNoCase(std::string_view s, std::string_view p);
// At most `max` characters, with "..." when cut; non-printable bytes replaced by '?'.
std::string Clip(std::string_view s, std::size_t max = 300);
// "N/A", "[N/A]", "Not Supported", "[Not Supported]", "Unknown Error", "" -> true.
bool IsNotAvailable(std::string_view v);
// Leading number of a value such as "29 C", "68.57 W", "16x", "81559 MiB", "0x1F" (hex when
// prefixed). nullopt for N/A values, non-numbers, NaN or infinity.
std::optional<double> LeadingNumber(std::string_view v);
std::optional<int64_t> LeadingInt(std::string_view v);
// "Active"/"Yes"/"Enabled" -> true; "Not Active"/"No"/"Disabled" -> false; else nullopt.
std::optional<bool> ParseFlag(std::string_view v);
// Splits on `sep`, trimming each field.
std::vector<std::string_view> Split(std::string_view s, char sep);
// Iterates lines without copying; `f(line, line_number)` returns false to stop. Lines longer
// than `max_line` are cut to that length; *cut is set when that happens.
template <typename F>
void ForEachLine(std::string_view text, F&& f, std::size_t max_line = 65536, bool* cut = nullptr) {
  std::size_t pos = 0;
  int64_t n = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > max_line) {
      line = line.substr(0, max_line);
      if (cut) *cut = true;
    }
    ++n;
    if (!f(line, n)) return;
    pos = end + 1;
  }
}
// Adds the NUL bytes of `text`, whose first line is number `first_line`, to *n (a byte-wise pass only where
// `text` has a NUL; runs are counted within `text`).
void CountNulBytes(std::string_view text, int64_t first_line, NulBytes* n);
// A version: "N.N[.N...]" (at least two numbers) then, where `suffix_ok`, anything after a '+', 'a', 'b', "rc", ".dev"
// or ".post" (torch's local versions, pre- and post-releases: 2.4.0+cu124, 2.5.0a0+git1234, 2.6.0.dev20241112).
bool LooksLikeVersion(std::string_view v, bool suffix_ok);
// Parses "<number> <unit>" memory amounts (B, KiB, MiB, GiB, TiB, KB, MB, GB) into GiB.
std::optional<double> MemoryToGiB(std::string_view number, std::string_view unit);

}  // namespace suanli::doctor::detail
