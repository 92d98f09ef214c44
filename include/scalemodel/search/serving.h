// Serving plans (issue 8): the search over chip counts, tensor and expert
// parallelism and batch sizes for one chip type (`scalemodel plan serve`),
// and its latency/throughput Pareto frontier: lower time per output token is
// better, higher throughput per chip is better; a point is on the frontier
// when no evaluated point is at least as good in both and better in one.
//
// Example:
//   search::ServingPlanRequest req;
//   req.base.prompt = 8192; req.base.output = 512; req.tpot_max_s = 0.05;
//   auto r = search::PlanServing(llama70b, v5e_chip, req);
//   // r->frontier[*r->best] is the best plan under 50 ms per token
#ifndef SCALEMODEL_SEARCH_SERVING_H_
#define SCALEMODEL_SEARCH_SERVING_H_

#include <optional>
#include <string>
#include <vector>

#include "scalemodel/base/error.h"
#include "scalemodel/estimate/inference.h"
#include "scalemodel/hw/system.h"
#include "scalemodel/model/transformer.h"

namespace scalemodel::search {

struct ServePoint {
  double tpot_s = 0;                 // time per output token
  double tokens_per_s_per_chip = 0;  // throughput per chip
  int index = 0;                     // caller's handle
};

// Indices (ServePoint::index) of the frontier, fastest TPOT first.
std::vector<int> ParetoFrontier(std::vector<ServePoint> points);

// A system of `chips` chips of `chip`: GPUs fill NVLink domains ("8x4");
// TPUs take the most square slice (2D torus) or the most cubic one (3D) of
// that many chips. Errors when there is none (a 2D slice of 8 chips).
Result<hw::System> SystemOfChips(const hw::Chip& chip, int chips);

struct ServingPlanRequest {
  // Prompt, output, weights and KV dtypes, mode, price; tp, ep, dp and
  // batch are what the search varies.
  estimate::ServeConfig base;
  // Largest slice tried (powers of two from 1); 0: 256 TPUs, or 8 NVLink
  // domains (at least 64) of GPUs.
  int max_chips = 0;
  // Targets for the best plan; 0: none.
  double tpot_max_s = 0;
  double ttft_max_s = 0;
};

// One serving layout: a single replica over every chip of `system`.
struct ServingPlan {
  hw::System system;
  estimate::ServeConfig config;  // base with its shape, dp = 1 and batch
  estimate::ServeEstimate estimate;
  int chips() const { return system.num_chips(); }
  std::string PlanString() const;  // "tp=8", "tp=2,ep=4" or "tp=8,pp=2"
  // PlanString and " dp-attention" when the plan runs attention data
  // parallel (serve --dp-attention).
  std::string Label() const;
};

// One replica's shape: tp x ep x pp chips, and whether attention runs data
// parallel over the ep ranks (MoE only).
struct ReplicaShape {
  int tp = 1, ep = 1, pp = 1;
  bool dp_attention = false;
};

// Every replica shape of exactly n chips of `chip` (n a power of two): tp a
// power of two dividing the heads, ep the rest (dividing the routed
// experts; 1 for a dense model), each with and without DP attention when
// ep > 1; and on GPUs pipelines of pp stages (up to the layers) whose
// tp x ep stages fill whole NVLink domains, as engines deploy pp across
// nodes.
std::vector<ReplicaShape> ReplicaShapes(const model::ModelSpec& spec,
                                        const hw::Chip& chip, long n);

struct ServingPlanResult {
  std::vector<ServingPlan> frontier;  // fastest time per token first
  // Index into `frontier` of the highest throughput per chip that meets the
  // targets; empty when none does.
  std::optional<size_t> best;
  // For disaggregated serving: prefill chips per decode chip for the best
  // plan, prefilling one request at a time on the same slice (0 without a
  // best plan).
  double prefill_to_decode_chips = 0;
  int max_chips = 0;  // the largest slice tried
  double configs_evaluated = 0;
  double search_time_s = 0;
};

// Evaluates every power-of-two slice of `chip` up to max_chips, every
// replica shape that fills it (ReplicaShapes), and batches of 1, 2, 4, ...
// (at least pp) up to the largest that fits; returns the feasible points'
// Pareto frontier and the best under the targets. Infeasible points and
// slices that cannot be built are skipped, so the result may be empty.
// The largest slice a serving search considers without --max-chips: 256
// TPUs, or 8 NVLink domains (at least 8 GPUs each).
int DefaultServingMaxChips(const hw::Chip& chip);

ServingPlanResult PlanServing(const model::ModelSpec& model,
                              const hw::Chip& chip,
                              const ServingPlanRequest& request);

}  // namespace scalemodel::search

#endif  // SCALEMODEL_SEARCH_SERVING_H_
