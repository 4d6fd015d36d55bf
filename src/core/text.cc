#include "suanli/text.h"

#include <algorithm>
#include <cctype>
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

std::vector<std::string> ClosestMatches(std::string_view name, const std::vector<std::string>& candidates,
                                        std::size_t max) {
  const std::string lname = ToLower(name);
  std::vector<std::pair<int, std::string>> scored;
  for (const auto& c : candidates) {
    const std::string lc = ToLower(c);
    int d = EditDistance(lname, lc);
    // A substring match (e.g. "4090" in "rtx-4090") is a strong hint whatever the distance.
    if (!lname.empty() && lname.size() >= 3 && lc.find(lname) != std::string::npos) d = std::min(d, 1);
    const int limit = std::max<int>(2, static_cast<int>(lname.size()) / 3);
    if (d <= limit) scored.emplace_back(d, c);
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (const auto& [d, c] : scored) {
    if (out.size() >= max) break;
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  return out;
}

std::string DidYouMean(std::string_view name, const std::vector<std::string>& candidates) {
  auto m = ClosestMatches(name, candidates);
  if (m.empty()) return "";
  std::string s = " (did you mean ";
  for (std::size_t i = 0; i < m.size(); ++i) {
    if (i) s += (i + 1 == m.size()) ? " or " : ", ";
    s += "'" + m[i] + "'";
  }
  return s + "?)";
}

}  // namespace suanli
