#include "scalemodel/units/quantity.h"

#include <gtest/gtest.h>

#include <type_traits>

namespace scalemodel::units {
namespace {

// Misuse must not compile (the approach of {fmt}'s compile-error tests).
template <typename A, typename B>
concept Addable = requires(A a, B b) {
  a + b;
};
template <typename A, typename B>
concept Divisible = requires(A a, B b) {
  a / b;
};
static_assert(!Addable<Bytes, Seconds>);
static_assert(!Addable<Flops, Bytes>);
static_assert(!Addable<Bytes, double>);
static_assert(!std::is_convertible_v<double, Seconds>);
static_assert(!std::is_convertible_v<Bytes, BytesPerSecond>);
static_assert(!Divisible<Seconds, Bytes>);
static_assert(Addable<Bytes, Bytes>);

TEST(QuantityTest, CrossDimensionOperators) {
  // 2 GB at 4 GB/s is half a second.
  Seconds t = Gigabytes(2) / GigabytesPerSecond(4);
  EXPECT_DOUBLE_EQ(t.si(), 0.5);
  // 1e12 FLOP at 1e12 FLOP/s is one second.
  EXPECT_DOUBLE_EQ((Flops(1e12) / TeraflopsPerSecond(1)).si(), 1.0);
  // Intensity and critical intensity are plain numbers.
  EXPECT_DOUBLE_EQ(Flops(100) / Bytes(4), 25.0);
  EXPECT_NEAR(TeraflopsPerSecond(197) / GigabytesPerSecond(819), 240.5, 0.1);
  EXPECT_DOUBLE_EQ((GigabytesPerSecond(2) * Seconds(3)).si(), 6e9);
}

TEST(QuantityTest, BinaryAndDecimalFactoriesDiffer) {
  EXPECT_DOUBLE_EQ(Gibibytes(1).si(), 1073741824.0);
  EXPECT_DOUBLE_EQ(Gigabytes(1).si(), 1e9);
  EXPECT_LT(Gigabytes(1), Gibibytes(1));
  EXPECT_EQ(Max(Seconds(1), Seconds(2)), Seconds(2));
}

}  // namespace
}  // namespace scalemodel::units
