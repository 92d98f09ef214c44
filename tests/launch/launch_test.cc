// Runnable plan export: the emitted launch lines must satisfy the checks
// each engine makes at launch (degrees multiply to the chips, the batch
// splits), and map ICI/NVLink vs DCN/network degrees correctly.
#include "scalemodel/launch/launch.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <regex>
#include <string>

#include "../testing/catalog.h"
#include "scalemodel/ingest/hf_config.h"
#include "scalemodel/launch/rules.h"

namespace scalemodel::launch {
namespace {

using scalemodel::testing::BuiltinCatalog;
using scalemodel::testing::System;

ingest::ImportedModel Model(const std::string& id) {
  auto m = ingest::FindModel(BuiltinCatalog(), id);
  EXPECT_TRUE(m.has_value()) << m.error().ToString();
  return m.has_value() ? *m : ingest::ImportedModel{};
}

// "key=value" (MaxText) or "--flag value" (the others) -> value as a number.
std::map<std::string, double> Numbers(const std::string& text) {
  std::map<std::string, double> out;
  std::regex kv(R"(\s([a-z_]+)=([0-9.]+))");
  for (std::sregex_iterator it(text.begin(), text.end(), kv), end; it != end;
       ++it) {
    out[(*it)[1]] = std::stod((*it)[2]);
  }
  std::regex flag(R"((--[a-z0-9_.-]+) ([0-9.]+))");
  for (std::sregex_iterator it(text.begin(), text.end(), flag), end; it != end;
       ++it) {
    out[(*it)[1]] = std::stod((*it)[2]);
  }
  return out;
}

struct Trained {
  ingest::ImportedModel model;
  hw::System system;
  estimate::TrainingConfig cfg;
  estimate::TrainingEstimate est;
};

Trained Train(const std::string& model, const std::string& system,
              const std::string& plan, double batch_tokens, double seq,
              int micro_batch = 1) {
  Trained t{Model(model), System(system), {}, {}};
  auto p = estimate::ParsePlan(plan);
  EXPECT_TRUE(p.has_value());
  t.cfg.par = *p;
  t.cfg.batch_tokens = batch_tokens;
  t.cfg.seq = seq;
  t.cfg.layout.micro_batch = micro_batch;
  auto e = estimate::EstimateTraining(t.model.spec, t.system, t.cfg);
  EXPECT_TRUE(e.has_value()) << e.error().ToString();
  if (e) t.est = *e;
  return t;
}

// Two v5p slices over DCN: FSDP inside each slice, data parallel across.
TEST(LaunchTest, MaxTextSplitsIciAndDcn) {
  Trained t = Train("llama3-70b", "tpu-v5p:8x8x8/2", "dp=2,fsdp=512",
                    2048 * 4096, 4096);
  auto text =
      EmitTraining(TrainEngine::kMaxText, t.model, t.system, t.cfg, t.est);
  ASSERT_TRUE(text.has_value()) << text.error().ToString();
  auto n = Numbers(*text);
  EXPECT_EQ(n["ici_fsdp_parallelism"], 512);
  EXPECT_EQ(n["dcn_data_parallelism"], 2);
  EXPECT_EQ(n["ici_data_parallelism"], 1);
  EXPECT_NE(text->find("model_name=llama3.1-70b"), std::string::npos);
  // per_device_batch_size x chips x accumulation steps = global sequences.
  double gas = n.count("gradient_accumulation_steps")
                   ? n["gradient_accumulation_steps"]
                   : 1;
  EXPECT_DOUBLE_EQ(n["per_device_batch_size"] * 1024 * gas, 2048);
}

TEST(LaunchTest, MegatronDegreesAndBatchAreConsistent) {
  Trained t = Train("llama3-70b", "h100:8x64", "dp=16,tp=8,pp=4,zero=1",
                    1024 * 4096, 4096);
  auto text =
      EmitTraining(TrainEngine::kMegatron, t.model, t.system, t.cfg, t.est);
  ASSERT_TRUE(text.has_value()) << text.error().ToString();
  auto n = Numbers(*text);
  const double tp = n["--tensor-model-parallel-size"];
  const double pp = n["--pipeline-model-parallel-size"];
  const double cp = n["--context-parallel-size"];
  EXPECT_EQ(tp, 8);
  EXPECT_EQ(pp, 4);
  EXPECT_EQ(n["--nproc-per-node"] * n["--nnodes"], 512);
  // Megatron: DP = world / (TP PP CP); GBS divisible by MBS x DP.
  const double dp = 512 / (tp * pp * cp);
  EXPECT_EQ(dp, 16);
  EXPECT_EQ(std::fmod(n["--global-batch-size"], n["--micro-batch-size"] * dp),
            0);
  EXPECT_EQ(n["--num-layers"], 80);
  EXPECT_EQ(n["--num-query-groups"], 8);
  EXPECT_NE(text->find("--use-distributed-optimizer"), std::string::npos);
  EXPECT_NE(text->find("--sequence-parallel"), std::string::npos);
  // The habits the estimate assumed: bf16 reductions, the fused loss.
  EXPECT_NE(text->find("--grad-reduce-in-bf16"), std::string::npos);
  EXPECT_NE(text->find("--cross-entropy-loss-fusion"), std::string::npos);
  t.cfg.precision.grad_reduce = hw::Dtype::kFp32;
  t.cfg.habits.unfused_cross_entropy = true;
  text = EmitTraining(TrainEngine::kMegatron, t.model, t.system, t.cfg, t.est);
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(text->find("--grad-reduce-in-bf16"), std::string::npos);
  EXPECT_EQ(text->find("--cross-entropy-loss-fusion"), std::string::npos);
  t.cfg.precision.matmul = hw::Dtype::kFp8;
  t.cfg.precision.fp8_recipe = estimate::Fp8Recipe::kTensorwise;
  text = EmitTraining(TrainEngine::kMegatron, t.model, t.system, t.cfg, t.est);
  ASSERT_TRUE(text.has_value());
  EXPECT_NE(text->find("--fp8-recipe tensorwise"), std::string::npos);
  EXPECT_EQ(text->find("--tp-comm-overlap"), std::string::npos);
  t.cfg.habits.tp_comm_overlap = true;  // --tp-overlap
  text = EmitTraining(TrainEngine::kMegatron, t.model, t.system, t.cfg, t.est);
  ASSERT_TRUE(text.has_value());
  EXPECT_NE(text->find("--tp-comm-overlap"), std::string::npos);
}

TEST(LaunchTest, MegatronMoeLayerPattern) {
  Trained t = Train("deepseek-v3", "h100:8x128", "tp=2,pp=8,ep=64,zero=1",
                    8192 * 4096, 4096);
  auto text =
      EmitTraining(TrainEngine::kMegatron, t.model, t.system, t.cfg, t.est);
  ASSERT_TRUE(text.has_value());
  EXPECT_NE(text->find("--moe-layer-freq \"([0]*3+[1]*58)\""),
            std::string::npos);
  EXPECT_NE(text->find("--multi-latent-attention"), std::string::npos);
  EXPECT_EQ(Numbers(*text)["--expert-model-parallel-size"], 64);
  EXPECT_NE(text->find("--moe-token-dispatcher-type alltoall"),
            std::string::npos);
  EXPECT_EQ(text->find("--overlap-moe-expert-parallel-comm"),
            std::string::npos);
  // The dispatch the estimate assumed: DeepEP, overlapped; Megatron hosts
  // the overlap only with an interleaved schedule when pp > 1.
  t.cfg.habits.ep_dedup = true;
  t.cfg.habits.ep_overlap = true;
  text = EmitTraining(TrainEngine::kMegatron, t.model, t.system, t.cfg, t.est);
  ASSERT_TRUE(text.has_value());
  EXPECT_NE(text->find("--moe-flex-dispatcher-backend deepep"),
            std::string::npos);
  EXPECT_NE(text->find("--overlap-moe-expert-parallel-comm"),
            std::string::npos);
  EXPECT_NE(text->find("interleaved schedule"), std::string::npos);
  // The multi-token-prediction module the estimate trained.
  EXPECT_EQ(Numbers(*text)["--mtp-num-layers"], 1);
  auto maxtext = EmitTraining(TrainEngine::kMaxText, t.model,
                              System("tpu-v5p:8x8x16"), t.cfg, t.est);
  ASSERT_TRUE(maxtext.has_value()) << maxtext.error().ToString();
  EXPECT_EQ(Numbers(*maxtext)["mtp_num_layers"], 1);
  t.cfg.mtp_layers = 0;
  text = EmitTraining(TrainEngine::kMegatron, t.model, t.system, t.cfg, t.est);
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(text->find("--mtp-num-layers"), std::string::npos);
}

TEST(LaunchTest, TorchtitanDegreesMultiplyToChips) {
  Trained t = Train("llama3-8b", "h100:8x4", "fsdp=16,tp=2", 256 * 8192, 8192);
  auto text =
      EmitTraining(TrainEngine::kTorchtitan, t.model, t.system, t.cfg, t.est);
  ASSERT_TRUE(text.has_value());
  auto n = Numbers(*text);
  EXPECT_EQ(n["--parallelism.data_parallel_replicate_degree"] *
                n["--parallelism.data_parallel_shard_degree"] *
                n["--parallelism.tensor_parallel_degree"] *
                n["--parallelism.pipeline_parallel_degree"] *
                n["--parallelism.context_parallel_degree"],
            32);
  EXPECT_EQ(n["--training.global_batch_size"], 256);
  EXPECT_NE(text->find("--model.flavor 8B"), std::string::npos);
}

TEST(LaunchTest, GpuEnginesRefuseTpuSystems) {
  Trained t = Train("llama3-8b", "tpu-v5e:4x4", "fsdp=16", 64 * 4096, 4096);
  auto text =
      EmitTraining(TrainEngine::kMegatron, t.model, t.system, t.cfg, t.est);
  ASSERT_FALSE(text.has_value());
  EXPECT_NE(text.error().message.find("MaxText runs on TPUs"),
            std::string::npos);
  EXPECT_EQ(text.error().where, "engine");
}

TEST(LaunchTest, EngineNamesSuggest) {
  auto e = ParseTrainEngine("megatrom");
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.error().message.find("did you mean 'megatron'"),
            std::string::npos);
  EXPECT_TRUE(ParseServeEngine("SGLang").has_value());
  EXPECT_EQ(ParseServeEngine("trtllm").value(), ServeEngine::kTrtllm);
  EXPECT_EQ(ParseServeEngine("TensorRT-LLM").value(), ServeEngine::kTrtllm);
  auto t = ParseServeEngine("tensorrt");
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.error().message.find("expected vllm, sglang or trtllm"),
            std::string::npos);
}

TEST(LaunchTest, VllmServingFlags) {
  ingest::ImportedModel m = Model("llama3-70b");
  hw::System sys = System("h100:8x2");
  estimate::ServeConfig cfg;
  cfg.tp = 8;
  cfg.dp = 2;
  cfg.batch = 64;
  cfg.prompt = 2048;
  cfg.output = 512;
  cfg.weights = hw::Dtype::kFp8;
  cfg.kv = hw::Dtype::kFp8;
  auto est = estimate::EstimateServing(m.spec, sys, cfg);
  ASSERT_TRUE(est.has_value());
  auto text = EmitServing(ServeEngine::kVllm, m, sys, cfg, *est);
  ASSERT_TRUE(text.has_value());
  auto n = Numbers(*text);
  EXPECT_EQ(n["--tensor-parallel-size"], 8);
  EXPECT_EQ(n["--max-num-seqs"], 64);
  EXPECT_EQ(n["--max-model-len"], 2560);
  EXPECT_NE(text->find("vllm serve meta-llama/Llama-3.1-70B"),
            std::string::npos);
  EXPECT_NE(text->find("--quantization fp8"), std::string::npos);
  EXPECT_NE(text->find("--kv-cache-dtype fp8"), std::string::npos);
  EXPECT_NE(text->find("launch 2 copies"), std::string::npos);
}

// A config.json given by path: the engine loads its directory.
TEST(LaunchTest, LocalConfigLoadsItsDirectory) {
  auto m = ingest::ParseHfConfig(R"({"model_type": "llama", "hidden_size": 4096,
      "intermediate_size": 14336, "num_hidden_layers": 32,
      "num_attention_heads": 32, "num_key_value_heads": 8,
      "vocab_size": 128256, "max_position_embeddings": 131072})",
                                 "/ckpt/my-llama/config.json");
  ASSERT_TRUE(m.has_value()) << m.error().ToString();
  EXPECT_EQ(m->engine_names.hf_repo, "/ckpt/my-llama");
  EXPECT_TRUE(m->engine_names.maxtext_model.empty());
  hw::System sys = System("h100:8x1");
  estimate::ServeConfig cfg;
  cfg.tp = 8;
  cfg.batch = 8;
  auto est = estimate::EstimateServing(m->spec, sys, cfg);
  ASSERT_TRUE(est.has_value());
  auto text = EmitServing(ServeEngine::kVllm, *m, sys, cfg, *est);
  ASSERT_TRUE(text.has_value());
  EXPECT_NE(text->find("vllm serve /ckpt/my-llama "), std::string::npos);
}

estimate::ServeConfig DeepSeekWideEp() {
  estimate::ServeConfig cfg;
  cfg.tp = 1;
  cfg.ep = 16;
  cfg.dp_attention = true;
  cfg.redundant_experts = 32;
  cfg.batch = 256;
  cfg.prompt = 2048;
  cfg.output = 512;
  cfg.weights = hw::Dtype::kFp8;
  cfg.kv = hw::Dtype::kFp8;
  cfg.spec.kind = estimate::SpecDecode::kMtp;
  cfg.spec.k = 2;
  cfg.spec.accept = {0.8};
  return cfg;
}

// trtllm-serve's flags and the YAML its heredoc writes: attention DP, the
// per-rank batch, the load balancer's slots, MTP, the fp8 KV cache.
TEST(LaunchTest, TrtllmServingFlagsAndYaml) {
  ingest::ImportedModel m = Model("deepseek-v3");
  hw::System sys = System("h200:8x2");
  const estimate::ServeConfig cfg = DeepSeekWideEp();
  auto est = estimate::EstimateServing(m.spec, sys, cfg);
  ASSERT_TRUE(est.has_value()) << est.error().ToString();
  auto c = EmitServingChecked("trtllm", m, sys, cfg, *est);
  ASSERT_TRUE(c.has_value()) << c.error().ToString();
  ASSERT_TRUE(c->launchable()) << c->Reason();
  const ParsedLaunch p = ParseLaunchText(c->text);
  EXPECT_EQ(p.flags.at("--backend"), "pytorch");
  EXPECT_EQ(p.flags.at("--tp_size"), "16");
  EXPECT_EQ(p.flags.at("--ep_size"), "16");
  EXPECT_EQ(p.flags.at("--pp_size"), "1");
  EXPECT_EQ(p.flags.at("--max_batch_size"), "16");  // 256 over 16 ranks
  EXPECT_EQ(p.flags.at("--max_seq_len"), "2560");
  // TensorRT-LLM's default KV fraction (0.9) unless the plan states one.
  EXPECT_EQ(p.flags.count("--kv_cache_free_gpu_memory_fraction"), 0U);
  EXPECT_EQ(p.keys.at("enable_attention_dp"), "true");
  EXPECT_EQ(p.keys.at("kv_cache_config.dtype"), "fp8");
  EXPECT_EQ(p.keys.at("moe_config.backend"), "WIDEEP");
  EXPECT_EQ(p.keys.at("moe_config.load_balancer.num_slots"), "288");
  EXPECT_EQ(p.keys.at("speculative_config.decoding_type"), "MTP");
  EXPECT_EQ(p.keys.at("speculative_config.max_draft_len"), "2");
  EXPECT_EQ(p.keys.at("cuda_graph_config.max_batch_size"), "16");
  EXPECT_EQ(p.heredoc_files,
            std::vector<std::string>{"extra_llm_api_options.yaml"});
  // Two hosts: started through trtllm-llmapi-launch under srun/mpirun.
  EXPECT_NE(c->text.find("trtllm-llmapi-launch trtllm-serve"),
            std::string::npos);
}

// What TensorRT-LLM cannot express is refused with one sentence naming the
// engine and the option.
TEST(LaunchTest, TrtllmRefusals) {
  ingest::ImportedModel m = Model("deepseek-v3");
  hw::System sys = System("h200:8x2");
  estimate::ServeConfig cfg = DeepSeekWideEp();
  cfg.tp = 2;
  cfg.ep = 8;
  auto est = estimate::EstimateServing(m.spec, sys, cfg);
  ASSERT_TRUE(est.has_value()) << est.error().ToString();
  auto e = EmitServing(ServeEngine::kTrtllm, m, sys, cfg, *est);
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.error().message.find("TensorRT-LLM's enable_attention_dp"),
            std::string::npos);
  cfg = DeepSeekWideEp();
  cfg.kv = hw::Dtype::kInt8;
  auto est8 = estimate::EstimateServing(m.spec, sys, cfg);
  ASSERT_TRUE(est8.has_value());
  e = EmitServing(ServeEngine::kTrtllm, m, sys, cfg, *est8);
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.error().message.find("kv_cache_config.dtype has no int8"),
            std::string::npos);
  ingest::ImportedModel l = Model("llama3-8b");
  hw::System tpu = System("tpu-v6e:2x4");
  estimate::ServeConfig t;
  t.tp = 8;
  auto et = estimate::EstimateServing(l.spec, tpu, t);
  ASSERT_TRUE(et.has_value());
  e = EmitServing(ServeEngine::kTrtllm, l, tpu, t, *et);
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.error().message.find("TensorRT-LLM runs on NVIDIA GPUs"),
            std::string::npos);
}

DisaggregatedPlan Llama70bPools() {
  DisaggregatedPlan plan;
  plan.prefill.tp = 4;
  plan.prefill.dp = 2;
  plan.decode.tp = 8;
  plan.decode.dp = 1;
  for (estimate::ServeConfig* c : {&plan.prefill, &plan.decode}) {
    c->batch = 128;
    c->prompt = 2048;
    c->output = 256;
  }
  return plan;
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

// Both pools and the router, for every engine: one server per instance
// with its role, port and GPUs, each passing the engine's rules.
TEST(LaunchTest, DisaggregatedBothPoolsAndRouter) {
  ingest::ImportedModel m = Model("llama3-70b");
  hw::System sys = System("h100:8x2");
  const DisaggregatedPlan plan = Llama70bPools();
  for (const char* engine : {"sglang", "vllm", "trtllm"}) {
    SCOPED_TRACE(engine);
    auto parts =
        EmitDisaggregatedParts(*ParseServeEngine(engine), m, sys, plan);
    ASSERT_TRUE(parts.has_value()) << parts.error().ToString();
    ASSERT_EQ(parts->size(), 5u);  // header, 2 prefill, 1 decode, router
    auto c = EmitDisaggregatedChecked(engine, m, sys, plan);
    ASSERT_TRUE(c.has_value());
    ASSERT_TRUE(c->launchable()) << c->Reason();
    EXPECT_NE((*parts)[1].find("8100"), std::string::npos);
    EXPECT_NE((*parts)[2].find("8101"), std::string::npos);
    EXPECT_NE((*parts)[3].find("8200"), std::string::npos);
    for (int i = 1; i <= 3; ++i) {
      EXPECT_NE((*parts)[i].find(" &\n"), std::string::npos);
    }
  }
  const std::string s = *EmitDisaggregated(ServeEngine::kSglang, m, sys, plan);
  EXPECT_EQ(Count(s, "--disaggregation-mode prefill"), 2);
  EXPECT_EQ(Count(s, "--disaggregation-mode decode"), 1);
  EXPECT_EQ(Count(s, "--disaggregation-transfer-backend mooncake"), 3);
  EXPECT_NE(s.find("--base-gpu-id 4"), std::string::npos);
  EXPECT_NE(s.find("--prefill http://${HOST_0}:8101 8999"), std::string::npos);
  EXPECT_NE(s.find("--decode http://${HOST_1}:8200"), std::string::npos);
  EXPECT_NE(s.find("sglang_router.launch_router --pd-disaggregation"),
            std::string::npos);
  const std::string v = *EmitDisaggregated(ServeEngine::kVllm, m, sys, plan);
  EXPECT_EQ(Count(v, R"("kv_connector":"NixlConnector","kv_role":"kv_both")"),
            3);
  EXPECT_NE(v.find("export CUDA_VISIBLE_DEVICES=4,5,6,7"), std::string::npos);
  EXPECT_NE(v.find("--prefiller-ports 8100 8101"), std::string::npos);
  EXPECT_NE(v.find("--decoder-hosts ${HOST_1}"), std::string::npos);
  const std::string t = *EmitDisaggregated(ServeEngine::kTrtllm, m, sys, plan);
  const ParsedLaunch router = ParseLaunchText(t.substr(t.rfind("# disagg")));
  EXPECT_EQ(router.keys.at("context_servers.num_instances"), "2");
  EXPECT_EQ(router.keys.at("generation_servers.num_instances"), "1");
  EXPECT_EQ(router.keys.at("context_servers.urls"),
            "${HOST_0}:8100 ${HOST_0}:8101");
  EXPECT_NE(t.find("trtllm-serve disaggregated -c disagg_config.yaml"),
            std::string::npos);
  EXPECT_EQ(Count(t, "disable_overlap_scheduler: true"), 2);  // ctx only
  EXPECT_EQ(Count(t, "  backend: NIXL"), 3);
}

TEST(LaunchTest, DisaggregatedRefusals) {
  ingest::ImportedModel m = Model("llama3-70b");
  DisaggregatedPlan plan = Llama70bPools();
  auto e = EmitDisaggregated(ServeEngine::kVllm, m, System("h100:8x4"), plan);
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.error().message.find("use 16 chips and h100:8x4 has 32"),
            std::string::npos);
  plan.decode.spec.kind = estimate::SpecDecode::kMtp;
  plan.decode.spec.k = 1;
  e = EmitDisaggregated(ServeEngine::kSglang, m, System("h100:8x2"), plan);
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.error().message.find("SGLang runs --spec mtp"),
            std::string::npos);
}

}  // namespace
}  // namespace scalemodel::launch
