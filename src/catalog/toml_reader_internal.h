// A strict reader over one TOML table: every key read is marked known, and
// Finish() reports unknown keys (with "did you mean") and all missing
// required keys in one message. Values with units are strings ("80 GB").
#ifndef SCALEMODEL_SRC_CATALOG_TOML_READER_INTERNAL_H_
#define SCALEMODEL_SRC_CATALOG_TOML_READER_INTERNAL_H_

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "scalemodel/base/error.h"
#include "scalemodel/units/parse.h"
#include "toml++/toml.h"

namespace scalemodel::catalog {

class TableReader {
 public:
  // `prefix` is the dotted path of this table ("compute"), empty for root.
  TableReader(const toml::table& table, std::string file, std::string prefix);

  std::optional<std::string> String(const std::string& key, bool required);
  std::optional<long> Integer(const std::string& key, bool required);
  std::optional<double> Number(const std::string& key, bool required);
  std::optional<bool> Bool(const std::string& key, bool required);
  std::vector<std::string> StringArray(const std::string& key);
  // A unit-carrying value: "80 GB" or { value = "80 GB", source = "..." }.
  // `parse` converts the text; `source` receives a per-value source if the
  // inline form gives one.
  std::optional<double> Quantity(
      const std::string& key, bool required,
      const std::function<Result<double>(std::string_view)>& parse,
      std::string* source);
  // A plain value, or { value = ..., source = "...", date = "..." } with its
  // own source: returns the value's node (nullptr if absent or malformed) for
  // the caller to check, and sets `source` when the inline form gives one.
  const toml::node* Sourced(const std::string& key, bool required,
                            std::string* source);
  // A sub-table; nullptr if absent (or recorded as an error if required).
  const toml::table* Table(const std::string& key, bool required);

  // Accepts `key` without reading it (the caller reads it another way).
  void MarkKnown(const std::string& key) { known_.insert(key); }

  // "file:line" of a key (or of the table when the key is absent).
  std::string Where(const std::string& key) const;
  std::string Path(const std::string& key) const;

  // Records an error at `key` (the first error wins).
  void Fail(const std::string& key, const std::string& message);
  // Returns the first error, else unknown keys, else missing required keys.
  Result<bool> Finish();

 private:
  const toml::node* Get(const std::string& key, bool required);

  const toml::table& table_;
  std::string file_;
  std::string prefix_;
  std::set<std::string> known_;
  std::vector<std::string> missing_;
  std::optional<Error> error_;
};

}  // namespace scalemodel::catalog

#endif  // SCALEMODEL_SRC_CATALOG_TOML_READER_INTERNAL_H_
