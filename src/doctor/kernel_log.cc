// Kernel log parser: Xid, SXid, "fallen off the bus", NVLink errors and NVRM API mismatch
// lines from dmesg, journalctl -k or syslog text.
//
// Speed matters (a kernel log can be a gigabyte): instead of testing every line, the parser
// searches the whole buffer for the few markers that every interesting line contains ("NVRM",
// "Xid (", "XID ") with memchr on a rare byte of each, counts newlines between hits with
// memchr, and only then looks at the line. Uninteresting lines cost one memchr step each.
#include <cstring>
#include <string>

#include "doctor/util.h"
#include "suanli/doctor.h"

namespace suanli::doctor {

namespace {

using detail::Clip;
using detail::Contains;
using detail::ContainsNoCase;
using detail::Trim;

constexpr std::size_t kMaxLine = 64 * 1024;
constexpr std::size_t kMaxEvents = 200000;  // keeps memory bounded on pathological logs

// The two marker searches. glibc memmem was two thirds of the run time on a 1 GB log; memchr for
// a rare byte of the marker, then a check of its neighbours, is several times faster:
//   kNvrm: "NVRM"            found through 'V' (upper-case V is rare in kernel logs)
//   kXid:  "Xid (" / "XID "  found through 'X' (covers SXid lines too)
enum Marker { kNvrm = 0, kXid = 1 };
std::size_t Find(std::string_view text, std::size_t from, Marker m) {
  const char* const begin = text.data();
  const char* const end = begin + text.size();
  if (m == kNvrm) {
    const char* p = begin + std::min(text.size(), from + 1);
    while (p < end) {
      p = static_cast<const char*>(std::memchr(p, 'V', static_cast<std::size_t>(end - p)));
      if (!p) return std::string_view::npos;
      if (p[-1] == 'N' && end - p >= 3 && p[1] == 'R' && p[2] == 'M') return static_cast<std::size_t>(p - 1 - begin);
      ++p;
    }
    return std::string_view::npos;
  }
  const char* p = begin + std::min(text.size(), from);
  while (p < end) {
    p = static_cast<const char*>(std::memchr(p, 'X', static_cast<std::size_t>(end - p)));
    if (!p) return std::string_view::npos;
    const std::size_t left = static_cast<std::size_t>(end - p);
    if (left >= 5 && p[1] == 'i' && p[2] == 'd' && p[3] == ' ' && p[4] == '(') return static_cast<std::size_t>(p - begin);
    if (left >= 4 && p[1] == 'I' && p[2] == 'D' && p[3] == ' ') return static_cast<std::size_t>(p - begin);
    ++p;
  }
  return std::string_view::npos;
}

// Counts '\n' bytes eight at a time (SWAR): one memchr call per line was the largest cost once
// the marker search was fast. For each byte b of x = word ^ 0x0a..0a, the high bit of
// ~(((x & 0x7f..7f) + 0x7f..7f) | x | 0x7f..7f) is set exactly when b == 0.
int64_t CountNewlines(std::string_view text, std::size_t from, std::size_t to) {
  constexpr uint64_t kLow7 = 0x7f7f7f7f7f7f7f7fULL;
  constexpr uint64_t kNewlines = 0x0a0a0a0a0a0a0a0aULL;
  int64_t n = 0;
  const char* p = text.data() + from;
  const char* const end = text.data() + to;
  while (p + 8 <= end) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    const uint64_t x = w ^ kNewlines;
    const uint64_t zero_bytes = ~(((x & kLow7) + kLow7) | x | kLow7);
    n += static_cast<int64_t>(((zero_bytes >> 7) * 0x0101010101010101ULL) >> 56);  // bytes set, no popcnt needed
    p += 8;
  }
  for (; p < end; ++p) n += *p == '\n';
  return n;
}

// "[  123.456789]" anywhere before `limit` -> seconds.
std::optional<double> DmesgTimestamp(std::string_view line) {
  std::size_t open = line.find('[');
  if (open == std::string_view::npos || open > 64) return std::nullopt;
  std::size_t close = line.find(']', open);
  if (close == std::string_view::npos || close - open > 24) return std::nullopt;
  std::string_view in = Trim(line.substr(open + 1, close - open - 1));
  if (in.empty() || !std::isdigit(static_cast<unsigned char>(in[0]))) return std::nullopt;
  for (char c : in)
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.') return std::nullopt;
  return detail::LeadingNumber(in);
}

// Parses an integer of at most 7 digits at the start of `s` (after spaces); returns chars consumed, or 0 when there
// is none or it is longer (no Xid or SXid code is: such a line is not one, rather than one with a clipped code).
std::size_t ReadInt(std::string_view s, int* out) {
  std::size_t i = 0;
  while (i < s.size() && s[i] == ' ') ++i;
  std::size_t start = i;
  long v = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
    if (i - start == 7) return 0;
    v = v * 10 + (s[i] - '0');
    ++i;
  }
  if (i == start) return 0;
  *out = static_cast<int>(v);
  return i;
}

// Looks for a PCI address like 0000:91:00.0 in the text.
std::string FindBusId(std::string_view s) {
  for (std::size_t i = 0; i + 12 <= s.size(); ++i) {
    // dddd:bb:dd.f
    auto hx = [&](std::size_t k) { return std::isxdigit(static_cast<unsigned char>(s[k])) != 0; };
    if (hx(i) && hx(i + 1) && hx(i + 2) && hx(i + 3) && s[i + 4] == ':' && hx(i + 5) && hx(i + 6) &&
        s[i + 7] == ':' && hx(i + 8) && hx(i + 9) && s[i + 10] == '.' && hx(i + 11)) {
      if (i > 0 && hx(i - 1)) continue;
      return NormalizeBusId(s.substr(i, 12));
    }
  }
  return "";
}

void ParseLine(std::string_view line, int64_t line_no, std::string_view name, KernelLogParse* out) {
  if (out->events.size() >= kMaxEvents) {
    out->truncated = true;
    return;
  }
  KernelEvent e;
  e.line = line_no;
  e.file = std::string(name);
  e.timestamp_s = DmesgTimestamp(line);

  // SXid: "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 ..."
  if (std::size_t p = line.find("SXid ("); p != std::string_view::npos) {
    std::size_t close = line.find("):", p);
    if (close == std::string_view::npos) return;
    e.kind = KernelEventKind::kSxid;
    e.pci_bus_id = NormalizeBusId(line.substr(p + 6, close - p - 6));
    std::size_t used = ReadInt(line.substr(close + 2), &e.code);
    if (!used) return;
    std::string_view rest = line.substr(close + 2 + used);
    if (!rest.empty() && rest[0] == ',') rest.remove_prefix(1);
    rest = Trim(rest);
    if (detail::StartsWith(rest, "Non-fatal")) e.severity_word = "Non-fatal";
    else if (detail::StartsWith(rest, "Fatal")) e.severity_word = "Fatal";
    std::size_t dev_end = line.rfind(':', p);
    if (dev_end != std::string_view::npos) {
      std::size_t dev_start = line.rfind(' ', dev_end);
      dev_start = dev_start == std::string_view::npos ? 0 : dev_start + 1;
      e.device = Clip(line.substr(dev_start, dev_end - dev_start), 64);
    }
    e.text = Clip(line.substr(p));
    out->events.push_back(std::move(e));
    return;
  }
  // Xid: "NVRM: Xid (PCI:0000:91:00): 79, pid=..., GPU has fallen off the bus."
  //      "NVRM: Xid (0000:01:00): 13, 0005 ..."
  if (std::size_t p = line.find("Xid ("); p != std::string_view::npos) {
    std::size_t close = line.find("):", p);
    if (close == std::string_view::npos || close - p > 40) return;
    e.kind = KernelEventKind::kXid;
    e.pci_bus_id = NormalizeBusId(line.substr(p + 5, close - p - 5));
    std::size_t used = ReadInt(line.substr(close + 2), &e.code);
    if (!used) return;
    std::size_t nv = line.rfind("NVRM:", p);
    e.text = Clip(line.substr(nv == std::string_view::npos ? p : nv + 5));
    out->events.push_back(std::move(e));
    return;
  }
  // Page-retirement era: "XID 48 An uncorrectable double bit error (DBE) has been detected on GPU (...)"
  if (std::size_t p = line.find("XID "); p != std::string_view::npos) {
    std::size_t used = ReadInt(line.substr(p + 4), &e.code);
    if (!used) return;
    e.kind = KernelEventKind::kXid;
    e.pci_bus_id = FindBusId(line.substr(p));
    e.text = Clip(line.substr(p));
    out->events.push_back(std::move(e));
    return;
  }
  if (!Contains(line, "NVRM")) return;
  std::size_t nv = line.find("NVRM:");
  std::string_view msg = nv == std::string_view::npos ? line : line.substr(nv + 5);
  if (Contains(msg, "fallen off the bus")) {
    e.kind = KernelEventKind::kFallenOffBus;
    e.pci_bus_id = FindBusId(msg);
    e.text = Clip(msg);
    out->events.push_back(std::move(e));
    return;
  }
  if (Contains(msg, "API mismatch")) {
    e.kind = KernelEventKind::kDriverMismatch;
    e.text = Clip(msg);
    out->events.push_back(std::move(e));
    return;
  }
  if (ContainsNoCase(msg, "nvlink") &&
      (ContainsNoCase(msg, "error") || ContainsNoCase(msg, "fatal") || ContainsNoCase(msg, "link down"))) {
    e.kind = KernelEventKind::kNvlinkError;
    e.pci_bus_id = FindBusId(msg);
    e.text = Clip(msg);
    out->events.push_back(std::move(e));
    return;
  }
  if (ContainsNoCase(msg, "row remap") && ContainsNoCase(msg, "pending")) {
    e.kind = KernelEventKind::kRowRemapPending;
    e.pci_bus_id = FindBusId(msg);
    e.text = Clip(msg);
    out->events.push_back(std::move(e));
  }
}

// Scans `text`, made of whole lines (the last may lack its '\n'), whose first line is number
// `first_line`. Returns the number of lines in `text`.
int64_t ScanBuffer(std::string_view text, std::string_view name, int64_t first_line, KernelLogParse* out) {
  if (text.empty()) return 0;
  detail::CountNulBytes(text, first_line, &out->nul);
  constexpr int kMarkers = 2;
  const Marker markers[kMarkers] = {kNvrm, kXid};
  std::size_t next[kMarkers];
  for (int i = 0; i < kMarkers; ++i) next[i] = Find(text, 0, markers[i]);
  std::size_t counted = 0;  // newlines before this offset are counted in `line_no`
  int64_t line_no = first_line;
  while (true) {
    std::size_t hit = std::string_view::npos;
    for (int i = 0; i < kMarkers; ++i) hit = std::min(hit, next[i]);
    if (hit == std::string_view::npos) break;
    line_no += CountNewlines(text, counted, hit);
    std::size_t start = hit;
    while (start > counted && text[start - 1] != '\n') --start;
    const void* nl = std::memchr(text.data() + hit, '\n', text.size() - hit);
    std::size_t end = nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - text.data()) : text.size();
    std::string_view line = text.substr(start, end - start);
    if (Contains(line, "NVRM")) ++out->nvrm_lines;
    if (line.size() > kMaxLine) {
      line = line.substr(0, kMaxLine);
      out->truncated = true;
      if (out->problems.size() < 20)
        out->problems.push_back(std::string(name) + ":" + std::to_string(line_no) + ": line longer than 64 KiB was cut");
    }
    ParseLine(line, line_no, name, out);
    if (end >= text.size()) {
      counted = text.size();
      break;
    }
    counted = end + 1;
    ++line_no;
    for (int i = 0; i < kMarkers; ++i)
      if (next[i] != std::string_view::npos && next[i] < counted) next[i] = Find(text, counted, markers[i]);
  }
  line_no += CountNewlines(text, counted, text.size());
  const int64_t lines = line_no - first_line + (text.back() == '\n' ? 0 : 1);
  return lines;
}

}  // namespace

KernelLogScanner::KernelLogScanner(std::string name) : name_(std::move(name)) { out_.name = name_; }

void KernelLogScanner::Feed(std::string_view chunk) {
  while (!chunk.empty()) {
    if (!carry_.empty() || chunk.find('\n') == std::string_view::npos) {
      // Complete the pending partial line first (bounded: an over-long line is cut).
      std::size_t nl = chunk.find('\n');
      std::string_view head = nl == std::string_view::npos ? chunk : chunk.substr(0, nl + 1);
      if (carry_.size() < kMaxLine + 1) carry_.append(head.substr(0, std::min(head.size(), kMaxLine + 1 - carry_.size())));
      if (nl == std::string_view::npos) {
        cut_ |= head.size() > 0 && carry_.size() > kMaxLine;
        return;
      }
      if (carry_.back() != '\n') {  // the line was cut to the limit; keep it a line
        carry_.push_back('\n');
      }
      lines_ += ScanBuffer(carry_, name_, lines_ + 1, &out_);
      carry_.clear();
      chunk.remove_prefix(nl + 1);
      continue;
    }
    std::size_t last_nl = chunk.rfind('\n');
    lines_ += ScanBuffer(chunk.substr(0, last_nl + 1), name_, lines_ + 1, &out_);
    chunk.remove_prefix(last_nl + 1);
  }
}

KernelLogParse KernelLogScanner::Finish() {
  if (!carry_.empty()) {
    lines_ += ScanBuffer(carry_, name_, lines_ + 1, &out_);
    carry_.clear();
  }
  out_.lines = lines_;
  if (cut_) out_.truncated = true;
  return std::move(out_);
}

KernelLogParse ParseKernelLog(std::string_view text, std::string_view name) {
  KernelLogParse out;
  out.name = std::string(name);
  out.lines = ScanBuffer(text, name, 1, &out);
  return out;
}

}  // namespace suanli::doctor
