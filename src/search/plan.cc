#include "scalemodel/search/plan.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <string>
#include <utility>

#include "scalemodel/base/strings.h"
#include "scalemodel/hw/price.h"

namespace scalemodel::search {

Result<Objective> ParseObjective(std::string_view text) {
  const std::string t = ToLower(Trim(text));
  if (t == "time") return Objective::kTime;
  if (t == "cost") return Objective::kCost;
  if (t == "chips") return Objective::kChips;
  return InvalidArgument("expected 'time', 'cost' or 'chips', got '" +
                             std::string(text) + "'" +
                             DidYouMean(t, {"time", "cost", "chips"}),
                         "objective");
}

std::string_view ObjectiveName(Objective objective) {
  switch (objective) {
    case Objective::kTime:
      return "time";
    case Objective::kCost:
      return "cost";
    case Objective::kChips:
      return "chips";
  }
  return "time";
}

namespace {

// A search result with the index of the size it was found on.
struct Found {
  PlanCandidate plan;
  int size = 0;
};

// The system sizes to search: the system, or its sub-systems of the given
// chip counts.
Result<std::vector<hw::System>> SystemsFor(const hw::System& system,
                                           const std::vector<int>& counts) {
  std::vector<hw::System> systems;
  if (counts.empty()) {
    systems.push_back(system);
    return systems;
  }
  for (int n : counts) {
    auto sub = hw::SubSystem(system, n);
    if (!sub) return tl::unexpected(sub.error());
    systems.push_back(*sub);
  }
  return systems;
}

// One search per system size, merged; the counts add up.
Result<std::vector<Found>> SearchSizes(const model::ModelSpec& model,
                                       const std::vector<hw::System>& systems,
                                       const PlanRequest& request,
                                       SearchResult* counts) {
  SearchOptions sopt;
  sopt.base = request.base;
  // Keep extra candidates so folding near-duplicates still leaves `top`
  // (request.top <= kMaxPlans, so this fits an int).
  sopt.top_k = request.top * (request.launchable ? 64 : 8);
  sopt.threads = request.threads;
  sopt.max_zero = request.max_zero;
  sopt.remats = request.remats;
  if (request.launchable_by) {
    sopt.max_zero = estimate::MaxZeroLevel(*request.launchable_by);
    sopt.remats = estimate::ExactRemats(*request.launchable_by);
    // The launch lines do not express activation offload yet.
    sopt.search_act_offload = false;
  }
  sopt.progress = request.progress;
  sopt.cancelled = request.cancelled;
  sopt.fixed = request.fixed;
  std::vector<Found> merged;
  for (size_t k = 0; k < systems.size(); ++k) {
    auto r = SearchTraining(model, systems[k], sopt);
    if (!r) return tl::unexpected(r.error());
    counts->configs_evaluated += r->configs_evaluated;
    counts->configs_scored += r->configs_scored;
    counts->configs_pruned += r->configs_pruned;
    counts->configs_infeasible += r->configs_infeasible;
    counts->search_time_s += r->search_time_s;
    counts->threads = r->threads;
    counts->degree_splits += r->degree_splits;
    counts->splits_batch_unsplit += r->splits_batch_unsplit;
    if (r->fewest_unsplit_replicas > 0 &&
        (counts->fewest_unsplit_replicas == 0 ||
         r->fewest_unsplit_replicas < counts->fewest_unsplit_replicas)) {
      counts->fewest_unsplit_replicas = r->fewest_unsplit_replicas;
    }
    for (PlanCandidate& p : r->plans) {
      if (request.launchable) {  // the engine filter (--emit)
        estimate::TrainingConfig c = p.config;
        c.layout.placement_order.assign(p.order.begin(), p.order.end());
        if (!request.launchable(systems[k], c)) continue;
      }
      merged.push_back({std::move(p), static_cast<int>(k)});
    }
  }
  return merged;
}

// Distinct layouts: a plan with the same degrees and the same step time as
// one already kept is folded into it, keeping the one with less memory.
// Plans are compared only within their (size, degrees) group, so folding
// takes time in proportion to the plans, not to their square.
std::vector<Found> Fold(std::vector<Found> merged) {
  using GroupKey = std::array<int, estimate::kNumPar + 1>;
  std::map<GroupKey, std::vector<size_t>> groups;  // indices into distinct
  std::vector<Found> distinct;
  for (Found& m : merged) {
    estimate::Parallelism par = m.plan.config.par;
    GroupKey key{};
    key[0] = m.size;
    for (int i = 0; i < estimate::kNumPar; ++i) {
      key[i + 1] = estimate::DegreeOf(par, i);
    }
    std::vector<size_t>& group = groups[key];
    bool dup = false;
    for (size_t j : group) {
      Found& d = distinct[j];
      if (std::fabs(m.plan.step_time_s / d.plan.step_time_s - 1) < 1e-6) {
        dup = true;
        if (m.plan.memory_bytes < d.plan.memory_bytes) d = m;
        break;
      }
    }
    if (!dup) {
      group.push_back(distinct.size());
      distinct.push_back(std::move(m));
    }
  }
  return distinct;
}

// The user's own plan, estimated and ranked among the plans found.
Result<ExplainedPlan> Explain(const model::ModelSpec& model,
                              const hw::System& system,
                              const PlanRequest& request,
                              const SearchResult& counts) {
  auto est = estimate::EstimateTraining(model, system, *request.explain);
  if (!est) {
    return tl::unexpected(
        Error{est.error().code, est.error().message, "explain"});
  }
  const double best = counts.plans.empty() ? 0 : counts.plans[0].step_time_s;
  ExplainedPlan e;
  e.rank = RankAmong(counts, est->step_time.si());
  e.behind_best = best > 0 ? est->step_time.si() / best - 1 : 0;
  e.estimate = std::move(*est);
  return e;
}

// Fixed degrees that do not divide the chips of every system searched.
Result<void> CheckFixedDegrees(const std::vector<hw::System>& systems,
                               const PlanConstraints& fx) {
  long fixed_product = 1;
  for (int i = 0; i < estimate::kNumPar; ++i) {
    const int d = fx.degrees[i];
    if (d == 0) continue;
    fixed_product *= d;
    const std::string flag = "--" + std::string(estimate::ParName(i));
    for (const hw::System& sys : systems) {
      if (sys.num_chips() % d != 0) {
        std::string divs;
        int shown = 0;
        for (int k = 1; k <= sys.num_chips() && shown < 12; ++k) {
          if (sys.num_chips() % k == 0) {
            divs += (shown++ ? ", " : "") + std::to_string(k);
          }
        }
        return InvalidArgument(
            std::to_string(d) + " does not divide the " +
                FormatNumber(sys.num_chips()) + " chips of " + sys.id +
                "; expected one of " + divs + (shown == 12 ? ", ..." : ""),
            flag);
      }
    }
  }
  for (const hw::System& sys : systems) {
    if (sys.num_chips() % fixed_product != 0) {
      return InvalidArgument(
          "the fixed degrees multiply to " + FormatNumber(fixed_product) +
              ", which does not divide the " + FormatNumber(sys.num_chips()) +
              " chips of " + sys.id + "; fix fewer degrees",
          "plan train");
    }
  }
  return {};
}

// One sentence for a constraint no plan on these systems can keep.
Result<void> CheckConstraints(const model::ModelSpec& model,
                              const std::vector<hw::System>& systems,
                              const PlanRequest& request) {
  const PlanConstraints& fx = request.fixed;
  if (auto ok = CheckFixedDegrees(systems, fx); !ok) return ok;
  const int pp = fx.degrees[estimate::kPp];
  if (fx.vpp > 1 && pp == 1) {
    return InvalidArgument(
        "virtual stages need pipeline stages; with --pp 1 "
        "expected --vpp 1",
        "--vpp");
  }
  if (fx.vpp > 1 && fx.schedule &&
      *fx.schedule != estimate::Schedule::kInterleaved) {
    return InvalidArgument(
        "--vpp " + std::to_string(fx.vpp) +
            " needs the interleaved "
            "schedule, got --schedule " +
            std::string(estimate::ScheduleName(*fx.schedule)),
        "--vpp");
  }
  const int max_zero = request.launchable_by
                           ? estimate::MaxZeroLevel(*request.launchable_by)
                           : std::min(request.max_zero, 2);
  if (fx.zero > max_zero) {
    const bool none = max_zero == 0 && request.launchable_by;
    return InvalidArgument(
        "expected a ZeRO level of " +
            (none
                 ? "0 (" +
                       std::string(
                           estimate::EngineName(*request.launchable_by)) +
                       " has no ZeRO-1/2; its sharded data parallelism is "
                       "--fsdp)"
                 : "0 to " + std::to_string(max_zero) + " (ZeRO-3 is --fsdp)") +
            ", got " + std::to_string(fx.zero),
        "--zero");
  }
  if (fx.remat && request.launchable_by) {
    const auto ok = estimate::ExactRemats(*request.launchable_by);
    if (std::find(ok.begin(), ok.end(), *fx.remat) == ok.end()) {
      return InvalidArgument(
          std::string(estimate::EngineName(*request.launchable_by)) +
              " has no remat policy " +
              std::string(model::RematName(*fx.remat)),
          "--remat");
    }
  }
  if (fx.degrees[estimate::kEp] > 1 && !model.is_moe()) {
    return InvalidArgument(model.id +
                               " is dense: expert parallelism needs a "
                               "mixture-of-experts model",
                           "--ep");
  }
  return {};
}

}  // namespace

Result<void> CheckPlanCount(int top) {
  if (top <= 0) return InvalidArgument("expected a positive number", "top");
  if (top > kMaxPlans) {
    return InvalidArgument("expected at most " + std::to_string(kMaxPlans) +
                               " plans, got " + std::to_string(top),
                           "top");
  }
  return {};
}

Result<TrainingPlanResult> PlanTraining(const model::ModelSpec& model,
                                        const hw::System& system,
                                        const PlanRequest& request) {
  if (auto ok = CheckPlanCount(request.top); !ok) {
    return tl::unexpected(ok.error());
  }
  // One search per system size, merged and ranked by the objective: step
  // time, cost per step (chips x step x price, the price being one number),
  // or chips; the last two are what make different sizes comparable.
  auto sized = SystemsFor(system, request.chip_counts);
  if (!sized) return tl::unexpected(sized.error());
  const std::vector<hw::System>& systems = *sized;
  if (auto ok = CheckConstraints(model, systems, request); !ok) {
    return tl::unexpected(ok.error());
  }
  TrainingPlanResult out;
  out.price_per_chip_hour =
      hw::PricePerChipHour(system.chip, request.base.price_per_chip_hour);
  if (request.objective == Objective::kCost && out.price_per_chip_hour <= 0) {
    return InvalidArgument("ranking by cost needs a price: " + system.chip.id +
                               " has none in the catalog; give a price per "
                               "chip-hour",
                           "objective");
  }
  SearchResult& counts = out.counts;
  auto found = SearchSizes(model, systems, request, &counts);
  if (!found) return tl::unexpected(found.error());
  std::vector<Found> merged = std::move(*found);
  auto score = [&](const Found& f) {
    switch (request.objective) {
      case Objective::kTime:
        break;
      case Objective::kCost:
        return f.plan.step_time_s * systems[f.size].num_chips();
      case Objective::kChips:
        return static_cast<double>(systems[f.size].num_chips());
    }
    return f.plan.step_time_s;
  };
  std::stable_sort(merged.begin(), merged.end(),
                   [&](const Found& a, const Found& b) {
                     const double sa = score(a), sb = score(b);
                     if (sa != sb) return sa < sb;
                     // Equal chip counts go to the faster step.
                     if (request.objective == Objective::kChips &&
                         a.plan.step_time_s != b.plan.step_time_s) {
                       return a.plan.step_time_s < b.plan.step_time_s;
                     }
                     return a.plan.Key() < b.plan.Key();
                   });
  // The counts still include every plan.
  std::vector<Found> distinct = Fold(std::move(merged));
  if (static_cast<int>(distinct.size()) > request.top) {
    distinct.resize(request.top);
  }
  const double best_score = distinct.empty() ? 0 : score(distinct[0]);
  for (const Found& f : distinct) {
    counts.plans.push_back(f.plan);
    RankedPlan& r = out.plans.emplace_back();
    r.system = systems[f.size];
    r.candidate = f.plan;
    r.score = score(f);
    r.behind_best = best_score > 0 ? r.score / best_score - 1 : 0;
    // Re-run the decorated estimator on the plan with the search's placement
    // order, so the report is the plan that was ranked.
    r.config = f.plan.config;
    r.config.layout.placement_order.assign(f.plan.order.begin(),
                                           f.plan.order.end());
    auto est = estimate::EstimateTraining(model, r.system, r.config);
    if (est) r.estimate = std::move(*est);
  }
  if (request.explain) {
    auto e = Explain(model, system, request, counts);
    if (!e) return tl::unexpected(e.error());
    out.explain = std::move(*e);
  }
  return out;
}

}  // namespace scalemodel::search
