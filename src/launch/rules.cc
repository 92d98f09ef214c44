#include "scalemodel/launch/rules.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>

#include "fmt/format.h"
#include "import_internal.h"
#include "scalemodel/base/strings.h"

namespace scalemodel::launch {
namespace {

// Sources, one per file read (launch-checks.md, section "Method").
constexpr const char* kMgArgs =
    "NVIDIA/Megatron-LM core_v0.19.0 megatron/training/arguments.py";
constexpr const char* kMgTc =
    "NVIDIA/Megatron-LM core_v0.19.0 "
    "megatron/core/transformer/transformer_config.py";
constexpr const char* kMtTypes =
    "AI-Hypercomputer/maxtext e591f30c src/maxtext/configs/types.py";
constexpr const char* kMtUtils =
    "AI-Hypercomputer/maxtext e591f30c src/maxtext/utils/max_utils.py";
constexpr const char* kVllmArgs =
    "vllm-project/vllm 99d7eb5d vllm/engine/arg_utils.py";
constexpr const char* kSglArgs =
    "sgl-project/sglang python/sglang/srt/server_args.py";
// TensorRT-LLM: trtllm-serve's click options (serve.py at 00209af1) and the
// LLM API arguments its --extra_llm_api_options YAML sets (llm_args.py at
// 00043967), the parallel mapping (mapping.py).
constexpr const char* kTrtServe =
    "NVIDIA/TensorRT-LLM 00209af1 tensorrt_llm/commands/serve.py";
constexpr const char* kTrtArgs =
    "NVIDIA/TensorRT-LLM 00043967 tensorrt_llm/llmapi/llm_args.py";
constexpr const char* kTrtMapping =
    "NVIDIA/TensorRT-LLM tensorrt_llm/mapping.py (Mapping.__init__)";

EngineRule R(const char* id, const char* text, std::string source) {
  return {id, text, std::move(source)};
}

std::vector<EngineRule> MegatronRules() {
  const std::string a = kMgArgs, t = kMgTc;
  return {
      R("megatron.world-divisible", "the world size divides by tp x pp x cp",
        a + ":430"),
      R("megatron.heads-tp", "attention heads divide by tp", t + ":1323"),
      R("megatron.groups-tp", "query groups divide by tp", t + ":1339"),
      R("megatron.experts-ep", "experts divide by ep", a + ":1600-1603"),
      R("megatron.layers-pp",
        "without an uneven split or a layout the layers divide by pp, and "
        "the layers per stage by --num-layers-per-virtual-pipeline-stage",
        a + ":935"),
      R("megatron.vpp-uneven",
        "--num-layers-per-virtual-pipeline-stage cannot be combined with "
        "first/last-stage layer counts",
        a + ":922"),
      R("megatron.uneven-split",
        "first/last-stage layer counts divide by vpp and leave the middle "
        "stages an even, vpp-divisible share",
        t + ":1995-2065"),
      R("megatron.layout",
        "--pipeline-model-parallel-layout has pp x vpp stages, one E first, "
        "one L last, every decoder layer once and the MTP layers after them",
        "NVIDIA/Megatron-LM core_v0.19.0 megatron/core/transformer/"
        "pipeline_parallel_layer_layout.py:40,85-111"),
      R("megatron.layout-exclusive",
        "--pipeline-model-parallel-layout excludes the other layer-split "
        "flags",
        t + ":1936-1953"),
      R("megatron.global-batch",
        "the global batch divides by micro batch x data-parallel size",
        "NVIDIA/Megatron-LM core_v0.19.0 "
        "megatron/core/num_microbatches_calculator.py:381"),
      R("megatron.fsdp2-no-pp", "--use-torch-fsdp2 needs pp = 1",
        a + ":1000-1001"),
      R("megatron.fsdp2-no-ep", "--use-torch-fsdp2 needs ep = 1",
        a + ":1002-1003"),
      R("megatron.fsdp2-flags",
        "--use-torch-fsdp2 needs --no-gradient-accumulation-fusion, "
        "--ckpt-format torch_dist or torch_dcp and untied embeddings, and "
        "excludes --use-distributed-optimizer",
        a + ":1004-1011"),
      R("megatron.fsdp2-env",
        "--use-torch-fsdp2 needs CUDA_DEVICE_MAX_CONNECTIONS other than 1",
        a + ":1014-1015"),
      R("megatron.cuda-max-connections",
        "tp > 1 or cp > 1 before Blackwell (without FSDP or EP overlap) "
        "needs CUDA_DEVICE_MAX_CONNECTIONS=1",
        a + ":1413-1439"),
      R("megatron.overlap-param-gather",
        "--overlap-param-gather needs the distributed optimizer and "
        "--overlap-grad-reduce",
        a + ":990-995"),
      R("megatron.tp-comm-overlap-sp",
        "--tp-comm-overlap needs --sequence-parallel", a + ":1401-1402"),
      R("megatron.cp-comm-type",
        "--cp-comm-type is p2p, all_gather, a2a or a2a+p2p (what "
        "TransformerEngine accepts)",
        t + ":991; NVIDIA/TransformerEngine d0067d0d transformer_engine/"
            "pytorch/attention/dot_product_attention/context_parallel.py:"
            "5096-5139"),
      R("megatron.ep-overlap-recompute",
        "--overlap-moe-expert-parallel-comm excludes full recompute, "
        "--recompute-method and --recompute-num-layers",
        t + ":2688-2697"),
      R("megatron.ep-overlap-vpp",
        "--overlap-moe-expert-parallel-comm with pp > 1 needs virtual "
        "pipeline stages, and ep > 1",
        t + ":2674-2682"),
      R("megatron.flex-backend",
        "--moe-flex-dispatcher-backend goes with --moe-token-dispatcher-type "
        "flex",
        t + ":869,1592-1602"),
  };
}

std::vector<EngineRule> MaxTextRules() {
  const std::string t = kMtTypes;
  return {
      R("maxtext.ici-product",
        "the ici_* degrees multiply to the devices per slice (GPU: per host)",
        std::string(kMtUtils) + ":479-482"),
      R("maxtext.dcn-product",
        "the dcn_* degrees multiply to the number of slices (GPU: hosts)",
        std::string(kMtUtils) + ":479-482; " + t + ":4150-4166"),
      R("maxtext.pipeline-layers",
        "stages x num_pipeline_repeats x num_layers_per_pipeline_stage = "
        "pipeline_parallel_layers (default: all decoder layers; DeepSeek: "
        "the MoE layers)",
        t + ":3565-3604"),
      R("maxtext.pipeline-microbatches",
        "num_pipeline_microbatches divides by the pipeline stages",
        t + ":3611-3615"),
      R("maxtext.fp8-no-ga",
        "quantization=fp8 excludes gradient_accumulation_steps > 1",
        t + ":3878-3882"),
      R("maxtext.gpu-hardware",
        "GPU runs set hardware=gpu (the default, tpu, skips GPU distributed "
        "initialization)",
        std::string(kMtUtils) + ":270,433-435; " + t + ":1098"),
      R("maxtext.model",
        "the line names model_name or gives the base_* shape keys", t + ":311"),
  };
}

std::vector<EngineRule> TorchtitanRules(const EngineVersion& v) {
  const bool registry = v.era == "registry";
  const std::string at = "pytorch/torchtitan " + v.commit.substr(0, 8) + " ";
  std::vector<EngineRule> rules = {
      R("torchtitan.world",
        "replicate x shard x cp x tp x pp equals the world size",
        at + "torchtitan/distributed/parallel_dims.py:53"),
      R("torchtitan.pp-stages",
        "with pipeline_parallel_layers_per_stage, ceil((layers + 2) / per "
        "stage) virtual stages divide by pp, with at least 2 per rank for "
        "looped schedules and exactly 1 for single-stage ones",
        at + (registry ? "torchtitan/distributed/pipeline_parallel.py:207-262"
                       : "torchtitan/distributed/pipeline_parallel.py:59-115")),
      R("torchtitan.async-tp-compile",
        "async tensor parallelism needs --compile.enable",
        registry ? at + "torchtitan/config/configs.py:303-313"
                 : at + "torchtitan/distributed/tensor_parallel.py:17-23"),
  };
  if (registry) {
    rules.push_back(R("torchtitan.module-config",
                      "--module and --config are required and name a "
                      "registered config",
                      at + "torchtitan/config/manager.py:83-90"));
    rules.push_back(R("torchtitan.registry-flags",
                      "the TOML-era flags (--model.*, --training.seq_len, "
                      "local/global_batch_size, "
                      "--parallelism.pipeline_parallel_microbatch_size, "
                      "--activation_checkpoint.mode) do not exist",
                      at + "torchtitan/trainer.py:77; torchtitan/config/"
                           "configs.py:36-291"));
  } else {
    rules.push_back(R("torchtitan.model-named",
                      "the line names --model.name and --model.flavor "
                      "(the default is llama3 debugmodel)",
                      at + "torchtitan/config/job_config.py:101-104"));
    rules.push_back(R("torchtitan.float8-name",
                      "the float8 converter is registered as "
                      "quantize.linear.float8",
                      at + "torchtitan/components/quantization/"
                           "float8.py:238"));
    rules.push_back(R("torchtitan.global-batch",
                      "the global batch divides by local batch x "
                      "data-parallel degree",
                      at + "torchtitan/train.py:196-215"));
  }
  return rules;
}

std::vector<EngineRule> VllmRules() {
  const std::string a = kVllmArgs;
  return {
      R("vllm.multinode-dp",
        "data parallelism over more GPUs than one host needs "
        "--data-parallel-size-local (or --data-parallel-backend ray): the "
        "local size defaults to the global one",
        a + " (create_engine_config); vllm-project/vllm 01e4fce0 "
            "docs/serving/data_parallel_deployment.md"),
      R("vllm.local-fits",
        "--data-parallel-size-local x tp fits one host and divides the DP "
        "size",
        "vllm-project/vllm 01e4fce0 docs/serving/"
        "data_parallel_deployment.md"),
      R("vllm.multinode-address", "multi-node DP gives --data-parallel-address",
        "vllm-project/vllm 01e4fce0 docs/serving/"
        "data_parallel_deployment.md"),
      R("vllm.kv-dtype", "--kv-cache-dtype is auto, fp8, fp8_e4m3 or fp8_e5m2",
        "vllm-project/vllm 002f10e0 vllm/config/cache.py (CacheDType)"),
  };
}

std::vector<EngineRule> SglangRules() {
  const std::string a = kSglArgs;
  return {
      R("sglang.tp-dp", "tp divides by dp",
        a + " (_handle_data_parallelism: tp_size % dp_size == 0)"),
      R("sglang.nodes", "tp x pp divides by --nnodes",
        a + " (check_server_args: (tp*pp) % nnodes == 0)"),
      R("sglang.multinode-flags",
        "--nnodes > 1 needs --node-rank and --dist-init-addr",
        a + " (add_cli_args: --dist-init-addr, --node-rank)"),
      R("sglang.multinode-dp",
        "multi-node data parallelism needs --enable-dp-attention",
        a + " (check_server_args)"),
      R("sglang.kv-dtype",
        "--kv-cache-dtype is auto, fp8_e5m2, fp8_e4m3, bf16, bfloat16 or "
        "fp4_e2m1",
        a + " (add_cli_args choices)"),
  };
}

std::vector<EngineRule> TrtllmRules() {
  const std::string a = kTrtArgs;
  return {
      R("trtllm.world",
        "tp_size x pp_size divides the GPUs the servers run on (world size = "
        "tp x pp x cp per instance)",
        std::string(kTrtMapping) + "; " + kTrtServe +
            " (--tp_size, --pp_size)"),
      R("trtllm.moe-ep",
        "--ep_size divides --tp_size (tp_size = moe_tp x moe_ep x "
        "moe_cluster)",
        kTrtMapping),
      R("trtllm.backend", "--backend is pytorch, tensorrt (trt) or _autodeploy",
        std::string(kTrtServe) + " (--backend ChoiceWithAlias)"),
      R("trtllm.extra-options",
        "the YAML that --extra_llm_api_options names is written before the "
        "command (trtllm-serve opens the file)",
        std::string(kTrtServe) + " (serve: yaml.safe_load of the file)"),
      R("trtllm.kv-dtype",
        "kv_cache_config.dtype is auto, fp8, fp8_ds_mla or nvfp4",
        a + " (KvCacheConfig.dtype)"),
      R("trtllm.spec",
        "speculative_config.decoding_type is MTP, Eagle, Eagle3, "
        "Draft_Target or NGram with max_draft_len > 0, and Eagle and "
        "Draft_Target name a speculative_model",
        a + " (MTPDecodingConfig, EagleDecodingConfig, "
            "DraftTargetDecodingConfig, NGramDecodingConfig validators)"),
      R("trtllm.moe-backend",
        "moe_config.backend is AUTO, CUTLASS, CUTEDSL, WIDEEP, TRTLLM, "
        "DEEPGEMM, DENSEGEMM, VANILLA, TRITON, MARLIN or MEGAMOE_DEEPGEMM",
        a + " (MoeConfig.backend)"),
      R("trtllm.lb-slots",
        "moe_config.load_balancer.num_slots divides by the expert-parallel "
        "size (each rank holds num_slots / ep_size slots)",
        a + " (MoeLoadBalancerConfig.num_local_slots)"),
      R("trtllm.cache-transceiver",
        "cache_transceiver_config.backend is DEFAULT, UCX, NIXL, MOONCAKE or "
        "MPI",
        a + " (CacheTransceiverConfig.backend)"),
  };
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

const EngineRule& Find(const std::vector<EngineRule>& rules,
                       std::string_view id) {
  for (const EngineRule& r : rules)
    if (r.id == id) return r;
  static const EngineRule kNone{"unknown", "", ""};
  return kNone;
}

// Collects failures of one engine's rules.
struct Checker {
  std::vector<EngineRule> rules;
  std::vector<RuleFailure> out;
  void Require(bool ok, std::string_view id, std::string found) {
    if (!ok) out.push_back({Find(rules, id), std::move(found)});
  }
};

bool IsSet(const ParsedLaunch& p, const std::string& var, const char* value) {
  auto it = p.env.find(var);
  return it != p.env.end() && it->second == value;
}

// Decoder layers per virtual stage of a layout string, after Megatron's
// parse_str_to_list: "(x)*n" and "x*n" unrolled, commas dropped.
std::vector<std::string> LayoutStages(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), ','), s.end());
  s.erase(std::remove(s.begin(), s.end(), '"'), s.end());
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i + 2 < s.size(); ++i) {
      if (s[i + 1] != '*' ||
          !std::isdigit(static_cast<unsigned char>(s[i + 2])))
        continue;
      size_t j = i + 2;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])))
        ++j;
      const int n = std::atoi(s.substr(i + 2, j - i - 2).c_str());
      std::string unit(1, s[i]);
      size_t start = i;
      if (s[i] == ')') {
        const size_t open = s.rfind('(', i);
        if (open == std::string::npos) return {};
        unit = s.substr(open + 1, i - open - 1);
        start = open;
      }
      std::string rep;
      for (int k = 0; k < n; ++k) rep += unit;
      s = s.substr(0, start) + rep + s.substr(j);
      changed = true;
      break;
    }
  }
  std::vector<std::string> stages;
  std::stringstream ss(s);
  std::string stage;
  while (std::getline(ss, stage, '|')) stages.push_back(stage);
  if (!s.empty() && s.back() == '|') stages.emplace_back();
  return stages;
}

void CheckMegatronLayout(Checker& c, const ParsedLaunch& p, long layers,
                         long pp, long mtp) {
  const std::string layout = p.flags.at("--pipeline-model-parallel-layout");
  c.Require(!p.Has("--decoder-first-pipeline-num-layers") &&
                !p.Has("--decoder-last-pipeline-num-layers") &&
                !p.Has("--num-layers-per-virtual-pipeline-stage"),
            "megatron.layout-exclusive",
            "--pipeline-model-parallel-layout with another layer-split flag");
  const std::vector<std::string> st = LayoutStages(layout);
  std::string flat;
  for (const std::string& s : st) flat += s;
  long t = std::count(flat.begin(), flat.end(), 't');
  long m = std::count(flat.begin(), flat.end(), 'm');
  const bool ok =
      !st.empty() && st.size() % pp == 0 && !flat.empty() &&
      flat.front() == 'E' && flat.back() == 'L' &&
      std::count(flat.begin(), flat.end(), 'E') == 1 &&
      std::count(flat.begin(), flat.end(), 'L') == 1 && t == layers &&
      m == mtp &&
      (m == 0 || flat.find('t', flat.find('m')) == std::string::npos);
  c.Require(ok, "megatron.layout",
            fmt::format("layout {} ({} stages, {} decoder and {} MTP layers) "
                        "for pp {}, {} layers and {} MTP",
                        layout, st.size(), t, m, pp, layers, mtp));
}

void CheckMegatronSplit(Checker& c, const ParsedLaunch& p, long pp) {
  const long layers = p.Int("--num-layers", 0);
  const long mtp = p.Int("--mtp-num-layers", 0);
  if (p.Has("--pipeline-model-parallel-layout")) {
    CheckMegatronLayout(c, p, layers, pp, mtp);
    return;
  }
  const long first = p.Int("--decoder-first-pipeline-num-layers", 0);
  const long last = p.Int("--decoder-last-pipeline-num-layers", 0);
  const long per_vs = p.Int("--num-layers-per-virtual-pipeline-stage", 0);
  const long vpp = p.Int("--num-virtual-stages-per-pipeline-rank", 1);
  if (first > 0 || last > 0) {
    c.Require(per_vs == 0, "megatron.vpp-uneven",
              "--num-layers-per-virtual-pipeline-stage with a first/last "
              "stage count");
    const long mid_layers = layers - first - last;
    const long mid = pp - (first > 0) - (last > 0);
    const bool ok =
        first % vpp == 0 && last % vpp == 0 && (mid_layers > 0) == (mid > 0) &&
        (mid == 0 || (mid_layers % mid == 0 && (mid_layers / mid) % vpp == 0));
    c.Require(ok, "megatron.uneven-split",
              fmt::format("{} layers, first {}, last {}, pp {}, vpp {}", layers,
                          first, last, pp, vpp));
    return;
  }
  const bool ok =
      layers % pp == 0 && (per_vs == 0 || (layers / pp) % per_vs == 0);
  c.Require(
      ok, "megatron.layers-pp",
      fmt::format("{} layers over pp {}{}", layers, pp,
                  per_vs ? fmt::format(" with {} per virtual stage", per_vs)
                         : std::string()));
}

void CheckMegatronFsdp(Checker& c, const ParsedLaunch& p, long pp, long ep) {
  if (!p.Has("--use-torch-fsdp2")) return;
  c.Require(pp == 1, "megatron.fsdp2-no-pp",
            fmt::format("--use-torch-fsdp2 with pp {}", pp));
  c.Require(ep == 1, "megatron.fsdp2-no-ep",
            fmt::format("--use-torch-fsdp2 with ep {}", ep));
  auto ckpt = p.flags.find("--ckpt-format");
  c.Require(p.Has("--no-gradient-accumulation-fusion") &&
                ckpt != p.flags.end() &&
                (ckpt->second == "torch_dist" || ckpt->second == "torch_dcp") &&
                p.Has("--untie-embeddings-and-output-weights") &&
                !p.Has("--use-distributed-optimizer"),
            "megatron.fsdp2-flags", "--use-torch-fsdp2 without its companions");
  c.Require(!IsSet(p, "CUDA_DEVICE_MAX_CONNECTIONS", "1"), "megatron.fsdp2-env",
            "--use-torch-fsdp2 with CUDA_DEVICE_MAX_CONNECTIONS=1");
}

void CheckMegatronMoe(Checker& c, const ParsedLaunch& p, long pp, long ep) {
  if (p.Has("--num-experts")) {
    c.Require(
        p.Int("--num-experts", 1) % ep == 0, "megatron.experts-ep",
        fmt::format("{} experts over ep {}", p.Int("--num-experts", 1), ep));
  }
  if (p.Has("--moe-flex-dispatcher-backend")) {
    auto it = p.flags.find("--moe-token-dispatcher-type");
    c.Require(it != p.flags.end() && it->second == "flex",
              "megatron.flex-backend",
              "--moe-flex-dispatcher-backend without the flex dispatcher");
  }
  if (!p.Has("--overlap-moe-expert-parallel-comm")) return;
  auto gran = p.flags.find("--recompute-granularity");
  c.Require((gran == p.flags.end() || gran->second != "full") &&
                !p.Has("--recompute-method") &&
                !p.Has("--recompute-num-layers"),
            "megatron.ep-overlap-recompute",
            "--overlap-moe-expert-parallel-comm with full recompute");
  const bool vpp =
      p.Has("--pipeline-model-parallel-layout")
          ? LayoutStages(p.flags.at("--pipeline-model-parallel-layout"))
                    .size() > static_cast<size_t>(pp)
          : p.Has("--num-layers-per-virtual-pipeline-stage") ||
                p.Has("--num-virtual-stages-per-pipeline-rank");
  c.Require(ep > 1 && (pp == 1 || vpp), "megatron.ep-overlap-vpp",
            fmt::format("--overlap-moe-expert-parallel-comm with pp {}, ep {} "
                        "and {} virtual stages",
                        pp, ep, vpp ? "" : "no"));
}

std::vector<RuleFailure> ValidateMegatron(const ParsedLaunch& p,
                                          const LaunchContext& ctx) {
  Checker c{MegatronRules(), {}};
  const long tp = p.Int("--tensor-model-parallel-size", 1);
  const long pp = p.Int("--pipeline-model-parallel-size", 1);
  const long cp = p.Int("--context-parallel-size", 1);
  const long ep = p.Int("--expert-model-parallel-size", 1);
  const long world = ctx.chips;
  c.Require(
      world % (tp * pp * cp) == 0, "megatron.world-divisible",
      fmt::format("{} GPUs over tp {} x pp {} x cp {}", world, tp, pp, cp));
  const long heads = p.Int("--num-attention-heads", 1);
  c.Require(heads % tp == 0, "megatron.heads-tp",
            fmt::format("{} heads over tp {}", heads, tp));
  if (p.Has("--group-query-attention")) {
    const long g = p.Int("--num-query-groups", 1);
    c.Require(g % tp == 0, "megatron.groups-tp",
              fmt::format("{} query groups over tp {}", g, tp));
  }
  if (pp > 1) CheckMegatronSplit(c, p, pp);
  const long dp = world / std::max(1L, tp * pp * cp);
  const long mbs = p.Int("--micro-batch-size", 1),
             gbs = p.Int("--global-batch-size", mbs * dp);
  c.Require(
      gbs % (mbs * dp) == 0, "megatron.global-batch",
      fmt::format("global batch {} over micro batch {} x dp {}", gbs, mbs, dp));
  CheckMegatronFsdp(c, p, pp, ep);
  if ((tp > 1 || cp > 1) && ctx.cuda_arch < 10 && !p.Has("--use-torch-fsdp2") &&
      !p.Has("--overlap-moe-expert-parallel-comm")) {
    c.Require(IsSet(p, "CUDA_DEVICE_MAX_CONNECTIONS", "1"),
              "megatron.cuda-max-connections",
              fmt::format("tp {} / cp {} on sm_{}0 without "
                          "CUDA_DEVICE_MAX_CONNECTIONS=1",
                          tp, cp, ctx.cuda_arch));
  }
  if (p.Has("--overlap-param-gather")) {
    c.Require(
        p.Has("--use-distributed-optimizer") && p.Has("--overlap-grad-reduce"),
        "megatron.overlap-param-gather",
        "--overlap-param-gather without its companions");
  }
  if (p.Has("--tp-comm-overlap")) {
    c.Require(p.Has("--sequence-parallel"), "megatron.tp-comm-overlap-sp",
              "--tp-comm-overlap without --sequence-parallel");
  }
  if (auto it = p.flags.find("--cp-comm-type"); it != p.flags.end()) {
    const std::string& v = it->second;
    c.Require(v == "p2p" || v == "all_gather" || v == "a2a" || v == "a2a+p2p",
              "megatron.cp-comm-type", "--cp-comm-type " + v);
  }
  CheckMegatronMoe(c, p, pp, ep);
  return c.out;
}

long KeySum(const ParsedLaunch& p, const char* prefix, long* product) {
  long prod = 1;
  for (const auto& [k, v] : p.keys) {
    if (k.rfind(prefix, 0) == 0 && k.size() > 12 &&
        k.compare(k.size() - 12, 12, "_parallelism") == 0) {
      prod *= std::max(1L, std::atol(v.c_str()));
    }
  }
  *product = prod;
  return prod;
}

std::vector<RuleFailure> ValidateMaxText(const ParsedLaunch& p,
                                         const LaunchContext& ctx) {
  Checker c{MaxTextRules(), {}};
  long ici = 1, dcn = 1;
  KeySum(p, "ici_", &ici);
  KeySum(p, "dcn_", &dcn);
  const long per_slice = ctx.chips / std::max(1, ctx.slices);
  c.Require(
      ici == per_slice, "maxtext.ici-product",
      fmt::format("ici product {} on {} devices per slice", ici, per_slice));
  c.Require(dcn == ctx.slices, "maxtext.dcn-product",
            fmt::format("dcn product {} over {} slices", dcn, ctx.slices));
  const long stages = p.Int("ici_pipeline_parallelism", 1) *
                      p.Int("dcn_pipeline_parallelism", 1);
  if (stages > 1) {
    const model::ModelSpec& m = ctx.model;
    const long pipelinable = m.mla && m.moe.first_dense_layers > 0
                                 ? m.num_layers - m.moe.first_dense_layers
                                 : m.num_layers;
    const long layers = p.Int("pipeline_parallel_layers", pipelinable);
    const long lps = p.Int("num_layers_per_pipeline_stage", 1);
    const long repeats =
        p.Int("num_pipeline_repeats",
              layers % (stages * lps) == 0 ? layers / (stages * lps) : -1);
    c.Require(layers <= pipelinable && stages * repeats * lps == layers,
              "maxtext.pipeline-layers",
              fmt::format("{} stages x {} repeats x {} layers per stage for "
                          "{} pipelined layers (of {})",
                          stages, repeats, lps, layers, pipelinable));
    const long micro = p.Int("num_pipeline_microbatches", stages);
    c.Require(micro > 0 && micro % stages == 0, "maxtext.pipeline-microbatches",
              fmt::format("{} microbatches for {} stages", micro, stages));
  }
  auto q = p.keys.find("quantization");
  if (q != p.keys.end() && q->second.find("fp8") != std::string::npos) {
    c.Require(p.Int("gradient_accumulation_steps", 1) <= 1, "maxtext.fp8-no-ga",
              fmt::format("quantization={} with gradient_accumulation_steps={}",
                          q->second, p.Int("gradient_accumulation_steps", 1)));
  }
  if (ctx.gpu) {
    auto hw = p.keys.find("hardware");
    c.Require(hw != p.keys.end() && hw->second.rfind("gpu", 0) == 0,
              "maxtext.gpu-hardware", "a GPU system without hardware=gpu");
  }
  c.Require(p.keys.count("model_name") || p.keys.count("base_emb_dim"),
            "maxtext.model", "no model_name and no base_* shape");
  return c.out;
}

long FlagOrKey(const ParsedLaunch& p, const std::string& name, long fb) {
  return p.Int(name, fb);
}

std::vector<RuleFailure> ValidateTorchtitan(const EngineVersion& v,
                                            const ParsedLaunch& p,
                                            const LaunchContext& ctx) {
  Checker c{TorchtitanRules(v), {}};
  const bool registry = v.era == "registry";
  const long rep =
      FlagOrKey(p, "--parallelism.data_parallel_replicate_degree", 1);
  const long shard =
      FlagOrKey(p, "--parallelism.data_parallel_shard_degree", -1);
  const long tp = FlagOrKey(p, "--parallelism.tensor_parallel_degree", 1);
  const long pp = FlagOrKey(p, "--parallelism.pipeline_parallel_degree", 1);
  const long cp = FlagOrKey(p, "--parallelism.context_parallel_degree", 1);
  const long rest = rep * tp * pp * cp;
  const long sh = shard > 0 ? shard : ctx.chips / std::max(1L, rest);
  c.Require(rest * sh == ctx.chips, "torchtitan.world",
            fmt::format("{} x {} x {} x {} x {} for {} GPUs", rep, sh, cp, tp,
                        pp, ctx.chips));
  if (const long per =
          p.Int("--parallelism.pipeline_parallel_layers_per_stage", 0);
      per > 0 && pp > 1) {
    const long stages = (ctx.model.num_layers + 2 + per - 1) / per;
    auto sched = p.flags.find("--parallelism.pipeline_parallel_schedule");
    const bool looped =
        sched != p.flags.end() &&
        (sched->second == "Interleaved1F1B" ||
         sched->second == "InterleavedZeroBubble" ||
         sched->second == "ZBVZeroBubble" || sched->second == "DualPipeV");
    const bool ok =
        stages % pp == 0 && (looped ? stages / pp >= 2 : stages / pp == 1);
    c.Require(ok, "torchtitan.pp-stages",
              fmt::format("{} layers at {} per stage give {} virtual stages "
                          "over pp {}",
                          ctx.model.num_layers, per, stages, pp));
  }
  const bool async_tp = p.Has("--parallelism.enable_async_tensor_parallel") ||
                        p.Has("--compile.enable_async_tensor_parallel");
  if (async_tp) {
    c.Require(p.Has("--compile.enable"), "torchtitan.async-tp-compile",
              "async TP without --compile.enable");
  }
  if (registry) {
    // Configs registered at b5bcd76c (models/{llama3,deepseek_v3,qwen3}/
    // config_registry.py), the full-size ones.
    static const char* kConfigs[] = {"llama3_8b",
                                     "llama3_70b",
                                     "llama3_405b",
                                     "llama3_8b_mxfp8",
                                     "deepseek_v3_16b",
                                     "deepseek_v3_671b",
                                     "deepseek_v3_671b_float8",
                                     "qwen3_0_6b",
                                     "qwen3_1_7b",
                                     "qwen3_14b",
                                     "qwen3_30b_a3b",
                                     "qwen3_32b"};
    auto cfg = p.flags.find("--config");
    bool known = false;
    for (const char* k : kConfigs)
      known = known || (cfg != p.flags.end() && cfg->second == k);
    c.Require(p.Has("--module") && known, "torchtitan.module-config",
              cfg == p.flags.end()
                  ? std::string("no --module/--config")
                  : "--config " + cfg->second + " is not registered");
    bool toml = false;
    for (const char* f :
         {"--model.name", "--model.flavor", "--model.converters",
          "--training.seq_len", "--training.local_batch_size",
          "--training.global_batch_size",
          "--parallelism.pipeline_parallel_microbatch_size",
          "--parallelism.enable_async_tensor_parallel",
          "--activation_checkpoint.mode"}) {
      toml = toml || p.Has(f);
    }
    c.Require(!toml, "torchtitan.registry-flags",
              "TOML-era flags on the config-registry trainer");
    return c.out;
  }
  c.Require(p.Has("--model.name") && p.Has("--model.flavor"),
            "torchtitan.model-named", "no --model.name/--model.flavor");
  if (auto it = p.flags.find("--model.converters"); it != p.flags.end()) {
    c.Require(
        it->second.find("float8") == std::string::npos ||
            it->second.find("quantize.linear.float8") != std::string::npos,
        "torchtitan.float8-name", "--model.converters " + it->second);
  }
  const long lbs = p.Int("--training.local_batch_size", 8);
  const long gbs = p.Int("--training.global_batch_size", -1);
  const long batch_degree = rep * sh;
  c.Require(gbs < 0 || gbs % (lbs * batch_degree) == 0,
            "torchtitan.global-batch",
            fmt::format("global batch {} over local batch {} x dp {}", gbs, lbs,
                        batch_degree));
  return c.out;
}

std::vector<RuleFailure> ValidateVllm(const ParsedLaunch& p,
                                      const LaunchContext& ctx) {
  Checker c{VllmRules(), {}};
  const long tp = p.Int("--tensor-parallel-size", 1);
  const long dp = p.Int("--data-parallel-size", 1);
  auto backend = p.flags.find("--data-parallel-backend");
  const bool ray = backend != p.flags.end() && backend->second == "ray";
  if (tp * dp > ctx.chips_per_host && dp > 1 && !ray) {
    c.Require(p.Has("--data-parallel-size-local"), "vllm.multinode-dp",
              fmt::format("dp {} x tp {} over hosts of {} GPUs with no "
                          "--data-parallel-size-local",
                          dp, tp, ctx.chips_per_host));
    c.Require(p.Has("--data-parallel-address"), "vllm.multinode-address",
              "multi-node DP without --data-parallel-address");
  }
  if (p.Has("--data-parallel-size-local")) {
    const long local = p.Int("--data-parallel-size-local", 1);
    c.Require(local * tp <= ctx.chips_per_host && local > 0 && dp % local == 0,
              "vllm.local-fits",
              fmt::format("local DP {} x tp {} on {} GPUs per host (dp {})",
                          local, tp, ctx.chips_per_host, dp));
  }
  if (auto it = p.flags.find("--kv-cache-dtype"); it != p.flags.end()) {
    const std::string& k = it->second;
    c.Require(k == "auto" || k == "fp8" || k == "fp8_e4m3" || k == "fp8_e5m2",
              "vllm.kv-dtype", "--kv-cache-dtype " + k);
  }
  return c.out;
}

std::vector<RuleFailure> ValidateSglang(const ParsedLaunch& p,
                                        const LaunchContext&) {
  Checker c{SglangRules(), {}};
  const long tp = p.Int("--tp-size", 1), dp = p.Int("--dp-size", 1);
  const long nnodes = p.Int("--nnodes", 1), ppsz = p.Int("--pp-size", 1);
  c.Require(tp % dp == 0, "sglang.tp-dp",
            fmt::format("tp {} over dp {}", tp, dp));
  c.Require((tp * ppsz) % nnodes == 0, "sglang.nodes",
            fmt::format("tp {} x pp {} over {} nodes", tp, ppsz, nnodes));
  if (nnodes > 1) {
    c.Require(p.Has("--node-rank") && p.Has("--dist-init-addr"),
              "sglang.multinode-flags",
              fmt::format("--nnodes {} without --node-rank/--dist-init-addr",
                          nnodes));
    c.Require(dp == 1 || p.Has("--enable-dp-attention"), "sglang.multinode-dp",
              "multi-node dp without --enable-dp-attention");
  }
  if (auto it = p.flags.find("--kv-cache-dtype"); it != p.flags.end()) {
    const std::string& k = it->second;
    c.Require(k == "auto" || k == "fp8_e5m2" || k == "fp8_e4m3" ||
                  k == "bf16" || k == "bfloat16" || k == "fp4_e2m1",
              "sglang.kv-dtype", "--kv-cache-dtype " + k);
  }
  return c.out;
}

// One of `allowed`, or absent.
bool OneOf(const ParsedLaunch& p, const std::string& key,
           std::initializer_list<const char*> allowed) {
  auto it = p.keys.find(key);
  if (it == p.keys.end()) return true;
  for (const char* a : allowed)
    if (it->second == a) return true;
  return false;
}

std::string KeyOr(const ParsedLaunch& p, const std::string& key) {
  auto it = p.keys.find(key);
  return it == p.keys.end() ? std::string() : it->second;
}

void CheckTrtllmYaml(Checker& c, const ParsedLaunch& p, long ep) {
  c.Require(
      OneOf(p, "kv_cache_config.dtype", {"auto", "fp8", "fp8_ds_mla", "nvfp4"}),
      "trtllm.kv-dtype",
      "kv_cache_config.dtype " + KeyOr(p, "kv_cache_config.dtype"));
  if (p.keys.count("speculative_config.decoding_type") > 0) {
    const std::string t = KeyOr(p, "speculative_config.decoding_type");
    const bool known = t == "MTP" || t == "Eagle" || t == "Eagle3" ||
                       t == "Draft_Target" || t == "NGram";
    const bool model = t != "Eagle" && t != "Eagle3" && t != "Draft_Target"
                           ? true
                           : p.keys.count(
                                 "speculative_config."
                                 "speculative_model") > 0;
    c.Require(
        known && p.Int("speculative_config.max_draft_len", 0) > 0 && model,
        "trtllm.spec",
        fmt::format("decoding_type {}, max_draft_len {}{}", t,
                    KeyOr(p, "speculative_config.max_draft_len"),
                    model ? "" : ", no speculative_model"));
  }
  c.Require(
      OneOf(p, "moe_config.backend",
            {"AUTO", "CUTLASS", "CUTEDSL", "WIDEEP", "TRTLLM", "DEEPGEMM",
             "DENSEGEMM", "VANILLA", "TRITON", "MARLIN", "MEGAMOE_DEEPGEMM"}),
      "trtllm.moe-backend",
      "moe_config.backend " + KeyOr(p, "moe_config.backend"));
  if (const long slots = p.Int("moe_config.load_balancer.num_slots", 0);
      slots > 0) {
    c.Require(slots % std::max(1L, ep) == 0, "trtllm.lb-slots",
              fmt::format("{} slots over ep {}", slots, ep));
  }
  c.Require(OneOf(p, "cache_transceiver_config.backend",
                  {"DEFAULT", "UCX", "NIXL", "MOONCAKE", "MPI"}),
            "trtllm.cache-transceiver",
            "cache_transceiver_config.backend " +
                KeyOr(p, "cache_transceiver_config.backend"));
}

std::vector<RuleFailure> ValidateTrtllm(const ParsedLaunch& p,
                                        const LaunchContext& ctx) {
  Checker c{TrtllmRules(), {}};
  const long tp = p.Int("--tp_size", p.Int("--tensor_parallel_size", 1));
  const long pp = p.Int("--pp_size", p.Int("--pipeline_parallel_size", 1));
  const long ep = p.Int("--ep_size", p.Int("--moe_expert_parallel_size", 1));
  c.Require(tp > 0 && pp > 0 && ctx.chips % (tp * pp) == 0, "trtllm.world",
            fmt::format("tp {} x pp {} on {} GPUs", tp, pp, ctx.chips));
  c.Require(ep > 0 && tp % ep == 0, "trtllm.moe-ep",
            fmt::format("ep {} with tp {}", ep, tp));
  if (auto b = p.flags.find("--backend"); b != p.flags.end()) {
    const std::string& v = b->second;
    c.Require(
        v == "pytorch" || v == "tensorrt" || v == "trt" || v == "_autodeploy",
        "trtllm.backend", "--backend " + v);
  }
  for (const char* f : {"--extra_llm_api_options", "--config"}) {
    if (!p.Has(f)) continue;
    const std::string& file = p.flags.at(f);
    c.Require(std::find(p.heredoc_files.begin(), p.heredoc_files.end(), file) !=
                  p.heredoc_files.end(),
              "trtllm.extra-options",
              std::string(f) + " " + file + " with no heredoc writing it");
  }
  CheckTrtllmYaml(c, p, ep);
  return c.out;
}

}  // namespace

std::string_view EngineId(Engine engine) {
  switch (engine) {
    case Engine::kMegatron:
      return "megatron";
    case Engine::kMaxText:
      return "maxtext";
    case Engine::kTorchtitan:
      return "torchtitan";
    case Engine::kVllm:
      return "vllm";
    case Engine::kSglang:
      return "sglang";
    case Engine::kTrtllm:
      return "trtllm";
  }
  return "megatron";
}

const std::vector<EngineVersion>& KnownVersions(Engine engine) {
  // Commits read for the rules (launch-checks.md, "Method and versions";
  // the Megatron-LM and torchtitan release tags from their repositories).
  static const std::vector<EngineVersion> kMegatron = {
      {Engine::kMegatron, "core_v0.19", "5be9626709", "2026-08-19", ""},
      {Engine::kMegatron, "main", "d98e8a64dd", "2026-08-22", ""}};
  static const std::vector<EngineVersion> kMaxText = {
      {Engine::kMaxText, "main-2026-08", "e591f30cbb", "2026-08-22", ""}};
  static const std::vector<EngineVersion> kTorchtitan = {
      {Engine::kTorchtitan, "0.2", "v0.2.2", "2026-02-20", "toml"},
      {Engine::kTorchtitan, "main", "b5bcd76c66", "2026-08-21", "registry"}};
  static const std::vector<EngineVersion> kVllm = {
      {Engine::kVllm, "main-2026-08", "99d7eb5d", "2026-08", ""}};
  static const std::vector<EngineVersion> kSglang = {
      {Engine::kSglang, "main-2026-08", "0a6356ae", "2026-08", ""}};
  // The stored llm_args.py read for the rules (its commit; serve.py was
  // read at 00209af1); the commit dates were not available.
  static const std::vector<EngineVersion> kTrtllm = {
      {Engine::kTrtllm, "main", "00043967", "undated", ""}};
  switch (engine) {
    case Engine::kMegatron:
      return kMegatron;
    case Engine::kMaxText:
      return kMaxText;
    case Engine::kTorchtitan:
      return kTorchtitan;
    case Engine::kVllm:
      return kVllm;
    case Engine::kSglang:
      return kSglang;
    case Engine::kTrtllm:
      return kTrtllm;
  }
  return kMegatron;
}

Result<EngineVersion> ParseEngineVersion(std::string_view text) {
  const std::string t = ToLower(Trim(text));
  const size_t at = t.find('@');
  const std::string name = t.substr(0, at);
  static const std::vector<std::pair<std::string, Engine>> kNames = {
      {"megatron", Engine::kMegatron}, {"megatron-lm", Engine::kMegatron},
      {"maxtext", Engine::kMaxText},   {"torchtitan", Engine::kTorchtitan},
      {"vllm", Engine::kVllm},         {"sglang", Engine::kSglang},
      {"trtllm", Engine::kTrtllm},     {"tensorrt-llm", Engine::kTrtllm}};
  const Engine* engine = nullptr;
  for (const auto& [n, e] : kNames)
    if (n == name) engine = &e;
  if (!engine) {
    return InvalidArgument(
        "unknown engine '" + name +
            "'; expected maxtext, megatron, torchtitan, vllm, sglang or "
            "trtllm",
        "--emit");
  }
  const auto& versions = KnownVersions(*engine);
  if (at == std::string::npos) return versions.front();
  const std::string ver = t.substr(at + 1);
  std::vector<std::string> names;
  for (const EngineVersion& v : versions) {
    if (ToLower(v.name) == ver) return v;
    names.push_back(v.name);
  }
  return InvalidArgument(
      fmt::format("unknown {} version '{}': the rules are known for {} "
                  "(default {})",
                  EngineId(*engine), ver, JoinNames(names), names.front()),
      "--emit");
}

std::vector<EngineRule> RulesOf(const EngineVersion& version) {
  switch (version.engine) {
    case Engine::kMegatron:
      return MegatronRules();
    case Engine::kMaxText:
      return MaxTextRules();
    case Engine::kTorchtitan:
      return TorchtitanRules(version);
    case Engine::kVllm:
      return VllmRules();
    case Engine::kSglang:
      return SglangRules();
    case Engine::kTrtllm:
      return TrtllmRules();
  }
  return {};
}

std::string RuleFailure::Sentence() const {
  return fmt::format("rule {} fails: {}; the engine requires that {} ({})",
                     rule.id, found, rule.text, rule.source);
}

long ParsedLaunch::Int(const std::string& name, long fallback) const {
  auto it = flags.find(name);
  if (it == flags.end()) it = keys.find(name);
  if (it == keys.end() || it->second.empty()) return fallback;
  char* end = nullptr;
  const long v = std::strtol(it->second.c_str(), &end, 10);
  return end && *end == '\0' ? v : fallback;
}

namespace {

// Words as a shell splits them: whitespace outside quotes separates, and
// '...' or "..." quotes (removed) keep a JSON value such as vLLM's
// --speculative-config '{"method": "mtp"}' one word.
std::vector<std::string> ShellWords(const std::string& text) {
  std::vector<std::string> out;
  std::string w;
  bool in_word = false;
  char quote = 0;
  for (const char ch : text) {
    if (quote != 0) {
      if (ch == quote) {
        quote = 0;
      } else {
        w += ch;
      }
    } else if (ch == '\'' || ch == '"') {
      quote = ch;
      in_word = true;
    } else if (std::isspace(static_cast<unsigned char>(ch)) != 0) {
      if (in_word) out.push_back(w);
      w.clear();
      in_word = false;
    } else {
      w += ch;
      in_word = true;
    }
  }
  if (in_word) out.push_back(w);
  return out;
}

// The file a `cat > FILE <<'EOF'` line writes ("" when none).
std::string HeredocFile(const std::string& line) {
  const size_t gt = line.find('>');
  if (gt == std::string::npos) return "";
  std::vector<std::string> w = ShellWords(line.substr(gt + 1));
  return w.empty() || w[0].rfind("<<", 0) == 0 ? "" : w[0];
}

// The heredoc's lines (up to its terminator) as flattened YAML keys: the
// indentation gives the parent keys, "- item" appends to the last key.
void ReadHeredoc(const std::string& first, size_t at, std::stringstream& lines,
                 ParsedLaunch& p) {
  std::string tag(Trim(first.substr(at + 2)));
  tag.erase(std::remove(tag.begin(), tag.end(), '\''), tag.end());
  tag.erase(std::remove(tag.begin(), tag.end(), '"'), tag.end());
  if (const std::string f = HeredocFile(first.substr(0, at)); !f.empty()) {
    p.heredoc_files.push_back(f);
  }
  std::vector<std::pair<size_t, std::string>> parents;  // indent, key
  std::string last, line;
  while (std::getline(lines, line)) {
    if (Trim(line) == tag) return;
    const std::string t(Trim(line));
    if (t.empty() || t[0] == '#') continue;
    const size_t indent = line.find_first_not_of(' ');
    if (t.rfind("- ", 0) == 0) {
      std::string& v = p.keys[last];
      std::string item(Trim(t.substr(2)));
      item.erase(std::remove(item.begin(), item.end(), '"'), item.end());
      v += v.empty() ? item : " " + item;
      continue;
    }
    const size_t colon = t.find(':');
    if (colon == std::string::npos) continue;
    while (!parents.empty() && parents.back().first >= indent) {
      parents.pop_back();
    }
    std::string key;
    for (const auto& pk : parents) key += pk.second + ".";
    key += std::string(Trim(t.substr(0, colon)));
    std::string value(Trim(t.substr(colon + 1)));
    value.erase(std::remove(value.begin(), value.end(), '"'), value.end());
    // A parent ("moe_config:") is a prefix, not a key of its own.
    if (value.empty()) {
      parents.emplace_back(indent, t.substr(0, colon));
    } else {
      p.keys[key] = value;
    }
    last = key;
  }
}

}  // namespace

ParsedLaunch ParseLaunchText(std::string_view text) {
  ParsedLaunch p;
  std::string joined;
  std::stringstream lines{std::string(text)};
  std::string line;
  while (std::getline(lines, line)) {
    const std::string t(Trim(line));
    if (t.empty() || t[0] == '#') continue;
    if (const size_t here = t.find("<<"); here != std::string::npos) {
      ReadHeredoc(t, here, lines, p);
      continue;
    }
    if (t.rfind("export ", 0) == 0) {
      const std::string kv(Trim(t.substr(7)));
      const size_t eq = kv.find('=');
      if (eq != std::string::npos) p.env[kv.substr(0, eq)] = kv.substr(eq + 1);
      continue;
    }
    if (t.rfind("unset ", 0) == 0) {
      p.env[std::string(Trim(t.substr(6)))] = "<unset>";
      continue;
    }
    joined += (!t.empty() && t.back() == '\\') ? t.substr(0, t.size() - 1) : t;
    joined += ' ';
  }
  std::string flag;
  for (const std::string& w : ShellWords(joined)) {
    if (w.rfind("--", 0) == 0) {
      const size_t eq = w.find('=');
      if (eq != std::string::npos) {
        p.flags[w.substr(0, eq)] = w.substr(eq + 1);
        flag.clear();
      } else {
        flag = w;
        p.flags[flag] = "";
      }
    } else if (!flag.empty()) {
      std::string& v = p.flags[flag];
      v += v.empty() ? w : " " + w;
    } else if (const size_t eq = w.find('=');
               eq != std::string::npos && eq > 0 && w[0] != '-') {
      p.keys[w.substr(0, eq)] = w.substr(eq + 1);
    } else {
      p.words.push_back(w);
    }
    // A value ends a flag with one value; nargs=+ values follow it.
    if (w.rfind("--", 0) != 0 && !flag.empty() &&
        flag != "--recompute-modules") {
      flag.clear();
    }
  }
  return p;
}

int GpusPerHost(const hw::System& sys) {
  int domain = sys.chip.nvlink ? sys.chip.nvlink->domain_size : 8;
  int per = domain > 8 ? 4 : domain;
  per = std::max(1, std::min(per, sys.num_chips()));
  while (sys.num_chips() % per != 0) --per;
  return per;
}

LaunchContext ContextFor(const model::ModelSpec& model,
                         const hw::System& system) {
  LaunchContext c;
  c.model = model;
  c.chips = system.num_chips();
  c.gpu = !system.chip.is_tpu();
  if (c.gpu) {
    c.chips_per_host = GpusPerHost(system);
    // MaxText on GPUs: ici_* inside the NVLink domain, dcn_* across them.
    int domain = system.chip.nvlink ? system.chip.nvlink->domain_size : 8;
    domain = std::max(1, std::min(domain, c.chips));
    c.slices = c.chips % domain == 0 ? c.chips / domain : 1;
    // CUDA compute capability by generation (developer.nvidia.com/cuda-gpus):
    // A100 8.0, H100/H200 9.0, B200/GB200/B300 10.x.
    const std::string& id = system.chip.id;
    c.cuda_arch = (id.rfind('b', 0) == 0 || id.rfind("gb", 0) == 0) ? 10
                  : id.rfind('a', 0) == 0                           ? 8
                                                                    : 9;
  } else {
    c.cuda_arch = 0;
    for (const hw::PhysicalAxis& a : system.axes) {
      if (a.kind == hw::AxisKind::kDcn) c.slices *= std::max(1, a.size);
    }
    c.chips_per_host = c.chips / c.slices;
  }
  return c;
}

std::vector<RuleFailure> ValidateLaunch(const EngineVersion& version,
                                        std::string_view text,
                                        const LaunchContext& ctx) {
  const ParsedLaunch p = ParseLaunchText(text);
  switch (version.engine) {
    case Engine::kMegatron:
      return ValidateMegatron(p, ctx);
    case Engine::kMaxText:
      return ValidateMaxText(p, ctx);
    case Engine::kTorchtitan:
      return ValidateTorchtitan(version, p, ctx);
    case Engine::kVllm:
      return ValidateVllm(p, ctx);
    case Engine::kSglang:
      return ValidateSglang(p, ctx);
    case Engine::kTrtllm:
      return ValidateTrtllm(p, ctx);
  }
  return {};
}

namespace internal {

// For the importers (import_internal.h).
std::vector<std::string> LayoutStages(std::string s) {
  return launch::LayoutStages(std::move(s));
}

}  // namespace internal

}  // namespace scalemodel::launch
