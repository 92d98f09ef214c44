#include <cmath>
#include <string>

#include "scalemodel/base/strings.h"
#include "toml_reader_internal.h"

namespace scalemodel::catalog {

TableReader::TableReader(const toml::table& table, std::string file,
                         std::string prefix)
    : table_(table), file_(std::move(file)), prefix_(std::move(prefix)) {}

std::string TableReader::Path(const std::string& key) const {
  return prefix_.empty() ? key : prefix_ + "." + key;
}

std::string TableReader::Where(const std::string& key) const {
  const toml::node* n = table_.get(key);
  auto line = n ? n->source().begin.line : table_.source().begin.line;
  if (line == 0) return file_;
  return file_ + ":" + std::to_string(line);
}

void TableReader::Fail(const std::string& key, const std::string& message) {
  if (error_) return;
  error_ = Error{ErrorCode::kParse, Path(key) + ": " + message, Where(key)};
}

const toml::node* TableReader::Get(const std::string& key, bool required) {
  known_.insert(key);
  const toml::node* n = table_.get(key);
  if (!n && required) missing_.push_back(Path(key));
  return n;
}

std::optional<std::string> TableReader::String(const std::string& key,
                                               bool required) {
  const toml::node* n = Get(key, required);
  if (!n) return std::nullopt;
  if (auto v = n->value<std::string>(); v && n->is_string()) return *v;
  Fail(key, "expected a string in quotes");
  return std::nullopt;
}

std::optional<long> TableReader::Integer(const std::string& key,
                                         bool required) {
  const toml::node* n = Get(key, required);
  if (!n) return std::nullopt;
  if (n->is_integer()) {
    // Every integer of a catalog file is a count of chips, links or cores
    // (docs/units.md, "Limits"); the cap keeps it exact in an int.
    constexpr long kMaxCount = long{1} << 24;
    long v = static_cast<long>(*n->value<int64_t>());
    if (v > 0 && v <= kMaxCount) return v;
    Fail(key, "expected a positive integer of at most " +
                  std::to_string(kMaxCount) + ", got " + std::to_string(v));
    return std::nullopt;
  }
  Fail(key, "expected a positive integer such as 8");
  return std::nullopt;
}

std::optional<double> TableReader::Number(const std::string& key,
                                          bool required) {
  const toml::node* n = Get(key, required);
  if (!n) return std::nullopt;
  if (n->is_integer() || n->is_floating_point()) {
    double v = *n->value<double>();
    if (std::isfinite(v) && v >= 0) return v;
    Fail(key, "expected a finite non-negative number, got " + FormatNumber(v));
    return std::nullopt;
  }
  Fail(key, "expected a number such as 4.2");
  return std::nullopt;
}

std::optional<bool> TableReader::Bool(const std::string& key, bool required) {
  const toml::node* n = Get(key, required);
  if (!n) return std::nullopt;
  if (n->is_boolean()) return *n->value<bool>();
  Fail(key, "expected true or false");
  return std::nullopt;
}

std::vector<std::string> TableReader::StringArray(const std::string& key) {
  std::vector<std::string> out;
  const toml::node* n = Get(key, false);
  if (!n) return out;
  const toml::array* arr = n->as_array();
  if (!arr) {
    Fail(key, "expected an array of strings such as [\"a\", \"b\"]");
    return out;
  }
  for (const toml::node& e : *arr) {
    if (!e.is_string()) {
      Fail(key, "expected an array of strings such as [\"a\", \"b\"]");
      return out;
    }
    out.push_back(*e.value<std::string>());
  }
  return out;
}

std::optional<double> TableReader::Quantity(
    const std::string& key, bool required,
    const std::function<Result<double>(std::string_view)>& parse,
    std::string* source) {
  const toml::node* n = Get(key, required);
  if (!n) return std::nullopt;
  std::string text;
  if (n->is_string()) {
    text = *n->value<std::string>();
  } else if (const toml::table* t = n->as_table()) {
    TableReader inner(*t, file_, Path(key));
    auto v = inner.String("value", true);
    auto s = inner.String("source", true);
    auto d = inner.String("date", false);
    auto done = inner.Finish();
    if (!done) {
      if (!error_) error_ = done.error();
      return std::nullopt;
    }
    text = *v;
    if (source) *source = *s + (d ? " (" + *d + ")" : "");
  } else {
    Fail(key, "expected a quoted value with its unit, such as \"80 GB\"");
    return std::nullopt;
  }
  auto v = parse(text);
  if (!v) {
    Fail(key, v.error().message);
    return std::nullopt;
  }
  return *v;
}

const toml::node* TableReader::Sourced(const std::string& key, bool required,
                                       std::string* source) {
  const toml::node* n = Get(key, required);
  if (!n) return nullptr;
  const toml::table* t = n->as_table();
  if (!t) return n;
  TableReader inner(*t, file_, Path(key));
  const toml::node* v = inner.Get("value", true);
  auto s = inner.String("source", true);
  auto d = inner.String("date", false);
  auto done = inner.Finish();
  if (!done) {
    if (!error_) error_ = done.error();
    return nullptr;
  }
  if (source) *source = *s + (d ? " (" + *d + ")" : "");
  return v;
}

const toml::table* TableReader::Table(const std::string& key, bool required) {
  const toml::node* n = Get(key, required);
  if (!n) return nullptr;
  if (const toml::table* t = n->as_table()) return t;
  Fail(key, "expected a table [" + Path(key) + "]");
  return nullptr;
}

Result<bool> TableReader::Finish() {
  if (error_) return tl::unexpected(*error_);
  std::vector<std::string> known(known_.begin(), known_.end());
  for (auto&& [k, v] : table_) {
    std::string key(k.str());
    if (known_.count(key) == 0) {
      std::string list;
      for (const std::string& s : known) list += (list.empty() ? "" : ", ") + s;
      return tl::unexpected(Error{ErrorCode::kParse,
                                  Path(key) + ": unknown key" +
                                      DidYouMean(key, known) +
                                      "; expected one of: " + list,
                                  Where(key)});
    }
  }
  if (!missing_.empty()) {
    std::string list;
    for (const std::string& s : missing_)
      list += (list.empty() ? "" : ", ") + s;
    return tl::unexpected(Error{ErrorCode::kParse,
                                std::string("missing required key") +
                                    (missing_.size() > 1 ? "s: " : ": ") + list,
                                file_});
  }
  return true;
}

}  // namespace scalemodel::catalog
