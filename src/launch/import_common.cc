// What the launch-line importers share: reading the words after --from,
// the record of arguments read, the model lookups.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "import_internal.h"
#include "scalemodel/base/strings.h"

namespace scalemodel::launch::internal {
namespace {

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         ToLower(s.substr(s.size() - suffix.size())) == suffix;
}

bool IsConfigFile(const std::string& w) {
  return EndsWith(w, ".yml") || EndsWith(w, ".yaml") || EndsWith(w, ".toml");
}

// The first line of a scalemodel launch line's header, or "".
std::string HeaderLine(const std::string& text) {
  for (const std::string& line : Split(text, '\n')) {
    std::string t(Trim(line));
    if (t.rfind("# scalemodel ", 0) == 0 &&
        t.find(" -> ") != std::string::npos) {
      return t;
    }
  }
  return "";
}

// The model a scalemodel launch line was emitted for: its header reads
// "# scalemodel 0.1.0 -> ENGINE: MODEL NAME on SYSTEM (N chips), ...".
std::string HeaderModel(const std::string& text) {
  for (const std::string& line : Split(text, '\n')) {
    const std::string t(Trim(line));
    if (t.rfind("# scalemodel ", 0) != 0) continue;
    const size_t arrow = t.find(" -> ");
    const size_t colon = t.find(": ", arrow == std::string::npos ? 0 : arrow);
    const size_t on = t.rfind(" on ", t.find(" chips)"));
    if (arrow == std::string::npos || colon == std::string::npos ||
        on == std::string::npos || on < colon) {
      continue;
    }
    return t.substr(colon + 2, on - colon - 2);
  }
  return "";
}

}  // namespace

Result<LaunchInput> ReadLaunchInput(const std::vector<std::string>& args) {
  LaunchInput in;
  for (const std::string& a : args) {
    const std::string w(Trim(a));
    std::error_code ec;
    if (IsConfigFile(w) && w.find(' ') == std::string::npos) {
      in.configs.push_back(w);
      continue;
    }
    if (w.find_first_of(" \n") == std::string::npos &&
        std::filesystem::is_regular_file(w, ec)) {
      auto text = ingest::ReadTextFile(w);
      if (!text) return tl::unexpected(text.error());
      in.text += *text + "\n";
    } else {
      in.text += w + "\n";
    }
  }
  in.parsed = ParseLaunchText(in.text);
  // Config files named inside the line (MaxText's base.yml after train.py).
  std::vector<std::string> words;
  for (const std::string& w : in.parsed.words) {
    if (IsConfigFile(w)) {
      in.configs.push_back(w);
    } else {
      words.push_back(w);
    }
  }
  in.parsed.words = words;
  in.header_model = HeaderModel(in.text);
  in.header = HeaderLine(in.text);
  return in;
}

bool Args::Has(const std::string& flag) {
  used_.insert(flag);
  return p_.flags.count(flag) > 0 || p_.keys.count(flag) > 0;
}

std::string Args::Str(const std::vector<std::string>& names) {
  for (const std::string& n : names) used_.insert(n);
  for (const std::string& n : names) {
    if (auto it = p_.flags.find(n); it != p_.flags.end()) return it->second;
    if (auto it = p_.keys.find(n); it != p_.keys.end()) return it->second;
  }
  return "";
}

Result<long> Args::Int(const std::vector<std::string>& names, long fallback) {
  for (const std::string& n : names) used_.insert(n);
  for (const std::string& n : names) {
    const std::string* value = nullptr;
    if (auto f = p_.flags.find(n); f != p_.flags.end()) {
      value = &f->second;
    } else if (auto k = p_.keys.find(n); k != p_.keys.end()) {
      value = &k->second;
    }
    if (value == nullptr) continue;
    auto v = Number(n, *value);
    if (!v) return tl::unexpected(v.error());
    if (std::floor(*v) != *v) {
      return InvalidArgument(
          n + ": expected a whole number, got '" + *value + "'", "from");
    }
    // Beyond 2^53 a double no longer holds every whole number, and beyond
    // 2^63 the conversion to long is undefined (cli_fuzz: --tp 1e38).
    if (std::fabs(*v) > 9007199254740992.0) {
      return InvalidArgument(n +
                                 ": expected a whole number of at most 2^53, "
                                 "got '" +
                                 *value + "'",
                             "from");
    }
    return static_cast<long>(*v);
  }
  return fallback;
}

std::vector<std::string> Args::Unused(
    const std::set<std::string>& quiet) const {
  std::vector<std::string> out;
  for (const auto& [k, v] : p_.flags) {
    if (!used_.count(k) && !quiet.count(k)) out.push_back(k);
  }
  for (const auto& [k, v] : p_.keys) {
    if (!used_.count(k) && !quiet.count(k)) out.push_back(k);
  }
  return out;
}

Result<double> Number(const std::string& key, const std::string& value) {
  std::string v(Trim(value));
  v.erase(std::remove(v.begin(), v.end(), '_'), v.end());  // YAML 32_000
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'')) {
    v = v.substr(1, v.size() - 2);
  }
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(d)) {
    return InvalidArgument(key + ": expected a number, got '" + value + "'",
                           "from");
  }
  return d;
}

bool Truthy(const std::string& value) {
  const std::string v = ToLower(Trim(value));
  return v == "true" || v == "1" || v == "yes" || v == "on";
}

Result<FoundModel> ModelByName(const catalog::Catalog& catalog,
                               const std::string& name) {
  auto m = ingest::FindModel(catalog, name);
  if (!m) return tl::unexpected(m.error());
  return FoundModel{*m, name};
}

std::string CatalogIdByDisplayName(const catalog::Catalog& catalog,
                                   const std::string& display) {
  if (display.empty()) return "";
  for (const ingest::CatalogModelNames& n : ingest::CatalogNames(catalog)) {
    if (n.name == display || n.id == display) return n.id;
  }
  return "";
}

std::string JoinList(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? " and " : ", ";
    out += items[i];
  }
  return out;
}

}  // namespace scalemodel::launch::internal
