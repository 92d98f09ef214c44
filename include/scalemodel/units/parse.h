// Parsing of quantities with unit suffixes, as users type them on the command
// line and in catalog files. Decimal prefixes (k, M, G, T, P) are powers of
// 10; binary ones (Ki, Mi, Gi, Ti) are powers of 2. "GB" is 1e9 bytes and
// "GiB" is 2^30 bytes everywhere.
//
// Example: ParseBandwidth("3.35TB/s") -> BytesPerSecond(3.35e12).
#ifndef SCALEMODEL_UNITS_PARSE_H_
#define SCALEMODEL_UNITS_PARSE_H_

#include <string_view>

#include "scalemodel/base/error.h"
#include "scalemodel/units/quantity.h"

namespace scalemodel::units {

// What the parser accepts beyond a strictly positive finite value.
struct ParseOptions {
  bool allow_zero = false;  // "0" is rejected unless set.
};

// Byte sizes: "128MiB", "1.5GB", "80 GB", "4096" (plain bytes).
Result<Bytes> ParseBytes(std::string_view text, ParseOptions opts = {});
// Bandwidths: "3.35TB/s", "450 GB/s", "400 Gb/s" (bits), "25GBps".
Result<BytesPerSecond> ParseBandwidth(std::string_view text,
                                      ParseOptions opts = {});
// Compute rates: "459TFLOP/s", "1979 TFLOPS", "394 TOP/s" (integer ops).
Result<FlopsPerSecond> ParseFlopRate(std::string_view text,
                                     ParseOptions opts = {});
// FLOP counts: "6.3e24", "4.2e11 FLOP", "1.5 PFLOP".
Result<Flops> ParseFlops(std::string_view text, ParseOptions opts = {});
// Durations: "50ms", "1 us", "1µs", "2s", "30min", "1.5h".
Result<Seconds> ParseDuration(std::string_view text, ParseOptions opts = {});
// Plain counts with optional decimal or binary multipliers: "4M" tokens,
// "15T" tokens, "1.5B" (billion), "4Ki" (4096), "2048".
Result<double> ParseCount(std::string_view text, ParseOptions opts = {});
// Lengths in tokens (sequence, prompt, output) as model cards write them:
// k or K = 1,024 and M = 1,048,576 ("4k" = 4096, "128k" = 131072), as are
// Ki and Mi; plain numbers as written. Other prefixes are refused.
Result<double> ParseLength(std::string_view text, ParseOptions opts = {});
// Clock frequency in hertz: "1.98 GHz", "1410 MHz".
Result<double> ParseFrequency(std::string_view text, ParseOptions opts = {});
// Power in watts: "700 W", "1.2 kW".
Result<double> ParseWatts(std::string_view text, ParseOptions opts = {});

}  // namespace scalemodel::units

#endif  // SCALEMODEL_UNITS_PARSE_H_
