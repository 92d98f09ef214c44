// Serve trace files (`serve --trace-file`, CSV or JSONL rows of arrival_s,
// prompt_tokens, output_tokens): the input is written to a temporary file
// and read by the command's own reader (ReadTrace, trace_file.h), whose
// accepted rows must keep its contract (arrival_s finite in [0, 1e9], whole
// lengths from 1 to 2^30). Traces whose simulation is short (at most
// kMaxSimulatedTokens prompt plus output tokens in all) then run through
// the whole command in-process (RunCli), so the continuous-batching
// simulation sees them too: exit code 1 (an internal error) or an exception
// is a finding; 0 and 2 are fine. The simulation takes about one step per
// output token (about 4 us a token in the sanitizer build), so a trace of
// 300 requests of 2^20 tokens (a few KB) would take minutes; the reader
// still sees every input. The built-in catalog and the validation set behind
// serve's accuracy line are loaded once per process (LLVMFuzzerInitialize).
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "cli_warmup.h"
#include "fuzz_common.h"
#include "run.h"
#include "trace_file.h"

using scalemodel::fuzz::AsText;
using scalemodel::fuzz::Fail;

namespace {

constexpr double kMaxSimulatedTokens = 1 << 14;

// The scratch file each input is written to, one per process, removed when
// the run ends normally (a crash leaves it beside the saved input).
std::string TracePath() {
  char path[] = "/tmp/scalemodel_trace_fuzz_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) std::abort();
  close(fd);
  return path;
}

const std::string& ScratchPath() {
  static const std::string path = TracePath();
  static const bool registered =
      std::atexit([] { std::remove(path.c_str()); }) == 0;
  (void)registered;
  return path;
}

// The reader's contract on one accepted row; its total tokens.
double CheckRow(const scalemodel::estimate::TraceRequest& r) {
  if (!(r.arrival_s >= 0 && r.arrival_s <= 1e9)) Fail("arrival_s", r.arrival_s);
  for (double n : {r.prompt_tokens, r.output_tokens}) {
    if (!(n >= 1 && n <= (1 << 30) && n == std::floor(n))) Fail("length", n);
  }
  return r.prompt_tokens + r.output_tokens;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  scalemodel::fuzz::WarmUpCli();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;  // a few hundred requests at most
  const std::string& path = ScratchPath();
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << AsText(data, size);
  }
  auto trace = scalemodel::cli::ReadTrace(path);
  if (!trace) return 0;  // the command would print the same sentence
  if (trace->empty()) Fail("ReadTrace accepted no rows", 0);
  double tokens = 0;
  for (const auto& r : *trace) tokens += CheckRow(r);
  if (tokens > kMaxSimulatedTokens) return 0;
  std::ostringstream out, err;
  int rc = scalemodel::cli::RunCli(
      {"serve", "--model", "llama3-8b", "--system", "h100:8", "--plan", "tp=8",
       "--trace-file", path, "--json"},
      out, err);
  if (rc != 0 && rc != 2) {
    std::fprintf(stderr, "%s", err.str().c_str());
    Fail("serve --trace-file exit code", rc);
  }
  return 0;
}
