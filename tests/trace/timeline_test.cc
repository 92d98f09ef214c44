// The predicted step as a Chrome trace (issue #20): the trace-event format
// (required fields, phase types, slices that do not overlap on a thread,
// flows paired) and the timeline's length against train's step time.
#include "scalemodel/timeline/timeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "../testing/catalog.h"
#include "nlohmann/json.hpp"
#include "scalemodel/estimate/batching.h"
#include "scalemodel/estimate/inference.h"
#include "scalemodel/estimate/training.h"
#include "scalemodel/trace/chrome.h"

namespace scalemodel::timeline {
namespace {

using nlohmann::json;
using scalemodel::testing::Model;
using scalemodel::testing::System;

// Checks `text` against the trace-event format and returns the span of its
// "X" slices in seconds.
double ValidateTrace(const std::string& text, int* forward_slices = nullptr) {
  json doc = json::parse(text);
  EXPECT_TRUE(doc.contains("traceEvents"));
  const json& events = doc["traceEvents"];
  EXPECT_TRUE(events.is_array());
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> thr;
  std::map<long long, std::vector<json>> flows;
  std::set<std::pair<int, int>> named;
  double lo = 1e300, hi = -1e300;
  int fwd = 0;
  for (const json& e : events) {
    EXPECT_TRUE(e.contains("ph") && e["ph"].is_string()) << e.dump();
    EXPECT_TRUE(e.contains("pid") && e["pid"].is_number_integer()) << e.dump();
    EXPECT_TRUE(e.contains("tid") && e["tid"].is_number_integer()) << e.dump();
    const std::string ph = e["ph"];
    EXPECT_TRUE(ph == "M" || ph == "X" || ph == "s" || ph == "f") << ph;
    const int pid = e["pid"], tid = e["tid"];
    if (ph == "M") {
      EXPECT_TRUE(e.contains("name") && e.contains("args")) << e.dump();
      if (e["name"] == "thread_name") named.insert({pid, tid});
      continue;
    }
    EXPECT_TRUE(e.contains("ts") && e["ts"].is_number()) << e.dump();
    EXPECT_TRUE(e.contains("name") && e["name"].is_string()) << e.dump();
    if (ph == "X") {
      EXPECT_TRUE(e.contains("dur") && e["dur"].is_number()) << e.dump();
      EXPECT_GE(e["dur"].get<double>(), 0);
      EXPECT_TRUE(e.contains("cat") && e.contains("args")) << e.dump();
      EXPECT_TRUE(e["args"].contains("duration_s"));
      const double ts = e["ts"], dur = e["dur"];
      thr[{pid, tid}].push_back({ts, ts + dur});
      lo = std::min(lo, ts);
      hi = std::max(hi, ts + dur);
      if (e["cat"] == "forward") {
        ++fwd;
        EXPECT_TRUE(e["args"].contains("flops") && e["args"].contains("bound"));
      }
      if (e["cat"] == "collective") {
        EXPECT_TRUE(e["args"].contains("bytes")) << e.dump();
      }
    } else {
      EXPECT_TRUE(e.contains("id")) << e.dump();
      flows[e["id"].get<long long>()].push_back(e);
    }
  }
  for (auto& [key, v] : thr) {
    EXPECT_TRUE(named.count(key)) << "thread without a name";
    std::sort(v.begin(), v.end());
    for (size_t i = 1; i < v.size(); ++i) {
      // Rounded to whole nanoseconds (0.001 us).
      EXPECT_LE(v[i - 1].second, v[i].first + 1e-9)
          << "overlap on pid " << key.first << " tid " << key.second;
    }
  }
  for (const auto& [id, v] : flows) {
    EXPECT_EQ(v.size(), 2u) << "flow " << id;
    if (v.size() != 2) continue;
    const json& s = v[0]["ph"] == "s" ? v[0] : v[1];
    const json& f = v[0]["ph"] == "s" ? v[1] : v[0];
    EXPECT_EQ(s["ph"], "s");
    EXPECT_EQ(f["ph"], "f");
    EXPECT_EQ(f["bp"], "e");
    EXPECT_LE(s["ts"].get<double>(), f["ts"].get<double>() + 1e-9);
  }
  if (forward_slices) *forward_slices = fwd;
  return (hi - lo) * 1e-6;
}

struct Case {
  const char* name;
  const char* model;
  const char* system;
  const char* plan;
  double sequences, seq;
  estimate::Schedule schedule;
  int vpp;
  estimate::Mode mode = estimate::Mode::kRealistic;
};

class TrainingTrace : public ::testing::TestWithParam<Case> {};

TEST_P(TrainingTrace, ValidTraceAsLongAsTheStep) {
  const Case& c = GetParam();
  estimate::TrainingConfig cfg;
  auto plan = estimate::ParsePlanKey(c.plan, &cfg);
  ASSERT_TRUE(plan.has_value()) << plan.error().ToString();
  cfg.layout.schedule = c.schedule;
  cfg.layout.vpp = c.vpp;
  cfg.batch_tokens = c.sequences * c.seq;
  cfg.seq = c.seq;
  cfg.mode = c.mode;
  const hw::System sys = System(c.system);
  auto e = estimate::EstimateTraining(Model(c.model), sys, cfg);
  ASSERT_TRUE(e.has_value()) << e.error().ToString();
  const Timeline t = TrainingTimeline(*e, cfg, sys);
  int forward = 0;
  const double span = ValidateTrace(trace::ChromeTraceJson(t), &forward);
  const double step = e->step_time.si();
  const int v = c.schedule == estimate::Schedule::kInterleaved ? c.vpp : 1;
  // The simulated pipeline runs each microbatch's exposed tensor / expert /
  // context collectives in the (pp - 1) / v stage times of fill and drain
  // too; realistic mode's bubble counts them (estimate/core.cc), peak
  // mode's (the book's closed form) does not.
  double fill = 0;
  for (const estimate::CommItem& k : e->comms) {
    if (k.parallelism == "tp" || k.parallelism == "ep" ||
        k.parallelism == "cp") {
      fill += k.exposed.si();
    }
  }
  fill *= (std::max(1, cfg.par.pp) - 1.0) / v / e->microbatches;
  if (c.mode == estimate::Mode::kRealistic) fill = 0;
  EXPECT_NEAR(span, step + fill, 0.002 * step)
      << c.name << ": trace " << span << " s, train " << step
      << " s, fill and drain's exposed collectives " << fill << " s";
  // Within 1% of train's step (the bound).
  EXPECT_NEAR(span / step, 1, 0.01)
      << c.name << ": trace " << span << " s, train " << step << " s";
  EXPECT_NEAR(t.length_s, span, 1e-9 * step);
  EXPECT_EQ(forward, std::max(1, cfg.par.pp) * e->microbatches * v);
  if (cfg.par.pp > 1) {
    EXPECT_EQ(static_cast<int>(t.flows.size()),
              2 * e->microbatches * (cfg.par.pp * v - 1));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Plans, TrainingTrace,
    ::testing::Values(
        // The case: four stages, interleaved.
        Case{"interleaved_4stage", "llama3-70b", "h100:8x16", "dp=4,tp=8,pp=4",
             256, 4096, estimate::Schedule::kInterleaved, 2},
        Case{"interleaved_4stage_few_mb", "llama3-70b", "h100:8x16",
             "dp=4,tp=8,pp=4", 32, 4096, estimate::Schedule::kInterleaved, 4},
        // Eight stages and exposed TP collectives of 7.5 ms a microbatch:
        // the fill and drain carry 7 x 7.5 ms (1.2% of the step), which
        // the bubble counts.
        Case{"1f1b_8stage", "llama3-70b", "h100:8x16", "dp=2,tp=8,pp=8", 128,
             4096, estimate::Schedule::k1F1B, 1},
        Case{"gpipe_4stage", "llama3-8b", "h100:8x4", "dp=2,tp=4,pp=4", 64,
             8192, estimate::Schedule::kGpipe, 1},
        Case{"fsdp_tpu", "llama3-70b", "tpu-v5p:8x8x8", "fsdp=128,tp=4", 512,
             4096, estimate::Schedule::k1F1B, 1},
        Case{"zero1_dcn", "llama3-8b", "h100:8x8", "dp=8,tp=8,zero=1", 64, 8192,
             estimate::Schedule::k1F1B, 1},
        Case{"moe_ep", "mixtral-8x7b", "h100:8x8", "dp=2,ep=8,tp=4,zero=1", 64,
             4096, estimate::Schedule::k1F1B, 1},
        Case{"peak_pp", "llama3-70b", "h100:8x16", "dp=4,tp=8,pp=4", 256, 4096,
             estimate::Schedule::kInterleaved, 2, estimate::Mode::kPeak}),
    [](const auto& p) { return std::string(p.param.name); });

TEST(ServingTrace, RequestAsLongAsTheEstimate) {
  estimate::ServeConfig cfg;
  cfg.tp = 8;
  cfg.batch = 32;
  cfg.prompt = 2048;
  cfg.output = 128;
  const hw::System sys = System("h100:8x1");
  const model::ModelSpec m = Model("llama3-70b");
  auto e = estimate::EstimateServing(m, sys, cfg);
  ASSERT_TRUE(e.has_value()) << e.error().ToString();
  const Timeline t = ServingTimeline(*e, cfg, m, sys);
  const double span = ValidateTrace(trace::ChromeTraceJson(t));
  EXPECT_NEAR(span / e->request_latency.si(), 1, 1e-6);
  int decode = 0;
  for (const Slice& s : t.slices) decode += s.name == "decode matmuls";
  EXPECT_EQ(decode, 128);
}

TEST(ServingTrace, SimulatedRequestsOverTime) {
  estimate::ServeConfig cfg;
  cfg.tp = 8;
  cfg.dp = 2;
  cfg.prompt = 1024;
  cfg.output = 128;
  auto sc = estimate::StepCostModel::Create(Model("llama3-8b"),
                                            System("h100:8x2"), cfg);
  ASSERT_TRUE(sc.has_value()) << sc.error().ToString();
  estimate::Workload w;
  w.rate_per_s = 20;
  w.requests = 200;
  w.prompt = {estimate::LengthDist::kFixed, 1024};
  w.output = {estimate::LengthDist::kFixed, 128};
  auto r = estimate::SimulateServing(*sc, 2, w, {}, {});
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ(r->request_spans.size(), 200u);
  const Timeline t = SimulationTimeline(*r);
  EXPECT_EQ(t.slices.size(), 400u);
  EXPECT_EQ(t.processes.size(), 2u);
  const double span = ValidateTrace(trace::ChromeTraceJson(t));
  EXPECT_NEAR(span / r->duration_s, 1, 1e-6);
}

TEST(ChromeTrace, EscapesNames) {
  EXPECT_EQ(trace::JsonString("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
}

}  // namespace
}  // namespace scalemodel::timeline
