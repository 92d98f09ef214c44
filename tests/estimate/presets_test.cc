#include "scalemodel/estimate/presets.h"

#include <gtest/gtest.h>

namespace scalemodel::estimate {
namespace {

// The habits each preset documents (presets.cc gives the sources).
TEST(PresetsTest, SetTheDocumentedHabits) {
  struct Case {
    Engine engine;
    hw::Dtype grad_reduce;
    bool dp_overlap;
    bool unfused_cross_entropy;
    Fp8Recipe fp8_recipe;
  } cases[] = {
      // base.yml weight_dtype float32; DP reduction after the backward.
      {Engine::kMaxText, hw::Dtype::kFp32, false, false, Fp8Recipe::kDelayed},
      // fp32 reduction unless --grad-reduce-in-bf16; unfused loss.
      {Engine::kMegatron, hw::Dtype::kFp32, true, true, Fp8Recipe::kDelayed},
      // Fused loss, bf16 reductions, current scaling ("cs").
      {Engine::kMegatronBridge, hw::Dtype::kBf16, true, false,
       Fp8Recipe::kTensorwise},
      // mixed_precision_reduce float32; torchao tensorwise float8.
      {Engine::kTorchtitan, hw::Dtype::kFp32, true, false,
       Fp8Recipe::kTensorwise},
      // overlap_comm false for ZeRO-1/2.
      {Engine::kDeepSpeed, hw::Dtype::kBf16, false, false, Fp8Recipe::kDelayed},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(EngineName(c.engine)));
    TrainingConfig cfg;
    // A preset overwrites earlier habits and leaves everything else alone.
    cfg.habits.unfused_cross_entropy = !c.unfused_cross_entropy;
    cfg.habits.tp_comm_overlap = true;
    cfg.layout.micro_batch = 3;
    cfg.precision.matmul = hw::Dtype::kFp8;
    ApplyEnginePreset(c.engine, cfg);
    EXPECT_EQ(cfg.precision.grad_reduce, c.grad_reduce);
    EXPECT_EQ(cfg.habits.dp_overlap, c.dp_overlap);
    EXPECT_EQ(cfg.habits.unfused_cross_entropy, c.unfused_cross_entropy);
    EXPECT_EQ(cfg.precision.fp8_recipe, c.fp8_recipe);
    EXPECT_FALSE(cfg.habits.tp_comm_overlap);
    EXPECT_EQ(cfg.layout.micro_batch, 3);
    EXPECT_EQ(cfg.precision.matmul, hw::Dtype::kFp8);
  }
}

// What each engine can launch: MaxText and torchtitan have no ZeRO-1/2.
TEST(PresetsTest, LaunchLimits) {
  EXPECT_EQ(MaxZeroLevel(Engine::kMaxText), 0);
  EXPECT_EQ(MaxZeroLevel(Engine::kTorchtitan), 0);
  EXPECT_EQ(MaxZeroLevel(Engine::kMegatron), 2);
  EXPECT_EQ(MaxZeroLevel(Engine::kMegatronBridge), 2);
  EXPECT_EQ(MaxZeroLevel(Engine::kDeepSpeed), 2);
  using model::Remat;
  EXPECT_EQ(
      ExactRemats(Engine::kMegatron),
      (std::vector<Remat>{Remat::kNone, Remat::kSelective, Remat::kFull}));
  EXPECT_EQ(ExactRemats(Engine::kDeepSpeed),
            (std::vector<Remat>{Remat::kNone, Remat::kFull}));
}

TEST(PresetsTest, ParseEngine) {
  for (Engine e : {Engine::kMaxText, Engine::kMegatron, Engine::kMegatronBridge,
                   Engine::kTorchtitan, Engine::kDeepSpeed}) {
    EXPECT_EQ(*ParseEngine(EngineName(e)), e);
  }
  EXPECT_EQ(*ParseEngine("NeMo"), Engine::kMegatronBridge);
  EXPECT_EQ(*ParseEngine("megatron-lm"), Engine::kMegatron);
  auto bad = ParseEngine("torchtitn");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().where, "engine");
  EXPECT_EQ(bad.error().message,
            "unknown engine 'torchtitn' (did you mean 'torchtitan'?); "
            "expected maxtext, megatron, megatron-bridge, torchtitan or "
            "deepspeed");
}

}  // namespace
}  // namespace scalemodel::estimate
