// The catalog: chips, systems and models from data files. The files in data/
// are compiled into the binary; `--catalog DIR` adds or overrides entries.
// Loaders take file contents (not paths) so tests never touch disk.
//
// Example:
//   auto cat = catalog::Catalog::Builtin();
//   auto sys = cat->FindSystem("tpu-v5p:16x20x28");
#ifndef SCALEMODEL_CATALOG_CATALOG_H_
#define SCALEMODEL_CATALOG_CATALOG_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "scalemodel/base/error.h"
#include "scalemodel/hw/chip.h"
#include "scalemodel/hw/system.h"

namespace scalemodel::catalog {

// A named system from data/systems: a chip, a shape, and optional scale-out
// network detail (fat-tree tiers, a different NIC rate than the chip file's).
struct SystemEntry {
  std::string id;
  std::string name;
  std::string chip;
  std::string shape;
  std::string source;
  std::vector<std::string> aliases;
  std::vector<hw::SwitchTier> tiers;
  units::BytesPerSecond scale_out_bandwidth;  // 0 = the chip's
  bool has_in_network_reduction = false;
  bool in_network_reduction = false;
};

// One data file: its path relative to the catalog root ("chips/h100.toml")
// and its contents.
struct DataFile {
  std::string path;
  std::string contents;
};

class Catalog {
 public:
  // The catalog compiled into the binary from data/. Fails only if the
  // built-in files are broken, which the tests rule out.
  static Result<Catalog> Builtin();

  // Adds or replaces entries from files; each path must start with
  // "chips/", "systems/", "models/" or "validation/". Errors carry
  // "path:line".
  Result<bool> AddFiles(const std::vector<DataFile>& files);

  // Reads every *.toml under DIR/chips, DIR/systems and DIR/models.
  Result<bool> AddDirectory(const std::string& dir);

  // Parses one chip file. `path` is used in error messages.
  static Result<hw::Chip> ParseChip(std::string_view contents,
                                    const std::string& path);
  static Result<SystemEntry> ParseSystem(std::string_view contents,
                                         const std::string& path);

  // Looks a chip up by id or alias, case-insensitively. The error suggests
  // the closest name: "unknown chip 'h10' (did you mean 'h100'?)".
  Result<const hw::Chip*> FindChip(std::string_view name) const;

  // A catalog system name, CHIP:SHAPE ("tpu-v5e:16x16", "h100:8x128") or
  // SYSTEM:SHAPE (a catalog system's fabric resized: "gcp-a3-high:8x4").
  Result<hw::System> FindSystem(std::string_view spec) const;
  // The catalog system with this id or alias, or null.
  const SystemEntry* FindSystemEntry(std::string_view name) const;

  const std::vector<hw::Chip>& chips() const { return chips_; }
  const std::vector<SystemEntry>& systems() const { return systems_; }
  // Raw model files by id; parsed by the model module's reader.
  const std::vector<DataFile>& model_files() const { return model_files_; }
  // Validation data (published runs), parsed by io/validate.h.
  const std::vector<DataFile>& validation_files() const {
    return validation_files_;
  }
  // A 64-bit hash of every file added so far (paths and contents, in
  // order): two catalogs built from the same files have the same
  // fingerprint. Keys process-wide caches of results that depend on the
  // whole catalog (validate::CachedValidation).
  uint64_t fingerprint() const { return fingerprint_; }

 private:
  std::vector<hw::Chip> chips_;
  std::vector<SystemEntry> systems_;
  std::vector<DataFile> model_files_;
  std::vector<DataFile> validation_files_;
  uint64_t fingerprint_ = 0;
};

// The data files compiled into the binary (generated at build time).
const std::vector<DataFile>& BuiltinDataFiles();

}  // namespace scalemodel::catalog

#endif  // SCALEMODEL_CATALOG_CATALOG_H_
