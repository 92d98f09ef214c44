#include "scalemodel/validate/crossval.h"

#include <gtest/gtest.h>

#include <cmath>

#include "../testing/catalog.h"

namespace scalemodel::validate {
namespace {

using scalemodel::testing::BuiltinCatalog;

// A model with two constants: a row's time is x / a + y / b (x, y its work
// on two units), so predicted / measured = (x/a + y/b) / (x/a* + y/b*).
struct TwoUnitRows {
  std::vector<double> x, y, measured;
  double LogRatio(const FitValues& v, int i) const {
    return std::log((x[i] / v[0] + y[i] / v[1]) / measured[i]);
  }
};

std::vector<FitParameter> TwoParams() {
  return {{"a", "unit a", 0.9, 0.1, 1.0}, {"b", "unit b", 0.5, 0.1, 1.0}};
}

// The procedure finds a known answer: rows generated with a = 0.7, b = 0.3.
TEST(FitTest, ConvergesToTheValuesThatGeneratedTheRows) {
  TwoUnitRows rows;
  for (int i = 0; i < 8; ++i) {
    rows.x.push_back(1 + i);
    rows.y.push_back(8 - i);
    rows.measured.push_back(rows.x.back() / 0.7 + rows.y.back() / 0.3);
  }
  std::vector<int> all = {0, 1, 2, 3, 4, 5, 6, 7};
  FitResult f = FitLogLeastSquares(
      TwoParams(), {all, all}, all,
      [&](const FitValues& v, int i) { return rows.LogRatio(v, i); });
  EXPECT_NEAR(f.values[0], 0.7, 0.005);
  EXPECT_NEAR(f.values[1], 0.3, 0.005);
  EXPECT_TRUE(f.fitted[0] && f.fitted[1]);
  EXPECT_LT(f.rms_log_error, 1e-3);
  EXPECT_EQ(f.rows, 8);
}

// A value outside the bounds stops at the bound; a parameter no row
// exercises keeps its start.
TEST(FitTest, StaysInBoundsAndKeepsUnexercisedStarts) {
  std::vector<FitParameter> p = TwoParams();
  FitResult f = FitLogLeastSquares(
      p, {{0, 1}, {}}, {0, 1},
      [](const FitValues& v, int) { return std::log(v[0] / 5.0); });
  EXPECT_NEAR(f.values[0], 1.0, 1e-3);
  EXPECT_FALSE(f.fitted[1]);
  EXPECT_EQ(f.values[1], 0.5);
}

// Three sources; rows of C also depend on a constant q only C exercises.
// In sample q is fitted to C; with C held out nothing determines q, so the
// fold keeps its start and predicts C badly: the split holds C out.
TEST(CrossValidationTest, AnOutlierSourceFitsInSampleButNotOutOfSource) {
  std::vector<std::string> keys = {"A", "A", "B", "B", "C", "C"};
  std::vector<FitParameter> params = {{"e", "everywhere", 1.0, 0.1, 10},
                                      {"q", "only C", 0.9, 0.1, 1.0}};
  std::vector<double> truth_q = {1, 1, 1, 1, 0.3, 0.3};
  auto log_ratio = [&](const FitValues& v, int i) {
    double q = keys[i] == "C" ? v[1] : 1.0;
    return std::log(v[0] / 2.0 * q / truth_q[i]);
  };
  CvRun run =
      LeaveOneGroupOut(params, {{0, 1, 2, 3, 4, 5}, {4, 5}}, keys, log_ratio);
  ASSERT_EQ(run.folds.size(), 3u);
  EXPECT_NEAR(run.all_rows.values[0], 2.0, 0.01);
  EXPECT_NEAR(run.all_rows.values[1], 0.3, 0.005);
  for (int i = 0; i < 6; ++i) {
    EXPECT_NEAR(run.in_sample_log_ratio[i], 0, 0.01) << i;
  }
  const FoldFit& c = run.folds[2];
  EXPECT_EQ(c.held_out, "C");
  EXPECT_EQ(c.rows_held_out, 2);
  EXPECT_FALSE(c.fit.fitted[1]);
  EXPECT_NEAR(run.out_of_fold_log_ratio[4], std::log(0.9 / 0.3), 0.01);
  EXPECT_NEAR(run.out_of_fold_log_ratio[0], 0, 0.01);
}

// A fold's fit does not depend on the rows it holds out: changing the
// held-out source's measurements leaves that fold's values unchanged (and
// changes the in-sample fit).
TEST(CrossValidationTest, AFoldsFitIgnoresItsHeldOutRows) {
  std::vector<std::string> keys = {"A", "A", "B", "B", "C"};
  std::vector<FitParameter> params = {{"e", "everywhere", 1.0, 0.1, 10}};
  auto run_with = [&](double c_measured) {
    std::vector<double> m = {1.0, 1.1, 0.9, 1.0, c_measured};
    return LeaveOneGroupOut(
        params, {{0, 1, 2, 3, 4}}, keys,
        [&](const FitValues& v, int i) { return std::log(v[0] / m[i]); });
  };
  CvRun a = run_with(1.0), b = run_with(5.0);
  EXPECT_DOUBLE_EQ(a.folds[2].fit.values[0], b.folds[2].fit.values[0]);
  EXPECT_NE(a.all_rows.values[0], b.all_rows.values[0]);
  EXPECT_NE(a.folds[0].fit.values[0], b.folds[0].fit.values[0]);
}

TEST(CrossValidationTest, ParsesSplitsAndSuggests) {
  EXPECT_EQ(*ParseCvMode("source"), CvMode::kSource);
  EXPECT_EQ(*ParseCvMode("engine"), CvMode::kEngine);
  EXPECT_EQ(*ParseCvMode("family"), CvMode::kFamily);
  auto bad = ParseCvMode("sorce");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message,
            "unknown cross-validation split 'sorce' (did you mean "
            "'source'?); expected source, engine or family");
}

TEST(CrossValidationTest, EnginesAndChipGenerations) {
  EXPECT_EQ(EngineOf("", "MaxText tiering, v5p / v6e"), "MaxText");
  EXPECT_EQ(EngineOf("", "Megatron-Bridge, H100 / B200 / GB200"),
            "NeMo / Megatron-Bridge");
  EXPECT_EQ(EngineOf("", "Megatron-Core README, H100"), "Megatron-LM");
  EXPECT_EQ(EngineOf("", "DeepSpeed ZeRO-3, A100 (Narayanan et al. 2021)"),
            "DeepSpeed");
  EXPECT_EQ(EngineOf("torchtitan", "anything"), "torchtitan");
  EXPECT_EQ(ChipGeneration("h800"), "Hopper");
  EXPECT_EQ(ChipGeneration("gb200"), "Blackwell");
  EXPECT_EQ(ChipGeneration("tpu-v5e"), "TPU v5e");
}

// The parameters stand for the TPU constants labelled assumptions and no
// GPU constant; ApplyFit writes each field a parameter names.
TEST(CrossValidationTest, ParametersApplyToAssumedConstantsOnly) {
  auto v5p_found = BuiltinCatalog().FindChip("tpu-v5p");
  auto h100_found = BuiltinCatalog().FindChip("h100");
  ASSERT_TRUE(v5p_found && h100_found);
  const hw::Chip* v5p = *v5p_found;
  const hw::Chip* h100 = *h100_found;
  const auto& params = ModelFitParameters();
  for (size_t p = 0; p < params.size(); ++p) {
    EXPECT_TRUE(FitApplies(static_cast<int>(p), *v5p)) << params[p].name;
    EXPECT_FALSE(FitApplies(static_cast<int>(p), *h100)) << params[p].name;
  }
  hw::Chip tpu = *v5p, gpu = *h100;
  ApplyFit({0.7}, tpu);
  ApplyFit({0.7}, gpu);
  EXPECT_EQ(*tpu.efficiency.gemm_max, 0.7);
  EXPECT_EQ(*tpu.efficiency.gemm_max_fp8, 0.7);
  // TPU attention is measured (docs/model.md 5.5b): no parameter writes it.
  EXPECT_EQ(*tpu.efficiency.attention, *v5p->efficiency.attention);
  EXPECT_EQ(tpu.efficiency.sources.at("attention").rfind("measured", 0), 0u);
  EXPECT_EQ(*tpu.efficiency.hbm, *v5p->efficiency.hbm);
  EXPECT_EQ(*gpu.efficiency.gemm_max, *h100->efficiency.gemm_max);
}

// The catalog carries the fit over every training row (docs/accuracy.md):
// when rows are added or the model changes, run `scalemodel validate --fit`
// and write its values into the TPU chip files' [efficiency] tables.
TEST(CrossValidationTest, CatalogCarriesTheAllRowsFit) {
  ModelFit f = FitModelConstants(BuiltinCatalog());
  for (const char* id : {"tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu-7x"}) {
    auto chip = BuiltinCatalog().FindChip(id);
    ASSERT_TRUE(chip) << id;
    const hw::ChipEfficiencyData& e = (*chip)->efficiency;
    EXPECT_NEAR(*e.gemm_max, f.fit.values[0], 0.005)
        << id << ": run `scalemodel validate --fit` and update tpu_gemm";
    EXPECT_NEAR(*e.gemm_max_fp8, f.fit.values[0], 0.005) << id;
    ASSERT_TRUE(e.gather) << id;
    EXPECT_NEAR(*e.gather, f.fit.values[1], 0.005)
        << id << ": run `scalemodel validate --fit` and update tpu_gather";
  }
}

// On the published rows: every TPU row is a MaxText row, so holding out
// MaxText leaves the TPU constants nothing to fit (catalog values kept);
// folds that hold out only GPU rows fit the same values as all rows.
TEST(CrossValidationTest, PublishedRowsFoldsHoldTheirGroupOut) {
  auto cvs = CrossValidate(BuiltinCatalog(),
                           {CvMode::kSource, CvMode::kEngine, CvMode::kFamily});
  ASSERT_EQ(cvs.size(), 3u);
  for (const CrossValidation& cv : cvs) {
    int held = 0;
    for (const FoldFit& f : cv.folds) held += f.rows_held_out;
    EXPECT_EQ(held, static_cast<int>(cv.shipped.size()));
    ASSERT_EQ(cv.out_of_sample.size(), cv.shipped.size());
    for (const FoldFit& f : cv.folds) {
      bool has_tpu = false;
      for (size_t i = 0; i < cv.shipped.size(); ++i) {
        if (cv.fold_of[i] == f.held_out && cv.shipped[i].group == "tpu") {
          has_tpu = true;
        }
      }
      if (!has_tpu) {
        EXPECT_EQ(f.fit.values, cv.all_rows.values) << f.held_out;
      }
      if (f.held_out == "MaxText") {
        EXPECT_FALSE(f.fit.fitted[0]);
        EXPECT_EQ(f.fit.values, StartValues(cv.params));
      }
    }
    // GPU rows are untouched by the TPU constants.
    for (size_t i = 0; i < cv.shipped.size(); ++i) {
      if (cv.shipped[i].group != "gpu") continue;
      EXPECT_DOUBLE_EQ(cv.out_of_sample[i].predicted, cv.shipped[i].predicted);
    }
  }
}

}  // namespace
}  // namespace scalemodel::validate
