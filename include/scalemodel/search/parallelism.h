// Plan search for training: every valid layout of a model on a system,
// evaluated with the estimator's core and ranked (docs/model.md section 6).
//
// The space: degrees of dp, fsdp, tp, pp, ep, cp whose product is the chip
// count (tp dividing the heads, pp at most the layers, ep dividing the
// experts, cp dividing the sequence, the batch splitting over the replicas);
// every order in which they can be laid onto the physical axes; ZeRO level
// for data parallelism; micro batch size; remat policy; pipeline schedule and
// virtual stages; optimizer offload.
//
// Example:
//   search::SearchOptions opt;
//   opt.base.batch_tokens = 4194304; opt.base.seq = 4096;
//   auto r = search::SearchTraining(llama70b, v5p_pod, opt);
//   // r->plans[0].config is the fastest feasible plan
#ifndef SCALEMODEL_SEARCH_PARALLELISM_H_
#define SCALEMODEL_SEARCH_PARALLELISM_H_

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "scalemodel/base/error.h"
#include "scalemodel/estimate/core.h"
#include "scalemodel/estimate/training.h"

namespace scalemodel::search {

// How PlanTraining (search/plan.h) ranks plans: by step time, by cost (step
// time x chips), or by chips (fewest first, then step time). One system size
// ranks alike under all three, so SearchTraining always keeps the fastest.
enum class Objective { kTime, kCost, kChips };

// What the user fixed (plan train --tp 8 --remat full ...): each set field
// narrows the search to plans with that value; unset fields are searched.
struct PlanConstraints {
  // Degrees by estimate::ParIndex (tp, cp, ep, fsdp, dp, pp); 0: searched.
  std::array<int, estimate::kNumPar> degrees{};
  int zero = -1;  // ZeRO level of the data-parallel replicas; -1: searched
  std::optional<model::Remat> remat;
  std::optional<estimate::Schedule> schedule;
  int micro_batch = 0;  // sequences per microbatch; 0: searched
  int vpp = 0;          // virtual stages (> 1: interleaved); 0: searched
  // 0 nothing, 1 the optimizer state, 2 parameters too; -1: searched.
  int offload = -1;
  bool any() const;
};

struct SearchOptions {
  // Batch, sequence, precision, mode, tokens, price; the layout fields are
  // what the search varies.
  estimate::TrainingConfig base;
  int top_k = 10;
  int threads = 0;  // 0: all cores
  bool search_offload = true;
  bool search_remat = true;
  // Also try each variant with its saved activations in host memory
  // (estimate::MemoryPolicy::offload_activations) where it does not fit
  // without.
  bool search_act_offload = true;
  int max_micro_batch = 64;  // largest micro batch (sequences) tried
  // Largest ZeRO level tried for data-parallel replicas: 0 for engines
  // without ZeRO-1/2 (MaxText, torchtitan), so every plan can be launched.
  int max_zero = 2;
  // Remat policies tried (empty: all of model::kAllRemats); --emit keeps to
  // the ones the engine expresses exactly.
  std::vector<model::Remat> remats;
  // Called about every 100 ms from the calling thread with the fraction of
  // the space covered and the configurations so far.
  std::function<void(double fraction, double configs)> progress;
  // Called with `progress`; once it returns true the workers stop after
  // their current layout and the search fails with kCancelled.
  std::function<bool()> cancelled;
  // The user's constraints (also narrow search_offload and remats).
  PlanConstraints fixed;
  // Test hook: false turns off the prunes by step bounds (a micro batch's
  // compute bound, a variant's, remat dominance) and the reuse of a
  // variant's memory verdict across placements, so that a test can check
  // that they leave the top plans bit-identical.
  bool bound_prunes = true;
  // Test hook: called (from worker threads) with the least-memory variant of
  // every pruned block (micro batch 1, full remat, 1F1B); when it does not
  // fit, no variant of the block does.
  std::function<void(const estimate::TrainingConfig&)> on_pruned;
};

struct PlanCandidate {
  estimate::TrainingConfig config;  // par (with zero), micro batch, remat, ...
  std::array<int, estimate::kNumPar> order{};  // placement order used
  double step_time_s = 0;
  double mfu = 0;
  double memory_bytes = 0;
  std::string Key() const;  // "tp=8,pp=4,dp=32 mb=1 remat=full 1f1b order=..."
};

struct SearchResult {
  std::vector<PlanCandidate> plans;  // best first, feasible only
  double configs_evaluated = 0;      // every configuration covered
  double configs_scored = 0;         // of which evaluated by the model
  double configs_pruned = 0;      // of which skipped by a proven memory bound
  double configs_infeasible = 0;  // scored but over HBM
  // Splits of the chips into degrees the model admits (heads, layers,
  // experts, sequence), and of those the ones left out because the batch's
  // sequences do not split over their replicas (dp x fsdp x ep); the
  // fewest replicas among those. When every split is left out so, no plan
  // exists whatever the memory, and the caller should say that.
  double degree_splits = 0, splits_batch_unsplit = 0;
  int fewest_unsplit_replicas = 0;
  double search_time_s = 0;
  int threads = 1;
};

// Errors only for inputs that make every plan impossible (a batch that is
// not whole sequences); an empty `plans` means nothing fits, and the caller
// should say why.
Result<SearchResult> SearchTraining(const model::ModelSpec& model,
                                    const hw::System& system,
                                    const SearchOptions& options);

// Position of `config` among the feasible plans of `result`'s space, by the
// search objective: 1 + the number of found plans strictly faster. Only the
// top plans are kept, so a rank past top_k reads "> top_k".
int RankAmong(const SearchResult& result, double step_time_s);

}  // namespace scalemodel::search

#endif  // SCALEMODEL_SEARCH_PARALLELISM_H_
