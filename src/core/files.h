// File helpers for the library: reads return Status instead of throwing, and writes are
// atomic (write to a temporary file in the same directory, fsync, rename) so a killed
// process never leaves a half-written file.
#pragma once

#include <string>
#include <string_view>

#include "suanli/status.h"

namespace suanli::detail {

// Reads a whole file. Refuses files over `max_bytes` (default 256 MiB) with a clear error.
Result<std::string> ReadFile(const std::string& path, std::size_t max_bytes = 256u << 20);
// Writes `content` atomically to `path`.
Status WriteFileAtomic(const std::string& path, std::string_view content);

}  // namespace suanli::detail
