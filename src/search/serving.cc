#include "scalemodel/search/serving.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <vector>

namespace scalemodel::search {

std::vector<int> ParetoFrontier(std::vector<ServePoint> points) {
  // Sort by TPOT, then by throughput descending; a point joins the frontier
  // when its throughput beats every faster point's.
  std::sort(points.begin(), points.end(),
            [](const ServePoint& a, const ServePoint& b) {
              if (a.tpot_s != b.tpot_s) return a.tpot_s < b.tpot_s;
              if (a.tokens_per_s_per_chip != b.tokens_per_s_per_chip) {
                return a.tokens_per_s_per_chip > b.tokens_per_s_per_chip;
              }
              return a.index < b.index;
            });
  std::vector<int> out;
  double best = -1;
  for (const ServePoint& p : points) {
    if (p.tokens_per_s_per_chip > best) {
      out.push_back(p.index);
      best = p.tokens_per_s_per_chip;
    }
  }
  return out;
}

Result<hw::System> SystemOfChips(const hw::Chip& chip, int chips) {
  const int n = chips;
  std::string shape;
  if (!chip.is_tpu()) {
    int d = chip.nvlink ? chip.nvlink->domain_size : 1;
    shape = n <= d ? std::to_string(n) + "x1"
                   : std::to_string(d) + "x" + std::to_string(n / d);
  } else if (chip.ici && chip.ici->torus_dims == 2) {
    int a = 1;
    while (a * a < n) a *= 2;
    int b = n / a;
    if (a * b != n) {
      return InvalidArgument("no slice of " + std::to_string(n) + " chips",
                             "chips");
    }
    shape =
        std::to_string(std::min(a, b)) + "x" + std::to_string(std::max(a, b));
  } else {
    int x = 1, y = 1, z = 1;
    int left = n;
    while (left > 1) {
      if (x <= y && x <= z) {
        x *= 2;
      } else if (y <= z) {
        y *= 2;
      } else {
        z *= 2;
      }
      left /= 2;
    }
    shape =
        std::to_string(x) + "x" + std::to_string(y) + "x" + std::to_string(z);
  }
  return hw::BuildSystem(chip, shape);
}

std::string ServingPlan::PlanString() const {
  std::string s = "tp=" + std::to_string(config.tp);
  if (config.ep > 1) s += ",ep=" + std::to_string(config.ep);
  if (config.pp > 1) s += ",pp=" + std::to_string(config.pp);
  return s;
}

std::string ServingPlan::Label() const {
  return PlanString() + (config.dp_attention ? " dp-attention" : "");
}

namespace {

// Batches tried for a layout: powers of two up to the largest that fits,
// and that largest.
std::vector<double> BatchesUpTo(double maxb) {
  std::vector<double> batches;
  for (double b = 1; b <= maxb; b *= 2) batches.push_back(b);
  if (maxb >= 1 && (batches.empty() || batches.back() != maxb))
    batches.push_back(maxb);
  return batches;
}

// The frontier point with the most throughput per chip that meets the
// latency targets.
std::optional<size_t> BestUnderTargets(const std::vector<ServingPlan>& frontier,
                                       const ServingPlanRequest& request) {
  std::optional<size_t> best;
  for (size_t i = 0; i < frontier.size(); ++i) {
    const estimate::ServeEstimate& e = frontier[i].estimate;
    if (request.tpot_max_s > 0 && e.decode_step.si() > request.tpot_max_s)
      continue;
    if (request.ttft_max_s > 0 && e.ttft.si() > request.ttft_max_s) continue;
    if (!best || e.tokens_per_s_per_chip >
                     frontier[*best].estimate.tokens_per_s_per_chip)
      best = i;
  }
  return best;
}

}  // namespace

std::vector<ReplicaShape> ReplicaShapes(const model::ModelSpec& spec,
                                        const hw::Chip& chip, long n) {
  std::vector<ReplicaShape> out;
  // Pipeline stages span NVLink domains, each stage filling whole domains:
  // vLLM's distributed serving guide sets tp to the GPUs of a node and pp
  // to the nodes. No pipeline on TPUs (JetStream and vLLM TPU serve a
  // slice with tp and ep).
  const long domain = chip.nvlink ? chip.nvlink->domain_size : 1;
  const long max_pp = chip.is_tpu() ? 1 : spec.num_layers;
  for (long tp = 1; tp <= n; tp *= 2) {
    if (spec.num_heads % tp) continue;
    for (long pp = 1; tp * pp <= n && pp <= max_pp; pp *= 2) {
      const long ep = n / (tp * pp);
      if (tp * pp * ep != n) continue;
      if (pp > 1 && tp * ep < domain) continue;
      if (ep > 1 && (!spec.is_moe() || spec.moe.num_experts % ep)) continue;
      ReplicaShape r{static_cast<int>(tp), static_cast<int>(ep),
                     static_cast<int>(pp), false};
      out.push_back(r);
      if (ep > 1) {
        r.dp_attention = true;
        out.push_back(r);
      }
    }
  }
  return out;
}

int DefaultServingMaxChips(const hw::Chip& chip) {
  return chip.is_tpu()
             ? 256
             : std::max(8, chip.nvlink ? chip.nvlink->domain_size : 8) * 8;
}

ServingPlanResult PlanServing(const model::ModelSpec& spec,
                              const hw::Chip& chip,
                              const ServingPlanRequest& request) {
  ServingPlanResult out;
  out.max_chips =
      request.max_chips > 0 ? request.max_chips : DefaultServingMaxChips(chip);
  // Every feasible point: its slice (an index into `systems`) and config.
  struct Point {
    int system;
    estimate::ServeConfig config;
    estimate::ServeEstimate e;
  };
  std::vector<hw::System> systems;
  std::vector<Point> points;
  auto start = std::chrono::steady_clock::now();
  // long: doubling up to a count near INT_MAX must not wrap.
  for (long n = 1; n <= out.max_chips; n *= 2) {
    auto sys = SystemOfChips(chip, static_cast<int>(n));
    if (!sys) continue;
    systems.push_back(*sys);
    const int si = static_cast<int>(systems.size()) - 1;
    for (const ReplicaShape& shape : ReplicaShapes(spec, chip, n)) {
      estimate::ServeConfig cfg = request.base;
      cfg.tp = shape.tp;
      cfg.ep = shape.ep;
      cfg.pp = shape.pp;
      cfg.dp_attention = shape.dp_attention;
      cfg.dp = 1;
      // A pipeline needs a microbatch per stage.
      cfg.batch = shape.pp;
      auto probe = estimate::EstimateServing(spec, *sys, cfg);
      if (!probe) continue;
      for (double b : BatchesUpTo(probe->max_batch)) {
        if (b < shape.pp) continue;
        cfg.batch = b;
        auto e = estimate::EstimateServing(spec, *sys, cfg);
        ++out.configs_evaluated;
        if (!e || !e->feasible) continue;
        points.push_back({si, cfg, *e});
      }
    }
  }
  out.search_time_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::vector<ServePoint> sp;
  for (size_t i = 0; i < points.size(); ++i) {
    sp.push_back({points[i].e.decode_step.si(),
                  points[i].e.tokens_per_s_per_chip, static_cast<int>(i)});
  }
  for (int i : ParetoFrontier(sp)) {
    const Point& p = points[i];
    out.frontier.push_back({systems[p.system], p.config, p.e});
  }
  out.best = BestUnderTargets(out.frontier, request);
  if (out.best) {
    // Disaggregation: prefill one request at a time on the same chips.
    const ServingPlan& best = out.frontier[*out.best];
    estimate::ServeConfig one = request.base;
    one.tp = best.config.tp;
    one.ep = best.config.ep;
    one.pp = best.config.pp;
    one.dp_attention = best.config.dp_attention;
    one.batch = best.config.pp;
    auto pre = estimate::EstimateServing(spec, best.system, one);
    if (pre) {
      out.prefill_to_decode_chips = estimate::PrefillToDecodeRatio(
          pre->prefill_time.si(), best.config.batch,
          best.estimate.decode_step.si(), request.base.output);
    }
  }
  return out;
}

}  // namespace scalemodel::search
