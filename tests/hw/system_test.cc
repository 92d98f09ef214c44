#include "scalemodel/hw/system.h"

#include <gtest/gtest.h>

#include "../testing/catalog.h"

namespace scalemodel::hw {
namespace {

using scalemodel::testing::Chip;
using scalemodel::testing::System;

// Wraparound rules from How to Scale Your Model, TPU chapter: v5e/v6e axes
// wrap only at the full length of 16; v4/v5p slices wrap when built of whole
// 4x4x4 cubes.
TEST(SystemTest, TpuWraparoundRules) {
  hw::System v5e = System("tpu-v5e:8x16");
  ASSERT_EQ(v5e.axes.size(), 3u);  // x, y, dcn
  EXPECT_FALSE(v5e.FindAxis("x")->wraparound);
  EXPECT_TRUE(v5e.FindAxis("y")->wraparound);
  EXPECT_FALSE(System("tpu-v5e:4x4").FindAxis("x")->wraparound);

  hw::System cube = System("tpu-v5p:4x4x8");
  EXPECT_TRUE(cube.FindAxis("x")->wraparound);
  EXPECT_TRUE(cube.FindAxis("z")->wraparound);
  hw::System sub = System("tpu-v5p:2x4x4");  // not whole cubes: no wrap
  EXPECT_FALSE(sub.FindAxis("y")->wraparound);
  EXPECT_FALSE(sub.FindAxis("z")->wraparound);
}

TEST(SystemTest, MultiSliceAndGpuShapes) {
  hw::System ms = System("tpu-v5p:16x16x16/4");
  EXPECT_EQ(ms.num_chips(), 4 * 4096);
  EXPECT_EQ(ms.FindAxis("dcn")->size, 4);
  EXPECT_EQ(ms.FindAxis("dcn")->kind, AxisKind::kDcn);
  EXPECT_DOUBLE_EQ(ms.FindAxis("dcn")->bandwidth.si(), 6.25e9);

  hw::System gpu = System("h100:8x128");
  EXPECT_EQ(gpu.num_chips(), 1024);
  EXPECT_EQ(gpu.FindAxis("node")->size, 8);
  EXPECT_DOUBLE_EQ(gpu.FindAxis("node")->bandwidth.si(), 450e9);
  EXPECT_EQ(gpu.FindAxis("net")->size, 128);
  EXPECT_DOUBLE_EQ(gpu.FindAxis("net")->bandwidth.si(), 50e9);
  EXPECT_EQ(System("gb200:72x8").num_chips(), 576);
}

TEST(SystemTest, ShapeErrors) {
  EXPECT_EQ(BuildSystem(Chip("tpu-v5e"), "4x4x4").error().message,
            "tpu-v5e is a 2D torus: expected 2 dimensions such as '16x16', "
            "got 3 in '4x4x4'");
  EXPECT_EQ(BuildSystem(Chip("tpu-v5e"), "32x16").error().message,
            "slice axis of 32 chips is longer than tpu-v5e's largest pod "
            "axis (16, pod 16x16); use '/N' for several slices over DCN");
  EXPECT_EQ(BuildSystem(Chip("h100"), "16x4").error().message,
            "16 GPUs per NVLink domain is more than h100's domain of 8 "
            "(expected e.g. '8x2')");
  EXPECT_EQ(BuildSystem(Chip("h100"), "8x0").error().message,
            "expected a shape of positive integers such as '16x16' or "
            "'8x128', got '8x0'");
  // A user catalog entry without a [scale_out] table (every built-in chip
  // has one) cannot be used across slices.
  hw::Chip no_dcn = Chip("tpu-v4");
  no_dcn.scale_out.reset();
  auto multi = BuildSystem(no_dcn, "4x4x4/2");
  ASSERT_FALSE(multi.has_value());
  EXPECT_EQ(multi.error().message,
            "tpu-v4 has no DCN bandwidth in the catalog, so it cannot be "
            "used across slices");
  EXPECT_FALSE(BuildSystem(Chip("tpu-v5p"), "16x16x16/x").has_value());
}

}  // namespace
}  // namespace scalemodel::hw
