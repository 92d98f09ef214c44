// Engine configuration files as flat key/value maps, for the launch-line
// importers (launch/import.h): MaxText's YAML (base.yml and the files that
// name it as base_config) and torchtitan's TOML job files. Values are the
// text of scalars ("8", "true", "full"); lists are joined with commas;
// nested tables and maps are flattened with dots ("parallelism.
// tensor_parallel_degree", "quantize.linear.float8.recipe_name").
#ifndef SCALEMODEL_INGEST_ENGINE_CONFIG_H_
#define SCALEMODEL_INGEST_ENGINE_CONFIG_H_

#include <map>
#include <string>

#include "scalemodel/base/error.h"

namespace scalemodel::ingest {

using FlatConfig = std::map<std::string, std::string>;

// A YAML file's keys (yaml-cpp). A `base_config` key names a file (relative
// to this one) read first, whose keys this file's override, as MaxText
// merges them; the key itself is dropped.
Result<FlatConfig> ReadYamlConfig(const std::string& path);
// A TOML file's keys (toml++), "table.key".
Result<FlatConfig> ReadTomlConfig(const std::string& path);
// A whole text file (a launch script), at most 1 MiB.
Result<std::string> ReadTextFile(const std::string& path);

}  // namespace scalemodel::ingest

#endif  // SCALEMODEL_INGEST_ENGINE_CONFIG_H_
