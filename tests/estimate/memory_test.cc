// Memory per chip by component, engine by engine, the headroom option, and
// the book's flagship example (a chip holding a fraction of a sequence).
#include <gtest/gtest.h>

#include <cmath>

#include "../testing/catalog.h"
#include "scalemodel/estimate/core.h"
#include "scalemodel/estimate/presets.h"
#include "scalemodel/estimate/training.h"
#include "scalemodel/ingest/hf_config.h"

namespace scalemodel::estimate {
namespace {

using scalemodel::testing::BuiltinCatalog;
using scalemodel::testing::Model;
using scalemodel::testing::System;

// Bytes per parameter of each component, by preset (sources in presets.cc).
TEST(EngineMemory, BytesPerParameterByPreset) {
  struct Case {
    Engine engine;
    double weights, grads, master, moments;
  } cases[] = {
      // weight_dtype float32: fp32 weights are their own master copy.
      {Engine::kMaxText, 4, 4, 0, 8},
      // --bf16: fp32 main grads, fp32 master + moments (18 B).
      {Engine::kMegatron, 2, 4, 4, 8},
      // bf16 grad buffers; fp32 master and main-grad copy (20 B).
      {Engine::kMegatronBridge, 2, 2, 8, 8},
      // FSDP2: fp32 sharded params are the master; fp32 grads.
      {Engine::kTorchtitan, 4, 4, 0, 8},
      // ZeRO paper: 2 + 2 + 12.
      {Engine::kDeepSpeed, 2, 2, 4, 8},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(EngineName(c.engine)));
    TrainingConfig cfg;
    cfg.memory.weight_bytes = 99;  // overwritten by the preset
    cfg.memory.offload_optimizer = true;
    cfg.memory.headroom_fraction = 0.1;
    ApplyEnginePreset(c.engine, cfg);
    EXPECT_EQ(cfg.memory.weight_bytes, c.weights);
    EXPECT_EQ(cfg.memory.grad_bytes, c.grads);
    EXPECT_EQ(cfg.memory.master_bytes, c.master);
    EXPECT_EQ(cfg.memory.moment_bytes, c.moments);
    EXPECT_EQ(cfg.memory.reserve_fraction, 0.05);
    // Offload and headroom are the user's, not the engine's.
    EXPECT_TRUE(cfg.memory.offload_optimizer);
    EXPECT_EQ(cfg.memory.headroom_fraction, 0.1);
  }
}

// --weight-dtype: the weights, their gradients and the Adam moments in one
// dtype with no master copy (MaxText weight_dtype), and the reductions in it.
TEST(EngineMemory, WeightDtypeSetsEveryStateAndTheReduction) {
  TrainingConfig cfg;
  ApplyEnginePreset(Engine::kMegatron, cfg);
  ASSERT_TRUE(ApplyWeightDtype(hw::Dtype::kBf16, cfg));
  EXPECT_EQ(cfg.memory.weight_bytes + cfg.memory.grad_bytes +
                cfg.memory.master_bytes + cfg.memory.moment_bytes,
            8);
  EXPECT_EQ(cfg.memory.master_bytes, 0);
  EXPECT_EQ(cfg.precision.grad_reduce, hw::Dtype::kBf16);
  ASSERT_TRUE(ApplyWeightDtype(hw::Dtype::kFp32, cfg));
  EXPECT_EQ(cfg.memory.weight_bytes + cfg.memory.grad_bytes +
                cfg.memory.master_bytes + cfg.memory.moment_bytes,
            16);
  EXPECT_EQ(cfg.precision.grad_reduce, hw::Dtype::kFp32);
  auto bad = ApplyWeightDtype(hw::Dtype::kFp8, cfg);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("expected bf16 or fp32"),
            std::string::npos);
  EXPECT_EQ(cfg.memory.moment_bytes, 8);  // unchanged by the refusal
}

// Expert parallelism: the expert ranks hold replicas of the dense weights,
// so ZeRO shards the dense state over dp x ep, the routed experts' over dp
// (their expert-data-parallel group); weights are not sharded by ZeRO.
TEST(EngineMemory, ZeroShardsDenseStateOverExpertRanksToo) {
  ParamShares sh;
  sh.stage_dense = sh.train_dense = 1e9;
  sh.stage_expert = sh.train_expert = 3e9;
  sh.stage = sh.trained = 4e9;
  StateBytes sb{.weights = 2, .grads = 4, .optimizer = 12};
  Parallelism p;
  p.dp = 2;
  p.ep = 4;
  StateMemory s = StatePerChip(sh, p, sb, false, false, false, 1);
  EXPECT_DOUBLE_EQ(s.optimizer, 12 * 4e9);  // no ZeRO: nothing sharded
  p.zero = 1;
  s = StatePerChip(sh, p, sb, false, false, false, 1);
  EXPECT_DOUBLE_EQ(s.params, 2 * 4e9);
  EXPECT_DOUBLE_EQ(s.grads, 4 * 4e9);
  EXPECT_DOUBLE_EQ(s.optimizer, 12 * (1e9 / 8 + 3e9 / 2));
  EXPECT_DOUBLE_EQ(OwnedOptimizerParams(sh, p), 1e9 / 8 + 3e9 / 2);
  p.zero = 2;
  s = StatePerChip(sh, p, sb, false, false, false, 1);
  EXPECT_DOUBLE_EQ(s.grads, 4 * (1e9 / 8 + 3e9 / 2));
}

// Each component by itself: weights over fsdp, gradients over fsdp (and
// dp x cp with ZeRO-2), optimizer over fsdp (and dp x cp with ZeRO-1).
TEST(EngineMemory, StatePerChipShardsEachComponent) {
  ParamShares sh;
  sh.stage = sh.stage_dense = sh.trained = sh.train_dense = 1e9;
  StateBytes sb{.weights = 2, .grads = 4, .optimizer = 12};
  Parallelism p;
  p.dp = 8;
  StateMemory s = StatePerChip(sh, p, sb, false, false, false, 1);
  EXPECT_DOUBLE_EQ(s.params, 2e9);
  EXPECT_DOUBLE_EQ(s.grads, 4e9);
  EXPECT_DOUBLE_EQ(s.optimizer, 12e9);
  p.zero = 1;  // Megatron's distributed optimizer: 6 + 12/d
  s = StatePerChip(sh, p, sb, false, false, false, 1);
  EXPECT_DOUBLE_EQ(s.grads, 4e9);
  EXPECT_DOUBLE_EQ(s.optimizer, 12e9 / 8);
  p.zero = 2;
  s = StatePerChip(sh, p, sb, false, false, false, 1);
  EXPECT_DOUBLE_EQ(s.grads, 4e9 / 8);
  p = Parallelism{};
  p.fsdp = 4;  // torchtitan: 16 B per parameter, all over fsdp
  StateBytes tt{.weights = 4, .grads = 4, .optimizer = 8};
  s = StatePerChip(sh, p, tt, false, false, false, 1);
  EXPECT_DOUBLE_EQ(s.params + s.grads + s.optimizer, 16e9 / 4);
  // Optimizer offload empties the optimizer state only.
  s = StatePerChip(sh, p, tt, false, true, false, 1);
  EXPECT_DOUBLE_EQ(s.optimizer, 0);
  EXPECT_DOUBLE_EQ(s.params, 1e9);
}

// Peak mode keeps the book's count whatever the engine; realistic mode
// takes the policy's bytes and reserve.
TEST(EngineMemory, StateBytesByMode) {
  MemoryPolicy m;
  ApplyEngineMemory(Engine::kMaxText, m);
  StateBytes peak = TrainingStateBytes(Mode::kPeak, m);
  EXPECT_EQ(peak.weights, 2);
  EXPECT_EQ(peak.grads, 0);
  EXPECT_EQ(peak.optimizer, 8);
  EXPECT_EQ(peak.reserve_fraction, 0);
  StateBytes real = TrainingStateBytes(Mode::kRealistic, m);
  EXPECT_EQ(real.weights, 4);
  EXPECT_EQ(real.grads, 4);
  EXPECT_EQ(real.optimizer, 8);
  EXPECT_EQ(real.reserve_fraction, 0.05);
}

// The engine changes what a published layout needs: Llama 3 8B, fsdp=8 on
// one H100 node, 16 B per parameter (torchtitan) against Megatron's 18.
TEST(EngineMemory, EstimateUsesTheEnginesBytes) {
  auto m = Model("llama3-8b");
  TrainingConfig cfg;
  cfg.par.fsdp = 8;
  cfg.batch_tokens = 8 * 8192;
  cfg.seq = 8192;
  cfg.memory.remat = model::Remat::kFull;
  auto megatron = EstimateTraining(m, System("h100:8x1"), cfg);
  ApplyEngineMemory(Engine::kTorchtitan, cfg.memory);
  auto titan = EstimateTraining(m, System("h100:8x1"), cfg);
  ASSERT_TRUE(megatron && titan);
  const double n = model::CountParams(m).total;
  EXPECT_NEAR(titan->memory.params.si(), 4 * n / 8, 1e6);
  EXPECT_NEAR(titan->memory.grads.si(), 4 * n / 8, 1e6);
  EXPECT_NEAR(titan->memory.optimizer.si(), 8 * n / 8, 1e6);
  EXPECT_NEAR(megatron->memory.params.si() + megatron->memory.grads.si() +
                  megatron->memory.optimizer.si(),
              18 * n / 8, 1e6);
}

// --memory-headroom: a plan that fits in the whole HBM fails when a share
// of it must stay free, and the reason says so.
TEST(EngineMemory, HeadroomNarrowsWhatFits) {
  auto m = Model("llama3-8b");
  TrainingConfig cfg;
  cfg.par.fsdp = 8;
  cfg.batch_tokens = 8 * 8192;
  cfg.seq = 8192;
  cfg.memory.remat = model::Remat::kFull;
  auto base = EstimateTraining(m, System("h100:8x1"), cfg);
  ASSERT_TRUE(base.has_value());
  ASSERT_TRUE(base->feasible);
  const double used = base->memory.total.si() / 80e9;
  cfg.memory.headroom_fraction = 1 - used + 0.01;  // just too much
  auto tight = EstimateTraining(m, System("h100:8x1"), cfg);
  ASSERT_TRUE(tight.has_value());
  EXPECT_FALSE(tight->feasible);
  EXPECT_NE(tight->reason.find("headroom"), std::string::npos) << tight->reason;
  hw::Chip chip;
  chip.hbm_capacity = units::Bytes(80e9);
  MemoryPolicy p;
  p.headroom_fraction = 0.1;
  EXPECT_DOUBLE_EQ(UsableCapacity(chip, p), 72e9);
}

// The book's flagship (applied-training): LLaMA-3 70B on 8,960 v5p chips,
// 4M tokens of 4,096-token sequences (1,024 sequences). FSDP 2,240 x TP 4
// and FSDP 8,960 give each replica a fraction of a sequence; the book's
// per-chip batch is 4 x 2^20 / 8960 = 468 tokens, which is under the
// 850-token FSDP threshold (communication-bound) and over the 113-token
// FSDP x TP one (compute-bound). book-vectors.json:
// llama3-70b-fsdp-only-per-chip-batch, llama3-70b-mixed-fsdp-tp.
TEST(Flagship, Llama3_70bOnAV5pPod) {
  auto m = Model("llama3-70b");
  const hw::System pod = System("tpu-v5p-pod");
  auto run = [&](const char* plan, Mode mode) {
    TrainingConfig cfg;
    cfg.par = *ParsePlan(plan);
    cfg.batch_tokens = 4194304;
    cfg.seq = 4096;
    cfg.mode = mode;
    EXPECT_TRUE(SplitsSequences(cfg));
    EXPECT_NEAR(MicrobatchTokens(cfg) *
                    (cfg.par.dp * cfg.par.fsdp * cfg.par.ep) /
                    cfg.par.product(),
                468.1, 0.1);
    auto e = EstimateTraining(m, pod, cfg);
    EXPECT_TRUE(e.has_value()) << e.error().ToString();
    return *e;
  };
  const TrainingEstimate mixed = run("fsdp=2240,tp=4", Mode::kPeak);
  const TrainingEstimate fsdp = run("fsdp=8960", Mode::kPeak);
  EXPECT_TRUE(mixed.feasible) << mixed.reason;
  EXPECT_TRUE(fsdp.feasible) << fsdp.reason;
  EXPECT_EQ(mixed.microbatches, 1);
  // Compute-bound with TP, communication-bound without (468 < 850).
  EXPECT_LT(mixed.exposed_comm.si(), 0.01 * mixed.compute.si());
  EXPECT_GT(fsdp.exposed_comm.si(), 0.1 * fsdp.compute.si());
  // Peak compute: 6 N B / (chips C) = 6 x 70e9 x 4.19e6 / (8960 x 4.59e14)
  // = 0.43 s, plus attention's share.
  EXPECT_NEAR(mixed.compute.si(), 0.43, 0.05);
  bool book_note = false;
  for (const std::string& n : mixed.notes) {
    book_note |= n.find("as the book shards the sequence") != std::string::npos;
  }
  EXPECT_TRUE(book_note);
  // Realistic mode says how an engine would run it.
  const TrainingEstimate real = run("fsdp=2240,tp=4", Mode::kRealistic);
  bool engine_note = false;
  for (const std::string& n : real.notes) {
    engine_note |= n.find("per_device_batch_size=0.114") != std::string::npos;
  }
  EXPECT_TRUE(engine_note);
}

// A fraction of a sequence runs one microbatch of micro batch 1.
TEST(Flagship, SplitSequencesNeedMicroBatchOne) {
  auto m = Model("llama3-70b");
  TrainingConfig cfg;
  cfg.par = *ParsePlan("fsdp=2240,tp=4");
  cfg.batch_tokens = 4194304;
  cfg.seq = 4096;
  cfg.layout.micro_batch = 2;
  EXPECT_EQ(FindPlanFault(m, System("tpu-v5p-pod"), cfg),
            PlanFault::kMicroBatch);
}

}  // namespace
}  // namespace scalemodel::estimate
