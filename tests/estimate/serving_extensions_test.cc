// Speculative decoding, pipeline-parallel serving, DP attention and
// redundant experts (issue #15 item 4; docs/model.md 7.4-7.6): each
// mechanism pinned by itself.
#include <gtest/gtest.h>

#include <cmath>

#include "../testing/catalog.h"
#include "scalemodel/estimate/batching.h"
#include "scalemodel/estimate/inference.h"

namespace scalemodel::estimate {
namespace {

using scalemodel::testing::Model;
using scalemodel::testing::System;

ServeConfig Base(int tp, double batch) {
  ServeConfig c;
  c.tp = tp;
  c.batch = batch;
  c.prompt = 2048;
  c.output = 512;
  return c;
}

SpecDecode Spec(SpecDecode::Kind kind, int k, std::vector<double> accept) {
  SpecDecode s;
  s.kind = kind;
  s.k = k;
  s.accept = std::move(accept);
  return s;
}

TEST(SpecDecode, ExpectedTokensIsLeviathansFormula) {
  EXPECT_DOUBLE_EQ(SpecExpectedTokens(SpecDecode{}), 1);
  const double a = 0.7;
  EXPECT_NEAR(SpecExpectedTokens(Spec(SpecDecode::kEagle, 4, {a})),
              (1 - std::pow(a, 5)) / (1 - a), 1e-12);
  EXPECT_DOUBLE_EQ(SpecExpectedTokens(Spec(SpecDecode::kNgram, 3, {1.0})), 4);
  EXPECT_DOUBLE_EQ(SpecExpectedTokens(Spec(SpecDecode::kNgram, 3, {0.0})), 1);
  // Per position: 1 + a1 + a1 a2 + a1 a2 a3.
  EXPECT_NEAR(SpecExpectedTokens(Spec(SpecDecode::kMtp, 3, {0.9, 0.8, 0.5})),
              1 + 0.9 + 0.72 + 0.36, 1e-12);
}

// The verify step puts k + 1 queries per sequence through the GEMMs (the
// same matmul time as k + 1 times the sequences decoding one token), reads
// each sequence's KV once, and time per output token is the step over the
// expected tokens. n-gram drafting costs no device time.
TEST(SpecDecode, VerifyStepIsAPassOverKPlusOneTokens) {
  const model::ModelSpec m = Model("llama3-70b");
  const hw::System sys = System("h100:8x1");
  ServeConfig base = Base(8, 16);
  ServeConfig spec = base;
  spec.spec = Spec(SpecDecode::kNgram, 3, {0.6});
  auto b = StepCostModel::Create(m, sys, base);
  auto s = StepCostModel::Create(m, sys, spec);
  ASSERT_TRUE(b && s);
  const double ctx = 16 * (2048 + 256);
  StepParts ps = s->Cost({16, ctx, 0, 0});
  StepParts pb = b->Cost({64, ctx, 0, 0});
  EXPECT_DOUBLE_EQ(ps.matmul.si(), pb.matmul.si());
  EXPECT_DOUBLE_EQ(ps.communication.si(), pb.communication.si());
  EXPECT_DOUBLE_EQ(ps.attention.si(), b->Cost({16, ctx, 0, 0}).attention.si());
  EXPECT_EQ(ps.draft.si(), 0);
  EXPECT_DOUBLE_EQ(s->MatmulTokens({16, ctx, 0, 0}), 64);
  auto e = EstimateServing(m, sys, spec);
  ASSERT_TRUE(e);
  const double E = SpecExpectedTokens(spec.spec);
  EXPECT_DOUBLE_EQ(e->spec_tokens_per_step, E);
  EXPECT_NEAR(e->decode_step.si() * E / e->spec_step.si(), 1, 1e-12);
  EXPECT_NEAR(e->decode_parts.total().si(), e->decode_step.si(), 1e-15);
}

// A draft model costs k of its own decode steps (same chips, the target's
// tp); an EAGLE head k passes of one average layer plus the output layer;
// both add their weights and KV to memory.
TEST(SpecDecode, DraftCostsAndMemory) {
  const model::ModelSpec m = Model("llama3-70b");
  const model::ModelSpec d = Model("llama3-8b");
  const hw::System sys = System("h100:8x1");
  ServeConfig cfg = Base(8, 16);
  cfg.spec = Spec(SpecDecode::kDraft, 3, {0.7});
  cfg.spec.draft = std::make_shared<const model::ModelSpec>(d);
  auto s = StepCostModel::Create(m, sys, cfg);
  auto draft = StepCostModel::Create(d, sys, Base(8, 16));
  auto base = StepCostModel::Create(m, sys, Base(8, 16));
  ASSERT_TRUE(s && draft && base);
  const StepWork w{16, 16 * 2304.0, 0, 0};
  EXPECT_NEAR(s->Cost(w).draft.si(), 3 * draft->Cost(w).total().si(), 1e-15);
  EXPECT_NEAR(s->WeightsBytesPerChip() - base->WeightsBytesPerChip(),
              draft->WeightsBytesPerChip(), 1);
  EXPECT_NEAR(s->KvBytesPerTokenPerChip() - base->KvBytesPerTokenPerChip(),
              draft->KvBytesPerTokenPerChip(), 1e-9);

  ServeConfig eagle = Base(8, 16);
  eagle.spec = Spec(SpecDecode::kEagle, 3, {0.7});
  auto h = StepCostModel::Create(m, sys, eagle);
  ASSERT_TRUE(h);
  const double per_pass = h->Cost(w).draft.si() / 3;
  const double step = base->Cost(w).total().si();
  EXPECT_GT(per_pass, step / m.num_layers);
  EXPECT_LT(per_pass, 4 * step / m.num_layers);
  EXPECT_NEAR(h->WeightsBytesPerChip() - base->WeightsBytesPerChip(),
              model::CountParams(m).total / m.num_layers * 2 / 8, 1);
}

// The simulator's verify steps yield 1 + the accepted drafts, position i
// accepted with probability a: with everyone arriving at once its TPOT is
// the static answer's (the step over the expected tokens) up to sampling.
TEST(SpecDecode, SimulatorAcceptsTheExpectedTokens) {
  const model::ModelSpec m = Model("llama3-8b");
  const hw::System sys = System("h100:1x1");
  ServeConfig cfg = Base(1, 8);
  cfg.prompt = 512;
  cfg.output = 2000;
  cfg.spec = Spec(SpecDecode::kEagle, 3, {0.6});
  auto st = EstimateServing(m, sys, cfg);
  auto sc = StepCostModel::Create(m, sys, cfg);
  ASSERT_TRUE(st && sc);
  Workload w;
  w.arrivals = Workload::kTrace;
  for (int i = 0; i < 8; ++i) w.trace.push_back({0, 512, 2000});
  SchedulerOptions s;
  s.max_num_seqs = 8;
  s.max_batched_tokens = 8 * 512;
  auto r = SimulateServing(*sc, 1, w, s, Slo{});
  ASSERT_TRUE(r && r->feasible);
  EXPECT_NEAR(r->tpot_s.mean / st->decode_step.si(), 1, 0.05);
  // Without acceptance the same steps yield one token each: slower.
  cfg.spec.accept = {0.0};
  auto none = StepCostModel::Create(m, sys, cfg);
  auto r0 = SimulateServing(*none, 1, w, s, Slo{});
  ASSERT_TRUE(r0);
  EXPECT_GT(r0->tpot_s.mean, 1.8 * r->tpot_s.mean);
}

// pp stages: weights and KV per chip divide by pp; a microbatch's step is
// the whole model's pass on tp chips plus pp - 1 transfers; pp
// microbatches in flight give each sequence the token rate of a replica.
TEST(PipelineServing, StagesDivideMemoryAndAddTransfers) {
  const model::ModelSpec m = Model("llama3-70b");
  ServeConfig one = Base(8, 32);
  ServeConfig pp = Base(8, 64);
  pp.pp = 2;
  auto a = EstimateServing(m, System("h100:8x1"), one);
  auto b = EstimateServing(m, System("h100:8x2"), pp);
  ASSERT_TRUE(a && b);
  EXPECT_NEAR(b->weights_bytes.si() / a->weights_bytes.si(), 0.5, 1e-12);
  EXPECT_NEAR(b->kv_cache_bytes.si() / a->kv_cache_bytes.si(), 1, 1e-12);
  const double transfer = b->decode_step.si() - a->decode_step.si();
  EXPECT_GT(transfer, 0);
  EXPECT_LT(transfer, 0.05 * a->decode_step.si());
  // Decode: each sequence's token rate is a replica's; prefill: pp
  // microbatches fill the pipeline, (2 pp - 1) / pp of one's pass.
  EXPECT_NEAR(b->tokens_per_s_per_user / a->tokens_per_s_per_user, 1, 0.02);
  EXPECT_NEAR(b->prefill_time.si() / a->prefill_time.si(), 1.5, 0.02);
  ServeConfig bad = pp;
  bad.batch = 1;
  EXPECT_FALSE(EstimateServing(m, System("h100:8x2"), bad));
  // More stages than layers: llama3-8b has 32.
  bad = Base(1, 200);
  bad.pp = 64;
  EXPECT_FALSE(EstimateServing(Model("llama3-8b"), System("h100:8x8"), bad));
}

// The simulator's pp virtual engines: equal requests all arriving at once
// decode at the static answer's time per output token (each engine holds
// B / pp of them, as each microbatch does).
TEST(PipelineServing, SimulatorMatchesTheStaticStep) {
  const model::ModelSpec m = Model("llama3-70b");
  const hw::System sys = System("h100:8x2");
  ServeConfig cfg = Base(8, 16);
  cfg.pp = 2;
  cfg.prompt = 1024;
  cfg.output = 64;
  auto st = EstimateServing(m, sys, cfg);
  auto sc = StepCostModel::Create(m, sys, cfg);
  ASSERT_TRUE(st && sc);
  EXPECT_EQ(sc->pipeline_stages(), 2);
  EXPECT_EQ(sc->chips_per_replica(), 16);
  Workload w;
  w.arrivals = Workload::kTrace;
  for (int i = 0; i < 16; ++i) w.trace.push_back({0, 1024, 64});
  SchedulerOptions s;
  s.max_num_seqs = 8;
  s.max_batched_tokens = 8 * 1024;
  auto r = SimulateServing(*sc, 1, w, s, Slo{});
  ASSERT_TRUE(r && r->feasible);
  EXPECT_NEAR(r->tpot_s.p50 / st->decode_step.si(), 1, 1e-9);
  EXPECT_NEAR(r->output_tokens_per_s_per_chip * 16,
              r->throughput_output_tokens_per_s, 1e-6);
}

// TensorRT-LLM's measured routed-load imbalance (DeepSeek-R1): 1.564 over
// the mean without redundant experts, 0.115 with 32 over 256.
TEST(ExpertParallel, ImbalanceFromTheMeasuredPoints) {
  EXPECT_DOUBLE_EQ(ExpertImbalance(1, 256, 0), 1);
  EXPECT_NEAR(ExpertImbalance(144, 256, 0), 2.564, 1e-12);
  EXPECT_NEAR(ExpertImbalance(144, 256, 32), 1.115, 1e-12);
  EXPECT_NEAR(ExpertImbalance(144, 256, 16), 1 + (1.564 + 0.115) / 2, 1e-12);
  EXPECT_NEAR(ExpertImbalance(144, 256, 64), 1.115, 1e-12);
}

// MLA under tensor parallelism: q_a and kv_a (with the rope key) are whole
// on every rank (SGLang's ReplicatedLinear, vLLM's disable_tp=True), the
// rest split over tp; a GQA model splits all its weights.
TEST(TensorParallel, MlaDownProjectionsAreWholeOnEveryRank) {
  const model::ModelSpec m = Model("deepseek-v3");
  ServeConfig cfg = Base(8, 16);
  cfg.weights = hw::Dtype::kFp8;
  auto e = EstimateServing(m, System("h200:8x1"), cfg);
  ASSERT_TRUE(e) << e.error().ToString();
  const model::ParamCounts pc = model::CountParams(m);
  const double rep = 61.0 * 7168 * (1536 + 512 + 64);
  EXPECT_NEAR(e->weights_bytes.si(), (pc.total - rep) / 8 + rep, 1);
  const model::ModelSpec l = Model("llama3-70b");
  auto g = EstimateServing(l, System("h100:8x1"), Base(8, 16));
  ASSERT_TRUE(g);
  EXPECT_NEAR(g->weights_bytes.si(), model::CountParams(l).total * 2 / 8, 1);
}

// Plain ep (no DP attention) is the engines' "EP 8": attention and the
// dense layers over all 8 chips with the all-reduces of tp=8, no expert
// all-to-all; MLA's one latent KV head is copied on every chip, and split
// over the DP ranks with DP attention.
TEST(ExpertParallel, PlainEpSplitsAttentionOverTheReplica) {
  const model::ModelSpec m = Model("deepseek-v3");
  const hw::System sys = System("h200:8x1");
  ServeConfig tp8 = Base(8, 64);
  tp8.weights = tp8.kv = hw::Dtype::kFp8;
  ServeConfig ep8 = tp8;
  ep8.tp = 1;
  ep8.ep = 8;
  auto t = EstimateServing(m, sys, tp8);
  auto e = EstimateServing(m, sys, ep8);
  ASSERT_TRUE(t && e);
  EXPECT_DOUBLE_EQ(e->decode_parts.communication.si(),
                   t->decode_parts.communication.si());
  EXPECT_DOUBLE_EQ(e->weights_bytes.si(), t->weights_bytes.si());
  const double kv = model::KvCacheBytes(m, 64 * (2048 + 512), hw::Dtype::kFp8);
  EXPECT_NEAR(e->kv_cache_bytes.si(), kv, 1e-6 * kv);
  ServeConfig dpa = ep8;
  dpa.dp_attention = true;
  auto d = EstimateServing(m, sys, dpa);
  ASSERT_TRUE(d);
  EXPECT_NEAR(d->kv_cache_bytes.si(), kv / 8, 1e-6 * kv);
  // GQA: Qwen3-235B's 4 KV heads over 8 chips, two copies of each.
  const model::ModelSpec q = Model("qwen3-235b-a22b");
  auto g = EstimateServing(q, sys, ep8);
  ASSERT_TRUE(g);
  const double kvq = model::KvCacheBytes(q, 64 * (2048 + 512), hw::Dtype::kFp8);
  EXPECT_NEAR(g->kv_cache_bytes.si(), kvq / 4, 1e-6 * kvq);
}

// DeepSeek's decode layout: EP 144 over 256 routed + 32 redundant experts,
// attention and shared experts DP over the 144 GPUs. Each GPU holds 2
// routed experts per layer, all the dense weights, and 1/144 of the
// sequences; redundant experts cut the compute-bound prefill.
TEST(ExpertParallel, DeepSeekDecodeLayoutIsExpressible) {
  const model::ModelSpec m = Model("deepseek-v3");
  const hw::System sys = System("h800:8x18");
  ServeConfig cfg = Base(1, 144 * 32);
  cfg.ep = 144;
  cfg.dp_attention = true;
  cfg.redundant_experts = 32;
  cfg.weights = hw::Dtype::kFp8;
  cfg.kv = hw::Dtype::kFp8;
  auto e = EstimateServing(m, sys, cfg);
  ASSERT_TRUE(e) << e.error().ToString();
  EXPECT_TRUE(e->feasible);
  const model::ParamCounts pc = model::CountParams(m);
  EXPECT_NEAR(e->weights_bytes.si(),
              (pc.total - pc.experts) + pc.experts * 288 / 256 / 144, 1);
  EXPECT_NEAR(e->expert_imbalance, 1.115, 1e-12);
  ServeConfig unbalanced = cfg;
  unbalanced.redundant_experts = 0;
  unbalanced.ep = 128;  // 256 experts need ep | 256 without copies
  auto u = EstimateServing(m, System("h800:8x16"), unbalanced);
  ASSERT_TRUE(u);
  EXPECT_NEAR(u->expert_imbalance, 2.564, 1e-12);
  // Without the wide-EP options a plain ep plan keeps balanced routing.
  ServeConfig plain = Base(1, 64);
  plain.ep = 8;
  auto p = EstimateServing(m, System("h200:8x1"), plain);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->expert_imbalance, 1);
  // 144 does not divide 256 alone.
  ServeConfig nocopies = cfg;
  nocopies.redundant_experts = 0;
  EXPECT_FALSE(EstimateServing(m, sys, nocopies));
}

// DP attention: each rank's attention GEMMs see 1/ep of the tokens and
// stream the dense weights it holds whole (tp = 1).
TEST(ExpertParallel, DpAttentionSplitsTheDenseRows) {
  const model::ModelSpec m = Model("qwen3-30b-a3b");
  const hw::System sys = System("h100:8x1");
  ServeConfig cfg = Base(1, 256);
  cfg.ep = 8;
  ServeConfig dpa = cfg;
  dpa.dp_attention = true;
  auto a = StepCostModel::Create(m, sys, cfg);
  auto b = StepCostModel::Create(m, sys, dpa);
  ASSERT_TRUE(a && b);
  const model::ParamCounts pc = model::CountParams(m);
  EXPECT_NEAR(b->WeightsBytesPerChip(),
              ((pc.total - pc.experts) + pc.experts / 8) * 2, 1);
  EXPECT_LT(a->WeightsBytesPerChip(), b->WeightsBytesPerChip());
  // DP attention splits the KV cache over the 8 ranks' sequences; plain ep
  // splits it over Qwen3-30B-A3B's 4 KV heads, two copies of each.
  EXPECT_DOUBLE_EQ(a->KvBytesPerTokenPerChip(),
                   2 * b->KvBytesPerTokenPerChip());
}

// Quantized experts alone (gpt-oss's MXFP4, Kimi K2 Thinking's INT4): the
// routed experts' weights take their own bytes, the rest keeps --weights';
// unset, the experts take --weights'.
TEST(ExpertWeights, OnlyTheRoutedExpertsChangeDtype) {
  const model::ModelSpec m = Model("qwen3-30b-a3b");
  const hw::System sys = System("h200:1x1");
  ServeConfig bf16 = Base(1, 8);
  ServeConfig same = bf16;
  same.expert_weights = hw::Dtype::kBf16;
  ServeConfig mixed = bf16;
  mixed.expert_weights = hw::Dtype::kFp4;
  ServeConfig fp4 = bf16;
  fp4.weights = hw::Dtype::kFp4;
  auto b = StepCostModel::Create(m, sys, bf16);
  auto s = StepCostModel::Create(m, sys, same);
  auto x = StepCostModel::Create(m, sys, mixed);
  auto f = StepCostModel::Create(m, sys, fp4);
  ASSERT_TRUE(b && s && x && f);
  const model::ParamCounts pc = model::CountParams(m);
  EXPECT_DOUBLE_EQ(s->WeightsBytesPerChip(), b->WeightsBytesPerChip());
  EXPECT_NEAR(x->WeightsBytesPerChip(),
              (pc.total - pc.experts) * 2 + pc.experts * 0.5, 1);
  EXPECT_NEAR(f->WeightsBytesPerChip(), pc.total * 0.5, 1);
  // A decode step streams the dense weights at 2 bytes and the touched
  // experts at half a byte: between all-bf16 and all-fp4.
  for (Mode mode : {Mode::kPeak, Mode::kRealistic}) {
    ServeConfig cb = bf16, cx = mixed, cf = fp4;
    cb.mode = cx.mode = cf.mode = mode;
    auto eb = EstimateServing(m, sys, cb);
    auto ex = EstimateServing(m, sys, cx);
    auto ef = EstimateServing(m, sys, cf);
    ASSERT_TRUE(eb && ex && ef);
    EXPECT_LT(ex->decode_step.si(), eb->decode_step.si());
    EXPECT_GT(ex->decode_step.si(), ef->decode_step.si());
  }
  // A dense model has no experts to give a dtype: one sentence.
  ServeConfig dense = Base(1, 8);
  dense.expert_weights = hw::Dtype::kFp4;
  auto e = EstimateServing(Model("llama3-8b"), sys, dense);
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("dense"), std::string::npos);
}

// A q/k norm over all heads (MiniMax-M2's per_layer QK norm) all-reduces
// the q and k variances once per layer under tensor parallelism: decode
// communication grows by L small all-reduces; without TP nothing changes.
TEST(TensorParallel, QkNormOverAllHeadsAddsOneAllReducePerLayer) {
  model::ModelSpec m = Model("qwen3-30b-a3b");
  model::ModelSpec all = m;
  all.qk_norm_all_heads = true;
  for (int tp : {1, 4}) {
    const hw::System sys = System(tp == 1 ? "h200:1x1" : "h200:4x1");
    ServeConfig cfg = Base(tp, 8);
    auto a = EstimateServing(m, sys, cfg);
    auto b = EstimateServing(all, sys, cfg);
    ASSERT_TRUE(a && b);
    if (tp == 1) {
      EXPECT_EQ(b->decode_step.si(), a->decode_step.si());
    } else {
      const double extra =
          (b->decode_parts.communication - a->decode_parts.communication).si();
      EXPECT_GT(extra, 0);
      // L all-reduces of a few bytes each: latency-bound, a few us apiece.
      EXPECT_LT(extra, m.num_layers * 50e-6);
    }
  }
}

}  // namespace
}  // namespace scalemodel::estimate
