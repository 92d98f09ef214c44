// serve --prefill-plan/--decode-plan (disaggregated serving, simulated) and
// plan serve --rate (the cheapest plan under TTFT and TPOT p99 SLOs).
#include <cmath>

#include "commands.h"
#include "fmt/format.h"
#include "scalemodel/base/strings.h"
#include "scalemodel/estimate/batching.h"
#include "scalemodel/estimate/disaggregated.h"
#include "scalemodel/launch/launch.h"
#include "scalemodel/search/serving.h"
#include "scalemodel/search/serving_slo.h"
#include "scalemodel/units/parse.h"

namespace scalemodel::cli {

namespace {

Json PercentilesJson(const estimate::Percentiles& p) {
  return {{"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}, {"mean", p.mean}};
}

struct PoolDegrees {
  int tp = 1, ep = 1, dp = 1;
  int replica_chips() const { return tp * ep; }
  int chips() const { return tp * ep * dp; }
};

// "tp=N[,ep=N][,dp=N]" for one pool; errors name `flag`.
Result<PoolDegrees> ParsePool(const std::string& text, const char* flag) {
  auto plan = estimate::ParsePlan(text);
  if (!plan)
    return tl::unexpected(Error{plan.error().code, plan.error().message, flag});
  if (plan->fsdp > 1 || plan->pp > 1 || plan->cp > 1 || !plan->axes.empty()) {
    return InvalidArgument(
        "a serving pool takes tp, ep and dp degrees only, such as tp=4,dp=2",
        flag);
  }
  return PoolDegrees{plan->tp, plan->ep, plan->dp};
}

// One pool's replica cost model on a system of the pool's chips.
Result<estimate::StepCostModel> PoolCost(const ingest::ImportedModel& m,
                                         const hw::Chip& chip,
                                         estimate::ServeConfig cfg,
                                         const PoolDegrees& p,
                                         const char* flag) {
  auto sys = search::SystemOfChips(chip, p.chips());
  if (!sys || sys->num_chips() != p.chips()) {
    return InvalidArgument(
        fmt::format("no system of {} {} chips for this "
                    "pool; use a multiple of {} chips",
                    p.chips(), chip.id,
                    chip.nvlink ? chip.nvlink->domain_size : 1),
        flag);
  }
  cfg.tp = p.tp;
  cfg.ep = p.ep;
  cfg.dp = p.dp;
  auto sc = estimate::StepCostModel::Create(m.spec, *sys, cfg);
  if (!sc) {
    return tl::unexpected(Error{sc.error().code, sc.error().message, flag});
  }
  return sc;
}

// One pool's server settings for its launch line: the degrees, its
// instances as dp, the scheduler's cap on running requests as the batch.
estimate::ServeConfig PoolConfig(estimate::ServeConfig cfg,
                                 const PoolDegrees& p, int max_num_seqs) {
  cfg.tp = p.tp;
  cfg.ep = p.ep;
  cfg.dp = p.dp;
  cfg.batch = max_num_seqs;
  return cfg;
}

Json LinkJson(const estimate::KvTransferLink& l) {
  return {{"name", l.name},
          {"bytes_per_s_per_chip", l.bytes_per_s_per_chip},
          {"latency_s", l.latency_s}};
}

// The JSON "disaggregated" object: pools, link, transfer times.
Json DisaggJson(const estimate::DisaggregatedResult& r,
                const estimate::KvTransferLink& link) {
  return {{"prefill_chips", r.prefill_chips},
          {"decode_chips", r.decode_chips},
          {"prefill_to_decode_chips",
           static_cast<double>(r.prefill_chips) / r.decode_chips},
          {"link", LinkJson(link)},
          {"kv_transfer_s", PercentilesJson(r.kv_transfer_s)},
          {"kv_exposed_s", PercentilesJson(r.kv_exposed_s)},
          {"prefill_pool", report::ToJson(r.prefill_pool)},
          {"decode_pool", report::ToJson(r.decode_pool)},
          {"closed_loop_rate_per_s", r.closed_loop_rate_per_s > 0
                                         ? Json(r.closed_loop_rate_per_s)
                                         : Json(nullptr)}};
}

std::string PoolText(const char* name, const std::string& plan,
                     const estimate::SimulationResult& r) {
  return fmt::format(
      "{} pool ({}): KV cache peak {:.0f}% of {} tokens per replica, {}, {} "
      "steps, largest {} tokens\n",
      name, plan, 100 * r.kv_peak_fraction,
      units::FormatCount(r.kv_capacity_tokens),
      units::Plural(r.preemptions, "preemption", "preemptions"), r.steps,
      units::FormatCount(r.max_step_tokens));
}

// --trace-file (the simulated requests) and --emit (both pools and the
// router) of a disaggregated simulation.
Result<bool> PutDisaggExtras(const std::string& trace, const std::string& emit,
                             const ingest::ImportedModel& m,
                             const hw::System& sys,
                             const estimate::ServeConfig& cfg,
                             const estimate::SchedulerOptions& sched,
                             const PoolDegrees& prefill,
                             const PoolDegrees& decode,
                             estimate::KvOverlap overlap,
                             const estimate::SimulationResult& s, Output& out) {
  if (!trace.empty()) {
    auto put = PutTrace(timeline::SimulationTimeline(s), trace,
                        "simulated duration", out);
    if (!put) return tl::unexpected(put.error());
  }
  if (emit.empty()) return true;
  launch::DisaggregatedPlan plan;
  plan.prefill = PoolConfig(cfg, prefill, sched.max_num_seqs);
  plan.decode = PoolConfig(cfg, decode, sched.max_num_seqs);
  plan.max_batched_tokens = sched.max_batched_tokens;
  plan.chunked_prefill = sched.chunked_prefill;
  plan.overlap = overlap;
  plan.ttft_p99_s = s.ttft_s.p99;
  plan.tpot_p99_s = s.tpot_s.p99;
  auto c = launch::EmitDisaggregatedChecked(emit, m, sys, plan);
  if (!c) return tl::unexpected(EmitError(c.error()));
  return PutCheckedLaunch(*c, out);
}

}  // namespace

bool DisaggCli::given(const CLI::App& app) const {
  return app.count("--prefill-plan") > 0 || app.count("--decode-plan") > 0 ||
         app.count("--kv-transfer") > 0;
}

void AddDisaggOptions(CLI::App* app, DisaggCli& o) {
  app->add_option("--prefill-plan", o.prefill_plan,
                  "Disaggregated serving: the prefill pool, tp=N[,ep=N][,dp=N] "
                  "(with --decode-plan; the pools fill --system)");
  app->add_option("--decode-plan", o.decode_plan,
                  "Disaggregated serving: the decode pool, tp=N[,ep=N][,dp=N]");
  app->add_option("--kv-transfer", o.kv_transfer,
                  "When the KV moves to the decode pool: after (the prefill) "
                  "or layerwise (overlapped)")
      ->capture_default_str();
}

Result<Output> RunServeDisagg(
    const ingest::ImportedModel& m, const hw::System& sys,
    const estimate::ServeConfig& cfg, const estimate::Workload& w,
    const estimate::SchedulerOptions& sched, const estimate::Slo& slo,
    const std::string& arrivals, const DisaggCli& d, const std::string& trace,
    const std::string& emit) {
  if (d.prefill_plan.empty() || d.decode_plan.empty()) {
    return InvalidArgument(
        "disaggregated serving needs both --prefill-plan and --decode-plan",
        d.prefill_plan.empty() ? "--prefill-plan" : "--decode-plan");
  }
  auto pp = ParsePool(d.prefill_plan, "--prefill-plan");
  if (!pp) return tl::unexpected(pp.error());
  auto dp = ParsePool(d.decode_plan, "--decode-plan");
  if (!dp) return tl::unexpected(dp.error());
  auto overlap = estimate::ParseKvOverlap(d.kv_transfer, "--kv-transfer");
  if (!overlap) return tl::unexpected(overlap.error());
  if (pp->chips() + dp->chips() != sys.num_chips()) {
    return InvalidArgument(
        fmt::format("expected the prefill and decode pools to fill the {} "
                    "chips of {}, got {} + {}",
                    sys.num_chips(), sys.id, pp->chips(), dp->chips()),
        "--decode-plan");
  }
  auto pc = PoolCost(m, sys.chip, cfg, *pp, "--prefill-plan");
  if (!pc) return tl::unexpected(pc.error());
  auto dc = PoolCost(m, sys.chip, cfg, *dp, "--decode-plan");
  if (!dc) return tl::unexpected(dc.error());
  // The prefill pool runs whole prompts (its own --chunked-prefill); the
  // decode pool mixes each handed-off request's first step into decode
  // steps.
  estimate::SchedulerOptions dsched = sched;
  dsched.chunked_prefill = true;
  estimate::DisaggregatedPools pools{*pc, pp->dp, sched, *dc, dp->dp, dsched};
  pools.link = estimate::KvTransferLinkOf(sys.chip, sys.num_chips());
  pools.overlap = *overlap;
  pools.layers = m.spec.num_layers;
  auto r = estimate::SimulateDisaggregated(pools, w, slo);
  if (!r) return tl::unexpected(r.error());
  const estimate::SimulationResult& s = r->service;
  Output out;
  out.json = Document(
      {{"model", m.spec.id},
       {"system", sys.id},
       {"prefill_plan", d.prefill_plan},
       {"decode_plan", d.decode_plan},
       {"kv_transfer", d.kv_transfer},
       {"arrivals", arrivals},
       {"max_num_seqs", sched.max_num_seqs},
       {"max_batched_tokens", sched.max_batched_tokens},
       {"chunked_prefill", sched.chunked_prefill},
       {"prefix_hit", sched.prefix_hit},
       {"seed", w.seed},
       {"slo_ttft_s", slo.ttft_s > 0 ? Json(slo.ttft_s) : Json(nullptr)},
       {"slo_tpot_s", slo.tpot_s > 0 ? Json(slo.tpot_s) : Json(nullptr)},
       {"weights", std::string(hw::DtypeName(cfg.weights))},
       {"kv", std::string(hw::DtypeName(cfg.kv))}},
      report::ToJson(s));
  out.json["disaggregated"] = DisaggJson(*r, pools.link);
  out.text =
      fmt::format(
          "{} on {}: disaggregated, prefill {} ({} chips) + decode {} ({} "
          "chips), {} requests, {}\nKV transfer over {} ({}/s per chip, {}): "
          "p50 {}, p99 {}; exposed p99 {}\n\n",
          m.spec.name, sys.id, d.prefill_plan, r->prefill_chips, d.decode_plan,
          r->decode_chips, s.requests, arrivals,
          pools.link.name.empty() ? "no network" : pools.link.name,
          FormatBytes(units::Bytes(pools.link.bytes_per_s_per_chip)),
          d.kv_transfer, FormatSeconds(units::Seconds(r->kv_transfer_s.p50)),
          FormatSeconds(units::Seconds(r->kv_transfer_s.p99)),
          FormatSeconds(units::Seconds(r->kv_exposed_s.p99))) +
      SimText(s, slo) + PoolText("prefill", d.prefill_plan, r->prefill_pool) +
      PoolText("decode", d.decode_plan, r->decode_pool);
  auto put = PutDisaggExtras(trace, emit, m, sys, cfg, sched, *pp, *dp,
                             *overlap, s, out);
  if (!put) return tl::unexpected(put.error());
  return out;
}

namespace {

Json PoolJson(const search::PoolPlan& p) {
  return {{"plan", p.PlanString()},
          {"tp", p.tp},
          {"ep", p.ep},
          {"pp", p.pp},
          {"dp", p.replicas},
          {"chips", p.chips()},
          {"max_num_seqs", p.max_num_seqs},
          {"max_batched_tokens", p.max_batched_tokens},
          {"chunked_prefill", p.chunked_prefill},
          {"dp_attention", p.dp_attention}};
}

// Each SLO the plan misses: {"slo", "p99_s", "target_s", "over_fraction"}.
Json Misses(const search::SloPlan& p, const search::SloPlanRequest& r) {
  Json out = Json::array();
  auto add = [&out](const char* name, double v, double target) {
    if (v > target) {
      out.push_back({{"slo", name},
                     {"p99_s", v},
                     {"target_s", target},
                     {"over_fraction", v / target - 1}});
    }
  };
  add("ttft", p.ttft_p99_s, r.ttft_p99_s);
  add("tpot", p.tpot_p99_s, r.tpot_p99_s);
  return out;
}

Json SloPlanJson(const search::SloPlan& p, const search::SloPlanRequest& r) {
  Json j = {{"kind", p.disaggregated ? "disaggregated" : "aggregated"},
            {"plan", p.PlanString()},
            {"chips", p.chips},
            {"ttft_p99_s", p.ttft_p99_s},
            {"tpot_p99_s", p.tpot_p99_s},
            {"estimated_ttft_p99_s", p.estimated_ttft_p99_s},
            {"estimated_tpot_p99_s", p.estimated_tpot_p99_s},
            {"simulated", p.simulated},
            {"meets_slo", p.meets},
            {"misses", Misses(p, r)},
            {"reason", p.reason},
            {"output_tokens_per_s", p.output_tokens_per_s},
            {"cost_per_million_output_tokens_usd",
             report::NumberOrNull(p.cost_per_million_output_tokens_usd)}};
  if (p.disaggregated) {
    j["prefill"] = PoolJson(p.pool);
    j["decode"] = PoolJson(p.decode);
    j["prefill_to_decode_chips"] =
        static_cast<double>(p.pool.chips()) / p.decode.chips();
  } else {
    j["pool"] = PoolJson(p.pool);
  }
  return j;
}

std::string CostText(double usd) {
  return std::isnan(usd) ? std::string("-") : units::FormatUsd(usd);
}

// "TPOT p99 61.2 ms misses 50 ms by 22%; ..." or "".
std::string MissText(const search::SloPlan& p,
                     const search::SloPlanRequest& r) {
  if (!p.reason.empty()) return "not feasible: " + p.reason;
  std::string s;
  auto add = [&s](const char* name, double v, double target) {
    if (v <= target) return;
    s += fmt::format("{}{} p99 {} misses {} by {:.0f}%", s.empty() ? "" : "; ",
                     name, FormatSeconds(units::Seconds(v)),
                     FormatSeconds(units::Seconds(target)),
                     100 * (v / target - 1));
  };
  add("TTFT", p.ttft_p99_s, r.ttft_p99_s);
  add("TPOT", p.tpot_p99_s, r.tpot_p99_s);
  return s;
}

std::string PoolsText(const search::SloPlan& p, bool limits_per_rank) {
  auto pool = [&](const char* name, const search::PoolPlan& q) {
    return fmt::format(
        "  {}{} ({} chips): max-num-seqs {}, "
        "max-batched-tokens {}{}, chunked prefill {}\n",
        name, q.PlanString(), q.chips(), q.max_num_seqs, q.max_batched_tokens,
        q.dp_attention && limits_per_rank ? " (per DP rank)" : "",
        q.chunked_prefill ? "on" : "off");
  };
  if (!p.disaggregated) return pool("", p.pool);
  return pool("prefill ", p.pool) + pool("decode ", p.decode);
}

std::string SloResultText(const search::SloPlanResult& res,
                          const search::SloPlanRequest& r) {
  if (res.plans.empty()) return "\nNo plan: " + res.reason + ".\n";
  const search::SloPlan& b = res.plans[0];
  std::string s = res.met ? "\nCheapest plan meeting both SLOs: "
                          : fmt::format(
                                "\nNo plan within {} chips meets "
                                "the SLOs. Closest: ",
                                res.max_chips);
  s += fmt::format(
      "{} {}, {} chips\n  TTFT p99 {}, TPOT p99 {} "
      "(simulated), {} per million output tokens\n",
      b.disaggregated ? "disaggregated" : "aggregated", b.PlanString(), b.chips,
      FormatSeconds(units::Seconds(b.ttft_p99_s)),
      FormatSeconds(units::Seconds(b.tpot_p99_s)),
      CostText(b.cost_per_million_output_tokens_usd));
  s += PoolsText(b, r.limits_per_rank);
  if (!res.met) s += "  " + MissText(b, r) + "\n";
  std::vector<std::vector<std::string>> rows = {{"#", "kind", "plan", "chips",
                                                 "TTFT p99", "TPOT p99",
                                                 "$/M tok", "meets"}};
  for (size_t i = 0; i < res.plans.size(); ++i) {
    const search::SloPlan& p = res.plans[i];
    rows.push_back(
        {std::to_string(i + 1), p.disaggregated ? "disagg" : "agg",
         p.PlanString(), std::to_string(p.chips),
         FormatSeconds(units::Seconds(p.ttft_p99_s)),
         FormatSeconds(units::Seconds(p.tpot_p99_s)),
         CostText(p.cost_per_million_output_tokens_usd),
         p.meets ? "yes" : (p.reason.empty() ? "no" : "infeasible")});
  }
  return s + "\nSimulated plans:\n" + Table(rows);
}

// A system spelling of `chips` chips for serve: GPUs as NVLink domains of
// the largest size dividing the count that holds whole replicas of
// `group` chips (tp x ep), or whole domains of a larger replica, so that
// the plan's mesh lays onto it (12 chips of tp=4 replicas: 4x3, not 6x2);
// TPUs as the search's slice. Empty when there is none.
std::string SystemOf(const hw::Chip& chip, int chips, int group) {
  if (chip.is_tpu() || !chip.nvlink) {
    auto sys = search::SystemOfChips(chip, chips);
    return sys ? sys->id : "";
  }
  auto lays = [&](int k) {
    return chips % k == 0 && (group <= k ? k % group == 0 : group % k == 0);
  };
  int k = std::min(chips, chip.nvlink->domain_size);
  while (k > 1 && !lays(k)) --k;
  return fmt::format("{}:{}x{}", chip.id, k, chips / k);
}

// The largest replica of the plan's pools, in chips (tp x ep).
int ReplicaChips(const search::SloPlan& p) {
  const int pool = p.pool.tp * p.pool.ep;
  return p.disaggregated ? std::max(pool, p.decode.tp * p.decode.ep) : pool;
}

// The serve command that simulates `p` again with the search's workload.
std::string ServeCommand(const search::SloPlan& p,
                         const search::SloPlanRequest& r,
                         const std::string& model, const hw::Chip& chip,
                         const std::string& engine) {
  const std::string sys = SystemOf(chip, p.chips, ReplicaChips(p));
  if (sys.empty()) return "";
  std::string s = "scalemodel serve --model " + model + " --system " + sys;
  if (p.disaggregated) {
    s += " --prefill-plan " + p.pool.PlanString() + " --decode-plan " +
         p.decode.PlanString();
    if (r.overlap == estimate::KvOverlap::kLayerwise) {
      s += " --kv-transfer layerwise";
    }
  } else {
    s += " --plan " + p.pool.PlanString();
    if (p.pool.chunked_prefill) s += " --chunked-prefill";
  }
  if (p.pool.dp_attention) s += " --dp-attention";
  if (!engine.empty()) s += " --engine " + engine;
  s += fmt::format(
      " --max-num-seqs {} --max-batched-tokens {} --rate {} --requests {} "
      "--seed {} --prompt {} --output {}",
      p.pool.max_num_seqs, p.pool.max_batched_tokens, r.rate_per_s,
      r.sim_requests, r.seed, static_cast<int64_t>(r.base.prompt),
      static_cast<int64_t>(r.base.output));
  if (r.base.weights != hw::Dtype::kBf16) {
    s += " --weights " + std::string(hw::DtypeName(r.base.weights));
  }
  if (r.base.expert_weights) {
    s += " --expert-weights " +
         std::string(hw::DtypeName(*r.base.expert_weights));
  }
  if (r.base.kv != hw::Dtype::kBf16) {
    s += " --kv " + std::string(hw::DtypeName(r.base.kv));
  }
  if (r.base.memory_fraction > 0) {
    s += " --mem-fraction " + FormatNumber(r.base.memory_fraction);
  }
  if (r.base.kv_free_fraction > 0) {
    s += " --kv-free-fraction " + FormatNumber(r.base.kv_free_fraction);
  }
  if (r.base.mode == estimate::Mode::kPeak) s += " --mode peak";
  return s;
}

// The command on a few lines that still paste whole (" \\" breaks before
// the plan, the scheduler and the lengths).
std::string Continued(std::string cmd) {
  for (const char* flag :
       {" --prefill-plan ", " --plan ", " --max-num-seqs ", " --prompt "}) {
    const size_t at = cmd.find(flag);
    if (at != std::string::npos) cmd.replace(at, 1, " \\\n      ");
  }
  return cmd;
}

// The pool's server as a static batch: its max-num-seqs cap over the
// replica (ep ranks' caps when the engine's limits are per DP rank).
estimate::ServeConfig PoolServeConfig(const search::SloPlanRequest& r,
                                      const search::PoolPlan& p) {
  estimate::ServeConfig c = r.base;
  c.tp = p.tp;
  c.ep = p.ep;
  c.pp = p.pp;
  c.dp = p.replicas;
  c.dp_attention = p.dp_attention;
  c.batch = static_cast<double>(p.max_num_seqs) *
            (p.dp_attention && r.limits_per_rank ? p.ep : 1);
  return c;
}

// --emit with --rate: the best plan's launch, aggregated (its pool's
// server, estimated at its max-num-seqs cap) or disaggregated (both pools
// and the router).
Result<bool> AddSloLaunch(const catalog::Catalog& cat,
                          const ingest::ImportedModel& m, const hw::Chip& chip,
                          const search::SloPlanRequest& r,
                          const search::SloPlanResult& res,
                          const std::string& emit, Output& out) {
  if (!res.met) {
    return InvalidArgument(
        "no plan meets the SLOs, so there is nothing to emit; relax "
        "--slo-ttft/--slo-tpot or allow more chips",
        "--emit");
  }
  const search::SloPlan& p = res.plans[0];
  auto sys = cat.FindSystem(SystemOf(chip, p.chips, ReplicaChips(p)));
  if (!sys) return tl::unexpected(EmitError(sys.error()));
  if (p.disaggregated) {
    launch::DisaggregatedPlan plan;
    plan.prefill = PoolServeConfig(r, p.pool);
    plan.decode = PoolServeConfig(r, p.decode);
    plan.max_batched_tokens = p.pool.max_batched_tokens;
    plan.chunked_prefill = p.pool.chunked_prefill;
    plan.overlap = r.overlap;
    plan.ttft_p99_s = p.ttft_p99_s;
    plan.tpot_p99_s = p.tpot_p99_s;
    auto c = launch::EmitDisaggregatedChecked(emit, m, *sys, plan);
    if (!c) return tl::unexpected(EmitError(c.error()));
    return PutCheckedLaunch(*c, out);
  }
  const estimate::ServeConfig cfg = PoolServeConfig(r, p.pool);
  auto est = estimate::EstimateServing(m.spec, *sys, cfg);
  if (!est) return tl::unexpected(EmitError(est.error()));
  auto c = launch::EmitServingChecked(emit, m, *sys, cfg, *est);
  if (!c) return tl::unexpected(EmitError(c.error()));
  return PutCheckedLaunch(*c, out);
}

// --csv: one row per simulated plan, best (or closest) first.
std::string SloCsv(const std::vector<search::SloPlan>& plans) {
  std::vector<std::vector<std::string>> rows = {
      {"rank", "kind", "plan", "chips", "ttft_p99_s", "tpot_p99_s",
       "cost_per_million_output_tokens_usd", "meets_slo"}};
  for (size_t i = 0; i < plans.size(); ++i) {
    const search::SloPlan& p = plans[i];
    const double usd = p.cost_per_million_output_tokens_usd;
    rows.push_back({std::to_string(i + 1),
                    p.disaggregated ? "disaggregated" : "aggregated",
                    p.PlanString(), std::to_string(p.chips),
                    CsvNumber(p.ttft_p99_s), CsvNumber(p.tpot_p99_s),
                    std::isnan(usd) ? "" : CsvNumber(usd),
                    p.meets ? "true" : "false"});
  }
  return Csv(rows);
}

// --rate, the SLOs and --layouts into the library's request.
Result<search::SloPlanRequest> SloRequest(const estimate::ServeConfig& base,
                                          int max_chips,
                                          const ServeSearchCli& o) {
  search::SloPlanRequest r;
  r.base = base;
  r.max_chips = max_chips;
  char* end = nullptr;
  r.rate_per_s = std::strtod(o.rate.c_str(), &end);
  if (*end != '\0' || !(r.rate_per_s > 0) || !std::isfinite(r.rate_per_s)) {
    return InvalidArgument(
        "expected a request rate > 0 (requests/s), got '" + o.rate + "'",
        "--rate");
  }
  if (o.slo_ttft.empty() || o.slo_tpot.empty()) {
    return InvalidArgument(
        "plan serve --rate needs both --slo-ttft and --slo-tpot (p99 "
        "targets such as 2s and 50ms)",
        o.slo_ttft.empty() ? "--slo-ttft" : "--slo-tpot");
  }
  auto parse = [](const char* flag, const std::string& text) {
    return ParseOption<units::Seconds>(
        flag, text, [](auto& x) { return units::ParseDuration(x); });
  };
  auto ttft = parse("--slo-ttft", o.slo_ttft);
  if (!ttft) return tl::unexpected(ttft.error());
  auto tpot = parse("--slo-tpot", o.slo_tpot);
  if (!tpot) return tl::unexpected(tpot.error());
  r.ttft_p99_s = ttft->si();
  r.tpot_p99_s = tpot->si();
  r.sim_requests = o.requests;
  r.seed = o.seed;
  r.mixed_prefill = estimate::EngineMixesPrefill(o.engine);
  r.limits_per_rank = estimate::EngineLimitsPerDpRank(o.engine);
  r.reserve_to_finish = estimate::EngineReservesToFinish(o.engine);
  r.overlap_schedule = estimate::EngineOverlapsScheduling(o.engine);
  r.request_path_s = estimate::EngineRequestPath(o.engine);
  if (o.layouts != "both" && o.layouts != "aggregated" &&
      o.layouts != "disaggregated") {
    return InvalidArgument("expected both, aggregated or disaggregated, got '" +
                               Excerpt(o.layouts) + "'",
                           "--layouts");
  }
  r.aggregated = o.layouts != "disaggregated";
  r.disaggregated = o.layouts != "aggregated";
  auto overlap = estimate::ParseKvOverlap(o.kv_transfer, "--kv-transfer");
  if (!overlap) return tl::unexpected(overlap.error());
  r.overlap = *overlap;
  return r;
}

}  // namespace

void AddServeSloOptions(CLI::App* app, ServeSearchCli& o) {
  app->add_option("--rate", o.rate,
                  "Search for the cheapest plan at this request rate "
                  "(requests/s, Poisson) under --slo-ttft and --slo-tpot");
  app->add_option("--slo-ttft", o.slo_ttft,
                  "With --rate: TTFT p99 target (2s)");
  app->add_option("--slo-tpot", o.slo_tpot,
                  "With --rate: TPOT p99 target (50ms)");
  app->add_option("--requests", o.requests,
                  "With --rate: requests per simulated candidate")
      ->capture_default_str();
  app->add_option("--seed", o.seed, "With --rate: random seed of arrivals")
      ->capture_default_str();
  app->add_option("--layouts", o.layouts,
                  "With --rate: both, aggregated or disaggregated")
      ->capture_default_str();
  app->add_option("--kv-transfer", o.kv_transfer,
                  "With --rate: disaggregated KV transfer after the prefill "
                  "or layerwise")
      ->capture_default_str();
}

Result<Output> RunServeSloSearch(const catalog::Catalog& cat,
                                 const ingest::ImportedModel& m,
                                 const hw::Chip& chip,
                                 const estimate::ServeConfig& base,
                                 int max_chips, const ServeSearchCli& o) {
  if (!o.tpot_max.empty() || !o.ttft_max.empty()) {
    return InvalidArgument(
        "--tpot-max and --ttft-max belong to the static search; with --rate "
        "give --slo-ttft and --slo-tpot",
        "--rate");
  }
  auto req = SloRequest(base, max_chips, o);
  if (!req) return tl::unexpected(req.error());
  auto res = search::PlanServingForSlo(m.spec, chip, *req);
  if (!res) return tl::unexpected(res.error());
  Json plans = Json::array();
  for (const search::SloPlan& p : res->plans) {
    Json j = SloPlanJson(p, *req);
    j["serve_command"] = ServeCommand(p, *req, o.model, chip, o.engine);
    plans.push_back(j);
  }
  Output out;
  out.json = Document(
      {{"model", m.spec.id},
       {"chip", chip.id},
       {"rate_per_s", req->rate_per_s},
       {"prompt", base.prompt},
       {"output", base.output},
       {"weights", std::string(hw::DtypeName(base.weights))},
       {"kv", std::string(hw::DtypeName(base.kv))},
       {"slo_ttft_p99_s", req->ttft_p99_s},
       {"slo_tpot_p99_s", req->tpot_p99_s},
       {"max_chips", res->max_chips},
       {"layouts", o.layouts},
       {"kv_transfer", o.kv_transfer},
       {"requests_per_simulation", req->sim_requests},
       {"seed", req->seed},
       {"mode", o.mode}},
      {{"meets_slo", res->met},
       {"best", res->met ? plans[0] : Json(nullptr)},
       {"closest", !res->met && !plans.empty() ? plans[0] : Json(nullptr)},
       {"plans", plans},
       {"reason", res->reason},
       {"price_per_chip_hour_usd",
        report::NumberOrNull(res->price_per_chip_hour > 0
                                 ? res->price_per_chip_hour
                                 : std::nan(""))},
       {"candidates_estimated", res->candidates},
       {"simulations", res->simulations},
       {"search_time_s", res->search_time_s}});
  if (base.memory_fraction > 0) {
    out.json["inputs"]["mem_fraction"] = base.memory_fraction;
  }
  if (base.kv_free_fraction > 0) {
    out.json["inputs"]["kv_free_fraction"] = base.kv_free_fraction;
  }
  auto [trust, trust_json] =
      TrustOnChip(cat, chip, false, base.mode == estimate::Mode::kRealistic);
  out.json["accuracy"] = trust_json;
  out.csv = SloCsv(res->plans);
  out.text =
      fmt::format(
          "{} on {} at {} requests/s, prompt {} + output {} tokens; "
          "SLOs: TTFT p99 <= {}, TPOT p99 <= {}\n{} candidates "
          "estimated, {} simulated ({} requests each), {:.2f} s\n",
          m.spec.name, chip.id, FormatNumber(req->rate_per_s),
          FormatNumber(base.prompt), FormatNumber(base.output),
          FormatSeconds(units::Seconds(req->ttft_p99_s)),
          FormatSeconds(units::Seconds(req->tpot_p99_s)), res->candidates,
          res->simulations, req->sim_requests, res->search_time_s) +
      SloResultText(*res, *req) +
      (plans.empty() || plans[0]["serve_command"].get<std::string>().empty()
           ? ""
           : "\nSimulate the first again (and see its pools):\n  " +
                 Continued(plans[0]["serve_command"].get<std::string>()) +
                 "\n") +
      trust;
  if (!o.emit.empty()) {
    auto put = AddSloLaunch(cat, m, chip, *req, *res, o.emit, out);
    if (!put) return tl::unexpected(put.error());
  }
  return out;
}

}  // namespace scalemodel::cli
