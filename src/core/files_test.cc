#include "core/files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace suanli::detail {
namespace {

// A path the user named that is not there, or is a directory, is their input's error (kNotFound: exit 2, as a
// missing model config or doctor input is); `--efficiency /nonexistent` once exited 4, as an I/O failure.
TEST(ReadFile, MissingPathsAreNotFoundAndFilesAreRead) {
  const auto dir = std::filesystem::temp_directory_path() / "suanli_files_test";
  std::filesystem::create_directories(dir);
  auto missing = ReadFile((dir / "nope.toml").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.status().message().find("nope.toml: cannot open"), std::string::npos);
  auto under_file = ReadFile((dir / "nope.toml" / "x").string());
  ASSERT_FALSE(under_file.ok());
  EXPECT_EQ(under_file.status().code(), ErrorCode::kNotFound);
  auto a_dir = ReadFile(dir.string());
  ASSERT_FALSE(a_dir.ok());
  EXPECT_EQ(a_dir.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(a_dir.status().message().find("is a directory"), std::string::npos);
  const std::string path = (dir / "ok.txt").string();
  ASSERT_TRUE(WriteFileAtomic(path, "abc").ok());
  auto ok = ReadFile(path);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, "abc");
  auto too_big = ReadFile(path, 2);
  ASSERT_FALSE(too_big.ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace suanli::detail
