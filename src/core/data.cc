#include "core/data_registry.h"

namespace suanli::detail {

std::vector<EmbeddedFile> EmbeddedFilesUnder(std::string_view prefix, std::string_view suffix) {
  std::vector<EmbeddedFile> out;
  for (std::size_t i = 0; i < kEmbeddedFileCount; ++i) {
    const auto& f = kEmbeddedFiles[i];
    if (f.path.substr(0, prefix.size()) == prefix && f.path.size() >= suffix.size() &&
        f.path.substr(f.path.size() - suffix.size()) == suffix) {
      out.push_back(f);
    }
  }
  return out;
}

const EmbeddedFile* FindEmbeddedFile(std::string_view path) {
  for (std::size_t i = 0; i < kEmbeddedFileCount; ++i) {
    if (kEmbeddedFiles[i].path == path) return &kEmbeddedFiles[i];
  }
  return nullptr;
}

}  // namespace suanli::detail
