// scalemodel: how fast and how expensive it is to train or serve a
// Transformer on a TPU or GPU cluster, and how to shard it.
//
// The whole command line as one function, RunCli (run.h): the scalemodel
// executable (entry.cc) and the Python module (python/) both call it.
#include <algorithm>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

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
    if (type == "INT" || type == "UINT") kind = "a whole number";
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
    "  scalemodel plan serve --model llama3-70b --chip tpu-v5e --prompt 8192 "
    "--output 512 --tpot-max 50ms\n"
    "  scalemodel model llama3-70b --seq 8192\n"
    "  scalemodel matmul 'A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]' --system "
    "tpu-v5e:4x4 --mesh X=4,Y=4 --dims I=8192,J=8192,K=32768\n"
    "  scalemodel model path/to/config.json --json\n"
    "  scalemodel collective all-gather --system tpu-v5p:4x4x4 --axes x,y "
    "--bytes 8MiB\n";

// False, after writing the error with a suggestion to `err`, when `first`
// (the first argument) is neither an option nor a command's name.
bool KnownCommand(const std::string& first,
                  const std::vector<scalemodel::cli::Command>& commands,
                  std::ostream& err) {
  if (!first.empty() && first[0] == '-') return true;
  std::vector<std::string> names;
  for (const scalemodel::cli::Command& c : commands) {
    names.push_back(c.app->get_name());
    if (c.app->get_name() == first) return true;
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

}  // namespace

bool scalemodel::cli::Interrupted() {
  return current_hooks && current_hooks->interrupted &&
         current_hooks->interrupted();
}

int scalemodel::cli::RunCli(const std::vector<std::string>& args,
                            std::ostream& out, std::ostream& err,
                            const RunHooks& hooks) {
  using namespace scalemodel;
  HooksScope scope(&hooks);
  CLI::App app{kAbout, "scalemodel"};
  app.set_version_flag("--version", "scalemodel 0.1.0");
  app.require_subcommand(1);
  app.fallthrough();
  cli::Globals globals;
  app.add_flag("--json", globals.json,
               "Print one JSON object (SI units, unit in the key) instead of "
               "tables");
  app.add_option("--catalog", globals.catalog_dir,
                 "Directory with chips/, systems/ and models/ data files that "
                 "add to or override the built-in catalog");

  std::vector<cli::Command> commands = {
      cli::AddChipsCommand(app),    cli::AddChipCommand(app),
      cli::AddSystemsCommand(app),  cli::AddSystemCommand(app),
      cli::AddRooflineCommand(app), cli::AddCollectiveCommand(app),
      cli::AddModelsCommand(app),   cli::AddModelCommand(app),
      cli::AddShardCommand(app),    cli::AddMatmulCommand(app),
      cli::AddTrainCommand(app),    cli::AddValidateCommand(app),
      cli::AddPlanCommand(app),     cli::AddServeCommand(app),
  };

  // An unknown command gets a suggestion rather than CLI11's generic text.
  if (!args.empty() && !KnownCommand(args[0], commands, err)) return 2;
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
    return app.exit(e, out, err);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e, out, err);
  } catch (const CLI::ParseError& e) {
    std::string what = ConversionMessage(app, e.what());
    err << "error: " << what << "; see `scalemodel --help`\n";
    return 2;
  }

  auto catalog = catalog::Catalog::Builtin();
  if (!catalog) {
    err << "internal error: built-in catalog: " << catalog.error().ToString()
        << "\n";
    return 1;
  }
  if (!globals.catalog_dir.empty()) {
    auto added = catalog->AddDirectory(globals.catalog_dir);
    if (!added) {
      err << "error: " << ErrorText(app, nullptr, added.error()) << "\n";
      return 2;
    }
  }
  for (const cli::Command& c : commands) {
    if (!c.app->parsed()) continue;
    Result<cli::Output> result =
        tl::unexpected(Error{ErrorCode::kInternal, "no result", ""});
    try {
      result = c.action(*catalog);
    } catch (const std::exception& e) {
      err << "internal error: " << e.what() << "\n";
      return 1;
    }
    if (!result) {
      err << "error: " << ErrorText(app, c.app, result.error()) << "\n";
      return result.error().code == ErrorCode::kInternal ? 1 : 2;
    }
    if (globals.json) {
      out << report::Dump(result->json);
    } else {
      out << result->text;
    }
    return 0;
  }
  return 2;
}
