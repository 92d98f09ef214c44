// HTTP bodies of `scalemodel ui`'s API (POST /api/<command>, server.h): the
// input's first line is the command (the URL's last segment), the rest the
// request body. Each goes through what the server runs for it:
// ApiRequestArgs (the JSON parse, config.json's depth limit, the options
// mapped to arguments, an uploaded config.json written by
// WriteUploadedConfig to a scratch folder), then the command in-process
// (RunCli). Findings: an escaping exception; exit code 1 (the server's HTTP
// 500); arguments that name a file the server must not read or write
// (--catalog, --trace-file, --trace, a model path outside the scratch
// folder) or that lack --json; an answer of exit code 0 that is not one
// JSON object (the server sends it as application/json).
// Kept out, as in cli_fuzz (cli_caps.h): the `validate` command (the whole
// validation set, seconds a run) and lines that would run long (large
// --requests, simulated lengths, --max-chips, --threads, --top).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cli_caps.h"
#include "cli_warmup.h"
#include "fuzz_common.h"
#include "nlohmann/json.hpp"
#include "run.h"
#include "server.h"

using scalemodel::fuzz::AsText;
using scalemodel::fuzz::Fail;

namespace {

namespace fs = std::filesystem;

// One scratch folder per process for the uploaded configs (a crash leaves
// it beside the saved input).
const fs::path& ScratchDir() {
  static const fs::path dir = [] {
    char path[] = "/tmp/scalemodel_api_fuzz_XXXXXX";
    const char* made = mkdtemp(path);
    if (made == nullptr) Fail("mkdtemp", 0);
    return fs::path(made);
  }();
  return dir;
}

// The arguments break the API's contract (see the top of the file).
void CheckArgs(const std::vector<std::string>& args, const fs::path& dir) {
  if (args.empty() || args.back() != "--json") Fail("args without --json", 0);
  for (const std::string& a : args) {
    if (scalemodel::fuzz::Refused(a) || a == "--trace" ||
        a.rfind("--trace=", 0) == 0) {
      Fail("args name a file", 0);
    }
    if (a.rfind("--model=", 0) == 0 &&
        a.find_first_of("/\\") != std::string::npos &&
        a.rfind("--model=" + dir.string() + "/", 0) != 0) {
      Fail("args name a model path", 0);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  scalemodel::fuzz::WarmUpCli();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  const std::string text(AsText(data, size));
  const size_t nl = text.find('\n');
  const std::string command = text.substr(0, nl);
  const std::string body = nl == std::string::npos ? "" : text.substr(nl + 1);
  if (command == "validate") return 0;
  const fs::path dir = ScratchDir() / "r";
  auto args = scalemodel::ui::ApiRequestArgs(
      command, body, [&](const nlohmann::json& config) {
        return scalemodel::ui::WriteUploadedConfig(config, dir);
      });
  std::error_code ec;
  if (!args) {  // HTTP 400 or 404 with the sentence
    fs::remove_all(dir, ec);
    return 0;
  }
  CheckArgs(*args, dir);
  if (scalemodel::fuzz::TooLong(*args)) {
    fs::remove_all(dir, ec);
    return 0;
  }
  std::ostringstream out, err;
  const int rc = scalemodel::cli::RunCli(*args, out, err);
  fs::remove_all(dir, ec);
  if (rc != 0 && rc != 2) {
    std::fprintf(stderr, "%s", err.str().c_str());
    Fail("RunCli exit code (HTTP 500)", rc);
  }
  if (rc == 0) {
    const nlohmann::json answer =
        nlohmann::json::parse(out.str(), nullptr, /*allow_exceptions=*/false);
    if (!answer.is_object()) Fail("answer is not one JSON object", 0);
  }
  return 0;
}
