#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "commands.h"
#include "fmt/format.h"
#include "scalemodel/base/strings.h"
#include "scalemodel/estimate/inference.h"
#include "scalemodel/estimate/training.h"
#include "scalemodel/ingest/hf_config.h"
#include "scalemodel/launch/launch.h"
#include "scalemodel/model/transformer.h"
#include "scalemodel/net/collective.h"
#include "scalemodel/roofline/roofline.h"
#include "scalemodel/search/parallelism.h"
#include "scalemodel/search/serving.h"
#include "scalemodel/sharding/matmul.h"
#include "scalemodel/units/format.h"
#include "scalemodel/units/parse.h"
#include "scalemodel/validate/validate.h"

namespace scalemodel::cli {

struct ServeCli {
  std::string model, system, plan = "tp=1", batch = "1", prompt = "1024",
                             output = "256", weights = "bf16", kv = "bf16",
                             mode = "realistic", emit;
  double price = 0;
};

static constexpr const char* kEmitHelp =
    "Print the launch line for {} instead of the report, checked by the "
    "engine's rules: vllm or sglang, optionally @VERSION (docs/launch.md; "
    "--json adds it as \"launch\")";

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

static Result<estimate::ServeConfig> ParseServeCommon(
    const std::string& prompt, const std::string& output,
    const std::string& weights, const std::string& kv, const std::string& mode,
    double price) {
  estimate::ServeConfig c;
  auto p = ParseOption<double>("--prompt", prompt,
                               [](auto& t) { return units::ParseLength(t); });
  if (!p) return tl::unexpected(p.error());
  auto o = ParseOption<double>("--output", output,
                               [](auto& t) { return units::ParseLength(t); });
  if (!o) return tl::unexpected(o.error());
  c.prompt = *p;
  c.output = *o;
  auto w = hw::ParseDtype(weights);
  if (!w || (*w != hw::Dtype::kBf16 && *w != hw::Dtype::kFp8 &&
             *w != hw::Dtype::kInt8 && *w != hw::Dtype::kInt4 &&
             *w != hw::Dtype::kFp4)) {
    return InvalidArgument(
        "expected bf16, fp8, int8, int4 or fp4, got '" + weights + "'",
        "--weights");
  }
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

static std::string ServeText(const estimate::ServeEstimate& e) {
  std::string s;
  if (!e.feasible) s += "NOT FEASIBLE: " + e.reason + "\n";
  s += fmt::format(
      "time per output token {} ({}-bound; weights {}, KV cache {}, compute "
      "{}, communication {}, fixed {})\nTTFT {} (prefill of the batch), "
      "request latency {}\nthroughput {:.0f} output tokens/s ({:.0f} per chip, "
      "{:.1f} per user)\nmemory per chip: {} of {} (weights {}, KV cache {}); "
      "max batch {:.0f}\ncost {}\n",
      FormatSeconds(e.decode_step), e.bound, FormatSeconds(e.weight_time),
      FormatSeconds(e.kv_time), FormatSeconds(e.compute_time),
      FormatSeconds(e.comm_time), FormatSeconds(e.overhead),
      FormatSeconds(e.ttft), FormatSeconds(e.request_latency), e.tokens_per_s,
      e.tokens_per_s_per_chip, e.tokens_per_s_per_user,
      FormatBytes(e.total_bytes), FormatBytes(e.capacity_bytes),
      FormatBytes(e.weights_bytes), FormatBytes(e.kv_cache_bytes), e.max_batch,
      std::isnan(e.cost_per_million_tokens_usd)
          ? std::string("unknown (no price; pass --price-per-chip-hour)")
          : fmt::format("${:.3f} per million output tokens",
                        e.cost_per_million_tokens_usd));
  for (const std::string& n : e.notes) s += "- " + n + "\n";
  return s;
}

Result<Output> RunServeSearch(const catalog::Catalog& cat,
                              const ServeSearchCli& o) {
  if (!o.emit.empty()) {
    auto engine = launch::ParseServeEngine(o.emit);
    if (!engine) return tl::unexpected(EmitError(engine.error()));
  }
  auto m = ingest::FindModel(cat, o.model);
  if (!m) return tl::unexpected(m.error());
  auto chip = cat.FindChip(o.chip);
  if (!chip)
    return tl::unexpected(
        Error{chip.error().code, chip.error().message, "--chip"});
  auto base =
      ParseServeCommon(o.prompt, o.output, o.weights, o.kv, o.mode, o.price);
  if (!base) return tl::unexpected(base.error());
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
  req.max_chips = o.max_chips;
  req.tpot_max_s = tpot_max;
  req.ttft_max_s = ttft_max;
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
  for (const search::ServingPlan& p : res.frontier) {
    const estimate::ServeEstimate& e = p.estimate;
    fr.push_back({{"plan", p.PlanString()},
                  {"batch", p.config.batch},
                  {"chips", p.chips()},
                  {"decode_step_time_s", e.decode_step.si()},
                  {"ttft_s", e.ttft.si()},
                  {"tokens_per_s_per_chip", e.tokens_per_s_per_chip},
                  {"cost_per_million_tokens_usd",
                   report::NumberOrNull(e.cost_per_million_tokens_usd)},
                  {"bound", e.bound}});
    rows.push_back({std::to_string(p.chips()), p.PlanString(),
                    FormatNumber(p.config.batch), FormatSeconds(e.decode_step),
                    FormatSeconds(e.ttft),
                    fmt::format("{:.0f}", e.tokens_per_s_per_chip),
                    std::isnan(e.cost_per_million_tokens_usd)
                        ? "-"
                        : fmt::format("{:.3f}", e.cost_per_million_tokens_usd),
                    e.bound});
  }
  Json best_json = nullptr;
  std::string best_text = "\nNo plan on the frontier meets the constraints.\n";
  if (best) {
    const double ratio = res.prefill_to_decode_chips;
    best_json = report::ToJson(best->estimate);
    best_json["plan"] = best->PlanString();
    best_json["batch"] = best->config.batch;
    best_json["chips"] = best->chips();
    best_json["prefill_to_decode_chips"] = ratio;
    best_text = fmt::format(
        "\nBest under the constraints: {} chips, {}, batch {}\n{}For "
        "disaggregated serving, {:.2f} prefill chips per decode chip "
        "(prefilling one request at a time on the same slice).\n",
        best->chips(), best->PlanString(), FormatNumber(best->config.batch),
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
  auto [trust, trust_json] =
      TrustOnChip(cat, **chip, false, base->mode == estimate::Mode::kRealistic);
  out.json["accuracy"] = trust_json;
  out.text = fmt::format(
      "{} on {} chips, prompt {} + output {} tokens: {:.0f} "
      "configurations\n\nPareto frontier (time per output "
      "token vs throughput per chip):\n{}{}{}",
      spec.name, (*chip)->id, FormatNumber(base->prompt),
      FormatNumber(base->output), evaluated, Table(rows), best_text, trust);
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
  app->add_option("--chip", o.chip, "Chip id")->required();
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
  app->add_option("--kv", o.kv, "KV-cache dtype: bf16, fp8 or int8")
      ->capture_default_str();
  app->add_option("--mode", o.mode, "realistic or peak")->capture_default_str();
  app->add_option("--price-per-chip-hour", o.price, "USD per chip-hour");
  app->add_option("--emit", o.emit, fmt::format(kEmitHelp, "the best plan"));
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
      "--batch 64 --prompt 2048 --output 512 --weights fp8 --emit vllm");
  c.app->add_option("--model", o->model, "Catalog model or config.json")
      ->required();
  c.app
      ->add_option("--system", o->system,
                   "Catalog system, CHIP:SHAPE or SYSTEM:SHAPE")
      ->required();
  c.app
      ->add_option(
          "--plan", o->plan,
          "tp=N[,ep=N][,dp=N]: tensor and expert parallel per replica, "
          "replicas (product = chips)")
      ->capture_default_str();
  c.app->add_option("--batch", o->batch, "Concurrent sequences per replica")
      ->capture_default_str();
  c.app->add_option("--prompt", o->prompt, "Prompt tokens")
      ->capture_default_str();
  c.app->add_option("--output", o->output, "Output tokens")
      ->capture_default_str();
  c.app->add_option("--weights", o->weights, "bf16, fp8, int8, int4 or fp4")
      ->capture_default_str();
  c.app->add_option("--kv", o->kv, "KV-cache dtype: bf16, fp8 or int8")
      ->capture_default_str();
  c.app->add_option("--mode", o->mode, "realistic or peak (the book's formula)")
      ->capture_default_str();
  c.app->add_option("--price-per-chip-hour", o->price, "USD per chip-hour");
  c.app->add_option("--emit", o->emit, fmt::format(kEmitHelp, "this plan"));
  c.action = [o](const catalog::Catalog& cat) -> Result<Output> {
    auto m = ingest::FindModel(cat, o->model);
    if (!m) return tl::unexpected(m.error());
    auto sys = cat.FindSystem(o->system);
    if (!sys)
      return tl::unexpected(
          Error{sys.error().code, sys.error().message, "--system"});
    auto cfg = ParseServeCommon(o->prompt, o->output, o->weights, o->kv,
                                o->mode, o->price);
    if (!cfg) return tl::unexpected(cfg.error());
    auto b = ParseOption<double>("--batch", o->batch,
                                 [](auto& t) { return units::ParseCount(t); });
    if (!b) return tl::unexpected(b.error());
    cfg->batch = *b;
    auto plan = estimate::ParsePlan(o->plan);
    if (!plan) return tl::unexpected(plan.error());
    if (plan->fsdp > 1 || plan->pp > 1 || plan->cp > 1 || !plan->axes.empty()) {
      return InvalidArgument("serving plans take tp, ep and dp degrees only",
                             "--plan");
    }
    cfg->tp = plan->tp;
    cfg->ep = plan->ep;
    cfg->dp = plan->dp;
    auto e = estimate::EstimateServing(m->spec, *sys, *cfg);
    if (!e) return tl::unexpected(e.error());
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
    auto [trust, trust_json] = TrustOnChip(
        cat, sys->chip, false, cfg->mode == estimate::Mode::kRealistic);
    out.json["accuracy"] = trust_json;
    out.text =
        fmt::format("{} on {} ({}), batch {}, prompt {} + output {}\n\n",
                    m->spec.name, sys->id, o->plan, FormatNumber(cfg->batch),
                    FormatNumber(cfg->prompt), FormatNumber(cfg->output)) +
        ServeText(*e) + trust;
    auto launch = AddServeLaunch(o->emit, *m, *sys, *cfg, *e, out);
    if (!launch) return tl::unexpected(launch.error());
    return out;
  };
  return c;
}

}  // namespace scalemodel::cli
