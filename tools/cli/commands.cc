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
  const validate::GroupSummary* s = nullptr;
  for (const validate::GroupSummary& g :
       training ? rep->by_chip : rep->serving_by_chip) {
    if (g.group == chip.id) s = &g;
  }
  const int n = s ? s->count : 0;
  const char* what =
      training ? "published training run" : "published serving point";
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

}  // namespace scalemodel::cli
