// Serving points (issue #15 item 6): each measured quantity is compared with
// its own estimate quantity at the stated load, schema errors are one
// sentence that names the row, and serve's per-metric quote comes from them.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "../testing/catalog.h"
#include "nlohmann/json.hpp"
#include "scalemodel/estimate/batching.h"
#include "scalemodel/estimate/inference.h"
#include "scalemodel/ingest/hf_config.h"
#include "scalemodel/validate/validate.h"

namespace scalemodel::validate {
namespace {

using scalemodel::testing::BuiltinCatalog;

// A synthetic row: Llama 3 8B on one H100, one case per load kind.
const char* kRow = R"({
  "id": "synthetic-llama3-8b-h100",
  "source": "unit test", "family": "test", "engine": "TestEngine v1.2",
  "system": "h100:1x1", "model": {"catalog": "llama3-8b"},
  "plan": {"tp": 1, "ep": 1}, "weights": "bf16", "kv": "bf16",
  "cases": [
    {"batch": 32, "prompt": 1024, "output": 256,
     "measured": {"tpot_s": 0.02, "ttft_s": 0.5, "e2e_s": 6.0,
                  "tokens_per_s_per_chip": 1000}},
    {"concurrency": 16, "prompt": 512, "output": 128,
     "measured": {"itl_s": 0.015, "ttft_s": 0.05}},
    {"rate": 4, "e2e_s": 2.0, "prompt": 512, "output": 128,
     "measured": {"tpot_s": 0.015}}
  ]})";

estimate::ServeEstimate Estimate(double batch, double prompt, double output) {
  auto m = ingest::FindModel(BuiltinCatalog(), "llama3-8b");
  auto sys = BuiltinCatalog().FindSystem("h100:1x1");
  EXPECT_TRUE(m && sys);
  estimate::ServeConfig cfg;
  cfg.batch = batch;
  cfg.prompt = prompt;
  cfg.output = output;
  auto e = estimate::EstimateServing(m->spec, *sys, cfg);
  EXPECT_TRUE(e.has_value());
  return *e;
}

// A simulation as validate runs it: Llama 3 8B on one H100, continuous
// batching with chunked prefill, the step-cost model's reference lengths
// `prompt` and `output`.
estimate::SimulationResult SimulateOn8b(const estimate::Workload& w,
                                        double prompt, double output) {
  auto m = ingest::FindModel(BuiltinCatalog(), "llama3-8b");
  auto sys = BuiltinCatalog().FindSystem("h100:1x1");
  estimate::ServeConfig cfg;
  cfg.prompt = prompt;
  cfg.output = output;
  auto cost = estimate::StepCostModel::Create(m->spec, *sys, cfg);
  EXPECT_TRUE(cost.has_value());
  estimate::SchedulerOptions sched;
  sched.chunked_prefill = true;
  auto r = estimate::SimulateServing(*cost, 1, w, sched, {});
  EXPECT_TRUE(r.has_value());
  return *r;
}

// The simulation validate runs for a concurrency or rate case: lengths
// uniform within +-50% of the means.
estimate::SimulationResult Simulated(estimate::Workload::Arrivals arrivals,
                                     double load, int requests) {
  estimate::Workload w;
  w.arrivals = arrivals;
  if (arrivals == estimate::Workload::kPoisson) {
    w.rate_per_s = load;
  } else {
    w.concurrency = static_cast<int>(load);
  }
  w.requests = requests;
  w.prompt = {estimate::LengthDist::kUniform, 256, 768};
  w.output = {estimate::LengthDist::kUniform, 64, 192};
  return SimulateOn8b(w, 512, 128);
}

const ValidationCase* Find(const ValidationReport& r, const std::string& id) {
  for (const ValidationCase& c : r.cases) {
    if (c.id == id) return &c;
  }
  ADD_FAILURE() << "no case " << id;
  return nullptr;
}

TEST(ServingValidationTest, EachMetricIsComparedWithItsOwnQuantity) {
  ValidationReport r;
  auto ok = ScoreServingRow(BuiltinCatalog(), "test.json", kRow, r);
  ASSERT_TRUE(ok) << ok.error().ToString();
  ASSERT_EQ(r.cases.size(), 7u);
  const std::string id = "synthetic-llama3-8b-h100";
  // A static batch: the estimate's own decode step, TTFT (prefill of the
  // whole batch), request latency and throughput per chip.
  const estimate::ServeEstimate b32 = Estimate(32, 1024, 256);
  EXPECT_DOUBLE_EQ(Find(r, id + "#1.tpot_s")->predicted, b32.decode_step.si());
  EXPECT_DOUBLE_EQ(Find(r, id + "#1.ttft_s")->predicted, b32.ttft.si());
  EXPECT_DOUBLE_EQ(Find(r, id + "#1.e2e_s")->predicted,
                   b32.request_latency.si());
  EXPECT_DOUBLE_EQ(Find(r, id + "#1.tokens_per_s_per_chip")->predicted,
                   b32.tokens_per_s_per_chip);
  // A concurrency: the simulator's median inter-token latency and TTFT with
  // 16 closed-loop clients (4 waves of 16 requests); the ITL lies between
  // the decode step of one sequence and that of the 16 plus a prefill chunk.
  const estimate::SimulationResult c16 =
      Simulated(estimate::Workload::kConcurrency, 16, 64);
  EXPECT_DOUBLE_EQ(Find(r, id + "#2.itl_s")->predicted, c16.itl_s.p50);
  EXPECT_DOUBLE_EQ(Find(r, id + "#2.ttft_s")->predicted, c16.ttft_s.p50);
  EXPECT_GE(c16.itl_s.p50, Estimate(1, 512, 128).decode_step.si());
  EXPECT_GE(c16.ttft_s.p50, Estimate(1, 512, 128).ttft.si() * 0.5);
  // A rate: Poisson arrivals at 4/s, 200 requests, the median TPOT.
  EXPECT_DOUBLE_EQ(Find(r, id + "#3")->predicted,
                   Simulated(estimate::Workload::kPoisson, 4, 200).tpot_s.p50);
  // Classes and the engine without its version.
  EXPECT_EQ(Find(r, id + "#1.tpot_s")->metric_class, "tpot");
  EXPECT_EQ(Find(r, id + "#2.itl_s")->metric_class, "tpot");
  EXPECT_EQ(Find(r, id + "#1.ttft_s")->metric_class, "ttft");
  EXPECT_EQ(Find(r, id + "#1.e2e_s")->metric_class, "e2e");
  EXPECT_EQ(Find(r, id + "#1.tokens_per_s_per_chip")->metric_class,
            "throughput");
  EXPECT_EQ(Find(r, id + "#1.tpot_s")->engine, "TestEngine");
  EXPECT_NEAR(Find(r, id + "#1.tpot_s")->rel_error,
              b32.decode_step.si() / 0.02 - 1, 1e-12);
}

TEST(ServingValidationTest, SummariesSplitByMetricAndEngine) {
  ValidationReport r;
  ASSERT_TRUE(ScoreServingRow(BuiltinCatalog(), "test.json", kRow, r));
  Summarize(r);
  ASSERT_EQ(r.serving_by_metric.size(), 4u);
  EXPECT_EQ(r.serving_by_metric[0].group, ServingMetricLabel("tpot"));
  EXPECT_EQ(r.serving_by_metric[0].count, 3);
  EXPECT_EQ(r.serving_by_metric[1].count, 2);  // TTFT
  EXPECT_EQ(r.serving_by_engine[0].group,
            "TestEngine: " + ServingMetricLabel("tpot"));
  // serve's quote: three TPOT points on h100, so the chip's own; one
  // throughput point, so too few to quote anything but the count.
  for (const MetricAccuracy& a : ServingAccuracy(r, "h100")) {
    if (a.metric_class == "tpot") {
      EXPECT_EQ(a.scope, "h100");
      EXPECT_EQ(a.summary.count, 3);
    }
    if (a.metric_class == "throughput") {
      EXPECT_EQ(a.summary.count, 1);
    }
  }
  for (const MetricAccuracy& a : ServingAccuracy(r, "b200")) {
    EXPECT_EQ(a.scope, "all chips");
  }
}

// A row that breaks the schema: one sentence naming the file, the row and
// the case.
std::string SchemaError(const std::string& row) {
  ValidationReport r;
  auto ok = ScoreServingRow(BuiltinCatalog(), "runs.json", row, r);
  EXPECT_FALSE(ok);
  return ok ? "" : ok.error().ToString();
}

// The schema error of a row holding one case, given as JSON.
std::string CaseError(const std::string& case_json) {
  return SchemaError(
      R"({"id": "bad-case", "system": "h100:1x1", "model": {"catalog":
      "llama3-8b"}, "plan": {"tp": 1}, "cases": [)" +
      case_json + "]}");
}

TEST(ServingValidationTest, SchemaErrorsAreOneSentenceWithTheRowId) {
  const std::string head =
      R"({"id": "bad-row", "system": "h100:1x1", "model": {"catalog":
      "llama3-8b"}, "plan": {"tp": 1}, "cases": [)";
  std::string e = SchemaError(head + R"({"prompt": 1, "output": 1,
      "measured": {"tpot_s": 0.01}}]})");
  EXPECT_NE(e.find("runs.json"), std::string::npos) << e;
  EXPECT_NE(e.find("serving row 'bad-row' case 1: expected exactly one of "
                   "batch, concurrency or rate, found 0"),
            std::string::npos)
      << e;
  e = SchemaError(head + R"({"batch": 1, "prompt": 1, "output": 1},
      {"batch": 1, "prompt": 1, "output": 1, "measured": {"tpot": 1}}]})");
  EXPECT_NE(e.find("'bad-row' case 1: expected a 'measured' object"),
            std::string::npos)
      << e;
  e = SchemaError(head + R"({"batch": 1, "prompt": 1, "output": 1,
      "measured": {"tpot": 0.01}}]})");
  EXPECT_NE(e.find("unknown measured quantity 'tpot'"), std::string::npos) << e;
  e = SchemaError(
      R"({"id": "bad-row", "system": "h100:1x1", "model": {"catalog":
      "llama3-8b"}, "plan": {"tp": 1}, "mem_fraction": 1.2, "cases": [)"
      R"({"batch": 1, "prompt": 1, "output": 1,
      "measured": {"tpot_s": 0.01}}]})");
  EXPECT_NE(e.find("expected 'mem_fraction' (the launch's "
                   "--mem-fraction-static or --gpu-memory-utilization) as a "
                   "number above 0 and at most 1, found 1.2"),
            std::string::npos)
      << e;
  e = SchemaError(head + R"({"rate": -2, "prompt": 1, "output": 1,
      "measured": {"tpot_s": 0.01}}]})");
  EXPECT_NE(e.find("expected 'rate' as a positive number, found -2"),
            std::string::npos)
      << e;
  e = SchemaError(head + R"({"batch": 1, "prompt": "long", "output": 1,
      "measured": {"tpot_s": 0.01}}]})");
  EXPECT_NE(e.find("expected 'prompt' as a positive number"), std::string::npos)
      << e;
  e = SchemaError(R"({"id": "no-cases", "system": "h100:1x1", "model":
      {"catalog": "llama3-8b"}, "plan": {"tp": 1}, "weights": "fp7"})");
  EXPECT_NE(e.find("serving row 'no-cases': expected 'weights' as a dtype"),
            std::string::npos)
      << e;
  for (const std::string& msg : {e}) {
    EXPECT_EQ(msg.find('\n'), std::string::npos);
  }
}

// A "max" case whose source states the run's request count: no more than
// that many are in flight (all at once when they fit), and more than fit
// run in waves of the largest batch, the last one partial.
TEST(ServingValidationTest, StatedRequestCountBoundsTheLargestBatch) {
  const char* row = R"({
    "id": "synthetic-requests", "source": "unit test", "family": "test",
    "system": "h100:1x1", "model": {"catalog": "llama3-8b"},
    "plan": {"tp": 1, "ep": 1},
    "cases": [
      {"batch": "max", "prompt": 1024, "output": 256,
       "metric": "tokens_per_s_per_chip", "value": 1000},
      {"batch": "max", "prompt": 1024, "output": 256, "requests": 20,
       "metric": "tokens_per_s_per_chip", "value": 1000},
      {"batch": "max", "prompt": 1024, "output": 256, "requests": 100000,
       "metric": "tokens_per_s_per_chip", "value": 1000}]})";
  ValidationReport r;
  auto ok = ScoreServingRow(BuiltinCatalog(), "test.json", row, r);
  ASSERT_TRUE(ok) << ok.error().ToString();
  ASSERT_EQ(r.cases.size(), 3u);
  const double fits = Estimate(1, 1024, 256).max_batch;
  ASSERT_GT(fits, 20);
  ASSERT_LT(fits, 100000);
  // Unbounded: the largest batch that fits, in steady state.
  EXPECT_DOUBLE_EQ(r.cases[0].predicted,
                   Estimate(fits, 1024, 256).tokens_per_s_per_chip);
  // 20 requests: one static batch of 20.
  EXPECT_DOUBLE_EQ(r.cases[1].predicted,
                   Estimate(20, 1024, 256).tokens_per_s_per_chip);
  EXPECT_NE(r.cases[1].detail.find("all 20 requests of the run at once"),
            std::string::npos)
      << r.cases[1].detail;
  // 100,000 requests: whole waves of the largest batch, then the rest.
  const double full = std::floor(100000 / fits);
  const double rest = 100000 - full * fits;
  const double makespan =
      full * Estimate(fits, 1024, 256).request_latency.si() +
      (rest > 0 ? Estimate(rest, 1024, 256).request_latency.si() : 0.0);
  EXPECT_NEAR(r.cases[2].predicted, 100000 * 256 / makespan,
              1e-9 * r.cases[2].predicted);
  EXPECT_LE(r.cases[2].predicted, r.cases[0].predicted);
  // A request count needs a "max" batch and a positive whole number.
  EXPECT_NE(CaseError(R"({"batch": 8, "requests": 100, "prompt": 1,
      "output": 1, "measured": {"tpot_s": 0.01}})")
                .find("expected 'requests' (the run's request count) as a "
                      "whole number from 1 to 1000000 beside \"batch\": "
                      "\"max\", a concurrency or a rate, found 100"),
            std::string::npos);
}

// A row naming its benchmark's generator (bench_dataset) replays the run's
// own lengths: the simulation is the closed loop over exactly those
// requests; a case whose stated means the generator does not give is not
// compared, with a reason; a malformed bench_dataset is a schema error.
TEST(ServingValidationTest, BenchDatasetReplaysTheRunsOwnLengths) {
  const char* row = R"({
    "id": "synthetic-bench", "source": "unit test", "family": "test",
    "engine": "TestEngine v1.2", "system": "h100:1x1",
    "model": {"catalog": "llama3-8b"}, "plan": {"tp": 1, "ep": 1},
    "bench_dataset": {"name": "sglang-random", "input_len": 1000,
                      "output_len": 1000},
    "cases": [
      {"concurrency": 1, "max_concurrency": 1, "requests": 10,
       "prompt": 610.1, "output": 422, "measured": {"ttft_s": 0.05}},
      {"concurrency": 1, "max_concurrency": 1, "requests": 10,
       "prompt": 500, "output": 422, "measured": {"ttft_s": 0.05}}]})";
  ValidationReport r;
  auto ok = ScoreServingRow(BuiltinCatalog(), "test.json", row, r);
  ASSERT_TRUE(ok) << ok.error().ToString();
  estimate::Workload w;
  w.arrivals = estimate::Workload::kConcurrency;
  w.concurrency = 1;
  w.trace = *estimate::SglangRandomLengths({10, 1000, 1000, 0, 1, 1});
  const estimate::SimulationResult want = SimulateOn8b(w, 610.1, 422);
  const ValidationCase* c = Find(r, "synthetic-bench#1");
  ASSERT_NE(c, nullptr);
  EXPECT_DOUBLE_EQ(c->predicted, want.ttft_s.p50);
  EXPECT_NE(c->detail.find("the run's 10 requests, lengths as "
                           "sglang.bench_serving's random dataset"),
            std::string::npos)
      << c->detail;
  for (const ValidationCase& k : r.cases) {
    EXPECT_NE(k.id.rfind("synthetic-bench#2", 0), 0U) << k.id;
  }
  bool skipped = false;
  for (const std::string& s : r.skipped) {
    skipped |= s.find(
                   "synthetic-bench#2: the bench_dataset's 10 requests "
                   "average 610.1 prompt") != std::string::npos;
  }
  EXPECT_TRUE(skipped);
  EXPECT_NE(SchemaError(R"({"id": "bad-bench", "system": "h100:1x1",
      "model": {"catalog": "llama3-8b"}, "plan": {"tp": 1},
      "bench_dataset": {"name": "sharegpt", "input_len": 1000,
      "output_len": 1000}, "cases": [{"concurrency": 1, "prompt": 1,
      "output": 1, "measured": {"tpot_s": 0.01}}]})")
                .find("expected 'bench_dataset' as {\"name\": "
                      "\"sglang-random\""),
            std::string::npos);
}

// A closed-loop case that states its cap and its request count (the
// benchmark's --max-concurrency and --num-prompts) is simulated as that
// run: the cap, not the run's lower average, and the run's requests (a
// one-client run at least 24 long).
TEST(ServingValidationTest, StatedCapAndRequestsAreTheSimulatedRun) {
  const char* row = R"({
    "id": "synthetic-cap", "source": "unit test", "family": "test",
    "engine": "TestEngine v1.2", "system": "h100:1x1",
    "model": {"catalog": "llama3-8b"}, "plan": {"tp": 1, "ep": 1},
    "cases": [
      {"concurrency": 13.7, "max_concurrency": 16, "requests": 80,
       "prompt": 512, "output": 128,
       "measured": {"itl_s": 0.015, "output_tokens_per_s": 900}},
      {"concurrency": 1, "max_concurrency": 1, "requests": 10,
       "prompt": 512, "output": 128, "measured": {"ttft_s": 0.05}}]})";
  ValidationReport r;
  auto ok = ScoreServingRow(BuiltinCatalog(), "test.json", row, r);
  ASSERT_TRUE(ok) << ok.error().ToString();
  const estimate::SimulationResult c16 =
      Simulated(estimate::Workload::kConcurrency, 16, 80);
  EXPECT_DOUBLE_EQ(Find(r, "synthetic-cap#1.itl_s")->predicted, c16.itl_s.p50);
  EXPECT_DOUBLE_EQ(Find(r, "synthetic-cap#1.output_tokens_per_s")->predicted,
                   c16.throughput_output_tokens_per_s);
  EXPECT_NE(Find(r, "synthetic-cap#1.itl_s")
                ->detail.find("concurrency 16 at most (the run averaged 13.7)"),
            std::string::npos)
      << Find(r, "synthetic-cap#1.itl_s")->detail;
  EXPECT_DOUBLE_EQ(
      Find(r, "synthetic-cap#2")->predicted,
      Simulated(estimate::Workload::kConcurrency, 1, 24).ttft_s.p50);
  // A step limit must be a positive whole number.
  EXPECT_NE(CaseError(R"({"concurrency": 8, "max_batched_tokens": 0,
      "prompt": 1, "output": 1, "measured": {"tpot_s": 0.01}})")
                .find("expected 'max_batched_tokens' (the engine's step limit "
                      "the source ran with) as a whole number from 1"),
            std::string::npos);
  // A spread outside [0, 1) is refused with one sentence.
  EXPECT_NE(CaseError(R"({"concurrency": 8, "spread": 1.5, "prompt": 1,
      "output": 1, "measured": {"tpot_s": 0.01}})")
                .find("expected 'spread' (the lengths' half-range as a "
                      "fraction of their means) from 0 to below 1"),
            std::string::npos);
  // A cap below the case's concurrency is refused with one sentence.
  EXPECT_NE(CaseError(R"({"concurrency": 14, "max_concurrency": 8,
      "prompt": 1, "output": 1, "measured": {"tpot_s": 0.01}})")
                .find("expected 'max_concurrency' (the closed loop's cap) as "
                      "a whole number no lower than the case's concurrency"),
            std::string::npos);
}

// A closed-loop case whose throughput contradicts its own latencies
// (Little's law: C = tokens/s x E2E / output) by more than a factor of 1.25
// is not compared, with the implied concurrency in the reason; its
// latencies are, and a consistent case's throughput is too.
TEST(ServingValidationTest,
     ThroughputThatContradictsItsLatenciesIsNotCompared) {
  // E2E = 0.05 + 127 x 0.01 = 1.32 s for 128 tokens: at concurrency 4 the
  // run should give 4 x 128 / 1.32 = 388 tokens/s. 120 implies 1.24.
  const char* row = R"({
    "id": "synthetic-littles-law", "source": "unit test", "family": "test",
    "engine": "SGLang v0.5.6", "system": "h100:1x1",
    "model": {"catalog": "llama3-8b"}, "plan": {"tp": 1, "ep": 1},
    "cases": [
      {"concurrency": 4, "prompt": 512, "output": 128,
       "measured": {"ttft_s": 0.05, "tpot_s": 0.01,
                    "output_tokens_per_s": 120}},
      {"concurrency": 4, "prompt": 512, "output": 128,
       "measured": {"ttft_s": 0.05, "tpot_s": 0.01,
                    "output_tokens_per_s": 380}}]})";
  ValidationReport r;
  auto ok = ScoreServingRow(BuiltinCatalog(), "test.json", row, r);
  ASSERT_TRUE(ok) << ok.error().ToString();
  std::set<std::string> compared;
  for (const ValidationCase& c : r.cases) compared.insert(c.id);
  EXPECT_EQ(compared.count("synthetic-littles-law#1.output_tokens_per_s"), 0u);
  EXPECT_EQ(compared.count("synthetic-littles-law#1.tpot_s"), 1u);
  EXPECT_EQ(compared.count("synthetic-littles-law#2.output_tokens_per_s"), 1u);
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_NE(r.skipped[0].find("synthetic-littles-law#1.output_tokens_per_s: "
                              "the run's output tokens/s and its own TTFT and "
                              "TPOT imply 1.24 requests in flight at a stated "
                              "concurrency of 4"),
            std::string::npos)
      << r.skipped[0];
}

// The shipped serving points: at least 60 latency or throughput-at-a-load
// points, every one with an engine and a metric class.
TEST(ServingValidationTest, ShippedPointsCoverEveryMetric) {
  auto r = RunValidation(BuiltinCatalog());
  ASSERT_TRUE(r) << r.error().ToString();
  int latency = 0;
  for (const ValidationCase& c : r->cases) {
    if (!IsServingCase(c)) continue;
    EXPECT_FALSE(c.metric_class.empty()) << c.id;
    EXPECT_FALSE(c.engine.empty()) << c.id;
    if (c.metric_class != "throughput_max") ++latency;
  }
  EXPECT_GE(latency, 60);
  EXPECT_GE(r->serving_by_metric.size(), 4u);
}

// Every measured quantity of every shipped serving row without a "skip" is
// compared: none is dropped on the way (a model, system or load the
// estimator cannot read lands in report.skipped and fails here). The
// latency points cover issue #15's ask (TPOT or ITL and TTFT per point).
TEST(ServingValidationTest, ShippedLatencyRowsAreAllCompared) {
  auto r = RunValidation(BuiltinCatalog());
  ASSERT_TRUE(r) << r.error().ToString();
  std::set<std::string> compared;
  for (const ValidationCase& c : r->cases) compared.insert(c.id);
  // Throughputs their own run contradicts (Little's law) are listed as not
  // compared instead: six, MiniMax, ERNIE and Llama 4 on MI300X and one
  // InferenceX DeepSeek-R1 run on B200 at 8k-token prompts.
  int contradicted = 0;
  for (const std::string& s : r->skipped) {
    if (s.find("Little's law") == std::string::npos) continue;
    compared.insert(s.substr(0, s.find(": ")));
    ++contradicted;
  }
  EXPECT_EQ(contradicted, 6);
  int files = 0, tpot_or_itl = 0, ttft = 0;
  for (const catalog::DataFile& f : BuiltinCatalog().validation_files()) {
    if (f.path.find("inference") == std::string::npos) continue;
    ++files;
    const nlohmann::json doc = nlohmann::json::parse(f.contents);
    for (const nlohmann::json& row : doc.at("runs")) {
      if (row.contains("skip")) continue;
      const std::string id = row.at("id").get<std::string>();
      int k = 0;
      for (const nlohmann::json& c : row.at("cases")) {
        ++k;
        std::vector<std::string> metrics;
        if (c.contains("metric")) metrics.push_back(c.at("metric"));
        const nlohmann::json measured =
            c.value("measured", nlohmann::json::object());
        for (const auto& [key, value] : measured.items()) {
          metrics.push_back(key);
        }
        for (const std::string& m : metrics) {
          const std::string case_id =
              metrics.size() == 1 ? id + "#" + std::to_string(k)
                                  : id + "#" + std::to_string(k) + "." + m;
          EXPECT_EQ(compared.count(case_id), 1u) << case_id << " not compared";
          tpot_or_itl += m == "tpot_s" || m == "itl_s";
          ttft += m == "ttft_s";
        }
      }
    }
  }
  EXPECT_EQ(files, 1);
  EXPECT_GE(tpot_or_itl, 100);
  EXPECT_GE(ttft, 70);
}

}  // namespace
}  // namespace scalemodel::validate
