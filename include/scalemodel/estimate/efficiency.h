// Realistic-mode efficiency constants: per chip family, physical, each with
// its published origin (shared/reference/efficiency.md; docs/model.md 5.5).
// Nothing here is fitted to a training run.
#ifndef SCALEMODEL_ESTIMATE_EFFICIENCY_H_
#define SCALEMODEL_ESTIMATE_EFFICIENCY_H_

#include "scalemodel/hw/chip.h"
#include "scalemodel/units/quantity.h"

namespace scalemodel::estimate {

struct ChipEfficiency {
  double gemm_max = 1.0;      // best-shape matmul fraction of peak (bf16)
  double gemm_max_fp8 = 1.0;  // same for fp8
  int tile_m = 128;           // output tile rows (GPU CTA / TPU MXU)
  int tile_n = 128;
  int units = 1;               // SMs (GPU) for wave quantization; 0 = none
  units::Seconds op_overhead;  // fixed cost per GEMM / kernel
  double attention = 1.0;      // fused attention kernel, fraction of peak
  // FlashAttention-2 on this chip (the pre-FA3 kernel generation on Hopper);
  // equal to `attention` where FA2 is the chip's best (A100) or unmeasured.
  double attention_fa2 = 1.0;
  double hbm = 1.0;  // streaming kernels, fraction of HBM peak
  // Whether the attention efficiency follows the measured sequence-length
  // ramp (GPU FlashAttention kernels; see AttentionSeqFactor).
  bool attention_ramp = false;
};

// Attention efficiency at a per-sequence length relative to its value at 8K
// tokens, where the `attention` constants are measured. FlashAttention's
// causal forward + backward tables (efficiency.md 2.1-2.2; FA2 on A100,
// hd128) rise the same way on every kernel and chip: 0.52, 0.70, 0.82,
// 0.92, 0.96, 1.0 of the 16K value at 512 ... 16K (short sequences leave
// more of each causal tile masked and fewer tiles to fill the GPU). Log-
// linear between points, flat beyond 16K, proportional below 512.
double AttentionSeqFactor(double seq);

// Peak mode: all 1.0, no overheads, no quantization.
ChipEfficiency PeakEfficiency();
// Realistic mode, by chip: the measured constants below, with matrix-unit
// rates scaled from boost to base clock (docs/model.md 5.6).
ChipEfficiency RealisticEfficiency(const hw::Chip& chip);
// The same constants as measured (near boost clock), before that scaling.
ChipEfficiency RealisticEfficiencyAtBoost(const hw::Chip& chip);

// Time of one GEMM [m, k] x [k, n] at `dtype` on `chip`:
//   t = overhead + max(2mnk / (gemm_max * q * peak), bytes / (hbm * BW)),
// q = tile quantization x wave quantization (docs/model.md 5.2).
units::Seconds GemmTime(const hw::Chip& chip, const ChipEfficiency& eff,
                        double m, double n, double k, hw::Dtype dtype);

}  // namespace scalemodel::estimate

#endif  // SCALEMODEL_ESTIMATE_EFFICIENCY_H_
