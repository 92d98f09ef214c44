// Out-of-source validation and the one procedure that fits the realistic
// model's unmeasured constants (docs/accuracy.md, docs/model.md 5.6).
//
// A constant of a chip's [efficiency] table whose source is labelled
// "assumption" (no published measurement) is a fit parameter. Every other
// constant keeps its cited value. The procedure: least squares on
// log(predicted / measured) over the published training rows, by coordinate
// descent with a golden-section search per parameter (on the log of the
// value, within its bounds). Cross-validation runs it once per fold, on the
// rows outside the fold, and predicts the fold's rows with those values.
#ifndef SCALEMODEL_VALIDATE_CROSSVAL_H_
#define SCALEMODEL_VALIDATE_CROSSVAL_H_

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "scalemodel/base/error.h"
#include "scalemodel/catalog/catalog.h"
#include "scalemodel/hw/system.h"
#include "scalemodel/validate/validate.h"

namespace scalemodel::validate {

// One unmeasured constant, shared by every chip it applies to.
struct FitParameter {
  std::string name;  // "tpu_gemm"
  std::string what;  // the catalog fields and chips it stands for
  // The value assumed before any fit (independent of the rows): where a
  // fold has no row to fit it, the fold uses this, never the catalog value
  // (which the fit over all rows, held-out rows included, set).
  double start = 0;
  double lo = 0;  // search bounds
  double hi = 0;
};

// Values by index into the parameter list.
using FitValues = std::vector<double>;

// The realistic model's fit parameters: TPU matmul efficiency (gemm_max and
// gemm_max_fp8) and TPU attention efficiency (attention, attention_fa2).
// The other assumed constants (HBM streaming on TPUs, B200 and GB200; TPU
// op and collective launch costs) are not fitted: the rows do not determine
// them (docs/accuracy.md, "What is fitted").
const std::vector<FitParameter>& ModelFitParameters();
FitValues StartValues(const std::vector<FitParameter>& params);

// Whether model parameter `p` stands for a constant of `chip`: the chip's
// source for that [efficiency] key starts with "assumption" (no measurement)
// or "fitted" (set by this procedure).
bool FitApplies(int p, const hw::Chip& chip);
// Writes `values` into the constants of `chip` that they stand for.
void ApplyFit(const FitValues& values, hw::Chip& chip);

struct FitResult {
  FitValues values;
  std::vector<bool> fitted;  // false: no row exercises it; start kept
  int rows = 0;              // rows in the fit
  double rms_log_error = 0;  // sqrt(mean log(predicted/measured)^2)
  int evaluations = 0;       // objective evaluations
};

// The fit procedure on abstract rows. `applies[p]` lists the rows parameter
// p affects; `log_ratio(values, row)` is log(predicted / measured) for a row
// with those values. Only `rows` (indices) take part. Coordinate descent:
// for each parameter in turn, a golden-section search of log(value) over
// [lo, hi] minimising the sum of squared log ratios of the rows it affects;
// sweeps repeat until no value moves by more than 1e-4 (relative), at most
// 8 sweeps.
using LogRatioFn = std::function<double(const FitValues&, int row)>;
FitResult FitLogLeastSquares(const std::vector<FitParameter>& params,
                             const std::vector<std::vector<int>>& applies,
                             const std::vector<int>& rows,
                             const LogRatioFn& log_ratio);

// How rows are grouped into folds.
enum class CvMode {
  kSource,  // the publication or table (the row's "family" field)
  kEngine,  // MaxText, Megatron-LM, NeMo / Megatron-Bridge, DeepSpeed
  kFamily,  // chip generation: Ampere, Hopper, Blackwell, TPU v4, v5e, ...
};
// "source", "engine" or "family"; anything else is an error that names the
// flag's values and the closest one.
Result<CvMode> ParseCvMode(std::string_view text);
std::string_view CvModeName(CvMode mode);
// The engine of a row: its "engine" field, or else read from its family
// ("MaxText ...", "NeMo ...", ...); the family itself when neither says.
std::string EngineOf(const std::string& engine_field,
                     const std::string& family);
// The chip generation of a catalog chip id ("h100" -> "Hopper").
std::string ChipGeneration(const std::string& chip_id);

// The generic leave-one-group-out run on abstract rows: for each distinct
// key, fit on the rows with other keys and predict the key's rows. Returns
// per row the out-of-fold log ratio and each fold's fit (in key order of
// first appearance), and the all-rows fit.
struct FoldFit {
  std::string held_out;
  int rows_held_out = 0;
  FitResult fit;
};
struct CvRun {
  std::vector<double> out_of_fold_log_ratio;  // by row
  std::vector<double> in_sample_log_ratio;    // by row, all-rows fit
  std::vector<FoldFit> folds;
  FitResult all_rows;
};
// Fits already made, by parameter block and rows: runs over the same rows
// with other groupings share them.
struct FitCache {
  std::map<std::pair<size_t, std::vector<int>>, FitResult> fits;
};
CvRun LeaveOneGroupOut(const std::vector<FitParameter>& params,
                       const std::vector<std::vector<int>>& applies,
                       const std::vector<std::string>& keys,
                       const LogRatioFn& log_ratio, FitCache* cache = nullptr);

// Cross-validation of the published training runs.
struct CrossValidation {
  CvMode mode = CvMode::kSource;
  std::vector<FitParameter> params;
  FitResult all_rows;                // the fit over every training row
  std::vector<FoldFit> folds;        // one per held-out group
  std::vector<std::string> fold_of;  // by case: the group it is held out in
  // The training cases three ways: predicted by the fold that held them out
  // (out-of-source), with the all-rows fit (in-sample), with the catalog's
  // values (as shipped).
  std::vector<ValidationCase> out_of_sample;
  std::vector<ValidationCase> in_sample;
  std::vector<ValidationCase> shipped;
  // gpu, tpu and all training rows for each of the three.
  std::vector<GroupSummary> out_of_sample_summary;
  std::vector<GroupSummary> in_sample_summary;
  std::vector<GroupSummary> shipped_summary;
};
// One cross-validation per mode, in order, sharing the rows and the fits
// (rows that cannot be estimated are left out, as RunValidation does).
std::vector<CrossValidation> CrossValidate(const catalog::Catalog& catalog,
                                           const std::vector<CvMode>& modes);

// Summaries for "gpu", "tpu" and all training cases of `cases`.
std::vector<GroupSummary> TrainingSummary(
    const std::vector<ValidationCase>& cases);

// The fit over every training row (`validate --fit`): the values the
// catalog's fitted constants should carry.
struct ModelFit {
  std::vector<FitParameter> params;
  FitResult fit;
  int training_rows = 0;
};
ModelFit FitModelConstants(const catalog::Catalog& catalog);

// What `validate --cv` prints: the summary table (out of sample first, then
// in-sample and as shipped) and each fold's fitted values.
std::string CrossValidationText(const CrossValidation& cv);

// The cross-validation section of docs/accuracy.md: the out-of-source table
// first, in-sample and as shipped beside it, the fitted values, every row.
std::string CrossValidationMarkdown(const std::vector<CrossValidation>& cvs);

}  // namespace scalemodel::validate

#endif  // SCALEMODEL_VALIDATE_CROSSVAL_H_
