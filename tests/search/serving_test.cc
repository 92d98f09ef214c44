#include "scalemodel/search/serving.h"

#include <gtest/gtest.h>

#include <random>

#include "../testing/catalog.h"
#include "scalemodel/estimate/inference.h"
#include "scalemodel/ingest/hf_config.h"

namespace scalemodel::search {
namespace {

bool Dominates(const ServePoint& a, const ServePoint& b) {
  return a.tpot_s <= b.tpot_s &&
         a.tokens_per_s_per_chip >= b.tokens_per_s_per_chip &&
         (a.tpot_s < b.tpot_s ||
          a.tokens_per_s_per_chip > b.tokens_per_s_per_chip);
}

void ExpectFrontier(const std::vector<ServePoint>& pts) {
  std::vector<int> f = ParetoFrontier(pts);
  ASSERT_FALSE(f.empty());
  for (int i : f) {
    for (const ServePoint& q : pts) {
      EXPECT_FALSE(Dominates(q, pts[i]))
          << "frontier point " << i << " is dominated";
    }
  }
  // Every point off the frontier is dominated by (or equal to) one on it.
  for (const ServePoint& p : pts) {
    if (std::find(f.begin(), f.end(), p.index) != f.end()) continue;
    bool covered = false;
    for (int i : f) {
      covered |= Dominates(pts[i], p) ||
                 (pts[i].tpot_s == p.tpot_s &&
                  pts[i].tokens_per_s_per_chip == p.tokens_per_s_per_chip);
    }
    EXPECT_TRUE(covered) << p.index;
  }
}

TEST(ServingTest, FrontierOfRandomPoints) {
  std::mt19937 rng(
      static_cast<unsigned>(::testing::UnitTest::GetInstance()->random_seed()));
  std::uniform_real_distribution<double> u(0, 1);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<ServePoint> pts;
    for (int i = 0; i < 200; ++i) pts.push_back({u(rng), u(rng), i});
    ExpectFrontier(pts);
  }
}

// The frontier of real plans: Llama 3 70B on v5e slices, every tp and batch.
TEST(ServingTest, FrontierOfRealPlans) {
  auto m =
      ingest::FindModel(scalemodel::testing::BuiltinCatalog(), "llama3-70b")
          ->spec;
  std::vector<ServePoint> pts;
  for (auto [shape, n] :
       {std::pair<const char*, int>{"2x4", 8}, {"4x4", 16}, {"4x8", 32}}) {
    hw::System sys =
        scalemodel::testing::System(std::string("tpu-v5e:") + shape);
    for (double b = 1; b <= 256; b *= 2) {
      estimate::ServeConfig cfg;
      cfg.tp = n;
      cfg.batch = b;
      cfg.prompt = 2048;
      cfg.output = 512;
      cfg.weights = hw::Dtype::kInt8;
      auto e = estimate::EstimateServing(m, sys, cfg);
      ASSERT_TRUE(e.has_value());
      if (!e->feasible) continue;
      pts.push_back({e->decode_step.si(), e->tokens_per_s_per_chip,
                     static_cast<int>(pts.size())});
    }
  }
  ASSERT_GT(pts.size(), 10u);
  ExpectFrontier(pts);
}

}  // namespace
}  // namespace scalemodel::search
