#include "scalemodel/base/strings.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

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

// Suggest bounds each comparison by the best distance so far and the
// limit; the answer must be the unbounded algorithm's: full Levenshtein
// distances, the first nearest candidate, prefixes as distance 0 (shortest
// first), a name that extends a candidate as far as the characters added.
std::string ReferenceSuggest(const std::string& name,
                             const std::vector<std::string>& candidates) {
  std::string best;
  int best_distance = 1 << 30;
  for (const std::string& c : candidates) {
    int d = EditDistance(name, c);
    const bool prefix = !name.empty() && c.rfind(name, 0) == 0;
    if (prefix) {
      d = 0;
    } else if (!c.empty() && name.rfind(c, 0) == 0) {
      d = std::min<int>(d, static_cast<int>(name.size() - c.size()));
    }
    if (d < best_distance ||
        (prefix && d == best_distance && c.size() < best.size())) {
      best_distance = d;
      best = c;
    }
  }
  const int limit = std::max<int>(2, static_cast<int>(name.size()) / 3);
  return best_distance <= limit ? best : "";
}

TEST(StringsTest, BoundedSuggestMatchesTheFullComputation) {
  // Lower-case names over a small alphabet, so near misses are common.
  uint32_t state = 12345;
  auto next = [&state] {
    state = state * 1664525u + 1013904223u;
    return state >> 8;
  };
  auto word = [&](size_t max_len) {
    std::string w(next() % (max_len + 1), 'a');
    for (char& ch : w) ch = static_cast<char>('a' + next() % 4);
    return w;
  };
  int suggested = 0;
  for (int round = 0; round < 3000; ++round) {
    std::vector<std::string> candidates;
    for (size_t k = 0; k < 1 + next() % 8; ++k) candidates.push_back(word(9));
    const std::string name = word(round % 10 == 0 ? 40 : 10);
    const std::string want = ReferenceSuggest(name, candidates);
    ASSERT_EQ(Suggest(name, candidates), want) << "name '" << name << "'";
    if (!want.empty()) ++suggested;
  }
  EXPECT_GT(suggested, 300);  // the cases exercise suggestions, not only ""
  EXPECT_EQ(EditDistance(std::string(200, 'a'), "b"), 200);
  EXPECT_EQ(Suggest(std::string(200, 'x') + "h100", {"h100", "h200"}), "");
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
