// Readable printing of quantities: picks a decimal prefix so the mantissa is
// in [1, 1000) and prints 3 significant digits ("1.23 ms", "3.35 TB/s").
// Memory capacities can be printed in binary units on request.
#ifndef SCALEMODEL_UNITS_FORMAT_H_
#define SCALEMODEL_UNITS_FORMAT_H_

#include <string>

#include "fmt/format.h"
#include "scalemodel/units/quantity.h"

namespace scalemodel::units {

std::string FormatSeconds(Seconds t);           // "812 ms", "3.2 days"
std::string FormatBytes(Bytes b);               // "85.9 GB"
std::string FormatBytesBinary(Bytes b);         // "80 GiB"
std::string FormatBandwidth(BytesPerSecond r);  // "3.35 TB/s"
std::string FormatFlopRate(FlopsPerSecond r);   // "989 TFLOP/s"
std::string FormatFlops(Flops f);               // "6.3e24 FLOP"
// The one style of numbers in text for people (docs/cli.md "Text output"):
// a count with a decimal suffix and `digits` significant digits, never
// scientific notation: 4194304 -> "4.19M", 16070 -> "16.1k", 512 -> "512",
// 0.25 -> "0.25". Suffixes k, M, G, T, P, E (SI).
std::string FormatCount(double n, int digits = 3);
// Money in US dollars: "$0.42", "$10.80", "$233", "$233k", "$2.33M".
std::string FormatUsd(double usd);
// A count and its noun, singular for exactly one: "1 microbatch",
// "16 microbatches", "16.1k configurations".
std::string Plural(double n, const std::string& one, const std::string& many);

}  // namespace scalemodel::units

// fmt formatters, so `fmt::format("{}", seconds)` prints "1.23 ms".
template <>
struct fmt::formatter<scalemodel::units::Seconds>
    : fmt::formatter<std::string> {
  template <typename Ctx>
  auto format(scalemodel::units::Seconds v, Ctx& ctx) const {
    return fmt::formatter<std::string>::format(
        scalemodel::units::FormatSeconds(v), ctx);
  }
};
template <>
struct fmt::formatter<scalemodel::units::Bytes> : fmt::formatter<std::string> {
  template <typename Ctx>
  auto format(scalemodel::units::Bytes v, Ctx& ctx) const {
    return fmt::formatter<std::string>::format(
        scalemodel::units::FormatBytes(v), ctx);
  }
};
template <>
struct fmt::formatter<scalemodel::units::BytesPerSecond>
    : fmt::formatter<std::string> {
  template <typename Ctx>
  auto format(scalemodel::units::BytesPerSecond v, Ctx& ctx) const {
    return fmt::formatter<std::string>::format(
        scalemodel::units::FormatBandwidth(v), ctx);
  }
};
template <>
struct fmt::formatter<scalemodel::units::FlopsPerSecond>
    : fmt::formatter<std::string> {
  template <typename Ctx>
  auto format(scalemodel::units::FlopsPerSecond v, Ctx& ctx) const {
    return fmt::formatter<std::string>::format(
        scalemodel::units::FormatFlopRate(v), ctx);
  }
};
template <>
struct fmt::formatter<scalemodel::units::Flops> : fmt::formatter<std::string> {
  template <typename Ctx>
  auto format(scalemodel::units::Flops v, Ctx& ctx) const {
    return fmt::formatter<std::string>::format(
        scalemodel::units::FormatFlops(v), ctx);
  }
};

#endif  // SCALEMODEL_UNITS_FORMAT_H_
