// `scalemodel ui`: registers the command (ui_command.h) that starts the
// server (server.h) and serves until the process is stopped.
#include "ui_command.h"

#include <unistd.h>  // chdir

#include <cstdlib>  // mkdtemp (POSIX)
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "scalemodel/units/parse.h"
#include "server.h"

namespace scalemodel::ui {
namespace {

struct UiOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string time_limit = "120s";
};

// The options as the server takes them; the catalog directory made
// absolute, since the server then leaves the working directory.
Result<ServerOptions> ServerOptionsFrom(const UiOptions& o,
                                        const cli::Globals& globals) {
  ServerOptions s;
  s.host = o.host;
  if (o.port < 0 || o.port > 65535) {
    return InvalidArgument(
        "expected a port in [0, 65535] (0: any free one), "
        "got " +
            std::to_string(o.port),
        "--port");
  }
  s.port = o.port;
  auto limit = cli::ParseOption<units::Seconds>(
      "--time-limit", o.time_limit,
      [](const std::string& x) { return units::ParseDuration(x); });
  if (!limit) return tl::unexpected(limit.error());
  if (!(limit->si() > 0)) {
    return InvalidArgument(
        "expected a time limit > 0 such as 120s, got '" + o.time_limit + "'",
        "--time-limit");
  }
  s.time_limit_s = limit->si();
  if (!globals.catalog_dir.empty()) {
    std::error_code ec;
    s.catalog_dir = std::filesystem::absolute(globals.catalog_dir, ec).string();
  }
  return s;
}

// Leaves the working directory for an empty private one, so that a model
// name can never reach a file of the user's (the API refuses paths too).
Result<bool> LeaveWorkingDirectory() {
  std::string templ =
      (std::filesystem::temp_directory_path() / "scalemodel-ui-cwd-XXXXXX")
          .string();
  if (mkdtemp(templ.data()) == nullptr || chdir(templ.c_str()) != 0) {
    return IoError("cannot create an empty private working folder under " +
                       std::filesystem::temp_directory_path().string(),
                   "ui");
  }
  return true;
}

Result<cli::Output> Serve(const UiOptions& o, const cli::Globals& globals) {
  auto options = ServerOptionsFrom(o, globals);
  if (!options) return tl::unexpected(options.error());
  Server server(*options);
  std::string error;
  if (!server.Bind(error)) return InvalidArgument(error);
  auto left = LeaveWorkingDirectory();
  if (!left) return tl::unexpected(left.error());
  const std::string host =
      o.host.find(':') != std::string::npos ? "[" + o.host + "]" : o.host;
  std::cout << "scalemodel ui: http://" << host << ":" << server.port()
            << "/ (Ctrl-C stops it)" << std::endl;
  if (o.host != "127.0.0.1" && o.host != "localhost" && o.host != "::1") {
    std::cerr << "warning: --host " << o.host
              << " is not loopback: anyone who can reach it can run "
                 "commands on this machine\n";
  }
  server.Listen();
  return cli::Output{};
}

cli::Command AddUiCommand(CLI::App& app, const cli::Globals& globals) {
  cli::Command c;
  c.app = app.add_subcommand(
      "ui",
      "Serve the page (rooflines, memory, step breakdowns, plan search, "
      "serving frontier, collectives) and its JSON API: POST "
      "/api/COMMAND with the command's options as a JSON object answers "
      "the --json report (docs/ui.md).");
  // In the footer, not the description: `scalemodel --help` shows
  // descriptions, and the help-examples test runs every example it finds
  // there (this one would serve until stopped).
  c.app->footer(
      "Examples (each serves until Ctrl-C):\n"
      "  scalemodel ui\n"
      "  scalemodel ui --port 0\n"
      "  scalemodel ui --host 0.0.0.0 --port 8080 --time-limit 30s");
  auto o = std::make_shared<UiOptions>();
  c.app->add_option("--port", o->port, "TCP port; 0: any free one (printed)")
      ->capture_default_str();
  c.app
      ->add_option("--host", o->host,
                   "Address to listen on; loopback unless you say otherwise")
      ->capture_default_str();
  c.app
      ->add_option("--time-limit", o->time_limit,
                   "Longest an API request may run (then HTTP 503)")
      ->capture_default_str();
  c.action = [o, &globals](const catalog::Catalog&) -> Result<cli::Output> {
    return Serve(*o, globals);
  };
  return c;
}

}  // namespace

void RegisterUiCommand() { cli::AddExtraCommand(AddUiCommand); }

}  // namespace scalemodel::ui
