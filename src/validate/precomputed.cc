// A validation report as JSON text, and the report computed at build time
// for the built-in catalog (validate.h: InstallPrecomputedValidation).
#include <mutex>
#include <optional>

#include "nlohmann/json.hpp"
#include "scalemodel/validate/validate.h"
#include "validate_internal.h"

namespace scalemodel::validate {
namespace {

using nlohmann::json;

// The fields of a case, in one place for writing and reading.
struct CaseField {
  const char* key;
  std::string ValidationCase::*text;
  double ValidationCase::*number;
};
const CaseField kCaseFields[] = {
    {"id", &ValidationCase::id, nullptr},
    {"group", &ValidationCase::group, nullptr},
    {"metric", &ValidationCase::metric, nullptr},
    {"predicted", nullptr, &ValidationCase::predicted},
    {"expected", nullptr, &ValidationCase::expected},
    {"rel_error", nullptr, &ValidationCase::rel_error},
    {"detail", &ValidationCase::detail, nullptr},
    {"source", &ValidationCase::source, nullptr},
    {"family", &ValidationCase::family, nullptr},
    {"chip", &ValidationCase::chip, nullptr},
    {"engine", &ValidationCase::engine, nullptr},
    {"metric_class", &ValidationCase::metric_class, nullptr},
};

struct Installed {
  std::mutex mu;
  bool set = false;
  uint64_t fingerprint = 0;
  std::string_view text;
};
Installed& TheInstalled() {
  // Never destroyed: `ui` threads may still ask while the process exits.
  static auto* installed = new Installed;
  return *installed;
}

}  // namespace

std::string ReportToJson(const ValidationReport& report) {
  json cases = json::array();
  for (const ValidationCase& c : report.cases) {
    json j = json::object();
    for (const CaseField& f : kCaseFields) {
      if (f.text != nullptr) {
        j[f.key] = c.*f.text;
      } else {
        j[f.key] = c.*f.number;
      }
    }
    j["dp_attention"] = c.dp_attention;
    cases.push_back(std::move(j));
  }
  return json{{"cases", cases}, {"skipped", report.skipped}}.dump();
}

Result<ValidationReport> ReportFromJson(std::string_view text) {
  const json doc = json::parse(text, nullptr, false);
  auto bad = [](const std::string& what) -> Result<ValidationReport> {
    return InvalidArgument("a precomputed validation report: " + what,
                           "validation");
  };
  if (doc.is_discarded() || !doc.is_object()) return bad("not a JSON object");
  const auto cases = doc.find("cases");
  const auto skipped = doc.find("skipped");
  if (cases == doc.end() || !cases->is_array() || skipped == doc.end() ||
      !skipped->is_array()) {
    return bad("expected arrays 'cases' and 'skipped'");
  }
  ValidationReport report;
  for (const json& j : *cases) {
    if (!j.is_object()) return bad("a case that is not an object");
    ValidationCase c;
    const auto dpa = j.find("dp_attention");
    if (dpa == j.end() || !dpa->is_boolean()) {
      return bad("a case without a boolean 'dp_attention'");
    }
    c.dp_attention = dpa->get<bool>();
    for (const CaseField& f : kCaseFields) {
      const auto v = j.find(f.key);
      if (v == j.end())
        return bad(std::string("a case without '") + f.key + "'");
      if (f.text != nullptr && v->is_string()) {
        c.*f.text = v->get<std::string>();
      } else if (f.number != nullptr && v->is_number()) {
        c.*f.number = v->get<double>();
      } else {
        return bad(std::string("a case whose '") + f.key +
                   "' has the wrong type");
      }
    }
    report.cases.push_back(std::move(c));
  }
  for (const json& s : *skipped) {
    if (!s.is_string()) return bad("a skipped row that is not a string");
    report.skipped.push_back(s.get<std::string>());
  }
  Summarize(report);
  return report;
}

void InstallPrecomputedValidation(uint64_t fingerprint,
                                  std::string_view report_json) {
  Installed& in = TheInstalled();
  std::lock_guard<std::mutex> lock(in.mu);
  in.set = true;
  in.fingerprint = fingerprint;
  in.text = report_json;
}

namespace internal {

std::optional<ValidationReport> PrecomputedReport(uint64_t fingerprint) {
  std::string_view text;
  {
    Installed& in = TheInstalled();
    std::lock_guard<std::mutex> lock(in.mu);
    if (!in.set || in.fingerprint != fingerprint) return std::nullopt;
    text = in.text;
  }
  auto report = ReportFromJson(text);
  if (!report) return std::nullopt;
  return std::move(*report);
}

}  // namespace internal
}  // namespace scalemodel::validate
