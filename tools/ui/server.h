// `scalemodel ui`: one page and a JSON API over the command line.
//
// POST /api/<command> takes the command's options as one JSON object keyed
// by the option's name without dashes ({"model": "llama3-8b", "system":
// "h100:8x1", "batch-tokens": "1Mi"}) and answers exactly what
// `scalemodel <command> ... --json` prints, by running RunCli (run.h) in
// this process. A bad input is HTTP 400 with the CLI's sentence as
// {"error": ...}. The server reads no file: options that name one
// (--catalog, --trace-file, a config.json path) are refused, and a
// HuggingFace config is uploaded as a JSON object instead (docs/ui.md).
#ifndef SCALEMODEL_TOOLS_UI_SERVER_H_
#define SCALEMODEL_TOOLS_UI_SERVER_H_

#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "nlohmann/json.hpp"
#include "scalemodel/base/error.h"

namespace scalemodel::ui {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                  // 0: any free port
  size_t max_body_bytes = 1 << 20;  // larger bodies: HTTP 413
  double time_limit_s = 120;        // per request; then HTTP 503
  int max_running = 32;             // commands at once; more: HTTP 503
  std::string catalog_dir;          // the server's own --catalog
};

// Writes an uploaded HuggingFace config (a JSON object) to a private file
// and returns its path.
using ConfigWriter = std::function<Result<std::string>(const nlohmann::json&)>;

// The CLI arguments for POST /api/<command> with `body` (a JSON object):
// {"plan-train", {"model": "llama3-8b", "top": 5}} ->
// {"plan", "train", "--model=llama3-8b", "--top=5", "--json"}.
// Strings, numbers and lists (joined by commas) are values; true is a bare
// flag; false and null leave the option out; an object is only allowed for
// the model (an uploaded config.json, written by `write_config`). A
// command's positional argument ("name", "kind", "spec") is a key too.
Result<std::vector<std::string>> ApiArgs(const std::string& command,
                                         const nlohmann::json& body,
                                         const ConfigWriter& write_config);

// The CLI arguments for POST /api/<command> whose body is `body_text` (""
// is an empty object): the body parsed (malformed JSON and JSON nested
// deeper than config.json may be are errors at "request body"), then
// ApiArgs. Unknown commands are kNotFound (HTTP 404), the rest HTTP 400.
Result<std::vector<std::string>> ApiRequestArgs(
    const std::string& command, const std::string& body_text,
    const ConfigWriter& write_config);

// Writes an uploaded config under `dir`/<model id>/config.json (the id, from
// model_type, names the model in the report as `scalemodel model
// DIR/config.json` does) and returns the file's path: the server's
// ConfigWriter, with a folder of its own per request.
Result<std::string> WriteUploadedConfig(const nlohmann::json& config,
                                        const std::filesystem::path& dir);

// The API's command names (train, plan-train, ...).
const std::vector<std::string>& ApiCommands();

// One file of the built page (web/dist), embedded by cmake/embed_web.cmake.
struct Asset {
  std::string_view path;          // "/index.html", "/assets/index-x.js"
  std::string_view content_type;  // "text/html; charset=utf-8"
  std::string_view bytes;
};
// Empty when the binary was built without web/dist (docs/ui.md).
const std::vector<Asset>& BuiltAssets();

// The HTTP server. Listen blocks until Stop (from another thread).
class Server {
 public:
  explicit Server(ServerOptions options);
  // Asks the commands still running (those past the time limit) to stop
  // and waits for them, so that none outlives the server.
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds host:port (port 0: any free one); false with a sentence in
  // `error` when it cannot.
  bool Bind(std::string& error);
  int port() const;
  // Serves until Stop.
  void Listen();
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace scalemodel::ui

#endif  // SCALEMODEL_TOOLS_UI_SERVER_H_
