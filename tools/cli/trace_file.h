// The reader of `serve --trace-file` (serve_commands.cc), for the trace
// fuzzer (fuzz/trace_fuzz.cc), which reads every input with it and runs the
// whole command only on traces small enough to simulate quickly.
#ifndef SCALEMODEL_TOOLS_CLI_TRACE_FILE_H_
#define SCALEMODEL_TOOLS_CLI_TRACE_FILE_H_

#include <string>
#include <vector>

#include "scalemodel/base/error.h"
#include "scalemodel/estimate/batching.h"

namespace scalemodel::cli {

// A trace file: one request per line, CSV "arrival_s,prompt_tokens,
// output_tokens" (a first line naming the columns is skipped) or JSONL
// objects with those keys; blank lines and lines starting with '#' skipped.
// Each bad row is an error naming file:line; the rows returned have
// arrival_s in [0, 1e9] and whole lengths from 1 to 2^30.
Result<std::vector<estimate::TraceRequest>> ReadTrace(const std::string& path);

}  // namespace scalemodel::cli

#endif  // SCALEMODEL_TOOLS_CLI_TRACE_FILE_H_
