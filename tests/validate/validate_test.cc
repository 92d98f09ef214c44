#include "scalemodel/validate/validate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../testing/catalog.h"
#include "builtin_validation.h"
#include "nlohmann/json.hpp"
#include "scalemodel/validate/crossval.h"
#include "scalemodel/validate/memory.h"

namespace scalemodel::validate {
namespace {

using scalemodel::testing::BuiltinCatalog;

const ValidationReport& Report() {
  static const ValidationReport kReport = [] {
    auto r = RunValidation(BuiltinCatalog());
    if (!r) {
      ADD_FAILURE() << r.error().ToString();
      return ValidationReport{};
    }
    return *r;
  }();
  return kReport;
}

TEST(ValidateTest, BookCasesPassAndEveryPredictionIsFinite) {
  const ValidationReport& r = Report();
  ASSERT_GT(r.cases.size(), 200u);
  for (const ValidationCase& c : r.cases) {
    SCOPED_TRACE(c.id);
    EXPECT_TRUE(std::isfinite(c.predicted));
    EXPECT_GT(c.predicted, 0);
    EXPECT_GT(c.expected, 0);
    if (c.group == "book") {
      EXPECT_LE(std::fabs(c.rel_error), 0.01);
    }
  }
}

TEST(ValidateTest, EveryPublishedRowHasASourceFamilyAndIsSummarised) {
  const ValidationReport& r = Report();
  int published = 0, summarised = 0;
  for (const ValidationCase& c : r.cases) {
    if (c.group == "book") continue;
    ++published;
    EXPECT_FALSE(c.family.empty()) << c.id;
  }
  for (const GroupSummary& s : r.by_family) {
    summarised += s.count;
    EXPECT_LE(s.median_abs_rel_error, s.max_abs_rel_error) << s.group;
    EXPECT_LE(std::fabs(s.median_rel_error), s.max_abs_rel_error) << s.group;
  }
  EXPECT_EQ(summarised, published);
}

// The ids of the training rows added for issue #22 ("added_in": "issue 22"
// in data/validation/training_runs.json): published runs the engine was not
// developed against, kept out of issue #6's in-sample targets below.
std::set<std::string> Issue22RowIds() {
  std::ifstream in(std::string(SCALEMODEL_SOURCE_DIR) +
                   "/data/validation/training_runs.json");
  std::set<std::string> ids;
  if (!in.good()) return ids;
  const nlohmann::json doc = nlohmann::json::parse(in);
  for (const nlohmann::json& row : doc.at("runs")) {
    if (row.value("added_in", std::string()) == "issue 22") {
      ids.insert(row.at("id").get<std::string>());
    }
  }
  return ids;
}

// Issue #6's targets for the realistic model on the published training
// runs it was developed against (shared/measured/runs.json), GPU and TPU rows
// separately: median absolute error at most 10%, 90th percentile at most 25%.
// A change that breaks them has to say so here. The rows added for issue #22
// are out of sample and are reported, not held to these targets.
TEST(ValidateTest, TrainingAccuracyTargets) {
  const std::set<std::string> added = Issue22RowIds();
  ValidationReport dev = Report();
  std::erase_if(dev.cases,
                [&](const ValidationCase& c) { return added.count(c.id) > 0; });
  Summarize(dev);
  int found = 0;
  for (const GroupSummary& s : dev.summary) {
    if (s.group != "gpu" && s.group != "tpu") continue;
    ++found;
    EXPECT_GE(s.count, 30) << s.group;
    EXPECT_LE(s.median_abs_rel_error, 0.10) << s.group;
    EXPECT_LE(s.p90_abs_rel_error, 0.25) << s.group;
  }
  EXPECT_EQ(found, 2);
}

// Issue #22 item 8: at least 60 new published training runs, TPU rows
// among them, each with its source, and every one compared (none skipped,
// every prediction finite).
TEST(ValidateTest, Issue22RowsAllEvaluate) {
  const std::set<std::string> added = Issue22RowIds();
  EXPECT_GE(added.size(), 60u);
  std::set<std::string> compared;
  int tpu = 0;
  for (const ValidationCase& c : Report().cases) {
    if (added.count(c.id) == 0) continue;
    compared.insert(c.id);
    if (c.group == "tpu") ++tpu;
    EXPECT_TRUE(std::isfinite(c.predicted)) << c.id;
    EXPECT_FALSE(c.source.empty()) << c.id;
  }
  EXPECT_EQ(compared.size(), added.size());
  EXPECT_GE(tpu, 30);
  for (const std::string& s : Report().skipped) {
    EXPECT_EQ(added.count(s.substr(0, s.find(':'))), 0u) << s;
  }
}

// docs/accuracy.md is generated; it must match what the code predicts now.
// Two reports that are the same case for case, to the bit, and summarize
// alike.
void ExpectSameReport(const ValidationReport& a, const ValidationReport& b) {
  ASSERT_EQ(a.cases.size(), b.cases.size());
  for (size_t i = 0; i < a.cases.size(); ++i) {
    const ValidationCase& x = a.cases[i];
    const ValidationCase& y = b.cases[i];
    EXPECT_EQ(x.id, y.id);
    EXPECT_EQ(x.metric, y.metric) << x.id;
    EXPECT_EQ(x.predicted, y.predicted) << x.id << " " << x.metric;
    EXPECT_EQ(x.expected, y.expected) << x.id;
    EXPECT_EQ(x.rel_error, y.rel_error) << x.id;
    EXPECT_EQ(x.detail, y.detail) << x.id;
    EXPECT_EQ(x.dp_attention, y.dp_attention) << x.id;
    EXPECT_EQ(
        x.group + x.source + x.family + x.chip + x.engine + x.metric_class,
        y.group + y.source + y.family + y.chip + y.engine + y.metric_class)
        << x.id;
  }
  EXPECT_EQ(a.skipped, b.skipped);
  ASSERT_EQ(a.serving_by_metric.size(), b.serving_by_metric.size());
  for (size_t i = 0; i < a.serving_by_metric.size(); ++i) {
    EXPECT_EQ(a.serving_by_metric[i].median_abs_rel_error,
              b.serving_by_metric[i].median_abs_rel_error);
  }
  ASSERT_EQ(a.by_chip.size(), b.by_chip.size());
  for (size_t i = 0; i < a.by_chip.size(); ++i) {
    EXPECT_EQ(a.by_chip[i].group, b.by_chip[i].group);
    EXPECT_EQ(a.by_chip[i].p90_abs_rel_error, b.by_chip[i].p90_abs_rel_error);
  }
}

// The report written at build time (tools/dev/validation_cache_gen.cc) is
// this build's: reading it back gives what running the validation set
// gives, and it belongs to the built-in catalog. A JSON round trip is
// exact, and a damaged text is refused, not half read.
TEST(ValidateTest, BuildTimeReportIsTheRunsReport) {
  EXPECT_EQ(BuiltinValidationFingerprint(), BuiltinCatalog().fingerprint());
  auto pre = ReportFromJson(BuiltinValidationJson());
  ASSERT_TRUE(pre.has_value()) << pre.error().ToString();
  ExpectSameReport(*pre, Report());
  auto back = ReportFromJson(ReportToJson(Report()));
  ASSERT_TRUE(back.has_value());
  ExpectSameReport(*back, Report());
  EXPECT_FALSE(ReportFromJson("{\"cases\": [{\"id\": 1}], \"skipped\": []}"));
  EXPECT_FALSE(ReportFromJson("not json"));
  // Installed, CachedValidation serves it for the built-in catalog.
  InstallBuiltinValidation();
  auto cached = CachedValidation(BuiltinCatalog());
  ASSERT_TRUE(cached.has_value());
  ExpectSameReport(**cached, Report());
}

TEST(ValidateTest, AccuracyDocIsCurrent) {
  std::ifstream in(std::string(SCALEMODEL_SOURCE_DIR) + "/docs/accuracy.md");
  ASSERT_TRUE(in.good());
  std::stringstream doc;
  doc << in.rdbuf();
  const std::string headline = CrossValidationMarkdown(CrossValidate(
      BuiltinCatalog(), {CvMode::kSource, CvMode::kEngine, CvMode::kFamily}));
  auto memory = RunMemoryValidation(BuiltinCatalog());
  ASSERT_TRUE(memory.has_value());
  EXPECT_TRUE(doc.str() ==
              AccuracyMarkdown(Report(), headline) + MemoryMarkdown(*memory))
      << "docs/accuracy.md is stale: run `./build/scalemodel validate "
         "--markdown > docs/accuracy.md`";
}

// Issue 22's memory target: predicted bytes per chip within 10% (median)
// of the published figures, every row compared.
TEST(ValidateTest, MemoryAccuracyTarget) {
  auto r = RunMemoryValidation(BuiltinCatalog());
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_GE(r->cases.size(), 16u);
  EXPECT_TRUE(r->skipped.empty());
  EXPECT_LE(r->median_abs_rel_error, 0.10);
}

// A published row's engine: its engine key, else its family.
TEST(ValidateTest, RowEngineFromFamily) {
  using estimate::Engine;
  EXPECT_EQ(RowEngine("", "MaxText, v5e (multislice)"), Engine::kMaxText);
  EXPECT_EQ(RowEngine("", "NeMo 24.07, H100 FP8"), Engine::kMegatronBridge);
  EXPECT_EQ(RowEngine("", "Megatron-Core README, H100"), Engine::kMegatron);
  EXPECT_EQ(RowEngine("", "DeepSpeed ZeRO-3, A100"), Engine::kDeepSpeed);
  EXPECT_EQ(RowEngine("torchtitan", "MaxText"), Engine::kTorchtitan);
  EXPECT_FALSE(RowEngine("", "some lab's cluster").has_value());
  estimate::TrainingConfig cfg;
  ApplyRowMemory("", "MaxText tiering", &cfg);
  EXPECT_EQ(cfg.memory.weight_bytes, 4);
  EXPECT_EQ(cfg.memory.master_bytes, 0);
}

// The cache `train` and `serve` quote from: one report per catalog content,
// the same for every thread, a new one when the catalog's files differ.
TEST(ValidateTest, CachedValidationRunsOncePerCatalog) {
  auto a = catalog::Catalog::Builtin();
  auto b = catalog::Catalog::Builtin();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->fingerprint(), b->fingerprint());
  std::vector<const ValidationReport*> seen(8, nullptr);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&, i] {
      auto r = CachedValidation(i % 2 ? *a : *b);
      if (r) seen[i] = r->get();
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_NE(seen[0], nullptr);
  for (const ValidationReport* r : seen) EXPECT_EQ(r, seen[0]);
  EXPECT_EQ(seen[0]->cases.size(), Report().cases.size());
  auto ok = b->AddFiles({{"validation/extra_runs.json", R"({"runs": []})"}});
  ASSERT_TRUE(ok) << ok.error().ToString();
  EXPECT_NE(a->fingerprint(), b->fingerprint());
  auto other = CachedValidation(*b);
  ASSERT_TRUE(other);
  EXPECT_NE(other->get(), seen[0]);
  EXPECT_EQ((*other)->cases.size(), seen[0]->cases.size());
}

}  // namespace
}  // namespace scalemodel::validate
