#include "scalemodel/search/parallelism.h"

#include <gtest/gtest.h>

#include <cmath>
#include <mutex>
#include <tuple>

#include "../testing/catalog.h"
#include "scalemodel/ingest/hf_config.h"
#include "scalemodel/validate/validate.h"

namespace scalemodel::search {
namespace {

using scalemodel::testing::BuiltinCatalog;
using scalemodel::testing::Model;
using scalemodel::testing::System;

std::vector<int> Divs(int n) {
  std::vector<int> d;
  for (int i = 1; i <= n; ++i) {
    if (n % i == 0) d.push_back(i);
  }
  return d;
}

// On a small space the search's best equals the brute-force minimum of the
// decorated estimator over every plan.
TEST(SearchTest, BestEqualsBruteForceMinimum) {
  model::ModelSpec m = Model("megatron-gpt-1.7b");
  hw::System sys = System("h100:8x1");
  SearchOptions opt;
  opt.base.batch_tokens = 16 * 2048.0;
  opt.base.seq = 2048;
  opt.top_k = 1;
  auto r = SearchTraining(m, sys, opt);
  ASSERT_TRUE(r.has_value());
  ASSERT_FALSE(r->plans.empty());
  double best = 1e30;
  long count = 0;
  const double seqs = 16;
  for (int tp : Divs(8)) {
    if (m.num_heads % tp) continue;
    for (int pp : Divs(8 / tp)) {
      for (int cp : Divs(8 / tp / pp)) {
        int rest = 8 / tp / pp / cp;
        for (int fsdp : Divs(rest)) {
          int dp = rest / fsdp;
          if (std::fmod(seqs, dp * fsdp) != 0) continue;
          for (int zero :
               dp > 1 ? std::vector<int>{0, 1, 2} : std::vector<int>{0}) {
            for (int mb : Divs(static_cast<int>(seqs / (dp * fsdp)))) {
              for (model::Remat rm : model::kAllRemats) {
                // Schedule, virtual stages, last-stage layers (1F1B may
                // give the last stage fewer, leaving the others whole).
                std::vector<std::tuple<estimate::Schedule, int, int>> sch = {
                    {estimate::Schedule::k1F1B, 1, 0}};
                if (pp > 1) {
                  const int even = (24 + pp - 1) / pp;
                  for (int k = even + 1; k <= even + 2; ++k) {
                    if (24 - (pp - 1) * k >= 1) {
                      sch.push_back(
                          {estimate::Schedule::k1F1B, 1, 24 - (pp - 1) * k});
                    }
                  }
                  for (int v : Divs(24 / pp)) {
                    if (v >= 2 && v <= 16 && (24 / pp) % v == 0) {
                      sch.push_back({estimate::Schedule::kInterleaved, v, 0});
                    }
                  }
                }
                for (auto [s, v, last] : sch) {
                  for (int cell = 0; cell < 6; ++cell) {
                    const int off = cell / 2;
                    // Activation offload is searched at full remat only.
                    if (cell % 2 == 1 && rm != model::Remat::kFull) continue;
                    estimate::TrainingConfig c = opt.base;
                    c.par.tp = tp;
                    c.par.pp = pp;
                    c.par.cp = cp;
                    c.par.fsdp = fsdp;
                    c.par.dp = dp;
                    c.par.zero = zero;
                    c.layout.micro_batch = mb;
                    c.memory.remat = rm;
                    c.layout.schedule = s;
                    c.layout.vpp = v;
                    c.layout.last_stage_layers = last;
                    c.memory.offload_optimizer = off >= 1;
                    c.memory.offload_params = off == 2;
                    c.memory.offload_activations = cell % 2 == 1;
                    auto e = estimate::EstimateTraining(m, sys, c);
                    ASSERT_TRUE(e.has_value()) << e.error().ToString();
                    ++count;
                    if (e->feasible) best = std::min(best, e->step_time.si());
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(r->configs_evaluated, count);
  EXPECT_NEAR(r->plans[0].step_time_s, best, 1e-12 * best);
}

// Parameter and optimizer offload are searched: Llama 3 70B's 18 B per
// parameter do not fit on one 8 x 80 GB node without moving state to the
// host, and the search finds the plans that do.
TEST(SearchTest, OffloadIsSearched) {
  model::ModelSpec m = Model("llama3-70b");
  hw::System sys = System("h100:8x1");
  SearchOptions opt;
  opt.base.batch_tokens = 8 * 4096.0;
  opt.base.seq = 4096;
  opt.top_k = 20;
  auto r = SearchTraining(m, sys, opt);
  ASSERT_TRUE(r.has_value());
  ASSERT_FALSE(r->plans.empty());
  bool params = false;
  for (const PlanCandidate& p : r->plans) {
    EXPECT_TRUE(p.config.memory.offload_optimizer ||
                p.config.memory.offload_params)
        << p.Key();
    params |= p.config.memory.offload_params;
  }
  EXPECT_TRUE(params);
  opt.search_offload = false;
  auto none = SearchTraining(m, sys, opt);
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->plans.empty());
}

// Activation offload is searched where the activations do not fit: Llama 3
// 8B at 12 sequences of 8192 tokens per chip on 8 x 80 GB with FSDP needs
// 86.7 GB even at full remat (its layer inputs: 12 x 8192 x 4096 x 2 B x 32
// layers = 25.8 GB; the logits and the recompute buffer besides), 62.6 GB
// with all but two layers' inputs in host memory; the search finds those
// plans, and without activation offload none.
TEST(SearchTest, ActivationOffloadIsSearched) {
  model::ModelSpec m = Model("llama3-8b");
  hw::System sys = System("h100:8x1");
  SearchOptions opt;
  opt.base.batch_tokens = 96 * 8192.0;
  opt.base.seq = 8192;
  opt.fixed.micro_batch = 12;
  opt.fixed.offload = 0;
  opt.fixed.degrees[estimate::kFsdp] = 8;
  opt.top_k = 5;
  auto r = SearchTraining(m, sys, opt);
  ASSERT_TRUE(r.has_value());
  ASSERT_FALSE(r->plans.empty());
  for (const PlanCandidate& p : r->plans) {
    EXPECT_TRUE(p.config.memory.offload_activations) << p.Key();
    EXPECT_NE(p.Key().find(" offload-acts"), std::string::npos);
    // The key is a plan train reads back.
    estimate::TrainingConfig c = opt.base;
    ASSERT_TRUE(estimate::ParsePlanKey(p.Key(), &c).has_value());
    EXPECT_TRUE(c.memory.offload_activations);
  }
  opt.search_act_offload = false;
  auto none = SearchTraining(m, sys, opt);
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->plans.empty());
}

// Each constraint narrows the search to plans that keep it.
TEST(SearchTest, ConstraintsNarrowTheSearch) {
  model::ModelSpec m = Model("megatron-gpt-1.7b");
  hw::System sys = System("h100:8x1");
  SearchOptions opt;
  opt.base.batch_tokens = 16 * 2048.0;
  opt.base.seq = 2048;
  opt.top_k = 50;
  auto all = SearchTraining(m, sys, opt);
  opt.fixed.degrees[estimate::kTp] = 2;
  opt.fixed.remat = model::Remat::kFull;
  opt.fixed.micro_batch = 2;
  opt.fixed.offload = 0;
  auto some = SearchTraining(m, sys, opt);
  ASSERT_TRUE(all && some);
  ASSERT_FALSE(some->plans.empty());
  EXPECT_LT(some->configs_evaluated, all->configs_evaluated);
  for (const PlanCandidate& p : some->plans) {
    EXPECT_EQ(p.config.par.tp, 2) << p.Key();
    EXPECT_EQ(p.config.memory.remat, model::Remat::kFull);
    EXPECT_EQ(p.config.layout.micro_batch, 2);
    EXPECT_FALSE(p.config.memory.offload_optimizer);
  }
  opt.fixed = PlanConstraints{};
  opt.fixed.zero = 1;
  opt.fixed.degrees[estimate::kPp] = 2;
  opt.fixed.schedule = estimate::Schedule::kInterleaved;
  auto z = SearchTraining(m, sys, opt);
  ASSERT_TRUE(z.has_value());
  ASSERT_FALSE(z->plans.empty());
  for (const PlanCandidate& p : z->plans) {
    EXPECT_EQ(p.config.par.zero, 1) << p.Key();
    EXPECT_EQ(p.config.layout.schedule, estimate::Schedule::kInterleaved);
  }
}

// A memory headroom keeps every plan under the share of HBM left.
TEST(SearchTest, HeadroomCapsPlanMemory) {
  model::ModelSpec m = Model("llama3-8b");
  hw::System sys = System("h100:8x1");
  SearchOptions opt;
  opt.base.batch_tokens = 32 * 8192.0;
  opt.base.seq = 8192;
  opt.top_k = 50;
  opt.base.memory.headroom_fraction = 0.5;
  auto r = SearchTraining(m, sys, opt);
  ASSERT_TRUE(r.has_value());
  ASSERT_FALSE(r->plans.empty());
  for (const PlanCandidate& p : r->plans) {
    EXPECT_LE(p.memory_bytes, 40e9) << p.Key();
  }
}

// When no split of the chips divides the batch, the search says so by its
// counts (the CLI's "no layout divides" sentence), not by memory.
TEST(SearchTest, CountsLayoutsTheBatchDoesNotSplitOver) {
  model::ModelSpec m = Model("megatron-gpt-1.7b");
  hw::System sys = System("h100:8x1");
  SearchOptions opt;
  opt.base.batch_tokens = 3 * 2048.0;
  opt.base.seq = 2048;
  opt.fixed.degrees[estimate::kTp] = 1;
  opt.fixed.degrees[estimate::kPp] = 1;
  opt.fixed.degrees[estimate::kCp] = 1;
  auto r = SearchTraining(m, sys, opt);
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->plans.empty());
  EXPECT_GT(r->degree_splits, 0);
  EXPECT_EQ(r->splits_batch_unsplit, r->degree_splits);
  EXPECT_EQ(r->fewest_unsplit_replicas, 8);
  EXPECT_EQ(r->configs_infeasible, 0);
}

// Every pruned block's least-memory variant really does not fit.
TEST(SearchTest, PrunedPlansAreInfeasible) {
  // Full training, and a LoRA fine-tune whose memory floor counts only the
  // adapters' gradients and optimizer state.
  for (int lora : {0, 16}) {
    SCOPED_TRACE(lora);
    model::ModelSpec m = Model("llama3-70b");
    hw::System sys = System(lora > 0 ? "h100:8x1" : "h100:8x2");
    SearchOptions opt;
    opt.base.batch_tokens = 64 * 4096.0;
    opt.base.seq = 4096;
    opt.base.lora_rank = lora;
    std::mutex mu;
    std::vector<estimate::TrainingConfig> probes;
    opt.on_pruned = [&](const estimate::TrainingConfig& c) {
      std::lock_guard<std::mutex> lock(mu);
      probes.push_back(c);
    };
    auto r = SearchTraining(m, sys, opt);
    ASSERT_TRUE(r.has_value());
    ASSERT_GT(probes.size(), 10u);
    EXPECT_GT(r->configs_pruned, 0);
    for (const estimate::TrainingConfig& c : probes) {
      auto e = estimate::EstimateTraining(m, sys, c);
      ASSERT_TRUE(e.has_value()) << e.error().ToString();
      EXPECT_FALSE(e->feasible) << c.par.ToString();
    }
  }
}

// Every plan the search returns is one `scalemodel train` accepts, with the
// same step time (one shared core), including uneven pipelines.
TEST(SearchTest, PlansAreValidForTheEstimator) {
  struct Case {
    const char* model;
    const char* system;
    double seqs, seq;
  } cases[] = {{"llama3-70b", "tpu-v5p:16x20x28", 1024, 4096},
               {"llama3-70b", "tpu-v5p:16x20x4", 1024, 4096},
               {"mixtral-8x7b", "h100:8x16", 512, 4096},
               {"gpt3-175b", "a100:8x64", 1536, 2048}};
  for (const Case& c : cases) {
    SearchOptions opt;
    opt.base.batch_tokens = c.seqs * c.seq;
    opt.base.seq = c.seq;
    opt.top_k = 20;
    // The engine-habit and MoE options flow through the search unchanged.
    opt.base.precision.grad_reduce = hw::Dtype::kFp32;
    opt.base.habits.dp_overlap = false;
    opt.base.habits.capacity_factor = 1.25;
    hw::System sys = System(c.system);
    model::ModelSpec m = Model(c.model);
    auto r = SearchTraining(m, sys, opt);
    ASSERT_TRUE(r.has_value());
    ASSERT_FALSE(r->plans.empty()) << c.system;
    for (const PlanCandidate& p : r->plans) {
      estimate::TrainingConfig cfg = p.config;
      cfg.layout.placement_order.assign(p.order.begin(), p.order.end());
      auto e = estimate::EstimateTraining(m, sys, cfg);
      ASSERT_TRUE(e.has_value()) << p.Key() << ": " << e.error().ToString();
      EXPECT_DOUBLE_EQ(e->step_time.si(), p.step_time_s) << p.Key();
    }
  }
}

TEST(SearchTest, Deterministic) {
  model::ModelSpec m = Model("mixtral-8x7b");
  hw::System sys = System("h100:8x8");
  SearchOptions opt;
  opt.base.batch_tokens = 512 * 4096.0;
  opt.base.seq = 4096;
  auto a = SearchTraining(m, sys, opt);
  opt.threads = 1;
  auto b = SearchTraining(m, sys, opt);
  ASSERT_EQ(a->plans.size(), b->plans.size());
  for (size_t i = 0; i < a->plans.size(); ++i) {
    EXPECT_EQ(a->plans[i].Key(), b->plans[i].Key());
    EXPECT_EQ(a->plans[i].step_time_s, b->plans[i].step_time_s);
  }
  EXPECT_EQ(a->configs_evaluated, b->configs_evaluated);
}

// The prunes by step bounds and the memory verdicts reused across
// placements are exact: the top plans (keys and step times, bit for bit)
// are the same with them off, on dense and mixture-of-experts models, with
// pipelines, and on one thread and two.
TEST(SearchTest, BoundPrunesKeepTheTopPlans) {
  struct Case {
    const char* model;
    const char* system;
    double seqs, seq;
  } cases[] = {
      {"megatron-gpt-1.7b", "h100:8x1", 16, 2048},
      {"mixtral-8x7b", "h100:8x8", 512, 4096},
      {"llama3-8b", "h100:8x4", 64, 8192},
      {"deepseek-v3", "h100:8x32", 512, 4096},
  };
  for (const Case& c : cases) {
    for (int threads : {1, 2}) {
      model::ModelSpec m = Model(c.model);
      hw::System sys = System(c.system);
      SearchOptions opt;
      opt.base.batch_tokens = c.seqs * c.seq;
      opt.base.seq = c.seq;
      opt.top_k = 40;
      opt.threads = threads;
      auto pruned = SearchTraining(m, sys, opt);
      opt.bound_prunes = false;
      auto full = SearchTraining(m, sys, opt);
      ASSERT_TRUE(pruned.has_value() && full.has_value()) << c.model;
      ASSERT_FALSE(full->plans.empty()) << c.model;
      ASSERT_EQ(pruned->plans.size(), full->plans.size()) << c.model;
      for (size_t i = 0; i < full->plans.size(); ++i) {
        EXPECT_EQ(pruned->plans[i].Key(), full->plans[i].Key()) << c.model;
        EXPECT_EQ(pruned->plans[i].step_time_s, full->plans[i].step_time_s)
            << c.model << " " << full->plans[i].Key();
      }
      EXPECT_EQ(pruned->configs_evaluated, full->configs_evaluated);
      EXPECT_LT(pruned->configs_scored, full->configs_scored) << c.model;
    }
  }
}

// SearchOptions::cancelled (Ctrl-C in Python) stops the workers after their
// current layout: the search fails with kCancelled having covered a small
// part of a space that takes seconds on one thread, and asks only once.
TEST(SearchTest, CancelledStopsTheSearch) {
  // The largest search (about 1 s on one thread after the exact prunes;
  // the dense 405B one covers most of its tuples before the first check
  // at 100 ms).
  model::ModelSpec m = Model("deepseek-v3");
  hw::System sys = System("h800:8x256");
  SearchOptions opt;
  opt.base.batch_tokens = 15360 * 4096.0;
  opt.base.seq = 4096;
  opt.threads = 1;
  int asked = 0;
  double covered = 0;
  opt.cancelled = [&] { return ++asked > 0; };
  opt.progress = [&](double fraction, double) { covered = fraction; };
  auto r = SearchTraining(m, sys, opt);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kCancelled);
  EXPECT_EQ(r.error().message, "the search was interrupted");
  EXPECT_EQ(asked, 1);
  EXPECT_LT(covered, 0.5);
}

// --emit keeps the search to the engine's exact remat policies: the plan it
// prints is the plan it estimated.
TEST(SearchTest, RematsCanBeRestricted) {
  model::ModelSpec m = Model("llama3-8b");
  hw::System sys = System("h100:8x2");
  SearchOptions opt;
  opt.base.batch_tokens = 64 * 4096.0;
  opt.base.seq = 4096;
  opt.top_k = 50;
  opt.remats = {model::Remat::kNone, model::Remat::kFull};
  auto r = SearchTraining(m, sys, opt);
  ASSERT_TRUE(r.has_value());
  ASSERT_FALSE(r->plans.empty());
  for (const PlanCandidate& p : r->plans) {
    EXPECT_TRUE(p.config.memory.remat == model::Remat::kNone ||
                p.config.memory.remat == model::Remat::kFull)
        << p.Key();
  }
  SearchOptions all = opt;
  all.remats.clear();
  // Fewer policies, fewer configurations.
  EXPECT_LT(r->configs_evaluated,
            SearchTraining(m, sys, all)->configs_evaluated);
}

// Quality: for every published run whose layout fits by our model, the
// search's best plan is at least as fast as the published layout.
TEST(SearchTest, BestBeatsEveryPublishedLayout) {
  std::vector<std::string> skipped;
  std::vector<validate::TrainingRun> runs =
      validate::TrainingRuns(BuiltinCatalog(), &skipped);
  EXPECT_TRUE(skipped.empty());
  ASSERT_GT(runs.size(), 100u);
  int checked = 0;
  for (const validate::TrainingRun& run : runs) {
    auto published =
        estimate::EstimateTraining(run.model, run.system, run.config);
    if (!published || !published->feasible) continue;
    SearchOptions opt;
    opt.base = run.config;
    opt.top_k = 1;
    auto r = SearchTraining(run.model, run.system, opt);
    ASSERT_TRUE(r.has_value());
    ASSERT_FALSE(r->plans.empty()) << run.id;
    EXPECT_LE(r->plans[0].step_time_s, published->step_time.si() * (1 + 1e-9))
        << run.id << ": best " << r->plans[0].Key();
    ++checked;
  }
  EXPECT_GT(checked, 40);
}

}  // namespace
}  // namespace scalemodel::search
