// Access to the data files compiled into the binary (see cmake/embed.cmake).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace suanli::detail {

struct EmbeddedFile {
  std::string_view path;     // relative to the source root, e.g. "data/gpus/h100-sxm.toml"
  std::string_view content;
};

extern const EmbeddedFile kEmbeddedFiles[];
extern const std::size_t kEmbeddedFileCount;

// Files whose path starts with `prefix` and ends with `suffix`, in path order.
std::vector<EmbeddedFile> EmbeddedFilesUnder(std::string_view prefix, std::string_view suffix);
// The file at exactly `path`, or nullptr.
const EmbeddedFile* FindEmbeddedFile(std::string_view path);

}  // namespace suanli::detail
