#include "suanli/units.h"

#include <gtest/gtest.h>

namespace suanli {
namespace {

TEST(ParseQuantity, DecimalAndBinaryBytesDiffer) {
  EXPECT_DOUBLE_EQ(*ParseQuantity("80 GB", Dimension::kBytes), 80e9);
  EXPECT_DOUBLE_EQ(*ParseQuantity("80 GiB", Dimension::kBytes), 80.0 * 1073741824.0);
  EXPECT_DOUBLE_EQ(*ParseQuantity("50 MiB", Dimension::kBytes), 50.0 * 1048576.0);
}

TEST(ParseQuantity, BitsPerSecondAreEightTimesSmallerThanBytes) {
  // An NDR InfiniBand port: 400 Gb/s = 50 GB/s.
  EXPECT_DOUBLE_EQ(*ParseQuantity("400 Gb/s", Dimension::kBytesPerSecond), 50e9);
  EXPECT_DOUBLE_EQ(*ParseQuantity("3.35 TB/s", Dimension::kBytesPerSecond), 3.35e12);
}

TEST(ParseQuantity, RejectsMissingUnitAndNamesIt) {
  auto r = ParseQuantity("80", Dimension::kBytes);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no unit"), std::string::npos);
}

TEST(ParseQuantity, RejectsWrongDimension) {
  auto r = ParseQuantity("900 GB/s", Dimension::kBytes);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("bandwidth"), std::string::npos);
}

TEST(ParseQuantity, RejectsUnknownUnitNegativeAndGarbage) {
  EXPECT_FALSE(ParseQuantity("80 GBs", Dimension::kBytes).ok());
  EXPECT_FALSE(ParseQuantity("-1 GB", Dimension::kBytes).ok());
  EXPECT_FALSE(ParseQuantity("GB", Dimension::kBytes).ok());
  EXPECT_FALSE(ParseQuantity("", Dimension::kBytes).ok());
  EXPECT_FALSE(ParseQuantity("nan GB", Dimension::kBytes).ok());
  // A number beyond double's range is named as such, not as "does not start with a number".
  auto huge = ParseQuantity("1e400 GB", Dimension::kBytes);
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("out of range"), std::string::npos) << huge.status().message();
}

TEST(ParseQuantity, RatesAndPower) {
  EXPECT_DOUBLE_EQ(*ParseQuantity("989.4 TFLOPS", Dimension::kFlopsPerSecond), 989.4e12);
  EXPECT_DOUBLE_EQ(*ParseQuantity("1978.9 TOPS", Dimension::kOpsPerSecond), 1978.9e12);
  EXPECT_DOUBLE_EQ(*ParseQuantity("700 W", Dimension::kWatts), 700);
  EXPECT_DOUBLE_EQ(*ParseQuantity("2 us", Dimension::kSeconds), 2e-6);
}

TEST(Format, UsesStatedUnits) {
  EXPECT_EQ(FormatBytes(14e9), "14.0 GB");
  EXPECT_EQ(FormatGiB(1073741824.0), "1.00 GiB");
  EXPECT_EQ(FormatBandwidth(3.35e12), "3.35 TB/s");
  EXPECT_EQ(FormatCount(6.74e9), "6.74B");
}

}  // namespace
}  // namespace suanli
