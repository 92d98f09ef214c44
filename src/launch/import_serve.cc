// vLLM and SGLang server arguments -> model, serving plan, batch. Names and
// defaults: vllm-project/vllm vllm/engine/arg_utils.py (EngineArgs
// add_cli_args: -tp/-pp/-dp, --enable-expert-parallel, --max-num-seqs,
// --max-num-batched-tokens, --max-model-len, --quantization,
// --kv-cache-dtype; get_batch_defaults: max_num_seqs 1024 on GPUs with
// >= 70 GiB other than A100, else 256) at 99d7eb5d as docs/launch.md cites
// it; sgl-project/sglang python/sglang/srt/server_args.py (--model-path,
// --tp-size/--tp, --dp-size/--dp, --ep-size/--ep, --enable-dp-attention,
// --max-running-requests, --chunked-prefill-size, --context-length,
// --quantization, --kv-cache-dtype). Speculative decoding: vLLM
// --speculative-config JSON (vllm/config/speculative.py SpeculativeConfig:
// method, model, num_speculative_tokens), SGLang --speculative-algorithm,
// --speculative-num-steps, --speculative-num-draft-tokens,
// --speculative-draft-model-path; redundant experts: vLLM --eplb-config
// (vllm/config/parallel.py EPLBConfig num_redundant_experts) or the older
// --num-redundant-experts, SGLang --ep-num-redundant-experts.
// TensorRT-LLM: trtllm-serve's flags (NVIDIA/TensorRT-LLM
// tensorrt_llm/commands/serve.py: --tp_size, --pp_size, --ep_size,
// --max_batch_size, --max_num_tokens, --max_seq_len,
// --extra_llm_api_options) and the YAML keys of that file
// (tensorrt_llm/llmapi/llm_args.py) when the line writes it in a heredoc;
// a YAML file on disk is not read (a note says so).
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <regex>

#include "fmt/format.h"
#include "import_internal.h"
#include "import_train_internal.h"
#include "nlohmann/json.hpp"
#include "scalemodel/base/strings.h"

namespace scalemodel::launch::internal {
namespace {

const std::set<std::string>& ServerQuiet() {
  static const std::set<std::string> k = {"--host",
                                          "--port",
                                          "--headless",
                                          "--distributed-executor-backend",
                                          "--data-parallel-size-local",
                                          "--data-parallel-start-rank",
                                          "--data-parallel-address",
                                          "--data-parallel-rpc-port",
                                          "--nnodes",
                                          "--node-rank",
                                          "--dist-init-addr",
                                          "--served-model-name",
                                          "--trust-remote-code"};
  return k;
}

// The model the server loads: --model, else the line's positional or
// --model/--model-path, else the header's.
Result<FoundModel> ServedModel(const std::string& line_model,
                               const LaunchInput& in,
                               const catalog::Catalog& cat,
                               const std::string& override_name) {
  if (!override_name.empty()) return ModelByName(cat, override_name);
  if (!line_model.empty() && line_model != "<checkpoint>") {
    return ModelByName(cat, line_model);
  }
  if (std::string id = CatalogIdByDisplayName(cat, in.header_model);
      !id.empty()) {
    return ModelByName(cat, id);
  }
  return InvalidArgument("the line names no model to serve: pass --model",
                         "from");
}

Result<void> Dtypes(Args& a, const model::ModelSpec& m, ImportedServing* out) {
  estimate::ServeConfig& c = out->config;
  c.weights = m.weight_dtype;
  const std::string q = ToLower(a.Str("--quantization"));
  if (q == "fp8" || q == "modelopt" || q == "fbgemm_fp8") {
    c.weights = hw::Dtype::kFp8;
  } else if (q == "awq" || q == "gptq" || q == "awq_marlin" ||
             q == "gptq_marlin") {
    c.weights = hw::Dtype::kInt4;
  } else if (q == "mxfp4" && m.is_moe()) {
    // vLLM's and SGLang's MXFP4 (gpt-oss) quantizes the fused-MoE layers
    // alone; attention and the other linear layers stay unquantized.
    c.expert_weights = hw::Dtype::kFp4;
  } else if (q == "modelopt_fp4" || q == "mxfp4") {
    c.weights = hw::Dtype::kFp4;
  } else if (!q.empty()) {
    return InvalidArgument("--quantization " + q +
                               " has no scalemodel weight dtype (fp8, awq, "
                               "gptq, modelopt_fp4)",
                           "from");
  }
  const std::string kv = ToLower(a.Str("--kv-cache-dtype"));
  c.kv = kv.rfind("fp8", 0) == 0 ? hw::Dtype::kFp8 : hw::Dtype::kBf16;
  if (kv == "fp4_e2m1") {
    return InvalidArgument(
        "--kv-cache-dtype fp4_e2m1: scalemodel's KV cache "
        "is bf16, fp8 or int8",
        "from");
  }
  return {};
}

// A memory fraction the line sets for `flag` (vLLM
// --gpu-memory-utilization, SGLang --mem-fraction-static, TensorRT-LLM's
// free_gpu_memory_fraction): above 0 and at most 1; 0 when absent.
Result<double> LineFraction(Args& a, const char* flag) {
  const std::string v = a.Str(flag);
  if (v.empty()) return 0.0;
  auto f = Number(flag, v);
  if (!f) return tl::unexpected(f.error());
  if (!(*f > 0 && *f <= 1)) {
    return InvalidArgument(
        fmt::format("{}: expected a fraction above 0 and at most 1, got {}",
                    flag, v),
        "from");
  }
  return *f;
}

// A parallel size a line gives: 1 to 4096 (as --pipeline-parallel-size).
Result<void> CheckDegree(long v, const char* flag) {
  if (v < 1 || v > 4096) {
    return InvalidArgument(
        fmt::format("expected {} from 1 to 4096, got {}", flag, v), "from");
  }
  return {};
}

// Replicas: the system's chips over one server's (tp x ep); a server
// with plain data parallelism (no expert parallelism) runs several.
Result<void> Replicas(Args& a, const hw::System& sys, ImportedServing* out) {
  estimate::ServeConfig& c = out->config;
  auto pp = a.Int({"--pipeline-parallel-size", "--pp-size", "--pp", "--pp_size",
                   "--pipeline_parallel_size"},
                  1);
  if (!pp) return tl::unexpected(pp.error());
  if (*pp < 1 || *pp > 4096) {
    return InvalidArgument(
        fmt::format("expected a pipeline size from 1 to 4096, got {}", *pp),
        "from");
  }
  c.pp = static_cast<int>(*pp);
  const int replica = c.tp * c.ep * c.pp;
  if (sys.num_chips() % replica != 0) {
    return InvalidArgument(
        fmt::format("one replica uses {} chips (tp {} x ep {}{}), which does "
                    "not divide the {} chips of {}",
                    replica, c.tp, c.ep,
                    c.pp > 1 ? fmt::format(" x pp {}", c.pp) : std::string(),
                    sys.num_chips(), sys.id),
        "from");
  }
  c.dp = sys.num_chips() / replica;
  return {};
}

// The speculation a line runs: method, draft tokens and draft model.
Result<void> SetSpec(estimate::SpecDecode::Kind kind, long k,
                     const std::string& draft, const catalog::Catalog& cat,
                     const std::string& flag, ImportedServing* out) {
  if (k < 1 || k > 16) {
    return InvalidArgument(
        fmt::format("{}: scalemodel models 1 to 16 draft tokens per step, "
                    "the line gives {}",
                    flag, k),
        "from");
  }
  static const char* kNames[] = {"", "mtp", "eagle", "draft", "ngram"};
  estimate::SpecDecode& sp = out->config.spec;
  sp.kind = kind;
  sp.k = static_cast<int>(k);
  out->spec = fmt::format("{}:{}", kNames[kind], k);
  if (kind == estimate::SpecDecode::kDraft) {
    auto m = ModelByName(cat, draft);
    if (!m) {
      return tl::unexpected(Error{
          m.error().code,
          flag + " names the draft model '" + draft + "': " + m.error().message,
          "from"});
    }
    sp.draft = std::make_shared<const model::ModelSpec>(m->model.spec);
    sp.draft_repo = draft;
    out->spec = fmt::format("draft:{}:{}", m->name, k);
  }
  if (kind != estimate::SpecDecode::kMtp) {
    out->notes.push_back(
        "the line speculates (" + out->spec +
        ") but does not carry the acceptance rate: give --spec-accept");
  }
  return {};
}

// vLLM --speculative-config '{"method": ..., "num_speculative_tokens": K,
// "model": ...}'.
Result<void> VllmSpec(Args& a, const catalog::Catalog& cat,
                      ImportedServing* out) {
  const std::string text = a.Str("--speculative-config");
  if (text.empty()) return {};
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() ||
      !j.contains("num_speculative_tokens") ||
      !j["num_speculative_tokens"].is_number_integer()) {
    return InvalidArgument(
        "--speculative-config: expected a JSON object with method and "
        "num_speculative_tokens (e.g. '{\"method\": \"mtp\", "
        "\"num_speculative_tokens\": 2}'), got '" +
            Excerpt(text) + "'",
        "from");
  }
  auto str = [&](const char* key) {
    return j.contains(key) && j[key].is_string() ? j[key].get<std::string>()
                                                 : std::string();
  };
  const std::string method = str("method");
  const long k = j["num_speculative_tokens"].get<long>();
  estimate::SpecDecode::Kind kind = estimate::SpecDecode::kNone;
  if (method == "mtp" || (method.size() > 4 &&
                          method.compare(method.size() - 4, 4, "_mtp") == 0)) {
    kind = estimate::SpecDecode::kMtp;
  } else if (method == "eagle" || method == "eagle3") {
    kind = estimate::SpecDecode::kEagle;
  } else if (method == "draft_model") {
    kind = estimate::SpecDecode::kDraft;
  } else if (method == "ngram") {
    kind = estimate::SpecDecode::kNgram;
  } else {
    return InvalidArgument(
        "--speculative-config method '" + Excerpt(method) +
            "' has no scalemodel counterpart; scalemodel models mtp (and "
            "MODEL_mtp), eagle, eagle3, draft_model and ngram",
        "from");
  }
  return SetSpec(kind, k, str("model"), cat, "--speculative-config", out);
}

// SGLang --speculative-algorithm with its step and draft-token counts; a
// chain (--speculative-eagle-topk 1) of K steps verifies K + 1 tokens.
Result<void> SglangSpec(Args& a, const catalog::Catalog& cat,
                        ImportedServing* out) {
  const std::string given = a.Str("--speculative-algorithm");
  const std::string algo = ToLower(given);
  if (algo.empty()) return {};
  static const std::map<std::string, estimate::SpecDecode::Kind> kKinds = {
      {"nextn", estimate::SpecDecode::kMtp},
      {"eagle", estimate::SpecDecode::kEagle},
      {"eagle3", estimate::SpecDecode::kEagle},
      {"standalone", estimate::SpecDecode::kDraft},
      {"ngram", estimate::SpecDecode::kNgram}};
  auto it = kKinds.find(algo);
  if (it == kKinds.end()) {
    return InvalidArgument(
        "--speculative-algorithm " + Excerpt(given) +
            " has no scalemodel counterpart; scalemodel models NEXTN, EAGLE, "
            "EAGLE3, STANDALONE and NGRAM",
        "from");
  }
  auto steps = a.Int("--speculative-num-steps", 0);
  auto tokens = a.Int("--speculative-num-draft-tokens", 0);
  auto topk = a.Int("--speculative-eagle-topk", 1);
  for (const auto* r : {&steps, &tokens, &topk}) {
    if (!*r) return tl::unexpected(r->error());
  }
  long k = it->second == estimate::SpecDecode::kNgram || *steps == 0
               ? *tokens - 1
               : *steps;
  if (*steps == 0 && *tokens == 0) {
    k = 3;
    out->notes.emplace_back(
        "no --speculative-num-steps: 3 draft tokens per step read (SGLang "
        "picks its own default per model)");
  }
  if (*topk > 1) {
    out->notes.push_back(fmt::format(
        "--speculative-eagle-topk {}: the draft tree is read as a chain of {} "
        "tokens",
        *topk, k));
  }
  return SetSpec(it->second, k, a.Str("--speculative-draft-model-path"), cat,
                 "--speculative-algorithm", out);
}

// Redundant experts: SGLang --ep-num-redundant-experts, vLLM --eplb-config
// '{"num_redundant_experts": N}' or its older --num-redundant-experts.
Result<void> RedundantExperts(Args& a, ImportedServing* out) {
  a.Has("--enable-eplb");
  long n = 0;
  const std::string eplb = a.Str("--eplb-config");
  if (!eplb.empty()) {
    const auto j = nlohmann::json::parse(eplb, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      return InvalidArgument(
          "--eplb-config: expected a JSON object such as "
          "'{\"num_redundant_experts\": 32}', got '" +
              Excerpt(eplb) + "'",
          "from");
    }
    if (j.contains("num_redundant_experts") &&
        j["num_redundant_experts"].is_number_integer()) {
      n = j["num_redundant_experts"].get<long>();
    }
  }
  auto flag =
      a.Int({"--ep-num-redundant-experts", "--num-redundant-experts"}, n);
  if (!flag) return tl::unexpected(flag.error());
  if (*flag < 0) {
    return InvalidArgument(
        fmt::format("expected a count of redundant experts >= 0, got {}",
                    *flag),
        "from");
  }
  out->config.redundant_experts = static_cast<int>(*flag);
  return {};
}

Result<void> CommonLimits(Args& a, ImportedServing* out,
                          const std::vector<std::string>& len_flags,
                          const std::vector<std::string>& tok_flags) {
  auto len = a.Int(len_flags, 0);
  auto tok = a.Int(tok_flags, 0);
  if (!len) return tl::unexpected(len.error());
  if (!tok) return tl::unexpected(tok.error());
  out->max_model_len = *len;
  out->max_batched_tokens = *tok;
  return {};
}

// The end of every server import: the length and batched-token limits
// (under the engine's own flag names), the weight and KV dtypes, then the
// arguments no step read, listed as ignored.
Result<ImportedServing> Finish(Args& a, ImportedServing out,
                               const std::vector<std::string>& len_flags,
                               const std::vector<std::string>& tok_flags) {
  if (auto ok = CommonLimits(a, &out, len_flags, tok_flags); !ok) {
    return tl::unexpected(ok.error());
  }
  if (auto ok = RedundantExperts(a, &out); !ok) {
    return tl::unexpected(ok.error());
  }
  if (auto ok = Dtypes(a, out.model.spec, &out); !ok) {
    return tl::unexpected(ok.error());
  }
  out.ignored = a.Unused(ServerQuiet());
  return out;
}

// vLLM's -tp/-pp/-dp spelled long, so that ParseLaunchText sees flags.
LaunchInput LongFlags(const LaunchInput& in) {
  static const std::regex kShort(R"((^|\s)-(tp|pp|dp)(?=\s|$))");
  LaunchInput out = in;
  std::string text;
  std::sregex_iterator it(in.text.begin(), in.text.end(), kShort), end;
  size_t last = 0;
  for (; it != end; ++it) {
    const std::smatch& m = *it;
    text += in.text.substr(last, m.position(0) - last) + m[1].str();
    const std::string f = m[2].str();
    text += f == "tp"   ? "--tensor-parallel-size"
            : f == "pp" ? "--pipeline-parallel-size"
                        : "--data-parallel-size";
    last = m.position(0) + m.length(0);
  }
  out.text = text + in.text.substr(last);
  out.parsed = ParseLaunchText(out.text);
  return out;
}

// TensorRT-LLM's speculative_config (llm_args.py: decoding_type MTP, Eagle,
// Eagle3, Draft_Target, NGram; max_draft_len, or MTP's older
// num_nextn_predict_layers; speculative_model or speculative_model_dir).
Result<void> TrtllmSpec(Args& a, const catalog::Catalog& cat,
                        ImportedServing* out) {
  const std::string type = a.Str("speculative_config.decoding_type");
  if (type.empty()) return {};
  static const std::map<std::string, estimate::SpecDecode::Kind> kKinds = {
      {"MTP", estimate::SpecDecode::kMtp},
      {"Eagle", estimate::SpecDecode::kEagle},
      {"Eagle3", estimate::SpecDecode::kEagle},
      {"Draft_Target", estimate::SpecDecode::kDraft},
      {"DraftTarget", estimate::SpecDecode::kDraft},
      {"NGram", estimate::SpecDecode::kNgram}};
  auto it = kKinds.find(type);
  if (it == kKinds.end()) {
    return InvalidArgument(
        "speculative_config.decoding_type " + Excerpt(type) +
            " has no scalemodel counterpart; scalemodel models MTP, Eagle, "
            "Eagle3, Draft_Target and NGram",
        "from");
  }
  auto k = a.Int({"speculative_config.max_draft_len",
                  "speculative_config.num_nextn_predict_layers"},
                 0);
  if (!k) return tl::unexpected(k.error());
  return SetSpec(it->second, *k,
                 a.Str({"speculative_config.speculative_model",
                        "speculative_config.speculative_model_dir"}),
                 cat, "speculative_config", out);
}

// tp_size, ep_size and enable_attention_dp as a scalemodel replica: ep =
// ep_size, tp = tp_size / ep_size (mapping.py: tp_size = moe_tp x moe_ep).
Result<void> TrtllmDegrees(Args& a, ImportedServing* out) {
  auto tp = a.Int({"--tp_size", "--tensor_parallel_size"}, 1);
  auto ep = a.Int({"--ep_size", "--moe_expert_parallel_size"}, 1);
  if (!tp) return tl::unexpected(tp.error());
  if (!ep) return tl::unexpected(ep.error());
  if (*tp < 1 || *ep < 1 || *tp % *ep != 0 || *tp > 4096) {
    return InvalidArgument(
        fmt::format("--ep_size {} does not divide --tp_size {} "
                    "(trtllm.moe-ep)",
                    *ep, *tp),
        "from");
  }
  estimate::ServeConfig& c = out->config;
  c.tp = static_cast<int>(*tp / *ep);
  c.ep = static_cast<int>(*ep);
  c.dp_attention = Truthy(a.Str("enable_attention_dp"));
  if (c.dp_attention && c.ep < 2) {
    c.dp_attention = false;
    out->notes.emplace_back(
        "enable_attention_dp without expert parallelism: read as plain tp");
  } else if (c.dp_attention && c.tp > 1) {
    out->notes.push_back(fmt::format(
        "enable_attention_dp runs attention with tp 1 on all {} ranks; "
        "scalemodel reads it as {} attention groups of tp={}",
        *tp, c.ep, c.tp));
  }
  return {};
}

// The YAML of --extra_llm_api_options: read when the line writes it in a
// heredoc (as scalemodel's lines do); a file on disk is not opened.
void TrtllmYamlNote(Args& a, ImportedServing* out) {
  const std::string file = a.Str({"--extra_llm_api_options", "--config"});
  const auto& written = a.parsed().heredoc_files;
  if (file.empty() ||
      std::find(written.begin(), written.end(), file) != written.end()) {
    return;
  }
  out->notes.push_back(
      "--extra_llm_api_options " + Excerpt(file) +
      " is a file the line does not write: its settings (attention DP, KV "
      "dtype, speculation, load balancer) are not read; paste it into the "
      "line as a heredoc (cat > " +
      Excerpt(file) + " <<'EOF' ... EOF) or give them as serve flags");
}
}  // namespace

Result<ImportedServing> ImportVllm(const LaunchInput& raw,
                                   const catalog::Catalog& cat,
                                   const hw::System& sys,
                                   const std::string& override_name) {
  const LaunchInput in = LongFlags(raw);
  Args a(in.parsed);
  ImportedServing out;
  // `vllm serve MODEL`: the word after "serve".
  std::string line_model = a.Str("--model");
  for (size_t i = 0; i + 1 < in.parsed.words.size(); ++i) {
    if (in.parsed.words[i] == "serve") line_model = in.parsed.words[i + 1];
  }
  auto m = ServedModel(line_model, in, cat, override_name);
  if (!m) return tl::unexpected(m.error());
  out.model = m->model;
  out.model_name = m->name;
  estimate::ServeConfig& c = out.config;
  auto tp = a.Int("--tensor-parallel-size", 1);
  auto dp = a.Int("--data-parallel-size", 1);
  if (!tp) return tl::unexpected(tp.error());
  if (!dp) return tl::unexpected(dp.error());
  for (const auto& [v, flag] : {std::pair{*tp, "--tensor-parallel-size"},
                                std::pair{*dp, "--data-parallel-size"}}) {
    if (auto ok = CheckDegree(v, flag); !ok) {
      return tl::unexpected(ok.error());
    }
  }
  c.tp = static_cast<int>(*tp);
  // With expert parallelism the DP ranks are one replica (DP attention,
  // experts over tp x dp); without, each DP rank is a replica. Expert
  // parallelism without DP ranks splits attention over the tp ranks and
  // the experts over them (plain ep over tp; docs/model.md 7.5).
  const bool ep_flag = a.Has("--enable-expert-parallel");
  if (ep_flag && *dp == 1 && *tp > 1 && out.model.spec.is_moe() &&
      out.model.spec.moe.num_experts % *tp == 0) {
    c.ep = static_cast<int>(*tp);
    c.tp = 1;
  } else {
    c.ep = ep_flag ? static_cast<int>(*dp) : 1;
    // vLLM's DP ranks with expert parallelism run attention data-parallel.
    c.dp_attention = c.ep > 1;
  }
  if (auto ok = Replicas(a, sys, &out); !ok) return tl::unexpected(ok.error());
  if (auto ok = VllmSpec(a, cat, &out); !ok) return tl::unexpected(ok.error());
  auto util = LineFraction(a, "--gpu-memory-utilization");
  if (!util) return tl::unexpected(util.error());
  c.memory_fraction = *util;
  const long dflt = sys.chip.hbm_capacity.si() >= 70.0 * (1L << 30) &&
                            sys.chip.id.rfind("a100", 0) != 0
                        ? 1024
                        : 256;
  auto seqs = a.Int("--max-num-seqs", dflt);
  if (!seqs) return tl::unexpected(seqs.error());
  out.batch_given = true;
  if (!a.Has("--max-num-seqs")) {
    out.notes.push_back(
        fmt::format("no --max-num-seqs: vLLM's default for {} ({}) per DP rank",
                    sys.chip.id, dflt));
  }
  // --max-num-seqs applies per DP rank
  // (docs/serving/data_parallel_deployment.md).
  c.batch = static_cast<double>(*seqs * (ep_flag ? *dp : 1));
  if (a.Has("--async-scheduling")) out.overlap_schedule = 1;
  if (a.Has("--no-async-scheduling")) out.overlap_schedule = 0;
  return Finish(a, std::move(out), {"--max-model-len"},
                {"--max-num-batched-tokens"});
}

Result<ImportedServing> ImportSglang(const LaunchInput& in,
                                     const catalog::Catalog& cat,
                                     const hw::System& sys,
                                     const std::string& override_name) {
  Args a(in.parsed);
  ImportedServing out;
  auto m =
      ServedModel(a.Str({"--model-path", "--model"}), in, cat, override_name);
  if (!m) return tl::unexpected(m.error());
  out.model = m->model;
  out.model_name = m->name;
  estimate::ServeConfig& c = out.config;
  auto tp = a.Int({"--tp-size", "--tp", "--tensor-parallel-size"}, 1);
  auto dp = a.Int({"--dp-size", "--dp", "--data-parallel-size"}, 1);
  auto ep = a.Int({"--ep-size", "--ep", "--expert-parallel-size"}, 1);
  for (const auto* r : {&tp, &dp, &ep}) {
    if (!*r) return tl::unexpected(r->error());
  }
  for (const auto& [v, flag] :
       {std::pair{*tp, "--tp-size"}, std::pair{*dp, "--dp-size"},
        std::pair{*ep, "--ep-size"}}) {
    if (auto ok = CheckDegree(v, flag); !ok) {
      return tl::unexpected(ok.error());
    }
  }
  if (a.Has("--enable-dp-attention") && *dp > 1) {
    // DP attention: dp groups of tp/dp inside the tp ranks, experts over
    // them all.
    if (*tp % *dp != 0) {
      return InvalidArgument(
          fmt::format("--tp-size {} does not divide by --dp-size {} "
                      "(sglang.tp-dp)",
                      *tp, *dp),
          "from");
    }
    c.tp = static_cast<int>(*tp / *dp);
    c.ep = static_cast<int>(*dp);
    c.dp_attention = true;
  } else {
    c.tp = static_cast<int>(*tp);
    if (*ep > 1 && *tp % *ep == 0 && out.model.spec.is_moe() &&
        out.model.spec.moe.num_experts % *ep == 0) {
      // --ep-size without DP attention: attention over all tp ranks, the
      // experts in ep groups of tp / ep (moe_tp x moe_ep = tp).
      c.tp = static_cast<int>(*tp / *ep);
      c.ep = static_cast<int>(*ep);
    } else if (*ep > 1) {
      out.notes.emplace_back(
          "--ep-size does not divide --tp-size or the experts: experts read "
          "as split by tensor parallelism over the tp ranks");
    }
  }
  if (auto ok = Replicas(a, sys, &out); !ok) return tl::unexpected(ok.error());
  if (auto ok = SglangSpec(a, cat, &out); !ok) {
    return tl::unexpected(ok.error());
  }
  auto static_fraction = LineFraction(a, "--mem-fraction-static");
  if (!static_fraction) return tl::unexpected(static_fraction.error());
  out.config.memory_fraction = *static_fraction;
  auto reqs = a.Int("--max-running-requests", 0);
  if (!reqs) return tl::unexpected(reqs.error());
  out.batch_given = *reqs > 0;
  if (*reqs > 0) {
    c.batch = static_cast<double>(*reqs);
  } else {
    out.notes.emplace_back(
        "no --max-running-requests: SGLang sizes it from free memory; the "
        "batch is --batch's");
  }
  // --scheduler-recv-interval (<= 1: every step, SGLang's default).
  auto recv = a.Int("--scheduler-recv-interval", 1);
  if (!recv) return tl::unexpected(recv.error());
  out.recv_interval = static_cast<int>(std::clamp<long>(*recv, 1, 1L << 24));
  if (a.Has("--disable-overlap-schedule")) out.overlap_schedule = 0;
  if (a.Has("--enable-piecewise-cuda-graph")) out.prefill_graph = 1;
  if (a.Has("--disable-piecewise-cuda-graph")) out.prefill_graph = 0;
  const std::string runner = a.Str("--moe-runner-backend");
  if (!runner.empty()) {
    auto r = estimate::ParseMoeRunner(runner, "--moe-runner-backend");
    if (!r) return tl::unexpected(r.error());
    c.moe_runner = *r;
  }
  if (a.Has("--disable-shared-experts-fusion")) c.shared_experts_fusion = false;
  const std::string backend = a.Str("--attention-backend");
  if (!backend.empty()) {
    auto b = estimate::ParseAttentionBackend(backend, "--attention-backend");
    if (!b) return tl::unexpected(b.error());
    c.attention_backend = *b;
  }
  // --max-prefill-tokens bounds a prefill step's new tokens beside the
  // chunk size (SGLang's PrefillAdder: rem_input_tokens).
  auto prefill = a.Int("--max-prefill-tokens", 0);
  if (!prefill) return tl::unexpected(prefill.error());
  auto done = Finish(a, std::move(out), {"--context-length"},
                     {"--chunked-prefill-size"});
  if (done && *prefill > 0 && done->max_batched_tokens > *prefill) {
    done->max_batched_tokens = *prefill;
  }
  return done;
}

Result<ImportedServing> ImportTrtllm(const LaunchInput& in,
                                     const catalog::Catalog& cat,
                                     const hw::System& sys,
                                     const std::string& override_name) {
  Args a(in.parsed);
  ImportedServing out;
  const std::vector<std::string>& w = in.parsed.words;
  std::string line_model;
  for (size_t i = 0; i + 1 < w.size(); ++i) {
    if (w[i] == "trtllm-serve") line_model = w[i + 1];
  }
  if (line_model == "disaggregated") {
    return InvalidArgument(
        "trtllm-serve disaggregated routes requests to context and "
        "generation servers: import one of those servers' lines instead",
        "from");
  }
  auto m = ServedModel(line_model, in, cat, override_name);
  if (!m) return tl::unexpected(m.error());
  out.model = m->model;
  out.model_name = m->name;
  if (auto ok = TrtllmDegrees(a, &out); !ok) return tl::unexpected(ok.error());
  if (auto ok = Replicas(a, sys, &out); !ok) return tl::unexpected(ok.error());
  if (auto ok = TrtllmSpec(a, cat, &out); !ok) {
    return tl::unexpected(ok.error());
  }
  TrtllmYamlNote(a, &out);
  estimate::ServeConfig& c = out.config;
  auto batch = a.Int("--max_batch_size", 2048);
  if (!batch) return tl::unexpected(batch.error());
  out.batch_given = a.Has("--max_batch_size");
  if (!out.batch_given) {
    out.notes.emplace_back(
        "no --max_batch_size: TensorRT-LLM's default, 2048 (llm_args.py)");
  }
  // With attention DP every rank schedules its own max_batch_size.
  c.batch = static_cast<double>(*batch * (c.dp_attention ? c.ep : 1));
  auto slots = a.Int("moe_config.load_balancer.num_slots", 0);
  if (!slots) return tl::unexpected(slots.error());
  const std::string kv = a.Str("kv_cache_config.dtype");
  // The KV cache's share of the memory the weights leave (a flag or the
  // YAML key), as --kv-free-fraction.
  double kv_free = 0;
  for (const char* k :
       {"--kv_cache_free_gpu_memory_fraction", "--free_gpu_memory_fraction",
        "kv_cache_config.free_gpu_memory_fraction"}) {
    auto f = LineFraction(a, k);
    if (!f) return tl::unexpected(f.error());
    if (*f > 0) kv_free = *f;
  }
  // attention_dp_config: enable_balance with its timeout_iters (the
  // attention-DP ranks wait for one another's new requests).
  int balance = 0;
  if (Truthy(a.Str("attention_dp_config.enable_balance"))) {
    auto t = a.Int("attention_dp_config.timeout_iters", 50);
    if (!t) return tl::unexpected(t.error());
    balance = static_cast<int>(std::clamp<long>(*t, 0, 1L << 24));
  }
  // Understood, not modelled: the engine's runtime settings.
  for (const char* k :
       {"--backend", "cuda_graph_config.enable_padding",
        "attention_dp_config.batching_wait_iters",
        "cuda_graph_config.max_batch_size", "moe_config.backend",
        "moe_config.load_balancer.layer_updates_per_iter",
        "enable_chunked_prefill", "cache_transceiver_config.backend",
        "cache_transceiver_config.max_tokens_in_buffer"}) {
    a.Use(k);
  }
  out.adp_balance_timeout = out.config.dp_attention ? balance : 0;
  const std::string graph =
      a.Str("torch_compile_config.enable_piecewise_cuda_graph");
  if (!graph.empty()) out.prefill_graph = Truthy(graph) ? 1 : 0;
  const std::string no_overlap = a.Str("disable_overlap_scheduler");
  if (!no_overlap.empty()) out.overlap_schedule = Truthy(no_overlap) ? 0 : 1;
  auto done =
      Finish(a, std::move(out), {"--max_seq_len"}, {"--max_num_tokens"});
  if (!done) return done;
  // Finish reads vLLM/SGLang spellings; TensorRT-LLM's are YAML keys.
  if (*slots > 0) {
    done->config.redundant_experts =
        static_cast<int>(*slots) - done->model.spec.moe.num_experts;
  }
  if (done->config.redundant_experts < 0) {
    return InvalidArgument(
        fmt::format("moe_config.load_balancer.num_slots {} is below the {} "
                    "experts of {}",
                    *slots, done->model.spec.moe.num_experts,
                    done->model.spec.id),
        "from");
  }
  done->config.kv =
      kv.rfind("fp8", 0) == 0 ? hw::Dtype::kFp8 : hw::Dtype::kBf16;
  done->config.kv_free_fraction = kv_free;
  return done;
}

std::vector<std::string> VllmArguments() {
  return {"serve MODEL / --model",
          "--tensor-parallel-size / -tp",
          "--pipeline-parallel-size / -pp",
          "--data-parallel-size / -dp",
          "--enable-expert-parallel",
          "--max-num-seqs",
          "--max-num-batched-tokens",
          "--max-model-len",
          "--quantization",
          "--kv-cache-dtype",
          "--gpu-memory-utilization",
          "--async-scheduling / --no-async-scheduling",
          "--speculative-config",
          "--enable-eplb",
          "--eplb-config / --num-redundant-experts"};
}

std::vector<std::string> SglangArguments() {
  return {"--model-path / --model",
          "--tp-size / --tp / --tensor-parallel-size",
          "--dp-size / --dp / --data-parallel-size",
          "--ep-size / --ep / --expert-parallel-size",
          "--enable-dp-attention",
          "--pp-size",
          "--max-running-requests",
          "--chunked-prefill-size",
          "--max-prefill-tokens",
          "--scheduler-recv-interval",
          "--disable-overlap-schedule",
          "--enable-piecewise-cuda-graph / --disable-piecewise-cuda-graph",
          "--moe-runner-backend",
          "--disable-shared-experts-fusion",
          "--attention-backend",
          "--context-length",
          "--quantization",
          "--kv-cache-dtype",
          "--mem-fraction-static",
          "--speculative-algorithm",
          "--speculative-num-steps",
          "--speculative-num-draft-tokens",
          "--speculative-eagle-topk",
          "--speculative-draft-model-path",
          "--enable-eplb",
          "--ep-num-redundant-experts"};
}

std::vector<std::string> TrtllmArguments() {
  return {"trtllm-serve MODEL",
          "--tp_size / --tensor_parallel_size",
          "--pp_size / --pipeline_parallel_size",
          "--ep_size / --moe_expert_parallel_size",
          "--max_batch_size",
          "--max_num_tokens",
          "--max_seq_len",
          "enable_attention_dp (heredoc YAML)",
          "kv_cache_config.dtype (heredoc YAML)",
          "--kv_cache_free_gpu_memory_fraction",
          "kv_cache_config.free_gpu_memory_fraction (heredoc YAML)",
          "attention_dp_config.enable_balance, timeout_iters (heredoc YAML)",
          "disable_overlap_scheduler (heredoc YAML)",
          "torch_compile_config.enable_piecewise_cuda_graph (heredoc YAML)",
          "speculative_config (heredoc YAML)",
          "moe_config.load_balancer.num_slots (heredoc YAML)"};
}

}  // namespace scalemodel::launch::internal
