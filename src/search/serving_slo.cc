#include "scalemodel/search/serving_slo.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>

#include "scalemodel/base/strings.h"
#include "scalemodel/estimate/batching.h"
#include "scalemodel/hw/price.h"
#include "scalemodel/search/serving.h"

namespace scalemodel::search {

std::string PoolPlan::PlanString() const {
  std::string s = "tp=" + std::to_string(tp);
  if (ep > 1) s += ",ep=" + std::to_string(ep);
  if (pp > 1) s += ",pp=" + std::to_string(pp);
  if (replicas > 1) s += ",dp=" + std::to_string(replicas);
  return s;
}

std::string SloPlan::PlanString() const {
  const char* dpa = pool.dp_attention ? " dp-attention" : "";
  if (!disaggregated) return pool.PlanString() + dpa;
  return "prefill " + pool.PlanString() + " + decode " + decode.PlanString() +
         dpa;
}

namespace {

// One replica layout of the chip: its slice and step costs.
struct Layout {
  ReplicaShape shape;
  hw::System system;
  estimate::StepCostModel cost;
  double kv_capacity_tokens = 0;  // per replica
  int chips() const { return shape.tp * shape.ep * shape.pp; }
  // Engines per replica: one per pipeline stage (docs/model.md 7.6), each
  // with 1/pp of the KV cache.
  int engines() const { return shape.pp; }
  // A replica's sequence cap as its engine's --max-num-seqs: each DP
  // rank's share when the engine's limits are per rank.
  int RankCap(int replica_cap, bool limits_per_rank) const {
    if (!shape.dp_attention || !limits_per_rank) return replica_cap;
    return std::max(1, (replica_cap + shape.ep - 1) / shape.ep);
  }
  PoolPlan Pool(int replicas, int max_num_seqs, int max_batched_tokens,
                bool chunked) const {
    return {shape.tp,     shape.ep,           shape.pp, replicas,
            max_num_seqs, max_batched_tokens, chunked,  shape.dp_attention};
  }
};

// Every replica shape (ReplicaShapes) of 1, 2, 4, ... chips up to
// `max_chips` whose weights leave room for at least one request's KV in
// each of its engines.
std::vector<Layout> Layouts(const model::ModelSpec& spec, const hw::Chip& chip,
                            const estimate::ServeConfig& base, int max_chips) {
  std::vector<Layout> out;
  const double tokens = base.prompt + base.output;
  for (long n = 1; n <= max_chips; n *= 2) {
    auto sys = SystemOfChips(chip, static_cast<int>(n));
    if (!sys) continue;
    for (const ReplicaShape& shape : ReplicaShapes(spec, chip, n)) {
      estimate::ServeConfig cfg = base;
      cfg.tp = shape.tp;
      cfg.ep = shape.ep;
      cfg.pp = shape.pp;
      cfg.dp_attention = shape.dp_attention;
      cfg.dp = 1;
      auto sc = estimate::StepCostModel::Create(spec, *sys, cfg);
      if (!sc) continue;
      const double cap =
          sc->KvCapacityBytesPerChip() / sc->KvBytesPerTokenPerChip();
      // A request lives on one engine (a pipeline stage's, a DP rank's).
      if (!(cap >= tokens * shape.pp * sc->dp_ranks())) continue;
      out.push_back({shape, *sys, *sc, cap});
    }
  }
  return out;
}

// The 99th-percentile wait of a queue served at utilization `rho` with
// service time `service` (M/D/1 with an exponential tail: the M/M/1 p99
// wait halved for deterministic service). Infinite at rho >= 1.
double WaitP99(double rho, double service) {
  if (rho >= 1) return std::numeric_limits<double>::infinity();
  if (rho <= 0.01) return 0;
  return service * std::log(100 * rho) / (2 * (1 - rho));
}

// A replica's steady state at `lambda` requests/s: the fixed point of the
// step time s, with lambda x output x s sequences decoding and (when
// `chunk` > 0) lambda x prompt x s prompt tokens per step.
struct Steady {
  bool stable = false;
  double step_s = 0, decode_seqs = 0, prefill_tokens = 0;
};

Steady SteadyState(const estimate::StepCostModel& sc, double lambda, double P,
                   double O, double chunk) {
  Steady st;
  double s = sc.Cost({1, P + O / 2, 0, 0}).total().si();
  for (int k = 0; k < 200; ++k) {
    const double b = lambda * O * s;
    const double pt = chunk > 0 ? lambda * P * s : 0;
    if (chunk > 0 && b + pt > chunk) return st;
    const double next =
        sc.Cost({b, b * (P + O / 2), pt, pt * P / 2}).total().si();
    if (!(next < 1e3)) return st;
    if (std::abs(next - s) <= 1e-7 * s) {
      st.stable = true;
      st.step_s = next;
      st.decode_seqs = b;
      st.prefill_tokens = pt;
      return st;
    }
    s = next;
  }
  return st;
}

// The max-num-seqs cap for a steady decode batch: twice it, a power of two
// from 8 to 1024, within the KV cache.
int SeqCap(double decode_seqs, double kv_tokens, double tokens) {
  int cap = 8;
  while (cap < 1024 && cap < 2 * decode_seqs) cap *= 2;
  const int fit = static_cast<int>(std::floor(kv_tokens / tokens));
  return std::max(1, std::min(cap, fit));
}

struct Estimate {
  bool ok = false;
  double ttft = 0, tpot = 0;
  int seq_cap = 1;
};

// Aggregated: `replicas` of `l` with chunked prefill of `chunk` tokens.
Estimate EstimateAggregated(const Layout& l, int replicas, int chunk,
                            const SloPlanRequest& r) {
  Estimate e;
  const double P = r.base.prompt, O = r.base.output;
  // Each engine (a pipeline stage's scheduler) takes its share of the
  // requests and of the KV cache.
  const int engines = replicas * l.engines();
  const double kv = l.kv_capacity_tokens / l.engines();
  Steady st = SteadyState(l.cost, r.rate_per_s / engines, P, O, chunk);
  if (!st.stable || st.decode_seqs * (P + O) > kv) return e;
  const double room = std::max(1.0, chunk - st.decode_seqs);
  const double prefill = std::ceil(P / room) * st.step_s;
  const double rho = r.rate_per_s / engines * prefill;
  e.ttft = prefill + st.step_s + WaitP99(rho, prefill);
  e.tpot = st.step_s;
  e.ok = std::isfinite(e.ttft);
  e.seq_cap = SeqCap(st.decode_seqs, kv, P + O);
  return e;
}

// A disaggregated prefill pool's TTFT p99 before the transfer.
double PrefillPoolTtft(const Layout& l, int replicas, const SloPlanRequest& r) {
  const double P = r.base.prompt;
  const double t = l.cost.Cost({0, 0, P, P * P / 2}).total().si();
  return t + WaitP99(r.rate_per_s / replicas * t, t);
}

// A disaggregated decode pool's TPOT, and its cap.
Estimate DecodePool(const Layout& l, int replicas, const SloPlanRequest& r) {
  Estimate e;
  const double P = r.base.prompt, O = r.base.output;
  Steady st = SteadyState(l.cost, r.rate_per_s / replicas, P + 1, O - 1, 0);
  if (!st.stable || st.decode_seqs * (P + O) > l.kv_capacity_tokens) return e;
  e.ok = true;
  e.tpot = st.step_s;
  e.seq_cap = SeqCap(st.decode_seqs, l.kv_capacity_tokens, P + O);
  return e;
}

// The larger of p99 / SLO: <= 1 meets both.
double Miss(const SloPlanRequest& r, double ttft, double tpot) {
  return std::max(ttft / r.ttft_p99_s, tpot / r.tpot_p99_s);
}

struct Candidate {
  SloPlan plan;
  const Layout* a = nullptr;  // the pool (aggregated) or prefill pool
  const Layout* b = nullptr;  // the decode pool
  double miss = 0;
};

SloPlan AggregatedPlan(const Layout& l, int replicas, int chunk,
                       const Estimate& e, const SloPlanRequest& r) {
  SloPlan p;
  p.pool =
      l.Pool(replicas, l.RankCap(e.seq_cap, r.limits_per_rank), chunk, true);
  p.chips = p.pool.chips();
  p.estimated_ttft_p99_s = p.ttft_p99_s = e.ttft;
  p.estimated_tpot_p99_s = p.tpot_p99_s = e.tpot;
  return p;
}

// For each layout and chunk size, the fewest replicas whose estimate meets
// the SLOs (or, when none within the chips does, the most replicas that
// are stable, as a closest plan).
void AggregatedCandidates(const std::vector<Layout>& layouts,
                          const SloPlanRequest& r, int max_chips,
                          std::vector<Candidate>* out) {
  for (const Layout& l : layouts) {
    for (int chunk : {2048, 8192}) {
      std::optional<Candidate> best;
      for (int n = 1; n * l.chips() <= max_chips; ++n) {
        Estimate e = EstimateAggregated(l, n, chunk, r);
        if (!e.ok) continue;
        const double miss = Miss(r, e.ttft, e.tpot);
        if (!best || miss < best->miss) {
          best =
              Candidate{AggregatedPlan(l, n, chunk, e, r), &l, nullptr, miss};
        }
        if (miss <= 1) break;
      }
      if (best) out->push_back(*best);
    }
  }
}

// The fewest replicas of `l` meeting `target` by `metric` (a pool's p99
// estimate), or nearly the best within the chips; -1 when no count is
// stable.
template <typename F>
int FewestReplicas(const Layout& l, int max_chips, double target, F metric,
                   double* value) {
  int best = -1;
  *value = std::numeric_limits<double>::infinity();
  std::vector<double> seen;
  for (int n = 1; n * l.chips() <= max_chips; ++n) {
    seen.push_back(metric(n));
    if (seen.back() < *value) {
      *value = seen.back();
      best = n;
    }
    if (seen.back() <= target) return best;
  }
  // Out of reach: the fewest replicas within 5% of the best, which leaves
  // chips for the other pool of a closest plan.
  for (size_t i = 0; best > 0 && i < seen.size(); ++i) {
    if (seen[i] <= 1.05 * *value) {
      *value = seen[i];
      return static_cast<int>(i) + 1;
    }
  }
  return best;
}

void DisaggregatedCandidates(const std::vector<Layout>& layouts,
                             const hw::Chip& chip, int layers,
                             const SloPlanRequest& r, int max_chips,
                             std::vector<Candidate>* out) {
  const double P = r.base.prompt;
  for (const Layout& d : layouts) {
    // Disaggregated pools take tp, ep and dp (serve --prefill-plan).
    if (d.shape.pp > 1) continue;
    double tpot = 0;
    int nd = FewestReplicas(
        d, max_chips, r.tpot_p99_s,
        [&](int n) {
          Estimate e = DecodePool(d, n, r);
          return e.ok ? e.tpot : std::numeric_limits<double>::infinity();
        },
        &tpot);
    if (nd < 1) continue;
    const Estimate de = DecodePool(d, nd, r);
    for (const Layout& p : layouts) {
      // One --dp-attention flag for both pools.
      if (p.shape.pp > 1 || p.shape.dp_attention != d.shape.dp_attention) {
        continue;
      }
      const int left = max_chips - nd * d.chips();
      if (left < p.chips()) continue;
      auto ttft_of = [&](int n) {
        const estimate::KvTransferLink link =
            estimate::KvTransferLinkOf(chip, n * p.chips() + nd * d.chips());
        const double x =
            estimate::KvTransferSeconds(P, p.cost.KvBytesPerTokenPerChip(),
                                        d.cost.KvBytesPerTokenPerChip(), link);
        const double pre = p.cost.Cost({0, 0, P, P * P / 2}).total().si();
        return PrefillPoolTtft(p, n, r) +
               estimate::ExposedTransferSeconds(x, pre, layers, r.overlap);
      };
      double ttft = 0;
      int np = FewestReplicas(p, left, r.ttft_p99_s, ttft_of, &ttft);
      if (np < 1 || !std::isfinite(ttft)) continue;
      SloPlan plan;
      plan.disaggregated = true;
      // One scheduler for both pools (serve --max-num-seqs and
      // --max-batched-tokens set both): whole prompts in the prefill pool,
      // handed-off requests mixed into decode steps.
      const int budget = std::max(8192, static_cast<int>(P));
      const int cap = d.RankCap(de.seq_cap, r.limits_per_rank);
      plan.pool = p.Pool(np, cap, budget, false);
      plan.decode = d.Pool(nd, cap, budget, true);
      plan.chips = plan.pool.chips() + plan.decode.chips();
      plan.estimated_ttft_p99_s = plan.ttft_p99_s = ttft;
      plan.estimated_tpot_p99_s = plan.tpot_p99_s = tpot;
      out->push_back({plan, &p, &d, Miss(r, ttft, tpot)});
    }
  }
}

estimate::Workload SimWorkload(const SloPlanRequest& r) {
  estimate::Workload w;
  w.arrivals = estimate::Workload::kPoisson;
  w.rate_per_s = r.rate_per_s;
  w.requests = r.sim_requests;
  w.prompt = {estimate::LengthDist::kFixed, r.base.prompt};
  w.output = {estimate::LengthDist::kFixed, r.base.output};
  w.seed = r.seed;
  return w;
}

estimate::SchedulerOptions SchedulerOf(const PoolPlan& p,
                                       const SloPlanRequest& r) {
  estimate::SchedulerOptions s;
  s.max_num_seqs = p.max_num_seqs;
  s.max_batched_tokens = p.max_batched_tokens;
  s.chunked_prefill = p.chunked_prefill;
  s.mixed_prefill = r.mixed_prefill;
  s.limits_per_rank = r.limits_per_rank;
  s.reserve_to_finish = r.reserve_to_finish;
  s.overlap_schedule = r.overlap_schedule;
  s.request_path_s = r.request_path_s;
  return s;
}

// Simulates the candidate's plan: its p99s, throughput and whether it
// meets the SLOs.
Result<bool> Simulate(const Candidate& c, const hw::Chip& chip, int layers,
                      const SloPlanRequest& r, SloPlan* p) {
  const estimate::Workload w = SimWorkload(r);
  const estimate::Slo slo{r.ttft_p99_s, r.tpot_p99_s};
  estimate::SimulationResult s;
  if (!p->disaggregated) {
    auto sim = estimate::SimulateServing(c.a->cost, p->pool.replicas, w,
                                         SchedulerOf(p->pool, r), slo);
    if (!sim) return tl::unexpected(sim.error());
    s = std::move(*sim);
  } else {
    estimate::DisaggregatedPools pools{
        c.a->cost, p->pool.replicas,   SchedulerOf(p->pool, r),
        c.b->cost, p->decode.replicas, SchedulerOf(p->decode, r)};
    pools.link = estimate::KvTransferLinkOf(chip, p->chips);
    pools.overlap = r.overlap;
    pools.layers = layers;
    auto sim = estimate::SimulateDisaggregated(pools, w, slo);
    if (!sim) return tl::unexpected(sim.error());
    s = std::move(sim->service);
  }
  p->simulated = true;
  p->reason = s.reason;
  p->ttft_p99_s = s.feasible ? s.ttft_s.p99 : 0;
  p->tpot_p99_s = s.feasible ? s.tpot_s.p99 : 0;
  p->output_tokens_per_s = s.throughput_output_tokens_per_s;
  p->meets = s.feasible && p->ttft_p99_s <= r.ttft_p99_s &&
             p->tpot_p99_s <= r.tpot_p99_s;
  return true;
}

// One more replica in the pool that missed; false when the chips run out.
bool AddReplica(const SloPlanRequest& r, int max_chips, Candidate* c) {
  SloPlan& p = c->plan;
  const bool ttft = p.ttft_p99_s > r.ttft_p99_s;
  const bool tpot = p.tpot_p99_s > r.tpot_p99_s;
  if (!p.disaggregated) {
    p.pool.replicas += 1;
  } else {
    if (ttft || !p.simulated) p.pool.replicas += 1;
    if (tpot) p.decode.replicas += 1;
  }
  p.chips = p.pool.chips() + (p.disaggregated ? p.decode.chips() : 0);
  return p.chips <= max_chips;
}

// Candidates ranked for simulation: meeting the estimate first, then fewer
// chips, then the smaller miss; one per plan string.
std::vector<Candidate> Rank(std::vector<Candidate> c) {
  std::stable_sort(c.begin(), c.end(), [](const auto& x, const auto& y) {
    const bool mx = x.miss <= 1, my = y.miss <= 1;
    if (mx != my) return mx;
    if (mx && x.plan.chips != y.plan.chips) return x.plan.chips < y.plan.chips;
    return x.miss < y.miss;
  });
  std::vector<Candidate> out;
  for (const Candidate& x : c) {
    bool seen = false;
    for (const Candidate& y : out) {
      seen = seen || y.plan.PlanString() == x.plan.PlanString();
    }
    if (!seen) out.push_back(x);
  }
  return out;
}

// The first `n` candidates of each kind.
std::vector<Candidate> Shortlist(const std::vector<Candidate>& ranked, int n) {
  std::vector<Candidate> out;
  int agg = 0, dis = 0;
  for (const Candidate& c : ranked) {
    int& k = c.plan.disaggregated ? dis : agg;
    if (k < n) {
      out.push_back(c);
      ++k;
    }
  }
  return out;
}

Result<bool> CheckRequest(const SloPlanRequest& r) {
  if (!(r.rate_per_s > 0) || !std::isfinite(r.rate_per_s)) {
    return InvalidArgument("expected a request rate > 0 requests/s, got " +
                               FormatNumber(r.rate_per_s),
                           "rate");
  }
  if (!(r.ttft_p99_s > 0) || !std::isfinite(r.ttft_p99_s)) {
    return InvalidArgument(
        "expected a TTFT p99 target > 0 s, got " + FormatNumber(r.ttft_p99_s),
        "slo_ttft");
  }
  if (!(r.tpot_p99_s > 0) || !std::isfinite(r.tpot_p99_s)) {
    return InvalidArgument(
        "expected a TPOT p99 target > 0 s, got " + FormatNumber(r.tpot_p99_s),
        "slo_tpot");
  }
  if (r.sim_requests < 1) {
    return InvalidArgument("expected at least 1 simulated request, got " +
                               std::to_string(r.sim_requests),
                           "requests");
  }
  if (!r.aggregated && !r.disaggregated) {
    return InvalidArgument("expected aggregated, disaggregated or both",
                           "layouts");
  }
  return true;
}

// Simulates each shortlisted candidate, adding a replica to the pool that
// misses up to twice; every simulated plan joins `out`.
Result<bool> Confirm(std::vector<Candidate> list, const hw::Chip& chip,
                     int layers, const SloPlanRequest& r, int max_chips,
                     SloPlanResult* out) {
  for (Candidate& c : list) {
    for (int attempt = 0; attempt < 3; ++attempt) {
      auto ok = Simulate(c, chip, layers, r, &c.plan);
      if (!ok) return ok;
      ++out->simulations;
      out->plans.push_back(c.plan);
      if (c.plan.meets || !c.plan.reason.empty()) break;
      if (!AddReplica(r, max_chips, &c)) break;
    }
  }
  return true;
}

void Finish(const SloPlanRequest& r, double price, SloPlanResult* out) {
  const double tokens_per_s = r.rate_per_s * r.base.output;
  for (SloPlan& p : out->plans) {
    p.cost_per_million_output_tokens_usd =
        price > 0 ? price * p.chips / 3600 / tokens_per_s * 1e6
                  : std::numeric_limits<double>::quiet_NaN();
  }
  auto miss = [&r](const SloPlan& p) {
    return p.reason.empty() ? Miss(r, p.ttft_p99_s, p.tpot_p99_s)
                            : std::numeric_limits<double>::infinity();
  };
  std::stable_sort(out->plans.begin(), out->plans.end(),
                   [&](const SloPlan& x, const SloPlan& y) {
                     if (x.meets != y.meets) return x.meets;
                     if (x.meets && x.chips != y.chips) {
                       return x.chips < y.chips;
                     }
                     return miss(x) < miss(y);
                   });
  std::vector<SloPlan> unique;
  for (const SloPlan& p : out->plans) {
    bool seen = false;
    for (const SloPlan& q : unique) {
      seen = seen || q.PlanString() == p.PlanString();
    }
    if (!seen) unique.push_back(p);
  }
  out->plans = std::move(unique);
  out->met = !out->plans.empty() && out->plans[0].meets;
}

}  // namespace

Result<SloPlanResult> PlanServingForSlo(const model::ModelSpec& spec,
                                        const hw::Chip& chip,
                                        const SloPlanRequest& r) {
  auto ok = CheckRequest(r);
  if (!ok) return tl::unexpected(ok.error());
  const auto start = std::chrono::steady_clock::now();
  SloPlanResult out;
  out.max_chips = r.max_chips > 0 ? r.max_chips : DefaultServingMaxChips(chip);
  out.price_per_chip_hour =
      hw::PricePerChipHour(chip, r.base.price_per_chip_hour);
  const std::vector<Layout> layouts =
      Layouts(spec, chip, r.base, out.max_chips);
  std::vector<Candidate> cands;
  if (r.aggregated) AggregatedCandidates(layouts, r, out.max_chips, &cands);
  if (r.disaggregated && r.base.output > 1) {
    DisaggregatedCandidates(layouts, chip, spec.num_layers, r, out.max_chips,
                            &cands);
  }
  out.candidates = static_cast<int>(cands.size());
  const int each = std::max(1, (r.confirm + 1) / 2);
  auto done = Confirm(Shortlist(Rank(std::move(cands)), each), chip,
                      spec.num_layers, r, out.max_chips, &out);
  if (!done) return tl::unexpected(done.error());
  Finish(r, out.price_per_chip_hour, &out);
  if (layouts.empty()) {
    out.reason = "no replica of up to " + std::to_string(out.max_chips) + " " +
                 chip.id +
                 " chips holds the weights and one request's KV cache";
  } else if (out.plans.empty()) {
    out.reason = "no layout is stable at " + FormatNumber(r.rate_per_s) +
                 " requests/s within " + std::to_string(out.max_chips) +
                 " chips";
  }
  out.search_time_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return out;
}

}  // namespace scalemodel::search
