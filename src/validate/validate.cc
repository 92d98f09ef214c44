#include "scalemodel/validate/validate.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "scalemodel/base/strings.h"
#include "scalemodel/estimate/core.h"
#include "scalemodel/estimate/inference.h"
#include "scalemodel/estimate/training.h"
#include "scalemodel/ingest/hf_config.h"
#include "scalemodel/validate/memory.h"

namespace scalemodel::validate {
namespace {

using nlohmann::json;

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double pos = q * (v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = static_cast<size_t>(std::ceil(pos));
  return v[lo] + (v[hi] - v[lo]) * (pos - lo);
}

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
  const json& p = row["plan"];
  for (int i = 0; i < estimate::kNumPar; ++i) {
    estimate::DegreeOf(cfg.par, i) = p.value(estimate::ParName(i), 1);
  }
  cfg.par.zero = p.value("zero", 0);
  cfg.par.sequence_parallel = row.value("sequence_parallel", true);
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
  cfg.habits.dp_overlap = row.value("dp_overlap", true);
  cfg.habits.capacity_factor = row.value("capacity_factor", 0.0);
  cfg.habits.ep_dedup = row.value("ep_dedup", false);
  cfg.habits.ep_overlap = row.value("ep_overlap", false);
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
  return run;
}

// One published serving row: each measured point is a case.
void InferenceRow(const catalog::Catalog& cat, const std::string& path,
                  const json& row, ValidationReport& report) {
  std::string id = row.value("id", "?");
  auto mdl = RowModel(cat, path, row);
  if (!mdl) {
    report.skipped.push_back(id + ": " + mdl.error().ToString());
    return;
  }
  auto sys = cat.FindSystem(row["system"].get<std::string>());
  if (!sys) {
    report.skipped.push_back(id + ": " + sys.error().message);
    return;
  }
  estimate::ServeConfig cfg;
  cfg.tp = row["plan"].value("tp", 1);
  cfg.ep = row["plan"].value("ep", 1);
  cfg.dp = sys->num_chips() / (cfg.tp * cfg.ep);
  cfg.weights = *hw::ParseDtype(row.value("weights", "bf16"));
  cfg.kv = *hw::ParseDtype(row.value("kv", "bf16"));
  std::string assumptions;
  for (const json& a : row.value("assumptions", json::array())) {
    assumptions += "; " + a.get<std::string>();
  }
  int k = 0;
  for (const json& c : row["cases"]) {
    ++k;
    cfg.prompt = c["prompt"].get<double>();
    cfg.output = c["output"].get<double>();
    if (c["batch"].is_string()) {
      // Batch chosen by the runtime: the largest that fits, capped at the
      // 8192 CUDA-graph padding limit the source states.
      cfg.batch = 1;
      auto probe = estimate::EstimateServing(mdl->spec, *sys, cfg);
      if (!probe) {
        report.skipped.push_back(id + ": " + probe.error().message);
        return;
      }
      cfg.batch = std::max(1.0, std::min(8192.0, probe->max_batch));
    } else {
      cfg.batch = c["batch"].get<double>();
    }
    auto e = estimate::EstimateServing(mdl->spec, *sys, cfg);
    if (!e) {
      report.skipped.push_back(id + ": " + e.error().message);
      return;
    }
    std::string metric = c["metric"];
    double predicted = metric == "ttft_s" ? e->ttft.si()
                       : metric == "tokens_per_s_per_user"
                           ? e->tokens_per_s_per_user
                           : e->tokens_per_s_per_chip;
    std::string detail = fmt::format(
        "{} on {}, tp={} ep={}, batch {}, {} in / {} out, weights {}, KV "
        "{}{}{}",
        row.value("model_name", ""), sys->id, cfg.tp, cfg.ep,
        FormatNumber(cfg.batch), FormatNumber(cfg.prompt),
        FormatNumber(cfg.output), hw::DtypeName(cfg.weights),
        hw::DtypeName(cfg.kv),
        e->feasible ? "" : "; predicted infeasible: " + e->reason, assumptions);
    AddCase(report, id + "#" + std::to_string(k),
            sys->chip.is_tpu() ? "inference-tpu" : "inference-gpu", metric,
            predicted, c["value"].get<double>(), detail,
            row.value("source", ""), row.value("family", ""), sys->chip.id);
  }
}

}  // namespace

Result<ValidationReport> RunValidation(const catalog::Catalog& cat) {
  ValidationReport report;
  BookCases(cat, report);
  for (const catalog::DataFile& f : cat.validation_files()) {
    json doc;
    try {
      doc = json::parse(f.contents);
    } catch (const json::exception& e) {
      return ParseError(std::string("not valid JSON: ") + e.what(), f.path);
    }
    if (IsMemoryFile(f.path)) continue;  // RunMemoryValidation's
    const bool inference = f.path.find("inference") != std::string::npos;
    for (const json& row : doc.value("runs", json::array())) {
      std::string id = row.value("id", "?");
      if (inference && !row.contains("skip")) {
        InferenceRow(cat, f.path, row, report);
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
      estimate::TrainingConfig cfg = run->config;
      const hw::System* sys = &run->system;
      const model::ModelSpec& spec = run->model;
      auto est = estimate::EstimateTraining(spec, *sys, cfg);
      // A run whose source does not state its recompute policy ran with its
      // engine's default (MaxText: full), or, where the engine has none
      // (Megatron, NeMo: no recompute) or it does not fit, the least
      // recompute that fits by our memory model (the run did fit).
      std::string remat_note;
      auto def = model::ParseRemat(row.value("remat_default", ""));
      if (est && !run->remat_stated && def && *def != cfg.memory.remat) {
        estimate::TrainingConfig c2 = cfg;
        c2.memory.remat = *def;
        auto e2 = estimate::EstimateTraining(spec, *sys, c2);
        if (e2) {
          cfg = c2;
          est = e2;
          remat_note = std::string("; recompute not stated: ") +
                       std::string(model::RematName(*def)) +
                       ", the engine's default";
        }
      }
      if (est && !est->feasible && !run->remat_stated) {
        std::string fallback = remat_note;
        remat_note.clear();
        for (model::Remat r :
             {model::Remat::kSelective, model::Remat::kSaveMatmulOutputs,
              model::Remat::kFull}) {
          estimate::TrainingConfig c2 = cfg;
          c2.memory.remat = r;
          auto e2 = estimate::EstimateTraining(spec, *sys, c2);
          if (e2 && e2->feasible) {
            cfg = c2;
            est = e2;
            remat_note = std::string("; recompute not stated: ") +
                         std::string(model::RematName(r)) +
                         ", the least that fits";
            break;
          }
        }
        if (remat_note.empty() && !fallback.empty()) {
          remat_note = std::string("; recompute not stated and none fits: ") +
                       std::string(model::RematName(cfg.memory.remat)) +
                       ", the engine's default";
        }
      }
      if (!est) {
        report.skipped.push_back(id + ": " + est.error().message);
        continue;
      }
      const model::ModelSpec& m = spec;
      // The source's FLOP count: model FLOPs with causal attention halved
      // or full, or Narayanan et al.'s (2021, eq. 3) full attention with the
      // recomputed forward counted ("hfu").
      std::string conv = row.value("flops_convention", "model_causal");
      const model::AttentionFlops attn = conv == "model_causal"
                                             ? model::AttentionFlops::kCausal
                                             : model::AttentionFlops::kFull;
      double per_token = model::TrainFlopsPerToken(m, cfg.seq, attn);
      if (conv == "hfu") {
        per_token += model::Activations(m, cfg.memory.remat, cfg.seq,
                                        hw::Dtype::kBf16, attn)
                         .recompute_flops_per_token;
      }
      double tflops = per_token * est->tokens_per_s_per_chip / 1e12;
      const json& meas = row["measured"];
      std::string metric;
      double predicted = 0, expected = 0;
      for (const char* k :
           {"step_time_s", "tokens_per_s_per_chip", "tflops_per_chip", "mfu"}) {
        if (!meas.contains(k)) continue;
        metric = k;
        expected = meas[k].get<double>();
        if (metric == "step_time_s") predicted = est->step_time.si();
        if (metric == "tokens_per_s_per_chip")
          predicted = est->tokens_per_s_per_chip;
        if (metric == "tflops_per_chip") predicted = tflops;
        if (metric == "mfu") {
          predicted = tflops * 1e12 / sys->chip.Peak(hw::Dtype::kBf16).si();
        }
        break;
      }
      std::string assumptions;
      for (const json& a : row.value("assumptions", json::array())) {
        assumptions += "; " + a.get<std::string>();
      }
      std::string detail = fmt::format(
          "{} on {}, {}, batch {} x {}, mb {}, remat {}, {}{}{}",
          row.value("model_name", ""), sys->id, cfg.par.ToString(),
          row.value("global_batch", 0), cfg.seq, cfg.layout.micro_batch,
          model::RematName(cfg.memory.remat),
          hw::DtypeName(cfg.precision.matmul),
          est->feasible ? "" : "; predicted infeasible: " + est->reason,
          assumptions + remat_note);
      AddCase(report, id, sys->chip.is_tpu() ? "tpu" : "gpu", metric, predicted,
              expected, detail, row.value("source", ""),
              row.value("family", ""), sys->chip.id);
    }
  }
  Summarize(report);
  return report;
}

void Summarize(ValidationReport& report) {
  report.summary.clear();
  report.by_family.clear();
  report.by_chip.clear();
  report.serving_by_chip.clear();
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
}

bool IsTrainingCase(const ValidationCase& c) {
  return c.group == "gpu" || c.group == "tpu";
}

bool IsServingCase(const ValidationCase& c) {
  return c.group.rfind("inference", 0) == 0;
}

std::string AccuracyMarkdown(const ValidationReport& r) {
  std::string out =
      "# Accuracy\n\nGenerated by `scalemodel validate --markdown > "
      "docs/accuracy.md`; do not edit by hand.\n\n"
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
    json doc = json::parse(f.contents, nullptr, false);
    if (doc.is_discarded()) continue;
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

}  // namespace scalemodel::validate
