#include "scalemodel/hw/dtype.h"

#include <gtest/gtest.h>

namespace scalemodel::hw {
namespace {

TEST(DtypeTest, BytesAndNames) {
  EXPECT_EQ(BytesPerElement(Dtype::kBf16), 2);
  EXPECT_EQ(BytesPerElement(Dtype::kFp8), 1);
  EXPECT_EQ(BytesPerElement(Dtype::kInt4), 0.5);
  EXPECT_EQ(*ParseDtype("BF16"), Dtype::kBf16);
  EXPECT_EQ(*ParseDtype("bfloat16"), Dtype::kBf16);
  EXPECT_EQ(*ParseDtype("e4m3"), Dtype::kFp8);
  for (Dtype d : kAllDtypes) EXPECT_EQ(*ParseDtype(DtypeName(d)), d);
}

TEST(DtypeTest, UnknownDtypeSuggests) {
  EXPECT_EQ(ParseDtype("bf61").error().message,
            "unknown dtype 'bf61' (did you mean 'bf16'?); expected one of "
            "fp32, tf32, bf16, fp16, fp8, int8, int4, fp4");
}

}  // namespace
}  // namespace scalemodel::hw
