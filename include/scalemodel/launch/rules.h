// Launch-line validators: the checks each engine makes when it starts
// (argument parsers, config validators, environment asserts), read from the
// engine's own source at a named version and encoded here as rules. A
// validator parses the text a launch line is made of (environment lines,
// the command, its flags or key=value overrides) and checks it against
// what the engine knows besides the line: the model's shape and the
// cluster (chips, chips per host, GPU architecture).
//
// Every rule carries its id, one sentence of what the engine enforces and
// the engine source (repository file and line at the version's commit), so
// a failing line says which rule fails and where the engine enforces it.
//
// Example:
//   auto v = launch::ParseEngineVersion("megatron@core_v0.19");
//   auto bad = launch::ValidateLaunch(*v, text, ctx);
//   // bad[0].rule == "megatron.fsdp2-no-pp", bad[0].source == "..."
#ifndef SCALEMODEL_LAUNCH_RULES_H_
#define SCALEMODEL_LAUNCH_RULES_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "scalemodel/base/error.h"
#include "scalemodel/hw/system.h"
#include "scalemodel/model/transformer.h"

namespace scalemodel::launch {

enum class Engine { kMegatron, kMaxText, kTorchtitan, kVllm, kSglang, kTrtllm };

// One engine version the rules were read at. `name` is what the user types
// after '@'; `commit` the engine commit read; `era` a short note on the
// flag set (torchtitan: "toml" or "registry").
struct EngineVersion {
  Engine engine = Engine::kMegatron;
  std::string name;
  std::string commit;
  std::string date;  // commit date, YYYY-MM-DD
  std::string era;
};

// "megatron", "maxtext", "torchtitan", "vllm", "sglang", "trtllm".
std::string_view EngineId(Engine engine);
// The versions known for an engine, the default (current release line)
// first.
const std::vector<EngineVersion>& KnownVersions(Engine engine);
// "ENGINE" or "ENGINE@VERSION" (engine names as ParseTrainEngine /
// ParseServeEngine take them). Errors name the engine's known versions;
// where = "--emit".
Result<EngineVersion> ParseEngineVersion(std::string_view text);

// One rule an engine enforces at launch.
struct EngineRule {
  std::string id;      // "megatron.fsdp2-no-pp"
  std::string text;    // what the engine requires, one sentence
  std::string source;  // "NVIDIA/Megatron-LM core_v0.19.0 megatron/..:1001"
};
// Every rule encoded for this engine version (for docs and tests).
std::vector<EngineRule> RulesOf(const EngineVersion& version);

// A rule a launch line breaks: the rule and what was found.
struct RuleFailure {
  EngineRule rule;
  std::string
      found;  // "--use-torch-fsdp2 with --pipeline-model-parallel-size 8"
  // One sentence: rule id, what was found, the rule and its source.
  std::string Sentence() const;
};

// A launch text split into its parts: `export`/`unset` lines (env; unset
// variables map to "<unset>"), flags (`--name value...`; a switch maps to
// ""; the last of repeated flags wins), key=value overrides and the other
// words (command, script, positional model). A shell heredoc (`cat > F
// <<'EOF'` ... `EOF`, as the TensorRT-LLM lines write their YAML) is read
// as indented `key: value` lines into `keys` under dotted names
// (kv_cache_config.dtype); list items (`- x`) append to their key,
// space-separated; `heredoc_files` lists the files the heredocs write.
struct ParsedLaunch {
  std::map<std::string, std::string> env;
  std::map<std::string, std::string> flags;
  std::map<std::string, std::string> keys;
  std::vector<std::string> words;
  std::vector<std::string> heredoc_files;
  bool Has(const std::string& flag) const { return flags.count(flag) > 0; }
  // The flag's (or key's) value as an integer; `fallback` when absent or not
  // a number.
  long Int(const std::string& name, long fallback) const;
};
ParsedLaunch ParseLaunchText(std::string_view text);

// What the engine knows besides the line.
struct LaunchContext {
  model::ModelSpec model;
  int chips = 1;           // world size
  int chips_per_host = 8;  // GPUs per host (TPU: chips per slice)
  int slices = 1;          // TPU slices (GPU: hosts, for MaxText's dcn_*)
  bool gpu = true;
  // CUDA compute capability major (9 Hopper, 10 Blackwell); 0 on TPU.
  int cuda_arch = 9;
};
// The context of `model` on `system` (hosts from the NVLink domain, the
// CUDA architecture from the chip id).
LaunchContext ContextFor(const model::ModelSpec& model,
                         const hw::System& system);
// GPUs per host: the NVLink domain up to 8; larger domains (GB200 NVL72)
// are racks of 4-GPU compute trays.
int GpusPerHost(const hw::System& system);

// Every rule of `version` that `text` breaks; empty: the engine accepts it.
std::vector<RuleFailure> ValidateLaunch(const EngineVersion& version,
                                        std::string_view text,
                                        const LaunchContext& ctx);

}  // namespace scalemodel::launch

#endif  // SCALEMODEL_LAUNCH_RULES_H_
