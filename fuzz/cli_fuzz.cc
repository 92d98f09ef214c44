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
//   --output-dist (and --dataset) must be plain numbers up to kMaxSimLength, or
//   beyond the 2^30 tokens the parsers accept (so their errors stay reachable),
//   or not numbers at all. --max-chips (plan serve's search size) is capped at
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

#include "cli_caps.h"
#include "cli_warmup.h"
#include "fuzz_common.h"
#include "run.h"

using scalemodel::fuzz::AsText;
using scalemodel::fuzz::Fail;
using scalemodel::fuzz::Fields;

namespace {

using scalemodel::fuzz::Refused;
using scalemodel::fuzz::TooLong;

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
