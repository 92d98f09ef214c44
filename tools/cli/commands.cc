#include "commands.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "fmt/format.h"
#include "scalemodel/base/strings.h"
#include "scalemodel/estimate/inference.h"
#include "scalemodel/estimate/training.h"
#include "scalemodel/ingest/hf_config.h"
#include "scalemodel/model/transformer.h"
#include "scalemodel/net/collective.h"
#include "scalemodel/roofline/roofline.h"
#include "scalemodel/search/parallelism.h"
#include "scalemodel/sharding/matmul.h"
#include "scalemodel/trace/chrome.h"
#include "scalemodel/units/format.h"
#include "scalemodel/units/parse.h"
#include "scalemodel/validate/validate.h"

namespace scalemodel::cli {

report::Json Document(const Json& inputs, const Json& results) {
  Json j;
  j["schema_version"] = report::kSchemaVersion;
  j["inputs"] = inputs;
  for (auto it = results.begin(); it != results.end(); ++it) {
    j[it.key()] = it.value();
  }
  return j;
}

Result<bool> PutLaunch(const std::string& engine_name,
                       const Result<std::string>& text, Output& out) {
  if (!text) return tl::unexpected(EmitError(text.error()));
  out.text = *text;
  out.json["launch"] = {{"engine", ToLower(engine_name)}, {"script", *text}};
  return true;
}

// How the realistic model did on the published serving points, per metric
// that `serve` prints (issue #15): time per output token, TTFT, request
// latency, throughput. A metric with fewer than 3 points on this chip quotes
// every chip's.
static std::pair<std::string, Json> ServingTrust(
    const validate::ValidationReport& rep, const hw::Chip& chip) {
  static const std::pair<const char*, const char*> kPrinted[] = {
      {"tpot", "time per output token"},
      {"ttft", "TTFT"},
      {"e2e", "request latency"},
      {"throughput", "throughput at a stated batch"}};
  std::string text =
      "\naccuracy of realistic predictions on published "
      "serving points (median and p90 error):\n";
  Json by_metric = Json::object();
  int total = 0;
  const std::vector<validate::MetricAccuracy> acc =
      validate::ServingAccuracy(rep, chip.id);
  for (const auto& [cls_name, printed] : kPrinted) {
    const std::string cls = cls_name;  // a lambda cannot capture a binding
    auto it = std::find_if(acc.begin(), acc.end(), [&](const auto& a) {
      return a.metric_class == cls;
    });
    if (it == acc.end()) continue;
    const validate::MetricAccuracy& a = *it;
    const validate::GroupSummary& s = a.summary;
    total += a.scope == chip.id ? s.count : 0;
    by_metric[a.metric_class] = {
        {"scope", a.scope},
        {"points", s.count},
        {"median_abs_rel_error",
         s.count >= 3 ? Json(s.median_abs_rel_error) : Json(nullptr)},
        {"p90_abs_rel_error",
         s.count >= 3 ? Json(s.p90_abs_rel_error) : Json(nullptr)}};
    text += s.count < 3
                ? fmt::format("- {}: {} published point{}, too few to say\n",
                              printed, s.count, s.count == 1 ? "" : "s")
                : fmt::format("- {}: {:.0f}% and {:.0f}% on {} point{} ({})\n",
                              printed, 100 * s.median_abs_rel_error,
                              100 * s.p90_abs_rel_error, s.count,
                              s.count == 1 ? "" : "s", a.scope);
  }
  text += fmt::format(
      "`scalemodel validate --filter {}` lists this chip's points; "
      "docs/accuracy.md has them all\n",
      chip.id);
  Json j = {
      {"chip", chip.id}, {"published_runs", total}, {"by_metric", by_metric}};
  return {text, j};
}

Result<bool> PutCheckedLaunch(const launch::CheckedLaunch& c, Output& out) {
  const std::string engine(launch::EngineId(c.version.engine));
  out.json["launch"] = {{"engine", engine},
                        {"version", c.version.name},
                        {"engine_commit", c.version.commit},
                        {"launchable", c.launchable()}};
  if (c.launchable()) {
    out.text = c.text;
    out.json["launch"]["script"] = c.text;
  } else {
    // An infeasible plan is a result: a shell comment, so pasting it runs
    // nothing, and exit status 0.
    out.text = "# " + c.Reason() + "\n";
    out.json["launch"]["reason"] = c.Reason();
    out.json["launch"]["rule"] = c.failures.front().rule.id;
    out.json["launch"]["rule_source"] = c.failures.front().rule.source;
  }
  return true;
}

// How the realistic model did on the published runs on this chip
// (data/validation): a sentence for the report and its JSON. Peak mode and
// --assume-mfu are not predictions of a measurement, so they get none.
std::pair<std::string, Json> TrustOnChip(const catalog::Catalog& cat,
                                         const hw::Chip& chip, bool training,
                                         bool applies) {
  if (!applies) return {"", nullptr};
  auto rep = validate::RunValidation(cat);
  if (!rep) return {"", nullptr};
  if (!training) return ServingTrust(*rep, chip);
  const validate::GroupSummary* s = nullptr;
  for (const validate::GroupSummary& g : rep->by_chip) {
    if (g.group == chip.id) s = &g;
  }
  const int n = s ? s->count : 0;
  const char* what = "published training run";
  Json j = {{"chip", chip.id},
            {"published_runs", n},
            {"median_abs_rel_error", nullptr},
            {"p90_abs_rel_error", nullptr}};
  if (n < 3) {
    return {fmt::format("\naccuracy: {} {}{} on {} in the validation set: "
                        "too few to say how close this prediction is; "
                        "docs/accuracy.md has the other chips'\n",
                        n == 0 ? "no" : std::to_string(n), what,
                        n == 1 ? "" : "s", chip.id),
            j};
  }
  j["median_abs_rel_error"] = s->median_abs_rel_error;
  j["p90_abs_rel_error"] = s->p90_abs_rel_error;
  return {
      fmt::format("\naccuracy: on {} {}s on {}, realistic predictions were off "
                  "by {:.0f}% (median) and {:.0f}% (p90) of what was measured; "
                  "`scalemodel validate --filter {}` lists them\n",
                  n, what, chip.id, 100 * s->median_abs_rel_error,
                  100 * s->p90_abs_rel_error, chip.id),
      j};
}

Result<double> WholeUpTo(const std::string& option, double value,
                         const char* noun, const Cap& cap) {
  if (!std::isfinite(value) || value != std::floor(value)) {
    return InvalidArgument(
        fmt::format("expected a whole number of {}, got {}", noun, value),
        option);
  }
  if (value > cap.value) {
    return InvalidArgument(
        fmt::format("expected at most {} {}, got {}", cap.text, noun, value),
        option);
  }
  return value;
}

std::string Table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& r : rows) {
    if (width.size() < r.size()) width.resize(r.size(), 0);
    for (size_t i = 0; i < r.size(); ++i) {
      width[i] = std::max(width[i], r[i].size());
    }
  }
  std::string out;
  for (size_t k = 0; k < rows.size(); ++k) {
    std::string line;
    for (size_t i = 0; i < rows[k].size(); ++i) {
      std::string cell = rows[k][i];
      if (i + 1 < rows[k].size()) cell.resize(width[i] + 2, ' ');
      line += cell;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

Result<net::Mode> ParseMode(const std::string& text, const char* where) {
  std::string m = ToLower(text);
  if (m == "peak") return net::Mode::kPeak;
  if (m == "realistic") return net::Mode::kRealistic;
  return InvalidArgument("expected 'peak' or 'realistic', got '" + text + "'",
                         where);
}

Result<void> ApplyPowerCap(const std::string& text, hw::System* sys) {
  if (text.empty()) return {};
  auto w = ParseOption<double>("--power-cap", text,
                               [](auto& t) { return units::ParseWatts(t); });
  if (!w) return tl::unexpected(w.error());
  const hw::Chip& chip = sys->chip;
  if (chip.is_tpu()) {
    return InvalidArgument(
        chip.id +
            " is a TPU: no published measurement of TPU throughput under a "
            "power limit exists, so no sustained-clock derate is modelled; "
            "power caps apply to GPUs",
        "--power-cap");
  }
  if (chip.power_watts <= 0) {
    return InvalidArgument(chip.id +
                               " has no TDP in its catalog file ([power] "
                               "tdp); add one to cap its power",
                           "--power-cap");
  }
  if (*w > chip.power_watts) {
    return InvalidArgument(FormatNumber(*w) + " W is above " + chip.id +
                               "'s TDP of " + FormatNumber(chip.power_watts) +
                               " W; give at most " +
                               FormatNumber(chip.power_watts) + " W",
                           "--power-cap");
  }
  sys->chip.power_limit_watts = *w;
  return {};
}

Result<void> PutTrace(const timeline::Timeline& t, const std::string& path,
                      const std::string& what, Output& out) {
  auto w = trace::WriteChromeTrace(t, path);
  if (!w)
    return tl::unexpected(Error{w.error().code, w.error().message, "--trace"});
  const double diff =
      t.reference_s > 0 ? (t.length_s - t.reference_s) / t.reference_s : 0;
  out.json["trace"] = {{"path", path},
                       {"slices", t.slices.size()},
                       {"flows", t.flows.size()},
                       {"length_s", t.length_s},
                       {"reference_s", t.reference_s}};
  out.text += fmt::format(
      "\ntrace: wrote {} ({} slices, {} pipeline sends): timeline {} against "
      "the estimated {} of {} ({:+.2f}%)\n",
      path, t.slices.size(), t.flows.size(),
      FormatSeconds(units::Seconds(t.length_s)), what,
      FormatSeconds(units::Seconds(t.reference_s)), 100 * diff);
  return {};
}

}  // namespace scalemodel::cli
