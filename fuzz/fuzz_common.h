// Helpers shared by the libFuzzer targets (fuzz/README in docs/hardening.md).
// A target aborts (a finding) when a parser accepts input and returns a value
// that breaks its contract: not finite, negative, or zero where zero is
// refused. Errors are fine: bad input must become an Error, never a crash.
#ifndef SCALEMODEL_FUZZ_FUZZ_COMMON_H_
#define SCALEMODEL_FUZZ_FUZZ_COMMON_H_

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace scalemodel::fuzz {

// Stops the run with a message; libFuzzer saves the input as a crash.
[[noreturn]] inline void Fail(const char* what, double value) {
  std::fprintf(stderr, "fuzz contract broken: %s (%g)\n", what, value);
  std::abort();
}

inline void CheckFinite(const char* what, double value) {
  if (!std::isfinite(value)) Fail(what, value);
}

inline void CheckNonNegative(const char* what, double value) {
  if (!std::isfinite(value) || value < 0) Fail(what, value);
}

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Splits the input at '\n' into at most `max_fields` fields (the rest of the
// input is the last field), so one input drives several arguments.
inline std::vector<std::string> Fields(std::string_view text,
                                       size_t max_fields) {
  std::vector<std::string> out;
  while (out.size() + 1 < max_fields) {
    size_t nl = text.find('\n');
    if (nl == std::string_view::npos) break;
    out.emplace_back(text.substr(0, nl));
    text.remove_prefix(nl + 1);
  }
  out.emplace_back(text);
  return out;
}

}  // namespace scalemodel::fuzz

#endif  // SCALEMODEL_FUZZ_FUZZ_COMMON_H_
