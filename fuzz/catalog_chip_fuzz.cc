// Catalog chip files (`--catalog DIR/chips/*.toml`): ParseChip, then the
// chip added to a catalog and laid out as a few systems, as `--system
// ID:SHAPE` would. An accepted system must have a positive number of chips.
#include <cstddef>
#include <cstdint>

#include "fuzz_common.h"
#include "scalemodel/catalog/catalog.h"

namespace sc = scalemodel::catalog;
using scalemodel::fuzz::AsText;
using scalemodel::fuzz::Fail;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 32768) return 0;
  std::string text(AsText(data, size));
  auto chip = sc::Catalog::ParseChip(text, "chips/fuzz.toml");
  if (!chip) return 0;
  sc::Catalog catalog;
  if (!catalog.AddFiles({{"chips/fuzz.toml", text}})) return 0;
  for (const char* shape : {"", ":4x4", ":2x2x2", ":8x2", ":4x4x4/2", ":72"}) {
    auto sys = catalog.FindSystem(chip->id + shape);
    if (sys && sys->num_chips() < 1) Fail("chips", sys->num_chips());
  }
  return 0;
}
