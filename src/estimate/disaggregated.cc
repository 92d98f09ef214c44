#include "scalemodel/estimate/disaggregated.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "scalemodel/base/strings.h"

namespace scalemodel::estimate {

namespace {

// Percentiles by linear interpolation between order statistics (numpy's
// default), as SimulateServing reports them.
Percentiles PercentilesOf(std::vector<double> v) {
  Percentiles p;
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  auto at = [&v](double q) {
    const double pos = q * static_cast<double>(v.size() - 1);
    const size_t i = static_cast<size_t>(std::floor(pos));
    const double f = pos - static_cast<double>(i);
    return f == 0 ? v[i] : v[i] * (1 - f) + v[i + 1] * f;
  };
  p.p50 = at(0.5);
  p.p90 = at(0.9);
  p.p99 = at(0.99);
  double sum = 0;
  for (double x : v) sum += x;
  p.mean = sum / static_cast<double>(v.size());
  return p;
}

// One request's path through the two pools.
struct Handoff {
  double arrival = 0, prefilled = -1, ready = -1, finish = -1;
  double prompt = 1, output = 1;
  int decode_replica = 0;
};

// A pool's scheduling without the request path: the pools' simulations
// give the engines' own times, and the service adds the path once
// (CollectService).
SchedulerOptions EngineSteps(SchedulerOptions s) {
  s.request_path_s = 0;
  return s;
}

// The service-level figures from the requests' times (SimulateServing's
// Collect, over both pools' chips); `path`: the request path outside the
// engines (SchedulerOptions::request_path_s), added to every TTFT and E2E.
void CollectService(const std::vector<Handoff>& h, const Slo& slo, int chips,
                    double path, SimulationResult* out) {
  std::vector<double> ttft, tpot, e2e;
  double start = std::numeric_limits<double>::infinity(), end = 0;
  double out_tokens = 0, in_tokens = 0, good = 0, in_system = 0;
  for (size_t i = 0; i < h.size(); ++i) {
    const Handoff& q = h[i];
    const double t1 = q.ready - q.arrival + path;
    const double t = q.output > 1 ? (q.finish - q.ready) / (q.output - 1) : 0;
    ttft.push_back(t1);
    if (q.output > 1) tpot.push_back(t);
    e2e.push_back(q.finish - q.arrival + path);
    in_system += q.finish - q.arrival + path;
    out_tokens += q.output;
    in_tokens += q.prompt;
    good += (slo.ttft_s <= 0 || t1 <= slo.ttft_s) &&
            (slo.tpot_s <= 0 || t <= slo.tpot_s);
    start = std::min(start, q.arrival);
    end = std::max(end, q.finish);
    out->request_spans.push_back(
        {static_cast<int>(i), q.decode_replica, q.arrival, q.ready, q.finish,
         static_cast<int>(q.prompt), static_cast<int>(q.output)});
  }
  out->requests = static_cast<int>(h.size());
  out->ttft_s = PercentilesOf(std::move(ttft));
  out->tpot_s = PercentilesOf(std::move(tpot));
  out->e2e_s = PercentilesOf(std::move(e2e));
  const double d = h.empty() ? 0 : end - start;
  out->duration_s = d;
  if (d > 0) {
    out->requests_per_s = out->requests / d;
    out->throughput_output_tokens_per_s = out_tokens / d;
    out->throughput_total_tokens_per_s = (out_tokens + in_tokens) / d;
    out->goodput_requests_per_s = good / d;
    out->mean_requests_in_system = in_system / d;  // Little's law, exact
  }
  out->output_tokens_per_s_per_chip =
      out->throughput_output_tokens_per_s / chips;
  out->requests_per_s_per_chip = out->requests_per_s / chips;
  out->slo_attainment = h.empty() ? 1 : good / static_cast<double>(h.size());
}

// Runs the prefill pool: every request with one output token. Fills
// `prefilled` (the first token's time).
Result<SimulationResult> RunPrefillPool(const DisaggregatedPools& pools,
                                        const std::vector<TraceRequest>& reqs,
                                        std::vector<Handoff>* h) {
  Workload wp;
  wp.arrivals = Workload::kTrace;
  wp.trace = reqs;
  for (TraceRequest& r : wp.trace) r.output_tokens = 1;
  auto sp = SimulateServing(pools.prefill, pools.prefill_replicas, wp,
                            EngineSteps(pools.prefill_scheduler), Slo{});
  if (!sp || !sp->feasible) return sp;
  for (const RequestSpan& s : sp->request_spans) {
    (*h)[s.id].prefilled = s.first_token_s;
  }
  return sp;
}

// The handoffs: each request's transfer and the decode pool's trace of the
// requests with more than one output token (prompt + first token, the
// prompt's KV cached; output - 1 tokens left). `ids` maps its rows back.
void HandOff(const DisaggregatedPools& pools, std::vector<Handoff>* h,
             Workload* wd, std::vector<int>* ids, std::vector<double>* transfer,
             std::vector<double>* exposed) {
  const double kv_p = pools.prefill.KvBytesPerTokenPerChip();
  const double kv_d = pools.decode.KvBytesPerTokenPerChip();
  wd->arrivals = Workload::kTrace;
  for (size_t i = 0; i < h->size(); ++i) {
    Handoff& q = (*h)[i];
    if (q.output <= 1) {  // done at the prefill pool: nothing moves
      q.ready = q.finish = q.prefilled;
      continue;
    }
    const double x = KvTransferSeconds(q.prompt, kv_p, kv_d, pools.link);
    const double prefill =
        pools.prefill.Cost({0, 0, q.prompt, q.prompt * q.prompt / 2})
            .total()
            .si();
    const double e =
        ExposedTransferSeconds(x, prefill, pools.layers, pools.overlap);
    transfer->push_back(x);
    exposed->push_back(e);
    q.ready = q.prefilled + e;
    wd->trace.push_back({q.ready, q.prompt + 1, q.output - 1, q.prompt});
    ids->push_back(static_cast<int>(i));
  }
}

void AddPoolNotes(const char* pool, const SimulationResult& r,
                  std::vector<std::string>* notes) {
  for (const std::string& n : r.notes) {
    notes->push_back(std::string(pool) + " pool: " + n);
  }
}

}  // namespace

KvTransferLink KvTransferLinkOf(const hw::Chip& chip, int pool_chips) {
  KvTransferLink l;
  if (!chip.is_tpu() && chip.nvlink && pool_chips <= chip.nvlink->domain_size) {
    l.bytes_per_s_per_chip = chip.nvlink->bandwidth.si();
    l.latency_s = chip.nvlink->hop_latency.si();
    l.name = chip.nvlink->name;
    return l;
  }
  if (chip.scale_out) {
    l.bytes_per_s_per_chip = chip.scale_out->bandwidth.si();
    l.latency_s = chip.scale_out->latency.si();
    l.name = chip.scale_out->fabric;
  }
  return l;
}

Result<KvOverlap> ParseKvOverlap(const std::string& text,
                                 const std::string& where) {
  if (text == "after") return KvOverlap::kAfter;
  if (text == "layerwise") return KvOverlap::kLayerwise;
  return InvalidArgument("expected after or layerwise, got '" + Excerpt(text) +
                             "'" + DidYouMean(text, {"after", "layerwise"}),
                         where);
}

double KvTransferSeconds(double prompt_tokens, double kv_p, double kv_d,
                         const KvTransferLink& link) {
  if (!(link.bytes_per_s_per_chip > 0)) return 0;
  return link.latency_s +
         prompt_tokens * std::max(kv_p, kv_d) / link.bytes_per_s_per_chip;
}

double ExposedTransferSeconds(double transfer_s, double prefill_s, int layers,
                              KvOverlap overlap) {
  if (overlap == KvOverlap::kAfter || layers <= 1) return transfer_s;
  const double l = layers;
  return std::max(transfer_s / l, transfer_s - prefill_s * (l - 1) / l);
}

namespace {

// Closed-loop clients through FitClosedLoop: the open-loop simulation at
// the even rate that keeps `concurrency` requests in the system.
Result<DisaggregatedResult> SimulateClosedLoop(const DisaggregatedPools& pools,
                                               const Workload& workload,
                                               const Slo& slo) {
  DisaggregatedResult last;
  auto fit = FitClosedLoop(workload, [&](const Workload& w) -> Result<double> {
    auto r = SimulateDisaggregated(pools, w, slo);
    if (!r) return tl::unexpected(r.error());
    last = std::move(*r);
    // A pool that cannot hold a request cannot at any rate: stop there.
    if (!last.service.feasible) return workload.concurrency;
    return last.service.mean_requests_in_system;
  });
  if (!fit) return tl::unexpected(fit.error());
  last.closed_loop_rate_per_s = fit->rate_per_s;
  last.closed_loop_runs = fit->runs;
  if (last.service.feasible && fit->rate_per_s > 0) {
    last.service.notes.push_back(
        "closed loop of " + std::to_string(workload.concurrency) +
        " clients approximated: the first " +
        std::to_string(workload.concurrency) +
        " requests at once, then one every " +
        FormatNumber(1 / fit->rate_per_s) + " s, the rate at which " +
        FormatNumber(fit->mean_in_system) +
        " requests are in the system on average (Little's law; " +
        std::to_string(fit->runs) + " simulations)");
  }
  return last;
}

}  // namespace

Result<DisaggregatedResult> SimulateDisaggregated(
    const DisaggregatedPools& pools, const Workload& workload, const Slo& slo) {
  if (workload.arrivals == Workload::kConcurrency) {
    return SimulateClosedLoop(pools, workload, slo);
  }
  DisaggregatedResult out;
  out.prefill_chips =
      pools.prefill.chips_per_replica() * pools.prefill_replicas;
  out.decode_chips = pools.decode.chips_per_replica() * pools.decode_replicas;
  const std::vector<TraceRequest> reqs = OpenLoopRequests(workload);
  std::vector<Handoff> h(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    h[i].arrival = reqs[i].arrival_s;
    h[i].prompt = std::max(1.0, std::round(reqs[i].prompt_tokens));
    h[i].output = std::max(1.0, std::round(reqs[i].output_tokens));
  }
  auto sp = RunPrefillPool(pools, reqs, &h);
  if (!sp) return tl::unexpected(sp.error());
  out.prefill_pool = std::move(*sp);
  SimulationResult& s = out.service;
  if (!out.prefill_pool.feasible) {
    s.feasible = false;
    s.reason = "prefill pool: " + out.prefill_pool.reason;
    return out;
  }
  Workload wd;
  std::vector<int> ids;
  std::vector<double> transfer, exposed;
  HandOff(pools, &h, &wd, &ids, &transfer, &exposed);
  if (!wd.trace.empty()) {
    auto sd = SimulateServing(pools.decode, pools.decode_replicas, wd,
                              EngineSteps(pools.decode_scheduler), Slo{});
    if (!sd) return tl::unexpected(sd.error());
    out.decode_pool = std::move(*sd);
    if (!out.decode_pool.feasible) {
      s.feasible = false;
      s.reason = "decode pool: " + out.decode_pool.reason;
      return out;
    }
    for (const RequestSpan& d : out.decode_pool.request_spans) {
      h[ids[d.id]].finish = d.finish_s;
      h[ids[d.id]].decode_replica = d.replica;
    }
  }
  out.kv_transfer_s = PercentilesOf(std::move(transfer));
  out.kv_exposed_s = PercentilesOf(std::move(exposed));
  s.replicas = pools.decode_replicas;
  CollectService(h, slo, out.prefill_chips + out.decode_chips,
                 pools.prefill_scheduler.request_path_s, &s);
  const SimulationResult& d = out.decode_pool;
  s.itl_s = d.itl_s;
  s.kv_capacity_tokens = d.kv_capacity_tokens;
  s.kv_peak_fraction = d.kv_peak_fraction;
  s.kv_mean_fraction = d.kv_mean_fraction;
  s.kv_series = d.kv_series;
  s.preemptions = out.prefill_pool.preemptions + d.preemptions;
  s.steps = out.prefill_pool.steps + d.steps;
  s.mean_decode_batch = d.mean_decode_batch;
  s.max_step_tokens =
      std::max(out.prefill_pool.max_step_tokens, d.max_step_tokens);
  AddPoolNotes("prefill", out.prefill_pool, &s.notes);
  AddPoolNotes("decode", d, &s.notes);
  return out;
}

}  // namespace scalemodel::estimate
