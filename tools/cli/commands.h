// The scalemodel command: thin front ends over the library. Each command
// parses its options, calls the library, and prints either a readable table
// or one JSON object (--json). Errors become one sentence on stderr and exit
// code 2 (bad input) or 1 (internal error).
#ifndef SCALEMODEL_TOOLS_CLI_COMMANDS_H_
#define SCALEMODEL_TOOLS_CLI_COMMANDS_H_

#include <functional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "scalemodel/base/error.h"
#include "scalemodel/catalog/catalog.h"
#include "scalemodel/estimate/batching.h"
#include "scalemodel/estimate/inference.h"
#include "scalemodel/estimate/training.h"
#include "scalemodel/ingest/hf_config.h"
#include "scalemodel/launch/launch.h"
#include "scalemodel/net/collective.h"
#include "scalemodel/report/json.h"
#include "scalemodel/timeline/timeline.h"
#include "scalemodel/units/format.h"

namespace scalemodel::cli {

// Shared by every command.
struct Globals {
  bool json = false;
  bool csv = false;
  std::string catalog_dir;
};

// What a command produced: the JSON document (always built, so text and
// JSON come from the same numbers) and the text rendering.
struct Output {
  report::Json json;
  std::string text;
  // --csv: the command's table as CSV (a header row, then one row per
  // item); empty when the command has no table.
  std::string csv;
  // Text that must reach the user as it is (a launch script, Markdown):
  // not wrapped at kTextWidth.
  bool verbatim = false;
};

// Text output for people is at most this many columns: Table fits its
// columns into it and Wrap breaks longer lines.
inline constexpr size_t kTextWidth = 100;

// Breaks every line longer than `width` at spaces, continuation lines
// indented two more than the line (a hanging indent; "- " items align
// under their text).
std::string Wrap(const std::string& text, size_t width = kTextWidth);

// --help text at kTextWidth: example command lines break with a shell
// continuation (" \\") so that they still paste whole; option lines hang
// under their description; other lines as Wrap.
std::string WrapHelp(const std::string& help);

// RFC 4180 CSV of `rows` (the first is the header): fields with a comma,
// quote or newline are quoted.
std::string Csv(const std::vector<std::vector<std::string>>& rows);
// A number for CSV: whole values as integers, others in the shortest form
// that reads back exactly (SI units, as in --json).
std::string CsvNumber(double v);

using Action = std::function<Result<Output>(const catalog::Catalog&)>;

// Registers one subcommand on `app`; `action` runs when it is selected.
struct Command {
  CLI::App* app = nullptr;
  Action action;
};

// Each Add* registers a command and its options.
Command AddChipsCommand(CLI::App& app);
Command AddChipCommand(CLI::App& app);
Command AddSystemsCommand(CLI::App& app);
Command AddSystemCommand(CLI::App& app);
Command AddRooflineCommand(CLI::App& app);
Command AddCollectiveCommand(CLI::App& app);
Command AddModelsCommand(CLI::App& app);
Command AddShardCommand(CLI::App& app);
Command AddTrainCommand(CLI::App& app);
Command AddPlanCommand(CLI::App& app);
Command AddServeCommand(CLI::App& app);
Command AddValidateCommand(CLI::App& app);
Command AddMatmulCommand(CLI::App& app);
Command AddModelCommand(CLI::App& app);
Command AddProfileCommand(CLI::App& app);

// A command that lives outside this library (the executable's `ui`,
// tools/ui): registered once before the first RunCli and added after the
// built-in ones. `globals` is filled by the parse before its action runs.
using CommandFactory = Command (*)(CLI::App& app, const Globals& globals);
void AddExtraCommand(CommandFactory factory);

// True once the in-process caller of RunCli (run.h) asked to stop, e.g. on
// Ctrl-C in Python; long searches take it as their cancel check.
bool Interrupted();

// Builds the {"schema_version", "inputs", ...results} document.
report::Json Document(const report::Json& inputs, const report::Json& results);

// Parses an option value with a units parser, prefixing the option name to
// the error: "--bytes: expected a size such as ...".
template <typename T, typename Parser>
Result<T> ParseOption(const std::string& option, const std::string& text,
                      Parser parse) {
  auto v = parse(text);
  if (!v) {
    return tl::unexpected(Error{v.error().code, v.error().message, option});
  }
  return *v;
}

// Caps on sizes no real system reaches (docs/units.md, Limits): beyond
// them counts stop fitting the estimator's integers or its results stop
// meaning anything, so they are refused with a sentence.
struct Cap {
  double value;
  const char* text;  // "2^24 (16777216)"
};
inline constexpr Cap kMaxChipsCap{16777216.0, "2^24 (16777216)"};
inline constexpr Cap kMaxBatchTokensCap{1099511627776.0,
                                        "2^40 (1099511627776)"};
inline constexpr Cap kMaxSequencesCap{16777216.0, "2^24 (16777216)"};
inline constexpr Cap kMaxSeqCap{1073741824.0, "2^30 (1073741824)"};
inline constexpr Cap kMaxTrainingTokensCap{1e18, "1e18"};
inline constexpr Cap kMaxThreadsCap{4096.0, "4096"};

// `value` (already parsed, positive) as a whole number of `noun` ("tokens")
// of at most `cap`; the error names `option`: "--seq: expected a whole
// number of tokens, got 4096.5" or "--seq: expected at most 2^30
// (1073741824) tokens, got 2147483648".
Result<double> WholeUpTo(const std::string& option, double value,
                         const char* noun, const Cap& cap);

// How the realistic model did on the published runs (training runs or
// serving points) on `chip`: a sentence for the report and a JSON object
// {chip, published_runs, median_abs_rel_error, p90_abs_rel_error}; nothing
// when !applies (peak mode, --assume-mfu). `dp_attention` (serving): also
// how the points served with attention data parallel read (a line and
// the JSON key dp_attention: points, median/min/max_rel_error).
std::pair<std::string, report::Json> TrustOnChip(const catalog::Catalog& cat,
                                                 const hw::Chip& chip,
                                                 bool training, bool applies,
                                                 bool dp_attention = false);

// Left-aligned text table: first row is the header. A table wider than
// kTextWidth wraps its widest columns' cells onto more lines.
std::string Table(const std::vector<std::vector<std::string>>& rows);

// "peak" or "realistic"; the error names `where`.
Result<net::Mode> ParseMode(const std::string& text, const char* where);

// --power-cap W (train, plan train, serve): the board power limit of every
// chip of `sys` (hw::Chip::power_limit_watts). Empty text: unchanged. Errors:
// not a positive power, a TPU (no published measurement), a chip without a
// TDP, a cap above the TDP.
Result<void> ApplyPowerCap(const std::string& text, hw::System* sys);

// plan serve's options and search (serve_commands.cc), wired into the plan
// command (train_commands.cc).
struct ServeSearchCli {
  std::string model, chip, prompt = "1024", output = "256", weights = "bf16",
                           kv = "bf16", mode = "realistic", tpot_max, ttft_max,
                           emit, engine;
  // The routed experts' weight dtype when it differs from --weights.
  std::string expert_weights;
  int max_chips = 0;
  // The engine's static memory fraction (--mem-fraction) and TensorRT-LLM's
  // KV fraction (--kv-free-fraction); empty: unset.
  std::string mem_fraction, kv_free_fraction;
  double price = 0;
  // plan serve --rate (serve_slo_commands.cc): the SLO search.
  std::string rate, slo_ttft, slo_tpot, layouts = "both", kv_transfer = "after";
  int requests = 400;
  uint64_t seed = 0;
};
// plan serve --rate: options and the SLO search (search::PlanServingForSlo)
// for the model, chip and base config RunServeSearch resolved.
void AddServeSloOptions(CLI::App* app, ServeSearchCli& o);
Result<Output> RunServeSloSearch(const catalog::Catalog& cat,
                                 const ingest::ImportedModel& m,
                                 const hw::Chip& chip,
                                 const estimate::ServeConfig& base,
                                 int max_chips, const ServeSearchCli& o);

// serve --prefill-plan/--decode-plan (serve_slo_commands.cc): disaggregated
// serving, simulated (estimate::SimulateDisaggregated).
struct DisaggCli {
  std::string prefill_plan, decode_plan, kv_transfer = "after";
  bool given(const CLI::App& app) const;
};
void AddDisaggOptions(CLI::App* app, DisaggCli& o);
// The continuous-batching report's text (serve_commands.cc).
std::string SimText(const estimate::SimulationResult& r,
                    const estimate::Slo& slo);
Result<Output> RunServeDisagg(
    const ingest::ImportedModel& m, const hw::System& sys,
    const estimate::ServeConfig& cfg, const estimate::Workload& w,
    const estimate::SchedulerOptions& sched, const estimate::Slo& slo,
    const std::string& arrivals, const DisaggCli& d, const std::string& trace,
    const std::string& emit);
void AddServeSearchOptions(CLI::App* app, ServeSearchCli& o);
Result<Output> RunServeSearch(const catalog::Catalog& cat,
                              const ServeSearchCli& o);

// An error from the launch-line writer (io/launch.h), whose input the
// library calls "engine": the option for it here is --emit.
inline Error EmitError(Error e) {
  if (e.where == "engine") e.where = "--emit";
  return e;
}

// --emit: the launch text replaces the text report; the JSON document
// gains "launch" {engine, script}. Passes an emit error through.
Result<bool> PutLaunch(const std::string& engine_name,
                       const Result<std::string>& text, Output& out);
// The launch line of a checked emit, or the sentence saying which engine
// rule fails (exit 0: an infeasible plan is a result); JSON "launch" has
// engine, version, engine_commit, launchable and script or reason / rule /
// rule_source.
Result<bool> PutCheckedLaunch(const launch::CheckedLaunch& c, Output& out);

// train's options on another command (profile), none of them required:
// system() is --system; given() whether --model was; run() estimates the
// training step as `train` would (errors: --plan or --batch-tokens missing,
// and train's own).
struct TrainPredictor {
  std::function<std::string()> system;
  std::function<bool()> given;
  std::function<Result<estimate::TrainingEstimate>(const catalog::Catalog&)>
      run;
};
TrainPredictor AddPredictionOptions(CLI::App* app);

// --trace FILE (train, serve): writes the timeline as a Chrome trace; the
// JSON document gains "trace" {path, events, length_s, reference_s} and the
// text a line saying what was written and how the timeline's length
// compares with the estimate's `what` ("step", "request"). Errors: the file
// cannot be written (--trace).
Result<void> PutTrace(const timeline::Timeline& t, const std::string& path,
                      const std::string& what, Output& out);

// Shorthands the command files share.
using report::Json;
using units::FormatBandwidth;
using units::FormatBytes;
using units::FormatFlopRate;
using units::FormatSeconds;

}  // namespace scalemodel::cli

#endif  // SCALEMODEL_TOOLS_CLI_COMMANDS_H_
