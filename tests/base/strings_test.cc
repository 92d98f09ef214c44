#include "scalemodel/base/strings.h"

#include <gtest/gtest.h>

namespace scalemodel {
namespace {

TEST(StringsTest, EditDistance) {
  EXPECT_EQ(EditDistance("h10", "h100"), 1);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3);
  EXPECT_EQ(EditDistance("ABC", "abc"), 0);  // case-insensitive
}

TEST(StringsTest, SuggestsCloseNamesOnly) {
  std::vector<std::string> chips = {"h100", "h200", "tpu-v5e", "tpu-v5p"};
  EXPECT_EQ(Suggest("h10", chips), "h100");
  EXPECT_EQ(Suggest("tpu-v5x", chips), "tpu-v5e");
  EXPECT_EQ(Suggest("completely-different", chips), "");
  EXPECT_EQ(DidYouMean("h10", chips), " (did you mean 'h100'?)");
  EXPECT_EQ(DidYouMean("zzzzzzzz", chips), "");
}

TEST(StringsTest, SplitKeepsEmptyPieces) {
  auto parts = Split("a,,b", ',');
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[1], "");
  EXPECT_EQ(Trim("  x y \t"), "x y");
}

TEST(StringsTest, FormatNumber) {
  EXPECT_EQ(FormatNumber(97.34), "97.34");
  EXPECT_EQ(FormatNumber(8.2e11), "820000000000");
  EXPECT_EQ(FormatNumber(8.25e17), "8.25e17");
  EXPECT_EQ(FormatNumber(1.5e-6), "1.5e-6");
  EXPECT_EQ(FormatNumber(4194304), "4194304");
}

}  // namespace
}  // namespace scalemodel
