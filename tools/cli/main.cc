// scalemodel: how fast and how expensive it is to train or serve a
// Transformer on a TPU or GPU cluster, and how to shard it.
//
// The whole command line as one function, RunCli (run.h): the scalemodel
// executable (entry.cc) and the Python module (python/) both call it.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "builtin_validation.h"
#include "commands.h"
#include "run.h"
#include "scalemodel/base/strings.h"

namespace {

// The option called `name` in `app` or any of its subcommands (recursive
// over the command tree, which is two levels deep).
// NOLINTNEXTLINE(misc-no-recursion)
const CLI::Option* FindOption(const CLI::App& app, const std::string& name) {
  if (const CLI::Option* o = app.get_option_no_throw(name)) return o;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (const CLI::Option* o = FindOption(*sub, name)) return o;
  }
  return nullptr;
}

// CLI11's "Could not convert: --vpp = x" as "--vpp: expected a whole number,
// got 'x'"; other messages unchanged.
std::string ConversionMessage(const CLI::App& app, const std::string& what) {
  const std::string prefix = "Could not convert: ";
  const size_t eq = what.find(" = ");
  if (what.rfind(prefix, 0) != 0 || eq == std::string::npos) return what;
  const std::string name = what.substr(prefix.size(), eq - prefix.size());
  const std::string value = what.substr(eq + 3);
  std::string kind = "a number";
  if (const CLI::Option* o = FindOption(app, name)) {
    const std::string type = o->get_type_name();
    if (type == "INT" || type == "UINT") {
      kind = "a whole number";
      // A number that is whole but not in digits ("1e12") or too large.
      char* end = nullptr;
      const double v = std::strtod(value.c_str(), &end);
      if (!value.empty() && *end == '\0' && std::isfinite(v) &&
          v == std::floor(v)) {
        kind = type == "INT" ? "a whole number in digits, at most 2147483647"
                             : "a whole number in digits, at most 2^64-1";
      }
    }
  }
  return name + ": expected " + kind + ", got '" + value + "'";
}

// The option called `name` in `app` or the subcommand of it that ran
// (recursive over the command tree, which is two levels deep).
// NOLINTNEXTLINE(misc-no-recursion)
const CLI::Option* FindParsedOption(const CLI::App& app,
                                    const std::string& name) {
  if (const CLI::Option* o = app.get_option_no_throw(name)) return o;
  for (const CLI::App* sub : app.get_subcommands()) {
    if (const CLI::Option* o = FindParsedOption(*sub, name)) return o;
  }
  return nullptr;
}

// Library errors name the input as the library API does, in snake_case
// ("batch_tokens"); the CLI names the flag ("--batch-tokens"). A name
// becomes a flag when `command` (or its subcommand that ran) or the root has
// that option, or through kFlagFor; other locations (file:line, a JSON path,
// a command name such as "system", a flag already) are printed as they are.
std::string FlagWhere(const CLI::App& root, const CLI::App* command,
                      const std::string& where) {
  // Library names printed as a flag even where the command has no option
  // of that name.
  static const std::vector<std::pair<std::string, std::string>> kFlagFor = {
      // FindModel's errors read "--model" in every command, `model NAME`
      // (a positional) included.
      {"model", "--model"},
  };
  if (where.empty() ||
      where.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") !=
          std::string::npos) {
    return where;
  }
  std::string flag = "--" + where;
  std::replace(flag.begin(), flag.end(), '_', '-');
  if ((command && FindParsedOption(*command, flag)) ||
      root.get_option_no_throw(flag)) {
    return flag;
  }
  for (const auto& [name, f] : kFlagFor) {
    if (name == where) return f;
  }
  return where;
}

// "where: message" with the library's name for the input turned into the
// flag (FlagWhere).
std::string ErrorText(const CLI::App& root, const CLI::App* command,
                      scalemodel::Error e) {
  e.where = FlagWhere(root, command, e.where);
  return e.ToString();
}

// The first number in a result that no input should produce: not finite,
// or negative under a key that carries a time, size, FLOP count or price
// ("step_time_s", "hbm_bytes", "cost_usd", ...). Its JSON path and value, or
// nothing. The last check before printing (docs/units.md, Limits).
// NOLINTNEXTLINE(misc-no-recursion)
std::optional<std::string> BadNumber(const scalemodel::report::Json& j,
                                     const std::string& path) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (auto bad = BadNumber(it.value(), path + "/" + it.key())) return bad;
    }
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) {
      if (auto bad = BadNumber(j[i], path + "/" + std::to_string(i))) {
        return bad;
      }
    }
  } else if (j.is_number_float()) {
    const double v = j.get<double>();
    auto ends = [&path](std::string_view suffix) {
      return path.size() >= suffix.size() &&
             path.compare(path.size() - suffix.size(), suffix.size(), suffix) ==
                 0;
    };
    if (!std::isfinite(v) ||
        (v < 0 &&
         (ends("_s") || ends("_bytes") || ends("_usd") || ends("_flops") ||
          ends("_per_s") || ends("/mfu") || ends("/hfu")))) {
      return path + " = " + scalemodel::FormatNumber(v);
    }
  }
  return std::nullopt;
}

// The subcommand that ran deepest in the command tree ("plan serve" is
// `serve` under `plan`); `root` when none did.
const CLI::App* DeepestParsed(const CLI::App& root) {
  const CLI::App* app = &root;
  for (bool descended = true; descended;) {
    descended = false;
    for (const CLI::App* sub : app->get_subcommands()) {
      app = sub;
      descended = true;
      break;
    }
  }
  return app;
}

// "plan serve": the command path of `app` without the program name.
std::string CommandPath(const CLI::App* app) {
  std::string path;
  for (; app && app->get_parent(); app = app->get_parent()) {
    path = path.empty() ? app->get_name() : app->get_name() + " " + path;
  }
  return path;
}

// "a", "a and b", "a, b and c" (or `last` instead of "and").
std::string JoinAnd(const std::vector<std::string>& items,
                    const std::string& last = "and") {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? " " + last + " " : ", ";
    out += items[i];
  }
  return out;
}

// The long option names `app` and the commands above it accept (options
// fall through to the parent), "--help" included.
std::vector<std::string> OptionNames(const CLI::App* app) {
  std::vector<std::string> names;
  for (; app; app = app->get_parent()) {
    for (const CLI::Option* o : app->get_options()) {
      for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
    }
  }
  return names;
}

// An argument the command did not take, as one sentence: an unknown option
// or subcommand with a suggestion, or a stray value. `extras` are in the
// order of the command line.
std::string ExtraArgumentText(const CLI::App* cmd,
                              const std::vector<std::string>& extras) {
  const std::string where =
      cmd->get_parent() ? " for '" + CommandPath(cmd) + "'" : "";
  std::vector<std::string> subs;
  for (const CLI::App* s : cmd->get_subcommands({})) {
    subs.push_back(s->get_name());
  }
  auto is_option = [](const std::string& a) {
    return !a.empty() && a[0] == '-';
  };
  // A command that needs a subcommand: its first word; otherwise the first
  // option, else the first value.
  std::string arg = extras.front();
  for (const std::string& e : extras) {
    if (is_option(e) == subs.empty()) {
      arg = e;
      break;
    }
  }
  if (is_option(arg)) {
    const std::string name = arg.substr(0, arg.find('='));
    return "unknown option '" + name + "'" + where +
           scalemodel::DidYouMean(name, OptionNames(cmd));
  }
  if (!subs.empty()) {
    return "unknown subcommand '" + arg + "'" + where +
           scalemodel::DidYouMean(arg, subs) + "; expected " +
           JoinAnd(subs, "or");
  }
  return "unexpected argument '" + arg + "'" + where;
}

// Every required option or argument of `cmd` that was not given, in one
// sentence: "plan train needs --model, --system and --batch-tokens".
std::string MissingText(const CLI::App* cmd) {
  std::vector<std::string> missing;
  for (const CLI::Option* o : cmd->get_options()) {
    if (!o->get_required() || o->count() > 0) continue;
    std::string name = o->get_name(true);
    if (o->get_lnames().empty()) {
      for (char& ch : name) ch = static_cast<char>(std::toupper(ch));
    } else {
      name = "--" + o->get_lnames().front();
    }
    missing.push_back(name);
  }
  const std::string path = CommandPath(cmd);
  if (!missing.empty()) return path + " needs " + JoinAnd(missing);
  std::vector<std::string> subs;
  for (const CLI::App* s : cmd->get_subcommands({})) {
    subs.push_back(s->get_name());
  }
  if (!subs.empty()) {
    return (path.empty() ? "scalemodel" : path) +
           " needs a subcommand: " + JoinAnd(subs, "or");
  }
  return "";
}

// CLI11's parse errors as one sentence (exit 2): unknown options and
// subcommands with "did you mean", all missing required options at once,
// conversions ("--vpp: expected a whole number, got 'x'"). The suggestion
// names the command's help.
std::string ParseErrorText(const CLI::App& app, const CLI::ParseError& e,
                           const std::vector<std::string>& args) {
  const CLI::App* cmd = DeepestParsed(app);
  const std::string help =
      "; see `scalemodel " +
      (cmd->get_parent() ? CommandPath(cmd) + " " : std::string()) + "--help`";
  // Arguments no command took: CLI11 reports missing options before them,
  // but a misspelled option is the likelier cause of both.
  std::vector<std::string> extras = app.remaining(true);
  std::stable_sort(extras.begin(), extras.end(),
                   [&](const std::string& a, const std::string& b) {
                     return std::find(args.begin(), args.end(), a) <
                            std::find(args.begin(), args.end(), b);
                   });
  if (!extras.empty()) return ExtraArgumentText(cmd, extras) + help;
  if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr) {
    const std::string missing = MissingText(cmd);
    if (!missing.empty()) return missing + help;
  }
  return ConversionMessage(app, e.what()) + help;
}

// `scalemodel --help`: what the tool does and one example per command.
constexpr const char* kAbout =
    "scalemodel: step time, memory, MFU and cost of training and serving "
    "Transformers on TPU and GPU clusters, from the roofline method of "
    "\"How to Scale Your Model\".\n\n"
    "Examples:\n"
    "  scalemodel chips\n"
    "  scalemodel chip h100\n"
    "  scalemodel system tpu-v5p:16x20x28\n"
    "  scalemodel roofline --chip tpu-v5e --matmul 512x8192x8192\n"
    "  scalemodel roofline --chip h100 --flops 1e12 --bytes 1GB --json\n"
    "  scalemodel plan train --model llama3-70b --system tpu-v5p:8x16x16 "
    "--batch-tokens 4Mi --seq 4096\n"
    "  scalemodel train --model llama3-70b --system tpu-v5p:8x16x16 --plan "
    "fsdp=256,tp=8 --batch-tokens 4Mi --seq 4096\n"
    "  scalemodel serve --model llama3-70b --system h100:8x1 --plan tp=8 "
    "--batch 64 --prompt 2048 --output 512\n"
    "  scalemodel plan serve --model llama3-70b --system tpu-v5e --prompt 8192 "
    "--output 512 --tpot-max 50ms\n"
    "  scalemodel model llama3-70b --seq 8192\n"
    "  scalemodel matmul 'A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]' --system "
    "tpu-v5e:4x4 --mesh X=4,Y=4 --dims I=8192,J=8192,K=32768\n"
    "  scalemodel model path/to/config.json --json\n"
    "  scalemodel collective all-gather --system tpu-v5p:4x4x4 --axes x,y "
    "--bytes 8MiB\n";

// False, after writing the error with a suggestion to `err`, when `first`
// (the first argument) is neither an option nor a command's name.
bool KnownCommand(const std::string& first, const CLI::App& app,
                  std::ostream& err) {
  if (!first.empty() && first[0] == '-') return true;
  std::vector<std::string> names;
  for (const CLI::App* c : app.get_subcommands({})) {
    names.push_back(c->get_name());
    if (c->get_name() == first) return true;
  }
  err << "error: unknown command '" << first << "'"
      << scalemodel::DidYouMean(first, names) << "; see `scalemodel --help`\n";
  return false;
}

// The RunHooks of the RunCli running on this thread (Interrupted).
thread_local const scalemodel::cli::RunHooks* current_hooks = nullptr;

// Sets current_hooks for one RunCli call.
class HooksScope {
 public:
  explicit HooksScope(const scalemodel::cli::RunHooks* h)
      : saved_(current_hooks) {
    current_hooks = h;
  }
  ~HooksScope() { current_hooks = saved_; }
  HooksScope(const HooksScope&) = delete;
  HooksScope& operator=(const HooksScope&) = delete;

 private:
  const scalemodel::cli::RunHooks* saved_;
};

// The built-in commands in the order of `scalemodel --help`.
struct BuiltinCommand {
  const char* name;
  scalemodel::cli::Command (*add)(CLI::App&);
};
constexpr BuiltinCommand kBuiltinCommands[] = {
    {"chips", scalemodel::cli::AddChipsCommand},
    {"chip", scalemodel::cli::AddChipCommand},
    {"systems", scalemodel::cli::AddSystemsCommand},
    {"system", scalemodel::cli::AddSystemCommand},
    {"roofline", scalemodel::cli::AddRooflineCommand},
    {"collective", scalemodel::cli::AddCollectiveCommand},
    {"models", scalemodel::cli::AddModelsCommand},
    {"model", scalemodel::cli::AddModelCommand},
    {"shard", scalemodel::cli::AddShardCommand},
    {"matmul", scalemodel::cli::AddMatmulCommand},
    {"train", scalemodel::cli::AddTrainCommand},
    {"validate", scalemodel::cli::AddValidateCommand},
    {"plan", scalemodel::cli::AddPlanCommand},
    {"serve", scalemodel::cli::AddServeCommand},
    {"profile", scalemodel::cli::AddProfileCommand},
};

// The command word of `args`: a built-in command's name after nothing but
// the root flags --json and --csv, or any first argument that is not an
// option (an unknown command, which KnownCommand refuses, or an extra
// command); else "" (a root --catalog, --help, --version, an unknown option,
// an unknown word after --json: every command is built, as for
// `scalemodel --help`).
std::string CommandWord(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--json" || a == "--csv") continue;
    if (a.empty() || a[0] == '-') return "";
    for (const BuiltinCommand& b : kBuiltinCommands) {
      if (a == b.name) return a;
    }
    return &a == &args.front() ? a : "";
  }
  return "";
}

// Adds the built-in commands to `app`. Building a command's options is most
// of the time of a short command (CLI11 checks each new option against the
// others), so when `word` is a word, only the command of that name (if
// any) gets its options; the others are added as empty commands of the same
// names, so that CLI11 reads those words as it does with every command built
// (a second command word is an extra argument either way) and an unknown
// word gets the same suggestion (KnownCommand). With `word` empty, every
// command is built.
std::vector<scalemodel::cli::Command> AddCommands(CLI::App& app,
                                                  const std::string& word) {
  std::vector<scalemodel::cli::Command> commands;
  for (const BuiltinCommand& b : kBuiltinCommands) {
    if (word.empty() || word == b.name) {
      commands.push_back(b.add(app));
    } else {
      app.add_subcommand(b.name);
    }
  }
  return commands;
}

// The commands added by AddExtraCommand.
std::vector<scalemodel::cli::CommandFactory>& ExtraCommands() {
  static std::vector<scalemodel::cli::CommandFactory> extra;
  return extra;
}

}  // namespace

void scalemodel::cli::AddExtraCommand(CommandFactory factory) {
  ExtraCommands().push_back(factory);
}

bool scalemodel::cli::Interrupted() {
  return current_hooks && current_hooks->interrupted &&
         current_hooks->interrupted();
}

int scalemodel::cli::RunCli(const std::vector<std::string>& args,
                            std::ostream& out, std::ostream& err,
                            const RunHooks& hooks) {
  using namespace scalemodel;
  // A shell cannot pass a NUL byte, but the Python module and the HTTP API
  // can ("h100:8x1\u0000zz"), and the parsers that read a number or a name
  // through C strings would stop there and accept the rest silently.
  for (size_t i = 0; i < args.size(); ++i) {
    const size_t nul = args[i].find('\0');
    if (nul == std::string::npos) continue;
    err << "error: argument " << i + 1 << " ('"
        << Excerpt(args[i].substr(0, nul)) << "\\0...'): expected text, found "
        << "a NUL byte at byte " << nul + 1 << "; remove it\n";
    return 2;
  }
  HooksScope scope(&hooks);
  // The built-in catalog's accuracy report, computed at build time.
  static std::once_flag installed;
  std::call_once(installed, validate::InstallBuiltinValidation);
  CLI::App app{kAbout, "scalemodel"};
  app.set_version_flag("--version", "scalemodel 0.1.0");
  app.require_subcommand(1);
  app.fallthrough();
  cli::Globals globals;
  app.add_flag("--json", globals.json,
               "Print one JSON object (SI units, unit in the key) instead of "
               "tables");
  app.add_flag("--csv", globals.csv,
               "Print the command's table as CSV (plan train, plan serve, "
               "validate, chips, models, systems)");
  app.add_option("--catalog", globals.catalog_dir,
                 "Directory with chips/, systems/ and models/ data files that "
                 "add to or override the built-in catalog");

  std::vector<cli::Command> commands = AddCommands(app, CommandWord(args));
  for (cli::CommandFactory extra : ExtraCommands()) {
    commands.push_back(extra(app, globals));
  }

  // An unknown command gets a suggestion rather than CLI11's generic text.
  if (!args.empty() && !KnownCommand(args[0], app, err)) return 2;
  // CLI11 takes the arguments last first. A quoted launch line after
  // `--from ENGINE` that starts with a flag ("--tensor-model-parallel-size
  // 8 ...") is the option's value, not an option of ours: a leading space
  // keeps CLI11 from reading it as one (the importer trims it).
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] != "--from") continue;
    for (size_t j = args.size() - 1 - (i + 2); j + 1 > 0; --j) {
      const std::string& a = reversed[j];
      if (a.rfind('-', 0) != 0) continue;  // a file, key=value, a word
      if (a.find_first_of(" \n") == std::string::npos) break;  // our option
      reversed[j] = " " + a;
    }
  }
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    std::ostringstream help;
    const int rc = app.exit(e, help, err);
    out << cli::WrapHelp(help.str());
    return rc;
  } catch (const CLI::CallForAllHelp& e) {
    std::ostringstream help;
    const int rc = app.exit(e, help, err);
    out << cli::WrapHelp(help.str());
    return rc;
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e, out, err);
  } catch (const CLI::ParseError& e) {
    err << "error: " << ParseErrorText(app, e, args) << "\n";
    return 2;
  }

  if (globals.json && globals.csv) {
    err << "error: --csv: give --json or --csv, not both\n";
    return 2;
  }
  // The built-in catalog, copied once per process; a call with --catalog
  // adds to its own copy.
  static const Result<catalog::Catalog> builtin = catalog::Catalog::Builtin();
  if (!builtin) {
    err << "internal error: built-in catalog: " << builtin.error().ToString()
        << "\n";
    return 1;
  }
  std::optional<catalog::Catalog> custom;
  if (const CLI::Option* c = app.get_option_no_throw("--catalog");
      c && c->count() > 0 && globals.catalog_dir.empty()) {
    err << "error: --catalog: expected a directory with chips/, systems/ or "
           "models/, got an empty path\n";
    return 2;
  }
  if (!globals.catalog_dir.empty()) {
    custom = *builtin;
    auto added = custom->AddDirectory(globals.catalog_dir);
    if (!added) {
      err << "error: " << ErrorText(app, nullptr, added.error()) << "\n";
      return 2;
    }
  }
  const catalog::Catalog& cat = custom ? *custom : *builtin;
  for (const cli::Command& c : commands) {
    if (!c.app->parsed()) continue;
    Result<cli::Output> result =
        tl::unexpected(Error{ErrorCode::kInternal, "no result", ""});
    try {
      result = c.action(cat);
    } catch (const std::exception& e) {
      err << "internal error: " << e.what() << "\n";
      return 1;
    }
    if (!result) {
      err << "error: " << ErrorText(app, c.app, result.error()) << "\n";
      return result.error().code == ErrorCode::kInternal ? 1 : 2;
    }
    if (auto bad = BadNumber(result->json, "")) {
      err << "error: " << c.app->get_name() << ": the result " << *bad
          << " is out of range: an input lies beyond what the model covers "
             "(docs/units.md, Limits)\n";
      return 2;
    }
    if (globals.json) {
      out << report::Dump(result->json);
    } else if (globals.csv) {
      if (result->csv.empty()) {
        err << "error: --csv: '" << CommandPath(c.app)
            << "' prints no table; use --json, or --csv with plan train, "
               "plan serve, validate, chips, models or systems\n";
        return 2;
      }
      out << result->csv;
    } else {
      out << (result->verbatim ? result->text : cli::Wrap(result->text));
    }
    return 0;
  }
  return 2;
}
