#include "scalemodel/roofline/roofline.h"

#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "scalemodel/base/check.h"
#include "scalemodel/base/strings.h"

namespace scalemodel::roofline {

Roofline Evaluate(units::Flops flops, units::Bytes bytes,
                  units::FlopsPerSecond peak, units::BytesPerSecond bandwidth) {
  SCALEMODEL_CHECK(peak.si() > 0 && bandwidth.si() > 0);
  Roofline r;
  r.flops = flops;
  r.bytes = bytes;
  r.peak = peak;
  r.bandwidth = bandwidth;
  r.intensity =
      bytes.si() > 0 ? flops / bytes : std::numeric_limits<double>::infinity();
  r.critical_intensity = peak / bandwidth;
  r.t_math = flops / peak;
  r.t_mem = bytes / bandwidth;
  r.t_lower = units::Max(r.t_math, r.t_mem);
  r.t_upper = r.t_math + r.t_mem;
  r.compute_bound = r.t_math >= r.t_mem;
  r.achieved = r.t_lower.si() > 0 ? flops / r.t_lower : units::FlopsPerSecond();
  return r;
}

hw::Dtype ComputeDtype(const MatmulDtypes& d) {
  if (d.compute) return *d.compute;
  // Same low-precision format on both operands runs on that format's units.
  if (d.weights == d.activations) return d.activations;
  // Mixed: weights are upcast to the activations' format (the book's int8
  // weights with bf16 activations and compute).
  return d.activations;
}

namespace {

struct Memory {
  units::BytesPerSecond bandwidth;
  std::string name;
};

Result<Memory> PickMemory(const hw::Chip& chip, MemoryLevel level) {
  if (level == MemoryLevel::kHbm) return Memory{chip.hbm_bandwidth, "HBM"};
  for (const hw::OnChipMemory& m : chip.on_chip) {
    if (m.bandwidth.si() > 0) return Memory{m.bandwidth, m.name};
  }
  return InvalidArgument(chip.id +
                         " has no on-chip memory bandwidth in the catalog; "
                         "use the HBM roofline");
}

Result<units::FlopsPerSecond> PickPeak(const hw::Chip& chip, hw::Dtype d) {
  units::FlopsPerSecond p = chip.Peak(d);
  if (p.si() <= 0) {
    std::string have;
    for (hw::Dtype x : hw::kAllDtypes) {
      if (chip.Peak(x).si() > 0) {
        have += (have.empty() ? "" : ", ") + std::string(hw::DtypeName(x));
      }
    }
    return InvalidArgument(chip.id + " has no " +
                           std::string(hw::DtypeName(d)) +
                           " matrix rate in the catalog (it has " + have + ")");
  }
  return p;
}

}  // namespace

Result<Roofline> AnalyzeOp(const hw::Chip& chip, units::Flops flops,
                           units::Bytes bytes, hw::Dtype compute,
                           MemoryLevel level) {
  auto mem = PickMemory(chip, level);
  if (!mem) return tl::unexpected(mem.error());
  auto peak = PickPeak(chip, compute);
  if (!peak) return tl::unexpected(peak.error());
  return Evaluate(flops, bytes, *peak, mem->bandwidth);
}

Result<MatmulRoofline> AnalyzeMatmul(const hw::Chip& chip,
                                     const MatmulShape& shape,
                                     const MatmulDtypes& dtypes,
                                     MemoryLevel level) {
  // No matmul comes near 2^40 in any dimension; beyond it 2BDF overflows to
  // infinity and the times to NaN (docs/units.md, "Limits").
  constexpr double kMaxDim = 1099511627776.0;  // 2^40
  const std::pair<const char*, double> dims[] = {
      {"B", shape.b}, {"D", shape.d}, {"F", shape.f}};
  for (const auto& [name, v] : dims) {
    if (!(v > 0 && v <= kMaxDim)) {
      return InvalidArgument(std::string("expected each dimension of BxDxF "
                                         "from 1 to 2^40 (1099511627776), "
                                         "got ") +
                                 name + "=" + FormatNumber(v),
                             "matmul");
    }
    if (v != std::floor(v)) {
      return InvalidArgument(std::string("expected whole dimensions of BxDxF, "
                                         "got ") +
                                 name + "=" + FormatNumber(v),
                             "matmul");
    }
  }
  auto mem = PickMemory(chip, level);
  if (!mem) return tl::unexpected(mem.error());
  hw::Dtype compute = ComputeDtype(dtypes);
  auto peak = PickPeak(chip, compute);
  if (!peak) return tl::unexpected(peak.error());
  double a = hw::BytesPerElement(dtypes.activations);
  double w = hw::BytesPerElement(dtypes.weights);
  double o = hw::BytesPerElement(dtypes.output.value_or(dtypes.activations));
  const double d = shape.d, f = shape.f;
  const MatmulWork work = Work(shape.b, f, d, a, w, o);

  MatmulRoofline m;
  m.roofline = Evaluate(work.flops, work.bytes, *peak, mem->bandwidth);
  m.compute_dtype = compute;
  m.level = level;
  m.level_name = mem->name;
  // 2BDF/C = (aBD + wDF + oBF)/W  =>  B = (wDF/W) / (2DF/C - (aD + oF)/W).
  double C = peak->si(), W = mem->bandwidth.si();
  double denom = 2 * d * f / C - (a * d + o * f) / W;
  m.critical_batch_exact = denom > 0 ? (w * d * f / W) / denom
                                     : std::numeric_limits<double>::infinity();
  m.critical_batch = m.roofline.critical_intensity * w / 2;
  return m;
}

}  // namespace scalemodel::roofline
