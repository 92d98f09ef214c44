// Continuous-batching simulator benchmark (issue 15: 10,000 requests in
// under 0.5 s). Prints one line per case; docs/performance.md keeps the
// figures with this command:
//   ./build/serve_bench
#include <chrono>
#include <cstdio>
#include <ctime>

#include "scalemodel/catalog/catalog.h"
#include "scalemodel/estimate/batching.h"
#include "scalemodel/ingest/hf_config.h"

int main() {
  using namespace scalemodel;
  auto cat = catalog::Catalog::Builtin();
  if (!cat) return 1;
  struct Case {
    const char* model;
    const char* system;
    int tp;
    int ep;  // > 1: DP attention over ep ranks, fp8 weights and KV
    double rate;
    bool chunked;
    bool mixed;    // false: SGLang's prefill-first steps
    bool overlap;  // the overlap scheduler (SGLang's default)
  } cases[] = {
      {"llama3-70b", "h100:8x1", 8, 1, 20, true, true, false},
      {"llama3-70b", "h100:8x1", 8, 1, 20, false, true, false},
      {"llama3-70b", "h100:8x1", 8, 1, 20, true, false, false},
      {"llama3-70b", "h100:8x1", 8, 1, 20, true, false, true},
      {"llama3-8b", "h100:1x1", 1, 1, 40, true, true, false},
      {"qwen3-30b-a3b", "h100:1x1", 1, 1, 20, true, true, false},
      // Eight DP-attention ranks, each its own scheduler.
      {"deepseek-v3", "h200:8x1", 1, 8, 60, true, true, false},
  };
  std::printf("%-14s %-9s %-9s %9s %8s %8s %8s %10s %10s\n", "model", "system",
              "chunked", "requests", "steps", "wall_s", "cpu_s", "req/s sim",
              "TPOT p50");
  for (const Case& c : cases) {
    auto m = ingest::FindModel(*cat, c.model);
    auto s = cat->FindSystem(c.system);
    if (!m || !s) return 1;
    estimate::ServeConfig cfg;
    cfg.tp = c.tp;
    if (c.ep > 1) {
      cfg.ep = c.ep;
      cfg.dp_attention = true;
      cfg.weights = hw::Dtype::kFp8;
      cfg.kv = hw::Dtype::kFp8;
    }
    cfg.prompt = 2048;
    cfg.output = 512;
    estimate::Workload w;
    w.rate_per_s = c.rate;
    w.requests = 10000;
    w.prompt = {estimate::LengthDist::kLogNormal, 2048, 1024};
    w.output = {estimate::LengthDist::kLogNormal, 512, 256};
    estimate::SchedulerOptions opt;
    opt.chunked_prefill = c.chunked;
    opt.mixed_prefill = c.mixed;
    opt.overlap_schedule = c.overlap;
    auto t0 = std::chrono::steady_clock::now();
    std::clock_t c0 = std::clock();
    auto sc = estimate::StepCostModel::Create(m->spec, *s, cfg);
    if (!sc) return 1;
    auto r = estimate::SimulateServing(*sc, 1, w, opt, {});
    double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
    if (!r) return 1;
    std::printf("%-14s %-9s %-9s %9d %8d %8.3f %8.3f %10.2f %8.1fms\n", c.model,
                c.system,
                !c.chunked  ? "off"
                : c.mixed   ? "on"
                : c.overlap ? "sglang+ov"
                            : "sglang",
                r->requests, r->steps, wall, cpu, r->requests_per_s,
                1e3 * r->tpot_s.p50);
  }
  return 0;
}
