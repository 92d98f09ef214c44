#include "scalemodel/units/parse.h"

#include <gtest/gtest.h>

namespace scalemodel::units {
namespace {

TEST(ParseTest, SizesWithDecimalAndBinaryPrefixes) {
  EXPECT_DOUBLE_EQ(ParseBytes("128MiB")->si(), 128.0 * 1048576);
  EXPECT_DOUBLE_EQ(ParseBytes("1.5GB")->si(), 1.5e9);
  EXPECT_DOUBLE_EQ(ParseBytes("80 GB")->si(), 80e9);
  EXPECT_DOUBLE_EQ(ParseBytes("95 GiB")->si(), 95.0 * 1073741824);
  EXPECT_DOUBLE_EQ(ParseBytes("4096")->si(), 4096);
  EXPECT_DOUBLE_EQ(ParseBytes("2kB")->si(), 2000);
}

TEST(ParseTest, Rates) {
  EXPECT_DOUBLE_EQ(ParseBandwidth("3.35TB/s")->si(), 3.35e12);
  EXPECT_DOUBLE_EQ(ParseBandwidth("450 GB/s")->si(), 450e9);
  // Bits: 400 Gb/s is 50 GB/s.
  EXPECT_DOUBLE_EQ(ParseBandwidth("400 Gb/s")->si(), 50e9);
  EXPECT_DOUBLE_EQ(ParseBandwidth("50 Gbps")->si(), 6.25e9);
  EXPECT_DOUBLE_EQ(ParseFlopRate("459TFLOP/s")->si(), 459e12);
  EXPECT_DOUBLE_EQ(ParseFlopRate("1979 TFLOPS")->si(), 1979e12);
  EXPECT_DOUBLE_EQ(ParseFlopRate("394 TOP/s")->si(), 394e12);
  EXPECT_DOUBLE_EQ(ParseFlopRate("2.25 PFLOP/s")->si(), 2.25e15);
}

TEST(ParseTest, DurationsAndCounts) {
  EXPECT_DOUBLE_EQ(ParseDuration("50ms")->si(), 0.05);
  EXPECT_DOUBLE_EQ(ParseDuration("1 us")->si(), 1e-6);
  EXPECT_DOUBLE_EQ(ParseDuration("1\xC2\xB5s")->si(), 1e-6);
  EXPECT_DOUBLE_EQ(ParseDuration("2h")->si(), 7200);
  EXPECT_DOUBLE_EQ(*ParseCount("4M"), 4e6);
  EXPECT_DOUBLE_EQ(*ParseCount("15T"), 15e12);
  EXPECT_DOUBLE_EQ(*ParseCount("1.5B"), 1.5e9);
  EXPECT_DOUBLE_EQ(*ParseCount("4Ki"), 4096);
  EXPECT_DOUBLE_EQ(*ParseCount("2048"), 2048);
  EXPECT_DOUBLE_EQ(*ParseCount("6.3e24"), 6.3e24);
  EXPECT_DOUBLE_EQ(ParseFlops("6.3e24 FLOP")->si(), 6.3e24);
}

// Lengths as model cards write them: k = 1024 (#16).
TEST(ParseTest, LengthsTakeKAs1024) {
  EXPECT_DOUBLE_EQ(*ParseLength("4k"), 4096);
  EXPECT_DOUBLE_EQ(*ParseLength("128K"), 131072);
  EXPECT_DOUBLE_EQ(*ParseLength("8Ki"), 8192);
  EXPECT_DOUBLE_EQ(*ParseLength("1M"), 1048576);
  EXPECT_DOUBLE_EQ(*ParseLength("2048"), 2048);
  EXPECT_DOUBLE_EQ(*ParseLength("1.5k"), 1536);
  EXPECT_EQ(ParseLength("4G").error().message,
            "expected a length in tokens such as \"4k\", got \"4G\" "
            "(unknown unit \"G\")");
  EXPECT_FALSE(ParseLength("0").has_value());
  // Counts keep decimal prefixes.
  EXPECT_DOUBLE_EQ(*ParseCount("4k"), 4000);
}

TEST(ParseTest, ErrorsSayWhatWasExpected) {
  EXPECT_EQ(ParseBandwidth("fast").error().message,
            "expected a bandwidth such as \"3.35 TB/s\", got \"fast\"");
  EXPECT_EQ(ParseBandwidth("3 TB").error().message,
            "expected a bandwidth such as \"3.35 TB/s\", got \"3 TB\" "
            "(unknown unit \"TB\")");
  EXPECT_EQ(ParseBytes("-1GB").error().message,
            "expected a size such as \"128 MiB\", got \"-1GB\" (it must not "
            "be negative)");
  EXPECT_EQ(ParseBytes("0").error().message,
            "expected a size such as \"128 MiB\", got \"0\" (it must be "
            "greater than 0)");
  EXPECT_TRUE(ParseBytes("0", {.allow_zero = true}).has_value());
  // A bare zero is zero in any unit; a bare positive number needs one.
  EXPECT_EQ(ParseDuration("0").error().message,
            "expected a duration such as \"50 ms\", got \"0\" (it must be "
            "greater than 0)");
  EXPECT_EQ(ParseDuration("-3").error().message,
            "expected a duration such as \"50 ms\", got \"-3\" (it must not "
            "be negative)");
  EXPECT_EQ(ParseDuration("5").error().message,
            "expected a duration such as \"50 ms\", got \"5\" (it has no "
            "unit)");
  EXPECT_EQ(ParseDuration("0", {.allow_zero = true})->si(), 0);
  EXPECT_FALSE(ParseBytes("nan").has_value());
  EXPECT_FALSE(ParseBytes("inf GB").has_value());
  EXPECT_EQ(ParseCount("1e400").error().message,
            "expected a count such as \"4M\", got \"1e400\" (the value is not "
            "finite)");
  EXPECT_FALSE(ParseDuration("").has_value());
  EXPECT_FALSE(ParseCount("4 apples").has_value());
}

}  // namespace
}  // namespace scalemodel::units
