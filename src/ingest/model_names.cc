// Models as users name them: catalog ids and aliases, HuggingFace repo ids,
// config.json files and directories, the local HuggingFace cache.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "nlohmann/json.hpp"
#include "scalemodel/base/strings.h"
#include "scalemodel/ingest/hf_config.h"

namespace scalemodel::ingest {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Suffixes of fine-tuned or repackaged checkpoints that keep the
// architecture (Llama-3.1-70B-Instruct, gemma-2-27b-it, Llama-2-7b-hf).
bool IsVariantWord(std::string_view w) {
  static const std::set<std::string, std::less<>> kWords = {"instruct", "chat",
                                                            "base", "hf", "it"};
  return kWords.count(w) > 0;
}

// The part after the organisation ("meta-llama/Llama-3.1-70B" ->
// "Llama-3.1-70B").
std::string NamePart(std::string_view s) {
  const size_t slash = s.rfind('/');
  return std::string(slash == std::string_view::npos ? s : s.substr(slash + 1));
}

// Lower case, variant words dropped, '-', '_', '.' and spaces removed:
// "Meta-Llama-3.1-70B-Instruct" -> "metallama3170b".
std::string Normalize(std::string_view s) {
  std::string out;
  std::string word;
  auto flush = [&] {
    if (!IsVariantWord(word)) out += word;
    word.clear();
  };
  for (char ch : ToLower(NamePart(Trim(s)))) {
    if (ch == '-' || ch == '_' || ch == ' ') {
      flush();
    } else if (ch != '.') {
      word += ch;
    }
  }
  flush();
  return out;
}

std::string StringAt(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : "";
}

CatalogModelNames NamesOf(const catalog::DataFile& f) {
  CatalogModelNames n;
  n.id = fs::path(f.path).stem().string();
  const json root = json::parse(f.contents, nullptr, false);
  if (!root.is_object()) return n;
  const json meta = root.value("_scalemodel", json::object());
  if (!meta.is_object()) return n;
  n.name = StringAt(meta, "name");
  n.hf_repo = StringAt(meta, "hf_repo");
  n.maxtext_model = StringAt(meta, "maxtext_model");
  n.torchtitan_model = StringAt(meta, "torchtitan_model");
  n.torchtitan_flavor = StringAt(meta, "torchtitan_flavor");
  for (const json& a : meta.value("aliases", json::array())) {
    if (a.is_string()) n.aliases.emplace_back(a.get<std::string>(), "");
    if (a.is_object())
      n.aliases.emplace_back(StringAt(a, "name"), StringAt(a, "note"));
  }
  return n;
}

// Every name of a catalog model with the note it carries.
std::vector<std::pair<std::string, std::string>> KeysOf(
    const CatalogModelNames& n) {
  std::vector<std::pair<std::string, std::string>> keys = {{n.id, ""}};
  if (!n.hf_repo.empty()) keys.emplace_back(n.hf_repo, "");
  if (!n.maxtext_model.empty()) keys.emplace_back(n.maxtext_model, "");
  keys.insert(keys.end(), n.aliases.begin(), n.aliases.end());
  return keys;
}

// The organisation of "org/name", lower case; "" without one.
std::string OrgOf(std::string_view s) {
  const size_t slash = s.rfind('/');
  return slash == std::string_view::npos ? "" : ToLower(s.substr(0, slash));
}

struct Match {
  const CatalogModelNames* model = nullptr;
  std::string key, note;
};

// Exact names (without case) first, then normalized ones; an organisation
// in the query must be the key's.
Match MatchCatalog(const std::vector<CatalogModelNames>& names,
                   const std::string& query) {
  const std::string lq = ToLower(Trim(query));
  for (const CatalogModelNames& n : names) {
    for (const auto& [key, note] : KeysOf(n)) {
      if (ToLower(key) == lq) return {&n, key, note};
    }
  }
  const std::string nq = Normalize(query), org = OrgOf(query);
  if (nq.empty()) return {};
  for (const CatalogModelNames& n : names) {
    for (const auto& [key, note] : KeysOf(n)) {
      if (!org.empty() && !OrgOf(key).empty() && OrgOf(key) != org) continue;
      if (!org.empty() && OrgOf(key).empty() && key != n.id) continue;
      if (Normalize(key) == nq) return {&n, key, note};
    }
  }
  return {};
}

// "ORG/NAME" as HuggingFace spells repo ids (one slash, no path syntax).
bool LooksLikeRepoId(std::string_view s) {
  if (std::count(s.begin(), s.end(), '/') != 1) return false;
  if (s.front() == '/' || s.back() == '/' || s.front() == '.') return false;
  return s.find(".json") == std::string_view::npos;
}

// The config.json of a cached repo: the snapshot refs/main names, else the
// newest snapshot that has one.
std::string CachedConfig(const fs::path& hub, const std::string& repo) {
  const size_t slash = repo.find('/');
  const std::string dir =
      "models--" + repo.substr(0, slash) + "--" + repo.substr(slash + 1);
  fs::path root = hub / dir;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    // Repo ids are case-insensitive on the Hub; the cache keeps the case.
    for (const auto& e : fs::directory_iterator(hub, ec)) {
      if (ToLower(e.path().filename().string()) == ToLower(dir))
        root = e.path();
    }
  }
  if (!fs::is_directory(root / "snapshots", ec)) return "";
  std::ifstream ref(root / "refs" / "main");
  std::string commit;
  if (ref && std::getline(ref, commit)) {
    const fs::path p =
        root / "snapshots" / std::string(Trim(commit)) / "config.json";
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  std::string best;
  fs::file_time_type newest{};
  for (const auto& e : fs::directory_iterator(root / "snapshots", ec)) {
    const fs::path p = e.path() / "config.json";
    if (!fs::is_regular_file(p, ec)) continue;
    const auto t = fs::last_write_time(p, ec);
    if (best.empty() || t > newest) best = p.string(), newest = t;
  }
  return best;
}

std::string EnvOr(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

Result<ImportedModel> FromCatalog(const catalog::Catalog& catalog,
                                  const Match& m, const std::string& query) {
  for (const catalog::DataFile& f : catalog.model_files()) {
    if (fs::path(f.path).stem().string() != m.model->id) continue;
    auto out = ParseHfConfig(f.contents, f.path);
    if (out && ToLower(Trim(query)) != ToLower(m.model->id)) {
      out->resolution = std::string(Trim(query)) + " is the catalog's " +
                        m.model->id + " (" + out->spec.name + ")";
      if (!m.note.empty()) out->resolution += ": " + m.note;
    }
    return out;
  }
  return NotFound("catalog model file for '" + m.model->id + "' not found",
                  "model");
}

Result<ImportedModel> NotFoundError(const catalog::Catalog& catalog,
                                    const std::string& name) {
  std::vector<std::string> known;
  for (const CatalogModelNames& n : CatalogNames(catalog)) {
    for (const auto& key : KeysOf(n)) known.push_back(key.first);
  }
  const size_t ids = ModelIds(catalog).size();
  if (LooksLikeRepoId(name)) {
    std::string searched;
    for (const std::string& d : HfCacheDirs()) {
      searched += (searched.empty() ? "" : ", ") + d;
    }
    return NotFound(
        "model '" + name + "' is not in the catalog" + DidYouMean(name, known) +
            " nor in the HuggingFace cache (searched " + searched +
            "); nothing is downloaded: fetch its config.json (`huggingface-cli "
            "download " +
            name + " config.json`) and pass the file or its directory",
        "model");
  }
  return NotFound("unknown model '" + name + "'" + DidYouMean(name, known) +
                      "; `scalemodel models` lists all " + std::to_string(ids) +
                      ", or pass a path to a config.json or its directory",
                  "model");
}

}  // namespace

std::vector<CatalogModelNames> CatalogNames(const catalog::Catalog& catalog) {
  // Every lookup of a name that is not a catalog id reads the names of all
  // the catalog's model files, which parses each file's JSON; a process
  // keeps the names of the few catalogs it sees (by their fingerprint, as
  // validate::CachedValidation keys its report).
  static std::mutex mu;
  static std::map<uint64_t, std::vector<CatalogModelNames>> cache;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(catalog.fingerprint());
    if (it != cache.end()) return it->second;
  }
  std::vector<CatalogModelNames> out;
  for (const catalog::DataFile& f : catalog.model_files()) {
    out.push_back(NamesOf(f));
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.id < b.id; });
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() >= 8) cache.clear();  // a bound, not an eviction policy
  cache.emplace(catalog.fingerprint(), out);
  return out;
}

std::vector<std::string> HfCacheDirs() {
  if (std::string d = EnvOr("HF_HUB_CACHE"); !d.empty()) return {d};
  if (std::string d = EnvOr("HUGGINGFACE_HUB_CACHE"); !d.empty()) return {d};
  if (std::string d = EnvOr("HF_HOME"); !d.empty()) {
    return {(fs::path(d) / "hub").string()};
  }
  if (std::string d = EnvOr("XDG_CACHE_HOME"); !d.empty()) {
    return {(fs::path(d) / "huggingface" / "hub").string()};
  }
  if (std::string d = EnvOr("HOME"); !d.empty()) {
    return {(fs::path(d) / ".cache" / "huggingface" / "hub").string()};
  }
  return {};
}

Result<ImportedModel> FindModel(const catalog::Catalog& catalog,
                                const std::string& name_or_path) {
  const std::string name(Trim(name_or_path));
  const std::string lname = ToLower(name);
  // The catalog's ids without parsing every file's names.
  for (const catalog::DataFile& f : catalog.model_files()) {
    if (ToLower(fs::path(f.path).stem().string()) == lname) {
      return ParseHfConfig(f.contents, f.path);
    }
  }
  const std::vector<CatalogModelNames> names = CatalogNames(catalog);
  if (Match m = MatchCatalog(names, name); m.model != nullptr) {
    return FromCatalog(catalog, m, name);
  }
  std::error_code ec;
  if (fs::is_regular_file(name, ec)) return ReadHfConfigFile(name);
  if (fs::is_directory(name, ec)) {
    const fs::path p = fs::path(name) / "config.json";
    if (fs::is_regular_file(p, ec)) return ReadHfConfigFile(p.string());
    return IoError("directory '" + name +
                       "' has no config.json (expected a HuggingFace model "
                       "directory)",
                   "model");
  }
  if (fs::exists(name, ec)) {
    return IoError("'" + name +
                       "' is not a regular file (expected a HuggingFace "
                       "config.json, its directory or a catalog model)",
                   "model");
  }
  if (LooksLikeRepoId(name)) {
    for (const std::string& hub : HfCacheDirs()) {
      if (std::string p = CachedConfig(hub, name); !p.empty()) {
        auto out = ReadHfConfigFile(p);
        if (out) out->resolution = name + " from the HuggingFace cache: " + p;
        return out;
      }
    }
  } else if (name.find('/') != std::string::npos ||
             (name.size() > 5 && name.ends_with(".json"))) {
    return IoError("no such file '" + name +
                       "' (expected a HuggingFace config.json, its directory "
                       "or a catalog model)",
                   "model");
  }
  return NotFoundError(catalog, name);
}

}  // namespace scalemodel::ingest
