// Reading models: HuggingFace config.json (transformers v4 and v5 field
// names, language-model fields nested under text_config, MoE aliases, MLA,
// dense-layer placement, FP8 quantization_config) and the catalog's model
// files, which are config.json files with a "_scalemodel" block naming the
// id, display name and source.
#ifndef SCALEMODEL_INGEST_HF_CONFIG_H_
#define SCALEMODEL_INGEST_HF_CONFIG_H_

#include <string>
#include <string_view>
#include <vector>

#include "scalemodel/base/error.h"
#include "scalemodel/catalog/catalog.h"
#include "scalemodel/model/transformer.h"

namespace scalemodel::ingest {

// The names engines know the model by, for the launch lines (the math never
// needs them): from the catalog file's "_scalemodel" block, or for a
// config.json given by path, its directory as hf_repo.
struct EngineNames {
  // What a serving engine loads: a HuggingFace repo ("meta-llama/...") or
  // the directory of a local config.json; empty when unknown.
  std::string hf_repo;
  // MaxText's name for the model (src/maxtext/configs/models/<name>.yml);
  // empty when MaxText has none.
  std::string maxtext_model;
  // torchtitan's model name and flavor ("llama3", "8B"); empty when unknown.
  std::string torchtitan_model, torchtitan_flavor;
};

struct ImportedModel {
  model::ModelSpec spec;
  EngineNames engine_names;
  // Keys that were present but not used ("ignored keys: a, b"), and other
  // remarks on how fields were read. Never errors.
  std::vector<std::string> notes;
  // How FindModel resolved a name that is not a catalog id or a file path
  // ("meta-llama/Meta-Llama-3-70B is the catalog's llama3-70b: ..."); empty
  // otherwise.
  std::string resolution;
};

// Parses a config.json. Missing required keys are one error naming all of
// them; `path` is used in messages.
Result<ImportedModel> ParseHfConfig(std::string_view json_text,
                                    const std::string& path);

// Reads and parses a config.json file.
Result<ImportedModel> ReadHfConfigFile(const std::string& path);

// A model as users name it (src/ingest/model_names.cc), in this order:
//  1. a catalog id, alias, HuggingFace repo id or MaxText name, compared
//     without case, an organisation prefix, '-', '_', '.' or the suffixes
//     -instruct, -chat, -base, -hf, -it (`meta-llama/Llama-3.1-70B`,
//     `llama3.1-70b`, `Meta-Llama-3-70B-Instruct`); an alias may carry a note
//     (ImportedModel::resolution) saying how the named model differs;
//  2. a config.json file, or a directory holding one;
//  3. an ORG/NAME HuggingFace id in the local HuggingFace cache
//     ($HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub:
//     models--ORG--NAME/snapshots/<refs/main or newest>/config.json).
// Nothing is downloaded. Errors: did-you-mean over the catalog's names, or
// for an ORG/NAME id where the cache was searched and how to get the file.
Result<ImportedModel> FindModel(const catalog::Catalog& catalog,
                                const std::string& name_or_path);

// The names of one catalog model (its file's "_scalemodel" block).
struct CatalogModelNames {
  std::string id, name, hf_repo, maxtext_model, torchtitan_model,
      torchtitan_flavor;
  // Other names, each with a note on how that model differs ("" if not).
  std::vector<std::pair<std::string, std::string>> aliases;
};
std::vector<CatalogModelNames> CatalogNames(const catalog::Catalog& catalog);

// The HuggingFace hub cache directories FindModel searches, in order.
std::vector<std::string> HfCacheDirs();

// Ids of the catalog's models, sorted.
// The checks config.json gets before it is parsed into a tree, for any
// JSON text a user hands in (trace rows, validation files): at most 16 MiB,
// nested at most 64 deep, valid syntax, numbers within a double's range,
// each key once in each object.
// Each failure is one sentence naming `where` (and the line), never a
// library's exception text; `what` names the file kind ("a trace row").
Result<void> CheckJsonText(std::string_view text, const std::string& where,
                           const std::string& what = "a config.json");

std::vector<std::string> ModelIds(const catalog::Catalog& catalog);

}  // namespace scalemodel::ingest

#endif  // SCALEMODEL_INGEST_HF_CONFIG_H_
