// Private to the validate module: one published training row, predicted on a
// given system (the catalog's, or one whose unmeasured constants a fit
// replaced), shared by RunValidation and the cross-validation.
#ifndef SCALEMODEL_SRC_VALIDATE_VALIDATE_INTERNAL_H_
#define SCALEMODEL_SRC_VALIDATE_VALIDATE_INTERNAL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "scalemodel/estimate/training.h"
#include "scalemodel/validate/validate.h"

namespace scalemodel::validate::internal {

// The installed precomputed report (InstallPrecomputedValidation) when its
// fingerprint is `fingerprint` and it reads back; nullopt otherwise.
std::optional<ValidationReport> PrecomputedReport(uint64_t fingerprint);

// The q-quantile of `v` (linear between order statistics); 0 when empty.
double Quantile(std::vector<double> v, double q);

// A data/validation file as a tree, after config.json's checks
// (ingest::CheckJsonText: size, depth, syntax, number range) and a check of
// its shape: an object whose "runs" is an array of objects, each "id" and
// "skip" a string where given. One sentence naming the file otherwise.
Result<nlohmann::json> ReadValidationDoc(const catalog::DataFile& f);

// The parallelism degrees, ZeRO level and sequence parallelism a row's
// "plan" states (1, 0 and on where it says nothing).
estimate::Parallelism RowPlan(const nlohmann::json& row);

// A training row of data/validation, read once.
struct PreparedRow {
  nlohmann::json row;
  TrainingRun run;
};

// Every training row that can be estimated, in file order; rows that cannot
// be read or are marked "skip" go to `skipped` ("id: reason").
std::vector<PreparedRow> PrepareTrainingRows(const catalog::Catalog& cat,
                                             std::vector<std::string>* skipped);

// The case for `row` with its stated layout `run`, estimated on `system`
// (run.system, or a copy with other efficiency constants). Returns an error
// when the estimator refuses the plan.
// `resolved`, when given, receives the configuration the prediction used
// (the stated layout with the recompute policy ResolveRemat chose).
Result<ValidationCase> PredictTrainingRow(
    const nlohmann::json& row, const TrainingRun& run, const hw::System& system,
    estimate::TrainingConfig* resolved = nullptr);

// Only the predicted value of `row`'s measured quantity, with the
// configuration PredictTrainingRow resolved (no recompute search, no setup
// text): the fit's inner loop. NaN when the estimator refuses the plan.
double PredictValue(const nlohmann::json& row, const model::ModelSpec& model,
                    const hw::System& system,
                    const estimate::TrainingConfig& resolved);

}  // namespace scalemodel::validate::internal

#endif  // SCALEMODEL_SRC_VALIDATE_VALIDATE_INTERNAL_H_
