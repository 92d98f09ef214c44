// The warm-up shared by the fuzzers that run whole command lines (cli_fuzz,
// trace_fuzz): one `serve` line before the first input, so the built-in
// catalog and the validation set behind serve's accuracy line are loaded once
// per process, as the CLI caches them, and not charged to the first input.
#ifndef SCALEMODEL_FUZZ_CLI_WARMUP_H_
#define SCALEMODEL_FUZZ_CLI_WARMUP_H_

#include <sstream>

#include "run.h"

namespace scalemodel::fuzz {

inline void WarmUpCli() {
  std::ostringstream out, err;
  scalemodel::cli::RunCli({"serve", "--model", "llama3-8b", "--system",
                           "h100:8", "--plan", "tp=8", "--json"},
                          out, err);
}

}  // namespace scalemodel::fuzz

#endif  // SCALEMODEL_FUZZ_CLI_WARMUP_H_
