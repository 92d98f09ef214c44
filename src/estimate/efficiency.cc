#include "scalemodel/estimate/efficiency.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "scalemodel/base/strings.h"
#include "scalemodel/estimate/training.h"
#include "scalemodel/roofline/roofline.h"
#include "scalemodel/units/format.h"

namespace scalemodel::estimate {

ChipEfficiency PeakEfficiency() {
  ChipEfficiency e;
  e.units = 0;
  e.tile_m = e.tile_n = 1;
  return e;
}

// The constants and their origins are data: each chip's [efficiency] table
// in data/chips/*.toml (efficiency.md: MAMF best-shape GEMM fractions, XLA's
// small-dot floor, FlashAttention tables, stream benchmarks; the TPU values
// are labelled assumptions there).
ChipEfficiency RealisticEfficiency(const hw::Chip& chip) {
  ChipEfficiency e = RealisticEfficiencyAtBoost(chip);
  // Sustained clock: peak rates and the short benchmarks above (MAMF,
  // FlashAttention) run near the boost clock; hours of training or serving
  // at full power run near the base clock. Matrix-unit rates scale by
  // base / boost from the chip's datasheet (A100 1.10/1.41, H100/H200
  // 1.59/1.98 GHz) or, where no base clock is published, a measured
  // sustained clock (B200 1.58/1.965 GHz at ~1,000 W, flashinfer-ai/
  // flashinfer pull request 2899); chips with neither (GB200) and TPUs (no
  // boost) keep 1.
  if (chip.base_clock_hz > 0 && chip.boost_clock_hz > chip.base_clock_hz) {
    double f = chip.base_clock_hz / chip.boost_clock_hz;
    e.gemm_max *= f;
    e.gemm_max_fp8 *= f;
    e.gemm_max_fp4 *= f;
    e.attention *= f;
    e.attention_fa2 *= f;
  }
  // A board power limit below the TDP lowers the sustained clock further.
  const double cap = PowerCapFactor(chip);
  e.gemm_max *= cap;
  e.gemm_max_fp8 *= cap;
  e.gemm_max_fp4 *= cap;
  e.attention *= cap;
  e.attention_fa2 *= cap;
  return e;
}

double PowerCapFactor(const hw::Chip& chip, double watts) {
  if (chip.is_tpu() || chip.power_watts <= 0 || !(watts > 0) ||
      watts >= chip.power_watts) {
    return 1.0;
  }
  return std::pow(watts / chip.power_watts, kPowerCapExponent);
}

double PowerCapFactor(const hw::Chip& chip) {
  return PowerCapFactor(chip, chip.power_limit_watts);
}

std::string PowerCapNote(const hw::Chip& chip) {
  const double w = chip.power_limit_watts;
  if (chip.is_tpu() || !(w > 0) || w >= chip.power_watts) return "";
  const double ratio = w / chip.power_watts;
  return fmt::format(
      "power limit {} W of {}'s {} W TDP: matrix throughput x {:.3f} "
      "((limit / TDP)^{}, docs/model.md 5.6){}",
      FormatNumber(w), chip.id, FormatNumber(chip.power_watts),
      PowerCapFactor(chip), FormatNumber(kPowerCapExponent),
      ratio < kPowerCapLowestPublished
          ? "; below the lowest published point (0.571 of TDP), an "
            "extrapolation"
          : "");
}

// Each recipe's GEMM speed against the per-tensor-scaled fp8 GEMM that
// gemm_max_fp8 measures (MAMF: torch._scaled_mm, one scale per tensor).
//   rowwise 0.894: torchao's rowwise-scaled float8 GEMMs, measured end to
//     end against tensorwise on the same job (pytorch/torchtitan commit
//     7a04053, 2025-01: Llama 3 8B on 8 H100, torch.compile, 6,424 vs
//     7,186 tokens/s); applied to the GEMMs alone (an upper bound on the
//     kernel's slowdown, since the cast costs are counted apart).
//   blockwise 1: deepseek-ai/DeepGEMM README, 1x128 / 128x128 block-scaled
//     fp8 GEMMs at up to 1,550 TFLOP/s on H800 (0.78 of 1,979), above the
//     per-tensor best shape (0.709): not slower.
//   mxfp8, nvfp4 1: Blackwell's tensor cores apply the block scales
//     (NVIDIA Transformer Engine docs, "Using FP8 and FP4 with Transformer
//     Engine": MXFP8 / NVFP4 block scaling in hardware on Blackwell); only
//     chips with an fp4 rate (Blackwell) run them.
double Fp8RecipeGemmFactor(const hw::Chip& chip, Fp8Recipe r) {
  const bool block_scaled_cores = chip.Peak(hw::Dtype::kFp4).si() > 0;
  switch (r) {
    case Fp8Recipe::kRowwise:
      return 0.894;
    case Fp8Recipe::kMxfp8:
    case Fp8Recipe::kNvfp4:
      return block_scaled_cores ? 1.0 : 0.0;
    default:
      return 1.0;
  }
}

ChipEfficiency RealisticEfficiencyAtBoost(const hw::Chip& chip) {
  ChipEfficiency e = PeakEfficiency();
  const hw::ChipEfficiencyData& d = chip.efficiency;
  e.gemm_max = d.gemm_max.value_or(e.gemm_max);
  e.gemm_max_fp8 = d.gemm_max_fp8.value_or(e.gemm_max_fp8);
  // No fp4 measurement in the chip's file: its fp8 fraction (the fp4 rate
  // doubles fp8's on Blackwell; the kernels are alike).
  e.gemm_max_fp4 = d.gemm_max_fp4.value_or(e.gemm_max_fp8);
  e.tile_m = d.tile_m.value_or(e.tile_m);
  e.tile_n = d.tile_n.value_or(e.tile_n);
  e.units = d.wave_units.value_or(e.units);
  e.op_overhead = d.op_overhead.value_or(e.op_overhead);
  e.attention = d.attention.value_or(e.attention);
  e.attention_fa2 = d.attention_fa2.value_or(e.attention_fa2);
  e.attention_ramp = d.attention_ramp.value_or(e.attention_ramp);
  e.hbm = d.hbm.value_or(e.hbm);
  e.gemm_stream = d.gemm_stream.value_or(e.hbm);
  e.gather = d.gather.value_or(e.gather);
  e.kernel_launch = d.kernel_launch.value_or(e.kernel_launch);
  e.attention_decode_head =
      d.attention_decode_head.value_or(e.attention_decode_head);
  e.mla_fp8_kv_token = d.mla_fp8_kv_token.value_or(e.mla_fp8_kv_token);
  e.block_fp8_k_step = d.block_fp8_k_step.value_or(e.block_fp8_k_step);
  return e;
}

std::string BorrowedEfficiencyNote(const hw::Chip& chip) {
  const hw::ChipEfficiencyData& d = chip.efficiency;
  if (d.borrowed.empty()) return "";
  std::string values;
  size_t keys = 0;
  hw::ForEachEfficiencyField(d, [&](const char* key, const auto& field) {
    ++keys;
    if (std::find(d.borrowed.begin(), d.borrowed.end(), key) ==
            d.borrowed.end() ||
        !field) {
      return;
    }
    std::string v;
    using T = typename std::decay_t<decltype(field)>::value_type;
    if constexpr (std::is_same_v<T, units::Seconds>) {
      v = units::FormatSeconds(*field);
    } else if constexpr (std::is_same_v<T, bool>) {
      v = *field ? "true" : "false";
    } else {
      v = FormatNumber(static_cast<double>(*field));
    }
    values += (values.empty() ? "" : ", ") + std::string(key) + " " + v;
  });
  const bool all = d.borrowed.size() == keys;
  return "realistic efficiency constants for " + chip.id + ": " +
         (all ? "none in its catalog file" : "not all in its catalog file") +
         "; borrowed from " + d.borrowed_from + " (" + values +
         "); add an [efficiency] table to its file to use its own "
         "(docs/catalog-format.md)";
}

double AttentionSeqFactor(double seq) {
  static constexpr double kLen[] = {512, 1024, 2048, 4096, 8192, 16384};
  static constexpr double kRel[] = {0.52, 0.70, 0.82, 0.92, 0.96, 1.0};
  const double at8k = 0.96;
  if (!(seq > 0)) return 1.0;
  if (seq <= kLen[0]) return kRel[0] * seq / kLen[0] / at8k;
  if (seq >= kLen[5]) return kRel[5] / at8k;
  for (int i = 0; i < 5; ++i) {
    if (seq <= kLen[i + 1]) {
      double f = std::log(seq / kLen[i]) / std::log(kLen[i + 1] / kLen[i]);
      return (kRel[i] + f * (kRel[i + 1] - kRel[i])) / at8k;
    }
  }
  return 1.0;
}

double GemmMaxFor(const ChipEfficiency& eff, hw::Dtype compute) {
  if (compute == hw::Dtype::kFp4) return eff.gemm_max_fp4;
  if (compute == hw::Dtype::kFp8) return eff.gemm_max_fp8;
  return eff.gemm_max;
}

double SkinnyTileRows(double rows) {
  for (double t : {8.0, 16.0, 32.0, 64.0}) {
    if (rows <= t) return t;
  }
  return 128;
}

namespace {

// q of one tile shape: the output padded to whole tm x tn tiles, then a
// partial last wave of tiles over `units` SMs costing a whole wave. Fewer
// rows than the tile: the smallest skinny tile that covers them and split-K
// instead of waves (cuBLASLt enumerates 8x8 ... 64x64 tiles besides the
// 128-row ones: nvmath cublasLt.MatmulTile, efficiency.md 1.3).
double OneTileQuantization(double m, double n, double groups, double tm,
                           double tn, double units, bool skinny) {
  if (skinny && m < tm) {
    tm = SkinnyTileRows(m);
    units = 0;
  }
  const double a = std::ceil(m / tm), b = std::ceil(n / tn);
  double q = (m * n) / (a * tm * b * tn);
  if (units > 0) {
    const double tiles = groups * a * b;
    q *= tiles / (std::ceil(tiles / units) * units);
  }
  return q;
}

// The CTA tiles a GPU GEMM library chooses among besides the catalog's
// largest one (cuBLASLt's and CUTLASS's Hopper SM90 tile shapes, nvmath
// cublasLt.MatmulTile). Measured on an H200 (docs/device-checks.md, 2026-12-04,
// 303 cuBLAS GEMMs at eight model shapes and 13 held-out ones, 1 to 16,384
// rows): the best q over this menu put the model within 8.6% median / 26%
// p90 of the held-out bf16 times, against 15.8% / 170% for the 128 x 256
// tile alone, which wrongly leaves 132 SMs to a handful of tiles at 128 to
// 1,024 rows.
constexpr double kGpuTiles[][2] = {{64, 64}, {64, 128}, {128, 128}, {256, 128}};

}  // namespace

double TileQuantization(const ChipEfficiency& eff, double m, double n,
                        double groups) {
  if (eff.units <= 0) {
    return OneTileQuantization(m, n, groups, eff.tile_m, eff.tile_n, 0, false);
  }
  double q = OneTileQuantization(m, n, groups, eff.tile_m, eff.tile_n,
                                 eff.units, true);
  for (const auto& t : kGpuTiles) {
    q = std::max(
        q, OneTileQuantization(m, n, groups, t[0], t[1], eff.units, true));
  }
  return q;
}

units::Seconds GemmTime(const hw::Chip& chip, const ChipEfficiency& eff,
                        double m, double n, double k, const GemmFormat& f) {
  if (m <= 0 || n <= 0 || k <= 0) return units::Seconds(0);
  double peak = chip.Peak(f.compute).si();
  if (peak <= 0) peak = chip.Peak(hw::Dtype::kBf16).si();
  double e = GemmMaxFor(eff, f.compute);
  const double q = f.quantize ? TileQuantization(eff, m, n) : 1.0;
  const roofline::MatmulWork w =
      roofline::Work(m, n, k, f.a_bytes, f.w_bytes, f.out_bytes);
  return eff.op_overhead +
         roofline::Time(
             w.flops, w.bytes, units::FlopsPerSecond(e * q * peak),
             units::BytesPerSecond(eff.gemm_stream * chip.hbm_bandwidth.si()));
}

units::Seconds GemmTime(const hw::Chip& chip, const ChipEfficiency& eff,
                        double m, double n, double k, hw::Dtype dtype) {
  const double b = hw::BytesPerElement(dtype);
  return GemmTime(chip, eff, m, n, k, GemmFormat{dtype, b, b, 2, true});
}

}  // namespace scalemodel::estimate
