// The scalemodel executable: the command line (RunCli, main.cc) on the
// process's stdout and stderr, with the `ui` command (tools/ui).
#include <iostream>
#include <string>
#include <vector>

#include "run.h"
#include "ui_command.h"

int main(int argc, char** argv) {
  scalemodel::ui::RegisterUiCommand();
  std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
  return scalemodel::cli::RunCli(args, std::cout, std::cerr);
}
