// `scalemodel ui` (docs/ui.md), a command of the executable only: the
// Python module's RunCli does not serve pages.
#ifndef SCALEMODEL_TOOLS_UI_UI_COMMAND_H_
#define SCALEMODEL_TOOLS_UI_UI_COMMAND_H_

namespace scalemodel::ui {

// Adds `ui` to the commands of every later RunCli (cli::AddExtraCommand).
void RegisterUiCommand();

}  // namespace scalemodel::ui

#endif  // SCALEMODEL_TOOLS_UI_UI_COMMAND_H_
