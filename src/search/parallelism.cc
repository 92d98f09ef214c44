#include "scalemodel/search/parallelism.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <future>
#include <limits>
#include <map>
#include <set>
#include <thread>

#include "scalemodel/base/strings.h"

namespace scalemodel::search {

using estimate::CoreResult;
using estimate::kNumPar;
using estimate::LayerCompute;
using estimate::LayoutCoefficients;
using estimate::Parallelism;
using estimate::Placements;
using estimate::Schedule;
using estimate::TrainingConfig;

std::string PlanCandidate::Key() const {
  std::string s = config.par.ToString();
  s += " mb=" + std::to_string(config.layout.micro_batch);
  s += " remat=" + std::string(model::RematName(config.memory.remat));
  if (config.par.pp > 1) {
    s += " " + std::string(estimate::ScheduleName(config.layout.schedule));
    if (config.layout.schedule == Schedule::kInterleaved)
      s += " vpp=" + std::to_string(config.layout.vpp);
    if (config.layout.last_stage_layers > 0)
      s += " last=" + std::to_string(config.layout.last_stage_layers);
  }
  if (config.memory.offload_params) {
    s += " offload-params";
  } else if (config.memory.offload_optimizer) {
    s += " offload";
  }
  if (config.memory.offload_activations) s += " offload-acts";
  // The placement order of the parallelisms that are in use.
  std::string ord;
  Parallelism p = config.par;
  for (int i : order) {
    if (estimate::DegreeOf(p, i) > 1)
      ord += (ord.empty() ? "" : ">") + std::string(estimate::ParName(i));
  }
  if (!ord.empty()) s += " order=" + ord;
  return s;
}

bool PlanConstraints::any() const {
  for (int d : degrees) {
    if (d > 0) return true;
  }
  return zero >= 0 || remat || schedule || micro_batch > 0 || vpp > 0 ||
         offload >= 0;
}

int RankAmong(const SearchResult& r, double step) {
  int rank = 1;
  for (const PlanCandidate& p : r.plans) rank += p.step_time_s < step;
  return rank;
}

namespace {

std::vector<int> Divisors(long n) {
  std::vector<int> d;
  for (long i = 1; i * i <= n; ++i) {
    if (n % i == 0) {
      d.push_back(static_cast<int>(i));
      if (i != n / i) d.push_back(static_cast<int>(n / i));
    }
  }
  std::sort(d.begin(), d.end());
  return d;
}

struct Degrees {
  int tp, pp, cp, ep, fsdp, dp;
};

// Lower bound of the memory a plan needs whatever its micro batch, remat and
// schedule: parameters, gradients and optimizer state (offloaded optimizer
// counted as zero), plus the (fused loss's bf16) logits of the smallest micro
// batch and the full-remat activations of one sequence (of two layers when
// the activations may be offloaded). Over capacity: every variant is
// infeasible, which the prune test checks.
double PlanMemoryLowerBound(const estimate::ModelConsts& mc,
                            const Parallelism& p, const TrainingConfig& base,
                            bool offload, bool offload_params,
                            double max_stage_layers, double capacity,
                            bool offload_acts) {
  const bool peak = base.mode == estimate::Mode::kPeak;
  const estimate::StateBytes sb =
      estimate::TrainingStateBytes(base.mode, base.memory);
  const estimate::StateMemory st =
      estimate::StatePerChip(estimate::SharesOf(mc, p), p, sb, peak, offload,
                             offload_params, max_stage_layers);
  double t = base.seq / p.cp;
  double layers = std::ceil(mc.layers / p.pp);
  if (offload_acts) layers = std::min(layers, 2.0);
  double acts =
      t * layers *
          mc.act_bytes_per_token_layer[static_cast<int>(model::Remat::kFull)] /
          p.tp +
      t * mc.vocab / p.tp * 2 /
          std::max(1, base.habits.vocab_tiling);  // fused loss's bf16 logits
  return st.params + st.grads + st.optimizer + acts +
         sb.reserve_fraction * capacity;
}

// What moves to host memory, least first.
enum class Offload { kNone, kOptimizer, kParams };

// The offload choices a search tries: all three when it searches offload,
// else the base config's own.
std::vector<Offload> OffloadChoices(const estimate::MemoryPolicy& m,
                                    const SearchOptions& opt) {
  if (opt.fixed.offload >= 0) return {static_cast<Offload>(opt.fixed.offload)};
  if (opt.search_offload) {
    return {Offload::kNone, Offload::kOptimizer, Offload::kParams};
  }
  if (m.offload_params) return {Offload::kParams};
  return {m.offload_optimizer ? Offload::kOptimizer : Offload::kNone};
}

// Whether the saved activations stay on the chip, or also go to the host:
// both when the search tries activation offload (kept first), else the
// base config's own. The search offloads full-remat activations only (the
// layer inputs, the volume MaxText's validated recipes move): a lighter
// policy's can exceed the host's DRAM, which the catalog does not give.
std::vector<char> ActOffloadChoices(const estimate::MemoryPolicy& m,
                                    const SearchOptions& opt) {
  if (m.offload_activations) return {1};
  if (opt.search_act_offload) return {0, 1};
  return {0};
}

struct Worker {
  const model::ModelSpec* model;
  const hw::System* sys;
  const SearchOptions* opt;
  const estimate::ModelConsts* mc;
  estimate::ChipEfficiency eff;
  double seqs = 0;
  // Outputs; `top` is a heap (Keep), not sorted.
  std::vector<PlanCandidate> top;
  double evaluated = 0, scored = 0, pruned = 0, infeasible = 0;
  // Per worker, for the whole search (one system, one base config): the
  // slots' collective coefficients, and the mesh layouts by the degrees
  // laid, innermost first (LayMesh depends on nothing else without
  // explicit axes); an empty vector when they do not lay onto the system.
  estimate::CollCoefCache coef_cache;
  std::map<std::vector<int>, std::vector<estimate::Placement>> mesh_cache;

  // The order plans rank in: faster first, ties broken by key (a total
  // order, so the k kept do not depend on the order plans arrive in).
  static bool Better(const PlanCandidate& a, const PlanCandidate& b) {
    if (a.step_time_s != b.step_time_s) return a.step_time_s < b.step_time_s;
    return a.Key() < b.Key();
  }

  // Bounded top-k as a heap whose front is the worst plan kept: O(log k)
  // per plan. (A sorted vector shifted O(k) plans per insertion, 14 s for
  // `plan train --top 4897`.) RunWorkers sorts what is kept.
  void Keep(const PlanCandidate& c) {
    if (static_cast<int>(top.size()) >= opt->top_k && !Better(c, top.front())) {
      return;
    }
    top.push_back(c);
    std::push_heap(top.begin(), top.end(), Better);
    if (static_cast<int>(top.size()) > opt->top_k) {
      std::pop_heap(top.begin(), top.end(), Better);
      top.pop_back();
    }
  }

  // The variants every layout of a degree tuple is tried with.
  struct Sched {
    Schedule schedule;
    int vpp;
    int last;  // layers on the last stage (0: what the others leave)
  };
  struct Variants {
    std::vector<int> mbs;  // micro batches: divisors of a replica's batch
    std::vector<model::Remat> remats;
    std::vector<Sched> scheds;
    std::vector<int> zeros;
    std::vector<Offload> offloads;   // least offloaded first
    std::vector<char> act_offloads;  // activations on the host: 0 first
    double max_stage_layers = 0;  // the most layers a variant puts on a stage
    // Activation placements tried with remat `r`.
    size_t Acts(model::Remat r) const {
      return r == model::Remat::kFull ? act_offloads.size() : 1;
    }
  };

  // Schedule, virtual stages, and layers on the last stage. With 1F1B the
  // last stage, which also runs the output layer and loss, may take fewer:
  // the counts that leave the others a whole number of layers each, as
  // Megatron's --decoder-last-pipeline-num-layers needs.
  std::vector<Sched> Schedules(const Degrees& g) const {
    const TrainingConfig& base = opt->base;
    std::vector<Sched> scheds = {{Schedule::k1F1B, 1, 0}};
    if (g.pp > 1 && base.layout.last_stage_layers == 0) {
      const int layers = static_cast<int>(mc->layers);
      const int even = (layers + g.pp - 1) / g.pp;
      for (int k = even + 1; k <= even + 2; ++k) {
        const int last = layers - (g.pp - 1) * k;
        if (last >= 1) scheds.push_back({Schedule::k1F1B, 1, last});
      }
    } else if (g.pp > 1) {
      scheds[0].last = base.layout.last_stage_layers;
    }
    if (g.pp > 1) {
      int lps = static_cast<int>(std::ceil(mc->layers / g.pp));
      for (int v : Divisors(lps)) {
        // Every virtual stage needs a layer: pp * vpp <= L (as train checks).
        if (v >= 2 && v <= 16 && g.pp * v <= mc->layers) {
          scheds.push_back({Schedule::kInterleaved, v, 0});
        }
      }
    }
    return scheds;
  }

  // The schedules a fixed --schedule / --vpp leaves: GPipe runs the 1F1B
  // variants' stage splits; virtual stages (or interleaved) need pp > 1.
  std::vector<Sched> FixedSchedules(const Degrees& g,
                                    const PlanConstraints& fx) const {
    std::vector<Sched> out;
    const bool interleaved =
        fx.vpp > 1 || fx.schedule == Schedule::kInterleaved;
    if (g.pp == 1 && interleaved) return out;
    for (Sched sc : Schedules(g)) {
      if (fx.schedule == Schedule::kGpipe && sc.schedule == Schedule::k1F1B)
        sc.schedule = Schedule::kGpipe;
      if (fx.schedule && g.pp > 1 && sc.schedule != *fx.schedule) continue;
      if (fx.vpp > 0 && g.pp > 1 && sc.vpp != fx.vpp) continue;
      out.push_back(sc);
    }
    return out;
  }

  Variants VariantsOf(const Degrees& g, double per_replica) const {
    const TrainingConfig& base = opt->base;
    Variants v;
    const PlanConstraints& fx = opt->fixed;
    for (int d : Divisors(static_cast<long>(per_replica))) {
      if (d <= opt->max_micro_batch &&
          (fx.micro_batch == 0 || d == fx.micro_batch))
        v.mbs.push_back(d);
    }
    v.remats = fx.remat ? std::vector<model::Remat>{*fx.remat}
               : opt->search_remat && !opt->remats.empty() ? opt->remats
               : opt->search_remat
                   ? std::vector<model::Remat>(model::kAllRemats.begin(),
                                               model::kAllRemats.end())
                   : std::vector<model::Remat>{base.memory.remat};
    v.scheds = FixedSchedules(g, fx);
    v.zeros.clear();
    for (int z = 0; z <= (g.dp > 1 ? std::min(opt->max_zero, 2) : 0); ++z) {
      if (fx.zero < 0 || z == fx.zero) v.zeros.push_back(z);
    }
    v.offloads = OffloadChoices(base.memory, *opt);
    v.act_offloads = ActOffloadChoices(base.memory, *opt);
    v.max_stage_layers = std::ceil(mc->layers / g.pp);
    for (const Sched& sc : v.scheds) {
      if (g.pp > 1 && sc.last > 0) {
        v.max_stage_layers =
            std::max({v.max_stage_layers, static_cast<double>(sc.last),
                      std::ceil((mc->layers - sc.last) / (g.pp - 1))});
      }
    }
    return v;
  }

  // Whether a plan of this step time can no longer enter the top k.
  bool OutOfReach(double step) const {
    return static_cast<int>(top.size()) >= opt->top_k &&
           step > top.front().step_time_s;
  }

  // Keeps a feasible plan if it is among the top k so far.
  void Offer(const CoreResult& res, const TrainingConfig& cfg,
             const Parallelism& p, const std::array<int, kNumPar>& order) {
    if (OutOfReach(res.step)) return;
    PlanCandidate c;
    c.config = cfg;
    c.config.par = p;
    c.order = order;
    c.step_time_s = res.step;
    c.memory_bytes = res.total_mem;
    c.mfu = mc->model_flops_per_token * opt->base.batch_tokens /
            (res.step * p.product() * sys->chip.Peak(hw::Dtype::kBf16).si());
    Keep(c);
  }

  // Whether every remat the variants list recomputes at least as much as
  // the ones before it (model::kAllRemats' order: the attention core, then
  // the elementwise work, the MLP input projections, the whole layer) with
  // the lighter ones' activations on the chip: then a plan that fits with a
  // lighter remat is at least as fast as each later remat of the same
  // micro batch and schedule. Recompute only adds compute (and, for full
  // remat, a pass of tensor- and context-parallel collectives and of
  // offloaded parameters); the step is non-decreasing in each (exposed
  // communication is max(floor, comm - compute), so compute + exposed
  // cannot fall as compute grows; the expert all-to-all hidden under the
  // paired microbatch, at most all of it, is slowed by under 1x). Saved
  // activations sent to the host move more bytes for a lighter remat, so
  // the rule needs them on the chip (the search offloads full remat's only).
  static bool RematDominanceHolds(const Variants& v) {
    if (v.act_offloads.empty() || v.act_offloads[0] != 0) return false;
    for (size_t i = 1; i < v.remats.size(); ++i) {
      if (static_cast<int>(v.remats[i]) <= static_cast<int>(v.remats[i - 1]))
        return false;
    }
    return true;
  }

  // A layout's collective coefficients, built when its first plan is
  // scored: most layouts are pruned whole by the bounds.
  struct LazyCoefficients {
    Worker* w;
    const Placements* pl;
    bool built = false;
    LayoutCoefficients lay;
    const LayoutCoefficients& Get() {
      if (!built) {
        lay = estimate::BuildCoefficients(*w->sys, *pl, w->opt->base, *w->mc,
                                          &w->coef_cache);
        built = true;
      }
      return lay;
    }
  };

  // What the plans of one degree tuple share on every placement (each
  // placement tries the same variants in the same order): whether a variant
  // is over HBM, per ZeRO level and offload choice (memory does not depend
  // on the placement), and its compute bound (estimate::StepComputeBound),
  // per micro batch, remat, schedule and activation placement.
  struct TupleMemo {
    std::vector<char> over;     // 1: over HBM on a placement already scored
    std::vector<double> bound;  // NaN until computed
  };

  // How one variant of a layout ended.
  enum class Verdict { kPruned, kOver, kFits };

  // One variant (cfg at p) of a layout: over HBM when another placement of
  // its degrees was (counted as scored and over HBM, without evaluating
  // it again); pruned when its compute bound is out of reach (with any
  // more offload too: the bound does not depend on it); else scored and
  // offered, its step in *step.
  Verdict ScoreVariant(const Parallelism& p,
                       const std::array<int, kNumPar>& order,
                       LazyCoefficients& lay, const LayerCompute& lc,
                       const TrainingConfig& cfg, int microbatches,
                       char* over_memo, double* bound_memo, double* step) {
    if (*over_memo && opt->bound_prunes) {
      ++scored;
      ++infeasible;
      return Verdict::kOver;
    }
    if (std::isnan(*bound_memo)) {
      *bound_memo =
          estimate::StepComputeBound(*mc, lc, p, cfg, sys->chip, microbatches);
    }
    if (opt->bound_prunes && OutOfReach(*bound_memo)) {
      ++pruned;
      return Verdict::kPruned;
    }
    CoreResult res;
    estimate::EvaluateCore(*mc, lc, lay.Get(), p, cfg, sys->chip, eff,
                           microbatches, &res,
                           /*detail=*/false);
    ++scored;
    if (!res.feasible) {
      ++infeasible;
      *over_memo = 1;
      return Verdict::kOver;
    }
    *step = res.step;
    Offer(res, cfg, p, order);
    return Verdict::kFits;
  }

  // Scores every micro batch, remat, schedule and activation placement of
  // one layout at one ZeRO level and offload choice, keeping the best; skips
  // the variants `fits` marks (they fit with less offload: of the state, or
  // with the same micro batch, remat and schedule with the activations on
  // the chip) and marks those that fit. Exact prunes besides: a micro batch
  // whose compute bound is out of reach; per schedule, the fastest plan of
  // the micro batch that fits with less recompute (`lighter`, activations on
  // the chip): recomputing more never shortens a step (RematDominanceHolds),
  // so once that plan is out of reach so is every later remat; per variant
  // (remat, schedule, activation placement), over HBM at a smaller micro
  // batch (`over`): memory does not fall as the micro batch grows (the saved
  // activations in flight, min(m, pp) x micro batch with 1F1B, the working
  // set and the logits grow with it; the state does not change).
  void ScoreBlock(const Parallelism& p, const std::array<int, kNumPar>& order,
                  LazyCoefficients& lay, const Variants& v,
                  const std::vector<LayerCompute>& lcs, double per_replica,
                  TrainingConfig& cfg, std::vector<char>* fits, char* over_memo,
                  double* bound_memo) {
    size_t idx = 0;
    std::vector<double> lighter(v.scheds.size());
    const bool dominance = opt->bound_prunes && RematDominanceHolds(v);
    const size_t per_mb = v.mbs.empty() ? 0 : fits->size() / v.mbs.size();
    std::vector<char> over(per_mb, 0);
    for (size_t k = 0; k < v.mbs.size(); ++k) {
      cfg.layout.micro_batch = v.mbs[k];
      int microbatches = static_cast<int>(per_replica / v.mbs[k]);
      std::fill(lighter.begin(), lighter.end(),
                std::numeric_limits<double>::infinity());
      if (opt->bound_prunes && OutOfReach(estimate::StepLowerBound(
                                   *mc, lcs[k], p, cfg, microbatches))) {
        // No variant of this micro batch can reach the top k, with any
        // offload either.
        evaluated += static_cast<double>(per_mb);
        pruned += static_cast<double>(per_mb);
        std::fill(fits->begin() + static_cast<long>(idx),
                  fits->begin() + static_cast<long>(idx + per_mb), 1);
        idx += per_mb;
        continue;
      }
      for (model::Remat r : v.remats) {
        cfg.memory.remat = r;
        const size_t na = v.Acts(r);
        for (size_t j = 0; j < v.scheds.size() * na; ++j) {
          const Sched& sc = v.scheds[j / na];
          const size_t a = j % na;
          char& fit = (*fits)[idx++];
          char& too_big = over[(idx - 1) % per_mb];
          ++evaluated;
          if (too_big) {
            ++pruned;  // over HBM at a smaller micro batch
            continue;
          }
          // Activations to the host only add host-link time: the variant
          // that fits without doing so dominates.
          if (fit || (a > 0 && (*fits)[idx - 2])) {
            ++pruned;  // fits with less offload, which is never slower
            fit = 1;
            continue;
          }
          if (dominance && std::isfinite(lighter[j / na]) &&
              OutOfReach(lighter[j / na])) {
            // Slower than a plan with less recompute that is already out
            // of the top k; with more offload it is slower still.
            ++pruned;
            fit = 1;
            continue;
          }
          cfg.memory.offload_activations = v.act_offloads[a] != 0;
          cfg.layout.schedule = sc.schedule;
          cfg.layout.vpp = sc.vpp;
          cfg.layout.last_stage_layers = sc.last;
          double step = 0;
          const Verdict verdict =
              ScoreVariant(p, order, lay, lcs[k], cfg, microbatches,
                           over_memo + idx - 1, bound_memo + idx - 1, &step);
          if (verdict == Verdict::kOver) {
            too_big = 1;
            continue;
          }
          fit = 1;
          if (verdict == Verdict::kFits && a == 0) {
            lighter[j / na] = std::min(lighter[j / na], step);
          }
        }
      }
    }
  }

  // One placement of a degree tuple: every ZeRO level and offload choice,
  // skipping (and counting as pruned) the blocks whose memory lower bound is
  // over HBM, and the variants less offload already fits: moving state to
  // the host only adds PCIe and host time (never less), so a variant that
  // fits with less offload dominates itself with more (`fits`, per variant
  // across the offload choices of one ZeRO level).
  void ScoreLayout(Parallelism p, const std::array<int, kNumPar>& order,
                   const Placements& pl, const Variants& v,
                   const std::vector<LayerCompute>& lcs, double per_replica,
                   TrainingConfig& cfg, TupleMemo* memo) {
    const TrainingConfig& base = opt->base;
    const double capacity = sys->chip.hbm_capacity.si();
    const double usable = estimate::UsableCapacity(sys->chip, base.memory);
    LazyCoefficients lay{this, &pl};
    size_t per_mb = 0;
    for (model::Remat r : v.remats) per_mb += v.scheds.size() * v.Acts(r);
    const double block = static_cast<double>(v.mbs.size()) * per_mb;
    std::vector<char> fits;
    if (memo->bound.empty()) {
      memo->bound.assign(static_cast<size_t>(block),
                         std::numeric_limits<double>::quiet_NaN());
      memo->over.assign(
          static_cast<size_t>(block) * v.zeros.size() * v.offloads.size(), 0);
    }
    char* over_memo = memo->over.data();
    for (int zero : v.zeros) {
      p.zero = zero;
      bool all_fit = false;
      fits.assign(static_cast<size_t>(block), 0);
      for (Offload off : v.offloads) {
        over_memo += static_cast<size_t>(block);
        const bool opt_off = off != Offload::kNone;
        const bool par_off = off == Offload::kParams;
        if (all_fit || PlanMemoryLowerBound(
                           *mc, p, base, opt_off, par_off, v.max_stage_layers,
                           capacity, v.act_offloads.back() != 0) > usable) {
          pruned += block;
          evaluated += block;
          if (opt->on_pruned && !all_fit) {
            TrainingConfig probe = base;
            probe.par = p;
            probe.layout.micro_batch = 1;
            probe.memory.remat = model::Remat::kFull;
            probe.layout.schedule = Schedule::k1F1B;
            probe.memory.offload_optimizer = opt_off;
            probe.memory.offload_params = par_off;
            probe.memory.offload_activations = v.act_offloads.back() != 0;
            opt->on_pruned(probe);
          }
          continue;
        }
        cfg.memory.offload_optimizer = opt_off;
        cfg.memory.offload_params = par_off;
        ScoreBlock(p, order, lay, v, lcs, per_replica, cfg, &fits,
                   over_memo - static_cast<size_t>(block), memo->bound.data());
        all_fit = std::all_of(fits.begin(), fits.end(),
                              [](char f) { return f != 0; });
      }
    }
  }

  // The placement of the active parallelisms in `perm` order (innermost
  // first) into *pl; false when that order does not lay onto the system.
  // PlaceParallelism's, looked up by the degrees in that order.
  bool Place(const Parallelism& par, const std::vector<int>& perm,
             const std::array<int, kNumPar>& order, Placements* pl) {
    std::vector<int> sizes(perm.size());
    Parallelism q = par;
    for (size_t k = 0; k < perm.size(); ++k) {
      sizes[k] = estimate::DegreeOf(q, perm[k]);
    }
    auto it = mesh_cache.find(sizes);
    if (it == mesh_cache.end()) {
      std::vector<estimate::Placement> laid;
      auto placed = estimate::PlaceParallelism(q, *sys, &order);
      if (placed) {
        for (int i : perm) laid.push_back((*placed)[i]);
      }
      it = mesh_cache.emplace(sizes, std::move(laid)).first;
    }
    if (it->second.empty() && !perm.empty()) return false;
    *pl = Placements{};
    for (size_t k = 0; k < perm.size(); ++k) (*pl)[perm[k]] = it->second[k];
    return true;
  }

  // Every distinct placement of a degree tuple (each order in which the
  // parallelisms in use are laid onto the axes), each scored.
  void Run(const Degrees& g, std::atomic<long>* done) {
    const TrainingConfig& base = opt->base;
    const double per_replica = seqs / (1.0 * g.dp * g.fsdp * g.ep);
    const Variants v = VariantsOf(g, per_replica);
    std::array<int, kNumPar> ord = {estimate::kTp, estimate::kCp,
                                    estimate::kEp, estimate::kFsdp,
                                    estimate::kDp, estimate::kPp};
    Parallelism par;
    par.tp = g.tp;
    par.pp = g.pp;
    par.cp = g.cp;
    par.ep = g.ep;
    par.fsdp = g.fsdp;
    par.dp = g.dp;
    std::vector<int> active;
    for (int i = 0; i < kNumPar; ++i) {
      if (estimate::DegreeOf(par, i) > 1) active.push_back(i);
    }
    std::sort(active.begin(), active.end());
    std::set<std::vector<int>> seen_placements;
    // Layer compute per micro batch (depends on tp, ep, tokens).
    std::vector<LayerCompute> lcs(v.mbs.size());
    for (size_t k = 0; k < v.mbs.size(); ++k) {
      lcs[k] = estimate::ComputeLayer(*model, *mc, sys->chip, eff, g.tp, g.ep,
                                      g.cp, v.mbs[k] * base.seq / g.cp, base);
    }
    TrainingConfig cfg = base;  // the variants' fields are set per plan
    TupleMemo memo;
    Placements pl;
    do {
      std::array<int, kNumPar> order = ord;
      // Active ones in this permutation first, then the rest.
      int n = 0;
      for (int i : active) order[n++] = i;
      for (int i = 0; i < kNumPar; ++i) {
        if (std::find(active.begin(), active.end(), i) == active.end())
          order[n++] = i;
      }
      if (!Place(par, active, order, &pl)) continue;
      if (!seen_placements.insert(PlacementKey(pl)).second) continue;
      ScoreLayout(par, order, pl, v, lcs, per_replica, cfg, &memo);
    } while (std::next_permutation(active.begin(), active.end()));
    done->fetch_add(1);
  }

  static std::vector<int> PlacementKey(const Placements& pl) {
    std::vector<int> key;
    for (const estimate::Placement& x : pl) {
      for (size_t k = 0; k < x.axes.size(); ++k) {
        key.push_back(x.axes[k]);
        key.push_back(x.sizes[k]);
      }
      key.push_back(-1);
    }
    return key;
  }
};

}  // namespace

namespace {

// Whether a degree tuple keeps to the user's fixed degrees.
bool KeepsFixed(const Parallelism& p, const PlanConstraints& fx) {
  Parallelism q = p;
  for (int i = 0; i < kNumPar; ++i) {
    if (fx.degrees[i] > 0 && estimate::DegreeOf(q, i) != fx.degrees[i])
      return false;
  }
  return true;
}

// Degree tuples: every split of the chips that EstimateTraining would
// accept (the same CheckPlan rules; uneven stages are allowed: the busiest
// holds ceil(L/pp) layers and sets the pace), context parallelism up to 64,
// keeping to the fixed degrees. Counts into `counts` the splits the model
// admits and those left out because the batch does not split over them.
std::vector<Degrees> DegreeTuples(const model::ModelSpec& m,
                                  const hw::System& sys,
                                  const SearchOptions& opt,
                                  SearchResult* counts) {
  const TrainingConfig& base = opt.base;
  const int chips = sys.num_chips();
  std::vector<Degrees> tuples;
  TrainingConfig probe = base;
  probe.layout.micro_batch = 1;
  probe.layout.schedule = Schedule::k1F1B;
  probe.layout.vpp = 1;
  for (int tp : Divisors(chips)) {
    for (int pp : Divisors(chips / tp)) {
      for (int cp : Divisors(chips / tp / pp)) {
        if (cp > 64) continue;
        for (int ep : Divisors(chips / tp / pp / cp)) {
          int rest = chips / tp / pp / cp / ep;
          for (int fsdp : Divisors(rest)) {
            const int dp = rest / fsdp;
            probe.par = Parallelism{};
            probe.par.tp = tp;
            probe.par.pp = pp;
            probe.par.cp = cp;
            probe.par.ep = ep;
            probe.par.fsdp = fsdp;
            probe.par.dp = dp;
            if (!KeepsFixed(probe.par, opt.fixed)) continue;
            probe.layout.last_stage_layers =
                pp > 1 ? base.layout.last_stage_layers : 0;
            const estimate::PlanFault f =
                estimate::FindPlanFault(m, sys, probe);
            // Plans whose replicas split sequences are the estimator's
            // (the book's sequence sharding), not the search's: an engine
            // launches them only with the sequence split by cp.
            const bool unsplit = f == estimate::PlanFault::kBatchReplicas ||
                                 (f == estimate::PlanFault::kNone &&
                                  estimate::SplitsSequences(probe));
            if (unsplit || f == estimate::PlanFault::kNone) {
              counts->degree_splits += 1;
            }
            if (unsplit) {
              counts->splits_batch_unsplit += 1;
              const int r = dp * fsdp * ep;
              if (counts->fewest_unsplit_replicas == 0 ||
                  r < counts->fewest_unsplit_replicas) {
                counts->fewest_unsplit_replicas = r;
              }
            }
            if (f != estimate::PlanFault::kNone || unsplit) continue;
            tuples.push_back({tp, pp, cp, ep, fsdp, dp});
          }
        }
      }
    }
  }
  return tuples;
}

// Runs the workers over the tuples (round robin), reporting progress from
// the calling thread; returns the workers with their counts and top plans.
// Sets *cancelled when opt.cancelled stopped them.
std::vector<Worker> RunWorkers(const model::ModelSpec& m, const hw::System& sys,
                               const SearchOptions& opt,
                               const estimate::ModelConsts& mc, double seqs,
                               const std::vector<Degrees>& tuples,
                               bool* cancelled) {
  const TrainingConfig& base = opt.base;
  int threads = opt.threads > 0
                    ? opt.threads
                    : std::max(1u, std::thread::hardware_concurrency());
  threads = std::min<int>(threads, std::max<size_t>(1, tuples.size()));
  std::vector<Worker> workers(threads);
  std::atomic<long> done{0};
  std::atomic<bool> stop{false};
  std::vector<std::future<void>> futures;
  for (int w = 0; w < threads; ++w) {
    Worker& wk = workers[w];
    wk.model = &m;
    wk.sys = &sys;
    wk.opt = &opt;
    wk.mc = &mc;
    wk.eff = base.mode == estimate::Mode::kPeak
                 ? estimate::PeakEfficiency()
                 : estimate::RealisticEfficiency(sys.chip);
    wk.seqs = seqs;
    futures.push_back(std::async(std::launch::async, [&, w] {
      for (size_t i = w; i < tuples.size() && !stop.load(); i += threads) {
        workers[w].Run(tuples[i], &done);
      }
    }));
  }
  for (auto& f : futures) {
    while (f.wait_for(std::chrono::milliseconds(100)) !=
           std::future_status::ready) {
      if (opt.cancelled && !stop.load() && opt.cancelled()) stop.store(true);
      if (opt.progress) {
        double configs = 0;
        for (const Worker& w : workers) configs += w.evaluated;
        opt.progress(tuples.empty()
                         ? 1.0
                         : static_cast<double>(done.load()) / tuples.size(),
                     configs);
      }
    }
    f.get();
  }
  *cancelled = stop.load();
  return workers;
}

}  // namespace

Result<SearchResult> SearchTraining(const model::ModelSpec& m,
                                    const hw::System& sys,
                                    const SearchOptions& opt) {
  auto t0 = std::chrono::steady_clock::now();
  const TrainingConfig& base = opt.base;
  if (!(base.seq > 0) || !(base.batch_tokens > 0)) {
    return InvalidArgument("expected a positive sequence length and batch",
                           "batch_tokens");
  }
  double seqs = base.batch_tokens / base.seq;
  if (std::floor(seqs) != seqs) {
    return InvalidArgument("a batch of " + FormatNumber(base.batch_tokens) +
                               " tokens is not a whole number of " +
                               FormatNumber(base.seq) + "-token sequences",
                           "batch_tokens");
  }
  if (sys.chip.Peak(base.precision.matmul).si() <= 0) {
    return InvalidArgument(
        sys.chip.id + " has no " +
            std::string(hw::DtypeName(base.precision.matmul)) + " matrix rate",
        "precision");
  }
  const estimate::ModelConsts mc = estimate::PrepareModel(m, base);
  SearchResult out;
  std::vector<Degrees> tuples = DegreeTuples(m, sys, opt, &out);
  bool cancelled = false;
  std::vector<Worker> workers =
      RunWorkers(m, sys, opt, mc, seqs, tuples, &cancelled);
  if (cancelled) {
    return tl::unexpected(
        Error{ErrorCode::kCancelled, "the search was interrupted", ""});
  }
  const int threads = static_cast<int>(workers.size());
  out.threads = threads;
  for (Worker& w : workers) {
    out.configs_evaluated += w.evaluated;
    out.configs_scored += w.scored;
    out.configs_pruned += w.pruned;
    out.configs_infeasible += w.infeasible;
    out.plans.insert(out.plans.end(), w.top.begin(), w.top.end());
  }
  std::sort(out.plans.begin(), out.plans.end(),
            [](const PlanCandidate& a, const PlanCandidate& b) {
              if (a.step_time_s != b.step_time_s)
                return a.step_time_s < b.step_time_s;
              return a.Key() < b.Key();
            });
  if (static_cast<int>(out.plans.size()) > opt.top_k)
    out.plans.resize(opt.top_k);
  out.search_time_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  return out;
}

}  // namespace scalemodel::search
