// Plan-search benchmark: configurations covered per second and wall time of
// the full search for the three cases of issue 7 and issue 22's MoE case.
// Prints one line per case; docs/performance.md keeps the figures with this
// command:
//   ./build/plan_bench
#include <cstdio>

#include "scalemodel/catalog/catalog.h"
#include "scalemodel/ingest/hf_config.h"
#include "scalemodel/search/parallelism.h"

int main() {
  using namespace scalemodel;
  auto cat = catalog::Catalog::Builtin();
  if (!cat) return 1;
  struct Case {
    const char* model;
    const char* system;
    double batch_tokens, seq;
  } cases[] = {
      {"llama3-405b", "h100:8x2048", 16.0 * 1048576, 8192},
      {"llama3-70b", "tpu-v5p:16x20x28", 4.0 * 1048576, 4096},
      {"gpt3-175b", "a100:8x128", 1536.0 * 2048, 2048},
      // Issue 22: the MoE case, DeepSeek-V3's 15,360 x 4,096 batch.
      {"deepseek-v3", "deepseek-h800-2048", 15360.0 * 4096, 4096},
  };
  std::printf("%-12s %-18s %12s %12s %10s %12s %8s\n", "model", "system",
              "configs", "scored", "wall_s", "configs/s", "threads");
  for (const Case& c : cases) {
    auto m = ingest::FindModel(*cat, c.model);
    auto s = cat->FindSystem(c.system);
    if (!m || !s) return 1;
    search::SearchOptions opt;
    opt.base.batch_tokens = c.batch_tokens;
    opt.base.seq = c.seq;
    auto r = search::SearchTraining(m->spec, *s, opt);
    if (!r) return 1;
    std::printf("%-12s %-18s %12.0f %12.0f %10.3f %12.0f %8d\n", c.model,
                c.system, r->configs_evaluated, r->configs_scored,
                r->search_time_s, r->configs_evaluated / r->search_time_s,
                r->threads);
    if (!r->plans.empty()) {
      std::printf("  best: %s  step %.3f s, MFU %.1f%%\n",
                  r->plans[0].Key().c_str(), r->plans[0].step_time_s,
                  100 * r->plans[0].mfu);
    }
  }
  return 0;
}
