// Catalog system files (`--catalog DIR/systems/*.toml`): ParseSystem, then
// the system added to a catalog of the built-in chips and resolved by its
// id, as `--system ID` would. An accepted system must have a positive
// number of chips.
#include <cstddef>
#include <cstdint>

#include "fuzz_common.h"
#include "scalemodel/catalog/catalog.h"

namespace sc = scalemodel::catalog;
using scalemodel::fuzz::AsText;
using scalemodel::fuzz::Fail;

namespace {

// The built-in chips alone: copying it per input is cheap.
sc::Catalog ChipsOnly() {
  std::vector<sc::DataFile> chips;
  for (const sc::DataFile& f : sc::BuiltinDataFiles()) {
    if (f.path.rfind("chips/", 0) == 0) chips.push_back(f);
  }
  sc::Catalog c;
  if (!c.AddFiles(chips)) std::abort();
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 16384) return 0;
  static const sc::Catalog chips = ChipsOnly();
  std::string text(AsText(data, size));
  auto entry = sc::Catalog::ParseSystem(text, "systems/fuzz.toml");
  if (!entry) return 0;
  sc::Catalog catalog = chips;
  if (!catalog.AddFiles({{"systems/fuzz.toml", text}})) return 0;
  auto sys = catalog.FindSystem(entry->id);
  if (sys && sys->num_chips() < 1) Fail("chips", sys->num_chips());
  return 0;
}
