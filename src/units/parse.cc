#include "scalemodel/units/parse.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "scalemodel/base/strings.h"

namespace scalemodel::units {
namespace {

struct Prefix {
  const char* text;
  double factor;
};

// Decimal prefixes are powers of 10, binary ones powers of 2 (docs/units.md).
constexpr Prefix kLargePrefixes[] = {
    {"", 1},
    {"k", 1e3},
    {"K", 1e3},
    {"M", 1e6},
    {"G", 1e9},
    {"T", 1e12},
    {"P", 1e15},
    {"E", 1e18},
    {"Ki", 1024.0},
    {"Mi", 1048576.0},
    {"Gi", 1073741824.0},
    {"Ti", 1099511627776.0},
    {"Pi", 1125899906842624.0},
};
constexpr Prefix kSmallPrefixes[] = {
    {"", 1}, {"m", 1e-3}, {"u", 1e-6}, {"\xC2\xB5", 1e-6}, {"n", 1e-9}};

struct BaseUnit {
  const char* text;
  double factor;
};

struct Kind {
  const char* noun;     // "a bandwidth"
  const char* example;  // "3.35 TB/s"
  std::vector<BaseUnit> units;
  bool small_prefixes = false;
  std::vector<BaseUnit> whole_words = {};  // units that take no prefix
};

// Splits "3.35TB/s" into the number 3.35 and the unit "TB/s". Returns false
// when the text does not start with a finite decimal number.
bool SplitNumber(std::string_view text, double* value, std::string* unit) {
  std::string s(Trim(text));
  if (s.empty()) return false;
  char c = s[0];
  if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-' ||
        c == '+')) {
    return false;
  }
  const char* begin = s.c_str();
  char* end = nullptr;
  *value = std::strtod(begin, &end);
  if (end == begin) return false;
  *unit = std::string(Trim(std::string_view(end)));
  return true;
}

Result<double> ParseKind(std::string_view text, const Kind& kind,
                         ParseOptions opts) {
  auto fail = [&](const std::string& why) {
    std::string msg = std::string("expected ") + kind.noun + " such as \"" +
                      kind.example + "\", got \"" + std::string(text) + "\"";
    if (!why.empty()) msg += " (" + why + ")";
    return InvalidArgument(msg);
  };
  double number = 0;
  std::string unit;
  if (!SplitNumber(text, &number, &unit)) return fail("");
  if (!std::isfinite(number)) return fail("the value is not finite");
  double factor = -1;
  for (const BaseUnit& w : kind.whole_words) {
    if (unit == w.text) factor = w.factor;
  }
  if (factor < 0) {
    for (const BaseUnit& base : kind.units) {
      if (kind.small_prefixes) {
        for (const Prefix& p : kSmallPrefixes) {
          if (unit == std::string(p.text) + base.text) {
            factor = p.factor * base.factor;
          }
        }
      }
      for (const Prefix& p : kLargePrefixes) {
        if (unit == std::string(p.text) + base.text) {
          factor = p.factor * base.factor;
        }
      }
    }
  }
  if (factor < 0 && unit.empty()) {
    // A bare number: zero and negative values are judged as in any unit
    // ("0" is not 'unknown unit ""'); a positive one needs its unit.
    if (number > 0) return fail("it has no unit");
    factor = 1;
  }
  if (factor < 0) {
    return fail("unknown unit \"" + unit + "\"");
  }
  double value = number * factor;
  if (!std::isfinite(value)) return fail("the value is not finite");
  if (value < 0) return fail("it must not be negative");
  if (value == 0 && !opts.allow_zero) return fail("it must be greater than 0");
  return value;
}

const Kind& BytesKind() {
  static const Kind k{"a size", "128 MiB", {{"B", 1}, {"", 1}, {"bytes", 1}}};
  return k;
}
const Kind& BandwidthKind() {
  static const Kind k{"a bandwidth",
                      "3.35 TB/s",
                      {{"B/s", 1},
                       {"Bps", 1},
                       {"b/s", 0.125},
                       {"bps", 0.125},
                       {"bit/s", 0.125}}};
  return k;
}
const Kind& FlopRateKind() {
  static const Kind k{"a compute rate",
                      "459 TFLOP/s",
                      {{"FLOP/s", 1},
                       {"FLOPS", 1},
                       {"FLOPs/s", 1},
                       {"flop/s", 1},
                       {"OP/s", 1},
                       {"OPS", 1},
                       {"OPs/s", 1},
                       {"", 1}}};
  return k;
}
const Kind& FlopsKind() {
  static const Kind k{"a FLOP count",
                      "6.3e24 FLOP",
                      {{"FLOP", 1}, {"FLOPs", 1}, {"OP", 1}, {"", 1}}};
  return k;
}
const Kind& DurationKind() {
  static const Kind k{
      "a duration",
      "50 ms",
      {{"s", 1}},
      true,
      {{"sec", 1}, {"min", 60}, {"h", 3600}, {"day", 86400}, {"days", 86400}}};
  return k;
}
const Kind& CountKind() {
  static const Kind k{"a count",
                      "4M",
                      {{"", 1}},
                      false,
                      {{"B", 1e9}, {"b", 1e9}, {"k", 1e3}, {"m", 1e6}}};
  return k;
}
// No base unit, so no decimal prefix: only these words (powers of 1024).
const Kind& LengthKind() {
  static const Kind k{"a length in tokens",
                      "4k",
                      {},
                      false,
                      {{"", 1},
                       {"k", 1024.0},
                       {"K", 1024.0},
                       {"Ki", 1024.0},
                       {"M", 1048576.0},
                       {"Mi", 1048576.0}}};
  return k;
}
const Kind& FrequencyKind() {
  static const Kind k{"a frequency", "1.98 GHz", {{"Hz", 1}}};
  return k;
}
const Kind& WattsKind() {
  static const Kind k{"a power", "700 W", {{"W", 1}}};
  return k;
}

}  // namespace

Result<Bytes> ParseBytes(std::string_view text, ParseOptions opts) {
  auto v = ParseKind(text, BytesKind(), opts);
  if (!v) return tl::unexpected(v.error());
  return Bytes(*v);
}
Result<BytesPerSecond> ParseBandwidth(std::string_view text,
                                      ParseOptions opts) {
  auto v = ParseKind(text, BandwidthKind(), opts);
  if (!v) return tl::unexpected(v.error());
  return BytesPerSecond(*v);
}
Result<FlopsPerSecond> ParseFlopRate(std::string_view text, ParseOptions opts) {
  auto v = ParseKind(text, FlopRateKind(), opts);
  if (!v) return tl::unexpected(v.error());
  return FlopsPerSecond(*v);
}
Result<Flops> ParseFlops(std::string_view text, ParseOptions opts) {
  auto v = ParseKind(text, FlopsKind(), opts);
  if (!v) return tl::unexpected(v.error());
  return Flops(*v);
}
Result<Seconds> ParseDuration(std::string_view text, ParseOptions opts) {
  auto v = ParseKind(text, DurationKind(), opts);
  if (!v) return tl::unexpected(v.error());
  return Seconds(*v);
}
Result<double> ParseCount(std::string_view text, ParseOptions opts) {
  return ParseKind(text, CountKind(), opts);
}
Result<double> ParseLength(std::string_view text, ParseOptions opts) {
  return ParseKind(text, LengthKind(), opts);
}
Result<double> ParseFrequency(std::string_view text, ParseOptions opts) {
  return ParseKind(text, FrequencyKind(), opts);
}
Result<double> ParseWatts(std::string_view text, ParseOptions opts) {
  return ParseKind(text, WattsKind(), opts);
}

}  // namespace scalemodel::units
