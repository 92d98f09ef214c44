#include "commands.h"

#include <algorithm>
#include <cctype>
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
  out.verbatim = true;
  out.json["launch"] = {{"engine", ToLower(engine_name)}, {"script", *text}};
  return true;
}

// The published serving points that ran attention data parallel (any chip,
// any metric): a line for `serve --dp-attention` and its JSON.
static std::pair<std::string, Json> DpAttentionTrust(
    const validate::ValidationReport& rep) {
  std::vector<double> errs;
  for (const validate::ValidationCase& c : rep.cases) {
    if (c.dp_attention && validate::IsServingCase(c)) {
      errs.push_back(c.rel_error);
    }
  }
  if (errs.empty()) return {"", nullptr};
  std::sort(errs.begin(), errs.end());
  const double median =
      errs.size() % 2 == 1
          ? errs[errs.size() / 2]
          : (errs[errs.size() / 2 - 1] + errs[errs.size() / 2]) / 2;
  const std::string text = fmt::format(
      "- with DP attention: the {} published points served that way read "
      "{:+.0f}% (median; {:+.0f}% to {:+.0f}%) against their measurements "
      "(docs/model.md 7.5)\n",
      errs.size(), 100 * median, 100 * errs.front(), 100 * errs.back());
  return {text,
          {{"points", errs.size()},
           {"median_rel_error", median},
           {"min_rel_error", errs.front()},
           {"max_rel_error", errs.back()}}};
}

// How the realistic model did on the published serving points, per metric
// that `serve` prints (issue #15): time per output token, TTFT, request
// latency, throughput. A metric with fewer than 3 points on this chip quotes
// every chip's.
static std::pair<std::string, Json> ServingTrust(
    const validate::ValidationReport& rep, const hw::Chip& chip,
    bool dp_attention) {
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
  auto [dpa_text, dpa_json] =
      dp_attention ? DpAttentionTrust(rep) : std::pair<std::string, Json>{};
  text += dpa_text;
  text += fmt::format(
      "`scalemodel validate --filter {}` lists this chip's points; "
      "docs/accuracy.md has them all\n",
      chip.id);
  Json j = {
      {"chip", chip.id}, {"published_runs", total}, {"by_metric", by_metric}};
  if (!dpa_json.is_null()) j["dp_attention"] = dpa_json;
  return {text, j};
}

Result<bool> PutCheckedLaunch(const launch::CheckedLaunch& c, Output& out) {
  const std::string engine(launch::EngineId(c.version.engine));
  out.json["launch"] = {{"engine", engine},
                        {"version", c.version.name},
                        {"engine_commit", c.version.commit},
                        {"launchable", c.launchable()}};
  out.verbatim = true;
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
                                         bool applies, bool dp_attention) {
  if (!applies) return {"", nullptr};
  auto cached = validate::CachedValidation(cat);
  if (!cached) return {"", nullptr};
  const validate::ValidationReport* rep = cached->get();
  if (!training) return ServingTrust(*rep, chip, dp_attention);
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

namespace {

// Where to break `text` so that the first piece is at most `width`
// characters: after the last space, comma or '>' that fits, else at
// `width` (a word longer than the column).
size_t BreakAt(const std::string& text, size_t width) {
  if (text.size() <= width) return text.size();
  for (size_t i = width; i > 0; --i) {
    const char c = text[i - 1];
    if (c == ' ' || c == ',' || c == '>' || c == '/') return i;
  }
  return width;
}

// `text` cut into pieces of at most `width` (BreakAt), trailing spaces
// dropped.
std::vector<std::string> WrapCell(std::string text, size_t width) {
  std::vector<std::string> lines;
  while (text.size() > width) {
    const size_t at = BreakAt(text, width);
    std::string piece = text.substr(0, at);
    while (!piece.empty() && piece.back() == ' ') piece.pop_back();
    lines.push_back(piece);
    text = std::string(Trim(text.substr(at)));
  }
  lines.push_back(text);
  return lines;
}

// Column widths of `rows` shrunk, widest first, until the table fits
// kTextWidth (no column below 12 characters).
std::vector<size_t> FitWidths(
    const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& r : rows) {
    if (width.size() < r.size()) width.resize(r.size(), 0);
    for (size_t i = 0; i < r.size(); ++i) {
      width[i] = std::max(width[i], r[i].size());
    }
  }
  auto total = [&] {
    size_t t = 0;
    for (size_t w : width) t += w + 2;
    return t - 2;
  };
  constexpr size_t kMinColumn = 12;
  while (!width.empty() && total() > kTextWidth) {
    auto widest = std::max_element(width.begin(), width.end());
    if (*widest <= kMinColumn) break;
    *widest = std::max(kMinColumn, *widest - (total() - kTextWidth));
  }
  return width;
}

}  // namespace

std::string Table(const std::vector<std::vector<std::string>>& rows) {
  const std::vector<size_t> width = FitWidths(rows);
  std::string out;
  for (const auto& row : rows) {
    std::vector<std::vector<std::string>> cells;
    size_t height = 1;
    for (size_t i = 0; i < row.size(); ++i) {
      cells.push_back(WrapCell(row[i], width[i]));
      height = std::max(height, cells.back().size());
    }
    for (size_t k = 0; k < height; ++k) {
      std::string line;
      for (size_t i = 0; i < cells.size(); ++i) {
        std::string cell = k < cells[i].size() ? cells[i][k] : "";
        if (i + 1 < cells.size()) cell.resize(width[i] + 2, ' ');
        line += cell;
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line + "\n";
    }
  }
  return out;
}

std::string Wrap(const std::string& text, size_t width) {
  std::string out;
  for (const std::string& line : Split(text, '\n')) {
    const size_t indent = line.find_first_not_of(' ');
    if (line.size() <= width || indent == std::string::npos) {
      out += line + "\n";
      continue;
    }
    std::string prefix(indent, ' ');
    std::string rest = line.substr(indent);
    // "- item": continuation lines align under the item's text.
    const std::string hang(indent + 2, ' ');
    while (prefix.size() + rest.size() > width) {
      const size_t avail = width - std::min(width - 1, prefix.size());
      // A word longer than the line (a file path in a source) breaks after
      // its last '/' that fits; without one it stays whole.
      const size_t first = std::min(rest.find(' '), rest.size());
      if (first > avail) {
        const size_t slash = rest.rfind('/', avail - 1);
        if (slash != std::string::npos && slash > 0) {
          out += prefix + rest.substr(0, slash + 1) + "\n";
          rest = rest.substr(slash + 1);
          prefix = hang;
          continue;
        }
      }
      // The last space that fits. A number keeps its unit ("38.6 GB").
      size_t at = rest.rfind(' ', width - prefix.size());
      while (at != std::string::npos && at > 0 &&
             std::isdigit(static_cast<unsigned char>(rest[at - 1]))) {
        at = rest.rfind(' ', at - 1);
      }
      if (at == std::string::npos || at == 0) at = rest.find(' ');
      if (at == std::string::npos) break;
      std::string piece = rest.substr(0, at);
      while (!piece.empty() && piece.back() == ' ') piece.pop_back();
      out += prefix + piece + "\n";
      rest = std::string(Trim(rest.substr(at)));
      prefix = hang;
    }
    out += prefix + rest + "\n";
  }
  // Split gives one more piece than there are newlines.
  if (!out.empty()) out.pop_back();
  return out;
}

namespace {

// One --help example line ("  scalemodel train --model ...") over
// kTextWidth, broken before options with " \\" continuations.
std::string WrapExample(const std::string& line) {
  const size_t indent = line.find_first_not_of(' ');
  const std::string hang(indent + 4, ' ');
  std::string out;
  std::string current;
  for (const std::string& word : Split(line.substr(indent), ' ')) {
    const std::string& prefix = out.empty() ? std::string(indent, ' ') : hang;
    if (!current.empty() &&
        prefix.size() + current.size() + 1 + word.size() + 2 > kTextWidth) {
      // An option moves to the next line with its value.
      const size_t last = current.rfind(' ');
      std::string carry;
      if (last != std::string::npos &&
          current.compare(last + 1, 2, "--") == 0 &&
          word.compare(0, 1, "-") != 0) {
        carry = current.substr(last + 1);
        current.resize(last);
      }
      out += prefix + current + " \\\n";
      current = carry;
    }
    current += (current.empty() ? "" : " ") + word;
  }
  return out + (out.empty() ? std::string(indent, ' ') : hang) + current;
}

}  // namespace

std::string WrapHelp(const std::string& help) {
  std::string out;
  for (const std::string& line : Split(help, '\n')) {
    const size_t indent = line.find_first_not_of(' ');
    if (line.size() <= kTextWidth || indent == std::string::npos) {
      out += line + "\n";
    } else if (line.compare(indent, 11, "scalemodel ") == 0 && indent > 0) {
      out += WrapExample(line) + "\n";
    } else if (line.compare(indent, 1, "-") == 0) {
      // "  --name TEXT      Description": continuation under the
      // description.
      const size_t gap = line.find("  ", indent);
      const size_t desc = gap == std::string::npos
                              ? indent + 4
                              : line.find_first_not_of(' ', gap);
      const std::string wrapped = Wrap(line.substr(desc), kTextWidth - desc);
      std::string hung;
      for (const std::string& l : Split(wrapped, '\n')) {
        hung += hung.empty()
                    ? line.substr(0, desc) + l
                    : "\n" + std::string(desc, ' ') + std::string(Trim(l));
      }
      out += hung + "\n";
    } else {
      out += Wrap(line) + "\n";
    }
  }
  if (!out.empty()) out.pop_back();
  return out;
}

std::string CsvNumber(double v) {
  if (std::isfinite(v) && std::floor(v) == v && std::fabs(v) < 9.0e15) {
    return fmt::format("{:.0f}", v);
  }
  return fmt::format("{}", v);
}

std::string Csv(const std::vector<std::vector<std::string>>& rows) {
  std::string out;
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      if (i > 0) out += ',';
      const std::string& f = row[i];
      if (f.find_first_of(",\"\n") == std::string::npos) {
        out += f;
        continue;
      }
      out += '"';
      for (char c : f) {
        if (c == '"') out += '"';
        out += c;
      }
      out += '"';
    }
    out += "\n";
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
