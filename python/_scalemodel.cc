// The scalemodel command line inside Python: one function, run(args), that
// runs a command (tools/cli/run.h) in this process and returns its exit code,
// report and error text. The package (scalemodel/) builds the arguments from
// keyword arguments and reads the --json report, so every answer is the
// CLI's own.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <exception>
#include <sstream>
#include <string>
#include <vector>

#include "run.h"

namespace py = pybind11;

namespace {

// Runs `args` (the arguments after the program name) with the GIL released,
// so other Python threads run meanwhile. The search polls for Ctrl-C
// (PyErr_CheckSignals, main thread only) about every 100 ms; a signal whose
// handler raises (KeyboardInterrupt) stops it and is raised here. Returns
// (exit code, stdout bytes, stderr bytes).
py::tuple Run(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  int code = 1;
  bool raised = false;
  {
    py::gil_scoped_release release;
    scalemodel::cli::RunHooks hooks;
    hooks.interrupted = [&raised] {
      if (!raised) {
        py::gil_scoped_acquire gil;
        raised = PyErr_CheckSignals() != 0;
      }
      return raised;
    };
    try {
      code = scalemodel::cli::RunCli(args, out, err, hooks);
    } catch (const std::exception& e) {
      err << "internal error: " << e.what() << "\n";
      code = 1;
    } catch (...) {
      err << "internal error: unknown exception\n";
      code = 1;
    }
  }
  // The handler's exception is still pending on this thread.
  if (raised) throw py::error_already_set();
  return py::make_tuple(code, py::bytes(out.str()), py::bytes(err.str()));
}

}  // namespace

PYBIND11_MODULE(_scalemodel, m) {
  m.doc() =
      "The scalemodel command line, run in this process (tools/cli/run.h). "
      "Use the scalemodel package, not this module.";
  m.def("run", &Run, py::arg("args"),
        "run(args) -> (exit_code, stdout: bytes, stderr: bytes): one "
        "scalemodel command line, without the program name.");
}
