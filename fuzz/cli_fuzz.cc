// Whole command lines through RunCli (tools/cli/run.h), in-process: the
// input's lines are the arguments after the program name, so the seed corpus
// holds real `train`, `serve`, `plan train`, `plan serve`, `roofline`,
// `collective`, `shard`, `matmul` and `model` lines whose values the fuzzer
// changes. Exit code 1 (an internal error) or an escaping exception is a
// finding; 0 and 2 are fine. With SCALEMODEL_FUZZ_STRICT=1 in the
// environment, "nan" or "inf" in the JSON output is a finding too.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "fuzz_common.h"
#include "run.h"

using scalemodel::fuzz::AsText;
using scalemodel::fuzz::Fail;
using scalemodel::fuzz::Fields;

namespace {

// Arguments that would read or write files the fuzzer does not control, or
// print the whole help text (slow, and not input handling).
bool Refused(const std::string& a) {
  return a == "--catalog" || a == "--trace-file" || a == "validate" ||
         a.rfind("--catalog=", 0) == 0 || a.rfind("--trace-file=", 0) == 0;
}

bool Strict() {
  const char* s = std::getenv("SCALEMODEL_FUZZ_STRICT");
  return s != nullptr && std::string(s) == "1";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 1024) return 0;
  std::vector<std::string> args = Fields(AsText(data, size), 40);
  if (args.empty() || args.size() >= 40) return 0;
  for (const std::string& a : args) {
    if (Refused(a)) return 0;
  }
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
