// scalemodel: how fast and how expensive it is to train or serve a
// Transformer on a TPU or GPU cluster, and how to shard it.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
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

}  // namespace

int main(int argc, char** argv) {
  using namespace scalemodel;
  CLI::App app{
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
      "--bytes 8MiB\n",
      "scalemodel"};
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
  if (argc > 1 && argv[1][0] != '-') {
    std::vector<std::string> names;
    bool known = false;
    for (const cli::Command& c : commands) {
      names.push_back(c.app->get_name());
      known = known || c.app->get_name() == argv[1];
    }
    if (!known) {
      std::fprintf(stderr,
                   "error: unknown command '%s'%s; see `scalemodel --help`\n",
                   argv[1], DidYouMean(argv[1], names).c_str());
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string what = ConversionMessage(app, e.what());
    std::fprintf(stderr, "error: %s; see `scalemodel --help`\n", what.c_str());
    return 2;
  }

  auto catalog = catalog::Catalog::Builtin();
  if (!catalog) {
    std::fprintf(stderr, "internal error: built-in catalog: %s\n",
                 catalog.error().ToString().c_str());
    return 1;
  }
  if (!globals.catalog_dir.empty()) {
    auto added = catalog->AddDirectory(globals.catalog_dir);
    if (!added) {
      std::fprintf(stderr, "error: %s\n",
                   ErrorText(app, nullptr, added.error()).c_str());
      return 2;
    }
  }
  for (const cli::Command& c : commands) {
    if (!c.app->parsed()) continue;
    Result<cli::Output> out =
        tl::unexpected(Error{ErrorCode::kInternal, "no result", ""});
    try {
      out = c.action(*catalog);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "internal error: %s\n", e.what());
      return 1;
    }
    if (!out) {
      std::fprintf(stderr, "error: %s\n",
                   ErrorText(app, c.app, out.error()).c_str());
      return out.error().code == ErrorCode::kInternal ? 1 : 2;
    }
    if (globals.json) {
      std::cout << report::Dump(out->json);
    } else {
      std::cout << out->text;
    }
    return 0;
  }
  return 2;
}
