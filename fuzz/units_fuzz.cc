// Sizes, rates, durations and counts as users type them (units/parse.h):
// every parser on the same text. An accepted value must be finite and
// positive (zero only with allow_zero).
#include <cstddef>
#include <cstdint>

#include "fuzz_common.h"
#include "scalemodel/units/parse.h"

namespace su = scalemodel::units;
using scalemodel::fuzz::AsText;
using scalemodel::fuzz::Fail;

namespace {

template <typename R>
void Check(const char* what, const R& r, bool allow_zero) {
  if (!r) return;
  double v;
  if constexpr (std::is_same_v<std::decay_t<decltype(*r)>, double>) {
    v = *r;
  } else {
    v = r->si();
  }
  if (!std::isfinite(v) || v < 0 || (!allow_zero && v == 0)) Fail(what, v);
}

void All(std::string_view t, bool zero) {
  su::ParseOptions o{zero};
  Check("ParseBytes", su::ParseBytes(t, o), zero);
  Check("ParseBandwidth", su::ParseBandwidth(t, o), zero);
  Check("ParseFlopRate", su::ParseFlopRate(t, o), zero);
  Check("ParseFlops", su::ParseFlops(t, o), zero);
  Check("ParseDuration", su::ParseDuration(t, o), zero);
  Check("ParseCount", su::ParseCount(t, o), zero);
  Check("ParseLength", su::ParseLength(t, o), zero);
  Check("ParseFrequency", su::ParseFrequency(t, o), zero);
  Check("ParseWatts", su::ParseWatts(t, o), zero);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 256) return 0;  // no unit string is longer
  std::string_view t = AsText(data, size);
  All(t, false);
  All(t, true);
  return 0;
}
