// The ui's API (server.h): a JSON object of options to a command line.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "scalemodel/base/strings.h"
#include "scalemodel/ingest/hf_config.h"
#include "server.h"

namespace scalemodel::ui {
namespace {

// One API command: its words on the command line and the name of its
// positional argument ("" for none).
struct ApiCommand {
  std::string name;
  std::vector<std::string> words;
  std::string positional;
};

const std::vector<ApiCommand>& Commands() {
  static const std::vector<ApiCommand> kCommands = {
      {"chips", {"chips"}, ""},       {"chip", {"chip"}, "name"},
      {"systems", {"systems"}, ""},   {"system", {"system"}, "name"},
      {"roofline", {"roofline"}, ""}, {"collective", {"collective"}, "kind"},
      {"models", {"models"}, ""},     {"model", {"model"}, "name"},
      {"shard", {"shard"}, "spec"},   {"matmul", {"matmul"}, "spec"},
      {"train", {"train"}, ""},       {"plan-train", {"plan", "train"}, ""},
      {"serve", {"serve"}, ""},       {"plan-serve", {"plan", "serve"}, ""},
      {"validate", {"validate"}, ""},
  };
  return kCommands;
}

// Options the API refuses: they read or write files (catalog, trace-file,
// trace) or would change what the answer is (json, help, version).
const std::vector<std::pair<std::string, std::string>>& RefusedKeys() {
  static const std::vector<std::pair<std::string, std::string>> kRefused = {
      {"catalog",
       "names a directory to read; the ui answers from the "
       "catalog it was started with (scalemodel --catalog DIR ui)"},
      {"trace-file", "names a file to read; the ui reads no files"},
      {"trace",
       "names a file to write; the ui writes no files (`scalemodel train` or "
       "`serve ... --trace FILE` writes the trace)"},
      {"json", "is implied: the API always answers with the --json report"},
      {"help", "is not an API option; see `scalemodel COMMAND --help`"},
      {"help-all", "is not an API option; see `scalemodel --help`"},
      {"version", "is not an API option"},
  };
  return kRefused;
}

// "chips, chip, ..., validate".
std::string CommandList() {
  std::string list;
  for (const ApiCommand& c : Commands()) {
    list += (list.empty() ? "" : ", ") + c.name;
  }
  return list;
}

bool ValidKey(const std::string& key) {
  if (key.empty() || key.size() > 64 || key[0] < 'a' || key[0] > 'z') {
    return false;
  }
  return std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
  });
}

// One JSON scalar as the CLI reads it.
Result<std::string> ScalarText(const std::string& key,
                               const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer() || v.is_number_unsigned() || v.is_number_float()) {
    return v.dump();
  }
  return InvalidArgument("expected a string, a number or a list of them, got " +
                             std::string(v.type_name()),
                         key);
}

// The value of `key` as the CLI reads it: lists joined by commas.
Result<std::string> ValueText(const std::string& key, const nlohmann::json& v) {
  if (!v.is_array()) return ScalarText(key, v);
  std::string joined;
  for (const nlohmann::json& item : v) {
    auto text = ScalarText(key, item);
    if (!text) return text;
    if (!joined.empty()) joined += ",";
    joined += *text;
  }
  return joined;
}

// A model given by name: a catalog id, never a path.
Result<std::string> ModelValue(const std::string& key, const nlohmann::json& v,
                               const ConfigWriter& write_config) {
  if (v.is_object()) return write_config(v);
  auto text = ScalarText(key, v);
  if (!text) return text;
  if (text->find_first_of("/\\") != std::string::npos ||
      (text->size() > 5 && text->ends_with(".json"))) {
    return InvalidArgument(
        "expected a catalog model id, got the path '" + *text +
            "'; the ui reads no files: upload the config.json as a JSON "
            "object instead",
        key);
  }
  return text;
}

// One "key": value of the body as arguments appended to `args`.
Result<bool> AppendOption(const ApiCommand& c, const std::string& raw_key,
                          const nlohmann::json& v,
                          const ConfigWriter& write_config,
                          std::vector<std::string>& args,
                          std::string& positional) {
  if (!ValidKey(raw_key)) {
    return InvalidArgument(
        "expected an option name without dashes such as \"batch-tokens\", "
        "got '" +
            raw_key + "'",
        "request body");
  }
  std::string key = raw_key;
  std::replace(key.begin(), key.end(), '_', '-');
  for (const auto& [refused, why] : RefusedKeys()) {
    if (key == refused) return InvalidArgument("this option " + why, key);
  }
  if (v.is_null() || (v.is_boolean() && !v.get<bool>())) return true;
  const bool is_model = key == "model" || (c.name == "model" && key == "name");
  if (v.is_object() && !is_model) {
    return InvalidArgument(
        "expected a string, a number or a list, got an "
        "object (only the model may be an uploaded "
        "config.json)",
        key);
  }
  if (v.is_boolean()) {
    if (key == c.positional) {
      return InvalidArgument("expected a value, got true", key);
    }
    args.push_back("--" + key);
    return true;
  }
  auto text = is_model ? ModelValue(key, v, write_config) : ValueText(key, v);
  if (!text) return tl::unexpected(text.error());
  if (key == c.positional) {
    if (!text->empty() && (*text)[0] == '-') {
      return InvalidArgument("expected a value, got '" + *text + "'", key);
    }
    positional = *text;
  } else {
    args.push_back("--" + key + "=" + *text);
  }
  return true;
}

}  // namespace

const std::vector<std::string>& ApiCommands() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names;
    for (const ApiCommand& c : Commands()) names.push_back(c.name);
    return names;
  }();
  return kNames;
}

Result<std::vector<std::string>> ApiArgs(const std::string& command,
                                         const nlohmann::json& body,
                                         const ConfigWriter& write_config) {
  auto c = std::find_if(Commands().begin(), Commands().end(),
                        [&](const ApiCommand& a) { return a.name == command; });
  if (c == Commands().end()) {
    return NotFound("unknown command '" + command + "'" +
                        DidYouMean(command, ApiCommands()) + "; the API has " +
                        CommandList(),
                    "/api/" + command);
  }
  if (!body.is_object()) {
    return InvalidArgument("expected a JSON object of options, got " +
                               std::string(body.type_name()),
                           "request body");
  }
  std::vector<std::string> args = c->words;
  std::string positional;
  for (const auto& [key, value] : body.items()) {
    auto ok = AppendOption(*c, key, value, write_config, args, positional);
    if (!ok) return tl::unexpected(ok.error());
  }
  if (!positional.empty()) args.push_back(positional);
  args.emplace_back("--json");
  return args;
}

// The uploaded config under `dir`/<model id>/config.json (the id names the
// model in the report, as `scalemodel model DIR/config.json` does).
Result<std::string> WriteUploadedConfig(const nlohmann::json& config,
                                        const std::filesystem::path& dir) {
  std::string name = "uploaded";
  if (config.contains("model_type") && config["model_type"].is_string()) {
    name = config["model_type"].get<std::string>();
  }
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' &&
        ch != '.') {
      ch = '_';
    }
  }
  if (name.empty() || name[0] == '.') name = "uploaded";
  std::error_code ec;
  const std::filesystem::path folder = dir / name;
  std::filesystem::create_directories(folder, ec);
  const std::filesystem::path file = folder / "config.json";
  std::ofstream out(file);
  out << config.dump();
  if (ec || !out) {
    return IoError(
        "cannot write the uploaded config.json to the server's "
        "private folder",
        "model");
  }
  return file.string();
}

Result<std::vector<std::string>> ApiRequestArgs(
    const std::string& command, const std::string& body_text,
    const ConfigWriter& write_config) {
  nlohmann::json body = nlohmann::json::object();
  if (!body_text.empty()) {
    body =
        nlohmann::json::parse(body_text, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded()) {
      return InvalidArgument(
          "expected a JSON object of options, got malformed JSON ('" +
              Excerpt(body_text) + "')",
          "request body");
    }
    // config.json's depth limit: an uploaded config nested deeper would
    // overflow the stack when written out (nlohmann's dump recurses).
    if (auto ok =
            ingest::CheckJsonText(body_text, "request body", "a request body");
        !ok) {
      return tl::unexpected(ok.error());
    }
  }
  return ApiArgs(command, body, write_config);
}

}  // namespace scalemodel::ui
