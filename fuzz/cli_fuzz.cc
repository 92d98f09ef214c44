// Whole command lines through RunCli (tools/cli/run.h), in-process: the
// input's lines are the arguments after the program name, so the seed corpus
// holds real `train`, `serve`, `plan train`, `plan serve`, `roofline`,
// `collective`, `shard`, `matmul` and `model` lines whose values the fuzzer
// changes. Exit code 1 (an internal error) or an escaping exception is a
// finding; 0 and 2 are fine. With SCALEMODEL_FUZZ_STRICT=1 in the
// environment, "nan" or "inf" in the JSON output is a finding too.
//
// What the harness keeps out, before running a line (docs/hardening.md,
// "The fuzzers"):
// - files it does not control: --catalog, --trace-file and `validate` (which
//   runs the whole validation set, seconds a run) are refused; the file that
//   --trace writes goes to a scratch path instead of the fuzzed one.
// - long runs of valid inputs. A line that simulates continuous batching
//   (--rate or --concurrency) takes about one step per output token of each
//   request, so it must give --requests of at most kMaxRequests (the default
//   is 1000), and --prompt, --output and the numbers in --prompt-dist and
//   --output-dist must be plain numbers up to kMaxSimLength, or beyond the
//   2^30 tokens the parsers accept (so their errors stay reachable), or not
//   numbers at all. --max-chips (plan serve's search size) is capped at
//   kMaxChips, --threads at 2 and --top at kMaxTop (plan train keeps 8 to
//   64 candidates a plan listed: 10,000 plans take seconds even
//   uninstrumented). Values of those flags that the command refuses
//   (negative, zero, not a number, --top above 10,000) are still run.
// The built-in catalog and the validation set behind the accuracy line are
// loaded once per process (LLVMFuzzerInitialize), as the CLI caches them.
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "cli_warmup.h"
#include "fuzz_common.h"
#include "run.h"

using scalemodel::fuzz::AsText;
using scalemodel::fuzz::Fail;
using scalemodel::fuzz::Fields;

namespace {

constexpr double kMaxRequests = 16;
constexpr double kMaxSimLength = 2048;
constexpr double kMaxAcceptedLength = 1 << 30;  // larger ones are errors
constexpr double kMaxChips = 16;
constexpr double kMaxTop = 64;       // plans a search lists
constexpr double kMaxPlans = 10000;  // larger ones are errors
constexpr double kMaxThreads = 2;

// Arguments that would read files the fuzzer does not control, or run the
// whole validation set.
bool Refused(const std::string& a) {
  return a == "--catalog" || a == "--trace-file" || a == "validate" ||
         a.rfind("--catalog=", 0) == 0 || a.rfind("--trace-file=", 0) == 0;
}

// The value of `a` as a plain number (strtod reads all of it), or nothing.
bool PlainNumber(const std::string& a, double* v) {
  if (a.empty()) return false;
  char* end = nullptr;
  *v = std::strtod(a.c_str(), &end);
  return *end == '\0';
}

// A length the simulation would run on for long: a plain number between
// kMaxSimLength and what the parsers accept, or something number-like the
// harness cannot read ("8Ki").
bool LongLength(const std::string& a) {
  double v = 0;
  if (PlainNumber(a, &v)) {
    return std::fabs(v) > kMaxSimLength && std::fabs(v) <= kMaxAcceptedLength;
  }
  return !a.empty() && (std::isdigit(static_cast<unsigned char>(a[0])) ||
                        a[0] == '.' || a[0] == '+');
}

// A numeric value above `cap` (values the command refuses are run).
bool Above(const std::string& a, double cap) {
  double v = 0;
  return PlainNumber(a, &v) && v > cap;
}

// "--flag value" or "--flag=value": the value of `flag` at args[i], if any.
bool ValueOf(const std::vector<std::string>& args, size_t i,
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

bool Has(const std::vector<std::string>& args, const std::string& flag) {
  std::string v;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == flag || ValueOf(args, i, flag, &v)) return true;
  }
  return false;
}

// True when the line would run too long (see the top of the file).
bool TooLong(const std::vector<std::string>& args) {
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
    for (const char* f : {"--prompt-dist", "--output-dist"}) {
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

// The scratch file that --trace writes instead of the fuzzed path (the
// writer's .gz choice kept).
std::string ScratchTrace(const std::string& fuzzed) {
  static const std::string base =
      "/tmp/scalemodel_cli_fuzz_" + std::to_string(getpid());
  const bool gz =
      fuzzed.size() >= 3 && fuzzed.compare(fuzzed.size() - 3, 3, ".gz") == 0;
  return base + (gz ? ".json.gz" : ".json");
}

void RedirectTrace(std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--trace" && i + 1 < args.size()) {
      args[i + 1] = ScratchTrace(args[i + 1]);
    } else if (args[i].rfind("--trace=", 0) == 0) {
      args[i] = "--trace=" + ScratchTrace(args[i].substr(8));
    }
  }
}

bool Strict() {
  const char* s = std::getenv("SCALEMODEL_FUZZ_STRICT");
  return s != nullptr && std::string(s) == "1";
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  scalemodel::fuzz::WarmUpCli();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 1024) return 0;
  std::vector<std::string> args = Fields(AsText(data, size), 40);
  if (args.empty() || args.size() >= 40) return 0;
  for (const std::string& a : args) {
    if (Refused(a)) return 0;
  }
  if (TooLong(args)) return 0;
  RedirectTrace(args);
  std::ostringstream out, err;
  int rc = scalemodel::cli::RunCli(args, out, err);
  if (rc != 0 && rc != 2) {
    std::fprintf(stderr, "%s", err.str().c_str());
    Fail("RunCli exit code", rc);
  }
  static const bool strict = Strict();
  if (strict && rc == 0) {
    const std::string o = out.str();
    for (const char* bad : {"nan", "inf,", "inf}", "inf\n"}) {
      if (o.find(bad) != std::string::npos) Fail(bad, 0);
    }
  }
  return 0;
}
