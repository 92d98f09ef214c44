// Typed physical quantities held in SI base units: seconds, bytes, FLOP,
// bytes/s, FLOP/s. Prefixes (GB vs GiB, TFLOP/s) exist only at the edges:
// units/parse.h reads them and units/format.h prints them.
//
// Example: units::Seconds t = units::Gigabytes(2) /
// units::GigabytesPerSecond(4);
#ifndef SCALEMODEL_UNITS_QUANTITY_H_
#define SCALEMODEL_UNITS_QUANTITY_H_

#include <compare>

namespace scalemodel::units {

// A value of one physical dimension, in SI base units. Only same-dimension
// arithmetic and the cross-dimension operators below compile.
template <typename Dim>
class Quantity {
 public:
  constexpr Quantity() = default;
  constexpr explicit Quantity(double si) : si_(si) {}
  constexpr double si() const { return si_; }

  friend constexpr Quantity operator+(Quantity a, Quantity b) {
    return Quantity(a.si_ + b.si_);
  }
  friend constexpr Quantity operator-(Quantity a, Quantity b) {
    return Quantity(a.si_ - b.si_);
  }
  friend constexpr Quantity operator-(Quantity a) { return Quantity(-a.si_); }
  friend constexpr Quantity operator*(double k, Quantity q) {
    return Quantity(k * q.si_);
  }
  friend constexpr Quantity operator*(Quantity q, double k) {
    return Quantity(k * q.si_);
  }
  friend constexpr Quantity operator/(Quantity q, double k) {
    return Quantity(q.si_ / k);
  }
  // A ratio of two quantities of the same dimension is a plain number.
  friend constexpr double operator/(Quantity a, Quantity b) {
    return a.si_ / b.si_;
  }
  constexpr Quantity& operator+=(Quantity o) {
    si_ += o.si_;
    return *this;
  }
  constexpr Quantity& operator-=(Quantity o) {
    si_ -= o.si_;
    return *this;
  }
  // clang-tidy 14 takes the literal 0 inside a defaulted <=> for a null
  // pointer.
  // NOLINTNEXTLINE(modernize-use-nullptr)
  friend constexpr auto operator<=>(const Quantity&, const Quantity&) = default;

 private:
  double si_ = 0;
};

using Seconds = Quantity<struct TimeDim>;
using Bytes = Quantity<struct BytesDim>;
using Flops = Quantity<struct FlopDim>;
using BytesPerSecond = Quantity<struct BandwidthDim>;
using FlopsPerSecond = Quantity<struct ComputeRateDim>;

// The only cross-dimension operators are the ones the model needs.
constexpr Seconds operator/(Bytes b, BytesPerSecond r) {
  return Seconds(b.si() / r.si());
}
constexpr Seconds operator/(Flops f, FlopsPerSecond r) {
  return Seconds(f.si() / r.si());
}
constexpr BytesPerSecond operator/(Bytes b, Seconds t) {
  return BytesPerSecond(b.si() / t.si());
}
constexpr FlopsPerSecond operator/(Flops f, Seconds t) {
  return FlopsPerSecond(f.si() / t.si());
}
constexpr Bytes operator*(BytesPerSecond r, Seconds t) {
  return Bytes(r.si() * t.si());
}
constexpr Flops operator*(FlopsPerSecond r, Seconds t) {
  return Flops(r.si() * t.si());
}
// Arithmetic intensity, FLOP per byte.
constexpr double operator/(Flops f, Bytes b) { return f.si() / b.si(); }
// Critical (hardware) intensity, FLOP per byte.
constexpr double operator/(FlopsPerSecond f, BytesPerSecond b) {
  return f.si() / b.si();
}

// Named factories: the prefix is explicit at the call site.
constexpr Bytes Kilobytes(double n) { return Bytes(n * 1e3); }
constexpr Bytes Megabytes(double n) { return Bytes(n * 1e6); }
constexpr Bytes Gigabytes(double n) { return Bytes(n * 1e9); }
constexpr Bytes Kibibytes(double n) { return Bytes(n * 1024.0); }
constexpr Bytes Mebibytes(double n) { return Bytes(n * 1048576.0); }
constexpr Bytes Gibibytes(double n) { return Bytes(n * 1073741824.0); }
constexpr BytesPerSecond GigabytesPerSecond(double n) {
  return BytesPerSecond(n * 1e9);
}
constexpr BytesPerSecond TerabytesPerSecond(double n) {
  return BytesPerSecond(n * 1e12);
}
constexpr FlopsPerSecond TeraflopsPerSecond(double n) {
  return FlopsPerSecond(n * 1e12);
}
constexpr Seconds Milliseconds(double n) { return Seconds(n * 1e-3); }
constexpr Seconds Microseconds(double n) { return Seconds(n * 1e-6); }

template <typename Dim>
constexpr Quantity<Dim> Max(Quantity<Dim> a, Quantity<Dim> b) {
  return a < b ? b : a;
}
template <typename Dim>
constexpr Quantity<Dim> Min(Quantity<Dim> a, Quantity<Dim> b) {
  return a < b ? a : b;
}

}  // namespace scalemodel::units

#endif  // SCALEMODEL_UNITS_QUANTITY_H_
