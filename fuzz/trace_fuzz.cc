// Serve trace files (`serve --trace-file F`, CSV or JSONL rows of arrival_s,
// prompt_tokens, output_tokens): the input is written to a temporary file
// and run through the whole command in-process (RunCli), so the reader and
// the continuous-batching simulation both see it. Exit code 1 (an internal
// error) or an exception is a finding; 0 and 2 are fine.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "fuzz_common.h"
#include "run.h"

using scalemodel::fuzz::AsText;
using scalemodel::fuzz::Fail;

namespace {

std::string TracePath() {
  char path[] = "/tmp/scalemodel_trace_fuzz_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) std::abort();
  close(fd);
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;  // a few hundred requests at most
  static const std::string path = TracePath();
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << AsText(data, size);
  }
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
