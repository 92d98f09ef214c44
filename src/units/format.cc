#include "scalemodel/units/format.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace scalemodel::units {
namespace {

// 3 significant digits with an exponent as papers write it: 6.3e24.
std::string ShortExponent(double value) {
  std::string s = fmt::format("{:.3g}", value);
  const size_t e = s.find("e+");
  if (e != std::string::npos) {
    size_t digits = e + 2;
    while (digits + 1 < s.size() && s[digits] == '0') ++digits;
    s = s.substr(0, e + 1) + s.substr(digits);
  }
  return s;
}

// Prints `value` with 3 significant digits and a decimal prefix chosen so the
// mantissa is in [1, 1000). Values outside the prefix table fall back to
// scientific notation.
std::string WithPrefix(double value, const std::string& unit) {
  static const char* kPrefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  if (value == 0) return "0 " + unit;
  if (!std::isfinite(value)) return fmt::format("{} {}", value, unit);
  double mag = std::fabs(value);
  if (mag < 1) return fmt::format("{:.3g} {}", value, unit);
  int idx = 0;
  while (mag >= 999.5 && idx < 6) {
    mag /= 1000;
    value /= 1000;
    ++idx;
  }
  if (mag >= 999.5) return ShortExponent(value * 1e18) + " " + unit;
  return fmt::format("{:.3g} {}{}", value, kPrefixes[idx], unit);
}

}  // namespace

std::string FormatSeconds(Seconds t) {
  double s = t.si();
  double mag = std::fabs(s);
  if (mag == 0) return "0 s";
  if (mag < 1e-6) return fmt::format("{:.3g} ns", s * 1e9);
  if (mag < 1e-3) return fmt::format("{:.3g} us", s * 1e6);
  if (mag < 1) return fmt::format("{:.3g} ms", s * 1e3);
  if (mag < 120) return fmt::format("{:.3g} s", s);
  if (mag < 2 * 3600) return fmt::format("{:.3g} min", s / 60);
  if (mag < 2 * 86400) return fmt::format("{:.3g} h", s / 3600);
  if (mag < 2 * 365.25 * 86400) return fmt::format("{:.3g} days", s / 86400);
  return FormatCount(s / (365.25 * 86400)) + " years";
}

std::string FormatBytes(Bytes b) { return WithPrefix(b.si(), "B"); }

std::string FormatBytesBinary(Bytes b) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = b.si();
  int idx = 0;
  while (std::fabs(v) >= 1023.5 && idx < 5) {
    v /= 1024;
    ++idx;
  }
  return fmt::format("{:.3g} {}", v, kUnits[idx]);
}

std::string FormatBandwidth(BytesPerSecond r) {
  return WithPrefix(r.si(), "B/s");
}
std::string FormatFlopRate(FlopsPerSecond r) {
  return WithPrefix(r.si(), "FLOP/s");
}
std::string FormatFlops(Flops f) {
  if (std::fabs(f.si()) >= 1e21) return ShortExponent(f.si()) + " FLOP";
  return WithPrefix(f.si(), "FLOP");
}
std::string FormatCount(double n, int digits) {
  static const char* kSuffixes[] = {"", "k", "M", "G", "T", "P", "E"};
  if (!std::isfinite(n)) return fmt::format("{}", n);
  if (n == 0) return "0";
  double mag = std::fabs(n);
  // Below 1000, whole numbers print whole ("512", "1000" never needs a
  // suffix to be read), fractions with `digits` significant digits.
  if (mag < 1000 && std::floor(mag) == mag) return fmt::format("{:.0f}", n);
  if (mag < 1) return fmt::format("{:.{}g}", n, digits);
  const double round_up = 1000 - 0.5 * std::pow(10.0, 3 - digits);
  int idx = 0;
  while (mag >= round_up && idx < 6) {
    mag /= 1000;
    n /= 1000;
    ++idx;
  }
  // Fixed-point with the digits left after the integer part: no exponent.
  const int int_digits = mag < 10 ? 1 : mag < 100 ? 2 : 3;
  const int decimals = std::max(0, digits - int_digits);
  std::string s = fmt::format("{:.{}f}", n, decimals);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s + kSuffixes[idx];
}

std::string FormatUsd(double usd) {
  if (!std::isfinite(usd)) return "-";
  const double mag = std::fabs(usd);
  if (mag < 100) return fmt::format("${:.2f}", usd);
  if (mag < 1000) return fmt::format("${:.0f}", usd);
  return "$" + FormatCount(usd);
}

std::string Plural(double n, const std::string& one, const std::string& many) {
  return FormatCount(n) + " " + (n == 1 ? one : many);
}

}  // namespace scalemodel::units
