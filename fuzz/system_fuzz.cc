// System strings (`--system`): a catalog name, CHIP:SHAPE ("tpu-v5p:8x16x16",
// "h100:8x4", "tpu-v5e:16x16/4") or SYSTEM:SHAPE, resolved against the
// built-in catalog. An accepted system must have a positive number of chips
// and axes of positive size.
#include <cstddef>
#include <cstdint>

#include "fuzz_common.h"
#include "scalemodel/catalog/catalog.h"

namespace sc = scalemodel::catalog;
using scalemodel::fuzz::AsText;
using scalemodel::fuzz::Fail;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 256) return 0;
  static const sc::Catalog catalog = *sc::Catalog::Builtin();
  auto sys = catalog.FindSystem(AsText(data, size));
  if (!sys) return 0;
  if (sys->num_chips() < 1) Fail("FindSystem chips", sys->num_chips());
  for (const auto& axis : sys->axes) {
    if (axis.size < 1) Fail("FindSystem axis size", axis.size);
  }
  (void)sys->AxisNames();
  return 0;
}
