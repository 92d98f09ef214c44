// Pins the realistic training model by itself, not through goldens: the
// collectives each parallelism family issues (calls and bytes), the bytes
// per parameter by optimizer and ZeRO level, and memory per chip by
// component. Each expectation is derived by hand from docs/model.md section
// 5 for a small model whose numbers are easy to follow.
#include "scalemodel/estimate/core.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "../testing/catalog.h"
#include "scalemodel/estimate/efficiency.h"
#include "scalemodel/estimate/training.h"
#include "scalemodel/model/transformer.h"

namespace scalemodel::estimate {
namespace {

using scalemodel::testing::System;

// 4 layers, D = 1024, 16 heads of 64 (MHA), F = 4096 (SwiGLU), V = 32768.
model::ModelSpec Small() {
  model::ModelSpec m;
  m.id = "small";
  m.name = "small";
  m.num_layers = 4;
  m.d_model = 1024;
  m.ffn = 4096;
  m.num_heads = 16;
  m.num_kv_heads = 16;
  m.head_dim = 64;
  m.vocab = 32768;
  m.max_positions = 8192;
  return m;
}

// The same with every layer MoE: 8 experts of F = 1024, top-2.
model::ModelSpec SmallMoe() {
  model::ModelSpec m = Small();
  m.id = "small-moe";
  m.moe.num_experts = 8;
  m.moe.top_k = 2;
  m.moe.expert_ffn = 1024;
  return m;
}

TrainingConfig Config(const std::string& plan, double seqs, double seq = 1024) {
  TrainingConfig c;
  auto p = ParsePlan(plan);
  EXPECT_TRUE(p.has_value()) << p.error().ToString();
  c.par = *p;
  c.seq = seq;
  c.batch_tokens = seqs * seq;
  c.layout.micro_batch = 1;
  return c;
}

struct Seen {
  std::int64_t calls = 0;
  double bytes = 0;
};
// Comms of an estimate by "kind/parallelism".
std::map<std::string, Seen> Comms(const model::ModelSpec& m,
                                  const std::string& system,
                                  const TrainingConfig& cfg) {
  auto e = EstimateTraining(m, System(system), cfg);
  EXPECT_TRUE(e.has_value()) << e.error().ToString();
  std::map<std::string, Seen> out;
  if (!e) return out;
  for (const CommItem& c : e->comms) {
    out[c.kind + "/" + c.parallelism] = {c.calls, c.bytes.si()};
  }
  return out;
}

// ---- Collectives per parallelism family.

// Tensor parallel with sequence parallelism: per layer, an all-gather and a
// reduce-scatter of the [t, D] bf16 activations around attention and
// around the MLP, in the forward and the backward pass: 2 x 2 = 4 calls
// per layer per microbatch, half all-gathers. t = 1024 tokens, so V =
// 1024 x 1024 x 2 B = 2 MiB. 4 layers x 2 microbatches: 16 of each.
TEST(CoreCollectives, TensorParallelCallsAndBytes) {
  auto c = Comms(Small(), "h100:8x1", Config("tp=2,dp=4", 8));
  EXPECT_EQ(c["all-gather/tp"].calls, 16);
  EXPECT_EQ(c["reduce-scatter/tp"].calls, 16);
  EXPECT_DOUBLE_EQ(c["all-gather/tp"].bytes, 1024.0 * 1024 * 2);
  // Full recompute repeats the forward's: 3 passes, 24 of each.
  TrainingConfig full = Config("tp=2,dp=4", 8);
  full.memory.remat = model::Remat::kFull;
  EXPECT_EQ(Comms(Small(), "h100:8x1", full)["all-gather/tp"].calls, 24);
  // Without sequence parallelism, all-reduces: 32.
  auto ar = Comms(Small(), "h100:8x1", Config("tp=2,dp=4,sp=0", 8));
  EXPECT_EQ(ar["all-reduce/tp"].calls, 32);
  EXPECT_EQ(ar.count("all-gather/tp"), 0u);
}

// FSDP: every layer's weights gathered for the forward and again for the
// backward of each microbatch (2 x m x L calls), its gradients
// reduce-scattered once per microbatch (m x L). V is one layer's share of
// the stage (bf16 weights; fp32... no: bf16 gradients by default).
TEST(CoreCollectives, FsdpCallsAndBytes) {
  const model::ModelSpec m = Small();
  const model::ParamCounts pc = model::CountParams(m);
  auto c = Comms(m, "h100:8x1", Config("fsdp=8", 16));  // 2 microbatches
  EXPECT_EQ(c["all-gather/fsdp"].calls, 2 * 2 * 4);
  EXPECT_EQ(c["reduce-scatter/fsdp"].calls, 2 * 4);
  EXPECT_DOUBLE_EQ(c["all-gather/fsdp"].bytes, pc.total * 2 / 4);
  EXPECT_DOUBLE_EQ(c["reduce-scatter/fsdp"].bytes, pc.total * 2 / 4);
  // fp32 gradient reductions double the reduce-scatter's bytes.
  TrainingConfig fp32 = Config("fsdp=8", 16);
  fp32.precision.grad_reduce = hw::Dtype::kFp32;
  EXPECT_DOUBLE_EQ(Comms(m, "h100:8x1", fp32)["reduce-scatter/fsdp"].bytes,
                   pc.total * 4 / 4);
}

// Data parallel: one gradient all-reduce per step (ZeRO-0), or with the
// optimizer state sharded (ZeRO-1/2) a reduce-scatter of the gradients and
// an all-gather of the bf16 parameters. The bytes are the whole model's
// gradients (bf16) divided by tp.
TEST(CoreCollectives, DataParallelByZeroLevel) {
  const model::ModelSpec m = Small();
  const model::ParamCounts pc = model::CountParams(m);
  auto z0 = Comms(m, "h100:8x1", Config("dp=4,tp=2", 8));
  EXPECT_EQ(z0["all-reduce/dp"].calls, 1);
  EXPECT_DOUBLE_EQ(z0["all-reduce/dp"].bytes, pc.total * 2 / 2);
  auto z1 = Comms(m, "h100:8x1", Config("dp=4,tp=2,zero=1", 8));
  EXPECT_EQ(z1.count("all-reduce/dp"), 0u);
  EXPECT_EQ(z1["reduce-scatter/dp"].calls, 1);
  EXPECT_EQ(z1["all-gather/dp"].calls, 1);
  EXPECT_DOUBLE_EQ(z1["all-gather/dp"].bytes, pc.total * 2 / 2);
}

// Pipeline: each microbatch's activations forward and gradients backward,
// [pp x t, D] bf16 as the slot's V, 2 x m sends (x vpp interleaved).
TEST(CoreCollectives, PipelineSends) {
  auto c = Comms(Small(), "h100:8x1", Config("pp=2,dp=4", 16));
  EXPECT_EQ(c["permute/pp"].calls, 2 * 4);
  EXPECT_DOUBLE_EQ(c["permute/pp"].bytes, 2 * 1024.0 * 1024 * 2);
  TrainingConfig il = Config("pp=2,dp=4", 16);
  il.layout.schedule = Schedule::kInterleaved;
  il.layout.vpp = 2;
  EXPECT_EQ(Comms(Small(), "h100:8x1", il)["permute/pp"].calls, 2 * 4 * 2);
}

// The bubble: (pp - 1) / vpp stage times of the stages before the last,
// each with its microbatch's exposed tensor-parallel collectives (they run
// inside the chunk in the fill and drain as in the steady state). 4 stages
// of 1 layer over tp=2, 8 microbatches: 3 x (1 layer + TP exposed / 8).
TEST(CoreBubble, FillAndDrainCarryTheExposedTpCollectives) {
  const hw::System sys = System("h100:8x1");
  for (Schedule sched : {Schedule::k1F1B, Schedule::kInterleaved}) {
    TrainingConfig cfg = Config("pp=4,tp=2", 8);
    cfg.layout.schedule = sched;
    cfg.layout.vpp = sched == Schedule::kInterleaved ? 2 : 1;
    model::ModelSpec m = Small();
    m.num_layers = 8;
    auto e = EstimateTraining(m, sys, cfg);
    ASSERT_TRUE(e.has_value()) << e.error().ToString();
    double tp_exposed = 0;
    for (const CommItem& c : e->comms) {
      if (c.parallelism == "tp") tp_exposed += c.exposed.si();
    }
    ASSERT_GT(tp_exposed, 0);
    const double stage =
        e->per_layer.layers_per_stage * e->per_layer.total.si();
    const double idle = 3.0 / cfg.layout.vpp;
    EXPECT_NEAR(e->bubble.si(), idle * (stage + tp_exposed / 8),
                1e-9 * e->bubble.si());
  }
}

// The plan search's bound: no remat, schedule or last-stage split of a
// plan's degrees and micro batch is faster than m x (layers at remat none
// + heads) / pp, and at remat none without pipeline or communication the
// step is the bound plus the optimizer update.
TEST(CoreBubble, StepLowerBoundHoldsForEveryVariant) {
  const hw::System sys = System("h100:8x1");
  model::ModelSpec m = Small();
  m.num_layers = 8;
  for (const char* plan : {"dp=8", "pp=4,tp=2", "pp=2,dp=4"}) {
    for (model::Remat r : model::kAllRemats) {
      for (Schedule sched : {Schedule::k1F1B, Schedule::kInterleaved}) {
        TrainingConfig cfg = Config(plan, 16);
        cfg.memory.remat = r;
        if (cfg.par.pp > 1) {
          cfg.layout.schedule = sched;
          cfg.layout.vpp = sched == Schedule::kInterleaved ? 2 : 1;
        }
        auto e = EstimateTraining(m, sys, cfg);
        ASSERT_TRUE(e.has_value()) << e.error().ToString();
        const ModelConsts mc = PrepareModel(m, cfg);
        const LayerCompute lc =
            ComputeLayer(m, mc, sys.chip, RealisticEfficiency(sys.chip),
                         cfg.par.tp, cfg.par.ep, cfg.par.cp, cfg.seq, cfg);
        const double bound =
            StepLowerBound(mc, lc, cfg.par, cfg, e->microbatches);
        EXPECT_GT(bound, 0);
        EXPECT_LE(bound, e->step_time.si() * (1 + 1e-12)) << plan;
        if (cfg.par.pp == 1 && r == model::Remat::kNone) {
          EXPECT_NEAR(bound + e->exposed_comm.si() + e->other.si(),
                      e->step_time.si(), 1e-9 * e->step_time.si());
        }
      }
    }
  }
  TrainingConfig peak = Config("dp=8", 16);
  peak.mode = Mode::kPeak;
  const ModelConsts mc = PrepareModel(m, peak);
  EXPECT_EQ(StepLowerBound(mc, LayerCompute{}, peak.par, peak, 2), 0);
}

// The plan search's per-variant bound: at most the step on every placement
// of the degrees (no tolerance: the search compares it with step times),
// at least the micro batch's bound, and the compute itself without a
// pipeline.
TEST(CoreBubble, StepComputeBoundHoldsOnEveryPlacement) {
  const hw::System sys = System("h100:8x4");
  model::ModelSpec m = SmallMoe();
  m.num_layers = 8;
  for (Mode mode : {Mode::kRealistic, Mode::kPeak}) {
    for (const char* plan :
         {"dp=4,tp=8", "pp=4,tp=2,ep=4", "pp=2,cp=2,fsdp=8", "ep=8,dp=4"}) {
      for (model::Remat r : model::kAllRemats) {
        for (const std::vector<int>& order :
             {std::vector<int>{},
              std::vector<int>{kDp, kPp, kTp, kCp, kFsdp, kEp},
              std::vector<int>{kPp, kFsdp, kDp, kCp, kTp, kEp}}) {
          TrainingConfig cfg = Config(plan, 64);
          cfg.mode = mode;
          cfg.memory.remat = r;
          cfg.layout.placement_order = order;
          auto e = EstimateTraining(m, sys, cfg);
          ASSERT_TRUE(e.has_value()) << e.error().ToString();
          const ModelConsts mc = PrepareModel(m, cfg);
          const LayerCompute lc =
              ComputeLayer(m, mc, sys.chip, RealisticEfficiency(sys.chip),
                           cfg.par.tp, cfg.par.ep, cfg.par.cp,
                           cfg.layout.micro_batch * cfg.seq / cfg.par.cp, cfg);
          const double bound =
              StepComputeBound(mc, lc, cfg.par, cfg, sys.chip, e->microbatches);
          EXPECT_GT(bound, 0) << plan;
          EXPECT_LE(bound, e->step_time.si()) << plan << " " << order.size();
          if (mode == Mode::kRealistic) {
            EXPECT_GE(bound,
                      StepLowerBound(mc, lc, cfg.par, cfg, e->microbatches));
          }
          if (cfg.par.pp == 1) {
            EXPECT_NEAR(bound, e->compute.si(), 1e-12 * bound) << plan;
          }
        }
      }
    }
  }
  TrainingConfig fixed = Config("dp=8", 16);
  fixed.assume_mfu = 0.4;
  const ModelConsts mc = PrepareModel(m, fixed);
  EXPECT_EQ(StepComputeBound(mc, LayerCompute{}, fixed.par, fixed, sys.chip, 2),
            0);
}

// Context parallel by ring: (cp - 1) K/V passes per layer forward, and K/V
// and their gradients backward: 3 (cp - 1) per layer per microbatch. V is
// the K and V of the ring's chunks: cp x t x 2 K H x 2 B / tp.
TEST(CoreCollectives, ContextParallelRing) {
  auto c = Comms(Small(), "h100:8x1", Config("cp=2,dp=4", 4, 2048));
  const double t = 2048.0 / 2;
  EXPECT_EQ(c["permute/cp"].calls, 4 * 1 * 3 * 1);
  EXPECT_DOUBLE_EQ(c["permute/cp"].bytes, 2 * t * 2 * 16 * 64 * 2);
}

// Expert parallel: dispatch and combine per MoE layer forward and backward
// (4 all-to-alls), V = ep x t x top_k x D x 2 B.
TEST(CoreCollectives, ExpertParallelAllToAll) {
  auto c = Comms(SmallMoe(), "h100:8x1", Config("ep=8", 8));
  EXPECT_EQ(c["all-to-all/ep"].calls, 4 * 4 * 1);
  EXPECT_DOUBLE_EQ(c["all-to-all/ep"].bytes, 8 * 1024.0 * 2 * 1024 * 2);
}

// ---- Bytes per parameter.

TEST(CoreState, BytesPerParameterByMode) {
  const StateBytes r = TrainingStateBytes(Mode::kRealistic);
  // bf16 weights, fp32 gradients, fp32 master weights and Adam's two
  // moments (4 + 8): 2 + 4 + 12 = 18 B, and a 5% reserve.
  EXPECT_EQ(r.weights, 2);
  EXPECT_EQ(r.grads, 4);
  EXPECT_EQ(r.optimizer, 12);
  EXPECT_DOUBLE_EQ(r.reserve_fraction, 0.05);
  // The book: bf16 weights and fp32 moments, 10 B; nothing else.
  const StateBytes p = TrainingStateBytes(Mode::kPeak);
  EXPECT_EQ(p.weights + p.optimizer, 10);
  EXPECT_EQ(p.grads, 0);
  EXPECT_EQ(p.reserve_fraction, 0);
}

// 1e9 trained parameters on a stage, over 8 data-parallel ranks.
TEST(CoreState, ShardingByZeroLevelAndFsdp) {
  ParamShares sh;
  sh.stage = sh.trained = sh.stage_dense = sh.train_dense = 1e9;
  Parallelism dp8;
  dp8.dp = 8;
  StateMemory z0 = StatePerChip(sh, dp8, TrainingStateBytes(Mode::kRealistic),
                                false, false, false, 4);
  EXPECT_DOUBLE_EQ(z0.params, 2e9);
  EXPECT_DOUBLE_EQ(z0.grads, 4e9);
  EXPECT_DOUBLE_EQ(z0.optimizer, 12e9);
  dp8.zero = 1;  // optimizer state sharded
  StateMemory z1 = StatePerChip(sh, dp8, TrainingStateBytes(Mode::kRealistic),
                                false, false, false, 4);
  EXPECT_DOUBLE_EQ(z1.grads, 4e9);
  EXPECT_DOUBLE_EQ(z1.optimizer, 12e9 / 8);
  dp8.zero = 2;  // and gradients
  StateMemory z2 = StatePerChip(sh, dp8, TrainingStateBytes(Mode::kRealistic),
                                false, false, false, 4);
  EXPECT_DOUBLE_EQ(z2.params, 2e9);
  EXPECT_DOUBLE_EQ(z2.grads, 4e9 / 8);
  EXPECT_DOUBLE_EQ(z2.optimizer, 12e9 / 8);
  Parallelism fsdp8;
  fsdp8.fsdp = 8;  // ZeRO-3: everything
  StateMemory z3 = StatePerChip(sh, fsdp8, TrainingStateBytes(Mode::kRealistic),
                                false, false, false, 4);
  EXPECT_DOUBLE_EQ(z3.params, 2e9 / 8);
  EXPECT_DOUBLE_EQ(z3.grads, 4e9 / 8);
  EXPECT_DOUBLE_EQ(z3.optimizer, 12e9 / 8);
  // Optimizer offload: none on the device; parameter offload: two of the
  // stage's 4 layers' weights and one layer's gradients.
  EXPECT_EQ(StatePerChip(sh, fsdp8, TrainingStateBytes(Mode::kRealistic), false,
                         true, false, 4)
                .optimizer,
            0);
  StateMemory off = StatePerChip(
      sh, fsdp8, TrainingStateBytes(Mode::kRealistic), false, true, true, 4);
  EXPECT_DOUBLE_EQ(off.params, 2 * 1e9 * 2 / 4);
  EXPECT_DOUBLE_EQ(off.grads, 1e9 * 4 / 4);
}

// ---- Memory per chip by component.

// Small on 8 H100s, fsdp=8, 1 microbatch of one 1024-token sequence, no
// remat: weights, gradients and optimizer state are the model's 18 B per
// parameter / 8; activations are one microbatch's saved bytes per token
// per layer x 4 layers plus the bf16 logits (2 B x V per token); 5% of HBM
// is reserved.
TEST(CoreMemory, PerChipByComponent) {
  const model::ModelSpec m = Small();
  const model::ParamCounts pc = model::CountParams(m);
  TrainingConfig cfg = Config("fsdp=8", 8);
  const ModelConsts mc = PrepareModel(m, cfg);
  CoreResult r;
  MemoryPerChip(mc, cfg.par, cfg, System("h100:8x1").chip, 1, &r);
  EXPECT_DOUBLE_EQ(r.params, pc.total * 2 / 8);
  EXPECT_DOUBLE_EQ(r.grads, pc.total * 4 / 8);
  EXPECT_DOUBLE_EQ(r.optimizer, pc.total * 12 / 8);
  const double saved =
      model::Activations(m, model::Remat::kNone, 1024, hw::Dtype::kBf16,
                         model::AttentionFlops::kCausal)
          .bytes_per_token_per_layer;
  EXPECT_DOUBLE_EQ(r.activations, 1024 * 4 * saved + 1024.0 * 32768 * 2);
  EXPECT_DOUBLE_EQ(r.reserve, 0.05 * r.capacity);
  EXPECT_DOUBLE_EQ(r.total_mem, r.params + r.grads + r.optimizer +
                                    r.activations + r.reserve);
  // Megatron's unfused loss keeps an fp32 copy and the softmax: 8 B.
  cfg.habits.unfused_cross_entropy = true;
  MemoryPerChip(mc, cfg.par, cfg, System("h100:8x1").chip, 1, &r);
  EXPECT_DOUBLE_EQ(r.activations, 1024 * 4 * saved + 1024.0 * 32768 * 8);
  // MaxText's num_vocab_tiling: the logits in chunks, a sixteenth held.
  cfg.habits.unfused_cross_entropy = false;
  cfg.habits.vocab_tiling = 16;
  MemoryPerChip(mc, cfg.par, cfg, System("h100:8x1").chip, 1, &r);
  EXPECT_DOUBLE_EQ(r.activations, 1024 * 4 * saved + 1024.0 * 32768 * 2 / 16);
}

// Pipelines keep the microbatches in flight: min(m, pp) under 1F1B, all of
// them under GPipe.
TEST(CoreMemory, PipelineInFlight) {
  const model::ModelSpec m = Small();
  TrainingConfig cfg = Config("pp=2,dp=4", 32);  // 8 microbatches
  const ModelConsts mc = PrepareModel(m, cfg);
  const double one =
      ActivationsPerChip(mc, cfg.par, cfg, 8) - 1024.0 * 32768 * 2;  // logits
  cfg.layout.schedule = Schedule::kGpipe;
  const double gpipe =
      ActivationsPerChip(mc, cfg.par, cfg, 8) - 1024.0 * 32768 * 2;
  EXPECT_DOUBLE_EQ(gpipe / one, 8.0 / 2.0);
}

// The collective slot table lists every slot once, in order, each with a
// label and a placement.
TEST(CoreSlots, TableIsComplete) {
  for (int i = 0; i < kNumColl; ++i) {
    EXPECT_EQ(kCollSlots[i].slot, i);
    EXPECT_NE(std::string(kCollSlots[i].label), "");
  }
}

// The MoE token permutation (docs/model.md 5.2, 5.5c): 4·k·D bf16 elements
// per token per MoE layer forward at the streaming rate, divided by the
// chip's `gather` fraction when routing is dropless; token dropping
// dispatches with one-hot einsums, so its copies stream. Dense models and
// chips whose file gives no `gather` (1) are unchanged.
TEST(CoreElementwise, MoePermutationRunsAtTheGatherRate) {
  const hw::System sys = System("tpu-v5p:1x2x2");
  const model::ModelSpec m = SmallMoe();
  TrainingConfig cfg = Config("fsdp=4", 4);
  const ModelConsts mc = PrepareModel(m, cfg);
  const double t = cfg.seq;
  auto elem = [&](const ChipEfficiency& e, const TrainingConfig& c) {
    return ComputeLayer(m, mc, sys.chip, e, 1, 1, 1, t, c).elem_fwd;
  };
  ChipEfficiency streaming = RealisticEfficiency(sys.chip);
  streaming.gather = 1.0;
  ChipEfficiency slow = streaming;
  slow.gather = 0.25;
  const double hbm = sys.chip.hbm_bandwidth.si() * streaming.hbm;
  // 4 x top_k 2 x D 1024 elements of 2 B per token, 1024 tokens, every
  // layer MoE; at a quarter of the rate they cost 4x, i.e. 3x more.
  const double permute = 4.0 * 2 * 1024 * 2 * t / hbm;
  EXPECT_NEAR(elem(slow, cfg) - elem(streaming, cfg), 3 * permute,
              1e-9 * permute);
  TrainingConfig dropping = cfg;
  dropping.habits.capacity_factor = 1.25;
  EXPECT_DOUBLE_EQ(elem(slow, dropping), elem(streaming, dropping));
  const model::ModelSpec dense = Small();
  const ModelConsts dc = PrepareModel(dense, cfg);
  EXPECT_DOUBLE_EQ(
      ComputeLayer(dense, dc, sys.chip, slow, 1, 1, 1, t, cfg).elem_fwd,
      ComputeLayer(dense, dc, sys.chip, streaming, 1, 1, 1, t, cfg).elem_fwd);
  // The built-in TPUs carry the fitted rate; GPUs leave it at 1.
  EXPECT_LT(RealisticEfficiency(sys.chip).gather, 1.0);
  EXPECT_EQ(RealisticEfficiency(System("h100:8x1").chip).gather, 1.0);
}

}  // namespace
}  // namespace scalemodel::estimate
