#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "commands.h"
#include "fmt/format.h"
#include "scalemodel/base/strings.h"
#include "scalemodel/estimate/batching.h"
#include "scalemodel/estimate/efficiency.h"
#include "scalemodel/estimate/inference.h"
#include "scalemodel/estimate/training.h"
#include "scalemodel/ingest/hf_config.h"
#include "scalemodel/launch/import.h"
#include "scalemodel/launch/launch.h"
#include "scalemodel/model/transformer.h"
#include "scalemodel/net/collective.h"
#include "scalemodel/roofline/roofline.h"
#include "scalemodel/search/parallelism.h"
#include "scalemodel/search/serving.h"
#include "scalemodel/sharding/matmul.h"
#include "scalemodel/timeline/timeline.h"
#include "scalemodel/units/format.h"
#include "scalemodel/units/parse.h"
#include "scalemodel/validate/validate.h"
#include "trace_file.h"

namespace scalemodel::cli {

// The continuous-batching options (`serve --rate/--concurrency/--trace-file`).
struct ServeSimCli {
  std::string rate, trace_file, prompt_dist = "fixed", output_dist = "fixed",
                                slo_ttft, slo_tpot, dataset;
  // max_batched_tokens 0: the engine's own (estimate::
  // EngineDefaultBatchedTokens), else 8192.
  int concurrency = 0, requests = 1000, max_num_seqs = 256,
      max_batched_tokens = 0, recv_interval = 1, adp_balance = 0;
  bool chunked_prefill = false, mixed_chunk = false;
  // --overlap-schedule on|off; empty: the engine's default.
  std::string overlap;
  // --request-path TIME; empty: the engine's (estimate::EngineRequestPath).
  std::string request_path;
  double prefix_hit = 0;
  uint64_t seed = 0;
  // The engine of a --from line ("vllm", "sglang", "trtllm"): its scheduler
  // is the one simulated unless --engine names another.
  std::string from_engine;
  bool given(const CLI::App& app) const {
    for (const char* f :
         {"--requests", "--prompt-dist", "--output-dist", "--max-num-seqs",
          "--max-batched-tokens", "--scheduler-recv-interval",
          "--adp-balance-timeout", "--overlap-schedule", "--chunked-prefill",
          "--enable-mixed-chunk", "--prefix-hit", "--seed", "--slo-ttft",
          "--slo-tpot", "--dataset", "--request-path"}) {
      if (app.count(f) > 0) return true;
    }
    return false;
  }
};

struct ServeCli {
  std::string model, system, plan = "tp=1", batch = "1", prompt = "1024",
                             output = "256", weights = "bf16", kv = "bf16",
                             mode = "realistic", emit, power_cap, trace, engine;
  // The engine's static memory fraction (--mem-fraction) and TensorRT-LLM's
  // KV fraction (--kv-free-fraction); empty: unset.
  std::string mem_fraction, kv_free_fraction;
  double price = 0;
  // Speculative decoding, DP attention, redundant experts (docs/cli.md).
  std::string spec, spec_accept;
  // The routed experts' weight dtype when it differs from --weights.
  std::string expert_weights;
  bool dp_attention = false;
  // Prefill steps as piecewise CUDA graphs: 1 on (no eager-prefill host
  // time; SGLang --enable-piecewise-cuda-graph, TensorRT-LLM
  // torch_compile_config.enable_piecewise_cuda_graph), 0 off (the eager
  // host time even where the engine's default captures them), -1 the
  // engine's.
  int prefill_graph = -1;
  // SGLang's --moe-runner-backend; empty: the engine's own choice.
  std::string moe_runner;
  // SGLang's --attention-backend; empty: the engine's own choice.
  std::string attention_backend;
  // SGLang's --disable-shared-experts-fusion.
  bool no_shared_fusion = false;
  int redundant_experts = 0;
  ServeSimCli sim;
  DisaggCli disagg;  // --prefill-plan, --decode-plan, --kv-transfer
  // serve --from vllm|sglang|trtllm ARG...: the server line to import.
  std::vector<std::string> from;
};

static constexpr const char* kEmitHelp =
    "Print the launch line for {} instead of the report, checked by the "
    "engine's rules: vllm, sglang or trtllm, optionally @VERSION "
    "(docs/launch.md; --json adds it as \"launch\")";

static constexpr const char* kEngineHelp =
    "The serving engine and release you run, e.g. sglang@0.5.6 or "
    "vllm@0.6.0: adds the host time measured for that release (vLLM before "
    "0.6: unoverlapped scheduling; vLLM 0.6: 4 ms per scheduler call; SGLang "
    "before 0.4: 10%; SGLang 0.5 and TensorRT-LLM 1.x: the eager prefill's "
    "launch time), none for "
    "releases that overlap it; the engine also picks the measured all-reduce "
    "curve, decode attention's per-sequence cost, the fused-MoE op's fit "
    "and, for trtllm, no-evict admission (docs/cli.md, docs/model.md 7.2)";

// --emit: the launch text replaces the report; JSON carries both.
static Result<bool> AddServeLaunch(const std::string& engine_name,
                                   const ingest::ImportedModel& m,
                                   const hw::System& sys,
                                   const estimate::ServeConfig& cfg,
                                   const estimate::ServeEstimate& est,
                                   Output& out) {
  if (engine_name.empty()) return true;
  auto c = launch::EmitServingChecked(engine_name, m, sys, cfg, est);
  if (!c) return tl::unexpected(EmitError(c.error()));
  return PutCheckedLaunch(*c, out);
}

// A serving weight dtype (--weights, --expert-weights): bf16, fp8, int8,
// int4 or fp4; one sentence naming `flag` otherwise.
static Result<hw::Dtype> ParseWeightDtype(const std::string& text,
                                          const char* flag) {
  auto w = hw::ParseDtype(text);
  if (!w || (*w != hw::Dtype::kBf16 && *w != hw::Dtype::kFp8 &&
             *w != hw::Dtype::kInt8 && *w != hw::Dtype::kInt4 &&
             *w != hw::Dtype::kFp4)) {
    return InvalidArgument(
        "expected bf16, fp8, int8, int4 or fp4, got '" + text + "'", flag);
  }
  return *w;
}

static Result<estimate::ServeConfig> ParseServeCommon(
    const std::string& prompt, const std::string& output,
    const std::string& weights, const std::string& kv, const std::string& mode,
    double price, const std::string& engine, const std::string& mem_fraction,
    const std::string& kv_free_fraction) {
  estimate::ServeConfig c;
  // A fraction above 0 and at most 1, or "" (unset: 0).
  auto fraction = [](const std::string& text, const char* what,
                     const char* flag) -> Result<double> {
    if (text.empty()) return 0.0;
    char* end = nullptr;
    const double f = std::strtod(text.c_str(), &end);
    if (*end != '\0' || !(f > 0 && f <= 1)) {
      return InvalidArgument(std::string("expected a fraction above 0 and at "
                                         "most 1 of ") +
                                 what + ", got '" + Excerpt(text) + "'",
                             flag);
    }
    return f;
  };
  auto mf = fraction(mem_fraction,
                     "the device's memory for weights and KV cache (SGLang's "
                     "--mem-fraction-static, vLLM's --gpu-memory-utilization, "
                     "e.g. 0.9)",
                     "--mem-fraction");
  if (!mf) return tl::unexpected(mf.error());
  auto kf = fraction(kv_free_fraction,
                     "the memory the weights leave for the KV cache "
                     "(TensorRT-LLM's free_gpu_memory_fraction, e.g. 0.9)",
                     "--kv-free-fraction");
  if (!kf) return tl::unexpected(kf.error());
  if (*mf > 0 && *kf > 0) {
    return InvalidArgument(
        "give one memory rule: --mem-fraction (SGLang, vLLM) or "
        "--kv-free-fraction (TensorRT-LLM), not both",
        "--kv-free-fraction");
  }
  c.memory_fraction = *mf;
  c.kv_free_fraction = *kf;
  if (!engine.empty()) {
    auto host = estimate::ParseServingEngine(engine);
    if (!host) {
      return tl::unexpected(
          Error{host.error().code, host.error().message, "--engine"});
    }
    estimate::ApplyEngineHostTime(engine, *host, &c);
  }
  auto p = ParseOption<double>("--prompt", prompt,
                               [](auto& t) { return units::ParseLength(t); });
  if (!p) return tl::unexpected(p.error());
  auto o = ParseOption<double>("--output", output,
                               [](auto& t) { return units::ParseLength(t); });
  if (!o) return tl::unexpected(o.error());
  p = WholeUpTo("--prompt", *p, "prompt tokens", kMaxSeqCap);
  if (!p) return tl::unexpected(p.error());
  o = WholeUpTo("--output", *o, "output tokens", kMaxSeqCap);
  if (!o) return tl::unexpected(o.error());
  c.prompt = *p;
  c.output = *o;
  auto w = ParseWeightDtype(weights, "--weights");
  if (!w) return tl::unexpected(w.error());
  auto k = hw::ParseDtype(kv);
  if (!k || (*k != hw::Dtype::kBf16 && *k != hw::Dtype::kFp8 &&
             *k != hw::Dtype::kInt8)) {
    return InvalidArgument("expected bf16, fp8 or int8, got '" + kv + "'",
                           "--kv");
  }
  c.weights = *w;
  c.kv = *k;
  auto md = ParseMode(mode, "--mode");
  if (!md) return tl::unexpected(md.error());
  c.mode = *md == net::Mode::kPeak ? estimate::Mode::kPeak
                                   : estimate::Mode::kRealistic;
  if (!(price >= 0) || !std::isfinite(price)) {
    return InvalidArgument(
        fmt::format("expected a price >= 0 in USD, got {}", price),
        "--price-per-chip-hour");
  }
  c.price_per_chip_hour = price;
  return c;
}

// "matmul 5.96 ms + attention 2.07 ms + ...": the parts of a step, which
// add up to it.
static std::string PartsText(const estimate::StepParts& p) {
  return fmt::format(
             "matmul {} + attention {} + elementwise {} + communication {} + "
             "fixed {}",
             FormatSeconds(p.matmul), FormatSeconds(p.attention),
             FormatSeconds(p.elementwise), FormatSeconds(p.communication),
             FormatSeconds(p.overhead)) +
         (p.draft.si() > 0 ? " + draft " + FormatSeconds(p.draft) : "");
}

static std::string ServeText(const estimate::ServeEstimate& e) {
  std::string s;
  if (!e.feasible) s += "NOT FEASIBLE: " + e.reason + "\n";
  s += fmt::format(
      "time per output token {} ({}-bound)\n  = {}\n  bounds: weights {}, KV "
      "cache {}, compute {}; all collectives {}\nTTFT {} (prefill of the "
      "batch)\n  = {}\nrequest latency {}\nthroughput {} output "
      "tokens/s ({} per chip, {} per user)\nmemory per chip: {} of {} "
      "(weights {}, KV cache {}); max batch {}\ncost {}\n",
      FormatSeconds(e.decode_step), e.bound, PartsText(e.decode_parts),
      FormatSeconds(e.weight_time), FormatSeconds(e.kv_time),
      FormatSeconds(e.compute_time), FormatSeconds(e.comm_time),
      FormatSeconds(e.ttft), PartsText(e.prefill_parts),
      FormatSeconds(e.request_latency), units::FormatCount(e.tokens_per_s),
      units::FormatCount(e.tokens_per_s_per_chip),
      units::FormatCount(e.tokens_per_s_per_user), FormatBytes(e.total_bytes),
      FormatBytes(e.capacity_bytes), FormatBytes(e.weights_bytes),
      FormatBytes(e.kv_cache_bytes), units::FormatCount(e.max_batch),
      std::isnan(e.cost_per_million_tokens_usd)
          ? std::string("unknown (no price; pass --price-per-chip-hour)")
          : units::FormatUsd(e.cost_per_million_tokens_usd) +
                " per million output tokens");
  for (const std::string& n : e.notes) s += "- " + n + "\n";
  return s;
}

constexpr const char* kTraceKeys[] = {"arrival_s", "prompt_tokens",
                                      "output_tokens"};

// The sentence for a row that is not a request.
static std::string Shape(std::string_view row) {
  return "expected arrival_s,prompt_tokens,output_tokens (arrival >= 0 s, "
         "lengths >= 1 token) or a JSON object with those keys, got '" +
         Excerpt(row) + "'";
}

// A CSV field as a plain decimal number: an optional sign, digits with at
// most one '.', an optional exponent. strtod also reads hexadecimal ("0x10",
// "0x1p4"), "inf", "infinity" and "nan"; a trace row holds none of those.
static bool IsDecimal(std::string_view t) {
  size_t i = 0;
  if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
  size_t digits = 0;
  bool dot = false;
  for (; i < t.size(); ++i) {
    if (t[i] >= '0' && t[i] <= '9') {
      ++digits;
    } else if (t[i] == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
  }
  if (digits == 0) return false;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    const size_t exp_start = i;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
    if (i == exp_start) return false;
  }
  return i == t.size();
}

// A JSON trace row's values, or the sentence of what is wrong with it; the
// row has passed ingest::CheckJsonText (syntax, each key once).
static std::string JsonTraceRow(std::string_view row, double v[3]) {
  const auto j = report::Json::parse(row);
  for (int i = 0; i < 3; ++i) {
    if (!j.is_object() || !j.contains(kTraceKeys[i]) ||
        !j[kTraceKeys[i]].is_number()) {
      return Shape(row);
    }
    v[i] = j[kTraceKeys[i]].get<double>();
  }
  return "";
}

// One trace row: CSV "arrival_s,prompt_tokens,output_tokens" or a JSON
// object with those keys. "" when it is one, else the sentence.
static std::string ParseTraceRow(std::string_view row,
                                 estimate::TraceRequest* r) {
  double v[3];
  if (row.substr(0, 1) == "{") {
    try {
      if (std::string why = JsonTraceRow(row, v); !why.empty()) return why;
    } catch (const std::exception&) {
      return Shape(row);
    }
  } else {
    std::vector<std::string> f = Split(row, ',');
    if (f.size() != 3) return Shape(row);
    for (int i = 0; i < 3; ++i) {
      std::string t(Trim(f[i]));
      if (t.empty()) return Shape(row);
      char* end = nullptr;
      v[i] = std::strtod(t.c_str(), &end);
      if (*end != '\0') return Shape(row);  // not a number at all
      if (!IsDecimal(t)) {  // a number only to strtod: 0x10, 0x1p4, inf, nan
        return fmt::format(
            "expected {} as a decimal number such as {} (not hexadecimal, "
            "inf or nan), got '{}'",
            kTraceKeys[i], i == 0 ? "0.25" : "512", Excerpt(t));
      }
    }
  }
  if (!(v[0] >= 0) || !(v[1] >= 1) || !(v[2] >= 1) || !std::isfinite(v[0]) ||
      !std::isfinite(v[1]) || !std::isfinite(v[2])) {
    return Shape(row);
  }
  *r = {v[0], v[1], v[2]};
  return "";
}

// Caps on a trace (docs/units.md, Limits): its size, its rows, the last
// arrival (about 31 years) and the lengths, which must be whole tokens.
constexpr uintmax_t kMaxTraceBytes = uintmax_t{1} << 30;
constexpr size_t kMaxTraceRows = size_t{1} << 24;
constexpr double kMaxArrivalS = 1e9;

// A row that parsed, checked against the caps: the sentence, or "".
static std::string TraceRowLimit(const estimate::TraceRequest& r) {
  if (r.prompt_tokens != std::floor(r.prompt_tokens) ||
      r.output_tokens != std::floor(r.output_tokens) ||
      r.prompt_tokens > kMaxSeqCap.value ||
      r.output_tokens > kMaxSeqCap.value) {
    return fmt::format(
        "expected whole prompt_tokens and output_tokens of at most {}, got "
        "{} and {}",
        kMaxSeqCap.text, r.prompt_tokens, r.output_tokens);
  }
  if (r.arrival_s > kMaxArrivalS) {
    return fmt::format("expected an arrival_s of at most 1e9 s, got {}",
                       r.arrival_s);
  }
  return "";
}

// A trace file: one request per line, CSV (a first line naming the columns
// is skipped) or JSONL; blank lines and lines starting with '#' skipped.
// JSON rows get config.json's checks first (ingest::CheckJsonText).
Result<std::vector<estimate::TraceRequest>> ReadTrace(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return tl::unexpected(
        Error{ErrorCode::kIo,
              "expected a trace file, got '" + Excerpt(path) + "', which " +
                  (std::filesystem::exists(path, ec) ? "is not a regular file"
                                                     : "does not exist"),
              "--trace-file"});
  }
  if (const uintmax_t bytes = std::filesystem::file_size(path, ec);
      !ec && bytes > kMaxTraceBytes) {
    return InvalidArgument("expected a trace of at most 1 GiB, got " +
                               FormatNumber(static_cast<double>(bytes)) +
                               " bytes",
                           "--trace-file");
  }
  std::ifstream in(path);
  if (!in) {
    return tl::unexpected(Error{ErrorCode::kIo,
                                "cannot read trace file '" + path + "'",
                                "--trace-file"});
  }
  std::vector<estimate::TraceRequest> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    std::string_view t = Trim(line);
    if (t.empty() || t.front() == '#') continue;
    if (out.empty() && t == "arrival_s,prompt_tokens,output_tokens") continue;
    const std::string where = path + ":" + std::to_string(n);
    if (t.front() == '{') {
      if (auto ok = ingest::CheckJsonText(t, where, "a trace row"); !ok) {
        // The row is one line: its file:line, not the row's own line 1.
        Error e = ok.error();
        e.where = where;
        return tl::unexpected(e);
      }
    }
    estimate::TraceRequest r;
    if (std::string why = ParseTraceRow(t, &r); !why.empty()) {
      return InvalidArgument(why, where);
    }
    if (std::string why = TraceRowLimit(r); !why.empty()) {
      return InvalidArgument(why, where);
    }
    if (out.size() >= kMaxTraceRows) {
      return InvalidArgument("expected at most 2^24 (16777216) requests",
                             where);
    }
    out.push_back(r);
  }
  if (out.empty()) {
    return InvalidArgument(
        "expected at least one request row (arrival_s,prompt_tokens,"
        "output_tokens), found none",
        path);
  }
  return out;
}

static Result<double> ParseSlo(const std::string& text, const char* where) {
  if (text.empty()) return 0.0;
  auto t = ParseOption<units::Seconds>(
      where, text, [](auto& x) { return units::ParseDuration(x); });
  if (!t) return tl::unexpected(t.error());
  return t->si();
}

// The workload and scheduler from the flags; `cfg` gets the workload's mean
// lengths (the step-cost model's reference context).
static Result<estimate::Workload> ParseWorkload(const ServeSimCli& o,
                                                estimate::ServeConfig* cfg) {
  estimate::Workload w;
  w.requests = o.requests;
  w.seed = o.seed;
  // The step-cost model's reference lengths: a length list's means.
  auto means = [cfg](const std::vector<estimate::TraceRequest>& t) {
    double p = 0, q = 0;
    for (const auto& r : t) {
      p += r.prompt_tokens;
      q += r.output_tokens;
    }
    if (!t.empty()) {
      cfg->prompt = std::max(1.0, std::round(p / t.size()));
      cfg->output = std::max(1.0, std::round(q / t.size()));
    }
  };
  if (!o.trace_file.empty()) {
    auto t = ReadTrace(o.trace_file);
    if (!t) return tl::unexpected(t.error());
    // With --concurrency the clients replay the trace's lengths in order.
    w.arrivals = o.concurrency > 0 ? estimate::Workload::kConcurrency
                                   : estimate::Workload::kTrace;
    w.concurrency = o.concurrency;
    w.trace = std::move(*t);
    means(w.trace);
    return w;
  }
  if (!o.rate.empty()) {
    char* end = nullptr;
    w.rate_per_s = std::strtod(o.rate.c_str(), &end);
    if (*end != '\0' || !(w.rate_per_s > 0) || !std::isfinite(w.rate_per_s)) {
      return InvalidArgument(
          "expected a request rate > 0 (requests/s), got '" + o.rate + "'",
          "--rate");
    }
  } else {
    w.arrivals = estimate::Workload::kConcurrency;
    w.concurrency = o.concurrency;
  }
  if (!o.dataset.empty()) {
    auto t = estimate::ParseBenchDataset(o.dataset, o.requests, "--dataset");
    if (!t) return tl::unexpected(t.error());
    w.trace = std::move(*t);
    means(w.trace);
    return w;
  }
  auto p =
      estimate::ParseLengthDist(o.prompt_dist, cfg->prompt, "--prompt-dist");
  if (!p) return tl::unexpected(p.error());
  auto q =
      estimate::ParseLengthDist(o.output_dist, cfg->output, "--output-dist");
  if (!q) return tl::unexpected(q.error());
  w.prompt = *p;
  w.output = *q;
  auto mean = [](const estimate::LengthDist& d) {
    return d.kind == estimate::LengthDist::kUniform ? (d.a + d.b) / 2 : d.a;
  };
  cfg->prompt = std::max(1.0, std::round(mean(*p)));
  cfg->output = std::max(1.0, std::round(mean(*q)));
  return w;
}

static std::string PercentileRow(const char* name,
                                 const estimate::Percentiles& p) {
  return fmt::format("{:<5} {:>10} {:>10} {:>10} {:>10}\n", name,
                     FormatSeconds(units::Seconds(p.p50)),
                     FormatSeconds(units::Seconds(p.p90)),
                     FormatSeconds(units::Seconds(p.p99)),
                     FormatSeconds(units::Seconds(p.mean)));
}

std::string SimText(const estimate::SimulationResult& r,
                    const estimate::Slo& slo) {
  if (!r.feasible) return "NOT FEASIBLE: " + r.reason + "\n";
  std::string s = fmt::format("{:<5} {:>10} {:>10} {:>10} {:>10}\n", "", "p50",
                              "p90", "p99", "mean");
  s += PercentileRow("TTFT", r.ttft_s) + PercentileRow("TPOT", r.tpot_s) +
       PercentileRow("ITL", r.itl_s) + PercentileRow("E2E", r.e2e_s);
  s += fmt::format(
      "\nthroughput {} output tokens/s ({} per chip), {} "
      "requests/s ({} per chip)\n",
      units::FormatCount(r.throughput_output_tokens_per_s),
      units::FormatCount(r.output_tokens_per_s_per_chip),
      units::FormatCount(r.requests_per_s),
      units::FormatCount(r.requests_per_s_per_chip));
  if (slo.ttft_s > 0 || slo.tpot_s > 0) {
    std::vector<std::string> met;
    if (slo.ttft_s > 0) {
      met.push_back("TTFT <= " + FormatSeconds(units::Seconds(slo.ttft_s)));
    }
    if (slo.tpot_s > 0) {
      met.push_back("TPOT <= " + FormatSeconds(units::Seconds(slo.tpot_s)));
    }
    s += fmt::format("goodput {} requests/s ({:.1f}% of requests meet {})\n",
                     units::FormatCount(r.goodput_requests_per_s),
                     100 * r.slo_attainment, fmt::join(met, ", "));
  }
  s += fmt::format(
      "KV cache: peak {:.0f}%, mean {:.0f}% of {} tokens per replica; {}\n"
      "{}, {:.1f} decoding sequences per step on average, "
      "largest step {} tokens\nrequests in the system {:.2f} on average "
      "(throughput x mean E2E = {:.2f})\n",
      100 * r.kv_peak_fraction, 100 * r.kv_mean_fraction,
      units::FormatCount(r.kv_capacity_tokens),
      units::Plural(r.preemptions, "preemption", "preemptions"),
      units::Plural(r.steps, "step", "steps"), r.mean_decode_batch,
      units::FormatCount(r.max_step_tokens), r.mean_requests_in_system,
      r.requests_per_s * r.e2e_s.mean);
  for (const std::string& n : r.notes) s += "- " + n + "\n";
  return s;
}

// The acceptance DeepSeek-V3 measured for its MTP module's second token,
// 85-90% (DeepSeek-V3 technical report, arXiv:2412.19437, section 5.4.3):
// the low end, the --spec mtp default.
constexpr double kMtpAcceptance = 0.85;

// --spec KIND:K (mtp, eagle, ngram) or draft:MODEL:K and --spec-accept A
// or A1,A2,...: the speculative-decoding plan.
static Result<estimate::SpecDecode> ParseSpec(const catalog::Catalog& cat,
                                              const std::string& text,
                                              const std::string& accept) {
  estimate::SpecDecode sp;
  if (text.empty()) {
    if (!accept.empty()) {
      return InvalidArgument("an acceptance rate needs --spec KIND:K",
                             "--spec-accept");
    }
    return sp;
  }
  std::vector<std::string> f = Split(text, ':');
  static const std::vector<std::string> kKinds = {"mtp", "eagle", "draft",
                                                  "ngram"};
  auto it = std::find(kKinds.begin(), kKinds.end(), f[0]);
  const bool draft = it != kKinds.end() && *it == "draft";
  if (it == kKinds.end() || f.size() < (draft ? 3u : 2u) ||
      (!draft && f.size() != 2)) {
    return InvalidArgument(
        "expected mtp:K, eagle:K, draft:MODEL:K or ngram:K (K draft tokens "
        "per step), got '" +
            Excerpt(text) + "'" +
            (it == kKinds.end() ? DidYouMean(f[0], kKinds) : std::string()),
        "--spec");
  }
  sp.kind = static_cast<estimate::SpecDecode::Kind>(it - kKinds.begin() + 1);
  char* end = nullptr;
  const double k = std::strtod(f.back().c_str(), &end);
  if (f.back().empty() || *end != '\0' || !(k >= 1) || k != std::floor(k) ||
      k > 16) {
    return InvalidArgument(
        "expected a whole number of draft tokens from 1 "
        "to 16 after the last ':', got '" +
            Excerpt(f.back()) + "'",
        "--spec");
  }
  sp.k = static_cast<int>(k);
  if (draft) {
    std::string name = f[1];
    for (size_t i = 2; i + 1 < f.size(); ++i) name += ":" + f[i];
    auto m = ingest::FindModel(cat, name);
    if (!m)
      return tl::unexpected(Error{m.error().code, m.error().message, "--spec"});
    sp.draft = std::make_shared<const model::ModelSpec>(m->spec);
    sp.draft_repo = m->engine_names.hf_repo;
  }
  if (accept.empty()) {
    if (sp.kind == estimate::SpecDecode::kMtp) {
      sp.accept = {kMtpAcceptance};
      return sp;
    }
    return InvalidArgument(
        "--spec " + f[0] +
            " needs --spec-accept: the probability that a draft token is "
            "accepted (e.g. 0.7), or one per draft position",
        "--spec-accept");
  }
  for (const std::string& a : Split(accept, ',')) {
    std::string t(Trim(a));
    char* e = nullptr;
    const double v = std::strtod(t.c_str(), &e);
    if (t.empty() || *e != '\0' || !(v >= 0 && v <= 1)) {
      return InvalidArgument(
          "expected acceptance probabilities from 0 to 1 (A or A1,A2,...), "
          "got '" +
              Excerpt(accept) + "'",
          "--spec-accept");
    }
    sp.accept.push_back(v);
  }
  return sp;
}

// --expert-weights (serve, plan serve): the routed experts' weight dtype;
// empty leaves them at --weights.
static Result<bool> ApplyExpertWeights(const std::string& text,
                                       estimate::ServeConfig* cfg) {
  if (text.empty()) return true;
  auto w = ParseWeightDtype(text, "--expert-weights");
  if (!w) return tl::unexpected(w.error());
  cfg->expert_weights = *w;
  return true;
}

static constexpr const char* kExpertWeightsHelp =
    "The routed experts' weights when the checkpoint quantizes them alone: "
    "bf16, fp8, int8, int4 or fp4 (gpt-oss: --weights bf16 --expert-weights "
    "fp4, its MXFP4 experts; Kimi K2 Thinking: int4); default --weights";

// The plan's pp and the serving extensions into `cfg`.
static Result<bool> ApplyServeExtensions(const catalog::Catalog& cat,
                                         const ServeCli& o,
                                         estimate::ServeConfig* cfg) {
  auto sp = ParseSpec(cat, o.spec, o.spec_accept);
  if (!sp) return tl::unexpected(sp.error());
  cfg->spec = *sp;
  if (o.redundant_experts < 0) {
    return InvalidArgument("expected a count of redundant experts >= 0, got " +
                               std::to_string(o.redundant_experts),
                           "--redundant-experts");
  }
  cfg->dp_attention = o.dp_attention;
  cfg->redundant_experts = o.redundant_experts;
  return ApplyExpertWeights(o.expert_weights, cfg);
}

// The JSON of the serving extensions given (nothing when none is).
static void PutServeExtensions(const estimate::ServeConfig& cfg,
                               const estimate::ServeEstimate* e, Json* j) {
  if (cfg.spec.on()) {
    static const char* kNames[] = {"none", "mtp", "eagle", "draft", "ngram"};
    Json s = {{"method", kNames[cfg.spec.kind]},
              {"draft_tokens", cfg.spec.k},
              {"acceptance", cfg.spec.accept},
              {"tokens_per_step", estimate::SpecExpectedTokens(cfg.spec)}};
    if (cfg.spec.draft) s["draft_model"] = cfg.spec.draft->id;
    if (e) s["verify_step_time_s"] = e->spec_step.si();
    (*j)["speculative"] = s;
  }
  if (cfg.dp_attention) (*j)["dp_attention"] = true;
  if (cfg.memory_fraction > 0)
    (*j)["inputs"]["mem_fraction"] = cfg.memory_fraction;
  if (cfg.kv_free_fraction > 0) {
    (*j)["inputs"]["kv_free_fraction"] = cfg.kv_free_fraction;
  }
  if (!cfg.moe_runner.empty()) (*j)["inputs"]["moe_runner"] = cfg.moe_runner;
  if (!cfg.attention_backend.empty()) {
    (*j)["inputs"]["attention_backend"] = cfg.attention_backend;
  }
  if (cfg.expert_weights) {
    (*j)["expert_weights"] = std::string(hw::DtypeName(*cfg.expert_weights));
  }
  if (!cfg.host_time_source.empty()) {
    (*j)["engine_host_time"] = {{"step_s", cfg.host_step_s},
                                {"fraction_of_gpu_time", cfg.host_fraction},
                                {"eager_prefill_op_s", cfg.eager_prefill_op_s},
                                {"source", cfg.host_time_source}};
  }
  if (cfg.redundant_experts > 0) {
    (*j)["redundant_experts"] = cfg.redundant_experts;
  }
  if (e && e->expert_imbalance != 1) {
    (*j)["expert_imbalance"] = e->expert_imbalance;
  }
}

// Closed-loop clients with fixed prompt and output lengths stay in step in
// the simulation: a wave of requests starts, prefills and finishes
// together, and every TTFT waits for its wave's prefill. Measured
// fixed-length closed loops drift apart instead, part of the way (NVIDIA
// aiconfigurator's 1,021 aiperf runs, docs/model.md 7.3), so the report
// also gives the other bound (estimate::SimulateSpreadClosedLoop). Adds
// `staggered` to the JSON and returns its text ("" when the workload is not
// a fixed-length closed loop of more requests than clients).
static Result<std::string> StaggeredBound(const estimate::StepCostModel& sc,
                                          int replicas,
                                          const estimate::Workload& w,
                                          const estimate::SchedulerOptions& s,
                                          const estimate::Slo& slo,
                                          Json* json) {
  using estimate::LengthDist;
  const bool fixed = w.prompt.kind == LengthDist::kFixed &&
                     w.output.kind == LengthDist::kFixed;
  // Each fitting step simulates every request again (about 10-20 times).
  constexpr int kMaxRequests = 100000;
  if (w.arrivals != estimate::Workload::kConcurrency || !fixed ||
      !w.trace.empty() || w.concurrency < 2 || w.requests <= w.concurrency ||
      w.requests > kMaxRequests) {
    return std::string();
  }
  auto spread = estimate::SimulateSpreadClosedLoop(sc, replicas, w, s, slo);
  if (!spread) return tl::unexpected(spread.error());
  const estimate::SimulationResult& last = spread->result;
  const estimate::ClosedLoopFit& fit = spread->fit;
  if (!last.feasible) return std::string();
  const Json r = report::ToJson(last);
  (*json)["staggered"] = {
      {"rate_per_s", fit.rate_per_s},
      {"mean_requests_in_system", fit.mean_in_system},
      {"simulations", fit.runs},
      {"ttft_s", r["ttft_s"]},
      {"tpot_s", r["tpot_s"]},
      {"itl_s", r["itl_s"]},
      {"e2e_s", r["e2e_s"]},
      {"requests_per_s", r["requests_per_s"]},
      {"throughput_output_tokens_per_s", r["throughput_output_tokens_per_s"]}};
  return Wrap(
      fmt::format(
          "- fixed lengths keep the {} clients in step: each wave of "
          "requests prefills together, and its TTFT waits for the whole "
          "wave. Spread evenly instead (one request every {}, the rate that "
          "keeps {:.1f} in the system): TTFT p50 {} (mean {}), TPOT p50 {}, "
          "{} output tokens/s. Published fixed-length closed loops fall "
          "between the two (docs/model.md 7.3)\n",
          w.concurrency, FormatSeconds(units::Seconds(1 / fit.rate_per_s)),
          fit.mean_in_system, FormatSeconds(units::Seconds(last.ttft_s.p50)),
          FormatSeconds(units::Seconds(last.ttft_s.mean)),
          FormatSeconds(units::Seconds(last.tpot_s.p50)),
          units::FormatCount(last.throughput_output_tokens_per_s)),
      kTextWidth);
}

// serve with --rate, --concurrency or --trace-file: the continuous-batching
// simulation (estimate::SimulateServing) instead of the static batch.
static Result<Output> RunServeSim(const catalog::Catalog& cat,
                                  const ingest::ImportedModel& m,
                                  const hw::System& sys,
                                  estimate::ServeConfig cfg, const ServeCli& o,
                                  bool disaggregated,
                                  const std::vector<std::string>& from_notes) {
  const ServeSimCli& so = o.sim;
  auto w = ParseWorkload(so, &cfg);
  if (!w) return tl::unexpected(w.error());
  const std::string& engine = o.engine.empty() ? so.from_engine : o.engine;
  estimate::SchedulerOptions sched;
  sched.max_num_seqs = so.max_num_seqs;
  sched.max_batched_tokens = so.max_batched_tokens;
  if (sched.max_batched_tokens == 0) {
    const int own = estimate::EngineDefaultBatchedTokens(
        engine, sys.chip.DeviceMemory().si());
    sched.max_batched_tokens = own > 0 ? own : 8192;
  }
  sched.recv_interval = so.recv_interval;
  sched.adp_balance_timeout_iters = so.adp_balance;
  // SGLang and vLLM V1 chunk prompts whether or not the flag is given.
  sched.chunked_prefill =
      so.chunked_prefill || estimate::EngineChunksPrefill(engine);
  // The engine's scheduling: SGLang runs prompt work in steps of its own
  // unless told to mix and shares its limits among DP ranks; TensorRT-LLM
  // starts a request only where it can finish unevicted.
  estimate::ApplyEngineScheduling(engine, &sched);
  sched.mixed_prefill = sched.mixed_prefill || so.mixed_chunk;
  if (!so.overlap.empty()) {
    const std::string v = ToLower(so.overlap);
    if (v != "on" && v != "off") {
      return InvalidArgument("expected 'on' or 'off', got '" + so.overlap + "'",
                             "--overlap-schedule");
    }
    sched.overlap_schedule = v == "on";
  }
  if (!so.request_path.empty()) {
    auto path = ParseOption<units::Seconds>(
        "--request-path", so.request_path, [](auto& x) {
          units::ParseOptions zero_ok;
          zero_ok.allow_zero = true;
          return units::ParseDuration(x, zero_ok);
        });
    if (!path) return tl::unexpected(path.error());
    sched.request_path_s = path->si();
  }
  sched.prefix_hit = so.prefix_hit;
  estimate::Slo slo;
  auto ttft = ParseSlo(so.slo_ttft, "--slo-ttft");
  if (!ttft) return tl::unexpected(ttft.error());
  auto tpot = ParseSlo(so.slo_tpot, "--slo-tpot");
  if (!tpot) return tl::unexpected(tpot.error());
  slo.ttft_s = *ttft;
  slo.tpot_s = *tpot;
  std::string arrivals =
      w->arrivals == estimate::Workload::kTrace ? "trace " + so.trace_file
      : w->arrivals == estimate::Workload::kPoisson
          ? "Poisson at " + so.rate + " requests/s"
          : std::to_string(so.concurrency) + " concurrent clients";
  if (w->arrivals != estimate::Workload::kTrace && !w->trace.empty()) {
    arrivals += so.dataset.empty() ? ", lengths of trace " + so.trace_file
                                   : ", lengths of " + so.dataset;
  }
  const std::string lengths = !so.dataset.empty()      ? so.dataset
                              : !so.trace_file.empty() ? "trace"
                                                       : std::string();
  if (disaggregated) {
    return RunServeDisagg(m, sys, cfg, *w, sched, slo, arrivals, o.disagg,
                          o.trace, o.emit);
  }
  auto sc = estimate::StepCostModel::Create(m.spec, sys, cfg);
  if (!sc) return tl::unexpected(sc.error());
  auto r = estimate::SimulateServing(*sc, cfg.dp, *w, sched, slo);
  if (!r) return tl::unexpected(r.error());
  // What a --from line set and what it left out, first.
  r->notes.insert(r->notes.begin(), from_notes.begin(), from_notes.end());
  Output out;
  out.json = Document(
      {{"model", m.spec.id},
       {"system", sys.id},
       {"plan", o.plan},
       {"arrivals", arrivals},
       {"requests", r->requests},
       {"prompt_dist", lengths.empty() ? so.prompt_dist : lengths},
       {"output_dist", lengths.empty() ? so.output_dist : lengths},
       {"max_num_seqs", sched.max_num_seqs},
       {"max_batched_tokens", sched.max_batched_tokens},
       {"chunked_prefill", sched.chunked_prefill},
       {"scheduler_recv_interval", sched.recv_interval},
       {"adp_balance_timeout_iters", sched.adp_balance_timeout_iters},
       {"overlap_schedule", sched.overlap_schedule},
       {"request_path_s", sched.request_path_s},
       {"mixed_prefill", sched.mixed_prefill},
       {"prefix_hit", sched.prefix_hit},
       {"dp_ranks", sc->dp_ranks()},
       {"limits_per_rank", sc->dp_ranks() > 1 && sched.limits_per_rank},
       {"seed", so.seed},
       {"slo_ttft_s", slo.ttft_s > 0 ? Json(slo.ttft_s) : Json(nullptr)},
       {"slo_tpot_s", slo.tpot_s > 0 ? Json(slo.tpot_s) : Json(nullptr)},
       {"weights", std::string(hw::DtypeName(cfg.weights))},
       {"kv", std::string(hw::DtypeName(cfg.kv))},
       {"mode", o.mode}},
      report::ToJson(*r));
  PutServeExtensions(cfg, nullptr, &out.json);
  // The host's launch time an eager prefill step adds to its GPU time (0:
  // prefill graphs). The key's old name, from when it was a floor, stays.
  estimate::StepWork one_prompt;
  one_prompt.prefill_tokens = 1;
  one_prompt.prefill_pairs = 1;
  const double eager_host = sc->EagerHostTime(one_prompt);
  out.json["eager_prefill_host_s"] = eager_host;
  out.json["eager_prefill_floor_s"] = eager_host;
  auto staggered = StaggeredBound(*sc, cfg.dp, *w, sched, slo, &out.json);
  if (!staggered) return tl::unexpected(staggered.error());
  out.text =
      fmt::format(
          "{} on {} ({}): continuous batching, {} requests, {}\nmax {} "
          "sequences "
          "and {} tokens per step{}, chunked prefill {}, prefix-cache "
          "hit "
          "{:.0f}%{}\n\n",
          m.spec.name, sys.id, o.plan, r->requests, arrivals,
          sched.max_num_seqs, sched.max_batched_tokens,
          sc->dp_ranks() <= 1 ? std::string()
          : sched.limits_per_rank
              ? fmt::format(" on each of {} DP ranks", sc->dp_ranks())
              : fmt::format(" shared among {} DP ranks", sc->dp_ranks()),
          !sched.chunked_prefill ? "off"
          : sched.mixed_prefill  ? "on"
                                 : "on (prefill steps alone, SGLang)",
          100 * sched.prefix_hit,
          (sched.overlap_schedule
               ? std::string(", each step formed while the one before runs "
                             "(overlap scheduler)")
               : std::string()) +
              (eager_host > 0
                   ? fmt::format(
                         ", steps with prompt tokens launched eagerly: "
                         "{} of host launch time each on top of their GPU "
                         "time{}",
                         FormatSeconds(units::Seconds(eager_host)),
                         sched.overlap_schedule
                             ? " (partly under the step before)"
                             : "")
                   : std::string()) +
              (sc->KvTokenTimePerChip() > 0 &&
                       sys.chip.efficiency.mla_fp8_kv_token
                   ? fmt::format(
                         ", decode attention over the fp8 KV cache "
                         "at {} per cached token and layer "
                         "(SGLang's FlashAttention-3 MLA kernel, "
                         "catalog mla_fp8_kv_token)",
                         FormatSeconds(*sys.chip.efficiency.mla_fp8_kv_token))
                   : std::string()) +
              (sched.request_path_s > 0
                   ? fmt::format(
                         ", TTFT and E2E include {} of request path "
                         "outside the engine (HTTP, tokenizing, "
                         "detokenizing)",
                         FormatSeconds(units::Seconds(sched.request_path_s)))
                   : std::string()) +
              (sched.recv_interval > 1
                   ? fmt::format(", new requests received every {} "
                                 "decode steps",
                                 sched.recv_interval)
                   : std::string()) +
              (sched.adp_balance_timeout_iters > 0 && sc->dp_ranks() > 1
                   ? fmt::format(", new requests held until every DP rank has "
                                 "one (at most {} iterations)",
                                 sched.adp_balance_timeout_iters)
                   : std::string())) +
      SimText(*r, slo) + *staggered;
  // How close the simulated latencies and throughput come on the published
  // points (per metric it prints, on this chip).
  auto [trust, trust_json] =
      TrustOnChip(cat, sys.chip, false, cfg.mode == estimate::Mode::kRealistic,
                  cfg.dp_attention);
  out.json["accuracy"] = trust_json;
  out.text += trust;
  if (!o.trace.empty()) {
    auto put = PutTrace(timeline::SimulationTimeline(*r), o.trace,
                        "simulated duration", out);
    if (!put) return tl::unexpected(put.error());
  }
  return out;
}

// plan serve --system: a chip, or a system whose chip is searched and
// whose size (`*system_chips`) is the default --max-chips.
static Result<const hw::Chip*> SearchedChip(const catalog::Catalog& cat,
                                            const std::string& name,
                                            int* system_chips) {
  auto chip = cat.FindChip(name);
  if (chip) return *chip;
  auto sys = cat.FindSystem(name);
  if (!sys) {
    // A CHIP:SHAPE or catalog-system spelling gets the system's message.
    const Error& e =
        name.find(':') != std::string::npos ? sys.error() : chip.error();
    return tl::unexpected(Error{e.code, e.message, "--system"});
  }
  *system_chips = sys->num_chips();
  auto of_system = cat.FindChip(sys->chip.id);
  if (!of_system) return tl::unexpected(of_system.error());
  return *of_system;
}

Result<Output> RunServeSearch(const catalog::Catalog& cat,
                              const ServeSearchCli& o) {
  if (!o.emit.empty()) {
    auto engine = launch::ParseServeEngine(o.emit);
    if (!engine) return tl::unexpected(EmitError(engine.error()));
  }
  auto m = ingest::FindModel(cat, o.model);
  if (!m) return tl::unexpected(m.error());
  int system_chips = 0;
  auto chip = SearchedChip(cat, o.chip, &system_chips);
  if (!chip) return tl::unexpected(chip.error());
  auto base =
      ParseServeCommon(o.prompt, o.output, o.weights, o.kv, o.mode, o.price,
                       o.engine, o.mem_fraction, o.kv_free_fraction);
  if (!base) return tl::unexpected(base.error());
  if (auto x = ApplyExpertWeights(o.expert_weights, &*base); !x) {
    return tl::unexpected(x.error());
  }
  if (auto x = estimate::CheckExpertWeights(m->spec, *base); !x) {
    return tl::unexpected(x.error());
  }
  double tpot_max = 0, ttft_max = 0;
  if (!o.tpot_max.empty()) {
    auto t = ParseOption<units::Seconds>("--tpot-max", o.tpot_max, [](auto& x) {
      return units::ParseDuration(x);
    });
    if (!t) return tl::unexpected(t.error());
    tpot_max = t->si();
  }
  if (!o.ttft_max.empty()) {
    auto t = ParseOption<units::Seconds>("--ttft-max", o.ttft_max, [](auto& x) {
      return units::ParseDuration(x);
    });
    if (!t) return tl::unexpected(t.error());
    ttft_max = t->si();
  }
  const model::ModelSpec& spec = m->spec;
  search::ServingPlanRequest req;
  req.base = *base;
  if (o.max_chips < 0 || o.max_chips > kMaxChipsCap.value) {
    return InvalidArgument(
        fmt::format("expected a chip count from 1 to {} (0 or absent: the "
                    "default), got {}",
                    kMaxChipsCap.text, o.max_chips),
        "--max-chips");
  }
  req.max_chips = o.max_chips > 0 ? o.max_chips : system_chips;
  req.tpot_max_s = tpot_max;
  req.ttft_max_s = ttft_max;
  if (!o.rate.empty()) {
    return RunServeSloSearch(cat, *m, **chip, *base, req.max_chips, o);
  }
  if (!o.slo_ttft.empty() || !o.slo_tpot.empty()) {
    return InvalidArgument(
        "the p99 SLOs are targets of the search at a request rate; add --rate",
        o.slo_ttft.empty() ? "--slo-tpot" : "--slo-ttft");
  }
  const search::ServingPlanResult res = search::PlanServing(spec, **chip, req);
  const int max_chips = res.max_chips;
  const double evaluated = res.configs_evaluated;
  const double elapsed = res.search_time_s;
  const search::ServingPlan* best =
      res.best ? &res.frontier[*res.best] : nullptr;
  Json fr = Json::array();
  std::vector<std::vector<std::string>> rows = {{"chips", "plan", "batch",
                                                 "TPOT", "TTFT", "tok/s/chip",
                                                 "$/M tok", "bound"}};
  std::vector<std::vector<std::string>> csv = {
      {"chips", "plan", "batch", "decode_step_time_s", "ttft_s",
       "tokens_per_s_per_chip", "cost_per_million_tokens_usd", "bound"}};
  for (const search::ServingPlan& p : res.frontier) {
    const estimate::ServeEstimate& e = p.estimate;
    fr.push_back({{"plan", p.PlanString()},
                  {"dp_attention", p.config.dp_attention},
                  {"batch", p.config.batch},
                  {"chips", p.chips()},
                  {"decode_step_time_s", e.decode_step.si()},
                  {"ttft_s", e.ttft.si()},
                  {"tokens_per_s_per_chip", e.tokens_per_s_per_chip},
                  {"cost_per_million_tokens_usd",
                   report::NumberOrNull(e.cost_per_million_tokens_usd)},
                  {"bound", e.bound}});
    rows.push_back({std::to_string(p.chips()), p.Label(),
                    FormatNumber(p.config.batch), FormatSeconds(e.decode_step),
                    FormatSeconds(e.ttft),
                    units::FormatCount(e.tokens_per_s_per_chip),
                    std::isnan(e.cost_per_million_tokens_usd)
                        ? "-"
                        : units::FormatUsd(e.cost_per_million_tokens_usd),
                    e.bound});
    csv.push_back({std::to_string(p.chips()), p.Label(),
                   CsvNumber(p.config.batch), CsvNumber(e.decode_step.si()),
                   CsvNumber(e.ttft.si()), CsvNumber(e.tokens_per_s_per_chip),
                   std::isnan(e.cost_per_million_tokens_usd)
                       ? ""
                       : CsvNumber(e.cost_per_million_tokens_usd),
                   e.bound});
  }
  Json best_json = nullptr;
  std::string best_text = "\nNo plan on the frontier meets the constraints.\n";
  if (best) {
    const double ratio = res.prefill_to_decode_chips;
    best_json = report::ToJson(best->estimate);
    best_json["plan"] = best->PlanString();
    best_json["dp_attention"] = best->config.dp_attention;
    best_json["batch"] = best->config.batch;
    best_json["chips"] = best->chips();
    best_json["prefill_to_decode_chips"] = ratio;
    best_text = fmt::format(
        "\nBest under the constraints: {} chips, {}, batch {}\n{}For "
        "disaggregated serving, {:.2f} prefill chips per decode chip "
        "(prefilling one request at a time on the same slice).\n",
        best->chips(), best->Label(), FormatNumber(best->config.batch),
        ServeText(best->estimate), ratio);
  }
  Output out;
  out.json = Document({{"model", spec.id},
                       {"chip", (*chip)->id},
                       {"prompt", base->prompt},
                       {"output", base->output},
                       {"weights", std::string(hw::DtypeName(base->weights))},
                       {"kv", std::string(hw::DtypeName(base->kv))},
                       {"max_chips", max_chips},
                       {"tpot_max_s", report::NumberOrNull(tpot_max)},
                       {"ttft_max_s", report::NumberOrNull(ttft_max)},
                       {"mode", o.mode}},
                      {{"frontier", fr},
                       {"best", best_json},
                       {"configs_evaluated", evaluated},
                       {"search_time_s", elapsed}});
  if (base->memory_fraction > 0) {
    out.json["inputs"]["mem_fraction"] = base->memory_fraction;
  }
  if (base->kv_free_fraction > 0) {
    out.json["inputs"]["kv_free_fraction"] = base->kv_free_fraction;
  }
  auto [trust, trust_json] =
      TrustOnChip(cat, **chip, false, base->mode == estimate::Mode::kRealistic);
  out.json["accuracy"] = trust_json;
  out.text = fmt::format(
      "{} on {} chips, prompt {} + output {} tokens: {}\n\nPareto frontier "
      "(time per output "
      "token vs throughput per chip):\n{}{}{}",
      spec.name, (*chip)->id, FormatNumber(base->prompt),
      FormatNumber(base->output),
      units::Plural(evaluated, "configuration", "configurations"), Table(rows),
      best_text, trust);
  out.csv = Csv(csv);
  if (!o.emit.empty()) {
    if (!best) {
      return InvalidArgument(
          "no plan on the frontier meets the constraints, so there is "
          "nothing to emit",
          "--emit");
    }
    auto launch = AddServeLaunch(o.emit, *m, best->system, best->config,
                                 best->estimate, out);
    if (!launch) return tl::unexpected(launch.error());
  }
  return out;
}

void AddServeSearchOptions(CLI::App* app, ServeSearchCli& o) {
  app->add_option("--model", o.model, "Catalog model or config.json")
      ->required();
  app->add_option("--system,--chip", o.chip,
                  "Chip to search slices of (h100, tpu-v5e); a system "
                  "(h100:8x2) gives its chip and, without --max-chips, its "
                  "size. --chip is an alias")
      ->required();
  app->add_option("--prompt", o.prompt, "Prompt tokens")->capture_default_str();
  app->add_option("--output", o.output, "Output tokens")->capture_default_str();
  app->add_option(
      "--max-chips", o.max_chips,
      "Largest slice to consider (default 256 TPUs, 8 NVLink domains)");
  app->add_option("--tpot-max", o.tpot_max,
                  "Latency target per output token (50ms)");
  app->add_option("--ttft-max", o.ttft_max, "Time-to-first-token target (2s)");
  app->add_option("--weights", o.weights, "bf16, fp8, int8, int4 or fp4")
      ->capture_default_str();
  app->add_option("--expert-weights", o.expert_weights, kExpertWeightsHelp);
  app->add_option("--kv", o.kv, "KV-cache dtype: bf16, fp8 or int8")
      ->capture_default_str();
  app->add_option("--mem-fraction", o.mem_fraction,
                  "The engine's static memory fraction, 0 to 1 (SGLang "
                  "--mem-fraction-static, vLLM --gpu-memory-utilization): "
                  "weights and KV cache get it of the device's memory as its "
                  "driver reports it (`chip NAME`); default 95% of the "
                  "datasheet capacity");
  app->add_option("--kv-free-fraction", o.kv_free_fraction,
                  "TensorRT-LLM's KV-cache fraction, 0 to 1 "
                  "(free_gpu_memory_fraction): the KV cache gets it of the "
                  "device's memory the weights and a 5% activation allowance "
                  "leave; instead of --mem-fraction");
  app->add_option("--mode", o.mode, "realistic or peak")->capture_default_str();
  app->add_option("--price-per-chip-hour", o.price, "USD per chip-hour");
  app->add_option("--emit", o.emit, fmt::format(kEmitHelp, "the best plan"));
  app->add_option("--engine", o.engine, kEngineHelp);
  AddServeSloOptions(app, o);
}

static void AddServeSimOptions(CLI::App* app, ServeSimCli& o) {
  app->add_option("--rate", o.rate,
                  "Simulate continuous batching: Poisson arrivals, requests/s "
                  "over all replicas");
  app->add_option("--concurrency", o.concurrency,
                  "Simulate continuous batching: this many clients, each "
                  "sending its next request when the last finishes (with "
                  "fixed lengths they stay in step; the report adds the "
                  "bound with their requests spread evenly)");
  app->add_option("--trace-file", o.trace_file,
                  "Simulate a trace: CSV or JSONL rows of arrival_s, "
                  "prompt_tokens, output_tokens; with --concurrency the "
                  "clients send its lengths in order (arrival times "
                  "ignored)");
  app->add_option("--dataset", o.dataset,
                  "With --concurrency or --rate: the lengths a benchmark "
                  "sends, request by request, instead of --prompt-dist and "
                  "--output-dist: sglang-random:IN:OUT[:RATIO[:SEED]] is "
                  "sglang.bench_serving --dataset-name random (range ratio "
                  "0 and seed 1 by default, its own), --requests of them");
  app->add_option("--requests", o.requests, "Requests to simulate")
      ->capture_default_str();
  app->add_option("--prompt-dist", o.prompt_dist,
                  "fixed (--prompt), fixed:N, uniform:LO:HI, normal:MEAN:SD or "
                  "lognormal:MEAN:SD")
      ->capture_default_str();
  app->add_option("--output-dist", o.output_dist,
                  "As --prompt-dist, for output tokens (fixed: --output)")
      ->capture_default_str();
  app->add_option("--max-num-seqs", o.max_num_seqs,
                  "Most sequences in one step (vLLM --max-num-seqs)")
      ->capture_default_str();
  app->add_option("--max-batched-tokens", o.max_batched_tokens,
                  "Most tokens in one step (vLLM --max-num-batched-tokens, "
                  "SGLang --chunked-prefill-size); default 8192, with "
                  "--engine sglang SGLang's own by the GPU's memory (16384 "
                  "on B200 and MI300X, 8192 on H100 and H200, 4096 on "
                  "A100 40GB and L40S)");
  app->add_option("--scheduler-recv-interval", o.recv_interval,
                  "SGLang --scheduler-recv-interval N: new requests are "
                  "received once every N decode steps (at once after a "
                  "prefill step or when idle), so in steady decode a "
                  "request waits up to N steps before its prefill")
      ->capture_default_str();
  app->add_option("--overlap-schedule", o.overlap,
                  "on or off: the engine forms each step while the one "
                  "before runs, so a request reaching a busy engine starts "
                  "one step later (SGLang from 0.4 unless "
                  "--disable-overlap-schedule, TensorRT-LLM from 1.0 unless "
                  "disable_overlap_scheduler, vLLM's --async-scheduling, "
                  "its default from 0.14); default: --engine's");
  app->add_option("--request-path", o.request_path,
                  "Time a request spends outside the engine's steps, added "
                  "to every TTFT and E2E: the HTTP front end, tokenizing, "
                  "the hop to the scheduler, detokenizing and streaming "
                  "(0 for an offline benchmark); default with --engine "
                  "6.9ms (measured on SGLang 0.5.11, docs/model.md 7.3), "
                  "else 0");
  app->add_option("--adp-balance-timeout", o.adp_balance,
                  "With --dp-attention, TensorRT-LLM's attention_dp_config "
                  "enable_balance with timeout_iters N: new requests start "
                  "only when every DP rank has one waiting, or after N "
                  "iterations without that (0: off)")
      ->capture_default_str();
  app->add_flag("--chunked-prefill", o.chunked_prefill,
                "Compute prompts in chunks of --max-batched-tokens, mixed "
                "into decode steps (vLLM V1); with --engine sglang each "
                "chunk runs in a step of its own, prefill first (SGLang). "
                "On whenever --engine is sglang, trtllm (in-flight "
                "batching) or vllm (V1, from 0.8)");
  app->add_flag("--enable-mixed-chunk", o.mixed_chunk,
                "With --engine sglang: mix prompt chunks into decode steps "
                "(SGLang --enable-mixed-chunk; off by default there)");
  app->add_option("--prefix-hit", o.prefix_hit,
                  "Fraction of each prompt found in the prefix cache, [0, 1)")
      ->capture_default_str();
  app->add_option("--seed", o.seed, "Random seed of arrivals and lengths")
      ->capture_default_str();
  app->add_option("--slo-ttft", o.slo_ttft, "TTFT target for goodput (2s)");
  app->add_option("--slo-tpot", o.slo_tpot, "TPOT target for goodput (50ms)");
}

// Whether serve simulates continuous batching: exactly one of --rate,
// --concurrency and --trace-file; the other simulation flags need one.
static Result<bool> SimulationWanted(const CLI::App& app, const ServeCli& cli) {
  const ServeSimCli& o = cli.sim;
  const bool replay =
      app.count("--concurrency") > 0 && app.count("--trace-file") > 0;
  int sources = (app.count("--rate") > 0) + (app.count("--concurrency") > 0) +
                (app.count("--trace-file") > 0) - replay;
  if (sources > 1) {
    return InvalidArgument(
        "give one of --rate (open-loop arrivals), --concurrency (closed-loop "
        "clients) and --trace-file, not several (--concurrency with "
        "--trace-file replays the trace's lengths)",
        "serve");
  }
  if (app.count("--dataset") > 0) {
    if (app.count("--trace-file") > 0 || app.count("--prompt-dist") > 0 ||
        app.count("--output-dist") > 0) {
      return InvalidArgument(
          "gives every request's lengths; drop --trace-file, "
          "--prompt-dist and --output-dist",
          "--dataset");
    }
    if (sources == 0) {
      return InvalidArgument(
          "needs --concurrency or --rate (how the requests are sent)",
          "--dataset");
    }
  }
  if (replay &&
      (app.count("--prompt-dist") > 0 || app.count("--output-dist") > 0 ||
       app.count("--requests") > 0)) {
    return InvalidArgument(
        "the trace gives the requests and their lengths; drop --requests, "
        "--prompt-dist and --output-dist",
        "--trace-file");
  }
  if (sources == 0 && o.given(app)) {
    return InvalidArgument(
        "the continuous-batching options need --rate, --concurrency or "
        "--trace-file",
        "serve");
  }
  // CLI11 reads "-1" into the unsigned seed as 2^64-1.
  if (const CLI::Option* seed = app.get_option_no_throw("--seed");
      seed != nullptr && seed->count() > 0 &&
      seed->results().front().find('-') != std::string::npos) {
    return InvalidArgument("expected a whole number from 0 to 2^64-1, got '" +
                               Excerpt(seed->results().front()) + "'",
                           "--seed");
  }
  if (o.mixed_chunk && estimate::EngineMixesPrefill(cli.engine)) {
    return InvalidArgument(
        "an SGLang option; add --engine sglang (other engines mix prompt "
        "chunks into decode steps already)",
        "--enable-mixed-chunk");
  }
  // 0 stands for the engine's own budget; a given one must be a budget.
  if (app.count("--max-batched-tokens") > 0 && o.max_batched_tokens < 1) {
    return InvalidArgument(
        "expected from 1 to 2^30 (1073741824) tokens per step, got " +
            std::to_string(o.max_batched_tokens),
        "--max-batched-tokens");
  }
  if (o.adp_balance != 0 && !cli.dp_attention) {
    return InvalidArgument(
        "a TensorRT-LLM attention-DP option; add --dp-attention (and ep > 1 "
        "in --plan)",
        "--adp-balance-timeout");
  }
  if (app.count("--concurrency") > 0 && o.concurrency < 1) {
    return InvalidArgument("expected a concurrency of at least 1, got " +
                               std::to_string(o.concurrency),
                           "--concurrency");
  }
  // A disaggregated simulation emits both pools and the router
  // (launch::EmitDisaggregated); an aggregated one has no launch line.
  if (sources == 1 && !cli.emit.empty() && !cli.disagg.given(app)) {
    return InvalidArgument(
        "a launch line comes from the static-batch answer; drop --rate, "
        "--concurrency and --trace-file to emit one",
        "--emit");
  }
  return sources == 1;
}

// The error for a flag a --from launch line already sets.
static tl::unexpected<Error> LineSetsThis(const std::string& flag) {
  return InvalidArgument(
      "the launch line given to --from sets this; change it in the line (or "
      "drop --from)",
      flag);
}

// The serving extensions a --from line sets (speculation, DP attention,
// redundant experts) into the options; the flags may not repeat them.
static Result<bool> FromExtensions(const CLI::App& app,
                                   const launch::ImportedServing& r,
                                   ServeCli* o) {
  const estimate::ServeConfig& c = r.config;
  const bool line_sets[] = {!r.spec.empty(), c.dp_attention,
                            c.redundant_experts > 0};
  const char* flags[] = {"--spec", "--dp-attention", "--redundant-experts"};
  for (int i = 0; i < 3; ++i) {
    if (line_sets[i] && app.count(flags[i]) > 0) {
      return LineSetsThis(flags[i]);
    }
  }
  if (!r.spec.empty()) o->spec = r.spec;
  if (c.dp_attention) o->dp_attention = true;
  if (c.redundant_experts > 0) o->redundant_experts = c.redundant_experts;
  return true;
}

// serve --from ENGINE ARG...: the server line becomes the model, plan,
// batch and dtypes (docs/cli.md "--from"); returns the notes to print.
static Result<std::vector<std::string>> ApplyServeFrom(
    const catalog::Catalog& cat, const CLI::App& app, ServeCli* o) {
  for (const char* f : {"--plan", "--weights", "--kv"}) {
    if (app.count(f) > 0) {
      return LineSetsThis(f);
    }
  }
  auto engine = launch::ParseServeEngine(o->from[0]);
  if (!engine) {
    return tl::unexpected(
        Error{engine.error().code, engine.error().message, "--from"});
  }
  auto sys = cat.FindSystem(o->system);
  if (!sys) {
    return tl::unexpected(
        Error{sys.error().code, sys.error().message, "--system"});
  }
  const std::vector<std::string> args(o->from.begin() + 1, o->from.end());
  auto r = launch::ImportServing(*engine, args, cat, *sys, o->model);
  if (!r)
    return tl::unexpected(Error{r.error().code, r.error().message, "--from"});
  const estimate::ServeConfig& c = r->config;
  o->model = r->model_name;
  o->plan = fmt::format("tp={},ep={},{}dp={}", c.tp, c.ep,
                        c.pp > 1 ? fmt::format("pp={},", c.pp) : "", c.dp);
  if (auto x = FromExtensions(app, *r, o); !x) return tl::unexpected(x.error());
  if (r->batch_given) {
    if (app.count("--batch") > 0) {
      return LineSetsThis("--batch");
    }
    o->batch = FormatNumber(c.batch);
  }
  o->weights = hw::DtypeName(c.weights);
  if (c.expert_weights && app.count("--expert-weights") == 0) {
    o->expert_weights = hw::DtypeName(*c.expert_weights);
  }
  o->kv = hw::DtypeName(c.kv);
  if (c.memory_fraction > 0) {
    if (app.count("--mem-fraction") > 0) {
      return LineSetsThis("--mem-fraction");
    }
    o->mem_fraction = FormatNumber(c.memory_fraction);
  }
  if (c.kv_free_fraction > 0) {
    if (app.count("--kv-free-fraction") > 0) {
      return LineSetsThis("--kv-free-fraction");
    }
    o->kv_free_fraction = FormatNumber(c.kv_free_fraction);
  }
  o->sim.from_engine = ToLower(launch::ServeEngineName(*engine));
  if (app.count("--max-num-seqs") == 0 && r->batch_given) {
    // The line's cap: per DP rank for vLLM and TensorRT-LLM (the import's
    // batch is ep ranks' worth), the server's for SGLang.
    const bool per_rank =
        c.dp_attention && estimate::EngineLimitsPerDpRank(o->sim.from_engine);
    o->sim.max_num_seqs = static_cast<int>(c.batch / (per_rank ? c.ep : 1));
  }
  if (app.count("--max-batched-tokens") == 0 && r->max_batched_tokens > 0) {
    o->sim.max_batched_tokens = static_cast<int>(r->max_batched_tokens);
  }
  if (r->recv_interval > 1) {
    if (app.count("--scheduler-recv-interval") > 0) {
      return LineSetsThis("--scheduler-recv-interval");
    }
    o->sim.recv_interval = r->recv_interval;
  }
  if (r->adp_balance_timeout > 0) {
    if (app.count("--adp-balance-timeout") > 0) {
      return LineSetsThis("--adp-balance-timeout");
    }
    o->sim.adp_balance = r->adp_balance_timeout;
  }
  if (r->prefill_graph >= 0) {
    if (app.count("--piecewise-cuda-graph") +
            app.count("--no-piecewise-cuda-graph") >
        0) {
      return LineSetsThis("--piecewise-cuda-graph");
    }
    o->prefill_graph = r->prefill_graph;
  }
  if (!c.moe_runner.empty()) {
    if (app.count("--moe-runner-backend") > 0) {
      return LineSetsThis("--moe-runner-backend");
    }
    o->moe_runner = c.moe_runner;
  }
  if (!c.shared_experts_fusion) o->no_shared_fusion = true;
  if (!c.attention_backend.empty()) {
    if (app.count("--attention-backend") > 0) {
      return LineSetsThis("--attention-backend");
    }
    o->attention_backend = c.attention_backend;
  }
  if (r->overlap_schedule >= 0) {
    if (app.count("--overlap-schedule") > 0) {
      return LineSetsThis("--overlap-schedule");
    }
    o->sim.overlap = r->overlap_schedule > 0 ? "on" : "off";
  }
  std::vector<std::string> notes;
  if (!r->model.resolution.empty()) notes.push_back(r->model.resolution);
  notes.insert(notes.end(), r->notes.begin(), r->notes.end());
  auto prompt = units::ParseCount(o->prompt);
  auto output = units::ParseCount(o->output);
  if (r->max_model_len > 0 && prompt && output &&
      *prompt + *output > static_cast<double>(r->max_model_len)) {
    notes.push_back(fmt::format(
        "prompt + output = {} tokens exceed the line's context limit of {}: "
        "the server would refuse such requests",
        FormatNumber(*prompt + *output), r->max_model_len));
  }
  std::string ignored;
  for (const std::string& a : r->ignored) {
    ignored += (ignored.empty() ? "" : ", ") + a;
  }
  if (!ignored.empty()) {
    notes.push_back(
        "read from the " + o->from[0] +
        " line and ignored (no effect on the estimate): " + ignored);
  }
  return notes;
}

Command AddServeCommand(CLI::App& app) {
  Command c;
  auto o = std::make_shared<ServeCli>();
  c.app = app.add_subcommand(
      "serve",
      "Prefill and decode time, TTFT, time per output token, throughput, "
      "memory "
      "and cost of\nserving a model with a given sharding and "
      "batch.\n\nExamples:\n"
      "  scalemodel serve --model llama3-70b --system h100:8x1 --plan tp=8 "
      "--batch 64 --prompt 2048 --output 512\n"
      "  scalemodel serve --model llama2-13b --system tpu-v5e:2x4 --plan tp=8 "
      "--batch 8 --prompt 8192 --output 1 --mode peak\n"
      "  scalemodel serve --model llama3-70b --system h100:8x1 --plan tp=8 "
      "--batch 64 --prompt 2048 --output 512 --weights fp8 --emit vllm\n"
      "  scalemodel serve --model llama3-70b --system h100:8x1 --plan tp=8 "
      "--rate 4 --requests 1000 --prompt-dist lognormal:2048:1024 "
      "--output-dist uniform:128:1024 --chunked-prefill --slo-ttft 2s "
      "--slo-tpot 50ms\n"
      "  scalemodel serve --model llama3-70b --system h100:8x1 --plan tp=8 "
      "--batch 16 --spec draft:llama3-8b:4 --spec-accept 0.7\n"
      "  scalemodel serve --model deepseek-v3 --system h800:8x18 --plan "
      "ep=144 --dp-attention --redundant-experts 32 --batch 6912 --weights "
      "fp8 --spec mtp:1\n"
      "  scalemodel serve --model llama3-405b --system h100:8x2 --plan "
      "tp=8,pp=2 --batch 64 --weights fp8\n"
      "  scalemodel serve --model llama3-70b --system h100:8x2 --prefill-plan "
      "tp=4,dp=2 --decode-plan tp=8 --rate 4 --prompt 2048 --output 256");
  c.app->add_option("--model", o->model, "Catalog model or config.json")
      ->required();
  c.app
      ->add_option("--system", o->system,
                   "Catalog system, CHIP:SHAPE or SYSTEM:SHAPE")
      ->required();
  c.app
      ->add_option(
          "--plan", o->plan,
          "tp=N[,ep=N][,pp=N][,dp=N]: tensor, expert and pipeline parallel "
          "per replica, replicas (product = chips)")
      ->capture_default_str();
  c.app->add_option("--batch", o->batch, "Concurrent sequences per replica")
      ->capture_default_str();
  c.app->add_option("--prompt", o->prompt, "Prompt tokens")
      ->capture_default_str();
  c.app->add_option("--output", o->output, "Output tokens")
      ->capture_default_str();
  c.app->add_option("--weights", o->weights, "bf16, fp8, int8, int4 or fp4")
      ->capture_default_str();
  c.app->add_option("--expert-weights", o->expert_weights, kExpertWeightsHelp);
  c.app->add_option("--kv", o->kv, "KV-cache dtype: bf16, fp8 or int8")
      ->capture_default_str();
  c.app->add_option("--mem-fraction", o->mem_fraction,
                    "The engine's static memory fraction, 0 to 1 (SGLang "
                    "--mem-fraction-static, vLLM --gpu-memory-utilization): "
                    "weights and KV cache get it of the device's memory as its "
                    "driver reports it (`chip NAME`); default 95% of the "
                    "datasheet capacity");
  c.app->add_option("--kv-free-fraction", o->kv_free_fraction,
                    "TensorRT-LLM's KV-cache fraction, 0 to 1 "
                    "(free_gpu_memory_fraction): the KV cache gets it of the "
                    "device's memory the weights and a 5% activation allowance "
                    "leave; instead of --mem-fraction");
  c.app->add_option("--mode", o->mode, "realistic or peak (the book's formula)")
      ->capture_default_str();
  c.app->add_option("--price-per-chip-hour", o->price, "USD per chip-hour");
  c.app->add_option("--emit", o->emit, fmt::format(kEmitHelp, "this plan"));
  c.app->add_option("--engine", o->engine, kEngineHelp);
  c.app
      ->add_flag_function(
          "--piecewise-cuda-graph,!--no-piecewise-cuda-graph",
          [o](std::int64_t n) { o->prefill_graph = n > 0 ? 1 : 0; },
          "Prefill steps replay piecewise CUDA graphs (SGLang "
          "--enable-piecewise-cuda-graph, TensorRT-LLM "
          "torch_compile_config.enable_piecewise_cuda_graph): no "
          "eager-prefill launch time from --engine (SGLang 0.5 before "
          "0.5.10 and TensorRT-LLM 1.x run prefill eagerly by default; "
          "SGLang from 0.5.10 captures it on NVIDIA GPUs before Blackwell "
          "without DP attention or pipeline stages); "
          "--no-piecewise-cuda-graph: eager prefill even there (SGLang "
          "--disable-piecewise-cuda-graph)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  c.app->add_option(
      "--moe-runner-backend", o->moe_runner,
      "The routed experts' kernel (SGLang --moe-runner-backend): "
      "flashinfer_trtllm takes its measured fit where the chip has one "
      "(B200); auto (the default) is the engine's choice: SGLang from 0.5.4 "
      "runs flashinfer_trtllm on Blackwell for DeepSeek-V3-architecture fp8 "
      "and fp4 checkpoints, else its Triton kernel (docs/model.md 7.2)");
  c.app->add_option(
      "--attention-backend", o->attention_backend,
      "The attention kernel (SGLang --attention-backend): fa3, SGLang's "
      "default for MLA models on Hopper, decodes over an fp8 KV cache at the "
      "chip's measured time per cached token (catalog mla_fp8_kv_token, "
      "H100 and H200); another backend keeps the cache's bytes at the HBM "
      "rate (docs/model.md 7.2)");
  c.app->add_flag(
      "--disable-shared-experts-fusion", o->no_shared_fusion,
      "Run DeepSeek's shared expert apart from the routed experts' fused-MoE "
      "op (SGLang's flag; from 0.4.8 on NVIDIA and 0.5.6 on AMD SGLang "
      "fuses it by default without expert parallelism or a FlashInfer MoE "
      "runner, docs/model.md 7.2)");
  c.app->add_option("--power-cap", o->power_cap,
                    "GPU board power limit (500 W): sustained matrix "
                    "throughput x (cap / TDP)^0.329 (docs/model.md 5.6)");
  AddServeSimOptions(c.app, o->sim);
  c.app->add_option("--spec", o->spec,
                    "Speculative decoding: mtp:K, eagle:K, draft:MODEL:K or "
                    "ngram:K (K draft tokens per step; docs/model.md 7.4)");
  c.app->add_option("--spec-accept", o->spec_accept,
                    "Probability a draft token is accepted, A or one per "
                    "position A1,A2,... (mtp default 0.85, DeepSeek-V3)");
  c.app->add_flag("--dp-attention", o->dp_attention,
                  "Data-parallel attention over the ep ranks (SGLang "
                  "--enable-dp-attention); routed experts stay split");
  c.app
      ->add_option("--redundant-experts", o->redundant_experts,
                   "Extra routed-expert copies over the replica (DeepSeek "
                   "EPLB); ep divides experts + copies")
      ->capture_default_str();
  AddDisaggOptions(c.app, o->disagg);
  c.app
      ->add_option("--from", o->from,
                   "Estimate the server a launch line describes: vllm "
                   "\"serve MODEL --tensor-parallel-size ...\", sglang "
                   "\"--model-path MODEL --tp-size ...\" or trtllm "
                   "\"trtllm-serve MODEL --tp_size ...\" (or a script); the "
                   "system and --prompt/--output come from the options")
      ->expected(1, -1)
      ->each([app = c.app](const std::string&) {
        app->get_option("--model")->required(false);
      });
  c.action = [o, app = c.app](const catalog::Catalog& cat) -> Result<Output> {
    std::vector<std::string> from_notes;
    if (!o->from.empty()) {
      auto f = ApplyServeFrom(cat, *app, o.get());
      if (!f) return tl::unexpected(f.error());
      from_notes = *f;
    } else if (o->model.empty()) {
      return InvalidArgument("--model is required (or --from)", "serve");
    }
    auto m = ingest::FindModel(cat, o->model);
    if (!m) return tl::unexpected(m.error());
    auto sys = cat.FindSystem(o->system);
    if (!sys)
      return tl::unexpected(
          Error{sys.error().code, sys.error().message, "--system"});
    if (auto p = ApplyPowerCap(o->power_cap, &*sys); !p) {
      return tl::unexpected(p.error());
    }
    auto cfg = ParseServeCommon(o->prompt, o->output, o->weights, o->kv,
                                o->mode, o->price, o->engine, o->mem_fraction,
                                o->kv_free_fraction);
    if (!cfg) return tl::unexpected(cfg.error());
    estimate::ApplyPrefillGraph(o->prefill_graph, &*cfg);
    if (!o->moe_runner.empty()) {
      auto runner =
          estimate::ParseMoeRunner(o->moe_runner, "--moe-runner-backend");
      if (!runner) return tl::unexpected(runner.error());
      cfg->moe_runner = *runner;
    }
    cfg->shared_experts_fusion = !o->no_shared_fusion;
    if (!o->attention_backend.empty()) {
      auto backend = estimate::ParseAttentionBackend(o->attention_backend,
                                                     "--attention-backend");
      if (!backend) return tl::unexpected(backend.error());
      cfg->attention_backend = *backend;
    }
    auto b = ParseOption<double>("--batch", o->batch,
                                 [](auto& t) { return units::ParseCount(t); });
    if (!b) return tl::unexpected(b.error());
    b = WholeUpTo("--batch", *b, "sequences per replica", kMaxSequencesCap);
    if (!b) return tl::unexpected(b.error());
    cfg->batch = *b;
    auto plan = estimate::ParsePlan(o->plan);
    if (!plan) return tl::unexpected(plan.error());
    if (plan->fsdp > 1 || plan->cp > 1 || !plan->axes.empty()) {
      return InvalidArgument(
          "serving plans take tp, ep, pp and dp degrees only", "--plan");
    }
    cfg->tp = plan->tp;
    cfg->ep = plan->ep;
    cfg->pp = plan->pp;
    cfg->dp = plan->dp;
    if (auto x = ApplyServeExtensions(cat, *o, &*cfg); !x) {
      return tl::unexpected(x.error());
    }
    auto simulate = SimulationWanted(*app, *o);
    if (!simulate) return tl::unexpected(simulate.error());
    const bool disagg = o->disagg.given(*app);
    if (disagg && (app->count("--plan") > 0 || !*simulate)) {
      return InvalidArgument(
          app->count("--plan") > 0
              ? "give --plan (one pool) or --prefill-plan and --decode-plan "
                "(disaggregated), not both"
              : "disaggregated serving is simulated; add --rate or "
                "--trace-file",
          "--prefill-plan");
    }
    if (*simulate) {
      return RunServeSim(cat, *m, *sys, *cfg, *o, disagg, from_notes);
    }
    auto e = estimate::EstimateServing(m->spec, *sys, *cfg);
    if (!e) return tl::unexpected(e.error());
    if (std::string n = estimate::PowerCapNote(sys->chip);
        !n.empty() && o->mode != "peak") {
      e->notes.insert(e->notes.begin(), n);
    }
    if (!m->resolution.empty() && o->from.empty()) {
      from_notes.push_back(m->resolution);
    }
    // The checkpoint's quantization, read from its config.json: what the
    // estimate took and how to change it.
    for (const std::string& n : m->notes) {
      if (n.rfind("quantization method", 0) == 0 && !cfg->expert_weights) {
        from_notes.push_back(n);
      }
    }
    e->notes.insert(e->notes.begin(), from_notes.begin(), from_notes.end());
    if (cfg->spec.on()) {
      e->notes.insert(
          e->notes.begin(),
          fmt::format(
              "speculative decoding {}: {:.2f} tokens per sequence "
              "per verify step of {} (drafting {} of it); time per "
              "output token is the step over the tokens",
              o->spec, e->spec_tokens_per_step, FormatSeconds(e->spec_step),
              FormatSeconds(e->decode_parts.draft * e->spec_tokens_per_step)));
    }
    Output out;
    out.json = Document({{"model", m->spec.id},
                         {"system", sys->id},
                         {"plan", o->plan},
                         {"batch", cfg->batch},
                         {"prompt", cfg->prompt},
                         {"output", cfg->output},
                         {"weights", std::string(hw::DtypeName(cfg->weights))},
                         {"kv", std::string(hw::DtypeName(cfg->kv))},
                         {"mode", o->mode}},
                        report::ToJson(*e));
    PutServeExtensions(*cfg, &*e, &out.json);
    auto [trust, trust_json] =
        TrustOnChip(cat, sys->chip, false,
                    cfg->mode == estimate::Mode::kRealistic, cfg->dp_attention);
    out.json["accuracy"] = trust_json;
    out.text =
        fmt::format("{} on {} ({}), batch {}, prompt {} + output {}\n\n",
                    m->spec.name, sys->id, o->plan, FormatNumber(cfg->batch),
                    FormatNumber(cfg->prompt), FormatNumber(cfg->output)) +
        ServeText(*e) + trust;
    auto launch = AddServeLaunch(o->emit, *m, *sys, *cfg, *e, out);
    if (!launch) return tl::unexpected(launch.error());
    if (!o->trace.empty()) {
      auto put = PutTrace(timeline::ServingTimeline(*e, *cfg, m->spec, *sys),
                          o->trace, "request latency", out);
      if (!put) return tl::unexpected(put.error());
    }
    return out;
  };
  c.app->add_option("--trace", o->trace,
                    "Write a Chrome trace-event file (FILE.json or "
                    "FILE.json.gz) for Perfetto: the prefill and every decode "
                    "step, or with --rate/--concurrency/--trace-file the "
                    "simulated requests over time (docs/trace.md)");
  return c;
}

}  // namespace scalemodel::cli
