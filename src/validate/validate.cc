#include "scalemodel/validate/validate.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "scalemodel/base/strings.h"
#include "scalemodel/estimate/batching.h"
#include "scalemodel/estimate/core.h"
#include "scalemodel/estimate/inference.h"
#include "scalemodel/estimate/presets.h"
#include "scalemodel/estimate/training.h"
#include "scalemodel/ingest/hf_config.h"
#include "scalemodel/validate/memory.h"
#include "validate_internal.h"

namespace scalemodel::validate {
namespace {

using nlohmann::json;

using internal::Quantile;

void AddCase(ValidationReport& r, std::string id, std::string group,
             std::string metric, double predicted, double expected,
             std::string detail, std::string source, std::string family = "",
             std::string chip = "") {
  ValidationCase c;
  c.id = std::move(id);
  c.group = std::move(group);
  c.metric = std::move(metric);
  c.predicted = predicted;
  c.expected = expected;
  c.rel_error = predicted / expected - 1;
  c.detail = std::move(detail);
  c.source = std::move(source);
  c.family = std::move(family);
  c.chip = std::move(chip);
  r.cases.push_back(c);
}

// The book's training examples that exercise the estimator (peak mode).
void BookCases(const catalog::Catalog& cat, ValidationReport& r) {
  const std::string src =
      "How to Scale Your Model, training chapters (book-vectors.json)";
  auto llama = ingest::FindModel(cat, "llama3-70b");
  if (!llama) return;
  const model::ModelSpec& m = llama->spec;
  estimate::TrainingConfig cfg;
  cfg.mode = estimate::Mode::kPeak;
  cfg.seq = 4096;
  // One case: the plan on a catalog system with `sequences` x `seq` tokens.
  // A case that cannot run is listed as skipped, not dropped.
  auto run_model = [&](const model::ModelSpec& spec, const std::string& id,
                       const std::string& system, estimate::Parallelism par,
                       double sequences,
                       double seq =
                           4096) -> std::optional<estimate::TrainingEstimate> {
    auto sys = cat.FindSystem(system);
    if (!sys) {
      r.skipped.push_back(id + ": " + sys.error().ToString());
      return std::nullopt;
    }
    estimate::TrainingConfig c = cfg;
    c.par = std::move(par);
    c.seq = seq;
    c.batch_tokens = sequences * seq;
    auto e = estimate::EstimateTraining(spec, *sys, c);
    if (!e) {
      r.skipped.push_back(id + ": " + e.error().ToString());
      return std::nullopt;
    }
    return *e;
  };
  auto run = [&](const std::string& id, const std::string& system,
                 estimate::Parallelism par, double sequences) {
    return run_model(m, id, system, std::move(par), sequences);
  };
  // LLaMA-3 70B with the book's rounder F where an example uses one.
  auto with_ffn = [&](long ffn) {
    model::ModelSpec copy = m;
    copy.ffn = ffn;
    return copy;
  };
  const estimate::Parallelism fsdp_xy_tp_z{
      .axes = {{"fsdp", {"x", "y"}}, {"tp", {"z"}}}};
  // FSDP over the whole pod (one sequence per chip so the batch splits).
  const std::string dp_id = "training-dp-critical-batch-v5p (3 axes)";
  if (auto e = run(dp_id, "tpu-v5p-pod", {.fsdp = 8960}, 8960)) {
    AddCase(r, dp_id, "book", "critical_tokens_per_chip", e->critical.fsdp, 850,
            "v5p pod, FSDP over x, y, z", src);
  }
  const std::string mixed_id = "llama3-70b-mixed-fsdp-tp threshold";
  if (auto e = run(mixed_id, "tpu-v5p:16x20x4", fsdp_xy_tp_z, 320)) {
    AddCase(r, mixed_id, "book", "critical_tokens_per_chip",
            e->critical.fsdp_tp, 113,
            "FSDP on x.y (M_X=2), TP on z (M_Y=1), F=28672", src);
  }
  const std::string dcn_id = "training-dcn-intensity-v5p";
  if (auto e =
          run(dcn_id, "tpu-v5p:16x16x16/2", {.dp = 2, .fsdp = 4096}, 8192)) {
    AddCase(r, dcn_id, "book", "critical_tokens_per_slice",
            e->critical.dcn_per_slice, 73440, "C / W_dcn on v5p", src);
  }
  // training-tp-limit-v5p uses F = 30000 for LLaMA-3 70B; ours is 28672.
  const std::string tp_id = "training-tp-limit-v5p (F=28672)";
  if (auto e = run(tp_id, "tpu-v5p:16x20x28",
                   {.axes = {{"tp", {"x"}}, {"fsdp", {"y", "z"}}}}, 560)) {
    AddCase(r, tp_id, "book", "max_tp_degree", e->critical.tensor_parallel_max,
            11.8 * 28672 / 30000, "F W_ici / C on one axis", src);
  }
  // Peak-mode memory accounting: 10 bytes per parameter (bf16 + fp32 Adam).
  const std::string mem_id = "training-pure-dp-max-params";
  if (auto e = run(mem_id, "tpu-v5p:2x2x2", {.dp = 8}, 8)) {
    double per_param = (e->memory.params + e->memory.optimizer).si() /
                       model::CountParams(m).total;
    AddCase(r, mem_id, "book", "max_params", 96e9 / per_param, 9.6e9,
            "96 GB / bytes per parameter", src);
  }
  // The FSDP x TP split that balances their communication: 64 chips, 48,000
  // tokens (32 sequences of 1500), F = 32768, M_X/M_Y = 2.
  {
    const std::string id = "training-mixed-xopt-example";
    if (auto e = run_model(with_ffn(32768), id, "tpu-v5p:4x4x4", fsdp_xy_tp_z,
                           32, 1500)) {
      AddCase(r, id, "book", "fsdp_degree_x_opt", e->critical.fsdp_tp_x_opt,
              13.7, "sqrt((B/F)(M_X/M_Y)N), F=32768", src);
    }
  }
  // Below N alpha^2 / (M_X M_Y F) tokens every strategy is
  // communication-bound on a 16x16x16 v5p (F = 32768).
  {
    const std::string id = "training-mixed-critical-total-16x16x16";
    if (auto e = run_model(with_ffn(32768), id, "tpu-v5p:16x16x16",
                           fsdp_xy_tp_z, 1024)) {
      AddCase(r, id, "book", "critical_tokens_total",
              e->critical.fsdp_tp * 4096, 406400,
              "4096 alpha^2 / (2F), F=32768", src);
    }
  }
  // A 40M-token batch keeps FSDP over a pod's three axes compute-bound on
  // 40e6 / 850 chips.
  if (auto e = run("training-fsdp-deepseek-v2-chips", "tpu-v5p-pod",
                   {.fsdp = 8960}, 8960)) {
    AddCase(r, "training-fsdp-deepseek-v2-chips", "book", "max_fsdp_chips",
            40e6 / e->critical.fsdp, 47060, "40M tokens / (C / W_fsdp)", src);
  }
  // BS = 2M with F = 30000: FSDP x TP compute-bound above 108 tokens per
  // chip.
  {
    const std::string id = "training-llama3-70b-2m-batch";
    if (auto e = run_model(with_ffn(30000), id, "tpu-v5p:16x20x4", fsdp_xy_tp_z,
                           320)) {
      AddCase(r, id, "book", "critical_tokens_per_chip", e->critical.fsdp_tp,
              108, "alpha^2 / (2F), F=30000", src);
    }
  }
  // The fewest v5p chips that hold LLaMA-3 70B's training at 4M tokens: the
  // estimator's state bytes (10 per parameter in peak mode) with the book's
  // inputs for the rest, 4 D-wide bf16 checkpoints per layer and 96 GB per
  // chip (our save-dot-except-mlp-in keeps 4.25; the catalog has 95 GiB).
  {
    const std::string id = "llama3-70b-min-chips-memory";
    if (auto e = run(id, "tpu-v5p-pod", {.fsdp = 8960}, 8960)) {
      estimate::MemoryFloor f = estimate::MinChipsByMemory(
          e->memory_floor.state_bytes, 4 * 2.0 * m.d_model, m.num_layers, 4e6,
          96e9);
      AddCase(r, id, "book", "min_chips", f.min_chips, 226,
              "10 B/param + 4 D-wide checkpoints per layer, 96 GB", src);
    }
  }
  // FLOPs per token (6N) and the 15T-token total.
  double n = model::CountParams(m).total;
  AddCase(r, "llama3-70b-total-flops", "book", "total_flops", 6 * n * 15e12,
          6.3e24, "6 x params x tokens", src);
}

// The model of a validation row: a catalog reference or an inline config.
Result<ingest::ImportedModel> RowModel(const catalog::Catalog& cat,
                                       const std::string& path,
                                       const json& row) {
  if (row["model"].contains("catalog")) {
    return ingest::FindModel(cat, row["model"]["catalog"].get<std::string>());
  }
  return ingest::ParseHfConfig(row["model"].dump(),
                               path + ":" + row.value("id", "?"));
}

// A training row's model, system and stated layout.
Result<TrainingRun> ReadTrainingRun(const catalog::Catalog& cat,
                                    const std::string& path, const json& row) {
  TrainingRun run;
  run.id = row.value("id", "?");
  auto mdl = RowModel(cat, path, row);
  if (!mdl) return tl::unexpected(mdl.error());
  run.model = mdl->spec;
  auto sys = cat.FindSystem(row["system"].get<std::string>());
  if (!sys) return tl::unexpected(sys.error());
  run.system = *sys;
  estimate::TrainingConfig& cfg = run.config;
  cfg.par = internal::RowPlan(row);
  cfg.seq = row.value("seq", 2048.0);
  cfg.batch_tokens = row.value("global_batch", 1.0) * cfg.seq;
  cfg.layout.micro_batch = row.value("micro_batch", 1);
  cfg.memory.remat = *model::ParseRemat(row.value("remat", "none"));
  cfg.precision.matmul = row.value("precision", "bf16") == "fp8"
                             ? hw::Dtype::kFp8
                             : hw::Dtype::kBf16;
  if (row.contains("schedule")) {
    cfg.layout.schedule =
        *estimate::ParseSchedule(row["schedule"].get<std::string>());
    cfg.layout.vpp = row.value("vpp", 1);
  }
  cfg.mode = estimate::Mode::kRealistic;
  if (!row.value("flash_attention", true)) {
    cfg.habits.attention_kernel = estimate::AttentionKernel::kMaterialized;
  }
  if (row.value("attention_kernel", std::string()) == "flash2") {
    cfg.habits.attention_kernel = estimate::AttentionKernel::kFlash2;
  }
  cfg.habits.tp_comm_overlap = row.value("tp_comm_overlap", false);
  cfg.precision.grad_reduce =
      row.value("grad_reduce", std::string("bf16")) == "fp32"
          ? hw::Dtype::kFp32
          : hw::Dtype::kBf16;
  cfg.lora_rank = row.value("lora_rank", 0);
  if (row.contains("lora_targets")) {
    // Shipped data: a name the parser refuses throws (a test runs them all).
    cfg.lora_targets =
        estimate::ParseLoraTargets(row["lora_targets"].get<std::string>())
            .value();
  }
  cfg.habits.vocab_tiling = row.value("vocab_tiling", 1);
  cfg.habits.dp_overlap = row.value("dp_overlap", true);
  cfg.habits.capacity_factor = row.value("capacity_factor", 0.0);
  cfg.habits.ep_dedup = row.value("ep_dedup", false);
  cfg.habits.ep_overlap = row.value("ep_overlap", false);
  cfg.memory.offload_activations = row.value("offload_activations", false);
  cfg.mtp_layers = row.value("mtp_layers", -1);
  cfg.habits.unfused_cross_entropy =
      row.value("cross_entropy", "fused") == "unfused";
  if (auto recipe =
          estimate::ParseFp8Recipe(row.value("fp8_recipe", "delayed"))) {
    cfg.precision.fp8_recipe = *recipe;
  }
  run.remat_stated = row.value("remat_stated", true);
  // The engine's bytes per parameter and reserve (validate/memory.cc).
  ApplyRowMemory(row.value("engine", ""), row.value("family", ""), &cfg);
  if (row.value("weight_dtype", std::string()) == "bf16") {
    // MaxText with weight_dtype bfloat16: 2 + 2 + 4 B per parameter and
    // bf16 reductions (estimate::ApplyWeightDtype, docs/model.md 5.4, memory
    // per chip).
    (void)estimate::ApplyWeightDtype(hw::Dtype::kBf16, cfg);
  }
  // MaxText scans its decoder layers unless the row says scan_layers false
  // (EngineHabits::fsdp_scan_exposed).
  const auto engine =
      RowEngine(row.value("engine", ""), row.value("family", ""));
  cfg.habits.fsdp_scan_exposed =
      row.value("scan_layers", engine == estimate::Engine::kMaxText);
  // DeepSpeed ZeRO-3 before v0.5.5: per-tensor gathers after a device
  // synchronize (EngineHabits::fsdp_sync_per_tensor); set by
  // tools/dev/import_runs.py on rows that ran such a version.
  cfg.habits.fsdp_sync_per_tensor = row.value("zero3_sync_per_tensor", false);
  return run;
}

// ---- Serving points (issue #15 item 6; docs/validation-sources.md) ----

// What a serving point may measure; each key is compared with its own
// estimate quantity (PredictServingMetric).
constexpr const char* kServingMetrics[] = {"tpot_s",
                                           "itl_s",
                                           "ttft_s",
                                           "e2e_s",
                                           "tokens_per_s_per_chip",
                                           "output_tokens_per_s",
                                           "tokens_per_s_per_user"};

// The serving metric classes, in report order.
const std::string kServingClasses[] = {"tpot", "ttft", "throughput",
                                       "throughput_max", "e2e"};

bool IsServingMetric(const std::string& k) {
  for (const char* m : kServingMetrics) {
    if (k == m) return true;
  }
  return false;
}

// One sentence for a row that breaks the schema: where, what was expected,
// what was found.
tl::unexpected<Error> RowError(const std::string& path, const std::string& id,
                               int k, const std::string& what) {
  return InvalidArgument(
      fmt::format("serving row '{}'{}: {}", id,
                  k > 0 ? fmt::format(" case {}", k) : std::string(), what),
      path);
}

// A measured quantity of the whole run's output rate (not a latency).
bool IsThroughput(const std::string& metric) {
  return metric == "tokens_per_s_per_chip" || metric == "output_tokens_per_s";
}

// A replica's output tokens/s as the throughput `metric` states it: per
// chip of the replica, or over all replicas.
double ThroughputAs(const std::string& metric, double per_replica,
                    const estimate::ServeConfig& cfg) {
  return metric == "tokens_per_s_per_chip"
             ? per_replica / (cfg.tp * cfg.ep * cfg.pp)
             : per_replica * cfg.dp;
}

bool PositiveNumber(const json& v) {
  return v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() > 0;
}

// The load a serving point states, as the static estimate takes it.
struct ServingLoad {
  double batch = 1;          // sequences decoding together
  double prefill_batch = 1;  // prompts prefilled together (TTFT)
  bool max_batch = false;    // "batch": "max"
  // The run's request count where the source states it (0: none): per
  // replica for a "max" case (R requests queued at once hold at most R in
  // flight, and with equal lengths run in waves of `batch`), the simulated
  // run's length for a concurrency or a rate.
  double requests = 0;
  // A closed-loop concurrency or a Poisson rate: the case runs through the
  // continuous-batching simulator (estimate/batching.h) instead.
  int concurrency = 0;
  double rate = 0;
  int scheduler_steps = 1;  // the row's vLLM --num-scheduler-steps
  // The row's engine, whose default scheduling the simulation runs
  // (estimate::ApplyEngineScheduling: SGLang's prefill-first steps and
  // shared DP limits, TensorRT-LLM's no-evict admission).
  std::string engine;
  bool mean = false;  // the source reports means, not medians
  // Simulated lengths: uniform within +-spread of the stated means (the
  // case's `spread` where its source states one, else 50%).
  double spread = 0.5;
  // The run's own request lengths, in sending order, where the row names
  // the benchmark's generator (bench_dataset): replayed by the closed loop
  // instead of lengths drawn within +-spread.
  std::vector<estimate::TraceRequest> lengths;
  std::string dataset;  // the generator, for the setup text
  // The engine's step limits where the source states them (0: the
  // simulation's defaults): sequences and tokens per step, per DP rank
  // where the engine counts them so.
  int max_num_seqs = 0;
  int max_batched_tokens = 0;
  // SGLang's --scheduler-recv-interval where the launch sets one (1: every
  // step, its default).
  int recv_interval = 1;
  // TensorRT-LLM's attention-DP balance timeout where the launch enables it
  // (0: off).
  int adp_balance = 0;
  // The launch's piecewise CUDA graphs for prefill (TensorRT-LLM
  // torch_compile_config.enable_piecewise_cuda_graph, SGLang
  // --enable-piecewise-cuda-graph): 1 on (no eager-prefill host floor),
  // 0 off (the floor even where the engine's default captures them), -1
  // the engine's default.
  int prefill_graph = -1;
  // The case's simulation, run once for all the quantities it measured.
  mutable std::shared_ptr<estimate::SimulationResult> simulated;
  std::string text;  // how the load was read, for the setup column
};

// Requests simulated per case: a closed loop is in steady state after its
// first wave, so four waves (at least 24 requests) suffice for medians and
// means; Poisson arrivals need more for their queueing to average out.
int SimulatedRequests(const ServingLoad& load) {
  // The run's own request count where the source states it: its ramp-down
  // shapes the run's throughput. One client's requests do not interact, so
  // a one-client run is simulated at least 24 requests long (medians of a
  // few random lengths would only add noise).
  if (!load.lengths.empty()) return static_cast<int>(load.lengths.size());
  if (load.requests > 0) {
    const int n = static_cast<int>(load.requests);
    return load.concurrency == 1 ? std::max(24, n) : n;
  }
  return load.rate > 0 ? 200 : std::max(24, 4 * load.concurrency);
}

// The simulated run's length and lengths, for a case's setup text.
std::string SimulatedRunText(const ServingLoad& load) {
  if (!load.lengths.empty()) {
    return fmt::format("the run's {} requests, lengths as {} drew them",
                       load.lengths.size(), load.dataset);
  }
  return fmt::format("{} requests{}, lengths +-{}%", SimulatedRequests(load),
                     load.requests > 0 ? " as the run sent" : "",
                     FormatNumber(100 * load.spread));
}

// Runs a concurrency or rate case's simulation (SimulatedMetric).
Result<estimate::SimulationResult> Simulate(const model::ModelSpec& m,
                                            const hw::System& sys,
                                            const estimate::ServeConfig& cfg,
                                            const ServingLoad& load) {
  estimate::ServeConfig run = cfg;
  estimate::ApplyPrefillGraph(load.prefill_graph, &run);
  auto cost = estimate::StepCostModel::Create(m, sys, run);
  if (!cost) return tl::unexpected(cost.error());
  estimate::Workload w;
  w.arrivals = load.rate > 0 ? estimate::Workload::kPoisson
                             : estimate::Workload::kConcurrency;
  w.rate_per_s = load.rate > 0 ? load.rate : 1;
  w.concurrency = std::max(1, load.concurrency);
  w.requests = SimulatedRequests(load);
  // Lengths drawn uniformly within +-50% of the stated means. The rows state
  // mean lengths of datasets whose lengths vary (ShareGPT, random datasets
  // with a range); the +-50% spread is an assumption, not a row's figure.
  // With one fixed length closed-loop clients would stay in lockstep and
  // every TTFT would wait for a whole wave's prefill, which no benchmark
  // with varied lengths does.
  const double lo = 1 - load.spread, hi = 1 + load.spread;
  w.prompt = {estimate::LengthDist::kUniform, lo * cfg.prompt, hi * cfg.prompt};
  w.output = {estimate::LengthDist::kUniform, lo * cfg.output, hi * cfg.output};
  // The run's own lengths where the row names the benchmark's generator.
  if (w.arrivals == estimate::Workload::kConcurrency) w.trace = load.lengths;
  estimate::SchedulerOptions sched;
  sched.chunked_prefill = true;
  sched.max_num_seqs =
      load.max_num_seqs > 0 ? load.max_num_seqs : std::max(256, w.concurrency);
  if (load.max_batched_tokens > 0) {
    sched.max_batched_tokens = load.max_batched_tokens;
  } else if (const int own = estimate::EngineDefaultBatchedTokens(
                 load.engine, sys.chip.DeviceMemory().si());
             own > 0) {
    sched.max_batched_tokens = own;
  }
  sched.scheduler_steps = load.scheduler_steps;
  sched.recv_interval = load.recv_interval;
  sched.adp_balance_timeout_iters = load.adp_balance;
  estimate::ApplyEngineScheduling(load.engine, &sched);
  return estimate::SimulateServing(*cost, std::max(1, cfg.dp), w, sched, {});
}

// A concurrency or rate case through the simulator, as the engines serve
// it: continuous batching with chunked prefill (SGLang's default and vLLM
// V1's; 8,192 tokens per step, max_num_seqs no lower than the concurrency;
// SGLang's prompt chunks in steps of their own, prefill first),
// fixed lengths as the case states them, one replica per cfg.dp.
Result<double> SimulatedMetric(const model::ModelSpec& m, const hw::System& sys,
                               const estimate::ServeConfig& cfg,
                               const ServingLoad& load,
                               const std::string& metric,
                               std::string* infeasible) {
  if (!load.simulated) {
    auto r = Simulate(m, sys, cfg, load);
    if (!r) return tl::unexpected(r.error());
    load.simulated = std::make_shared<estimate::SimulationResult>(*r);
  }
  const estimate::SimulationResult* r = load.simulated.get();
  if (!r->feasible) *infeasible = r->reason;
  auto pick = [&](const estimate::Percentiles& p) {
    return load.mean ? p.mean : p.p50;
  };
  if (metric == "tpot_s") return pick(r->tpot_s);
  if (metric == "itl_s") return pick(r->itl_s);
  if (metric == "ttft_s") return pick(r->ttft_s);
  if (metric == "e2e_s") return pick(r->e2e_s);
  if (metric == "tokens_per_s_per_chip") return r->output_tokens_per_s_per_chip;
  if (metric == "output_tokens_per_s") return r->throughput_output_tokens_per_s;
  return 1.0 / pick(r->tpot_s);
}

// The single adapter between a published serving point and the estimator:
// the predicted value of `metric` at `load`, from the static estimate (the
// decode step at load.batch, the prefill of load.prefill_batch prompts). A
// continuous-batching simulator can take its place here for rows that state
// a rate or a concurrency. `infeasible` receives the estimator's reason when
// the load does not fit.
Result<double> PredictServingMetric(const model::ModelSpec& m,
                                    const hw::System& sys,
                                    estimate::ServeConfig cfg,
                                    const ServingLoad& load,
                                    const std::string& metric,
                                    std::string* infeasible) {
  if (load.concurrency > 0 || load.rate > 0) {
    return SimulatedMetric(m, sys, cfg, load, metric, infeasible);
  }
  cfg.batch = load.batch;
  auto decode = estimate::EstimateServing(m, sys, cfg);
  if (!decode) return tl::unexpected(decode.error());
  if (!decode->feasible) *infeasible = decode->reason;
  if (load.requests > load.batch && IsThroughput(metric)) {
    // R requests queued at once with equal lengths: floor(R / B) waves of
    // B, then one of the rest, each a static batch start to finish.
    const double full = std::floor(load.requests / load.batch);
    const double rest = load.requests - full * load.batch;
    double makespan = full * decode->request_latency.si();
    if (rest > 0) {
      cfg.batch = rest;
      auto tail = estimate::EstimateServing(m, sys, cfg);
      if (!tail) return tl::unexpected(tail.error());
      makespan += tail->request_latency.si();
    }
    return ThroughputAs(metric, load.requests * cfg.output / makespan, cfg);
  }
  if (load.prefill_batch == load.batch) {
    // A static batch: the estimate's own figures.
    if (metric == "tpot_s" || metric == "itl_s")
      return decode->decode_step.si();
    if (metric == "ttft_s") return decode->ttft.si();
    if (metric == "e2e_s") return decode->request_latency.si();
    if (metric == "tokens_per_s_per_chip") return decode->tokens_per_s_per_chip;
    if (metric == "output_tokens_per_s") return decode->tokens_per_s;
    return decode->tokens_per_s_per_user;
  }
  cfg.batch = load.prefill_batch;
  auto prefill = estimate::EstimateServing(m, sys, cfg);
  if (!prefill) return tl::unexpected(prefill.error());
  const double step = decode->decode_step.si();
  const double ttft = prefill->ttft.si();
  const double e2e = ttft + cfg.output * step;
  const double per_replica = load.batch * cfg.output / e2e;
  if (metric == "tpot_s" || metric == "itl_s") return step;
  if (metric == "ttft_s") return ttft;
  if (metric == "e2e_s") return e2e;
  if (IsThroughput(metric)) return ThroughputAs(metric, per_replica, cfg);
  return 1.0 / step;
}

// The lengths a row's `bench_dataset` generator sends for a case of
// `requests` requests (estimate::SglangRandomLengths: "sglang-random",
// sglang.bench_serving --dataset-name random with its seed and range
// ratio, defaults 1 and 0), checked against the case's stated mean prompt
// and output (to their rounding, 0.05 token, and an output of 0 drawn
// and counted as 1, or to 0.5% for re-tokenized prompts): a mismatch
// means the row does not name the run's generator, an error.
Result<std::vector<estimate::TraceRequest>> BenchDatasetLengths(const json& d,
                                                                int requests,
                                                                double prompt,
                                                                double output) {
  if (requests < 1) {
    return InvalidArgument(
        "expected 'requests' (the run's request count) beside a "
        "bench_dataset",
        "requests");
  }
  estimate::BenchRandomDataset g;
  g.requests = requests;
  g.input_len = d["input_len"].get<int>();
  g.output_len = d["output_len"].get<int>();
  g.range_ratio = d.value("range_ratio", 0.0);
  g.seed = d.value("seed", 1U);
  g.output_min = d.value("output_min", 1);
  auto t = estimate::SglangRandomLengths(g);
  if (!t) return t;
  double in = 0, out = 0;
  for (const estimate::TraceRequest& r : *t) {
    in += r.prompt_tokens;
    out += r.output_tokens;
  }
  in /= requests;
  out /= requests;
  // Rounding to 0.1 token, one output of 0 drawn and counted as 1, and
  // re-tokenizing (SGLang 0.5.8 reports some 1,000-token random prompts a
  // token shorter than drawn): 0.5% of the mean at most.
  auto off = [requests](double got, double want) {
    return std::fabs(got - want) >
           std::max(0.05 + 1.0 / requests, 0.005 * want);
  };
  if (off(in, prompt) || off(out, output)) {
    return InvalidArgument(
        fmt::format("the bench_dataset's {} requests average {} prompt and {} "
                    "output tokens, the case states {} and {}: not the run's "
                    "generator",
                    requests, FormatNumber(in), FormatNumber(out),
                    FormatNumber(prompt), FormatNumber(output)),
        "bench_dataset");
  }
  return t;
}

// Reads a case's load: a static batch (a number, or "max" for the largest
// that fits, capped at the 8192 CUDA-graph padding limit the TensorRT-LLM
// sources state and at the row's `max_batch_cap`, the runtime's own batch
// limit where its source states one; 0 = none), a closed-loop concurrency
// or a Poisson rate (both simulated, SimulatedMetric), and whether the
// source reports means.
Result<ServingLoad> ReadLoad(const model::ModelSpec& m, const hw::System& sys,
                             estimate::ServeConfig cfg, const json& c,
                             double batch_cap, const json& dataset) {
  ServingLoad load;
  const double run_requests = c.value("requests", 0.0);
  if (dataset.is_object() && c.contains("concurrency")) {
    auto lengths = BenchDatasetLengths(dataset, static_cast<int>(run_requests),
                                       cfg.prompt, cfg.output);
    if (!lengths) return tl::unexpected(lengths.error());
    load.lengths = std::move(*lengths);
    load.dataset = fmt::format(
        "sglang.bench_serving's random dataset ({} and {} tokens at most, "
        "seed {})",
        dataset["input_len"].get<int>(), dataset["output_len"].get<int>(),
        dataset.value("seed", 1));
  }
  if (c.contains("spread")) load.spread = c["spread"].get<double>();
  load.max_num_seqs = c.value("max_num_seqs", 0);
  load.max_batched_tokens = c.value("max_batched_tokens", 0);
  load.recv_interval = c.value("scheduler_recv_interval", 1);
  load.adp_balance = c.value("adp_balance_timeout_iters", 0);
  if (c.contains("piecewise_cuda_graph")) {
    load.prefill_graph = c["piecewise_cuda_graph"].get<bool>() ? 1 : 0;
  }
  if (c.contains("batch") && c["batch"].is_string()) {
    cfg.batch = 1;
    auto probe = estimate::EstimateServing(m, sys, cfg);
    if (!probe) return tl::unexpected(probe.error());
    const double fits = std::min(8192.0, probe->max_batch);
    const bool capped = batch_cap > 0 && fits > batch_cap;
    const double runtime = std::max(1.0, capped ? batch_cap : fits);
    // The run's requests, split over the replicas.
    load.requests = std::ceil(run_requests / std::max(1, cfg.dp));
    const bool all_at_once = load.requests > 0 && load.requests <= runtime;
    load.batch = load.prefill_batch = all_at_once ? load.requests : runtime;
    load.max_batch = true;
    load.text =
        "batch " + FormatNumber(load.batch) +
        (all_at_once ? " (all " + FormatNumber(load.requests) +
                           " requests of the run at once; " +
                           FormatNumber(std::floor(runtime)) + " would fit)"
         : capped ? " (the runtime's max_batch_size; " +
                        FormatNumber(std::floor(fits)) + " would fit)"
                  : " (the largest that fits)");
    if (load.requests > load.batch) {
      load.text +=
          fmt::format(", {} requests in waves", FormatNumber(load.requests));
    }
  } else if (c.contains("batch")) {
    load.batch = load.prefill_batch = c["batch"].get<double>();
    load.text = "batch " + FormatNumber(load.batch);
  } else if (c.contains("concurrency")) {
    load.batch = c["concurrency"].get<double>();
    // The closed loop's cap where the source states it (the run's average
    // concurrency is below it by the ramp-down), and the run's requests.
    const bool capped = c.contains("max_concurrency");
    load.concurrency =
        capped ? c["max_concurrency"].get<int>()
               : std::max(1, static_cast<int>(std::lround(load.batch)));
    load.requests = run_requests;
    load.text = fmt::format(
        "concurrency {}{} (simulated: continuous batching, chunked prefill, "
        "{})",
        load.concurrency,
        capped ? fmt::format(" at most (the run averaged {})",
                             FormatNumber(load.batch))
               : std::string(),
        SimulatedRunText(load));
  } else {
    load.rate = c["rate"].get<double>();
    load.requests = run_requests;
    load.text = fmt::format(
        "rate {}/s (simulated: Poisson arrivals, continuous batching, "
        "chunked prefill, {})",
        FormatNumber(load.rate), SimulatedRunText(load));
  }
  if (load.max_num_seqs > 0 || load.max_batched_tokens > 0) {
    load.text += fmt::format(
        " with the run's step limits:{}{}",
        load.max_num_seqs > 0 ? fmt::format(" {} sequences", load.max_num_seqs)
                              : std::string(),
        load.max_batched_tokens > 0
            ? fmt::format(" {} tokens", load.max_batched_tokens)
            : std::string());
  }
  if (load.adp_balance > 0) {
    load.text += fmt::format(
        ", new requests held until every attention-DP rank has one or {} "
        "iterations pass (the launch's attention_dp_config enable_balance)",
        load.adp_balance);
  }
  if (load.recv_interval > 1) {
    load.text += fmt::format(
        ", new requests received every {} decode steps (the launch's "
        "--scheduler-recv-interval)",
        load.recv_interval);
  }
  if (load.prefill_graph >= 0) {
    load.text += load.prefill_graph == 1
                     ? ", prefill steps replayed as piecewise CUDA graphs "
                       "(the launch's setting: no eager-prefill host floor)"
                     : ", prefill steps run eagerly (the launch's setting)";
  }
  load.mean = c.value("statistic", "") == "mean";
  return load;
}

// Checks one case against the schema; an empty string when it conforms.
std::string CaseSchemaError(const json& c) {
  if (!c.is_object()) return "expected an object, found " + c.dump();
  for (const char* k : {"prompt", "output"}) {
    if (!c.contains(k) || !PositiveNumber(c[k])) {
      return fmt::format(
          "expected '{}' as a positive number of tokens, found "
          "{}",
          k, c.contains(k) ? c[k].dump() : "none");
    }
  }
  // Fields that only a simulated case (a concurrency or a rate) takes.
  const bool simulated = c.contains("concurrency") || c.contains("rate");
  if (c.contains("requests") &&
      !(c["requests"].is_number_integer() && c["requests"].get<long>() > 0 &&
        c["requests"].get<long>() <= 1000000 &&
        (c.value("batch", json()) == "max" || simulated))) {
    return fmt::format(
        "expected 'requests' (the run's request count) as a whole number from "
        "1 to 1000000 beside \"batch\": \"max\", a concurrency or a rate, "
        "found {}",
        c["requests"].dump());
  }
  for (const char* k :
       {"max_num_seqs", "max_batched_tokens", "scheduler_recv_interval",
        "adp_balance_timeout_iters"}) {
    if (c.contains(k) && !(c[k].is_number_integer() && c[k].get<long>() >= 1 &&
                           c[k].get<long>() <= 1000000 && simulated)) {
      return fmt::format(
          "expected '{}' (the engine's step limit the source ran with) as a "
          "whole number from 1 to 1000000 beside a concurrency or a rate, "
          "found {}",
          k, c[k].dump());
    }
  }
  if (c.contains("piecewise_cuda_graph") &&
      !(c["piecewise_cuda_graph"].is_boolean() && simulated)) {
    return fmt::format(
        "expected 'piecewise_cuda_graph' (the launch captures prefill steps "
        "in CUDA graphs) as true or false beside a concurrency or a rate, "
        "found {}",
        c["piecewise_cuda_graph"].dump());
  }
  if (c.contains("spread") &&
      !(c["spread"].is_number() && c["spread"].get<double>() >= 0 &&
        c["spread"].get<double>() < 1 && simulated)) {
    return fmt::format(
        "expected 'spread' (the lengths' half-range as a fraction of their "
        "means) from 0 to below 1 beside a concurrency or a rate, found {}",
        c["spread"].dump());
  }
  if (c.contains("max_concurrency") &&
      !(c["max_concurrency"].is_number_integer() &&
        c["max_concurrency"].get<long>() >= 1 &&
        c["max_concurrency"].get<long>() <= 100000 &&
        c.contains("concurrency") && PositiveNumber(c["concurrency"]) &&
        c["max_concurrency"].get<double>() >= c["concurrency"].get<double>())) {
    return fmt::format(
        "expected 'max_concurrency' (the closed loop's cap) as a whole number "
        "no lower than the case's concurrency and at most 100000, found {}",
        c["max_concurrency"].dump());
  }
  int loads = 0;
  for (const char* k : {"batch", "concurrency", "rate"}) {
    if (!c.contains(k)) continue;
    ++loads;
    const bool ok =
        PositiveNumber(c[k]) || (std::string(k) == "batch" && c[k] == "max");
    if (!ok) {
      return fmt::format("expected '{}' as a positive number{}, found {}", k,
                         std::string(k) == "batch" ? " or \"max\"" : "",
                         c[k].dump());
    }
  }
  if (loads != 1) {
    return fmt::format(
        "expected exactly one of batch, concurrency or rate, found {}; state "
        "the load the source ran at",
        loads);
  }
  if (c.contains("e2e_s") &&
      (!c.contains("rate") || !PositiveNumber(c["e2e_s"]))) {
    return "expected 'e2e_s' (the measured latency behind a rate's "
           "concurrency) "
           "as a positive number of seconds beside 'rate'; a measured "
           "end-to-end latency to compare belongs under 'measured'";
  }
  if (c.contains("statistic") && !c["statistic"].is_string()) {
    return "expected 'statistic' as text (median, mean), found " +
           c["statistic"].dump();
  }
  json meas = json::object();
  if (c.contains("measured")) {
    if (!c["measured"].is_object()) {
      return "expected 'measured' as an object, found " + c["measured"].dump();
    }
    meas = c["measured"];
  }
  if (c.contains("metric")) {
    if (!c["metric"].is_string()) {
      return "expected 'metric' as text, found " + c["metric"].dump();
    }
    meas[c["metric"].get<std::string>()] = c.value("value", json());
  }
  if (meas.empty()) {
    return "expected a 'measured' object (tpot_s, itl_s, ttft_s, e2e_s, "
           "tokens_per_s_per_chip, output_tokens_per_s, "
           "tokens_per_s_per_user), found none";
  }
  for (auto it = meas.begin(); it != meas.end(); ++it) {
    if (!IsServingMetric(it.key())) {
      return fmt::format(
          "unknown measured quantity '{}'; expected one of tpot_s, itl_s, "
          "ttft_s, e2e_s, tokens_per_s_per_chip, output_tokens_per_s, "
          "tokens_per_s_per_user",
          it.key());
    }
    if (!PositiveNumber(it.value())) {
      return fmt::format("expected {} as a positive number, found {}", it.key(),
                         it.value().dump());
    }
  }
  return "";
}

// Checks the row's own fields; an empty string when they conform.
std::string RowSchemaError(const json& row) {
  if (!row.contains("system") || !row["system"].is_string()) {
    return "expected 'system' as a catalog system such as \"h100:8x1\"";
  }
  if (!row.contains("model") || !row["model"].is_object()) {
    return "expected 'model' as {\"catalog\": id} or an inline config";
  }
  if (!row.contains("plan") || !row["plan"].is_object()) {
    return "expected 'plan' as an object with tp and ep degrees";
  }
  for (const char* k : {"tp", "ep"}) {
    if (row["plan"].contains(k) && !(row["plan"][k].is_number_integer() &&
                                     row["plan"][k].get<long>() > 0)) {
      return fmt::format("expected plan '{}' as a positive integer, found {}",
                         k, row["plan"][k].dump());
    }
  }
  if (row["plan"].contains("dp_attention") &&
      !(row["plan"]["dp_attention"].is_boolean() &&
        row["plan"].value("ep", 1) > 1)) {
    return fmt::format(
        "expected plan 'dp_attention' as true or false with an ep above 1, "
        "found {}",
        row["plan"]["dp_attention"].dump());
  }
  if (row.contains("mem_fraction") &&
      !(row["mem_fraction"].is_number() && row["mem_fraction"] > 0 &&
        row["mem_fraction"] <= 1)) {
    return fmt::format(
        "expected 'mem_fraction' (the launch's --mem-fraction-static or "
        "--gpu-memory-utilization) as a number above 0 and at most 1, "
        "found {}",
        row["mem_fraction"].dump());
  }
  if (row.contains("kv_free_fraction") &&
      !(row["kv_free_fraction"].is_number() && row["kv_free_fraction"] > 0 &&
        row["kv_free_fraction"] <= 1 && !row.contains("mem_fraction"))) {
    return fmt::format(
        "expected 'kv_free_fraction' (TensorRT-LLM's free_gpu_memory_fraction) "
        "as a number above 0 and at most 1, without 'mem_fraction', found {}",
        row["kv_free_fraction"].dump());
  }
  if (row.contains("max_batch_cap") &&
      !(row["max_batch_cap"].is_number_integer() &&
        row["max_batch_cap"].get<long>() > 0)) {
    return fmt::format(
        "expected 'max_batch_cap' as a positive integer (the runtime's batch "
        "limit), found {}",
        row["max_batch_cap"].dump());
  }
  for (const char* k : {"weights", "expert_weights", "kv"}) {
    if (row.contains(k) &&
        !(row[k].is_string() && hw::ParseDtype(row[k].get<std::string>()))) {
      return fmt::format(
          "expected '{}' as a dtype (bf16, fp8, int8, fp4...), "
          "found {}",
          k, row[k].dump());
    }
  }
  if (row.contains("bench_dataset")) {
    const json& d = row["bench_dataset"];
    auto whole = [&d](const char* k, long lo, long hi) {
      return d.contains(k) && d[k].is_number_integer() &&
             d[k].get<long>() >= lo && d[k].get<long>() <= hi;
    };
    if (!(d.is_object() && d.value("name", "") == "sglang-random" &&
          whole("input_len", 1, 1L << 30) && whole("output_len", 1, 1L << 30) &&
          (!d.contains("seed") || whole("seed", 0, 4294967295L)) &&
          (!d.contains("output_min") || whole("output_min", 0, 1)) &&
          (!d.contains("range_ratio") ||
           (d["range_ratio"].is_number() && d["range_ratio"] >= 0 &&
            d["range_ratio"] <= 1)))) {
      return fmt::format(
          "expected 'bench_dataset' as {{\"name\": \"sglang-random\", "
          "\"input_len\": N, \"output_len\": N}} with optional seed, "
          "range_ratio (0 to 1) and output_min (0 or 1), found {}",
          d.dump());
    }
  }
  if (!row.contains("cases") || !row["cases"].is_array() ||
      row["cases"].empty()) {
    return "expected 'cases' as a non-empty list of measured points";
  }
  return "";
}

// The engine a row ran, without its version: its "engine" up to " v1.2",
// else its family up to the first comma.
std::string RowEngine(const json& row) {
  if (row.contains("engine") && row["engine"].is_string()) {
    std::string e = row["engine"].get<std::string>();
    size_t v = e.find(" v");
    if (v != std::string::npos && v + 2 < e.size() &&
        std::isdigit(static_cast<unsigned char>(e[v + 2]))) {
      e.resize(v);
    }
    return e;
  }
  std::string fam = row.value("family", std::string());
  return fam.substr(0, fam.find(','));
}

// The measured quantities of one case, in a stable order: the legacy
// metric/value pair or the "measured" object.
std::vector<std::pair<std::string, double>> CaseMeasurements(const json& c) {
  std::vector<std::pair<std::string, double>> out;
  if (c.contains("metric")) {
    out.emplace_back(c["metric"].get<std::string>(), c["value"].get<double>());
  }
  if (c.contains("measured")) {
    for (const char* k : kServingMetrics) {
      if (c["measured"].contains(k)) {
        out.emplace_back(k, c["measured"][k].get<double>());
      }
    }
  }
  return out;
}

// A closed-loop case's measured output tokens/s against its own latencies:
// by Little's law C = throughput x E2E / output, with E2E = TTFT + (output
// - 1) x TPOT. Where the implied concurrency is off the stated one by more
// than a factor of 1.25, the run's duration holds time outside its
// requests (a warm-up, a JIT compile, a slow client) that no serving model
// predicts; the reason, else empty. On the 60 cases that state all four,
// 55 imply 0.95 to 1.10 times their concurrency; the other 5 (MI300X
// cookbook runs, four at concurrency 1) 0.30 to 0.70, and 1.38.
std::string ThroughputContradictsLatency(const json& c) {
  if (!c.contains("measured") || !c.contains("concurrency")) return "";
  const json& m = c["measured"];
  if (!m.contains("output_tokens_per_s") || !m.contains("ttft_s") ||
      !m.contains("tpot_s") || !PositiveNumber(c["concurrency"])) {
    return "";
  }
  const double out = c["output"].get<double>();
  const double e2e =
      m["ttft_s"].get<double>() + (out - 1) * m["tpot_s"].get<double>();
  const double implied = m["output_tokens_per_s"].get<double>() * e2e / out;
  const double ratio = implied / c["concurrency"].get<double>();
  if (ratio >= 0.8 && ratio <= 1.25) return "";
  return fmt::format(
      "the run's output tokens/s and its own TTFT and TPOT imply {:.2f} "
      "requests in flight at a stated concurrency of {} (Little's law): its "
      "duration holds time outside the requests, which is not modelled",
      implied, FormatNumber(c["concurrency"].get<double>()));
}

// The host time per step of the engine version the row ran
// (EngineHostTime: unoverlapped scheduler time, eager prefill launches).
void SetEngineHostTime(const std::string& engine, estimate::ServeConfig* cfg) {
  estimate::ApplyEngineHostTime(engine, estimate::EngineHostTime(engine), cfg);
}

// One published serving row: each measured quantity of each case is a case
// of the report.
Result<bool> ScoreServingJson(const catalog::Catalog& cat,
                              const std::string& path, const json& row,
                              ValidationReport& report) {
  if (!row.is_object() || !row.contains("id") || !row["id"].is_string()) {
    return RowError(path, "?", 0, "expected an object with a string 'id'");
  }
  const std::string id = row["id"].get<std::string>();
  if (std::string e = RowSchemaError(row); !e.empty()) {
    return RowError(path, id, 0, e);
  }
  for (size_t k = 0; k < row["cases"].size(); ++k) {
    if (std::string e = CaseSchemaError(row["cases"][k]); !e.empty()) {
      return RowError(path, id, static_cast<int>(k + 1), e);
    }
  }
  auto mdl = RowModel(cat, path, row);
  if (!mdl) {
    report.skipped.push_back(id + ": " + mdl.error().ToString());
    return true;
  }
  auto sys = cat.FindSystem(row["system"].get<std::string>());
  if (!sys) {
    report.skipped.push_back(id + ": " + sys.error().message);
    return true;
  }
  estimate::ServeConfig cfg;
  cfg.tp = row["plan"].value("tp", 1);
  cfg.ep = row["plan"].value("ep", 1);
  cfg.dp_attention = row["plan"].value("dp_attention", false);
  cfg.dp = std::max(1, sys->num_chips() / (cfg.tp * cfg.ep));
  cfg.weights = *hw::ParseDtype(row.value("weights", "bf16"));
  // Checkpoints that quantize the routed experts alone (docs/model.md 7.1).
  if (row.contains("expert_weights")) {
    cfg.expert_weights =
        *hw::ParseDtype(row["expert_weights"].get<std::string>());
  }
  cfg.kv = *hw::ParseDtype(row.value("kv", "bf16"));
  // The launch's static memory fraction of the device's memory.
  cfg.memory_fraction = row.value("mem_fraction", 0.0);
  cfg.kv_free_fraction = row.value("kv_free_fraction", 0.0);
  // The row's engine and release, else its family's engine
  // ("TensorRT-LLM, H100 / H200 / B200"): host time, collective curve,
  // decode attention, admission.
  const std::string engine =
      row.contains("engine") ? row.value("engine", "") : RowEngine(row);
  SetEngineHostTime(engine, &cfg);
  std::string assumptions;
  for (const json& a : row.value("assumptions", json::array())) {
    if (a.is_string()) assumptions += "; " + a.get<std::string>();
  }
  int k = 0;
  for (const json& c : row["cases"]) {
    ++k;
    cfg.prompt = c["prompt"].get<double>();
    cfg.output = c["output"].get<double>();
    auto load =
        ReadLoad(mdl->spec, *sys, cfg, c, row.value("max_batch_cap", 0.0),
                 row.value("bench_dataset", json()));
    if (!load) {
      report.skipped.push_back(
          fmt::format("{}#{}: {}", id, k, load.error().message));
      continue;
    }
    load->engine = engine;
    // vLLM V0's multi-step scheduling, where the row's launch set it.
    if (row.contains("num_scheduler_steps") &&
        row["num_scheduler_steps"].is_number_integer()) {
      load->scheduler_steps =
          std::max(1, row["num_scheduler_steps"].get<int>());
    }
    const auto measured = CaseMeasurements(c);
    const std::string contradiction = ThroughputContradictsLatency(c);
    for (const auto& [metric, value] : measured) {
      if (metric == "output_tokens_per_s" && !contradiction.empty()) {
        report.skipped.push_back(
            fmt::format("{}#{}.{}: {}", id, k, metric, contradiction));
        continue;
      }
      std::string infeasible;
      auto predicted = PredictServingMetric(mdl->spec, *sys, cfg, *load, metric,
                                            &infeasible);
      const std::string case_id = measured.size() == 1
                                      ? fmt::format("{}#{}", id, k)
                                      : fmt::format("{}#{}.{}", id, k, metric);
      if (!predicted) {
        report.skipped.push_back(case_id + ": " + predicted.error().message);
        continue;
      }
      std::string detail = fmt::format(
          "{} on {}, tp={} ep={}{}, {}, {} in / {} out, weights {}{}, KV "
          "{}{}{}{}",
          row.value("model_name", ""), sys->id, cfg.tp, cfg.ep,
          cfg.dp_attention ? " (DP attention)" : "", load->text,
          FormatNumber(cfg.prompt), FormatNumber(cfg.output),
          hw::DtypeName(cfg.weights),
          cfg.expert_weights ? fmt::format(" (routed experts {})",
                                           hw::DtypeName(*cfg.expert_weights))
                             : std::string(),
          hw::DtypeName(cfg.kv),
          c.contains("statistic")
              ? "; measured: " + c["statistic"].get<std::string>()
              : std::string(),
          infeasible.empty() ? "" : "; predicted infeasible: " + infeasible,
          assumptions);
      AddCase(report, case_id,
              sys->chip.is_tpu() ? "inference-tpu" : "inference-gpu", metric,
              *predicted, value, detail, row.value("source", ""),
              row.value("family", ""), sys->chip.id);
      report.cases.back().engine = RowEngine(row);
      report.cases.back().metric_class =
          ServingMetricClass(metric, load->max_batch);
      report.cases.back().dp_attention = cfg.dp_attention;
    }
  }
  return true;
}

// Serving points per metric class, then per engine and class, each in the
// order they first appear.
template <typename SummarizeFn>
void SummarizeServing(ValidationReport& report, SummarizeFn summarize) {
  std::vector<std::string> classes, engines;
  for (const ValidationCase& c : report.cases) {
    if (!IsServingCase(c)) continue;
    if (std::find(classes.begin(), classes.end(), c.metric_class) ==
        classes.end()) {
      classes.push_back(c.metric_class);
    }
    if (std::find(engines.begin(), engines.end(), c.engine) == engines.end()) {
      engines.push_back(c.engine);
    }
  }
  for (const std::string& m : kServingClasses) {
    if (std::find(classes.begin(), classes.end(), m) == classes.end()) continue;
    report.serving_by_metric.push_back(
        summarize(ServingMetricLabel(m), [&](const ValidationCase& c) {
          return IsServingCase(c) && c.metric_class == m;
        }));
    for (const std::string& e : engines) {
      GroupSummary s = summarize(
          (e.empty() ? "unstated engine" : e) + ": " + ServingMetricLabel(m),
          [&](const ValidationCase& c) {
            return IsServingCase(c) && c.metric_class == m && c.engine == e;
          });
      if (s.count > 0) report.serving_by_engine.push_back(s);
    }
  }
}

// A run whose source does not state its recompute policy ran with its
// engine's default (MaxText: full), or, where the engine has none (Megatron,
// NeMo: no recompute) or it does not fit, the least recompute that fits by
// our memory model (the run did fit). Updates `cfg` and `est`; returns the
// note for the setup column.
std::string ResolveRemat(const json& row, const TrainingRun& run,
                         const hw::System& sys, estimate::TrainingConfig& cfg,
                         Result<estimate::TrainingEstimate>& est) {
  std::string remat_note;
  auto def = model::ParseRemat(row.value("remat_default", ""));
  if (est && !run.remat_stated && def && *def != cfg.memory.remat) {
    estimate::TrainingConfig c2 = cfg;
    c2.memory.remat = *def;
    auto e2 = estimate::EstimateTraining(run.model, sys, c2);
    if (e2) {
      cfg = c2;
      est = e2;
      remat_note = std::string("; recompute not stated: ") +
                   std::string(model::RematName(*def)) +
                   ", the engine's default";
    }
  }
  if (est && !est->feasible && !run.remat_stated) {
    std::string fallback = remat_note;
    remat_note.clear();
    for (model::Remat r :
         {model::Remat::kSelective, model::Remat::kSaveMatmulOutputs,
          model::Remat::kFull}) {
      estimate::TrainingConfig c2 = cfg;
      c2.memory.remat = r;
      auto e2 = estimate::EstimateTraining(run.model, sys, c2);
      if (e2 && e2->feasible) {
        cfg = c2;
        est = e2;
        remat_note = std::string("; recompute not stated: ") +
                     std::string(model::RematName(r)) + ", the least that fits";
        break;
      }
    }
    if (remat_note.empty() && !fallback.empty()) {
      remat_note = std::string("; recompute not stated and none fits: ") +
                   std::string(model::RematName(cfg.memory.remat)) +
                   ", the engine's default";
    }
  }
  return remat_note;
}

// The first quantity the source measured (step time, tokens/s per chip,
// TFLOP/s per chip in the source's FLOP convention, MFU) and our prediction
// of it: {metric, predicted, expected}.
struct Measured {
  std::string metric;
  double predicted = 0;
  double expected = 0;
};
Measured MeasuredMetric(const json& row, const model::ModelSpec& m,
                        const hw::System& sys,
                        const estimate::TrainingConfig& cfg,
                        const estimate::TrainingEstimate& est) {
  // The source's FLOP count: model FLOPs with causal attention halved or
  // full, or Narayanan et al.'s (2021, eq. 3) full attention with the
  // recomputed forward counted ("hfu").
  std::string conv = row.value("flops_convention", "model_causal");
  const model::AttentionFlops attn = conv == "model_causal"
                                         ? model::AttentionFlops::kCausal
                                         : model::AttentionFlops::kFull;
  double per_token = model::TrainFlopsPerToken(m, cfg.seq, attn);
  if (conv == "hfu") {
    per_token +=
        model::Activations(m, cfg.memory.remat, cfg.seq, hw::Dtype::kBf16, attn)
            .recompute_flops_per_token;
  }
  double tflops = per_token * est.tokens_per_s_per_chip / 1e12;
  const json& meas = row["measured"];
  Measured out;
  for (const char* k :
       {"step_time_s", "tokens_per_s_per_chip", "tflops_per_chip", "mfu"}) {
    if (!meas.contains(k)) continue;
    out.metric = k;
    out.expected = meas[k].get<double>();
    if (out.metric == "step_time_s") out.predicted = est.step_time.si();
    if (out.metric == "tokens_per_s_per_chip")
      out.predicted = est.tokens_per_s_per_chip;
    if (out.metric == "tflops_per_chip") out.predicted = tflops;
    if (out.metric == "mfu") {
      out.predicted = tflops * 1e12 / sys.chip.Peak(hw::Dtype::kBf16).si();
    }
    break;
  }
  return out;
}

}  // namespace

std::string ServingMetricClass(const std::string& metric, bool max_batch) {
  if (metric == "tpot_s" || metric == "itl_s") return "tpot";
  if (metric == "ttft_s") return "ttft";
  if (metric == "e2e_s") return "e2e";
  if (metric == "tokens_per_s_per_user") return "tpot";
  return max_batch ? "throughput_max" : "throughput";
}

std::string ServingMetricLabel(const std::string& metric_class) {
  if (metric_class == "tpot") return "TPOT / inter-token latency";
  if (metric_class == "ttft") return "TTFT";
  if (metric_class == "throughput") {
    return "throughput at a stated batch, concurrency or rate";
  }
  if (metric_class == "throughput_max") {
    return "throughput at the runtime's largest batch";
  }
  if (metric_class == "e2e") return "end-to-end latency";
  return metric_class;
}

Result<bool> ScoreServingRow(const catalog::Catalog& cat,
                             const std::string& path,
                             const std::string& row_json,
                             ValidationReport& report) {
  json row = json::parse(row_json, nullptr, false);
  if (row.is_discarded()) {
    return ParseError("a serving row is not valid JSON", path);
  }
  return ScoreServingJson(cat, path, row, report);
}

std::vector<MetricAccuracy> ServingAccuracy(const ValidationReport& report,
                                            const std::string& chip) {
  std::vector<MetricAccuracy> out;
  for (const std::string& m : kServingClasses) {
    std::vector<ValidationCase> on_chip, all;
    for (const ValidationCase& c : report.cases) {
      if (!IsServingCase(c) || c.metric_class != m) continue;
      all.push_back(c);
      if (c.chip == chip) on_chip.push_back(c);
    }
    ValidationReport sub;
    sub.cases = on_chip.size() >= 3 ? on_chip : all;
    Summarize(sub);
    MetricAccuracy a;
    a.metric_class = m;
    a.scope = on_chip.size() >= 3 ? chip : "all chips";
    for (const GroupSummary& g : sub.serving_by_metric) a.summary = g;
    out.push_back(a);
  }
  return out;
}

namespace internal {

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double pos = q * (v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = static_cast<size_t>(std::ceil(pos));
  return v[lo] + (v[hi] - v[lo]) * (pos - lo);
}

estimate::Parallelism RowPlan(const json& row) {
  estimate::Parallelism par;
  const json p = row.value("plan", json::object());
  for (int i = 0; i < estimate::kNumPar; ++i) {
    estimate::DegreeOf(par, i) = p.value(estimate::ParName(i), 1);
  }
  par.zero = p.value("zero", 0);
  par.sequence_parallel = row.value("sequence_parallel", true);
  return par;
}

double PredictValue(const json& row, const model::ModelSpec& model,
                    const hw::System& sys,
                    const estimate::TrainingConfig& cfg) {
  auto est = estimate::EstimateTraining(model, sys, cfg);
  if (!est) return std::nan("");
  return MeasuredMetric(row, model, sys, cfg, *est).predicted;
}

Result<ValidationCase> PredictTrainingRow(const json& row,
                                          const TrainingRun& run,
                                          const hw::System& sys,
                                          estimate::TrainingConfig* resolved) {
  estimate::TrainingConfig cfg = run.config;
  auto est = estimate::EstimateTraining(run.model, sys, cfg);
  std::string remat_note = ResolveRemat(row, run, sys, cfg, est);
  if (!est) return tl::unexpected(est.error());
  if (resolved) *resolved = cfg;
  Measured meas = MeasuredMetric(row, run.model, sys, cfg, *est);
  std::string assumptions;
  for (const json& a : row.value("assumptions", json::array())) {
    assumptions += "; " + a.get<std::string>();
  }
  std::string detail = fmt::format(
      "{} on {}, {}, batch {} x {}, mb {}, remat {}{}, {}{}{}",
      row.value("model_name", ""), sys.id, cfg.par.ToString(),
      row.value("global_batch", 0), cfg.seq, cfg.layout.micro_batch,
      model::RematName(cfg.memory.remat),
      cfg.memory.offload_activations ? " (activations on the host)" : "",
      hw::DtypeName(cfg.precision.matmul),
      est->feasible ? "" : "; predicted infeasible: " + est->reason,
      assumptions + remat_note);
  ValidationReport one;
  AddCase(one, row.value("id", "?"), sys.chip.is_tpu() ? "tpu" : "gpu",
          meas.metric, meas.predicted, meas.expected, detail,
          row.value("source", ""), row.value("family", ""), sys.chip.id);
  return one.cases.front();
}

}  // namespace internal

Result<ValidationReport> RunValidation(const catalog::Catalog& cat) {
  ValidationReport report;
  BookCases(cat, report);
  for (const catalog::DataFile& f : cat.validation_files()) {
    if (IsMemoryFile(f.path)) continue;  // RunMemoryValidation's
    auto read = internal::ReadValidationDoc(f);
    if (!read) return tl::unexpected(read.error());
    const json& doc = *read;
    const bool inference = f.path.find("inference") != std::string::npos;
    for (const json& row : doc.value("runs", json::array())) {
      std::string id = row.value("id", "?");
      if (inference && !row.contains("skip")) {
        auto scored = ScoreServingJson(cat, f.path, row, report);
        if (!scored) return tl::unexpected(scored.error());
        continue;
      }
      if (row.contains("skip")) {
        report.skipped.push_back(id + ": " + row["skip"].get<std::string>());
        continue;
      }
      auto run = ReadTrainingRun(cat, f.path, row);
      if (!run) {
        report.skipped.push_back(id + ": " + run.error().ToString());
        continue;
      }
      auto c = internal::PredictTrainingRow(row, *run, run->system);
      if (!c) {
        report.skipped.push_back(id + ": " + c.error().message);
        continue;
      }
      report.cases.push_back(*c);
    }
  }
  Summarize(report);
  return report;
}

Result<std::shared_ptr<const ValidationReport>> CachedValidation(
    const catalog::Catalog& cat) {
  using Shared = Result<std::shared_ptr<const ValidationReport>>;
  struct Entry {
    std::once_flag once;
    std::optional<Shared> result;
  };
  constexpr size_t kMaxCatalogs = 8;
  // Never destroyed: `ui` threads may still ask while the process exits.
  static auto* mu = new std::mutex;
  static auto* cache = new std::map<uint64_t, std::shared_ptr<Entry>>;
  std::shared_ptr<Entry> entry;
  {
    std::lock_guard<std::mutex> lock(*mu);
    auto it = cache->find(cat.fingerprint());
    if (it == cache->end()) {
      // Callers still holding an evicted entry keep it alive.
      if (cache->size() >= kMaxCatalogs) cache->clear();
      it = cache->emplace(cat.fingerprint(), std::make_shared<Entry>()).first;
    }
    entry = it->second;
  }
  std::call_once(entry->once, [&] {
    // The built-in catalog's report, computed when scalemodel was built.
    if (auto pre = internal::PrecomputedReport(cat.fingerprint())) {
      entry->result =
          Shared(std::make_shared<const ValidationReport>(std::move(*pre)));
      return;
    }
    auto rep = RunValidation(cat);
    if (!rep) {
      entry->result = Shared(tl::unexpected(rep.error()));
    } else {
      entry->result =
          Shared(std::make_shared<const ValidationReport>(std::move(*rep)));
    }
  });
  return *entry->result;
}

void Summarize(ValidationReport& report) {
  report.summary.clear();
  report.by_family.clear();
  report.by_chip.clear();
  report.serving_by_chip.clear();
  report.serving_by_metric.clear();
  report.serving_by_engine.clear();
  // One summary over the cases `in` selects.
  auto summarize = [&](const std::string& name, auto in) {
    std::vector<double> abs_errs, errs;
    for (const ValidationCase& c : report.cases) {
      if (!in(c)) continue;
      errs.push_back(c.rel_error);
      abs_errs.push_back(std::fabs(c.rel_error));
    }
    GroupSummary s;
    s.group = name;
    s.count = static_cast<int>(errs.size());
    if (errs.empty()) return s;
    s.median_abs_rel_error = Quantile(abs_errs, 0.5);
    s.p90_abs_rel_error = Quantile(abs_errs, 0.9);
    s.max_abs_rel_error = *std::max_element(abs_errs.begin(), abs_errs.end());
    s.median_rel_error = Quantile(errs, 0.5);
    return s;
  };
  for (const char* g : {"book", "gpu", "tpu", "all", "inference-gpu",
                        "inference-tpu", "inference"}) {
    std::string gs(g);
    GroupSummary s =
        summarize(gs == "all"         ? "training runs (gpu + tpu)"
                  : gs == "inference" ? "inference runs (gpu + tpu)"
                                      : gs,
                  [&](const ValidationCase& c) {
                    return gs == "all"         ? IsTrainingCase(c)
                           : gs == "inference" ? IsServingCase(c)
                                               : c.group == gs;
                  });
    if (s.count > 0) report.summary.push_back(s);
  }
  std::vector<std::string> families;
  for (const ValidationCase& c : report.cases) {
    if (!c.family.empty() && std::find(families.begin(), families.end(),
                                       c.family) == families.end()) {
      families.push_back(c.family);
    }
  }
  for (const std::string& f : families) {
    report.by_family.push_back(
        summarize(f, [&](const ValidationCase& c) { return c.family == f; }));
  }
  // Per chip, in the order chips first appear, for one kind of case.
  auto per_chip = [&](bool (*kind)(const ValidationCase&)) {
    std::vector<std::string> chips;
    for (const ValidationCase& c : report.cases) {
      if (kind(c) && !c.chip.empty() &&
          std::find(chips.begin(), chips.end(), c.chip) == chips.end()) {
        chips.push_back(c.chip);
      }
    }
    std::vector<GroupSummary> out;
    out.reserve(chips.size());
    for (const std::string& chip : chips) {
      out.push_back(summarize(chip, [&](const ValidationCase& c) {
        return c.chip == chip && kind(c);
      }));
    }
    return out;
  };
  report.by_chip = per_chip(IsTrainingCase);
  report.serving_by_chip = per_chip(IsServingCase);
  SummarizeServing(report, summarize);
}

bool IsTrainingCase(const ValidationCase& c) {
  return c.group == "gpu" || c.group == "tpu";
}

bool IsServingCase(const ValidationCase& c) {
  return c.group.rfind("inference", 0) == 0;
}

namespace {

// The serving sections of docs/accuracy.md: per metric class, then per
// engine and class.
std::string ServingMarkdown(const ValidationReport& r) {
  std::string out =
      "\n## Serving points by metric\n\nEach serving point (data/"
      "validation/inference_runs.json; sources in docs/validation-sources.md) "
      "is compared, in realistic mode, on each quantity its source measured, "
      "at the load the source states. A static batch runs the static "
      "serving estimate: TPOT and inter-token latency with the decode step, "
      "TTFT with the prefill of the whole batch, end-to-end latency with TTFT "
      "plus the output's decode steps, throughput with the estimate's output "
      "tokens/s. A concurrency or a request rate runs the continuous-batching "
      "simulator (chunked prefill; each request's own lengths where the row "
      "names the benchmark's generator, as for the SGLang cookbook's random "
      "dataset, else lengths within +-50% of the stated means, an "
      "assumption; SGLang's rows with SGLang's prefill-first steps) and "
      "compares its medians, or means where the source reports means. A "
      "closed-loop throughput whose run contradicts its own TTFT and TPOT "
      "(Little's law implies a concurrency off the stated one by more than "
      "a factor of 1.25: the run's duration holds time outside its "
      "requests) is listed under Not compared. Error = "
      "predicted / measured - 1, so + means predicted slower for a latency "
      "and faster for a throughput. `serve` quotes these figures next to "
      "the numbers it prints.\n\n"
      "| metric | points | median abs error | p90 abs error | max abs error | "
      "median error |\n|---|---:|---:|---:|---:|---:|\n";
  auto rows = [&](const std::vector<GroupSummary>& groups) {
    for (const GroupSummary& s : groups) {
      out += fmt::format(
          "| {} | {} | {:.1f}% | {:.1f}% | {:.1f}% | {:+.1f}% |\n", s.group,
          s.count, 100 * s.median_abs_rel_error, 100 * s.p90_abs_rel_error,
          100 * s.max_abs_rel_error, 100 * s.median_rel_error);
    }
  };
  rows(r.serving_by_metric);
  out +=
      "\n## Serving points by engine\n\n| engine: metric | points | median "
      "abs error | p90 abs error | max abs error | median error |\n"
      "|---|---:|---:|---:|---:|---:|\n";
  rows(r.serving_by_engine);
  return out;
}

}  // namespace

std::string AccuracyMarkdown(const ValidationReport& r,
                             const std::string& headline) {
  std::string out =
      "# Accuracy\n\nGenerated by `scalemodel validate --markdown > "
      "docs/accuracy.md`; do not edit by hand.\n\n" +
      headline + (headline.empty() ? "" : "## As shipped, in sample\n\n") +
      "Book cases run in peak mode (the book's first-order bound); published "
      "runs (data/validation, carried from shared/measured/runs.json with "
      "their sources) run in realistic mode with the layout each source "
      "states. Each run is compared on the first quantity its source "
      "measured, in this order: step time, tokens/s per chip, TFLOP/s per "
      "chip (with the source's FLOP convention: Narayanan et al. count the "
      "recomputed forward pass and full attention; Megatron-LM's 2024 "
      "formula, behind the Megatron-Core README and NeMo's 2024 pages, and "
      "MaxText's TPU v4/v5e tables count full attention; Megatron-Bridge "
      "and newer MaxText halve causal attention), MFU (against the dense "
      "bf16 peak). Error = predicted / measured - 1. Rows also carry the "
      "habits of the engine the source ran (MaxText: fp32 gradient "
      "reductions and the data-parallel reduction after the backward pass; "
      "NeMo and Megatron-Bridge on Hopper: DeepEP dispatch, but not for "
      "Megatron-Bridge 25.x Qwen3, whose configs drop tokens; NeMo 24.03 on "
      "Hopper: FlashAttention-2-level attention; LoRA rows: a frozen base; "
      "MaxText's dropped-MoE recipe: capacity factor 1.25; Megatron-LM's "
      "own scripts (Narayanan, Korthikanti, the Megatron-Core README): the "
      "unfused cross entropy; Megatron-Bridge 26.x rows whose layout is one "
      "of its performance presets: that preset's dispatcher and all-to-all "
      "overlap; DeepSeek-V3 rows: its multi-token-prediction module, except "
      "those marked womtp; MaxText rows that quote their config's mesh: "
      "that mesh, compared per chip). A row whose source states no recompute "
      "policy runs with its engine's default (MaxText: full; "
      "Megatron-Bridge's DeepSeek-V3 recipes: selective, for their MLA "
      "up-projection recompute) or, where the engine has none (Megatron, "
      "NeMo) or it does not fit, the least recompute that fits. The setup "
      "column of each row lists every "
      "assumption (docs/model.md section 5).\n\n## Summary\n\n"
      "| group | cases | median abs error | p90 abs error | max abs error |\n"
      "|---|---:|---:|---:|---:|\n";
  for (const GroupSummary& s : r.summary) {
    out += fmt::format("| {} | {} | {:.1f}% | {:.1f}% | {:.1f}% |\n", s.group,
                       s.count, 100 * s.median_abs_rel_error,
                       100 * s.p90_abs_rel_error, 100 * s.max_abs_rel_error);
  }
  out +=
      "\n## By source\n\nThe signed median says which way a source's rows "
      "lean (+: predicted faster than measured).\n\n"
      "| source | cases | median error | median abs error | max abs error "
      "|\n|---|---:|---:|---:|---:|\n";
  for (const GroupSummary& s : r.by_family) {
    out += fmt::format("| {} | {} | {:+.1f}% | {:.1f}% | {:.1f}% |\n", s.group,
                       s.count, 100 * s.median_rel_error,
                       100 * s.median_abs_rel_error, 100 * s.max_abs_rel_error);
  }
  out +=
      "\n## Training runs by chip\n\nWhat `train` and `plan train` quote at "
      "the end of a report for the chip they run on.\n\n"
      "| chip | runs | median abs error | p90 abs error | median error |\n"
      "|---|---:|---:|---:|---:|\n";
  for (const GroupSummary& s : r.by_chip) {
    out += fmt::format("| {} | {} | {:.1f}% | {:.1f}% | {:+.1f}% |\n", s.group,
                       s.count, 100 * s.median_abs_rel_error,
                       100 * s.p90_abs_rel_error, 100 * s.median_rel_error);
  }
  out += ServingMarkdown(r);
  out +=
      "\n## Every case\n\n| id | group | metric | predicted | measured | error "
      "| setup |\n|---|---|---|---:|---:|---:|---|\n";
  for (const ValidationCase& c : r.cases) {
    out += fmt::format("| {} | {} | {} | {:.4g} | {:.4g} | {:+.1f}% | {} |\n",
                       c.id, c.group, c.metric, c.predicted, c.expected,
                       100 * c.rel_error, c.detail);
  }
  if (!r.skipped.empty()) {
    out += "\n## Not compared\n\n";
    for (const std::string& s : r.skipped) out += "- " + s + "\n";
  }
  return out;
}

std::vector<TrainingRun> TrainingRuns(const catalog::Catalog& cat,
                                      std::vector<std::string>* skipped) {
  std::vector<TrainingRun> runs;
  for (const catalog::DataFile& f : cat.validation_files()) {
    if (f.path.find("training") == std::string::npos) continue;
    auto read = internal::ReadValidationDoc(f);
    if (!read) continue;
    const json& doc = *read;
    for (const json& row : doc.value("runs", json::array())) {
      if (row.contains("skip")) continue;
      auto run = ReadTrainingRun(cat, f.path, row);
      if (run) {
        runs.push_back(*run);
      } else if (skipped) {
        skipped->push_back(row.value("id", "?") + ": " +
                           run.error().ToString());
      }
    }
  }
  return runs;
}

namespace internal {

Result<json> ReadValidationDoc(const catalog::DataFile& f) {
  if (auto ok = ingest::CheckJsonText(f.contents, f.path, "a validation file");
      !ok) {
    return tl::unexpected(ok.error());
  }
  json doc = json::parse(f.contents, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return ParseError("expected a JSON object with a \"runs\" array", f.path);
  }
  const auto runs = doc.find("runs");
  if (runs == doc.end()) return doc;
  if (!runs->is_array()) {
    return ParseError("/runs: expected an array of objects", f.path);
  }
  for (size_t i = 0; i < runs->size(); ++i) {
    const json& row = (*runs)[i];
    const std::string at = "/runs/" + std::to_string(i);
    if (!row.is_object()) {
      return ParseError(at + ": expected an object", f.path);
    }
    for (const char* key : {"id", "skip"}) {
      if (row.contains(key) && !row[key].is_string()) {
        return ParseError(at + "/" + key + ": expected a string", f.path);
      }
    }
  }
  return doc;
}

std::vector<PreparedRow> PrepareTrainingRows(
    const catalog::Catalog& cat, std::vector<std::string>* skipped) {
  std::vector<PreparedRow> rows;
  for (const catalog::DataFile& f : cat.validation_files()) {
    if (f.path.find("training") == std::string::npos) continue;
    auto read = ReadValidationDoc(f);
    if (!read) continue;
    const json& doc = *read;
    for (const json& row : doc.value("runs", json::array())) {
      std::string id = row.value("id", "?");
      if (row.contains("skip")) {
        if (skipped) skipped->push_back(id + ": " + row["skip"].dump());
        continue;
      }
      auto run = ReadTrainingRun(cat, f.path, row);
      if (!run) {
        if (skipped) skipped->push_back(id + ": " + run.error().ToString());
        continue;
      }
      rows.push_back({row, *run});
    }
  }
  return rows;
}

}  // namespace internal

}  // namespace scalemodel::validate
