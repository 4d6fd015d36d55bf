#include "suanli/text.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <tuple>
#include <utility>

namespace suanli {

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

int EditDistance(std::string_view a_in, std::string_view b_in) {
  const std::string a = ToLower(a_in), b = ToLower(b_in);
  std::vector<int> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = static_cast<int>(j);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int>(i);
    for (std::size_t j = 1; j <= b.size(); ++j) {
      int sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::vector<std::string> ClosestMatches(std::string_view name, const std::vector<std::vector<std::string>>& groups,
                                        std::size_t max) {
  const std::string lname = ToLower(name);
  struct Scored {
    int d, raw, prefix;  // distance with the substring hint applied; then plain edit distance and the longer
    std::string text;    // common prefix break ties ("h10": "h100" before "a10")
    auto Key() const { return std::tuple{d, raw, -prefix}; }
  };
  std::vector<Scored> scored;
  for (const auto& group : groups) {
    std::optional<Scored> best;
    for (const auto& c : group) {
      const std::string lc = ToLower(c);
      const int raw = EditDistance(lname, lc);
      int d = raw;
      // A substring match (e.g. "4090" in "rtx-4090") is a strong hint whatever the distance.
      if (!lname.empty() && lname.size() >= 3 && lc.find(lname) != std::string::npos) d = std::min(d, 1);
      const int limit = std::max<int>(2, static_cast<int>(lname.size()) / 3);
      if (d > limit) continue;
      int prefix = 0;
      while (prefix < int(std::min(lc.size(), lname.size())) && lc[prefix] == lname[prefix]) ++prefix;
      const Scored sc{d, raw, prefix, c};
      if (!best || sc.Key() < best->Key()) best = sc;
    }
    if (best) scored.push_back(std::move(*best));
  }
  std::stable_sort(scored.begin(), scored.end(), [](const Scored& x, const Scored& y) { return x.Key() < y.Key(); });
  std::vector<std::string> out;
  for (const auto& s : scored) {
    if (out.size() >= max) break;
    if (std::find(out.begin(), out.end(), s.text) == out.end()) out.push_back(s.text);
  }
  return out;
}

std::vector<std::string> ClosestMatches(std::string_view name, const std::vector<std::string>& candidates,
                                        std::size_t max) {
  std::vector<std::vector<std::string>> groups;
  groups.reserve(candidates.size());
  for (const auto& c : candidates) groups.push_back({c});
  return ClosestMatches(name, groups, max);
}

namespace {
std::string Suggestion(const std::vector<std::string>& m) {
  if (m.empty()) return "";
  std::string s = " (did you mean ";
  for (std::size_t i = 0; i < m.size(); ++i) {
    if (i) s += (i + 1 == m.size()) ? " or " : ", ";
    s += "'" + m[i] + "'";
  }
  return s + "?)";
}
}  // namespace

std::string DidYouMean(std::string_view name, const std::vector<std::string>& candidates) {
  return Suggestion(ClosestMatches(name, candidates));
}

std::string DidYouMean(std::string_view name, const std::vector<std::vector<std::string>>& groups) {
  return Suggestion(ClosestMatches(name, groups));
}

std::string ShellQuote(const std::string& v) {
  const bool plain = !v.empty() && std::all_of(v.begin(), v.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || std::string_view("_./,:=+-@%").find(ch) != std::string_view::npos;
  });
  if (plain) return v;
  std::string out = "'";
  for (const char ch : v) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

std::string CommentText(std::string_view v) {
  std::string out(v);
  for (char& ch : out)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ch = '?';
  return out;
}

}  // namespace suanli
