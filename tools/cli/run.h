// The scalemodel command line as a function, for the executable (entry.cc)
// and for callers in the same process (the Python module, python/).
#ifndef SCALEMODEL_TOOLS_CLI_RUN_H_
#define SCALEMODEL_TOOLS_CLI_RUN_H_

#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace scalemodel::cli {

// What a caller in the same process can ask of a running command.
struct RunHooks {
  // Polled from the calling thread about every 100 ms during long searches
  // (plan train); once it returns true the search stops and the command
  // fails with "interrupted" (exit code 2). Empty: never interrupted.
  std::function<bool()> interrupted;
};

// Runs one scalemodel command line. `args` are the arguments after the
// program name ({"train", "--model", "llama3-8b", ..., "--json"}). The
// report (text or --json) goes to `out` and error sentences to `err`;
// nothing else is written to the process's stdout (plan train's progress
// line, after 2 s, goes to its stderr) and nothing exits.
// Returns the exit code: 0 success, 2 bad input or usage, 1 internal error.
// Calls on different threads are independent.
int RunCli(const std::vector<std::string>& args, std::ostream& out,
           std::ostream& err, const RunHooks& hooks = {});

}  // namespace scalemodel::cli

#endif  // SCALEMODEL_TOOLS_CLI_RUN_H_
