#include "scalemodel/validate/crossval.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "fmt/format.h"
#include "scalemodel/base/strings.h"
#include "validate_internal.h"

namespace scalemodel::validate {
namespace {

// The [efficiency] keys a model parameter writes (the first decides whether
// it applies) and the chips it is for.
struct ParamFields {
  std::vector<const char*> keys;
  bool tpu = false;
};

const std::vector<ParamFields>& ModelFields() {
  static const std::vector<ParamFields> kFields = {
      {{"gemm_max", "gemm_max_fp8"}, true},
      {{"gather"}, true},
  };
  return kFields;
}

double Clamp(double v, const FitParameter& p) {
  return std::min(p.hi, std::max(p.lo, v));
}

// Sum of squared log ratios over `rows` with `values`.
double Loss(const FitValues& values, const std::vector<int>& rows,
            const LogRatioFn& log_ratio, int& evaluations) {
  ++evaluations;
  double sum = 0;
  for (int r : rows) {
    double l = log_ratio(values, r);
    sum += l * l;
  }
  return sum;
}

// Golden-section search of log(value) of parameter `p` over its bounds.
double GoldenSection(FitValues values, int p, const FitParameter& param,
                     const std::vector<int>& rows, const LogRatioFn& log_ratio,
                     int& evaluations) {
  const double g = (std::sqrt(5.0) - 1) / 2;
  double a = std::log(param.lo), b = std::log(param.hi);
  auto f = [&](double x) {
    values[p] = std::exp(x);
    return Loss(values, rows, log_ratio, evaluations);
  };
  double c = b - g * (b - a), d = a + g * (b - a);
  double fc = f(c), fd = f(d);
  while (b - a > 1e-3) {
    if (fc <= fd) {
      b = d;
      d = c;
      fd = fc;
      c = b - g * (b - a);
      fc = f(c);
    } else {
      a = c;
      c = d;
      fc = fd;
      d = a + g * (b - a);
      fd = f(d);
    }
  }
  return std::exp((a + b) / 2);
}

}  // namespace

const std::vector<FitParameter>& ModelFitParameters() {
  static const std::vector<FitParameter> kParams = {
      {"tpu_gemm",
       "TPU matmul efficiency: gemm_max and gemm_max_fp8 of every TPU chip "
       "that no measurement gives",
       0.90, 0.40, 1.0},
      {"tpu_gather",
       "TPU row-gather rate (the dropless MoE token permutation), of the "
       "streaming rate: gather of every TPU chip that no measurement gives",
       1.0, 0.02, 1.0},
  };
  return kParams;
}

FitValues StartValues(const std::vector<FitParameter>& params) {
  FitValues v;
  for (const FitParameter& p : params) v.push_back(p.start);
  return v;
}

bool FitApplies(int p, const hw::Chip& chip) {
  const ParamFields& f = ModelFields()[p];
  if (f.tpu != chip.is_tpu()) return false;
  auto it = chip.efficiency.sources.find(f.keys.front());
  return it != chip.efficiency.sources.end() &&
         (it->second.rfind("assumption", 0) == 0 ||
          it->second.rfind("fitted", 0) == 0);
}

void ApplyFit(const FitValues& values, hw::Chip& chip) {
  hw::ChipEfficiencyData& d = chip.efficiency;
  for (size_t p = 0; p < values.size() && p < ModelFields().size(); ++p) {
    if (!FitApplies(static_cast<int>(p), chip)) continue;
    for (const char* key : ModelFields()[p].keys) {
      // gather lies outside ForEachEfficiencyField (never borrowed).
      if (std::string_view(key) == "gather") d.gather = values[p];
      hw::ForEachEfficiencyField(d, [&](const char* k, auto& field) {
        using T = typename std::decay_t<decltype(field)>::value_type;
        if constexpr (std::is_same_v<T, double>) {
          if (std::string_view(k) == key) field = values[p];
        }
      });
    }
  }
}

FitResult FitLogLeastSquares(const std::vector<FitParameter>& params,
                             const std::vector<std::vector<int>>& applies,
                             const std::vector<int>& rows,
                             const LogRatioFn& log_ratio) {
  FitResult r;
  r.values = StartValues(params);
  r.fitted.assign(params.size(), false);
  r.rows = static_cast<int>(rows.size());
  std::vector<std::vector<int>> mine(params.size());
  for (size_t p = 0; p < params.size(); ++p) {
    for (int row : rows) {
      if (std::find(applies[p].begin(), applies[p].end(), row) !=
          applies[p].end()) {
        mine[p].push_back(row);
      }
    }
    r.fitted[p] = !mine[p].empty();
  }
  for (int sweep = 0; sweep < 8; ++sweep) {
    double moved = 0;
    for (size_t p = 0; p < params.size(); ++p) {
      if (!r.fitted[p]) continue;
      double v = Clamp(GoldenSection(r.values, static_cast<int>(p), params[p],
                                     mine[p], log_ratio, r.evaluations),
                       params[p]);
      moved = std::max(moved, std::fabs(v / r.values[p] - 1));
      r.values[p] = v;
    }
    if (moved < 1e-3) break;
  }
  if (!rows.empty()) {
    r.rms_log_error =
        std::sqrt(Loss(r.values, rows, log_ratio, r.evaluations) / rows.size());
  }
  return r;
}

Result<CvMode> ParseCvMode(std::string_view text) {
  if (text == "source") return CvMode::kSource;
  if (text == "engine") return CvMode::kEngine;
  if (text == "family") return CvMode::kFamily;
  const std::vector<std::string> names = {"source", "engine", "family"};
  return InvalidArgument("unknown cross-validation split '" + Excerpt(text) +
                             "'" + DidYouMean(text, names) +
                             "; expected source, engine or family",
                         "--cv");
}

std::string_view CvModeName(CvMode mode) {
  switch (mode) {
    case CvMode::kSource:
      return "source";
    case CvMode::kEngine:
      return "engine";
    case CvMode::kFamily:
      return "family";
  }
  return "source";
}

std::string EngineOf(const std::string& engine_field,
                     const std::string& family) {
  if (!engine_field.empty()) return engine_field;
  auto has = [&](const char* s) { return family.find(s) != std::string::npos; };
  if (has("MaxText")) return "MaxText";
  if (has("DeepSpeed")) return "DeepSpeed";
  if (has("NeMo") || has("Megatron-Bridge")) return "NeMo / Megatron-Bridge";
  if (has("Megatron")) return "Megatron-LM";
  if (has("torchtitan")) return "torchtitan";
  return family;
}

std::string ChipGeneration(const std::string& chip_id) {
  static const std::map<std::string, std::string> kGen = {
      {"a100", "Ampere"},     {"h100", "Hopper"},     {"h200", "Hopper"},
      {"h800", "Hopper"},     {"b200", "Blackwell"},  {"gb200", "Blackwell"},
      {"tpu-v4", "TPU v4"},   {"tpu-v5e", "TPU v5e"}, {"tpu-v5p", "TPU v5p"},
      {"tpu-v6e", "TPU v6e"}, {"tpu-7x", "TPU7x"},
  };
  auto it = kGen.find(chip_id);
  return it == kGen.end() ? chip_id : it->second;
}

namespace {

// Parameters that share a row are fitted together; blocks that share none
// (TPU and GPU constants) are fitted apart, so a fold that changes only one
// block's rows refits only that block.
std::vector<std::vector<int>> ParamBlocks(
    const std::vector<std::vector<int>>& applies) {
  const int n = static_cast<int>(applies.size());
  std::vector<int> block(n);
  for (int p = 0; p < n; ++p) block[p] = p;
  for (int p = 0; p < n; ++p) {
    for (int q = p + 1; q < n; ++q) {
      bool shared =
          std::any_of(applies[p].begin(), applies[p].end(), [&](int r) {
            return std::find(applies[q].begin(), applies[q].end(), r) !=
                   applies[q].end();
          });
      if (!shared) continue;
      const int from = block[q], to = block[p];
      for (int& b : block) {
        if (b == from) b = to;
      }
    }
  }
  std::vector<std::vector<int>> out;
  for (int id = 0; id < n; ++id) {
    std::vector<int> members;
    for (int p = 0; p < n; ++p) {
      if (block[p] == id) members.push_back(p);
    }
    if (!members.empty()) out.push_back(members);
  }
  return out;
}

// The fit on the rows `in_fit` marks, block by block, with a cache keyed by
// each block's rows.
struct BlockFitter {
  const std::vector<FitParameter>& params;
  const std::vector<std::vector<int>>& applies;
  const LogRatioFn& log_ratio;
  std::vector<std::vector<int>> blocks;
  FitCache& cache;

  FitResult Fit(const std::vector<bool>& in_fit) {
    FitResult out;
    out.values = StartValues(params);
    out.fitted.assign(params.size(), false);
    double sq = 0;
    for (size_t b = 0; b < blocks.size(); ++b) {
      std::vector<std::vector<int>> mine(params.size());
      std::vector<int> rows;
      for (int p : blocks[b]) {
        mine[p] = applies[p];
        for (int r : applies[p]) {
          if (in_fit[r]) rows.push_back(r);
        }
      }
      std::sort(rows.begin(), rows.end());
      rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
      auto key = std::make_pair(b, rows);
      auto it = cache.fits.find(key);
      if (it == cache.fits.end()) {
        it =
            cache.fits
                .emplace(key, FitLogLeastSquares(params, mine, rows, log_ratio))
                .first;
      }
      const FitResult& f = it->second;
      for (int p : blocks[b]) {
        out.values[p] = f.values[p];
        out.fitted[p] = f.fitted[p];
      }
      out.rows += f.rows;
      out.evaluations += f.evaluations;
      sq += f.rms_log_error * f.rms_log_error * f.rows;
    }
    out.rms_log_error = out.rows > 0 ? std::sqrt(sq / out.rows) : 0;
    return out;
  }
};

}  // namespace

CvRun LeaveOneGroupOut(const std::vector<FitParameter>& params,
                       const std::vector<std::vector<int>>& applies,
                       const std::vector<std::string>& keys,
                       const LogRatioFn& log_ratio, FitCache* cache) {
  const int n = static_cast<int>(keys.size());
  FitCache own;
  BlockFitter fitter{params, applies, log_ratio, ParamBlocks(applies),
                     cache ? *cache : own};
  CvRun out;
  out.all_rows = fitter.Fit(std::vector<bool>(n, true));
  out.in_sample_log_ratio.resize(n);
  out.out_of_fold_log_ratio.resize(n);
  for (int i = 0; i < n; ++i) {
    out.in_sample_log_ratio[i] = log_ratio(out.all_rows.values, i);
  }
  std::vector<std::string> order;
  for (const std::string& k : keys) {
    if (std::find(order.begin(), order.end(), k) == order.end()) {
      order.push_back(k);
    }
  }
  for (const std::string& k : order) {
    std::vector<bool> in_fit(n);
    FoldFit fold{k, 0, {}};
    for (int i = 0; i < n; ++i) {
      in_fit[i] = keys[i] != k;
      fold.rows_held_out += keys[i] == k;
    }
    fold.fit = fitter.Fit(in_fit);
    for (int i = 0; i < n; ++i) {
      if (!in_fit[i])
        out.out_of_fold_log_ratio[i] = log_ratio(fold.fit.values, i);
    }
    out.folds.push_back(std::move(fold));
  }
  return out;
}

std::vector<GroupSummary> TrainingSummary(
    const std::vector<ValidationCase>& cases) {
  ValidationReport r;
  r.cases = cases;
  Summarize(r);
  std::vector<GroupSummary> out;
  for (const GroupSummary& s : r.summary) {
    if (s.group == "gpu" || s.group == "tpu" ||
        s.group == "training runs (gpu + tpu)") {
      out.push_back(s);
    }
  }
  return out;
}

namespace {

// The published training rows the cross-validation runs on, each with its
// case as shipped and its keys.
struct CvData {
  std::vector<internal::PreparedRow> rows;
  std::vector<ValidationCase> shipped;
  std::vector<estimate::TrainingConfig> resolved;  // by row
  std::vector<std::vector<int>> applies;
};

CvData LoadCvData(const catalog::Catalog& cat) {
  CvData d;
  for (internal::PreparedRow& r : internal::PrepareTrainingRows(cat, nullptr)) {
    estimate::TrainingConfig cfg;
    auto c = internal::PredictTrainingRow(r.row, r.run, r.run.system, &cfg);
    if (!c) continue;  // RunValidation lists it as not compared
    d.shipped.push_back(*c);
    d.resolved.push_back(cfg);
    d.rows.push_back(std::move(r));
  }
  const auto& params = ModelFitParameters();
  d.applies.resize(params.size());
  for (size_t p = 0; p < params.size(); ++p) {
    for (size_t i = 0; i < d.rows.size(); ++i) {
      if (FitApplies(static_cast<int>(p), d.rows[i].run.system.chip)) {
        d.applies[p].push_back(static_cast<int>(i));
      }
    }
  }
  return d;
}

std::string CvKey(CvMode mode, const internal::PreparedRow& r,
                  const ValidationCase& c) {
  switch (mode) {
    case CvMode::kSource:
      return c.family;
    case CvMode::kEngine:
      return EngineOf(r.row.value("engine", std::string()), c.family);
    case CvMode::kFamily:
      return ChipGeneration(c.chip);
  }
  return c.family;
}

// Row `i` predicted with `values`: the case (its id, detail and metric as
// shipped, the prediction with the fitted constants).
ValidationCase PredictWith(const CvData& d, const FitValues& values, int i) {
  hw::System sys = d.rows[i].run.system;
  ApplyFit(values, sys.chip);
  auto c = internal::PredictTrainingRow(d.rows[i].row, d.rows[i].run, sys);
  return c ? *c : d.shipped[i];
}

}  // namespace

namespace {

// The fit's inner loop: one system per row, its constants rewritten per
// call, the row's resolved configuration estimated.
struct LogRatio {
  explicit LogRatio(const CvData& data) : d(data) {
    for (const internal::PreparedRow& r : d.rows) {
      systems.push_back(r.run.system);
    }
  }
  double operator()(const FitValues& v, int i) {
    ApplyFit(v, systems[i].chip);
    double p = internal::PredictValue(d.rows[i].row, d.rows[i].run.model,
                                      systems[i], d.resolved[i]);
    return std::log(p / d.shipped[i].expected);
  }
  const CvData& d;
  std::vector<hw::System> systems;
};

}  // namespace

ModelFit FitModelConstants(const catalog::Catalog& cat) {
  CvData d = LoadCvData(cat);
  LogRatio ratio(d);
  LogRatioFn log_ratio = std::ref(ratio);
  ModelFit out;
  out.params = ModelFitParameters();
  out.training_rows = static_cast<int>(d.rows.size());
  FitCache cache;
  BlockFitter fitter{out.params, d.applies, log_ratio, ParamBlocks(d.applies),
                     cache};
  out.fit = fitter.Fit(std::vector<bool>(d.rows.size(), true));
  return out;
}

std::vector<CrossValidation> CrossValidate(const catalog::Catalog& cat,
                                           const std::vector<CvMode>& modes) {
  CvData d = LoadCvData(cat);
  LogRatio log_ratio(d);
  FitCache cache;
  std::vector<CrossValidation> out;
  for (CvMode mode : modes) {
    CrossValidation cv;
    cv.mode = mode;
    cv.params = ModelFitParameters();
    for (size_t i = 0; i < d.rows.size(); ++i) {
      cv.fold_of.push_back(CvKey(mode, d.rows[i], d.shipped[i]));
    }
    CvRun run = LeaveOneGroupOut(cv.params, d.applies, cv.fold_of,
                                 std::ref(log_ratio), &cache);
    cv.all_rows = run.all_rows;
    cv.folds = run.folds;
    cv.shipped = d.shipped;
    for (size_t i = 0; i < d.rows.size(); ++i) {
      const int row = static_cast<int>(i);
      cv.in_sample.push_back(PredictWith(d, run.all_rows.values, row));
      for (const FoldFit& f : run.folds) {
        if (f.held_out == cv.fold_of[i]) {
          cv.out_of_sample.push_back(PredictWith(d, f.fit.values, row));
        }
      }
    }
    cv.out_of_sample_summary = TrainingSummary(cv.out_of_sample);
    cv.in_sample_summary = TrainingSummary(cv.in_sample);
    cv.shipped_summary = TrainingSummary(cv.shipped);
    out.push_back(std::move(cv));
  }
  return out;
}

namespace {

std::string Pct(double v) { return fmt::format("{:.1f}%", 100 * v); }

// A fitted value, marked * where no row of the fit exercised it (its
// catalog value kept).
std::string FitCell(const FitResult& f, size_t p) {
  return fmt::format("{:.3f}{}", f.values[p], f.fitted[p] ? "" : "*");
}

std::string SplitWhat(CvMode mode) {
  switch (mode) {
    case CvMode::kSource:
      return "source (publication or table)";
    case CvMode::kEngine:
      return "engine";
    case CvMode::kFamily:
      return "chip family (generation)";
  }
  return "";
}

}  // namespace

std::string CrossValidationText(const CrossValidation& cv) {
  std::string out = fmt::format(
      "Leave-one-{}-out over {} training runs: the {} unmeasured constants "
      "are fitted on the other groups' rows (least squares on log(predicted "
      "/ measured)) and each group's rows are predicted with them.\n\n",
      CvModeName(cv.mode), cv.shipped.size(), cv.params.size());
  out += fmt::format("{:<28} {:>5}  {:>17}  {:>17}  {:>17}\n", "", "",
                     "out of " + std::string(CvModeName(cv.mode)),
                     "in-sample (fit)", "as shipped");
  out += fmt::format("{:<28} {:>5}  {:>8} {:>8}  {:>8} {:>8}  {:>8} {:>8}\n",
                     "group", "runs", "median", "p90", "median", "p90",
                     "median", "p90");
  for (size_t g = 0; g < cv.out_of_sample_summary.size(); ++g) {
    const GroupSummary& o = cv.out_of_sample_summary[g];
    const GroupSummary& i = cv.in_sample_summary[g];
    const GroupSummary& s = cv.shipped_summary[g];
    out += fmt::format("{:<28} {:>5}  {:>8} {:>8}  {:>8} {:>8}  {:>8} {:>8}\n",
                       o.group, o.count, Pct(o.median_abs_rel_error),
                       Pct(o.p90_abs_rel_error), Pct(i.median_abs_rel_error),
                       Pct(i.p90_abs_rel_error), Pct(s.median_abs_rel_error),
                       Pct(s.p90_abs_rel_error));
  }
  out += fmt::format(
      "\nFitted values by fold (* = no row of the fold "
      "exercises it: the value assumed before the fit kept)\n{:<40} {:>5}",
      "held out " + SplitWhat(cv.mode), "runs");
  for (const FitParameter& p : cv.params) out += fmt::format(" {:>14}", p.name);
  out += fmt::format("\n{:<40} {:>5}", "(assumed before the fit)", "");
  for (const FitParameter& p : cv.params) {
    out += fmt::format(" {:>14}", fmt::format("{:.3f}", p.start));
  }
  out += fmt::format("\n{:<40} {:>5}", "(none: all rows)", cv.shipped.size());
  for (size_t p = 0; p < cv.params.size(); ++p) {
    out += fmt::format(" {:>14}", FitCell(cv.all_rows, p));
  }
  for (const FoldFit& f : cv.folds) {
    out +=
        fmt::format("\n{:<40} {:>5}", Excerpt(f.held_out, 40), f.rows_held_out);
    for (size_t p = 0; p < cv.params.size(); ++p) {
      out += fmt::format(" {:>14}", FitCell(f.fit, p));
    }
  }
  return out + "\n";
}

namespace {

const GroupSummary* FindGroup(const std::vector<GroupSummary>& v,
                              const std::string& group) {
  for (const GroupSummary& s : v) {
    if (s.group == group) return &s;
  }
  return nullptr;
}

// One line of the headline table: median and p90 for gpu, tpu and all.
std::string HeadlineRow(const std::string& label,
                        const std::vector<GroupSummary>& v) {
  std::string out = "| " + label;
  for (const char* g : {"gpu", "tpu", "training runs (gpu + tpu)"}) {
    const GroupSummary* s = FindGroup(v, g);
    if (!s) {
      out += " | | |";
      continue;
    }
    out += fmt::format(" | {} / {} | {}", Pct(s->median_abs_rel_error),
                       Pct(s->p90_abs_rel_error), s->count);
  }
  return out + " |\n";
}

std::string FoldTable(const CrossValidation& cv) {
  std::string out = "| held out (" + SplitWhat(cv.mode) + ") | rows held out";
  std::string rule = "|---|---:";
  for (const FitParameter& p : cv.params) {
    out += " | " + p.name;
    rule += "|---:";
  }
  out += " |\n" + rule + "|\n";
  for (const FoldFit& f : cv.folds) {
    out += fmt::format("| {} | {}", f.held_out, f.rows_held_out);
    for (size_t p = 0; p < cv.params.size(); ++p) {
      out += " | " + FitCell(f.fit, p);
    }
    out += " |\n";
  }
  return out;
}

std::string RowsTable(const std::vector<CrossValidation>& cvs) {
  const CrossValidation& first = cvs.front();
  std::string out = "| id | chip | measured |";
  std::string rule = "|---|---|---:|";
  for (const CrossValidation& cv : cvs) {
    out += fmt::format(" out of {} |", CvModeName(cv.mode));
    rule += "---:|";
  }
  out +=
      " in-sample | as shipped | held out with |\n" + rule + "---:|---:|---|\n";
  for (size_t i = 0; i < first.shipped.size(); ++i) {
    const ValidationCase& c = first.shipped[i];
    out += fmt::format("| {} | {} | {:.4g} {} |", c.id, c.chip, c.expected,
                       c.metric);
    std::string folds;
    for (const CrossValidation& cv : cvs) {
      out += fmt::format(" {:+.1f}% |", 100 * cv.out_of_sample[i].rel_error);
      folds += (folds.empty() ? "" : "; ") + cv.fold_of[i];
    }
    out += fmt::format(" {:+.1f}% | {:+.1f}% | {} |\n",
                       100 * first.in_sample[i].rel_error, 100 * c.rel_error,
                       folds);
  }
  return out;
}

}  // namespace

std::string CrossValidationMarkdown(const std::vector<CrossValidation>& cvs) {
  if (cvs.empty()) return "";
  const CrossValidation& first = cvs.front();
  std::string out = fmt::format(
      "## Out of source (the headline)\n\n"
      "Each published training row is predicted by a model that never saw "
      "its group: leave one group out (its source, its engine or its chip "
      "family), fit the unmeasured constants (below) on the other rows, "
      "predict the group's rows, and repeat for every group. Cells: median / "
      "p90 absolute error | rows. In-sample uses the fit over all {} rows; "
      "as shipped uses the catalog's values (which carry that fit).\n\n"
      "| split | GPU | rows | TPU | rows | all | rows |\n"
      "|---|---:|---:|---:|---:|---:|---:|\n",
      first.shipped.size());
  for (const CrossValidation& cv : cvs) {
    out += HeadlineRow(fmt::format("out of {} (`validate --cv {}`)",
                                   CvModeName(cv.mode), CvModeName(cv.mode)),
                       cv.out_of_sample_summary);
  }
  out += HeadlineRow("in-sample (all-rows fit)", first.in_sample_summary);
  out += HeadlineRow("as shipped (catalog values)", first.shipped_summary);
  out +=
      "\nWhat this does and does not measure: only the fitted constants are "
      "refitted per fold. No GPU constant is fitted (each has a cited "
      "measurement), so GPU rows read the same in and out of sample; the "
      "choice of mechanisms and engine habits, made while looking at these "
      "rows, is not refitted per fold, and only runs the project has never "
      "seen can test it. All TPU rows are MaxText's, so out of engine the "
      "TPU constants have no rows to fit and keep the values assumed before "
      "the fit.\n";
  out += fmt::format(
      "\n## What is fitted\n\n"
      "The constants of the realistic model that no published measurement "
      "gives (labelled \"fitted\" in data/chips; \"assumption\" before) "
      "and that the rows determine. One procedure fits them "
      "(src/validate/crossval.cc, "
      "`FitLogLeastSquares`): least squares on log(predicted / measured) over "
      "the training rows a constant affects, by coordinate descent with a "
      "golden-section search on the log of each value within its bounds. "
      "Every other constant keeps its cited value.\n\n"
      "| parameter | stands for | bounds | assumed before the fit | fit over "
      "all {} "
      "rows | rows it affects |\n|---|---|---|---:|---:|---:|\n",
      first.shipped.size());
  for (size_t p = 0; p < first.params.size(); ++p) {
    const FitParameter& fp = first.params[p];
    out += fmt::format("| {} | {} | {:.2f}-{:.2f} | {:.3f} | {} | {} |\n",
                       fp.name, fp.what, fp.lo, fp.hi, fp.start,
                       FitCell(first.all_rows, p), first.all_rows.rows);
  }
  out +=
      "\nNot fitted, still assumptions: HBM streaming efficiency on TPUs, "
      "B200 and GB200 (0.85; fitted as parameters they ran to whatever lower "
      "bound they were given, 0.40 or 0.70, absorbing error from elsewhere, "
      "so the rows do not determine them), the TPU per-op and collective "
      "launch costs (2 us) and the TPU DCN efficiency (0.90, "
      "src/net/topology.cc), which were not tried.\n"
      "\nMeasured, no longer fitted: TPU attention (attention and "
      "attention_fa2 of every TPU chip, 0.383 at 8K tokens on the "
      "FlashAttention sequence-length ramp), from AXLearn's splash-attention "
      "benchmark on TPU v5p (docs/model.md 5.5b); the fit gave 0.280 with "
      "no ramp before it was read.\n";
  out +=
      "\nThe catalog carries the fit over all rows (its source says "
      "\"fitted\"; a test fails when the two drift apart by more than "
      "0.005: rerun `scalemodel validate --fit`). The values each fold "
      "fitted (* = no row outside the fold exercises the constant, so the "
      "fold keeps the value assumed before the fit, not the catalog's):\n";
  for (const CrossValidation& cv : cvs) out += "\n" + FoldTable(cv);
  out +=
      "\n## Every training row, out of source\n\nError = predicted / "
      "measured - 1 for each way of holding the row out, with the "
      "all-rows fit, and as shipped; the last column names the groups "
      "the row was held out with (source; engine; chip family).\n\n" +
      RowsTable(cvs) + "\n";
  return out;
}

}  // namespace scalemodel::validate
