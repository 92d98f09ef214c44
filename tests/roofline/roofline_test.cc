#include "scalemodel/roofline/roofline.h"

#include <gtest/gtest.h>

#include <random>

#include "../testing/catalog.h"

namespace scalemodel::roofline {
namespace {

using scalemodel::testing::Chip;

// The acceptance example: a 512x8192x8192 bf16 matmul on v5e is
// compute-bound, 128 tokens is memory-bound, critical intensity ~240.
TEST(RooflineTest, V5eMatmulVerdicts) {
  auto big = AnalyzeMatmul(Chip("tpu-v5e"), {512, 8192, 8192}, {});
  ASSERT_TRUE(big.has_value());
  EXPECT_TRUE(big->roofline.compute_bound);
  EXPECT_NEAR(big->roofline.critical_intensity, 240, 2);
  auto small = AnalyzeMatmul(Chip("tpu-v5e"), {128, 8192, 8192}, {});
  EXPECT_FALSE(small->roofline.compute_bound);
  // The exact crossing for D = F = 8192 sits above the asymptotic 240 because
  // activation bytes are not negligible: B = 2DF/W / (2DF/C - 4(D)/W) ~ 256.
  EXPECT_NEAR(small->critical_batch_exact, 255.5, 0.5);
}

TEST(RooflineTest, DtypeCombinations) {
  const hw::Chip& v5e = Chip("tpu-v5e");
  MatmulDtypes int8_weights{.activations = hw::Dtype::kBf16,
                            .weights = hw::Dtype::kInt8};
  auto m = AnalyzeMatmul(v5e, {64, 8192, 8192}, int8_weights);
  EXPECT_EQ(m->compute_dtype, hw::Dtype::kBf16);
  EXPECT_NEAR(m->critical_batch, 120.3, 0.5);
  MatmulDtypes all_int8{.activations = hw::Dtype::kInt8,
                        .weights = hw::Dtype::kInt8};
  m = AnalyzeMatmul(v5e, {64, 8192, 8192}, all_int8);
  EXPECT_EQ(m->compute_dtype, hw::Dtype::kInt8);
  EXPECT_NEAR(m->critical_batch, 240.5, 0.5);
  MatmulDtypes fp8{.activations = hw::Dtype::kFp8, .weights = hw::Dtype::kFp8};
  m = AnalyzeMatmul(Chip("h100"), {64, 8192, 8192}, fp8);
  EXPECT_EQ(m->compute_dtype, hw::Dtype::kFp8);
  // H100 fp8: 1979e12 / 3.35e12 = 590.7 (the book's gpus Q3).
  EXPECT_NEAR(m->roofline.critical_intensity, 590.7, 0.5);
  EXPECT_NEAR(m->critical_batch, 295.4, 0.5);
}

TEST(RooflineTest, UnsupportedDtypeIsAnError) {
  MatmulDtypes fp8{.activations = hw::Dtype::kFp8, .weights = hw::Dtype::kFp8};
  EXPECT_EQ(AnalyzeMatmul(Chip("a100"), {1, 2, 3}, fp8).error().message,
            "a100 has no fp8 matrix rate in the catalog (it has fp32, tf32, "
            "bf16, fp16, int8, int4)");
  EXPECT_EQ(AnalyzeMatmul(Chip("tpu-v4"), {1, 2, 3}, {}, MemoryLevel::kOnChip)
                .error()
                .message,
            "tpu-v4 has no on-chip memory bandwidth in the catalog; use the "
            "HBM roofline");
}

// Property: the lower bound is at least each of T_math and T_mem, the upper
// bound is their sum, and the two differ by at most 2x.
TEST(RooflineTest, BoundsProperty) {
  std::mt19937 rng(
      static_cast<unsigned>(::testing::UnitTest::GetInstance()->random_seed()));
  std::uniform_real_distribution<double> exp10(0, 15);
  for (int i = 0; i < 1000; ++i) {
    units::Flops f(std::pow(10, exp10(rng)));
    units::Bytes b(std::pow(10, exp10(rng)));
    Roofline r = Evaluate(f, b, units::FlopsPerSecond(1e14),
                          units::BytesPerSecond(1e12));
    EXPECT_GE(r.t_lower, r.t_math);
    EXPECT_GE(r.t_lower, r.t_mem);
    EXPECT_DOUBLE_EQ(r.t_upper.si(), r.t_math.si() + r.t_mem.si());
    EXPECT_LE(r.t_upper.si(), 2 * r.t_lower.si() * (1 + 1e-12));
    EXPECT_EQ(r.compute_bound, r.intensity >= r.critical_intensity);
    EXPECT_LE(r.achieved.si(), 1e14 * (1 + 1e-12));
  }
}

}  // namespace
}  // namespace scalemodel::roofline
