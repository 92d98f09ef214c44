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
};

// Parses a config.json. Missing required keys are one error naming all of
// them; `path` is used in messages.
Result<ImportedModel> ParseHfConfig(std::string_view json_text,
                                    const std::string& path);

// A catalog model id (or alias) or a path to a config.json on disk.
Result<ImportedModel> FindModel(const catalog::Catalog& catalog,
                                const std::string& name_or_path);

// Ids of the catalog's models, sorted.
// The checks config.json gets before it is parsed into a tree, for any
// JSON text a user hands in (trace rows, validation files): at most 16 MiB,
// nested at most 64 deep, valid syntax, numbers within a double's range.
// Each failure is one sentence naming `where` (and the line), never a
// library's exception text; `what` names the file kind ("a trace row").
Result<void> CheckJsonText(std::string_view text, const std::string& where,
                           const std::string& what = "a config.json");

std::vector<std::string> ModelIds(const catalog::Catalog& catalog);

}  // namespace scalemodel::ingest

#endif  // SCALEMODEL_INGEST_HF_CONFIG_H_
