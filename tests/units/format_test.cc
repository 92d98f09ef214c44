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
  EXPECT_EQ(FormatFlops(Flops(6.3e24)), "6.3e+24 FLOP");
}

}  // namespace
}  // namespace scalemodel::units
