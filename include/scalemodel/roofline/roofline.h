// The roofline model (the book's "roofline" chapter): an operation with a
// FLOP count and a byte count takes at least max(T_math, T_mem) and at most
// T_math + T_mem, and is compute-bound when its arithmetic intensity exceeds
// the hardware's critical intensity (peak FLOP/s over bandwidth).
//
// Example: AnalyzeMatmul(v5e, {.b = 512, .d = 8192, .f = 8192}, {}) is
// compute-bound; with b = 128 it is memory-bound (critical batch ~240).
#ifndef SCALEMODEL_ROOFLINE_ROOFLINE_H_
#define SCALEMODEL_ROOFLINE_ROOFLINE_H_

#include <optional>
#include <string>

#include "scalemodel/base/error.h"
#include "scalemodel/hw/chip.h"
#include "scalemodel/units/quantity.h"

namespace scalemodel::roofline {

enum class MemoryLevel { kHbm, kOnChip };

struct Roofline {
  units::Flops flops;
  units::Bytes bytes;
  units::FlopsPerSecond peak;       // the compute roof used
  units::BytesPerSecond bandwidth;  // the memory roof used
  double intensity = 0;             // FLOP per byte of the operation
  double critical_intensity = 0;    // peak / bandwidth
  units::Seconds t_math;            // flops / peak
  units::Seconds t_mem;             // bytes / bandwidth
  units::Seconds t_lower;           // max(t_math, t_mem): perfect overlap
  units::Seconds t_upper;           // t_math + t_mem: no overlap
  bool compute_bound = false;       // t_math >= t_mem
  units::FlopsPerSecond achieved;   // flops / t_lower = min(peak, I * bw)
};

// REQUIRES: peak > 0 and bandwidth > 0; flops and bytes >= 0, not both 0.
Roofline Evaluate(units::Flops flops, units::Bytes bytes,
                  units::FlopsPerSecond peak, units::BytesPerSecond bandwidth);

// The roofline time of an operation at perfect overlap,
// max(flops / peak, bytes / bandwidth): Evaluate's t_lower without the rest
// of the analysis, for callers in hot loops (estimate::GemmTime, hence the
// plan search). REQUIRES: peak > 0 and bandwidth > 0.
inline units::Seconds Time(units::Flops flops, units::Bytes bytes,
                           units::FlopsPerSecond peak,
                           units::BytesPerSecond bandwidth) {
  return units::Max(flops / peak, bytes / bandwidth);
}

// The work of one matmul X[m, k] . W[k, n] -> Y[m, n] (MatmulShape's B, D, F
// are m, k, n) with a, w, o bytes per element of X, W and Y:
// FLOPs = 2mnk, bytes = a mk + w kn + o mn (each operand read or written
// once). The one place these are counted: AnalyzeMatmul, estimate::GemmTime
// and the serving estimate use it.
struct MatmulWork {
  units::Flops flops;
  units::Bytes bytes;
};
inline MatmulWork Work(double m, double n, double k, double a, double w,
                       double o) {
  return {units::Flops(2 * m * n * k),
          units::Bytes(a * m * k + w * k * n + o * m * n)};
}

// A matmul X[B, D] . W[D, F] -> Y[B, F]: B is the token batch, W the
// weights. FLOPs = 2BDF.
struct MatmulShape {
  double b = 0;
  double d = 0;
  double f = 0;
};

// Storage formats. The compute format follows the book: int8 x int8 and
// fp8 x fp8 run at the int8 / fp8 rate; int8 or int4 weights with bf16
// activations are upcast and computed in bf16. `compute` overrides that.
struct MatmulDtypes {
  hw::Dtype activations = hw::Dtype::kBf16;
  hw::Dtype weights = hw::Dtype::kBf16;
  std::optional<hw::Dtype> output;   // default: activations
  std::optional<hw::Dtype> compute;  // default: see above
};

hw::Dtype ComputeDtype(const MatmulDtypes& d);

struct MatmulRoofline {
  Roofline roofline;
  hw::Dtype compute_dtype = hw::Dtype::kBf16;
  MemoryLevel level = MemoryLevel::kHbm;
  std::string level_name;  // "HBM", "VMEM", ...
  // Token batch above which this matmul is compute-bound, from the exact
  // byte count with this D and F; infinity when it never is.
  double critical_batch_exact = 0;
  // The book's asymptotic rule for B << D, F: critical_intensity x
  // (weight bytes per element) / 2, e.g. 240 for bf16 on v5e, 120 for int8
  // weights with bf16 compute.
  double critical_batch = 0;
};

// Errors when the chip has no rate for the compute dtype or no bandwidth for
// the memory level ("a100 has no fp8 matrix rate in the catalog").
Result<MatmulRoofline> AnalyzeMatmul(const hw::Chip& chip,
                                     const MatmulShape& shape,
                                     const MatmulDtypes& dtypes,
                                     MemoryLevel level = MemoryLevel::kHbm);

// A raw FLOPs/bytes roofline against the chip's HBM (or on-chip memory) at
// the `compute` dtype's peak.
Result<Roofline> AnalyzeOp(const hw::Chip& chip, units::Flops flops,
                           units::Bytes bytes, hw::Dtype compute,
                           MemoryLevel level = MemoryLevel::kHbm);

}  // namespace scalemodel::roofline

#endif  // SCALEMODEL_ROOFLINE_ROOFLINE_H_
