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

}  // namespace
}  // namespace suanli
