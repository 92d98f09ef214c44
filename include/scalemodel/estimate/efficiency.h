// Realistic-mode efficiency constants, built from the chip's catalog data
// (its [efficiency] table: physical, each with its published origin;
// docs/catalog-format.md, docs/model.md 5.6), and the one GEMM-time function.
// Nothing here is fitted to a training run.
#ifndef SCALEMODEL_ESTIMATE_EFFICIENCY_H_
#define SCALEMODEL_ESTIMATE_EFFICIENCY_H_

#include <string>

#include "scalemodel/hw/chip.h"
#include "scalemodel/units/quantity.h"

namespace scalemodel::estimate {

struct ChipEfficiency {
  double gemm_max = 1.0;      // best-shape matmul fraction of peak (bf16)
  double gemm_max_fp8 = 1.0;  // same for fp8
  // Same for fp4 (NVFP4 / MXFP4), of the fp4 peak; the chip's gemm_max_fp8
  // where its catalog file gives no fp4 measurement.
  double gemm_max_fp4 = 1.0;
  int tile_m = 128;  // output tile rows (GPU CTA / TPU MXU)
  int tile_n = 128;
  int units = 1;               // SMs (GPU) for wave quantization; 0 = none
  units::Seconds op_overhead;  // fixed cost per GEMM / kernel
  // Start-up of one small (non-GEMM) kernel in a decode step; 0 = the
  // chip's file gives none (the serving model then takes Hopper's).
  units::Seconds kernel_launch;
  // The decode attention kernel's time per sequence and KV head per layer
  // (the chip's `attention_decode_head`; 0: none).
  units::Seconds attention_decode_head;
  // SGLang's FlashAttention-3 MLA decode over an fp8 KV cache: time per
  // cached token per layer (the chip's `mla_fp8_kv_token`; 0: none).
  units::Seconds mla_fp8_kv_token;
  // A block-scaled fp8 GEMM on an untuned kernel configuration: time per
  // 128-wide K step of one workgroup's 128 x 128 tile (the chip's
  // `block_fp8_k_step`; 0: none).
  units::Seconds block_fp8_k_step;
  double attention = 1.0;  // fused attention kernel, fraction of peak
  // FlashAttention-2 on this chip (the pre-FA3 kernel generation on Hopper);
  // equal to `attention` where FA2 is the chip's best (A100) or unmeasured.
  double attention_fa2 = 1.0;
  double hbm = 1.0;  // streaming kernels, fraction of HBM peak
  // A GEMM's operand streaming (its memory-bound time), fraction of HBM
  // peak: the chip's measured `gemm_stream`, else `hbm`.
  double gemm_stream = 1.0;
  // Row gathers (the dropless MoE token permutation), of the `hbm` rate;
  // 1 where the chip's file gives none (docs/model.md 5.2).
  double gather = 1.0;
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

// Sustained matrix throughput under a board power limit, as a fraction of
// the throughput at the chip's TDP (docs/model.md 5.6, "Power caps"):
//   (watts / tdp)^kPowerCapExponent, 1 at or above the TDP.
// The exponent is fitted by least squares on log(throughput ratio) against
// log(power ratio), through the origin, over the published pairs of one die
// sold at two board powers (dense bf16 datasheet peaks, each quoted at the
// tensor clock that fits the part's power):
//   GH100 (132 SMs): H100 NVL 835.5 TFLOP/s at 400 W vs H100 SXM5 989.5 at
//     700 W: power 0.571, throughput 0.844 (NVIDIA H100 datasheet);
//   GB100: HGX B200 2.25 PFLOP/s at 1,000 W vs GB200 2.5 at 1,200 W: power
//     0.833, throughput 0.900 (NVIDIA DGX B200 and GB200 NVL72 datasheets).
// alpha = sum(ln p ln t) / sum((ln p)^2) = 0.11385 / 0.34639 = 0.329: the
// cube-root law of dynamic power (P ~ f V^2 with V ~ f). Below a power ratio
// of kPowerCapLowestPublished the curve is an extrapolation.
inline constexpr double kPowerCapExponent = 0.329;
inline constexpr double kPowerCapLowestPublished = 0.571;
// The factor at `watts` on `chip`; 1 for TPUs (no published measurement of
// TPU throughput under a power limit: no derate), for a chip without a TDP
// and for watts <= 0 (no cap).
double PowerCapFactor(const hw::Chip& chip, double watts);
// At the chip's own limit (chip.power_limit_watts; 0 = its TDP).
double PowerCapFactor(const hw::Chip& chip);
// One sentence for a realistic report when the chip runs below its TDP
// (the limit, the factor, and whether the curve is extrapolated there);
// empty otherwise.
std::string PowerCapNote(const hw::Chip& chip);

// Peak mode: all 1.0, no overheads, no quantization.
ChipEfficiency PeakEfficiency();
// Realistic mode: the chip's catalog constants (chip.efficiency), with
// matrix-unit rates scaled from boost to base clock (docs/model.md 5.6) and
// by PowerCapFactor(chip) under a power limit below the TDP.
ChipEfficiency RealisticEfficiency(const hw::Chip& chip);
// The same constants as measured (near boost clock), before that scaling.
// A field the chip's data leaves unset (only possible for a chip built
// outside the catalog, which fills every field) keeps its peak-mode value.
ChipEfficiency RealisticEfficiencyAtBoost(const hw::Chip& chip);

// One sentence for a realistic-mode report when the chip's catalog file left
// efficiency constants out and the catalog borrowed them from another chip:
// which, from where, and their values; empty when nothing was borrowed.
std::string BorrowedEfficiencyNote(const hw::Chip& chip);

// The best-shape matmul fraction for GEMMs computed in `compute`:
// gemm_max_fp4 for fp4, gemm_max_fp8 for fp8, gemm_max otherwise.
double GemmMaxFor(const ChipEfficiency& eff, hw::Dtype compute);

// One GEMM's formats: the matrix-unit rate and efficiency fraction come from
// `compute` (GemmMaxFor: fp8 uses gemm_max_fp8, fp4 gemm_max_fp4, others
// gemm_max; a chip without
// that rate runs at its bf16 peak); bytes per element of the activations
// [m, k], weights [k, n] and output [m, n].
struct GemmFormat {
  hw::Dtype compute = hw::Dtype::kBf16;
  double a_bytes = 2;
  double w_bytes = 2;
  double out_bytes = 2;
  // Tile and wave quantization; off, q = 1 (serving's peak mode, the book's
  // formula).
  bool quantize = true;
};

// Output-tile rows a GEMM library picks for a skinny GEMM of `rows` rows:
// the smallest of 8, 16, 32 and 64 rows that covers them, else 128.
double SkinnyTileRows(double rows);

// Tile x wave quantization q of `groups` GEMMs of [m, n] outputs run as one
// kernel whose tiles share the SMs (groups = 1: a plain GEMM). On a GPU
// (eff.units > 0) the best q of the catalog tile and the library's menu of
// CTA tiles (64x64, 64x128, 128x128, 256x128), each at a skinny tile and
// without waves where m is below its rows; elsewhere the catalog tile
// alone (TPU MXU padding). docs/model.md 5.2.
double TileQuantization(const ChipEfficiency& eff, double m, double n,
                        double groups = 1);

// Time of one GEMM [m, k] x [k, n] on `chip`: the roofline of
// roofline::Work(m, n, k, ...) against the achievable rates,
//   t = overhead + max(2mnk / (e * q * peak), bytes / (hbm * BW)),
// q = tile quantization x wave quantization (docs/model.md 5.2). Zero when a
// dimension is not positive.
units::Seconds GemmTime(const hw::Chip& chip, const ChipEfficiency& eff,
                        double m, double n, double k, const GemmFormat& format);
// Activations and weights at `dtype` (also the compute format), bf16 output.
units::Seconds GemmTime(const hw::Chip& chip, const ChipEfficiency& eff,
                        double m, double n, double k, hw::Dtype dtype);

}  // namespace scalemodel::estimate

#endif  // SCALEMODEL_ESTIMATE_EFFICIENCY_H_
