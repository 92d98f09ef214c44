#include "scalemodel/ingest/engine_config.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "toml++/toml.h"

namespace scalemodel::ingest {
namespace {

namespace fs = std::filesystem;

constexpr uintmax_t kMaxConfigBytes = uintmax_t{1} << 20;

Result<void> CheckReadable(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    return IoError("no such file '" + path + "'", "from");
  }
  const uintmax_t bytes = fs::file_size(path, ec);
  if (ec || bytes > kMaxConfigBytes) {
    return IoError("file '" + path + "' is over 1 MiB; expected an engine " +
                       "config or a launch script",
                   "from");
  }
  return {};
}

// Engine configs nest a few levels; deeper levels (64, the JSON readers'
// limit) are left out rather than recursed into.
constexpr int kMaxConfigDepth = 64;

// NOLINTNEXTLINE(misc-no-recursion): bounded by kMaxConfigDepth
void FlattenYaml(const YAML::Node& node, const std::string& prefix,
                 FlatConfig* out, int depth = 0) {
  if (node.IsMap()) {
    if (depth >= kMaxConfigDepth) return;
    for (const auto& kv : node) {
      const std::string key = kv.first.as<std::string>();
      FlattenYaml(kv.second, prefix.empty() ? key : prefix + "." + key, out,
                  depth + 1);
    }
  } else if (node.IsSequence()) {
    std::string joined;
    for (const auto& item : node) {
      if (item.IsScalar()) {
        joined += (joined.empty() ? "" : ",") + item.as<std::string>();
      }
    }
    (*out)[prefix] = joined;
  } else if (node.IsScalar()) {
    (*out)[prefix] = node.as<std::string>();
  } else {
    (*out)[prefix] = "";  // null
  }
}

// NOLINTNEXTLINE(misc-no-recursion): base_config chains stop at 4 files
Result<FlatConfig> ReadYamlAt(const std::string& path, int depth) {
  if (auto ok = CheckReadable(path); !ok) return tl::unexpected(ok.error());
  FlatConfig out;
  try {
    const YAML::Node root = YAML::LoadFile(path);
    if (!root.IsMap() && !root.IsNull()) {
      return ParseError("expected a YAML mapping of keys to values", path);
    }
    FlattenYaml(root, "", &out);
  } catch (const YAML::Exception& e) {
    return ParseError(std::string("YAML: ") + e.what(), path);
  }
  auto base = out.find("base_config");
  if (base == out.end()) return out;
  if (depth > 4) {
    return ParseError("base_config nests more than 4 files deep", path);
  }
  fs::path parent = fs::path(path).parent_path() / base->second;
  out.erase(base);
  auto inherited = ReadYamlAt(parent.string(), depth + 1);
  if (!inherited) return inherited;
  for (auto& [k, v] : out) (*inherited)[k] = v;
  return inherited;
}

// A TOML scalar as text ("8", "true", "1F1B", "0.5").
std::string TomlScalar(const toml::node& node) {
  if (auto s = node.value_exact<std::string>()) return *s;
  if (auto b = node.value_exact<bool>()) return *b ? "true" : "false";
  if (auto i = node.value_exact<int64_t>()) return std::to_string(*i);
  if (auto d = node.value_exact<double>()) {
    std::ostringstream ss;
    ss << *d;
    return ss.str();
  }
  return "";
}

// NOLINTNEXTLINE(misc-no-recursion): bounded by kMaxConfigDepth
void FlattenToml(const toml::table& t, const std::string& prefix,
                 FlatConfig* out, int depth = 0) {
  if (depth >= kMaxConfigDepth) return;
  for (const auto& [k, node] : t) {
    const std::string key = prefix.empty()
                                ? std::string(k.str())
                                : prefix + "." + std::string(k.str());
    if (const toml::table* sub = node.as_table()) {
      FlattenToml(*sub, key, out, depth + 1);
    } else if (const toml::array* arr = node.as_array()) {
      std::string joined;
      for (const auto& item : *arr) {
        joined += (joined.empty() ? "" : ",") + TomlScalar(item);
      }
      (*out)[key] = joined;
    } else {
      (*out)[key] = TomlScalar(node);
    }
  }
}

}  // namespace

Result<FlatConfig> ReadYamlConfig(const std::string& path) {
  return ReadYamlAt(path, 0);
}

Result<FlatConfig> ReadTomlConfig(const std::string& path) {
  if (auto ok = CheckReadable(path); !ok) return tl::unexpected(ok.error());
  try {
    const toml::table root = toml::parse_file(path);
    FlatConfig out;
    FlattenToml(root, "", &out);
    return out;
  } catch (const toml::parse_error& e) {
    return ParseError(std::string("TOML: ") + std::string(e.description()) +
                          " at line " + std::to_string(e.source().begin.line),
                      path);
  }
}

Result<std::string> ReadTextFile(const std::string& path) {
  if (auto ok = CheckReadable(path); !ok) return tl::unexpected(ok.error());
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in && !in.eof()) return IoError("cannot read file", path);
  return ss.str();
}

}  // namespace scalemodel::ingest
