#include "scalemodel/units/format.h"

#include <gtest/gtest.h>

namespace scalemodel::units {
namespace {

TEST(FormatTest, PicksReadablePrefixes) {
  EXPECT_EQ(FormatSeconds(Seconds(0.00123)), "1.23 ms");
  EXPECT_EQ(FormatSeconds(Seconds(2e-6)), "2 us");
  EXPECT_EQ(FormatSeconds(Seconds(3 * 86400)), "3 days");
  EXPECT_EQ(FormatBandwidth(BytesPerSecond(3.35e12)), "3.35 TB/s");
  EXPECT_EQ(FormatFlopRate(FlopsPerSecond(989e12)), "989 TFLOP/s");
  EXPECT_EQ(FormatBytes(Bytes(85.9e9)), "85.9 GB");
  EXPECT_EQ(FormatBytesBinary(Gibibytes(80)), "80 GiB");
  EXPECT_EQ(FormatCount(4194304), "4.19M");
  EXPECT_EQ(fmt::format("{}", Seconds(0.5)), "500 ms");
  EXPECT_EQ(FormatFlops(Flops(6.3e24)), "6.3e24 FLOP");
}

// One style for counts, money and plurals in every command's text.
TEST(FormatTest, HumanCountsMoneyAndPlurals) {
  EXPECT_EQ(FormatCount(16070), "16.1k");
  EXPECT_EQ(FormatCount(1528137), "1.53M");
  EXPECT_EQ(FormatCount(27420000), "27.4M");
  EXPECT_EQ(FormatCount(999700), "1M");
  EXPECT_EQ(FormatCount(512), "512");
  EXPECT_EQ(FormatCount(28.63), "28.6");
  EXPECT_EQ(FormatCount(0.25), "0.25");
  EXPECT_EQ(FormatCount(73440, 4), "73.44k");
  EXPECT_EQ(FormatCount(9.6e9, 4), "9.6G");
  EXPECT_EQ(FormatUsd(233000), "$233k");
  EXPECT_EQ(FormatUsd(2.33e6), "$2.33M");
  EXPECT_EQ(FormatUsd(10.8), "$10.80");
  EXPECT_EQ(FormatUsd(396.054), "$396");
  EXPECT_EQ(Plural(1, "microbatch", "microbatches"), "1 microbatch");
  EXPECT_EQ(Plural(16, "microbatch", "microbatches"), "16 microbatches");
  EXPECT_EQ(FormatSeconds(Seconds(10 * 365.25 * 86400)), "10 years");
}

}  // namespace
}  // namespace scalemodel::units
