// Serving plans at a request rate under latency SLOs (`scalemodel plan
// serve --rate`; docs/model.md 7.8): the cheapest layout of one chip type
// whose simulated TTFT p99 and TPOT p99 meet the targets, aggregated (one
// pool, chunked prefill) or disaggregated (a prefill pool and a decode
// pool, estimate/disaggregated.h), as NVIDIA's aiconfigurator does for
// Dynamo. Every candidate (chips per replica, tp x ep, replicas, max-num-
// seqs cap, chunk size, pool ratio) gets a steady-state estimate; the
// cheapest few are simulated (estimate::SimulateServing /
// SimulateDisaggregated) and, when a simulation misses, retried with one
// more replica in the pool that missed. When nothing meets the SLOs the
// result names the closest plan and by how much it misses.
//
// Example:
//   search::SloPlanRequest req;
//   req.base.prompt = 2048; req.base.output = 512;
//   req.rate_per_s = 8; req.ttft_p99_s = 2; req.tpot_p99_s = 0.05;
//   auto r = search::PlanServingForSlo(llama70b, h100, req);
//   // r->plans[0] is the cheapest plan meeting both when r->met
#ifndef SCALEMODEL_SEARCH_SERVING_SLO_H_
#define SCALEMODEL_SEARCH_SERVING_SLO_H_

#include <cstdint>
#include <string>
#include <vector>

#include "scalemodel/base/error.h"
#include "scalemodel/estimate/disaggregated.h"
#include "scalemodel/estimate/inference.h"
#include "scalemodel/hw/chip.h"
#include "scalemodel/model/transformer.h"

namespace scalemodel::search {

struct SloPlanRequest {
  // Prompt and output tokens (fixed lengths), dtypes, mode, price.
  estimate::ServeConfig base;
  double rate_per_s = 1;   // Poisson arrivals, all pools together
  double ttft_p99_s = 0;   // > 0
  double tpot_p99_s = 0;   // > 0
  int max_chips = 0;       // all pools together; 0: 8 NVLink domains / 256
  int sim_requests = 400;  // per simulated candidate
  uint64_t seed = 0;
  int confirm = 6;  // candidates simulated (each up to 3 times)
  bool aggregated = true, disaggregated = true;  // which kinds to search
  estimate::KvOverlap overlap = estimate::KvOverlap::kAfter;
  // Prompt chunks mixed into decode steps (vLLM); false: SGLang's
  // prefill-first steps (estimate::SchedulerOptions::mixed_prefill).
  bool mixed_prefill = true;
  // DP attention: scheduler limits per rank (false: SGLang's, shared among
  // the ranks; estimate::SchedulerOptions::limits_per_rank).
  bool limits_per_rank = true;
  // TensorRT-LLM's GUARANTEED_NO_EVICT admission
  // (estimate::SchedulerOptions::reserve_to_finish).
  bool reserve_to_finish = false;
  // The overlap scheduler (estimate::SchedulerOptions::overlap_schedule).
  bool overlap_schedule = false;
  // The request path outside the engines, added to every TTFT
  // (estimate::SchedulerOptions::request_path_s).
  double request_path_s = 0;
};

// One pool: `replicas` copies of a tp x ep replica. pp is the hook for
// pipeline-parallel serving (always 1 here).
struct PoolPlan {
  int tp = 1, ep = 1, pp = 1, replicas = 1;
  int max_num_seqs = 256;
  int max_batched_tokens = 8192;
  bool chunked_prefill = true;
  // Attention data parallel over the ep ranks (serve --dp-attention).
  bool dp_attention = false;
  int chips() const { return tp * ep * pp * replicas; }
  std::string PlanString() const;  // "tp=8,dp=2" (serve --plan syntax)
};

struct SloPlan {
  bool disaggregated = false;
  PoolPlan pool;    // aggregated: the one pool; disaggregated: prefill
  PoolPlan decode;  // disaggregated only
  int chips = 0;
  // The steady-state estimate that ranked it.
  double estimated_ttft_p99_s = 0, estimated_tpot_p99_s = 0;
  bool simulated = false;
  // Simulated (when `simulated`), else the estimate.
  double ttft_p99_s = 0, tpot_p99_s = 0;
  double output_tokens_per_s = 0;  // simulated throughput (0: not run)
  // price x chips / (rate x output tokens), per million output tokens;
  // NaN without a price.
  double cost_per_million_output_tokens_usd = 0;
  bool meets = false;  // both p99s within the SLOs
  std::string reason;  // why not feasible, if a simulation says so
  // "tp=8,dp=3" or "prefill tp=4,dp=2 + ...", and " dp-attention" when the
  // pools run attention data parallel.
  std::string PlanString() const;
};

struct SloPlanResult {
  // Plans meeting the SLOs, cheapest first, then the rest, closest first
  // (the largest of p99 / SLO over the two SLOs, smallest first).
  std::vector<SloPlan> plans;
  bool met = false;                // plans[0] meets both SLOs
  std::string reason;              // when plans is empty: why
  double price_per_chip_hour = 0;  // 0: none known
  int max_chips = 0;
  int candidates = 0;  // estimated
  int simulations = 0;
  double search_time_s = 0;
};

// Errors: a rate or SLO that is not > 0, a simulation request count below
// 1, neither kind searched.
Result<SloPlanResult> PlanServingForSlo(const model::ModelSpec& model,
                                        const hw::Chip& chip,
                                        const SloPlanRequest& request);

}  // namespace scalemodel::search

#endif  // SCALEMODEL_SEARCH_SERVING_SLO_H_
