#include "suanli/text.h"

#include <gtest/gtest.h>

namespace suanli {
namespace {

TEST(EditDistance, Basics) {
  EXPECT_EQ(EditDistance("h100", "h100"), 0);
  EXPECT_EQ(EditDistance("h100", "H100"), 0);
  EXPECT_EQ(EditDistance("h10", "h100"), 1);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3);
}

TEST(DidYouMean, SuggestsCloseNamesOnly) {
  const std::vector<std::string> gpus = {"h100-sxm", "h200-sxm", "a100-sxm-80gb", "rtx-4090"};
  EXPECT_NE(DidYouMean("h100-smx", gpus).find("h100-sxm"), std::string::npos);
  EXPECT_NE(DidYouMean("4090", gpus).find("rtx-4090"), std::string::npos);
  EXPECT_EQ(DidYouMean("completely-different", gpus), "");
}

// Grouped names (an id and its aliases) give one suggestion per group, its closest name; at equal distance the
// plain edit distance decides, so "h10" puts the alias "h100" before the substring matches "h100-nvl".
TEST(DidYouMean, SuggestsEachCatalogEntryOnceByItsClosestName) {
  const std::vector<std::vector<std::string>> models = {
      {"llama-3.1-8b", "meta-llama-3.1-8b", "llama3.1-8b"}, {"llama-3.1-70b", "llama3.1-70b"}, {"mistral-7b"}};
  const auto l = ClosestMatches("llama-3.1-8", models);
  ASSERT_EQ(l.size(), 2u);  // one per model; mistral is too far
  EXPECT_EQ(l[0], "llama-3.1-8b");
  EXPECT_EQ(l[1], "llama-3.1-70b");
  const std::vector<std::vector<std::string>> gpus = {
      {"a10"}, {"h100-nvl"}, {"h100-nvl-94gb"}, {"h100-sxm", "h100", "h100-sxm5"}, {"h200-sxm", "h200"}};
  const auto m = ClosestMatches("h10", gpus);
  ASSERT_FALSE(m.empty());
  EXPECT_EQ(m[0], "h100");
  EXPECT_EQ(DidYouMean("zzzzzz", gpus), "");
}

}  // namespace
}  // namespace suanli
