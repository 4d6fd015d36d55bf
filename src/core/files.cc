#include "core/files.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace suanli::detail {

Result<std::string> ReadFile(const std::string& path, std::size_t max_bytes) {
  std::error_code ec;
  // A path the user named that is not there, or is a directory, is their input's error (NotFound: exit 2, as the
  // model and doctor inputs say it); a file that exists but cannot be read is an I/O error (exit 4).
  if (std::filesystem::is_directory(path, ec)) return NotFound(fmt::format("{}: is a directory, expected a file", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    const std::string msg = fmt::format("{}: cannot open: {}", path, std::strerror(err));
    return err == ENOENT || err == ENOTDIR ? NotFound(msg) : IoError(msg);
  }
  std::string out;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    out.append(buf, static_cast<std::size_t>(in.gcount()));
    if (out.size() > max_bytes) return IoError(fmt::format("{}: larger than {} MiB, refusing to read", path, max_bytes >> 20));
  }
  return out;
}

Status WriteFileAtomic(const std::string& path, std::string_view content) {
  const std::string tmp = fmt::format("{}.tmp.{}", path, static_cast<long>(::getpid()));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return IoError(fmt::format("{}: cannot create: {}", tmp, std::strerror(errno)));
  std::size_t off = 0;
  while (off < content.size()) {
    ssize_t n = ::write(fd, content.data() + off, content.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      ::unlink(tmp.c_str());
      return IoError(fmt::format("{}: write failed: {}", tmp, std::strerror(errno)));
    }
    off += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    return IoError(fmt::format("{}: fsync/close failed: {}", tmp, std::strerror(errno)));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return IoError(fmt::format("{}: rename failed: {}", path, std::strerror(errno)));
  }
  return Status::Ok();
}

}  // namespace suanli::detail
