#include "scalemodel/units/format.h"

#include <cmath>
#include <string>

namespace scalemodel::units {
namespace {

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
  if (mag >= 999.5) return fmt::format("{:.3g} {}{}", value * 1e18, "", unit);
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
  return fmt::format("{:.3g} days", s / 86400);
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
  if (std::fabs(f.si()) >= 1e21) return fmt::format("{:.3g} FLOP", f.si());
  return WithPrefix(f.si(), "FLOP");
}
std::string FormatCount(double n) {
  std::string s = WithPrefix(n, "");
  // "4.19 M" -> "4.19M"; "512 " -> "512"
  std::string out;
  for (char c : s) {
    if (c != ' ') out += c;
  }
  return out;
}

}  // namespace scalemodel::units
