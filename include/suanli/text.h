// Small text helpers shared by the library and the CLI.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace suanli {

// Levenshtein edit distance (case-insensitive).
int EditDistance(std::string_view a, std::string_view b);

// Up to `max` candidates closest to `name` (edit distance, prefix and substring
// matches first), for "did you mean" messages. Empty when nothing is close.
std::vector<std::string> ClosestMatches(std::string_view name, const std::vector<std::string>& candidates,
                                        std::size_t max = 3);

// " (did you mean 'a' or 'b'?)" or "" when there is no suggestion.
std::string DidYouMean(std::string_view name, const std::vector<std::string>& candidates);

// The same over names grouped by what they name (a catalog id and its aliases): at most one suggestion per group,
// the group's name closest to `name`, so "llama-3.1-8" suggests LLaMA 3.1 8B once, not once per alias.
std::vector<std::string> ClosestMatches(std::string_view name, const std::vector<std::vector<std::string>>& groups,
                                        std::size_t max = 3);
std::string DidYouMean(std::string_view name, const std::vector<std::vector<std::string>>& groups);

std::string ToLower(std::string_view s);

// One word for a POSIX shell command line: as it is where it holds only characters no shell reads specially, else
// single-quoted with each ' written '\'' (a path with a space, a '$(...)' or a quote stays one literal word).
std::string ShellQuote(const std::string& v);
// Text from the user (a model's path, a case's name) inside a '#' comment of a generated script: a newline would end
// the comment and run the rest, so control characters become '?'.
std::string CommentText(std::string_view v);
}  // namespace suanli
