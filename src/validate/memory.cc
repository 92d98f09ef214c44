#include "scalemodel/validate/memory.h"

#include <algorithm>
#include <cmath>

#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "scalemodel/base/strings.h"
#include "scalemodel/estimate/core.h"
#include "scalemodel/ingest/hf_config.h"
#include "scalemodel/units/format.h"
#include "validate_internal.h"

namespace scalemodel::validate {

using nlohmann::json;

std::optional<estimate::Engine> RowEngine(const std::string& engine_key,
                                          const std::string& family) {
  if (!engine_key.empty()) {
    auto e = estimate::ParseEngine(engine_key);
    if (e) return *e;
  }
  const std::string f = ToLower(family);
  auto has = [&](const char* s) { return f.find(s) != std::string::npos; };
  if (has("maxtext")) return estimate::Engine::kMaxText;
  if (has("torchtitan")) return estimate::Engine::kTorchtitan;
  if (has("deepspeed")) return estimate::Engine::kDeepSpeed;
  if (has("nemo") || has("megatron-bridge"))
    return estimate::Engine::kMegatronBridge;
  if (has("megatron")) return estimate::Engine::kMegatron;
  return std::nullopt;
}

void ApplyRowMemory(const std::string& engine_key, const std::string& family,
                    estimate::TrainingConfig* config) {
  if (auto e = RowEngine(engine_key, family)) {
    estimate::ApplyEngineMemory(*e, config->memory);
  }
}

bool IsMemoryFile(const std::string& path) {
  return path.find("memory_runs") != std::string::npos;
}

namespace {

using internal::Quantile;
using internal::RowPlan;

// Weights, gradients and optimizer state per chip for `params` parameters
// under the row's plan and engine (no pipeline or tensor split unless the
// plan gives one).
double ModelStates(const json& row, const estimate::TrainingConfig& cfg) {
  estimate::ModelConsts mc;
  mc.dense_params = row.value("params", 0.0);
  mc.total_params = mc.dense_params;
  const estimate::ParamShares sh = estimate::SharesOf(mc, cfg.par);
  const estimate::StateBytes sb =
      estimate::TrainingStateBytes(cfg.mode, cfg.memory);
  const estimate::StateMemory st =
      estimate::StatePerChip(sh, cfg.par, sb, false, false, false, 1);
  return st.params + st.grads + st.optimizer;
}

// One layer's saved activations per chip for one microbatch: the remat
// policy's bytes per token over the tensor-parallel ranks (sequence
// parallel), and the materialised attention's 5 bytes per score where the
// kernel keeps them (as the estimator's ActivationsPerChip counts them).
double LayerActivations(const model::ModelSpec& m,
                        const estimate::TrainingConfig& cfg) {
  const estimate::ModelConsts mc = estimate::PrepareModel(m, cfg);
  const double tokens = cfg.layout.micro_batch * cfg.seq / cfg.par.cp;
  const int r = static_cast<int>(cfg.memory.remat);
  double bytes = tokens * mc.act_bytes_per_token_layer[r] /
                 (cfg.par.sequence_parallel ? cfg.par.tp : 1.0);
  if (cfg.habits.attention_kernel == estimate::AttentionKernel::kMaterialized &&
      (cfg.memory.remat == model::Remat::kNone ||
       cfg.memory.remat == model::Remat::kSaveMatmulOutputs)) {
    bytes += tokens * (mc.heads / cfg.par.tp) * cfg.seq * 5;
  }
  return bytes;
}

// The row's config: plan, batch, remat, attention kernel, engine memory.
Result<estimate::TrainingConfig> RowConfig(const json& row) {
  estimate::TrainingConfig cfg;
  cfg.mode = estimate::Mode::kRealistic;
  cfg.par = RowPlan(row);
  cfg.seq = row.value("seq", 2048.0);
  cfg.layout.micro_batch = row.value("micro_batch", 1);
  cfg.batch_tokens = row.value("global_batch", 1.0) * cfg.seq;
  auto remat = model::ParseRemat(row.value("remat", "none"));
  if (!remat) return tl::unexpected(remat.error());
  cfg.memory.remat = *remat;
  if (!row.value("flash_attention", true)) {
    cfg.habits.attention_kernel = estimate::AttentionKernel::kMaterialized;
  }
  const std::string engine = row.value("engine", "");
  auto e = estimate::ParseEngine(engine);
  if (!e) return tl::unexpected(e.error());
  estimate::ApplyEngineMemory(*e, cfg.memory);
  return cfg;
}

// One row: its predicted and published bytes, or why it is skipped.
Result<MemoryCase> MemoryRow(const catalog::Catalog& cat,
                             const std::string& path, const json& row) {
  MemoryCase c;
  c.id = row.value("id", "?");
  c.kind = row.value("kind", "");
  c.engine = row.value("engine", "");
  c.source = row.value("source", "");
  c.measured_bytes = row.value("published_gb", 0.0) * 1e9;
  if (!(c.measured_bytes > 0)) {
    return InvalidArgument("expected a positive published_gb", c.id);
  }
  auto cfg = RowConfig(row);
  if (!cfg) return tl::unexpected(cfg.error());
  c.detail = cfg->par.ToString() + ", " + c.engine;
  if (c.kind == "model_states") {
    c.predicted_bytes = ModelStates(row, *cfg);
    c.detail += fmt::format(", {:.3g} parameters", row.value("params", 0.0));
  } else if (c.kind == "layer_activations") {
    if (!row.contains("model")) {
      return InvalidArgument("a layer_activations row needs a model", c.id);
    }
    auto m =
        row["model"].contains("catalog")
            ? ingest::FindModel(cat, row["model"]["catalog"].get<std::string>())
            : ingest::ParseHfConfig(row["model"].dump(), path + ":" + c.id);
    if (!m) return tl::unexpected(m.error());
    c.predicted_bytes = LayerActivations(m->spec, *cfg);
    c.detail +=
        fmt::format(", {} x {} tokens, remat {}", cfg->layout.micro_batch,
                    cfg->seq, model::RematName(cfg->memory.remat));
  } else {
    return InvalidArgument(
        "expected kind model_states or layer_activations, "
        "got '" +
            c.kind + "'",
        c.id);
  }
  c.rel_error = c.predicted_bytes / c.measured_bytes - 1;
  return c;
}

}  // namespace

Result<MemoryReport> RunMemoryValidation(const catalog::Catalog& cat) {
  MemoryReport rep;
  for (const catalog::DataFile& f : cat.validation_files()) {
    if (!IsMemoryFile(f.path)) continue;
    auto read = internal::ReadValidationDoc(f);
    if (!read) return tl::unexpected(read.error());
    const json& doc = *read;
    for (const json& row : doc.value("runs", json::array())) {
      auto c = MemoryRow(cat, f.path, row);
      if (!c) {
        rep.skipped.push_back(row.value("id", "?") + ": " + c.error().message);
        continue;
      }
      rep.cases.push_back(std::move(*c));
    }
  }
  std::vector<double> errs;
  for (const MemoryCase& c : rep.cases) errs.push_back(std::fabs(c.rel_error));
  rep.median_abs_rel_error = Quantile(errs, 0.5);
  rep.p90_abs_rel_error = Quantile(errs, 0.9);
  rep.max_abs_rel_error =
      errs.empty() ? 0 : *std::max_element(errs.begin(), errs.end());
  return rep;
}

std::string MemoryMarkdown(const MemoryReport& r) {
  std::string out = fmt::format(
      "\n## Memory\n\nPredicted bytes per chip against the figures in "
      "data/validation/memory_runs.json (each with its source): {} rows, "
      "median |error| {:.1f}%, p90 {:.1f}%, max {:.1f}% (target: median <= "
      "10%).\n\n| id | kind | engine | predicted | published | error | "
      "layout |\n|---|---|---|---|---|---|---|\n",
      r.cases.size(), 100 * r.median_abs_rel_error, 100 * r.p90_abs_rel_error,
      100 * r.max_abs_rel_error);
  for (const MemoryCase& c : r.cases) {
    out += fmt::format("| {} | {} | {} | {} | {} | {:+.1f}% | {} |\n", c.id,
                       c.kind, c.engine,
                       units::FormatBytes(units::Bytes(c.predicted_bytes)),
                       units::FormatBytes(units::Bytes(c.measured_bytes)),
                       100 * c.rel_error, c.detail);
  }
  for (const std::string& s : r.skipped) out += "- not compared: " + s + "\n";
  return out;
}

std::string MemoryText(const MemoryReport& r) {
  return fmt::format(
      "memory: {} rows, median |err| {:.1f}%, p90 {:.1f}%, max {:.1f}% "
      "(data/validation/memory_runs.json; rows in --markdown)\n",
      r.cases.size(), 100 * r.median_abs_rel_error, 100 * r.p90_abs_rel_error,
      100 * r.max_abs_rel_error);
}

}  // namespace scalemodel::validate
