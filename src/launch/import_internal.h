// Shared by the launch-line importers (import*.cc): the words of a launch
// line with what was read from them, and the model lookups.
#ifndef SCALEMODEL_LAUNCH_IMPORT_INTERNAL_H_
#define SCALEMODEL_LAUNCH_IMPORT_INTERNAL_H_

#include <set>
#include <string>
#include <vector>

#include "scalemodel/base/error.h"
#include "scalemodel/catalog/catalog.h"
#include "scalemodel/ingest/engine_config.h"
#include "scalemodel/ingest/hf_config.h"
#include "scalemodel/launch/rules.h"

namespace scalemodel::launch::internal {

// The words after `--from ENGINE`: files read, text parsed.
struct LaunchInput {
  std::string text;                  // launch-line text (files inlined)
  ParsedLaunch parsed;               // ParseLaunchText(text)
  std::vector<std::string> configs;  // .yml / .yaml / .toml words
  std::string header_model;          // a scalemodel header's model name
  std::string header;                // a scalemodel header's first line
};
Result<LaunchInput> ReadLaunchInput(const std::vector<std::string>& args);

// Flags and keys with a record of which were read; the rest are the
// ignored ones.
class Args {
 public:
  explicit Args(const ParsedLaunch& p) : p_(p) {}
  bool Has(const std::string& flag);
  // The value of the first of `names` present, or "" (marks all read).
  std::string Str(const std::vector<std::string>& names);
  std::string Str(const char* name) {
    return Str(std::vector<std::string>{name});
  }
  // An integer value; `fallback` when absent; an error naming the flag when
  // not a whole number.
  Result<long> Int(const std::vector<std::string>& names, long fallback);
  Result<long> Int(const char* name, long fallback) {
    return Int(std::vector<std::string>{name}, fallback);
  }
  void Use(const std::string& name) { used_.insert(name); }
  // Flags (then keys) not read, except those in `quiet`.
  std::vector<std::string> Unused(const std::set<std::string>& quiet) const;
  const ParsedLaunch& parsed() const { return p_; }

 private:
  const ParsedLaunch& p_;
  std::set<std::string> used_;
};

// A number in a flat config ("12.0", "-1", "8"); an error naming the key.
Result<double> Number(const std::string& key, const std::string& value);
bool Truthy(const std::string& value);

// The model: the caller's override, else `named` (an engine's name for it,
// resolved with ingest::FindModel), else the scalemodel header's model.
// Empty result name: none of them said.
struct FoundModel {
  ingest::ImportedModel model;
  std::string name;
};
Result<FoundModel> ModelByName(const catalog::Catalog& catalog,
                               const std::string& name);
// The catalog model whose display name is `display` (a header's), if any.
std::string CatalogIdByDisplayName(const catalog::Catalog& catalog,
                                   const std::string& display);

// The Megatron layout string's stages (rules.cc).
std::vector<std::string> LayoutStages(std::string s);
// Decoder layers per virtual stage as the emitters split them (launch.cc).
std::vector<int> StageLayers(int layers, int pp, int vpp, int last);

// "a, b and c".
std::string JoinList(const std::vector<std::string>& items);

}  // namespace scalemodel::launch::internal

#endif  // SCALEMODEL_LAUNCH_IMPORT_INTERNAL_H_
