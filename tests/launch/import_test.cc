// Launch-line import: --emit ENGINE then --from ENGINE gives back the plan
// (round trips per engine, the cases of tests/golden/emit_*), and lines as
// users write them.
#include "scalemodel/launch/import.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "../testing/catalog.h"
#include "scalemodel/base/strings.h"

namespace scalemodel::launch {
namespace {

using scalemodel::testing::BuiltinCatalog;

struct TrainCase {
  std::string engine, model, system, plan;
  double sequences, seq;
  std::function<void(estimate::TrainingConfig&)> extra;
};

estimate::TrainingConfig ConfigOf(const TrainCase& t) {
  estimate::TrainingConfig c;
  auto engine = ParseTrainEngine(t.engine);
  estimate::ApplyEnginePreset(PresetOf(*engine), c);
  EXPECT_TRUE(estimate::ParsePlanKey(t.plan, &c)) << t.plan;
  c.batch_tokens = t.sequences * t.seq;
  c.seq = t.seq;
  if (t.extra) t.extra(c);
  return c;
}

std::string JoinOf(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += x + " ";
  return s;
}

// Emits the plan, imports the line, and compares plan and estimate.
void RoundTrip(const TrainCase& t) {
  SCOPED_TRACE(t.engine + " " + t.model + " " + t.system + " " + t.plan);
  const catalog::Catalog& cat = BuiltinCatalog();
  auto m = ingest::FindModel(cat, t.model);
  auto sys = cat.FindSystem(t.system);
  ASSERT_TRUE(m && sys);
  const estimate::TrainingConfig cfg = ConfigOf(t);
  auto est = estimate::EstimateTraining(m->spec, *sys, cfg);
  ASSERT_TRUE(est) << est.error().ToString();
  auto line = EmitTrainingChecked(t.engine, *m, *sys, cfg, *est);
  ASSERT_TRUE(line && line->launchable()) << (line ? line->Reason() : "");
  auto engine = ParseTrainEngine(t.engine);
  auto back = ImportTraining(*engine, {line->text}, cat, *sys, "");
  ASSERT_TRUE(back) << back.error().ToString() << "\n" << line->text;
  EXPECT_EQ(back->model.spec.id, t.model);
  EXPECT_EQ(PlanKeyOf(back->config), PlanKeyOf(cfg)) << line->text;
  EXPECT_EQ(back->config.batch_tokens, cfg.batch_tokens);
  EXPECT_EQ(back->config.seq, cfg.seq);
  auto again = estimate::EstimateTraining(back->model.spec, *sys, back->config);
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_DOUBLE_EQ(again->step_time.si(), est->step_time.si()) << line->text;
  EXPECT_DOUBLE_EQ(again->memory.total.si(), est->memory.total.si());
  EXPECT_TRUE(back->ignored.empty()) << JoinOf(back->ignored);
}

TEST(ImportTest, MegatronRoundTrips) {
  const std::vector<TrainCase> cases = {
      {"megatron", "llama3-70b", "h100:8x64",
       "dp=16,tp=8,pp=4,zero=1 mb=1 "
       "remat=selective",
       1024, 4096, nullptr},
      {"megatron", "llama3-405b", "h100:8x64",
       "dp=8,tp=8,pp=8,zero=1 mb=1 "
       "remat=full interleaved vpp=2",
       1024, 8192,
       [](auto& c) {
         c.precision.matmul = hw::Dtype::kFp8;
         c.precision.fp8_recipe = estimate::Fp8Recipe::kTensorwise;
         c.habits.tp_comm_overlap = true;
       }},
      {"megatron", "llama3-70b", "h100:8x8",
       "dp=2,tp=8,cp=4,zero=1 mb=1 "
       "remat=full offload",
       256, 32768,
       [](auto& c) { c.habits.cp_comm = estimate::CpComm::kAllGather; }},
      {"megatron", "deepseek-v3", "b200:8x32",
       "pp=8,ep=32,zero=1 mb=1 "
       "remat=selective interleaved vpp=2",
       4096, 4096,
       [](auto& c) {
         c.precision.matmul = hw::Dtype::kFp8;
         c.precision.fp8_recipe = estimate::Fp8Recipe::kMxfp8;
         c.habits.ep_dedup = true;
         c.habits.ep_overlap = true;
       }},
      {"megatron", "mixtral-8x7b", "h100:8x8",
       "dp=2,tp=2,pp=2,ep=4,cp=2,"
       "zero=1 mb=1 remat=save-matmul-outputs",
       512, 4096,
       [](auto& c) { c.habits.cp_comm = estimate::CpComm::kAllToAll; }},
      {"megatron", "qwen3-30b-a3b", "h100:8x4",
       "dp=2,pp=4,ep=4,zero=1 mb=1 "
       "remat=none last=9",
       256, 4096, nullptr},
      {"megatron", "llama3-8b", "h100:8x4", "dp=32 mb=2 remat=none", 256, 8192,
       [](auto& c) {
         c.precision.grad_reduce = hw::Dtype::kBf16;
         c.habits.unfused_cross_entropy = false;
       }},
  };
  for (const TrainCase& t : cases) RoundTrip(t);
}

TEST(ImportTest, MaxTextRoundTrips) {
  const std::vector<TrainCase> cases = {
      {"maxtext", "llama3-405b", "tpu-v5p:8x16x16",
       "fsdp=128,tp=4,pp=4 "
       "mb=4 remat=full interleaved vpp=2",
       2048, 8192, [](auto& c) { c.precision.matmul = hw::Dtype::kFp8; }},
      {"maxtext", "llama3-70b", "h100:8x8", "fsdp=64 mb=8 remat=full", 512,
       8192, nullptr},
      {"maxtext", "llama3-8b", "tpu-v6e:16x16",
       "fsdp=64,pp=4 mb=1 "
       "remat=save-matmul-outputs interleaved vpp=2",
       512, 8192, nullptr},
      {"maxtext", "mixtral-8x7b", "tpu-v6e:16x16",
       "fsdp=32,ep=8 mb=2 "
       "remat=full",
       512, 4096, nullptr},
      {"maxtext", "llama3-70b", "tpu-v5p:4x4x8",
       "fsdp=32,tp=4 mb=4 "
       "remat=save-dot-except-mlp-in",
       512, 4096, nullptr},
  };
  for (const TrainCase& t : cases) RoundTrip(t);
}

TEST(ImportTest, TorchtitanRoundTrips) {
  const std::vector<TrainCase> cases = {
      {"torchtitan", "llama3-405b", "h100:8x64",
       "fsdp=8,tp=8,pp=8 mb=1 "
       "remat=full interleaved vpp=2",
       1024, 8192,
       [](auto& c) {
         c.precision.matmul = hw::Dtype::kFp8;
         c.habits.tp_comm_overlap = true;
       }},
      {"torchtitan", "llama3-405b", "h100:8x64",
       "fsdp=8,tp=8,pp=8 mb=1 "
       "remat=full interleaved vpp=4",
       1024, 8192, nullptr},
      {"torchtitan", "llama3-70b", "h100:8x8", "fsdp=16,cp=4 mb=4 remat=full",
       64, 32768, nullptr},
      {"torchtitan", "qwen3-235b-a22b", "h100:8x16",
       "fsdp=4,ep=8,pp=4 mb=1 "
       "remat=save-matmul-outputs",
       512, 4096, nullptr},
      {"torchtitan@main", "llama3-405b", "h100:8x64",
       "fsdp=8,tp=8,pp=8 mb=1 "
       "remat=full interleaved vpp=2",
       1024, 8192, [](auto& c) { c.habits.tp_comm_overlap = true; }},
      {"torchtitan@main", "deepseek-v3", "b200:8x32",
       "fsdp=256 mb=1 "
       "remat=full",
       4096, 4096,
       [](auto& c) {
         c.precision.matmul = hw::Dtype::kFp8;
         c.mtp_layers = 0;
       }},
  };
  for (const TrainCase& t : cases) RoundTrip(t);
}

struct ServeCase {
  std::string engine, model, system;
  int tp, ep, dp;
  double batch, prompt, output;
  hw::Dtype weights, kv;
};

void RoundTrip(const ServeCase& t) {
  SCOPED_TRACE(t.engine + " " + t.model + " " + t.system);
  const catalog::Catalog& cat = BuiltinCatalog();
  auto m = ingest::FindModel(cat, t.model);
  auto sys = cat.FindSystem(t.system);
  ASSERT_TRUE(m && sys);
  estimate::ServeConfig cfg;
  cfg.tp = t.tp;
  cfg.ep = t.ep;
  cfg.dp = t.dp;
  cfg.batch = t.batch;
  cfg.prompt = t.prompt;
  cfg.output = t.output;
  cfg.weights = t.weights;
  cfg.kv = t.kv;
  auto est = estimate::EstimateServing(m->spec, *sys, cfg);
  ASSERT_TRUE(est) << est.error().ToString();
  auto line = EmitServingChecked(t.engine, *m, *sys, cfg, *est);
  ASSERT_TRUE(line && line->launchable()) << (line ? line->Reason() : "");
  auto back =
      ImportServing(*ParseServeEngine(t.engine), {line->text}, cat, *sys, "");
  ASSERT_TRUE(back) << back.error().ToString() << "\n" << line->text;
  EXPECT_EQ(back->model.spec.id, t.model);
  estimate::ServeConfig c = back->config;
  EXPECT_EQ(c.tp, cfg.tp);
  EXPECT_EQ(c.ep, cfg.ep);
  EXPECT_EQ(c.dp, cfg.dp);
  EXPECT_EQ(c.batch, cfg.batch);
  EXPECT_EQ(c.weights, cfg.weights);
  EXPECT_EQ(c.kv, cfg.kv);
  EXPECT_EQ(back->max_model_len, static_cast<long>(t.prompt + t.output));
  c.prompt = t.prompt;
  c.output = t.output;
  auto again = estimate::EstimateServing(back->model.spec, *sys, c);
  ASSERT_TRUE(again);
  EXPECT_DOUBLE_EQ(again->decode_step.si(), est->decode_step.si());
  EXPECT_DOUBLE_EQ(again->ttft.si(), est->ttft.si());
  EXPECT_TRUE(back->ignored.empty()) << line->text;
}

TEST(ImportTest, ServingRoundTrips) {
  using hw::Dtype;
  const std::vector<ServeCase> cases = {
      {"vllm", "llama3-70b", "h100:8x1", 8, 1, 1, 64, 1024, 256, Dtype::kBf16,
       Dtype::kBf16},
      {"vllm", "mixtral-8x7b", "h100:8x1", 2, 1, 4, 32, 1024, 256, Dtype::kFp8,
       Dtype::kBf16},
      {"vllm", "deepseek-v3", "h200:8x2", 1, 16, 1, 256, 2048, 512, Dtype::kFp8,
       Dtype::kFp8},
      {"vllm", "qwen3-235b-a22b", "h100:8x2", 1, 16, 1, 128, 2048, 512,
       Dtype::kFp8, Dtype::kFp8},
      {"vllm", "llama3-8b", "tpu-v6e:2x4", 8, 1, 1, 32, 1024, 256, Dtype::kBf16,
       Dtype::kBf16},
      {"sglang", "llama3-8b", "h100:8x1", 1, 1, 8, 16, 1024, 256, Dtype::kBf16,
       Dtype::kBf16},
      {"sglang", "deepseek-v3", "h200:8x2", 1, 16, 1, 256, 2048, 512,
       Dtype::kFp8, Dtype::kFp8},
      {"sglang", "llama3-70b", "h100:8x1", 8, 1, 1, 64, 1024, 256, Dtype::kBf16,
       Dtype::kBf16},
      {"sglang", "qwen3-235b-a22b", "h100:8x2", 2, 8, 1, 128, 2048, 512,
       Dtype::kFp8, Dtype::kFp8},
      // TensorRT-LLM takes the weight format from the checkpoint: the
      // checkpoints' own dtypes.
      {"trtllm", "llama3-70b", "h100:8x1", 8, 1, 1, 64, 1024, 256, Dtype::kBf16,
       Dtype::kBf16},
      {"trtllm", "llama3-8b", "h100:8x1", 1, 1, 8, 16, 1024, 256, Dtype::kBf16,
       Dtype::kFp8},
      {"trtllm", "deepseek-v3", "h200:8x2", 1, 16, 1, 256, 2048, 512,
       Dtype::kFp8, Dtype::kFp8},
      {"trtllm", "qwen3-235b-a22b", "h100:8x2", 2, 8, 1, 128, 2048, 512,
       Dtype::kBf16, Dtype::kFp8},
  };
  for (const ServeCase& t : cases) RoundTrip(t);
}

// The serving extensions (speculation, pipeline stages, DP attention,
// redundant experts) survive --emit then --from with the same estimate.
struct ServeExtCase {
  std::string engine, model, system;
  int tp, ep, pp, dp;
  bool dp_attention;
  int redundant;
  estimate::SpecDecode::Kind spec;
  int k;
  std::string draft;  // kDraft: catalog id
};

void RoundTripExtensions(const ServeExtCase& t) {
  SCOPED_TRACE(t.engine + " " + t.model + " " + t.system);
  const catalog::Catalog& cat = BuiltinCatalog();
  auto m = ingest::FindModel(cat, t.model);
  auto sys = cat.FindSystem(t.system);
  ASSERT_TRUE(m && sys);
  estimate::ServeConfig cfg;
  cfg.tp = t.tp;
  cfg.ep = t.ep;
  cfg.pp = t.pp;
  cfg.dp = t.dp;
  cfg.dp_attention = t.dp_attention;
  cfg.redundant_experts = t.redundant;
  cfg.batch = 64;
  // TensorRT-LLM reads the weight format from the checkpoint.
  cfg.weights = t.engine == "trtllm" ? m->spec.weight_dtype : hw::Dtype::kFp8;
  cfg.spec.kind = t.spec;
  cfg.spec.k = t.k;
  cfg.spec.accept = {0.7};
  if (!t.draft.empty()) {
    auto d = ingest::FindModel(cat, t.draft);
    ASSERT_TRUE(d);
    cfg.spec.draft = std::make_shared<const model::ModelSpec>(d->spec);
    cfg.spec.draft_repo = d->engine_names.hf_repo;
  }
  auto est = estimate::EstimateServing(m->spec, *sys, cfg);
  ASSERT_TRUE(est) << est.error().ToString();
  auto line = EmitServingChecked(t.engine, *m, *sys, cfg, *est);
  ASSERT_TRUE(line && line->launchable()) << (line ? line->Reason() : "");
  auto back =
      ImportServing(*ParseServeEngine(t.engine), {line->text}, cat, *sys, "");
  ASSERT_TRUE(back) << back.error().ToString() << "\n" << line->text;
  estimate::ServeConfig c = back->config;
  EXPECT_EQ(c.tp, cfg.tp);
  EXPECT_EQ(c.ep, cfg.ep);
  EXPECT_EQ(c.pp, cfg.pp);
  EXPECT_EQ(c.dp, cfg.dp);
  EXPECT_EQ(c.dp_attention, cfg.dp_attention);
  EXPECT_EQ(c.redundant_experts, cfg.redundant_experts);
  EXPECT_EQ(c.spec.kind, cfg.spec.kind) << line->text;
  EXPECT_EQ(c.spec.k, cfg.spec.k) << line->text;
  EXPECT_EQ(back->spec.empty(), !cfg.spec.on());
  if (cfg.spec.draft) {
    ASSERT_TRUE(c.spec.draft);
    EXPECT_EQ(c.spec.draft->id, cfg.spec.draft->id);
  }
  c.spec.accept = cfg.spec.accept;  // a line carries no acceptance rate
  auto again = estimate::EstimateServing(back->model.spec, *sys, c);
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_DOUBLE_EQ(again->decode_step.si(), est->decode_step.si());
  EXPECT_DOUBLE_EQ(again->ttft.si(), est->ttft.si());
  EXPECT_TRUE(back->ignored.empty()) << line->text;
}

TEST(ImportTest, ServingExtensionsRoundTrip) {
  using K = estimate::SpecDecode;
  const std::vector<ServeExtCase> cases = {
      {"vllm", "deepseek-v3", "h200:8x2", 1, 16, 1, 1, true, 32, K::kMtp, 1,
       ""},
      {"sglang", "deepseek-v3", "h200:8x2", 1, 16, 1, 1, true, 32, K::kMtp, 2,
       ""},
      {"vllm", "llama3-70b", "h100:8x2", 4, 1, 2, 2, false, 0, K::kEagle, 3,
       ""},
      {"sglang", "llama3-70b", "h100:8x2", 4, 1, 2, 2, false, 0, K::kEagle, 3,
       ""},
      {"vllm", "llama3-70b", "h100:8x1", 8, 1, 1, 1, false, 0, K::kDraft, 4,
       "llama3-8b"},
      {"sglang", "llama3-70b", "h100:8x1", 8, 1, 1, 1, false, 0, K::kDraft, 4,
       "llama3-8b"},
      {"vllm", "llama3-8b", "h100:8x1", 1, 1, 1, 8, false, 0, K::kNgram, 5, ""},
      {"sglang", "llama3-8b", "h100:8x1", 1, 1, 1, 8, false, 0, K::kNgram, 5,
       ""},
      {"vllm", "qwen3-235b-a22b", "h100:8x2", 1, 8, 2, 1, false, 0, K::kNone, 0,
       ""},
      {"sglang", "qwen3-235b-a22b", "h100:8x2", 2, 4, 2, 1, false, 0, K::kNone,
       0, ""},
      {"trtllm", "deepseek-v3", "h200:8x2", 1, 16, 1, 1, true, 32, K::kMtp, 2,
       ""},
      {"trtllm", "llama3-70b", "h100:8x2", 4, 1, 2, 2, false, 0, K::kEagle, 3,
       ""},
      {"trtllm", "llama3-70b", "h100:8x1", 8, 1, 1, 1, false, 0, K::kDraft, 4,
       "llama3-8b"},
      {"trtllm", "llama3-8b", "h100:8x1", 1, 1, 1, 8, false, 0, K::kNgram, 5,
       ""},
      {"trtllm", "qwen3-235b-a22b", "h100:8x2", 2, 4, 2, 1, false, 0, K::kNone,
       0, ""},
  };
  for (const ServeExtCase& t : cases) RoundTripExtensions(t);
}

// MXFP4 (gpt-oss's format) quantizes the fused-MoE layers alone: on a MoE
// model it sets the experts' dtype and leaves the rest; on a dense one it
// is every weight's.
TEST(ImportTest, Mxfp4QuantizesTheExpertsOfAMoe) {
  const catalog::Catalog& cat = BuiltinCatalog();
  auto sys = cat.FindSystem("h200:1x1");
  ASSERT_TRUE(sys);
  auto moe = ImportServing(
      ServeEngine::kVllm,
      {"vllm serve Qwen/Qwen3-30B-A3B --quantization mxfp4"}, cat, *sys, "");
  ASSERT_TRUE(moe) << moe.error().ToString();
  EXPECT_EQ(moe->config.weights, hw::Dtype::kBf16);
  ASSERT_TRUE(moe->config.expert_weights);
  EXPECT_EQ(*moe->config.expert_weights, hw::Dtype::kFp4);
  auto dense =
      ImportServing(ServeEngine::kVllm,
                    {"vllm serve meta-llama/Llama-3.1-8B --quantization mxfp4"},
                    cat, *sys, "");
  ASSERT_TRUE(dense) << dense.error().ToString();
  EXPECT_EQ(dense->config.weights, hw::Dtype::kFp4);
  EXPECT_FALSE(dense->config.expert_weights);
}

TEST(ImportTest, UsersDpAttentionAndSpeculation) {
  const catalog::Catalog& cat = BuiltinCatalog();
  auto sys = cat.FindSystem("h200:8x1");
  ASSERT_TRUE(sys);
  // A hand-written line (no scalemodel header): vLLM's DP ranks with
  // expert parallelism run DP attention; the JSON may have spaces inside
  // its quotes.
  auto v = ImportServing(
      ServeEngine::kVllm,
      {"vllm serve deepseek-ai/DeepSeek-V3 -tp 1 -dp 8 "
       "--enable-expert-parallel --enable-eplb --eplb-config "
       "'{\"num_redundant_experts\": 32}' --speculative-config "
       "'{\"method\": \"deepseek_mtp\", \"num_speculative_tokens\": 2}'"},
      cat, *sys, "");
  ASSERT_TRUE(v) << v.error().ToString();
  EXPECT_EQ(v->config.ep, 8);
  EXPECT_TRUE(v->config.dp_attention);
  EXPECT_EQ(v->config.redundant_experts, 32);
  EXPECT_EQ(v->spec, "mtp:2");
  auto s = ImportServing(
      ServeEngine::kSglang,
      {"python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 "
       "--tp 8 --dp 8 --enable-dp-attention --speculative-algorithm EAGLE "
       "--speculative-num-steps 3 --speculative-eagle-topk 1 "
       "--speculative-num-draft-tokens 4"},
      cat, *sys, "");
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_EQ(s->config.ep, 8);
  EXPECT_EQ(s->config.tp, 1);
  EXPECT_TRUE(s->config.dp_attention);
  EXPECT_EQ(s->spec, "eagle:3");
  // Expert parallelism without DP ranks: attention over all 8 ranks, the
  // experts whole on each (plain ep=8), in both engines.
  auto vp = ImportServing(ServeEngine::kVllm,
                          {"vllm serve deepseek-ai/DeepSeek-V3 -tp 8 "
                           "--enable-expert-parallel --max-num-seqs 64"},
                          cat, *sys, "");
  ASSERT_TRUE(vp) << vp.error().ToString();
  EXPECT_EQ(vp->config.tp, 1);
  EXPECT_EQ(vp->config.ep, 8);
  EXPECT_FALSE(vp->config.dp_attention);
  EXPECT_EQ(vp->config.batch, 64);
  auto sp = ImportServing(
      ServeEngine::kSglang,
      {"python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 "
       "--tp 8 --ep 8"},
      cat, *sys, "");
  ASSERT_TRUE(sp) << sp.error().ToString();
  EXPECT_EQ(sp->config.tp, 1);
  EXPECT_EQ(sp->config.ep, 8);
  EXPECT_FALSE(sp->config.dp_attention);
  auto bad = ImportServing(
      ServeEngine::kVllm,
      {"vllm serve meta-llama/Llama-3.1-70B -tp 8 --speculative-config "
       "'{\"method\": \"medusa\", \"num_speculative_tokens\": 2}'"},
      cat, *sys, "");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("medusa"), std::string::npos);
}

hw::System System(const std::string& id) {
  auto s = BuiltinCatalog().FindSystem(id);
  EXPECT_TRUE(s);
  return *s;
}

// A Megatron-LM script as users write it: torchrun, data and optimizer
// flags (ignored and listed), the model by its shape.
TEST(ImportTest, MegatronUserLine) {
  const std::string line =
      "torchrun --nproc-per-node 8 --nnodes 4 pretrain_gpt.py "
      "--num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 "
      "--num-attention-heads 32 --group-query-attention --num-query-groups 8 "
      "--seq-length 8192 --max-position-embeddings 131072 "
      "--micro-batch-size 1 --global-batch-size 512 "
      "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 "
      "--sequence-parallel --use-distributed-optimizer --overlap-grad-reduce "
      "--recompute-activations --bf16 --swiglu --lr 3e-4 --train-iters 1000 "
      "--data-path /data/x_text_document --tokenizer-type "
      "HuggingFaceTokenizer";
  auto r = ImportTraining(TrainEngine::kMegatron, {line}, BuiltinCatalog(),
                          System("h100:8x4"), "");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->model.spec.id, "llama3-8b");
  EXPECT_EQ(PlanKeyOf(r->config),
            "dp=8,tp=2,pp=2,zero=1 mb=1 remat=selective 1f1b");
  EXPECT_EQ(r->config.batch_tokens, 512.0 * 8192);
  EXPECT_EQ(r->config.precision.grad_reduce, hw::Dtype::kFp32);  // preset
  EXPECT_TRUE(r->config.habits.unfused_cross_entropy);
  EXPECT_EQ(r->ignored,
            (std::vector<std::string>{"--data-path", "--lr", "--tokenizer-type",
                                      "--train-iters"}));
  // The torchrun world must be the system's.
  auto wrong = ImportTraining(TrainEngine::kMegatron, {line}, BuiltinCatalog(),
                              System("h100:8x8"), "");
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("runs 32 processes"), std::string::npos);
}

TEST(ImportTest, MegatronRefusesWhatPlansCannotExpress) {
  auto r = ImportTraining(
      TrainEngine::kMegatron,
      {"--num-layers 32 --hidden-size 4096 --num-attention-heads 32 "
       "--seq-length 4096 --pipeline-model-parallel-size 4 "
       "--decoder-first-pipeline-num-layers 4 --model llama3-8b"},
      BuiltinCatalog(), System("h100:8x4"), "llama3-8b");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "--decoder-first-pipeline-num-layers sets a layer count for the "
            "first pipeline stage (scalemodel plans the last stage's, "
            "--last-stage-layers), which scalemodel's plans cannot express; "
            "drop it to estimate the rest");
  // Two catalog models share Llama 2/3 70B's shape: ask for --model.
  auto two = ImportTraining(
      TrainEngine::kMegatron,
      {"--num-layers 80 --hidden-size 8192 --num-attention-heads 64 "
       "--seq-length 4096"},
      BuiltinCatalog(), System("h100:8x8"), "");
  ASSERT_FALSE(two);
  EXPECT_NE(two.error().message.find("llama2-70b and llama3-70b"),
            std::string::npos)
      << two.error().message;
}

class TempDir {
 public:
  TempDir() {
    std::string t =
        (std::filesystem::temp_directory_path() / "sm_import_XXXXXX").string();
    path_ = mkdtemp(t.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string Write(const std::string& name, const std::string& text) const {
    const std::string p = (path_ / name).string();
    std::ofstream(p) << text;
    return p;
  }

 private:
  std::filesystem::path path_;
};

// A MaxText experiment file naming base.yml, plus key=value overrides.
TEST(ImportTest, MaxTextConfigFileAndOverrides) {
  TempDir tmp;
  tmp.Write("base.yml",
            "model_name: \"default\"\nper_device_batch_size: 12.0\n"
            "max_target_length: 2048\nremat_policy: 'full'\n"
            "ici_fsdp_parallelism: -1\nici_tensor_parallelism: 1\n"
            "dcn_data_parallelism: -1\nvocab_size: 32_000\n");
  const std::string exp =
      tmp.Write("llama.yml",
                "base_config: \"base.yml\"\nmodel_name: \"llama3.1-70b\"\n"
                "per_device_batch_size: 2\nici_tensor_parallelism: 4\n"
                "remat_policy: minimal\nlearning_rate: 3.e-5\n");
  auto r = ImportTraining(TrainEngine::kMaxText,
                          {exp, "max_target_length=8192", "steps=10"},
                          BuiltinCatalog(), System("tpu-v5p:4x4x8"), "");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->model.spec.id, "llama3-70b");
  EXPECT_EQ(PlanKeyOf(r->config),
            "fsdp=32,tp=4 mb=8 remat=save-matmul-outputs 1f1b");
  EXPECT_EQ(r->config.batch_tokens, 256.0 * 8192);
  EXPECT_EQ(r->ignored, std::vector<std::string>{"steps"});
  // An axis scalemodel has no parallelism for is refused.
  auto bad = ImportTraining(TrainEngine::kMaxText,
                            {exp, "ici_autoregressive_parallelism=2"},
                            BuiltinCatalog(), System("tpu-v5p:4x4x8"), "");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("ici_autoregressive_parallelism"),
            std::string::npos);
}

// A torchtitan TOML job file with command-line overrides.
TEST(ImportTest, TorchtitanTomlAndFlags) {
  TempDir tmp;
  const std::string job = tmp.Write(
      "llama3_70b.toml",
      "[job]\ndump_folder = \"./outputs\"\n[model]\nname = \"llama3\"\n"
      "flavor = \"70B\"\n[training]\nlocal_batch_size = 2\nseq_len = 8192\n"
      "steps = 1000\n[parallelism]\ndata_parallel_shard_degree = -1\n"
      "tensor_parallel_degree = 8\n[activation_checkpoint]\nmode = "
      "\"full\"\n");
  auto r = ImportTraining(
      TrainEngine::kTorchtitan,
      {job, "--training.global_batch_size 128 --optimizer.lr 1e-4"},
      BuiltinCatalog(), System("h100:8x8"), "");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->model.spec.id, "llama3-70b");
  EXPECT_EQ(PlanKeyOf(r->config), "fsdp=8,tp=8 mb=2 remat=full 1f1b");
  EXPECT_EQ(r->config.batch_tokens, 128.0 * 8192);
  EXPECT_EQ(r->ignored, std::vector<std::string>{"--optimizer.lr"});
  // torchtitan's default activation checkpointing: every 2nd layer.
  auto dflt = ImportTraining(TrainEngine::kTorchtitan,
                             {job, "--activation_checkpoint.mode selective"},
                             BuiltinCatalog(), System("h100:8x8"), "");
  ASSERT_TRUE(dflt);
  EXPECT_EQ(dflt->config.memory.remat, model::Remat::kFull);
  ASSERT_FALSE(dflt->notes.empty());
}

TEST(ImportTest, VllmAsUsersWriteIt) {
  auto r = ImportServing(
      ServeEngine::kVllm,
      {"vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 4 --max-num-seqs 128 "
       "--max-model-len 8192 --kv-cache-dtype fp8 --port 8000 "
       "--gpu-memory-utilization 0.9"},
      BuiltinCatalog(), System("h100:8x1"), "");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->model.spec.id, "llama3-70b");
  EXPECT_EQ(r->config.tp, 4);
  EXPECT_EQ(r->config.dp, 2);  // two servers of 4 GPUs on the host
  EXPECT_EQ(r->config.batch, 128);
  EXPECT_EQ(r->config.kv, hw::Dtype::kFp8);
  EXPECT_EQ(r->max_model_len, 8192);
  // The memory fraction is read (weights and KV cache get 0.9 of the
  // device's memory), --port is not the estimate's business.
  EXPECT_DOUBLE_EQ(r->config.memory_fraction, 0.9);
  EXPECT_TRUE(r->ignored.empty());
  auto pp = ImportServing(ServeEngine::kVllm,
                          {"vllm serve meta-llama/Llama-3.1-70B -tp 4 -pp 2"},
                          BuiltinCatalog(), System("h100:8x1"), "");
  ASSERT_TRUE(pp) << pp.error().ToString();
  EXPECT_EQ(pp->config.pp, 2);
  EXPECT_EQ(pp->config.dp, 1);
}

TEST(ImportTest, UnderstoodArgumentCounts) {
  EXPECT_GE(UnderstoodArguments(TrainEngine::kMegatron).size(), 40u);
  EXPECT_GE(UnderstoodArguments(TrainEngine::kMaxText).size(), 50u);
  EXPECT_GE(UnderstoodArguments(TrainEngine::kTorchtitan).size(), 25u);
  EXPECT_GE(UnderstoodArguments(ServeEngine::kVllm).size(), 10u);
  EXPECT_GE(UnderstoodArguments(ServeEngine::kSglang).size(), 11u);
  EXPECT_GE(UnderstoodArguments(ServeEngine::kTrtllm).size(), 10u);
}

// A hand-written trtllm-serve line whose YAML is a file on disk: the flags
// are read, the file is not, and a note says so.
TEST(ImportTest, TrtllmFlagsWithoutItsYaml) {
  auto r = ImportServing(
      ServeEngine::kTrtllm,
      {"trtllm-serve deepseek-ai/DeepSeek-V3 --backend pytorch --tp_size 8 "
       "--ep_size 8 --max_batch_size 64 --max_seq_len 4096 "
       "--extra_llm_api_options /no/such/extra.yaml"},
      BuiltinCatalog(), System("h200:8x1"), "");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->model.spec.id, "deepseek-v3");
  EXPECT_EQ(r->config.tp, 1);
  EXPECT_EQ(r->config.ep, 8);
  EXPECT_FALSE(r->config.dp_attention);
  EXPECT_EQ(r->config.batch, 64);
  EXPECT_EQ(r->max_model_len, 4096);
  ASSERT_FALSE(r->notes.empty());
  EXPECT_NE(r->notes.back().find("are not read"), std::string::npos);
  auto bad = ImportServing(ServeEngine::kTrtllm,
                           {"trtllm-serve disaggregated -c disagg.yaml"},
                           BuiltinCatalog(), System("h200:8x1"), "");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("import one of those servers"),
            std::string::npos);
}

// TensorRT-LLM's KV fraction, from the flag or the YAML key, becomes
// --kv-free-fraction; SGLang's static fraction becomes --mem-fraction.
TEST(ImportTest, EngineMemoryFractions) {
  auto t = ImportServing(
      ServeEngine::kTrtllm,
      {"trtllm-serve deepseek-ai/DeepSeek-V3 --backend pytorch --tp_size 4 "
       "--kv_cache_free_gpu_memory_fraction 0.75"},
      BuiltinCatalog(), System("b200:4x1"), "");
  ASSERT_TRUE(t) << t.error().ToString();
  EXPECT_DOUBLE_EQ(t->config.kv_free_fraction, 0.75);
  EXPECT_DOUBLE_EQ(t->config.memory_fraction, 0);
  auto s = ImportServing(ServeEngine::kSglang,
                         {"--model-path deepseek-ai/DeepSeek-V3 --tp 4 "
                          "--mem-fraction-static 0.95"},
                         BuiltinCatalog(), System("b200:4x1"), "");
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_DOUBLE_EQ(s->config.memory_fraction, 0.95);
  auto bad = ImportServing(ServeEngine::kTrtllm,
                           {"trtllm-serve deepseek-ai/DeepSeek-V3 --tp_size 4 "
                            "--kv_cache_free_gpu_memory_fraction 0"},
                           BuiltinCatalog(), System("b200:4x1"), "");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("expected a fraction above 0"),
            std::string::npos);
}

// SGLang's scheduler flags as InferenceX's DeepSeek-R1 launch writes them
// (long names with '='): --tensor-parallel-size, the recv interval, and a
// step budget of the chunk size bounded by --max-prefill-tokens.
TEST(ImportTest, SglangSchedulerFlags) {
  auto s = ImportServing(
      ServeEngine::kSglang,
      {"python3 -m sglang.launch_server --model-path=deepseek-ai/DeepSeek-V3 "
       "--tensor-parallel-size=8 --data-parallel-size=1 "
       "--max-running-requests 128 --chunked-prefill-size 32768 "
       "--max-prefill-tokens 16384 --scheduler-recv-interval 30"},
      BuiltinCatalog(), System("b200:8x1"), "");
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_EQ(s->config.tp, 8);
  EXPECT_EQ(s->config.dp, 1);
  EXPECT_EQ(s->recv_interval, 30);
  EXPECT_EQ(s->max_batched_tokens, 16384);
  EXPECT_TRUE(s->ignored.empty());
  auto d = ImportServing(ServeEngine::kSglang,
                         {"--model-path deepseek-ai/DeepSeek-V3 --tp 8 "
                          "--chunked-prefill-size 8192"},
                         BuiltinCatalog(), System("b200:8x1"), "");
  ASSERT_TRUE(d) << d.error().ToString();
  EXPECT_EQ(d->recv_interval, 1);
  EXPECT_EQ(d->max_batched_tokens, 8192);
}

// TensorRT-LLM's attention-DP balance from the heredoc YAML: the timeout
// with enable_balance (its default 50 when unstated), nothing without it.
TEST(ImportTest, TrtllmAttentionDpBalance) {
  auto line = [](const std::string& yaml) {
    return "cat > x.yaml <<'EOF'\nenable_attention_dp: true\n" + yaml +
           "EOF\ntrtllm-serve deepseek-ai/DeepSeek-V3 --tp_size 8 --ep_size 8 "
           "--extra_llm_api_options x.yaml\n";
  };
  auto on =
      ImportServing(ServeEngine::kTrtllm,
                    {line("attention_dp_config:\n  batching_wait_iters: 0\n"
                          "  enable_balance: true\n  timeout_iters: 60\n")},
                    BuiltinCatalog(), System("b200:8x1"), "");
  ASSERT_TRUE(on) << on.error().ToString();
  EXPECT_TRUE(on->config.dp_attention);
  EXPECT_EQ(on->adp_balance_timeout, 60);
  EXPECT_TRUE(on->ignored.empty());
  auto dflt =
      ImportServing(ServeEngine::kTrtllm,
                    {line("attention_dp_config:\n  enable_balance: true\n")},
                    BuiltinCatalog(), System("b200:8x1"), "");
  ASSERT_TRUE(dflt) << dflt.error().ToString();
  EXPECT_EQ(dflt->adp_balance_timeout, 50);
  auto off = ImportServing(ServeEngine::kTrtllm, {line("")}, BuiltinCatalog(),
                           System("b200:8x1"), "");
  ASSERT_TRUE(off) << off.error().ToString();
  EXPECT_EQ(off->adp_balance_timeout, 0);
}

// One server line imported on 8 GPUs of `chip`, or an error recorded; a
// TensorRT-LLM line with a heredoc YAML of `yaml` for `model` (TrtLine).
Result<ImportedServing> ImportLine(ServeEngine e, const std::string& line,
                                   const char* chip) {
  auto s = ImportServing(e, {line}, BuiltinCatalog(),
                         System(std::string(chip) + ":8x1"), "");
  EXPECT_TRUE(s) << s.error().ToString();
  return s;
}
std::string TrtLine(const std::string& model, const std::string& yaml) {
  return "cat > x.yaml <<'EOF'\n" + yaml + "EOF\ntrtllm-serve " + model +
         " --tp_size 8 --extra_llm_api_options x.yaml\n";
}

// The overlap scheduler as each engine's line turns it off or on: SGLang's
// --disable-overlap-schedule, vLLM's --async-scheduling and
// --no-async-scheduling, TensorRT-LLM's disable_overlap_scheduler; -1 (the
// engine's default) when the line says nothing.
TEST(ImportTest, OverlapSchedulerFlags) {
  auto overlap = [](ServeEngine e, const std::string& line) {
    auto s = ImportLine(e, line, "h100");
    if (s) EXPECT_TRUE(s->ignored.empty()) << line;
    return s ? s->overlap_schedule : -2;
  };
  const std::string sglang = "--model-path meta-llama/Llama-3.1-70B --tp 8";
  EXPECT_EQ(
      overlap(ServeEngine::kSglang, sglang + " --disable-overlap-schedule"), 0);
  EXPECT_EQ(overlap(ServeEngine::kSglang, sglang), -1);
  const std::string vllm = "vllm serve meta-llama/Llama-3.1-70B -tp 8";
  EXPECT_EQ(overlap(ServeEngine::kVllm, vllm + " --async-scheduling"), 1);
  EXPECT_EQ(overlap(ServeEngine::kVllm, vllm + " --no-async-scheduling"), 0);
  const std::string llama = "meta-llama/Llama-3.1-70B";
  for (const auto& [yaml, want] :
       {std::pair{"disable_overlap_scheduler: true\n", 0},
        std::pair{"disable_overlap_scheduler: false\n", 1},
        std::pair{"enable_attention_dp: false\n", -1}}) {
    EXPECT_EQ(overlap(ServeEngine::kTrtllm, TrtLine(llama, yaml)), want)
        << yaml;
  }
}

// Piecewise CUDA graphs for prefill: SGLang's --enable- and
// --disable-piecewise-cuda-graph, TensorRT-LLM's
// torch_compile_config.enable_piecewise_cuda_graph; -1 (the engine's
// default) when the line says nothing.
TEST(ImportTest, PiecewiseCudaGraphFlags) {
  auto graph = [](ServeEngine e, const std::string& line) {
    auto s = ImportLine(e, line, "b200");
    return s ? s->prefill_graph : -2;
  };
  const std::string sglang = "--model-path deepseek-ai/DeepSeek-V3 --tp 8";
  EXPECT_EQ(
      graph(ServeEngine::kSglang, sglang + " --enable-piecewise-cuda-graph"),
      1);
  EXPECT_EQ(
      graph(ServeEngine::kSglang, sglang + " --disable-piecewise-cuda-graph"),
      0);
  EXPECT_EQ(graph(ServeEngine::kSglang, sglang), -1);
  const std::string dsv3 = "deepseek-ai/DeepSeek-V3";
  for (const auto& [yaml, want] :
       {std::pair{
            "torch_compile_config:\n  enable_piecewise_cuda_graph: true\n", 1},
        std::pair{
            "torch_compile_config:\n  enable_piecewise_cuda_graph: false\n", 0},
        std::pair{"print_iter_log: true\n", -1}}) {
    EXPECT_EQ(graph(ServeEngine::kTrtllm, TrtLine(dsv3, yaml)), want) << yaml;
  }
}

// SGLang's --moe-runner-backend: the runner as named (lower case), empty
// when the line says nothing; an unknown runner is refused in one sentence.
TEST(ImportTest, SglangMoeRunner) {
  const std::string sglang = "--model-path deepseek-ai/DeepSeek-V3 --tp 8";
  auto s =
      ImportLine(ServeEngine::kSglang,
                 sglang + " --moe-runner-backend flashinfer_trtllm", "b200");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->config.moe_runner, "flashinfer_trtllm");
  s = ImportLine(ServeEngine::kSglang, sglang + " --moe-runner-backend=Triton",
                 "b200");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->config.moe_runner, "triton");
  s = ImportLine(ServeEngine::kSglang, sglang, "b200");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->config.moe_runner, "");
  EXPECT_TRUE(s->config.shared_experts_fusion);
  s = ImportLine(
      ServeEngine::kSglang,
      sglang + " --disable-shared-experts-fusion --disable-radix-cache",
      "b200");
  ASSERT_TRUE(s.has_value());
  EXPECT_FALSE(s->config.shared_experts_fusion);
  s = ImportServing(ServeEngine::kSglang,
                    {sglang + " --moe-runner-backend tritn"}, BuiltinCatalog(),
                    System("b200:8x1"), "");
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message.find("got 'tritn' (did you mean 'triton'?)"),
            std::string::npos)
      << s.error().message;
}

}  // namespace
}  // namespace scalemodel::launch
