// The caps that keep whole command lines short enough to fuzz, shared by
// cli_fuzz (a line of arguments) and api_fuzz (an HTTP body the ui turns
// into one); fuzz/cli_fuzz.cc's header and docs/hardening.md ("The
// fuzzers") say what they keep out and why.
#ifndef SCALEMODEL_FUZZ_CLI_CAPS_H_
#define SCALEMODEL_FUZZ_CLI_CAPS_H_

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace scalemodel::fuzz {

inline constexpr double kMaxRequests = 16;
inline constexpr double kMaxSimLength = 2048;
inline constexpr double kMaxAcceptedLength = 1 << 30;  // larger ones are errors
inline constexpr double kMaxChips = 16;
inline constexpr double kMaxTop = 64;       // plans a search lists
inline constexpr double kMaxPlans = 10000;  // larger ones are errors
inline constexpr double kMaxThreads = 2;

// Arguments that would read files the fuzzer does not control, or run the
// whole validation set.
inline bool Refused(const std::string& a) {
  return a == "--catalog" || a == "--trace-file" || a == "validate" ||
         a.rfind("--catalog=", 0) == 0 || a.rfind("--trace-file=", 0) == 0;
}

// The value of `a` as a plain number (strtod reads all of it), or nothing.
inline bool PlainNumber(const std::string& a, double* v) {
  if (a.empty()) return false;
  char* end = nullptr;
  *v = std::strtod(a.c_str(), &end);
  return *end == '\0';
}

// A length the simulation would run on for long: a plain number between
// kMaxSimLength and what the parsers accept, or something number-like the
// harness cannot read ("8Ki").
inline bool LongLength(const std::string& a) {
  double v = 0;
  if (PlainNumber(a, &v)) {
    return std::fabs(v) > kMaxSimLength && std::fabs(v) <= kMaxAcceptedLength;
  }
  return !a.empty() && (std::isdigit(static_cast<unsigned char>(a[0])) ||
                        a[0] == '.' || a[0] == '+');
}

// A numeric value above `cap` (values the command refuses are run).
inline bool Above(const std::string& a, double cap) {
  double v = 0;
  return PlainNumber(a, &v) && v > cap;
}

// "--flag value" or "--flag=value": the value of `flag` at args[i], if any.
inline bool ValueOf(const std::vector<std::string>& args, size_t i,
                    const std::string& flag, std::string* value) {
  const std::string& a = args[i];
  if (a == flag && i + 1 < args.size()) {
    *value = args[i + 1];
    return true;
  }
  if (a.rfind(flag + "=", 0) == 0) {
    *value = a.substr(flag.size() + 1);
    return true;
  }
  return false;
}

inline bool Has(const std::vector<std::string>& args, const std::string& flag) {
  std::string v;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == flag || ValueOf(args, i, flag, &v)) return true;
  }
  return false;
}

// True when the line would run too long (fuzz/cli_fuzz.cc's header).
inline bool TooLong(const std::vector<std::string>& args) {
  const bool sim = Has(args, "--rate") || Has(args, "--concurrency");
  if (sim && !Has(args, "--requests")) return true;
  std::string v;
  for (size_t i = 0; i < args.size(); ++i) {
    if (ValueOf(args, i, "--requests", &v) && Above(v, kMaxRequests)) {
      return true;
    }
    if (ValueOf(args, i, "--max-chips", &v) && Above(v, kMaxChips)) {
      return true;
    }
    if (ValueOf(args, i, "--threads", &v) && Above(v, kMaxThreads)) {
      return true;
    }
    if (ValueOf(args, i, "--top", &v) && Above(v, kMaxTop) &&
        !Above(v, kMaxPlans)) {
      return true;
    }
    if (!sim) continue;
    for (const char* f : {"--prompt", "--output"}) {
      if (ValueOf(args, i, f, &v) && LongLength(v)) return true;
    }
    for (const char* f : {"--prompt-dist", "--output-dist", "--dataset"}) {
      if (!ValueOf(args, i, f, &v)) continue;
      std::stringstream parts(v);
      std::string p;
      std::getline(parts, p, ':');  // the distribution's name
      while (std::getline(parts, p, ':')) {
        if (LongLength(p)) return true;
      }
    }
  }
  return false;
}

}  // namespace scalemodel::fuzz

#endif  // SCALEMODEL_FUZZ_CLI_CAPS_H_
