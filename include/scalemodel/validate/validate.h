// Validation: predictions against the book's worked training examples (peak
// mode) and the published training runs shipped in data/validation (realistic
// mode). Each case compares the quantity the source measured.
#ifndef SCALEMODEL_VALIDATE_VALIDATE_H_
#define SCALEMODEL_VALIDATE_VALIDATE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "scalemodel/base/error.h"
#include "scalemodel/catalog/catalog.h"
#include "scalemodel/estimate/training.h"
#include "scalemodel/model/transformer.h"

namespace scalemodel::validate {

struct ValidationCase {
  std::string id;
  std::string group;   // "book", "gpu", "tpu"
  std::string metric;  // "step_time_s", "tokens_per_s_per_chip", ...
  double predicted = 0;
  double expected = 0;
  double rel_error = 0;  // predicted / expected - 1
  std::string detail;    // model, system, plan, assumptions
  std::string source;
  std::string family;  // the publication or table the row comes from
  std::string chip;    // published runs: the chip's catalog id
  // Serving points only: the engine that ran them ("SGLang v0.3.0") and the
  // class of what was measured (ServingMetricClass).
  std::string engine;
  std::string metric_class;
  // Serving points served with attention data parallel (the row's plan).
  bool dp_attention = false;
};

// A published training run ("gpu", "tpu") or serving point ("inference-*").
bool IsTrainingCase(const ValidationCase& c);
bool IsServingCase(const ValidationCase& c);

struct GroupSummary {
  std::string group;
  int count = 0;
  double median_abs_rel_error = 0;
  double p90_abs_rel_error = 0;
  double max_abs_rel_error = 0;
  double median_rel_error = 0;  // signed: > 0 means predictions run fast
};

struct ValidationReport {
  std::vector<ValidationCase> cases;
  std::vector<GroupSummary> summary;          // per group, then "all"
  std::vector<GroupSummary> by_family;        // published rows, per source
  std::vector<GroupSummary> by_chip;          // training runs, per chip
  std::vector<GroupSummary> serving_by_chip;  // serving points, per chip
  // Serving points per metric class (group: the class's label), and per
  // engine and class (group: "engine: label").
  std::vector<GroupSummary> serving_by_metric;
  std::vector<GroupSummary> serving_by_engine;
  std::vector<std::string> skipped;  // "id: reason"
};

Result<ValidationReport> RunValidation(const catalog::Catalog& catalog);
// RunValidation(catalog), run once per process for each catalog content
// (Catalog::fingerprint) and shared afterwards: `train` and `serve` quote
// it in every result, and the fuzzers, `ui` and the Python module run many
// commands in one process. Safe to call from several threads; a caller
// that finds the report being computed waits for it. Keeps the reports of
// the last 8 catalogs.
Result<std::shared_ptr<const ValidationReport>> CachedValidation(
    const catalog::Catalog& catalog);
// Recomputes the per-group and per-source summaries from report.cases (after
// a caller narrowed them).
void Summarize(ValidationReport& report);

// The report as JSON text (its cases and skipped rows; the summaries are
// recomputed on reading), and back. Doubles are written with 17 significant
// digits, so a report read back is the same to the bit.
std::string ReportToJson(const ValidationReport& report);
Result<ValidationReport> ReportFromJson(std::string_view text);

// A report computed when scalemodel was built, for the built-in catalog
// (tools/dev/validation_cache_gen.cc; the command line installs it once):
// CachedValidation then reads it for a catalog whose fingerprint is
// `fingerprint` instead of running the validation set (about a second, on
// every `train` and `serve`). A report that cannot be read is run instead.
// `report_json` must outlive the process's use of CachedValidation.
void InstallPrecomputedValidation(uint64_t fingerprint,
                                  std::string_view report_json);

// One published training run from data/validation, ready to estimate: the
// model (catalog or inline config), the system, and the stated layout.
struct TrainingRun {
  std::string id;
  model::ModelSpec model;
  hw::System system;
  estimate::TrainingConfig config;
  bool remat_stated = true;
};
// Reads every training run of the catalog's validation files; rows marked
// "skip" are left out, and rows that cannot be read go to `skipped`.
std::vector<TrainingRun> TrainingRuns(const catalog::Catalog& catalog,
                                      std::vector<std::string>* skipped);

// Serving metric classes, each compared with its own estimate quantity:
//   "tpot"        tpot_s, itl_s: the decode step at the stated load
//   "ttft"        ttft_s: the prefill of the prompts that start together
//   "throughput"  tokens/s at a stated batch, concurrency or rate
//   "throughput_max"  tokens/s at the runtime's largest batch ("batch": "max")
//   "e2e"         e2e_s: TTFT plus the output's decode steps
// and the label reports print for each.
std::string ServingMetricClass(const std::string& metric, bool max_batch);
std::string ServingMetricLabel(const std::string& metric_class);

// Scores one inference row (the JSON text of one element of a validation
// file's "runs") against the static serving estimate and appends a case per
// measured quantity to `report`; `path` names the file in messages. A row the
// estimator cannot run is listed in report.skipped. Errors: a row that breaks
// the schema (docs/validation-sources.md, "Serving sources"), as one
// sentence that names the row id.
Result<bool> ScoreServingRow(const catalog::Catalog& catalog,
                             const std::string& path,
                             const std::string& row_json,
                             ValidationReport& report);

// What `serve` quotes next to each number it prints: for each serving metric
// class, the summary over the published points on `chip`, or over every
// chip (scope "all chips") where the chip has fewer than 3; count 0 where
// there are none at all.
struct MetricAccuracy {
  std::string metric_class;
  std::string scope;  // the chip id or "all chips"
  GroupSummary summary;
};
std::vector<MetricAccuracy> ServingAccuracy(const ValidationReport& report,
                                            const std::string& chip);

// docs/accuracy.md: every row, the failures too, and the summary, after
// `headline` (the cross-validation section, CrossValidationMarkdown).
std::string AccuracyMarkdown(const ValidationReport& report,
                             const std::string& headline = "");

}  // namespace scalemodel::validate

#endif  // SCALEMODEL_VALIDATE_VALIDATE_H_
