// Launch validators (launch/rules.h): each engine rule rejects the line that
// breaks it (the 17 failure classes of issue 21, from
// shared/reference/launch-checks.md F1-F13, M4), and every line --emit
// prints for the --help examples and the planner's picks passes.
#include "scalemodel/launch/rules.h"

#include <gtest/gtest.h>

#include <string>

#include "../testing/catalog.h"
#include "scalemodel/estimate/training.h"
#include "scalemodel/ingest/hf_config.h"
#include "scalemodel/launch/launch.h"
#include "scalemodel/search/plan.h"

namespace scalemodel::launch {
namespace {

using scalemodel::testing::BuiltinCatalog;
using scalemodel::testing::System;

ingest::ImportedModel Model(const std::string& id) {
  auto m = ingest::FindModel(BuiltinCatalog(), id);
  EXPECT_TRUE(m.has_value()) << id;
  return m.has_value() ? *m : ingest::ImportedModel{};
}

LaunchContext Ctx(const std::string& model, const std::string& system) {
  return ContextFor(Model(model).spec, System(system));
}

EngineVersion V(const std::string& text) {
  auto v = ParseEngineVersion(text);
  EXPECT_TRUE(v.has_value()) << text;
  return v.has_value() ? *v : EngineVersion{};
}

// The ids of the rules `text` breaks, comma-joined.
std::string Broken(const std::string& engine, const std::string& text,
                   const LaunchContext& ctx) {
  std::string ids;
  for (const RuleFailure& f : ValidateLaunch(V(engine), text, ctx)) {
    ids += (ids.empty() ? "" : ",") + f.rule.id;
  }
  return ids;
}

// A Megatron line for DeepSeek-V3 on b200:8x32 with `extra` flags.
std::string MegatronDsv3(const std::string& extra) {
  return "torchrun --nproc-per-node 8 --nnodes 32 pretrain_gpt.py "
         "--tensor-model-parallel-size 1 --num-layers 61 "
         "--num-attention-heads 128 --num-experts 256 --micro-batch-size 1 "
         "--global-batch-size 4096 --untie-embeddings-and-output-weights " +
         extra;
}

// F1: --num-layers-per-virtual-pipeline-stage with 61 layers at pp 8.
TEST(RulesTest, MegatronLayersMustDivideByPp) {
  auto ctx = Ctx("deepseek-v3", "b200:8x32");
  EXPECT_EQ(Broken("megatron",
                   MegatronDsv3("--pipeline-model-parallel-size 8 "
                                "--num-layers-per-virtual-pipeline-stage 3 "
                                "--expert-model-parallel-size 32"),
                   ctx),
            "megatron.layers-pp");
  // The same split as an explicit layout passes (launch-checks.md F1).
  EXPECT_EQ(Broken("megatron",
                   MegatronDsv3("--pipeline-model-parallel-size 8 "
                                "--pipeline-model-parallel-layout "
                                "\"Et*3|(t*4|)*13t*3|t*3mL\" --mtp-num-layers "
                                "1 --expert-model-parallel-size 32"),
                   ctx),
            "");
  // A layout that drops a layer does not.
  EXPECT_EQ(Broken("megatron",
                   MegatronDsv3("--pipeline-model-parallel-size 8 "
                                "--pipeline-model-parallel-layout "
                                "\"Et*3|(t*4|)*13t*3|t*2mL\" --mtp-num-layers "
                                "1 --expert-model-parallel-size 32"),
                   ctx),
            "megatron.layout");
  // First/last counts must divide by vpp (transformer_config.py).
  EXPECT_EQ(Broken("megatron",
                   MegatronDsv3("--pipeline-model-parallel-size 8 "
                                "--num-virtual-stages-per-pipeline-rank 2 "
                                "--decoder-last-pipeline-num-layers 5 "
                                "--expert-model-parallel-size 32"),
                   ctx),
            "megatron.uneven-split");
}

// F2: FSDP2 with pp > 1 and with ep > 1.
TEST(RulesTest, MegatronFsdp2ExcludesPpAndEp) {
  auto ctx = Ctx("deepseek-v3", "b200:8x32");
  const std::string fsdp =
      "--use-torch-fsdp2 --no-gradient-accumulation-fusion --ckpt-format "
      "torch_dist ";
  EXPECT_EQ(Broken("megatron",
                   MegatronDsv3(fsdp + "--pipeline-model-parallel-size 1 "
                                       "--expert-model-parallel-size 2"),
                   ctx),
            "megatron.fsdp2-no-ep");
  auto llama = Ctx("llama3-405b", "h100:8x64");
  EXPECT_EQ(Broken("megatron",
                   "unset CUDA_DEVICE_MAX_CONNECTIONS\ntorchrun x.py "
                   "--num-layers 128 --num-attention-heads 128 "
                   "--pipeline-model-parallel-size 8 "
                   "--untie-embeddings-and-output-weights " +
                       fsdp,
                   llama),
            "megatron.fsdp2-no-pp");
}

// F3: tp or cp > 1 on Hopper needs CUDA_DEVICE_MAX_CONNECTIONS=1; FSDP2
// needs the opposite; Blackwell needs neither.
TEST(RulesTest, MegatronCudaDeviceMaxConnections) {
  auto h100 = Ctx("llama3-70b", "h100:8x8");
  const std::string line =
      "torchrun x.py --num-layers 80 --num-attention-heads 64 "
      "--tensor-model-parallel-size 8 --sequence-parallel";
  EXPECT_EQ(Broken("megatron", line, h100), "megatron.cuda-max-connections");
  EXPECT_EQ(
      Broken("megatron", "export CUDA_DEVICE_MAX_CONNECTIONS=1\n" + line, h100),
      "");
  EXPECT_EQ(Broken("megatron", line, Ctx("llama3-70b", "b200:8x8")), "");
  EXPECT_EQ(Broken("megatron",
                   "export CUDA_DEVICE_MAX_CONNECTIONS=1\ntorchrun x.py "
                   "--num-layers 80 --num-attention-heads 64 "
                   "--untie-embeddings-and-output-weights --use-torch-fsdp2 "
                   "--no-gradient-accumulation-fusion --ckpt-format "
                   "torch_dist",
                   h100),
            "megatron.fsdp2-env");
}

// F4: TransformerEngine spells it all_gather.
TEST(RulesTest, MegatronCpCommTypeSpelling) {
  auto ctx = Ctx("llama3-70b", "h100:8x8");
  const std::string base =
      "export CUDA_DEVICE_MAX_CONNECTIONS=1\ntorchrun x.py --num-layers 80 "
      "--num-attention-heads 64 --context-parallel-size 4 --cp-comm-type ";
  EXPECT_EQ(Broken("megatron", base + "allgather", ctx),
            "megatron.cp-comm-type");
  EXPECT_EQ(Broken("megatron", base + "all_gather", ctx), "");
}

// F5: EP overlap with full recompute; and with pp > 1 but no VPP.
TEST(RulesTest, MegatronEpOverlapRules) {
  auto ctx = Ctx("deepseek-v3", "b200:8x32");
  EXPECT_EQ(Broken("megatron",
                   MegatronDsv3("--expert-model-parallel-size 32 "
                                "--moe-token-dispatcher-type alltoall "
                                "--overlap-moe-expert-parallel-comm "
                                "--recompute-granularity full "
                                "--recompute-method uniform "
                                "--recompute-num-layers 1"),
                   ctx),
            "megatron.ep-overlap-recompute");
  EXPECT_EQ(Broken("megatron",
                   MegatronDsv3("--expert-model-parallel-size 32 "
                                "--pipeline-model-parallel-size 8 "
                                "--pipeline-model-parallel-layout "
                                "\"Et*7|(t*8|)*6t*6mL\" --mtp-num-layers 1 "
                                "--overlap-moe-expert-parallel-comm"),
                   ctx),
            "megatron.ep-overlap-vpp");
}

TEST(RulesTest, MegatronCompanionFlags) {
  auto ctx = Ctx("llama3-8b", "h100:8x1");
  EXPECT_EQ(Broken("megatron",
                   "torchrun x.py --num-layers 32 --num-attention-heads 32 "
                   "--overlap-param-gather",
                   ctx),
            "megatron.overlap-param-gather");
  EXPECT_EQ(Broken("megatron",
                   "export CUDA_DEVICE_MAX_CONNECTIONS=1\ntorchrun x.py "
                   "--num-layers 32 --num-attention-heads 32 "
                   "--tensor-model-parallel-size 8 --tp-comm-overlap",
                   ctx),
            "megatron.tp-comm-overlap-sp");
  EXPECT_EQ(Broken("megatron",
                   "torchrun x.py --num-layers 32 --num-attention-heads 32 "
                   "--micro-batch-size 3 --global-batch-size 64",
                   ctx),
            "megatron.global-batch");
}

std::string MaxText(const std::string& keys) {
  return "python3 train.py base.yml run_name=x model_name=m " + keys;
}

// F6, F7: MaxText's pipeline products and microbatches.
TEST(RulesTest, MaxTextPipeline) {
  auto ctx = Ctx("llama3-405b", "tpu-v5p:8x16x16");
  const std::string mesh =
      "ici_fsdp_parallelism=128 ici_tensor_parallelism=4 "
      "ici_pipeline_parallelism=4 dcn_data_parallelism=1 ";
  EXPECT_EQ(Broken("maxtext",
                   MaxText(mesh + "num_pipeline_microbatches=16 "
                                  "num_pipeline_repeats=2"),
                   ctx),
            "maxtext.pipeline-layers");
  EXPECT_EQ(Broken("maxtext",
                   MaxText(mesh + "num_pipeline_microbatches=16 "
                                  "pipeline_parallel_layers=120 "
                                  "num_layers_per_pipeline_stage=15 "
                                  "num_pipeline_repeats=2"),
                   ctx),
            "");
  EXPECT_EQ(Broken("maxtext",
                   MaxText(mesh + "num_pipeline_microbatches=1 "
                                  "pipeline_parallel_layers=120 "
                                  "num_layers_per_pipeline_stage=30"),
                   ctx),
            "maxtext.pipeline-microbatches");
}

// F8, M4 and the mesh products.
TEST(RulesTest, MaxTextFp8GpuAndMesh) {
  auto gpu = Ctx("mixtral-8x7b", "h100:8x8");
  const std::string mesh =
      "ici_fsdp_parallelism=8 dcn_data_parallelism=1 dcn_fsdp_parallelism=8 ";
  EXPECT_EQ(Broken("maxtext",
                   MaxText("hardware=gpu " + mesh +
                           "quantization=fp8 gradient_accumulation_steps=4"),
                   gpu),
            "maxtext.fp8-no-ga");
  EXPECT_EQ(Broken("maxtext", MaxText(mesh), gpu), "maxtext.gpu-hardware");
  EXPECT_EQ(Broken("maxtext",
                   MaxText("hardware=gpu ici_fsdp_parallelism=16 "
                           "dcn_data_parallelism=1 dcn_fsdp_parallelism=8"),
                   gpu),
            "maxtext.ici-product");
}

std::string Titan(const std::string& flags) {
  return "torchrun --nproc-per-node 8 --nnodes 8 -m torchtitan.train "
         "--parallelism.data_parallel_shard_degree 8 "
         "--parallelism.tensor_parallel_degree 8 " +
         flags;
}

// F9-F12: torchtitan's eras.
TEST(RulesTest, TorchtitanEras) {
  auto ctx = Ctx("llama3-70b", "h100:8x8");
  const std::string named = "--model.name llama3 --model.flavor 70B ";
  EXPECT_EQ(Broken("torchtitan", Titan(named), ctx), "");
  // F12: no model named trains llama3 debugmodel.
  EXPECT_EQ(Broken("torchtitan", Titan(""), ctx), "torchtitan.model-named");
  // F10: the converter's name since 2025-09-26.
  EXPECT_EQ(
      Broken("torchtitan", Titan(named + "--model.converters float8"), ctx),
      "torchtitan.float8-name");
  // F11: async TP without compile.
  EXPECT_EQ(
      Broken("torchtitan",
             Titan(named + "--parallelism.enable_async_tensor_parallel"), ctx),
      "torchtitan.async-tp-compile");
  // F9: the config-registry trainer needs --module/--config and rejects the
  // TOML-era flags.
  EXPECT_EQ(Broken("torchtitan@main", Titan(named), ctx),
            "torchtitan.module-config,torchtitan.registry-flags");
  EXPECT_EQ(Broken("torchtitan@main",
                   Titan("--module llama3 --config llama3_70b"), ctx),
            "");
  EXPECT_EQ(Broken("torchtitan@main",
                   Titan("--module llama3 --config llama3_70b_float8"), ctx),
            "torchtitan.module-config");
  // M2: virtual stages from layers per stage, ceil((80 + 2) / per).
  const std::string pp =
      "--parallelism.data_parallel_shard_degree 1 "
      "--parallelism.pipeline_parallel_degree 8 "
      "--parallelism.pipeline_parallel_schedule Interleaved1F1B ";
  EXPECT_EQ(Broken("torchtitan",
                   Titan(named + pp +
                         "--parallelism.pipeline_parallel_layers_per_stage 6"),
                   ctx),
            "torchtitan.pp-stages");  // 14 virtual stages over 8 ranks
  EXPECT_EQ(Broken("torchtitan",
                   Titan(named + pp +
                         "--parallelism.pipeline_parallel_layers_per_stage 11"),
                   ctx),
            "torchtitan.pp-stages");  // 8: one per rank, looped needs 2
  EXPECT_EQ(Broken("torchtitan", Titan(named + pp), ctx), "");
  EXPECT_EQ(
      Broken("torchtitan",
             Titan(named + "--parallelism.pipeline_parallel_degree 2"), ctx),
      "torchtitan.world");
}

// F13 and M5's companions: multi-node vLLM data parallelism.
TEST(RulesTest, VllmMultiNode) {
  auto ctx = Ctx("deepseek-v3", "h200:8x2");
  const std::string base =
      "vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 1 "
      "--data-parallel-size 16 --enable-expert-parallel ";
  EXPECT_EQ(Broken("vllm", base, ctx),
            "vllm.multinode-dp,vllm.multinode-address");
  EXPECT_EQ(Broken("vllm",
                   base + "--data-parallel-size-local 8 "
                          "--data-parallel-address 10.0.0.1",
                   ctx),
            "");
  EXPECT_EQ(Broken("vllm",
                   base + "--data-parallel-size-local 16 "
                          "--data-parallel-address 10.0.0.1",
                   ctx),
            "vllm.local-fits");
  EXPECT_EQ(Broken("vllm", base + "--data-parallel-backend ray", ctx), "");
  EXPECT_EQ(Broken("vllm", "vllm serve m --kv-cache-dtype fp8_e4m3x", ctx),
            "vllm.kv-dtype");
}

TEST(RulesTest, SglangMultiNode) {
  auto ctx = Ctx("deepseek-v3", "h200:8x2");
  const std::string base =
      "python3 -m sglang.launch_server --model-path m --tp-size 16 "
      "--ep-size 16 --dp-size 16 --enable-dp-attention ";
  EXPECT_EQ(Broken("sglang", base + "--nnodes 2", ctx),
            "sglang.multinode-flags");
  EXPECT_EQ(
      Broken("sglang",
             base + "--nnodes 2 --node-rank 0 --dist-init-addr a:5000", ctx),
      "");
  EXPECT_EQ(Broken("sglang",
                   base + "--nnodes 3 --node-rank 0 "
                          "--dist-init-addr a:5000",
                   ctx),
            "sglang.nodes");
  EXPECT_EQ(
      Broken("sglang",
             "python3 -m sglang.launch_server --tp-size 8 --dp-size 3", ctx),
      "sglang.tp-dp");
}

TEST(RulesTest, VersionsAreParsedAndListed) {
  EXPECT_EQ(V("megatron").name, "core_v0.19");
  EXPECT_EQ(V("Megatron-LM@main").commit.substr(0, 8), "d98e8a64");
  EXPECT_EQ(V("torchtitan").era, "toml");
  EXPECT_EQ(V("torchtitan@main").era, "registry");
  auto bad = ParseEngineVersion("torchtitan@0.1");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message,
            "unknown torchtitan version '0.1': the rules are known for 0.2, "
            "main (default 0.2)");
  EXPECT_FALSE(ParseEngineVersion("deepspeed").has_value());
  for (Engine e : {Engine::kMegatron, Engine::kMaxText, Engine::kTorchtitan,
                   Engine::kVllm, Engine::kSglang, Engine::kTrtllm}) {
    for (const EngineVersion& v : KnownVersions(e)) {
      for (const EngineRule& r : RulesOf(v)) {
        EXPECT_FALSE(r.source.empty()) << r.id;
        EXPECT_EQ(r.id.rfind(std::string(EngineId(e)) + ".", 0), 0u) << r.id;
      }
    }
  }
}

// A failure reads as one sentence naming the rule and its source.
TEST(RulesTest, FailureSentence) {
  auto f = ValidateLaunch(V("maxtext"),
                          MaxText("ici_fsdp_parallelism=256 "
                                  "dcn_data_parallelism=1 quantization=fp8 "
                                  "gradient_accumulation_steps=2"),
                          Ctx("llama3-8b", "tpu-v6e:16x16"));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].Sentence(),
            "rule maxtext.fp8-no-ga fails: quantization=fp8 with "
            "gradient_accumulation_steps=2; the engine requires that "
            "quantization=fp8 excludes gradient_accumulation_steps > 1 "
            "(AI-Hypercomputer/maxtext e591f30c "
            "src/maxtext/configs/types.py:3878-3882)");
}

struct Plan {
  const char* engine;
  const char* model;
  const char* system;
  const char* plan;
  double sequences, seq;
  int vpp = 1;
  int micro_batch = 1;
  bool fp8 = false;
  bool tp_overlap = false;
};

Result<CheckedLaunch> Emit(const Plan& p) {
  auto model = Model(p.model);
  auto system = System(p.system);
  estimate::TrainingConfig cfg;
  cfg.par = *estimate::ParsePlan(p.plan);
  cfg.batch_tokens = p.sequences * p.seq;
  cfg.seq = p.seq;
  cfg.layout.micro_batch = p.micro_batch;
  if (p.vpp > 1) {
    cfg.layout.schedule = estimate::Schedule::kInterleaved;
    cfg.layout.vpp = p.vpp;
  }
  if (p.fp8) cfg.precision.matmul = hw::Dtype::kFp8;
  cfg.habits.tp_comm_overlap = p.tp_overlap;
  auto est = estimate::EstimateTraining(model.spec, system, cfg);
  if (!est) return tl::unexpected(est.error());
  return EmitTrainingChecked(p.engine, model, system, cfg, *est);
}

// The lines the issue found broken, emitted now: each passes its validator
// (uneven splits through the engines' own mechanisms at pp 8 and 16).
TEST(RulesTest, EmittedLinesPass) {
  const Plan plans[] = {
      {"megatron", "deepseek-v3", "b200:8x32", "pp=8,ep=32,zero=1", 4096, 4096,
       2},
      {"megatron", "llama3-405b", "h100:8x64", "dp=8,tp=8,pp=8,zero=1", 1024,
       8192, 2, 1, true, true},
      {"megatron", "llama3-405b", "h100:8x64", "dp=2,tp=2,pp=16,cp=8", 1024,
       8192, 4},
      {"megatron", "deepseek-v3", "h100:8x128", "dp=4,pp=16,ep=8,cp=2,zero=2",
       4096, 4096, 2},
      {"megatron", "mixtral-8x7b", "h100:8x8",
       "dp=2,tp=2,pp=2,ep=4,cp=2,zero=1", 512, 4096},
      {"maxtext", "llama3-405b", "tpu-v5p:8x16x16", "fsdp=128,tp=4,pp=4", 2048,
       8192, 2, 4, true},
      {"maxtext", "deepseek-v3", "tpu-v5p:8x16x16", "fsdp=256,pp=8", 4096, 4096,
       1, 2},
      {"maxtext", "llama3-70b", "h100:8x8", "fsdp=64", 512, 8192},
      {"maxtext", "llama3-405b", "tpu-v5p:8x16x16", "fsdp=128,pp=16", 2048,
       8192, 1, 1},
      {"torchtitan", "llama3-405b", "h100:8x64", "fsdp=8,tp=8,pp=8", 1024, 8192,
       2, 1, true, true},
      {"torchtitan@main", "llama3-405b", "h100:8x64", "fsdp=8,tp=8,pp=8", 1024,
       8192, 2, 1, false, true},
      {"torchtitan", "deepseek-v3", "b200:8x32", "fsdp=256", 4096, 4096},
      {"torchtitan@main", "deepseek-v3", "b200:8x32", "fsdp=256", 4096, 4096, 1,
       1, true},
  };
  for (const Plan& p : plans) {
    auto c = Emit(p);
    ASSERT_TRUE(c.has_value()) << p.plan << ": " << c.error().ToString();
    EXPECT_TRUE(c->launchable())
        << p.engine << " " << p.model << " " << p.plan << ": " << c->Reason();
  }
}

// The planned model, not a near one: the architecture flags are there.
TEST(RulesTest, ArchitectureFlags) {
  auto dsv3 = Emit({"megatron", "deepseek-v3", "b200:8x32", "pp=8,ep=32,zero=1",
                    4096, 4096, 2});
  ASSERT_TRUE(dsv3 && dsv3->launchable());
  for (const char* f :
       {"--moe-router-score-function sigmoid",
        "--moe-router-enable-expert-bias",
        "--moe-router-topk-scaling-factor 2.5", "--moe-router-num-groups 8",
        "--moe-router-group-topk 4", "--rope-type yarn", "--mtp-num-layers 1",
        "--q-lora-rank 1536", "--kv-lora-rank 512"}) {
    EXPECT_NE(dsv3->text.find(f), std::string::npos) << f;
  }
  auto qwen = Emit({"megatron", "qwen3-30b-a3b", "h100:8x4",
                    "dp=2,pp=4,ep=4,zero=1", 256, 4096});
  ASSERT_TRUE(qwen && qwen->launchable()) << (qwen ? qwen->Reason() : "");
  EXPECT_NE(qwen->text.find("--qk-layernorm"), std::string::npos);
  auto mt = Emit({"maxtext", "llama3-70b", "h100:8x8", "fsdp=64", 512, 8192});
  ASSERT_TRUE(mt && mt->launchable());
  EXPECT_NE(mt->text.find("hardware=gpu"), std::string::npos);
  auto titan = Emit({"torchtitan", "qwen3-235b-a22b", "h100:8x16",
                     "fsdp=4,ep=8,pp=4", 512, 4096});
  ASSERT_TRUE(titan && titan->launchable());
  EXPECT_NE(titan->text.find("--model.flavor 235B-A22B"), std::string::npos);
}

// The plan search's engine filter (PlanRequest::launchable): Megatron's
// validator rejects FSDP2 with pp > 1, so no plan ranked for it has both,
// and CanLaunchTraining says so for such a plan.
TEST(RulesTest, PlanSearchKeepsToLaunchablePlans) {
  auto model = Model("llama3-8b");
  auto system = System("h100:8x2");
  estimate::TrainingConfig bad;
  bad.par = *estimate::ParsePlan("fsdp=8,pp=2");
  bad.batch_tokens = 256 * 4096.0;
  bad.seq = 4096;
  EXPECT_FALSE(CanLaunchTraining("megatron", model, system, bad));
  bad.par = *estimate::ParsePlan("fsdp=16");
  EXPECT_TRUE(CanLaunchTraining("megatron", model, system, bad));
  search::PlanRequest req;
  req.base.batch_tokens = 256 * 4096.0;
  req.base.seq = 4096;
  req.top = 3;
  req.threads = 1;
  int calls = 0;
  req.launchable = [&](const hw::System& sys,
                       const estimate::TrainingConfig& c) {
    ++calls;
    return c.par.pp == 1 && CanLaunchTraining("megatron", model, sys, c);
  };
  auto r = search::PlanTraining(model.spec, system, req);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_GT(calls, 0);
  ASSERT_FALSE(r->plans.empty());
  for (const search::RankedPlan& p : r->plans) {
    EXPECT_EQ(p.config.par.pp, 1) << p.candidate.Key();
  }
}

// A heredoc's YAML is read into dotted keys; the file it writes is listed.
TEST(RulesTest, HeredocYamlKeys) {
  const ParsedLaunch p = ParseLaunchText(
      "cat > x.yaml <<'EOF'\n"
      "enable_attention_dp: true\n"
      "moe_config:\n"
      "  backend: WIDEEP\n"
      "  load_balancer:\n"
      "    num_slots: 288\n"
      "kv_cache_config:\n"
      "  dtype: fp8\n"
      "context_servers:\n"
      "  urls:\n"
      "    - \"h0:8100\"\n"
      "    - \"h0:8101\"\n"
      "EOF\n"
      "trtllm-serve m --tp_size 8 --extra_llm_api_options x.yaml\n");
  EXPECT_EQ(p.keys.at("enable_attention_dp"), "true");
  EXPECT_EQ(p.keys.at("moe_config.backend"), "WIDEEP");
  EXPECT_EQ(p.keys.at("moe_config.load_balancer.num_slots"), "288");
  EXPECT_EQ(p.keys.at("kv_cache_config.dtype"), "fp8");
  EXPECT_EQ(p.keys.at("context_servers.urls"), "h0:8100 h0:8101");
  EXPECT_EQ(p.flags.at("--tp_size"), "8");
  EXPECT_EQ(p.heredoc_files, std::vector<std::string>{"x.yaml"});
  EXPECT_EQ(p.words, (std::vector<std::string>{"trtllm-serve", "m"}));
}

// Each TensorRT-LLM rule rejects the line that breaks it.
TEST(RulesTest, TrtllmRulesFail) {
  auto ctx = Ctx("deepseek-v3", "h200:8x2");
  auto line = [](const std::string& yaml, const std::string& flags) {
    return "cat > o.yaml <<'EOF'\n" + yaml +
           "EOF\ntrtllm-serve deepseek-ai/DeepSeek-V3 " + flags +
           " --extra_llm_api_options o.yaml\n";
  };
  auto broken = [&](const std::string& text) {
    std::string ids;
    for (const RuleFailure& f : ValidateLaunch(V("trtllm"), text, ctx)) {
      ids += (ids.empty() ? "" : ",") + f.rule.id;
    }
    return ids;
  };
  EXPECT_EQ(broken(line("", "--tp_size 16 --ep_size 16")), "");
  EXPECT_EQ(broken(line("", "--tp_size 12 --ep_size 4")), "trtllm.world");
  EXPECT_EQ(broken(line("", "--tp_size 16 --ep_size 3")), "trtllm.moe-ep");
  EXPECT_EQ(broken(line("", "--tp_size 16 --backend onnx")), "trtllm.backend");
  EXPECT_EQ(broken(line("kv_cache_config:\n  dtype: int8\n", "--tp_size 16")),
            "trtllm.kv-dtype");
  EXPECT_EQ(broken(line("speculative_config:\n  decoding_type: Eagle\n"
                        "  max_draft_len: 3\n",
                        "--tp_size 16")),
            "trtllm.spec");
  EXPECT_EQ(broken(line("moe_config:\n  backend: FAST\n", "--tp_size 16")),
            "trtllm.moe-backend");
  EXPECT_EQ(broken(line("moe_config:\n  load_balancer:\n    num_slots: 260\n",
                        "--tp_size 16 --ep_size 16")),
            "trtllm.lb-slots");
  EXPECT_EQ(broken(line("cache_transceiver_config:\n  backend: TCP\n",
                        "--tp_size 16")),
            "trtllm.cache-transceiver");
  EXPECT_EQ(broken("trtllm-serve m --tp_size 16 --extra_llm_api_options "
                   "elsewhere.yaml\n"),
            "trtllm.extra-options");
}

}  // namespace
}  // namespace scalemodel::launch
