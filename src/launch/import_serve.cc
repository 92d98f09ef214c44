// vLLM and SGLang server arguments -> model, serving plan, batch. Names and
// defaults: vllm-project/vllm vllm/engine/arg_utils.py (EngineArgs
// add_cli_args: -tp/-pp/-dp, --enable-expert-parallel, --max-num-seqs,
// --max-num-batched-tokens, --max-model-len, --quantization,
// --kv-cache-dtype; get_batch_defaults: max_num_seqs 1024 on GPUs with
// >= 70 GiB other than A100, else 256) at 99d7eb5d as docs/launch.md cites
// it; sgl-project/sglang python/sglang/srt/server_args.py (--model-path,
// --tp-size/--tp, --dp-size/--dp, --ep-size/--ep, --enable-dp-attention,
// --max-running-requests, --chunked-prefill-size, --context-length,
// --quantization, --kv-cache-dtype).
#include <cmath>
#include <regex>

#include "fmt/format.h"
#include "import_internal.h"
#include "import_train_internal.h"
#include "scalemodel/base/strings.h"

namespace scalemodel::launch::internal {
namespace {

const std::set<std::string>& ServerQuiet() {
  static const std::set<std::string> k = {"--host",
                                          "--port",
                                          "--headless",
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

// Replicas: the system's chips over one server's (tp x ep); a server
// with plain data parallelism (no expert parallelism) runs several.
Result<void> Replicas(const hw::System& sys, ImportedServing* out) {
  estimate::ServeConfig& c = out->config;
  const int replica = c.tp * c.ep;
  if (sys.num_chips() % replica != 0) {
    return InvalidArgument(
        fmt::format("one replica uses {} chips (tp {} x ep {}), which does not "
                    "divide the {} chips of {}",
                    replica, c.tp, c.ep, sys.num_chips(), sys.id),
        "from");
  }
  c.dp = sys.num_chips() / replica;
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
  auto pp = a.Int({"--pipeline-parallel-size", "--pp-size", "--pp"}, 1);
  if (!pp) return tl::unexpected(pp.error());
  if (*pp > 1) {
    return InvalidArgument(
        "pipeline parallelism in serving (--pipeline-parallel-size > 1) is not "
        "modelled: scalemodel's serving plans are tp, ep and replicas",
        "from");
  }
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
  c.tp = static_cast<int>(*tp);
  // With expert parallelism the DP ranks are one replica (DP attention,
  // experts over tp x dp); without, each DP rank is a replica.
  c.ep = a.Has("--enable-expert-parallel") ? static_cast<int>(*dp) : 1;
  if (auto ok = Replicas(sys, &out); !ok) return tl::unexpected(ok.error());
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
  c.batch = static_cast<double>(*seqs * c.ep);
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
  auto tp = a.Int({"--tp-size", "--tp"}, 1);
  auto dp = a.Int({"--dp-size", "--dp"}, 1);
  auto ep = a.Int({"--ep-size", "--ep"}, 1);
  for (const auto* r : {&tp, &dp, &ep}) {
    if (!*r) return tl::unexpected(r->error());
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
  } else {
    c.tp = static_cast<int>(*tp);
    if (*ep > 1) {
      out.notes.emplace_back(
          "--ep-size without --enable-dp-attention: experts read as split "
          "by tensor parallelism over the tp ranks");
    }
  }
  if (auto ok = Replicas(sys, &out); !ok) return tl::unexpected(ok.error());
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
  return Finish(a, std::move(out), {"--context-length"},
                {"--chunked-prefill-size"});
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
          "--kv-cache-dtype"};
}

std::vector<std::string> SglangArguments() {
  return {
      "--model-path / --model", "--tp-size / --tp",       "--dp-size / --dp",
      "--ep-size / --ep",       "--enable-dp-attention",  "--pp-size",
      "--max-running-requests", "--chunked-prefill-size", "--context-length",
      "--quantization",         "--kv-cache-dtype"};
}

}  // namespace scalemodel::launch::internal
