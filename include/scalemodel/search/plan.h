// Training plans ranked for a person: one search per system size, merged,
// ranked by an objective (step time, cost or chips), near-duplicates folded,
// the top plans re-estimated with the full report, and an optional plan of
// the caller's own ranked among them. This is everything `scalemodel plan
// train` prints; the CLI only parses options and formats the result.
//
// Example:
//   search::PlanRequest req;
//   req.base.batch_tokens = 4194304; req.base.seq = 4096;
//   req.objective = search::Objective::kCost;
//   req.chip_counts = {256, 512};
//   auto r = search::PlanTraining(llama70b, v5p_pod, req);
//   // r->plans[0] is the cheapest plan; r->plans[0].system its size
#ifndef SCALEMODEL_SEARCH_PLAN_H_
#define SCALEMODEL_SEARCH_PLAN_H_

#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "scalemodel/base/error.h"
#include "scalemodel/estimate/presets.h"
#include "scalemodel/estimate/training.h"
#include "scalemodel/hw/system.h"
#include "scalemodel/model/transformer.h"
#include "scalemodel/search/parallelism.h"

namespace scalemodel::search {

// "time", "cost" or "chips" (case-insensitive). Errors name the value and
// suggest the closest; `where` is "objective".
Result<Objective> ParseObjective(std::string_view text);
std::string_view ObjectiveName(Objective objective);

// The most plans one search returns (docs/units.md): the search keeps 8
// (64 for a launchable plan) candidates a plan to fold near-duplicates.
inline constexpr int kMaxPlans = 10000;

// A number of plans to list: 1 to kMaxPlans, else an error at "top".
Result<void> CheckPlanCount(int top);

struct PlanRequest {
  // Batch, sequence, precision, mode, tokens, price and the engine habits;
  // the layout fields are what the search varies.
  estimate::TrainingConfig base;
  // How many distinct plans to return, 1 to kMaxPlans.
  int top = 5;
  // kTime: fastest step first. kCost: lowest step time x chips (the price
  // per chip-hour is one number for every size, so this is the cost order);
  // needs a price. kChips: fewest chips first, then fastest step. With a
  // single system size, all three rank alike.
  Objective objective = Objective::kTime;
  // System sizes to search together, each a hw::SubSystem of the system;
  // empty: the whole system only.
  std::vector<int> chip_counts;
  int threads = 0;  // 0: all cores
  // Largest ZeRO level and the remat policies tried (see SearchOptions).
  int max_zero = 2;
  std::vector<model::Remat> remats;
  // Keep to the plans this framework can launch (estimate::MaxZeroLevel and
  // ExactRemats); replaces max_zero and remats when set.
  std::optional<estimate::Engine> launchable_by;
  // With launchable_by: the engine's own check of one candidate (the
  // launch validator); plans it rejects are not ranked.
  std::function<bool(const hw::System&, const estimate::TrainingConfig&)>
      launchable;
  // Called about every 100 ms from the calling thread with the fraction of
  // the current size's space covered and the configurations so far.
  std::function<void(double fraction, double configs)> progress;
  // Stops the search (see SearchOptions::cancelled).
  std::function<bool()> cancelled;
  // What the user fixed; PlanTraining refuses, with one sentence, a
  // constraint no plan can keep (a degree that does not divide the chips,
  // a ZeRO level or remat policy the engine cannot run, vpp without
  // pipeline stages, an offload level outside 0-2).
  PlanConstraints fixed;
  // A whole plan to estimate on the whole system and rank among the plans
  // found: usually `base` with a plan key applied (estimate::ParsePlanKey).
  std::optional<estimate::TrainingConfig> explain;
};

// One ranked, distinct plan.
struct RankedPlan {
  hw::System system;                // the size it was found on
  estimate::TrainingConfig config;  // with the search's placement order
  PlanCandidate candidate;          // what the search scored
  // The decorated estimate of `config` (the report); empty in the unlikely
  // case the estimator rejects a plan the search accepted.
  std::optional<estimate::TrainingEstimate> estimate;
  // The objective's score: seconds per step (kTime), chip-seconds per step
  // (kCost) or chips (kChips); and this score / the best one's - 1.
  double score = 0;
  double behind_best = 0;
};

// Where the caller's own layout (PlanRequest::explain) stands.
struct ExplainedPlan {
  estimate::TrainingEstimate estimate;
  // 1 + the number of returned plans strictly faster; past `top` the
  // position is only known to be > top.
  int rank = 0;
  double behind_best = 0;  // step time / the best plan's - 1
};

struct TrainingPlanResult {
  std::vector<RankedPlan> plans;  // best first, at most `top`
  // The searches' counts summed over the sizes (threads: the last one's);
  // `counts.plans` holds the returned plans' candidates, for RankAmong.
  SearchResult counts;
  std::optional<ExplainedPlan> explain;
  double price_per_chip_hour = 0;  // the price used (0: none known)
};

// Searches `system` (or each of request.chip_counts sizes of it) and ranks
// the feasible plans by request.objective. Plans on the same size with the
// same degrees and a step time within 1e-6 (ZeRO-1 vs ZeRO-2 with memory to
// spare, an equivalent placement order) are folded into the one with less
// memory. An empty `plans` means nothing fits. Errors: top outside 1 ..
// kMaxPlans ("top"), a chip count the system cannot be cut to ("chips"),
// kCost without a price ("objective"), a batch that is not whole sequences
// ("batch_tokens"), an explain layout the estimator rejects ("explain").
Result<TrainingPlanResult> PlanTraining(const model::ModelSpec& model,
                                        const hw::System& system,
                                        const PlanRequest& request);

}  // namespace scalemodel::search

#endif  // SCALEMODEL_SEARCH_PLAN_H_
