#include "scalemodel/search/plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "../testing/catalog.h"
#include "scalemodel/ingest/hf_config.h"
#include "scalemodel/search/serving.h"

namespace scalemodel::search {
namespace {

using scalemodel::testing::BuiltinCatalog;
using scalemodel::testing::Model;
using scalemodel::testing::System;

// A small space (1.7B model, 16 sequences of 2048) searched on one or two
// H100 NVLink domains: a few thousand plans, well under a second.
PlanRequest SmallRequest() {
  PlanRequest req;
  req.base.batch_tokens = 16 * 2048.0;
  req.base.seq = 2048;
  req.base.price_per_chip_hour = 2;
  req.top = 5;
  req.threads = 2;
  return req;
}

bool SameLayout(const RankedPlan& a, const RankedPlan& b) {
  const estimate::Parallelism &x = a.config.par, &y = b.config.par;
  return a.system.num_chips() == b.system.num_chips() && x.dp == y.dp &&
         x.fsdp == y.fsdp && x.tp == y.tp && x.pp == y.pp && x.ep == y.ep &&
         x.cp == y.cp &&
         std::fabs(a.candidate.step_time_s / b.candidate.step_time_s - 1) <
             1e-6;
}

// With two sizes, time picks the faster (larger) one and cost the one with
// fewer chip-seconds per step: the small model scales sub-linearly from 8
// to 16 chips, so 8 chips are cheaper per step.
TEST(PlanTrainingTest, CostAndTimePickDifferentSizes) {
  const model::ModelSpec m = Model("megatron-gpt-1.7b");
  const hw::System sys = System("h100:8x2");
  PlanRequest req = SmallRequest();
  req.chip_counts = {8, 16};
  req.objective = Objective::kTime;
  auto by_time = PlanTraining(m, sys, req);
  ASSERT_TRUE(by_time.has_value()) << by_time.error().ToString();
  req.objective = Objective::kCost;
  auto by_cost = PlanTraining(m, sys, req);
  ASSERT_TRUE(by_cost.has_value()) << by_cost.error().ToString();
  ASSERT_FALSE(by_time->plans.empty());
  ASSERT_FALSE(by_cost->plans.empty());
  EXPECT_EQ(by_time->plans[0].system.num_chips(), 16);
  EXPECT_EQ(by_cost->plans[0].system.num_chips(), 8);
  // Each list is in its objective's order, and the scores say so.
  for (size_t i = 1; i < by_time->plans.size(); ++i) {
    EXPECT_LE(by_time->plans[i - 1].candidate.step_time_s,
              by_time->plans[i].candidate.step_time_s);
  }
  for (const RankedPlan& p : by_cost->plans) {
    EXPECT_DOUBLE_EQ(p.score, p.candidate.step_time_s * p.system.num_chips());
    EXPECT_GE(p.behind_best, 0);
  }
  for (size_t i = 1; i < by_cost->plans.size(); ++i) {
    EXPECT_LE(by_cost->plans[i - 1].score, by_cost->plans[i].score);
  }
  // Both searched the same space.
  EXPECT_EQ(by_time->counts.configs_evaluated,
            by_cost->counts.configs_evaluated);
  EXPECT_DOUBLE_EQ(by_cost->price_per_chip_hour, 2);
}

// kChips: the fewest chips first, and among them the fastest step.
TEST(PlanTrainingTest, ChipsObjectiveRanksFewestChipsThenTime) {
  const model::ModelSpec m = Model("megatron-gpt-1.7b");
  const hw::System sys = System("h100:8x2");
  PlanRequest req = SmallRequest();
  req.chip_counts = {16, 8};
  req.objective = Objective::kChips;
  req.top = 8;
  auto r = PlanTraining(m, sys, req);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_FALSE(r->plans.empty());
  EXPECT_EQ(r->plans[0].system.num_chips(), 8);
  for (size_t i = 1; i < r->plans.size(); ++i) {
    const RankedPlan &a = r->plans[i - 1], &b = r->plans[i];
    EXPECT_LE(a.system.num_chips(), b.system.num_chips());
    if (a.system.num_chips() == b.system.num_chips()) {
      EXPECT_LE(a.candidate.step_time_s, b.candidate.step_time_s);
    }
  }
}

// The raw search keeps ZeRO-1 and ZeRO-2 twins (same degrees, same step);
// the plans returned keep one of each, the one with less memory.
TEST(PlanTrainingTest, FoldsNearDuplicates) {
  const model::ModelSpec m = Model("megatron-gpt-1.7b");
  const hw::System sys = System("h100:8x1");
  PlanRequest req = SmallRequest();
  req.top = 20;
  SearchOptions sopt;
  sopt.base = req.base;
  sopt.top_k = req.top * 8;
  sopt.threads = 2;
  auto raw = SearchTraining(m, sys, sopt);
  ASSERT_TRUE(raw.has_value());
  int twins = 0;
  for (size_t i = 0; i < raw->plans.size(); ++i) {
    for (size_t j = i + 1; j < raw->plans.size(); ++j) {
      const auto &a = raw->plans[i].config.par, &b = raw->plans[j].config.par;
      if (a.dp == b.dp && a.fsdp == b.fsdp && a.tp == b.tp && a.pp == b.pp &&
          a.ep == b.ep && a.cp == b.cp &&
          std::fabs(raw->plans[i].step_time_s / raw->plans[j].step_time_s - 1) <
              1e-6) {
        ++twins;
      }
    }
  }
  ASSERT_GT(twins, 0) << "the case no longer has duplicates to fold";
  auto r = PlanTraining(m, sys, req);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_FALSE(r->plans.empty());
  for (size_t i = 0; i < r->plans.size(); ++i) {
    for (size_t j = i + 1; j < r->plans.size(); ++j) {
      EXPECT_FALSE(SameLayout(r->plans[i], r->plans[j]))
          << r->plans[i].candidate.Key() << " and "
          << r->plans[j].candidate.Key();
    }
    // Each kept plan has the least memory among its raw twins.
    for (const PlanCandidate& c : raw->plans) {
      const auto &a = c.config.par, &b = r->plans[i].config.par;
      if (a.dp == b.dp && a.fsdp == b.fsdp && a.tp == b.tp && a.pp == b.pp &&
          a.ep == b.ep && a.cp == b.cp &&
          std::fabs(c.step_time_s / r->plans[i].candidate.step_time_s - 1) <
              1e-6) {
        EXPECT_LE(r->plans[i].candidate.memory_bytes, c.memory_bytes);
      }
    }
    // The report is the ranked plan, in the search's placement order.
    ASSERT_TRUE(r->plans[i].estimate.has_value());
    EXPECT_NEAR(r->plans[i].estimate->step_time.si() /
                    r->plans[i].candidate.step_time_s,
                1, 1e-9);  // one arithmetic core: equal to rounding
  }
  EXPECT_EQ(r->counts.plans.size(), r->plans.size());
}

// The search keeps the best k plans as a heap: they are exactly the first
// k of a search that keeps every plan, in the same order, whatever k and
// however many threads share the work.
TEST(PlanTrainingTest, TopKIsThePrefixOfTheWholeRanking) {
  const model::ModelSpec m = Model("megatron-gpt-1.7b");
  const hw::System sys = System("h100:8x1");
  SearchOptions all;
  all.base = SmallRequest().base;
  all.top_k = 1 << 20;
  all.threads = 1;
  auto every = SearchTraining(m, sys, all);
  ASSERT_TRUE(every.has_value());
  ASSERT_GT(every->plans.size(), 200u) << "the case became too small";
  for (int k : {1, 7, 100}) {
    for (int threads : {1, 2}) {
      SearchOptions some = all;
      some.top_k = k;
      some.threads = threads;
      auto best = SearchTraining(m, sys, some);
      ASSERT_TRUE(best.has_value());
      ASSERT_EQ(best->plans.size(), static_cast<size_t>(k));
      for (int i = 0; i < k; ++i) {
        EXPECT_EQ(best->plans[i].Key(), every->plans[i].Key())
            << "k " << k << ", threads " << threads << ", rank " << i;
      }
    }
  }
}

// --explain: a pipeline of 8 one-GPU stages for a 1.7B model is slow; its
// rank is one more than the returned plans strictly faster.
TEST(PlanTrainingTest, ExplainRanksAmongThePlansFound) {
  const model::ModelSpec m = Model("megatron-gpt-1.7b");
  const hw::System sys = System("h100:8x1");
  PlanRequest req = SmallRequest();
  estimate::TrainingConfig slow = req.base;
  slow.par.pp = 8;
  req.explain = slow;
  auto r = PlanTraining(m, sys, req);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_TRUE(r->explain.has_value());
  ASSERT_FALSE(r->plans.empty());
  const double step = r->explain->estimate.step_time.si();
  int faster = 0;
  for (const RankedPlan& p : r->plans) faster += p.candidate.step_time_s < step;
  EXPECT_EQ(r->explain->rank, 1 + faster);
  EXPECT_GT(r->explain->rank, 1);
  EXPECT_NEAR(r->explain->behind_best,
              step / r->plans[0].candidate.step_time_s - 1, 1e-12);
  // Far behind: past the plans returned, whose rank reads "> top".
  EXPECT_EQ(r->explain->rank, static_cast<int>(r->plans.size()) + 1);
}

// Every plan `plan train` prints round-trips: its key, read back by
// estimate::ParsePlanKey onto the request's base config, gives the same
// step time from EstimateTraining (degrees, micro batch, remat, schedule,
// virtual stages, offload and placement order all carried by the key).
TEST(PlanTrainingTest, EveryPlanKeyReproducesItsStepTime) {
  struct Case {
    const char* model;
    const char* system;
    double sequences;
    double seq;
    int top;
  };
  const Case cases[] = {
      {"llama3-8b", "h100:8x4", 128, 8192, 5},
      {"llama3-70b", "tpu-v5p:8x16x16", 1024, 4096, 5},
      {"gpt3-175b", "a100:8x128", 1536, 2048, 5},
      // Pipelines with interleaved stages (vpp=N) and offload.
      {"llama3-70b", "h100:8x4", 256, 4096, 10},
      {"gpt3-175b", "h100:8x8", 256, 2048, 20},
  };
  for (const Case& k : cases) {
    const model::ModelSpec m = Model(k.model);
    PlanRequest req;
    req.base.batch_tokens = k.sequences * k.seq;
    req.base.seq = k.seq;
    req.top = k.top;
    auto r = PlanTraining(m, System(k.system), req);
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    ASSERT_FALSE(r->plans.empty()) << k.model << " on " << k.system;
    for (const RankedPlan& p : r->plans) {
      const std::string key = p.candidate.Key();
      estimate::TrainingConfig cfg = req.base;
      auto ok = estimate::ParsePlanKey(key, &cfg);
      ASSERT_TRUE(ok.has_value()) << key << ": " << ok.error().ToString();
      auto est = estimate::EstimateTraining(m, p.system, cfg);
      ASSERT_TRUE(est.has_value()) << key << ": " << est.error().ToString();
      ASSERT_TRUE(p.estimate.has_value()) << key;
      EXPECT_NEAR(est->step_time.si() / p.estimate->step_time.si(), 1, 1e-9)
          << k.model << " on " << k.system << ": " << key;
      EXPECT_NEAR(est->step_time.si() / p.candidate.step_time_s, 1, 1e-9)
          << key;
    }
  }
}

// Keeping to what MaxText launches: no ZeRO-1/2 replicas, only its remats.
TEST(PlanTrainingTest, LaunchableByKeepsToTheEngine) {
  const model::ModelSpec m = Model("megatron-gpt-1.7b");
  PlanRequest req = SmallRequest();
  req.top = 20;
  req.launchable_by = estimate::Engine::kMaxText;
  auto r = PlanTraining(m, System("h100:8x1"), req);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_FALSE(r->plans.empty());
  const auto ok = estimate::ExactRemats(estimate::Engine::kMaxText);
  for (const RankedPlan& p : r->plans) {
    EXPECT_EQ(p.config.par.zero, 0) << p.candidate.Key();
    EXPECT_NE(std::find(ok.begin(), ok.end(), p.config.memory.remat), ok.end())
        << p.candidate.Key();
  }
}

TEST(PlanTrainingTest, ErrorsNameTheInput) {
  const model::ModelSpec m = Model("megatron-gpt-1.7b");
  PlanRequest req = SmallRequest();
  req.top = 0;
  auto r = PlanTraining(m, System("h100:8x1"), req);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().where, "top");
  req.top = kMaxPlans + 1;
  r = PlanTraining(m, System("h100:8x1"), req);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().where, "top");
  EXPECT_EQ(r.error().message, "expected at most 10000 plans, got 10001");
  req = SmallRequest();
  req.chip_counts = {12};
  r = PlanTraining(m, System("h100:8x2"), req);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().where, "chips");
  req = SmallRequest();
  req.base.price_per_chip_hour = 0;
  req.objective = Objective::kCost;
  r = PlanTraining(m, System("h800:8x1"), req);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().where, "objective");
  EXPECT_EQ(r.error().message,
            "ranking by cost needs a price: h800 has none in the catalog; "
            "give a price per chip-hour");
}

TEST(PlanTrainingTest, ParseObjective) {
  EXPECT_EQ(*ParseObjective("time"), Objective::kTime);
  EXPECT_EQ(*ParseObjective("Cost"), Objective::kCost);
  EXPECT_EQ(*ParseObjective("chips"), Objective::kChips);
  auto bad = ParseObjective("chip");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().where, "objective");
  EXPECT_EQ(bad.error().message,
            "expected 'time', 'cost' or 'chips', got 'chip' (did you mean "
            "'chips'?)");
  for (Objective o : {Objective::kTime, Objective::kCost, Objective::kChips}) {
    EXPECT_EQ(*ParseObjective(ObjectiveName(o)), o);
  }
}

// plan serve: the frontier is fastest first with rising throughput, and the
// best plan meets the target.
TEST(PlanServingTest, FrontierAndBestUnderTarget) {
  const model::ModelSpec m = Model("llama3-8b");
  ServingPlanRequest req;
  req.base.prompt = 2048;
  req.base.output = 256;
  req.max_chips = 8;
  req.tpot_max_s = 0.02;
  ServingPlanResult r = PlanServing(m, scalemodel::testing::Chip("h100"), req);
  ASSERT_FALSE(r.frontier.empty());
  EXPECT_EQ(r.max_chips, 8);
  EXPECT_GT(r.configs_evaluated, r.frontier.size());
  for (size_t i = 1; i < r.frontier.size(); ++i) {
    EXPECT_LE(r.frontier[i - 1].estimate.decode_step.si(),
              r.frontier[i].estimate.decode_step.si());
    EXPECT_LT(r.frontier[i - 1].estimate.tokens_per_s_per_chip,
              r.frontier[i].estimate.tokens_per_s_per_chip);
  }
  ASSERT_TRUE(r.best.has_value());
  const ServingPlan& best = r.frontier[*r.best];
  EXPECT_LE(best.estimate.decode_step.si(), 0.02);
  for (const ServingPlan& p : r.frontier) {
    if (p.estimate.decode_step.si() <= 0.02) {
      EXPECT_LE(p.estimate.tokens_per_s_per_chip,
                best.estimate.tokens_per_s_per_chip);
    }
  }
  EXPECT_GT(r.prefill_to_decode_chips, 0);
  EXPECT_EQ(best.config.tp * best.config.ep * best.config.pp, best.chips());
}

// Replica shapes: tp divides the heads, ep the experts, DP attention only
// with ep > 1, and pipeline stages only where each stage fills whole
// NVLink domains (none on TPUs).
TEST(PlanServingTest, ReplicaShapes) {
  const hw::Chip& h100 = scalemodel::testing::Chip("h100");
  auto has = [](const std::vector<ReplicaShape>& v, ReplicaShape s) {
    return std::any_of(v.begin(), v.end(), [&](const ReplicaShape& x) {
      return x.tp == s.tp && x.ep == s.ep && x.pp == s.pp &&
             x.dp_attention == s.dp_attention;
    });
  };
  const auto dense = ReplicaShapes(Model("llama3-70b"), h100, 16);
  EXPECT_TRUE(has(dense, {16, 1, 1, false}));
  EXPECT_TRUE(has(dense, {8, 1, 2, false}));
  EXPECT_FALSE(has(dense, {4, 1, 4, false}));  // a stage of half a node
  for (const ReplicaShape& s : dense) {
    EXPECT_EQ(s.ep, 1);
    EXPECT_FALSE(s.dp_attention);
    EXPECT_EQ(s.tp * s.ep * s.pp, 16);
  }
  const auto moe = ReplicaShapes(Model("deepseek-v3"), h100, 16);
  EXPECT_TRUE(has(moe, {1, 16, 1, true}));
  EXPECT_TRUE(has(moe, {1, 16, 1, false}));
  EXPECT_TRUE(has(moe, {1, 8, 2, true}));
  EXPECT_FALSE(has(moe, {16, 1, 1, true}));  // DP attention needs ep
  const auto tpu = ReplicaShapes(Model("llama3-70b"),
                                 scalemodel::testing::Chip("tpu-v5e"), 16);
  for (const ReplicaShape& s : tpu) EXPECT_EQ(s.pp, 1);
}

// A MoE model too large for one node: the frontier holds DP-attention and
// pipeline plans, each evaluated with its own shape.
TEST(PlanServingTest, MoeFrontierHasDpAttentionAndPipelines) {
  ServingPlanRequest req;
  req.base.prompt = 2048;
  req.base.output = 512;
  req.base.weights = hw::Dtype::kFp8;
  req.base.kv = hw::Dtype::kFp8;
  req.max_chips = 16;
  ServingPlanResult r =
      PlanServing(Model("deepseek-v3"), scalemodel::testing::Chip("h100"), req);
  bool dpa = false, pp = false;
  for (const ServingPlan& p : r.frontier) {
    dpa = dpa || p.config.dp_attention;
    pp = pp || p.config.pp > 1;
    EXPECT_EQ(p.Label().find("dp-attention") != std::string::npos,
              p.config.dp_attention);
    EXPECT_GE(p.config.batch, p.config.pp);
  }
  EXPECT_TRUE(dpa);
  EXPECT_TRUE(pp);
}

TEST(PlanServingTest, SystemOfChips) {
  // TPU v5e (2D): the most square slice; v5p (3D): the most cubic; GPUs
  // fill NVLink domains.
  EXPECT_EQ(SystemOfChips(scalemodel::testing::Chip("tpu-v5e"), 8)->id,
            "tpu-v5e:2x4");
  EXPECT_EQ(SystemOfChips(scalemodel::testing::Chip("tpu-v5p"), 8)->id,
            "tpu-v5p:2x2x2");
  EXPECT_EQ(SystemOfChips(scalemodel::testing::Chip("h100"), 32)->id,
            "h100:8x4");
  EXPECT_EQ(SystemOfChips(scalemodel::testing::Chip("h100"), 4)->id,
            "h100:4x1");
}

}  // namespace
}  // namespace scalemodel::search
