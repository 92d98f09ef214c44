#include "scalemodel/search/serving_slo.h"

#include <gtest/gtest.h>

#include <chrono>

#include "../testing/catalog.h"

namespace scalemodel::search {
namespace {

using scalemodel::testing::Chip;
using scalemodel::testing::Model;

SloPlanRequest Request(double rate, double ttft, double tpot) {
  SloPlanRequest r;
  r.base.prompt = 2048;
  r.base.output = 256;
  r.rate_per_s = rate;
  r.ttft_p99_s = ttft;
  r.tpot_p99_s = tpot;
  r.sim_requests = 200;
  return r;
}

// Reachable SLOs: the best plan meets both in its own simulation, and the
// plans after it that meet them cost no less.
TEST(PlanServingForSlo, MeetsReachableSlo) {
  auto r = PlanServingForSlo(Model("llama3-70b"), Chip("h100"),
                             Request(4, 2.0, 0.05));
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->met) << r->reason;
  const SloPlan& b = r->plans[0];
  EXPECT_TRUE(b.simulated);
  EXPECT_LE(b.ttft_p99_s, 2.0);
  EXPECT_LE(b.tpot_p99_s, 0.05);
  for (const SloPlan& p : r->plans) {
    if (p.meets) {
      EXPECT_GE(p.chips, b.chips);
      EXPECT_GE(p.cost_per_million_output_tokens_usd,
                b.cost_per_million_output_tokens_usd);
    }
  }
  // Cost = price x chips / (rate x output tokens).
  EXPECT_NEAR(b.cost_per_million_output_tokens_usd,
              r->price_per_chip_hour * b.chips / 3600 / (4 * 256) * 1e6, 1e-9);
  // Doubling the rate never needs fewer chips.
  auto r2 = PlanServingForSlo(Model("llama3-70b"), Chip("h100"),
                              Request(8, 2.0, 0.05));
  ASSERT_TRUE(r2 && r2->met);
  EXPECT_GE(r2->plans[0].chips, b.chips);
}

// A MoE model: DP-attention plans are searched (aggregated, and
// disaggregated with one flag for both pools) and pipeline stages never
// appear in a disaggregated pool (serve --prefill-plan takes tp, ep, dp).
TEST(PlanServingForSlo, MoeSearchesDpAttention) {
  SloPlanRequest req = Request(4, 2.0, 0.05);
  req.base.weights = hw::Dtype::kFp8;
  req.base.kv = hw::Dtype::kFp8;
  req.max_chips = 32;
  // Plain ep (attention over all tp x ep chips) leads at this rate; enough
  // candidates are simulated to reach the DP-attention ones.
  req.confirm = 64;
  auto r = PlanServingForSlo(Model("deepseek-v3"), Chip("h100"), req);
  ASSERT_TRUE(r) << r.error().message;
  bool dpa = false;
  for (const SloPlan& p : r->plans) {
    dpa = dpa || p.pool.dp_attention;
    EXPECT_EQ(p.PlanString().find("dp-attention") != std::string::npos,
              p.pool.dp_attention);
    if (p.disaggregated) {
      EXPECT_EQ(p.pool.dp_attention, p.decode.dp_attention);
      EXPECT_EQ(p.pool.pp, 1);
      EXPECT_EQ(p.decode.pp, 1);
    }
  }
  EXPECT_TRUE(dpa);
  // The caps are the engine's --max-num-seqs: per DP rank (TensorRT-LLM,
  // vLLM), so ep ranks' worth is the replica's; the server's for SGLang.
  SloPlanRequest shared = req;
  shared.limits_per_rank = false;
  auto s = PlanServingForSlo(Model("deepseek-v3"), Chip("h100"), shared);
  ASSERT_TRUE(s) << s.error().message;
  int compared = 0;
  for (const SloPlan& p : r->plans) {
    if (!p.pool.dp_attention || p.disaggregated) continue;
    for (const SloPlan& q : s->plans) {
      if (q.PlanString() != p.PlanString()) continue;
      EXPECT_EQ(p.pool.max_num_seqs,
                (q.pool.max_num_seqs + p.pool.ep - 1) / p.pool.ep)
          << p.PlanString();
      ++compared;
    }
  }
  EXPECT_GT(compared, 0);
}

// Unreachable SLOs (a TPOT below any decode step of a 70B model): a result,
// not an error, whose first plan is the closest and says what it misses.
TEST(PlanServingForSlo, ClosestPlanWhenNoneMeets) {
  auto r = PlanServingForSlo(Model("llama3-70b"), Chip("h100"),
                             Request(4, 2.0, 0.0005));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->met);
  ASSERT_FALSE(r->plans.empty());
  const SloPlan& c = r->plans[0];
  EXPECT_FALSE(c.meets);
  EXPECT_GT(c.tpot_p99_s, 0.0005);
  auto miss = [](const SloPlan& p) {
    return std::max(p.ttft_p99_s / 2.0, p.tpot_p99_s / 0.0005);
  };
  for (const SloPlan& p : r->plans) {
    if (p.reason.empty()) EXPECT_LE(miss(c), miss(p));
  }
}

// Each kind alone: disaggregated plans have two pools and a transfer in
// their TTFT; aggregated ones one pool with chunked prefill.
TEST(PlanServingForSlo, KindsAndBadInputs) {
  SloPlanRequest req = Request(4, 2.0, 0.05);
  req.aggregated = false;
  auto d = PlanServingForSlo(Model("llama3-70b"), Chip("h100"), req);
  ASSERT_TRUE(d);
  ASSERT_FALSE(d->plans.empty());
  for (const SloPlan& p : d->plans) {
    EXPECT_TRUE(p.disaggregated);
    EXPECT_EQ(p.chips, p.pool.chips() + p.decode.chips());
  }
  req.rate_per_s = -1;
  auto bad = PlanServingForSlo(Model("llama3-70b"), Chip("h100"), req);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().where, "rate");
  req.rate_per_s = 4;
  req.tpot_p99_s = 0;
  bad = PlanServingForSlo(Model("llama3-70b"), Chip("h100"), req);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().where, "slo_tpot");
}

}  // namespace
}  // namespace scalemodel::search
