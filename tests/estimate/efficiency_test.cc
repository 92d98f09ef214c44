#include "scalemodel/estimate/efficiency.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "../testing/catalog.h"
#include "scalemodel/base/strings.h"
#include "scalemodel/estimate/inference.h"
#include "scalemodel/estimate/training.h"
#include "scalemodel/ingest/hf_config.h"
#include "scalemodel/roofline/roofline.h"

namespace scalemodel::estimate {
namespace {

using scalemodel::testing::BuiltinCatalog;
using scalemodel::testing::Chip;

// ---- GEMM time, pinned by hand from the formula (docs/model.md 5.2):
//   t = t0 + max(2mnk / (e q C), bytes / (hbm W)),
//   q = m n / (ceil(m/Tm) Tm ceil(n/Tn) Tn) x tiles / (waves x units),
//   bytes = b (mk + kn) + 2 mn (b = 2 for bf16, 1 for fp8; bf16 output).
// Constants at the boost clock, from the chips' [efficiency] tables:
//   h100: e 0.803 (fp8 0.709), tile 128x256, 132 SMs, t0 5 us, hbm 0.87;
//         C 989.5 (fp8 1979) TFLOP/s, W 3.35 TB/s.
//   a100: e 0.869, tile 128x128, 108 SMs, t0 5 us, hbm 0.86; C 312, W 2.039.
//   b200: e 0.776 (fp8 0.763), 128x256, 148 SMs, 5 us, hbm 0.85; C 2250
//         (fp8 4500), W 8.
//   tpu-v5p: e 0.792 (fitted, docs/accuracy.md), tile 128x128, no waves, t0 2
//   us, hbm 0.85; C 459,
//         W 2.765. tpu-v6e: the same with a 256x256 tile; C 918, W 1.638.
struct GemmCase {
  const char* chip;
  double m, n, k;
  hw::Dtype dtype;
  double seconds;
  const char* why;
};

// GPUs take the best q over the catalog tile and the menu 64x64, 64x128,
// 128x128, 256x128 (TileQuantization; measured on an H200, docs/model.md
// 5.2); rows below a tile's rows take a skinny tile without waves.
const GemmCase kGemmCases[] = {
    // 64x64 tiles: 128 x 128 = 16384 tiles, ceil(16384/132) = 125 waves:
    // q = 16384/16500 = 0.992970 (128x256: 2048/2112 = 0.969697);
    // 2 x 8192^3 = 1.0995e12 FLOP / (0.803 x 0.992970 x 989.5e12) =
    // 1393.582 us; bytes 6 x 8192^2 = 4.03e8 / (0.87 x 3.35e12) = 138 us.
    {"h100", 8192, 8192, 8192, hw::Dtype::kBf16, 1.39858186991e-3,
     "5 us + 1393.582 us (math)"},
    // Every tile gives 0.969697 (e.g. 128x256: 512 tiles, 4 waves);
    // 1.374e11 / (0.803 x 0.969697 x 989.5e12) = 178.378 us.
    {"h100", 4096, 4096, 4096, hw::Dtype::kBf16, 1.83378479348e-4,
     "5 us + 178.378 us"},
    // Skinny: 16 rows take a 16-row tile and split-K (no waves), q = 1;
    // math 2.703 us, memory at the GEMM streaming rate (gemm_stream 0.850,
    // not hbm 0.87): 1.347e8 B / (0.850 x 3.35e12) = 47.320 us.
    {"h100", 16, 8192, 8192, hw::Dtype::kBf16, 5.23194086040e-5,
     "5 us + 47.320 us (memory)"},
    // Not a tile multiple: 64x128 tiles, ceil(1000/64) = 16, ceil(1000/128)
    // = 8: q = 1e6 / (1024 x 1024) x 128/132 = 0.924775; 2e9 / (0.803 x
    // 0.924775 x 989.5e12) = 2.722 us.
    {"h100", 1000, 1000, 1000, hw::Dtype::kBf16, 7.72183958966e-6,
     "5 us + 2.722 us"},
    // fp8: 2 x 8192^3 / (0.709 x 0.992970 x 1979e12) = 789.172 us.
    {"h100", 8192, 8192, 8192, hw::Dtype::kFp8, 7.94172243679e-4,
     "5 us + 789.172 us"},
    // fp8 skinny: memory, 6.737e7 B / (0.850 x 3.35e12) = 23.706 us.
    {"h100", 16, 8192, 8192, hw::Dtype::kFp8, 2.87057348551e-5,
     "5 us + 23.706 us (memory)"},
    // 256x128 tiles: 32 x 64 = 2048 tiles, ceil(2048/108) = 19 waves: q =
    // 2048/2052 = 0.998051 (as 128x128's 4096/4104); 1.0995e12 / (0.869 x
    // 0.998051 x 312e12) = 4063.24 us.
    {"a100", 8192, 8192, 8192, hw::Dtype::kBf16, 4.06824360237e-3,
     "5 us + 4063.24 us"},
    // 64x64 tiles: 16 x 16 = 256 tiles, 3 waves of 108: q = 1e6/1024^2 x
    // 256/324 = 0.753520; 2e9 / (0.869 x 0.753520 x 312e12) = 9.790 us.
    {"a100", 1000, 1000, 1000, hw::Dtype::kBf16, 1.47895016376e-5,
     "5 us + 9.790 us"},
    // 64x64 tiles: 16384 tiles, ceil(16384/148) = 111 waves: q =
    // 16384/16428 = 0.997322; 1.0995e12 / (0.776 x 0.997322 x 2.25e15) =
    // 631.423 us.
    {"b200", 8192, 8192, 8192, hw::Dtype::kBf16, 6.36422919698e-4,
     "5 us + 631.423 us"},
    // fp8: 1.0995e12 / (0.763 x 0.997322 x 4.5e15) = 321.091 us.
    {"b200", 8192, 8192, 8192, hw::Dtype::kFp8, 3.26090554184e-4,
     "5 us + 321.091 us"},
    // TPU: no waves, 8192 is a tile multiple, q = 1: 1.0995e12 / (0.792 x
    // 459e12) = 3024.558 us.
    {"tpu-v5p", 8192, 8192, 8192, hw::Dtype::kBf16, 3.02655829476e-03,
     "2 us + 3024.558 us"},
    // Skinny on TPU: q = 16/128 = 0.125, math 44.03 us, but memory bound:
    // 1.347e8 B / (0.85 x 2.765e12) = 57.331 us.
    {"tpu-v5p", 16, 8192, 8192, hw::Dtype::kBf16, 5.93309290501e-5,
     "2 us + 57.331 us (memory)"},
    // v6e's 256-wide MXU: q = 1e6 / 1024^2 = 0.953674, math 2.688 us; memory
    // 6e6 B / (0.85 x 1.638e12) = 4.309 us.
    {"tpu-v6e", 1000, 1000, 1000, hw::Dtype::kBf16, 6.30941607412e-6,
     "2 us + 4.309 us (memory)"},
    // 1.0995e12 / (0.792 x 918e12) = 1512.279 us.
    {"tpu-v6e", 8192, 8192, 8192, hw::Dtype::kBf16, 1.51427914738e-03,
     "2 us + 1512.279 us"},
};

TEST(GemmTime, PinnedByShapeChipAndDtype) {
  for (const GemmCase& c : kGemmCases) {
    SCOPED_TRACE(std::string(c.chip) + " " + FormatNumber(c.m) + "x" +
                 FormatNumber(c.n) + "x" + FormatNumber(c.k) + " " +
                 std::string(hw::DtypeName(c.dtype)) + ": " + c.why);
    const hw::Chip& chip = Chip(c.chip);
    double got =
        GemmTime(chip, RealisticEfficiencyAtBoost(chip), c.m, c.n, c.k, c.dtype)
            .si();
    EXPECT_NEAR(got / c.seconds, 1.0, 1e-10) << "got " << got;
  }
}

TEST(GemmTime, ZeroWhenADimensionIsEmpty) {
  const hw::Chip& h100 = Chip("h100");
  ChipEfficiency eff = RealisticEfficiency(h100);
  EXPECT_EQ(GemmTime(h100, eff, 0, 8192, 8192, hw::Dtype::kBf16).si(), 0);
  EXPECT_EQ(GemmTime(h100, eff, 16, 8192, -1, hw::Dtype::kBf16).si(), 0);
}

// The realistic constants are the catalog's, at the sustained clock:
// Hopper's matrix units at 1.59/1.98 GHz of 0.803 (0.709 fp8).
TEST(GemmTime, RealisticModeRunsAtTheBaseClock) {
  const hw::Chip& h100 = Chip("h100");
  ChipEfficiency boost = RealisticEfficiencyAtBoost(h100);
  ChipEfficiency base = RealisticEfficiency(h100);
  EXPECT_EQ(boost.gemm_max, 0.803);
  EXPECT_EQ(boost.gemm_max_fp8, 0.709);
  EXPECT_DOUBLE_EQ(base.gemm_max, 0.803 * 1.59 / 1.98);
  EXPECT_DOUBLE_EQ(base.gemm_max_fp8, 0.709 * 1.59 / 1.98);
  EXPECT_DOUBLE_EQ(base.attention, 0.58 * 1.59 / 1.98);
  EXPECT_EQ(base.hbm, 0.87);  // not a matrix-unit rate
  // Chips without a sustained clock (GB200) and TPUs keep the measured
  // values.
  EXPECT_EQ(RealisticEfficiency(Chip("gb200")).gemm_max, 0.729);
  EXPECT_EQ(RealisticEfficiency(Chip("tpu-v5p")).gemm_max, 0.792);
  // Compute-bound 8192^3 GEMM time scales by boost / base.
  double t_boost =
      GemmTime(h100, boost, 8192, 8192, 8192, hw::Dtype::kBf16).si() - 5e-6;
  double t_base =
      GemmTime(h100, base, 8192, 8192, 8192, hw::Dtype::kBf16).si() - 5e-6;
  EXPECT_NEAR(t_base / t_boost, 1.98 / 1.59, 1e-9);
}

// B200's sustained clock is a measurement, not a datasheet base clock:
// kernels run back to back at ~1,000 W fall from 1965 to ~1580 MHz
// (flashinfer-ai/flashinfer pull request 2899). Realistic mode scales the
// matrix units by 1.58 / 1.965 = 0.804 (bf16, fp8 and fp4 GEMMs, attention;
// not HBM), and the attention constant, measured in training (0.37 of peak,
// stas00/ml-engineering), is stored at the boost clock so that it comes
// back as 0.37.
TEST(GemmTime, B200RunsAtItsMeasuredSustainedClock) {
  const hw::Chip& b200 = Chip("b200");
  EXPECT_EQ(b200.base_clock_hz, 1.58e9);
  EXPECT_EQ(b200.boost_clock_hz, 1.965e9);
  const double f = 1.58 / 1.965;
  ChipEfficiency boost = RealisticEfficiencyAtBoost(b200);
  ChipEfficiency base = RealisticEfficiency(b200);
  EXPECT_DOUBLE_EQ(base.gemm_max, 0.776 * f);
  EXPECT_DOUBLE_EQ(base.gemm_max_fp8, 0.763 * f);
  EXPECT_DOUBLE_EQ(base.gemm_max_fp4, 0.495 * f);
  EXPECT_DOUBLE_EQ(base.attention, 0.46 * f);
  EXPECT_NEAR(base.attention, 0.37, 0.001);
  EXPECT_EQ(base.hbm, boost.hbm);
  // A compute-bound fp8 GEMM (8192^3) takes boost / sustained longer.
  const GemmFormat fp8{hw::Dtype::kFp8, 1, 1, 2, true};
  double t_boost = GemmTime(b200, boost, 8192, 8192, 8192, fp8).si() - 5e-6;
  double t_base = GemmTime(b200, base, 8192, 8192, 8192, fp8).si() - 5e-6;
  EXPECT_NEAR(t_base / t_boost, 1.965 / 1.58, 1e-9);
}

// Every constant as the catalog files give them (docs/model.md 5.6).
// MI300X's per-GEMM fixed cost (op_overhead 8.2 us) reproduces the
// published kernel it comes from: ROCm/aiter #1092, an fp8 GEMM with bf16
// output, N = 1280, K = 8192, 10.70 / 10.72 / 10.80 us at M = 1 / 32 / 64,
// as the serving model runs a skinny GEMM (a small tile covering M, no
// waves: the fixed cost plus the weights streamed at the measured rate).
TEST(RealisticEfficiency, Mi300xGemmFloorMatchesTheMeasuredKernel) {
  const hw::Chip& mi = Chip("mi300x");
  ChipEfficiency e = RealisticEfficiency(mi);
  EXPECT_DOUBLE_EQ(e.op_overhead.si(), 8.2e-6);
  const double measured_us[][2] = {{1, 10.70}, {32, 10.72}, {64, 10.80}};
  for (const auto& p : measured_us) {
    e.tile_m = p[0] <= 8 ? 8 : static_cast<int>(p[0]);
    e.units = 0;
    const double t = GemmTime(mi, e, p[0], 1280, 8192,
                              GemmFormat{hw::Dtype::kFp8, 1, 1, 2, true})
                         .si();
    EXPECT_NEAR(t / (p[1] * 1e-6), 1.0, 0.01) << "M = " << p[0];
  }
}

TEST(RealisticEfficiency, CatalogValuesByChip) {
  struct Row {
    const char* chip;
    double gemm, fp8;
    int tile_m, tile_n, units;
    double t0_us, attention, fa2;
    bool ramp;
    double hbm, launch_us;
  };
  const Row kRows[] = {
      {"a100", 0.869, 0.869, 128, 128, 108, 5, 0.58, 0.58, true, 0.86, 10},
      {"a100-40gb", 0.869, 0.869, 128, 128, 108, 5, 0.58, 0.58, true, 0.86, 10},
      {"h100-96gb", 0.803, 0.709, 128, 256, 132, 5, 0.58, 0.335, true, 0.87,
       10},
      {"h100-nvl", 0.803, 0.709, 128, 256, 132, 5, 0.58, 0.335, true, 0.87, 10},
      {"h100-pcie", 0.803, 0.709, 128, 256, 114, 5, 0.58, 0.335, true, 0.87,
       10},
      // MI300X: measured GEMM (MAMF bf16; Azure hipBLASLt fp8) and HBM
      // (Azure BabelStream copy); the rest H100's, labelled as assumptions.
      {"mi300x", 0.511, 0.468, 128, 256, 304, 8.2, 0.38, 0.171, true, 0.783,
       10},
      // MI325X, MI355X: measured bf16 GEMM (MAMF); the rest H100's, labelled
      // as assumptions.
      {"mi325x", 0.600, 0.709, 128, 256, 304, 5, 0.38, 0.171, true, 0.87, 10},
      {"mi355x", 0.622, 0.709, 128, 256, 256, 5, 0.58, 0.335, true, 0.87, 10},
      // L40S and Trainium2 borrow H100's too (their own SM count; Trainium2
      // has no wave quantization).
      {"l40s", 0.803, 0.709, 128, 256, 142, 5, 0.58, 0.335, true, 0.87, 10},
      {"trn2", 0.803, 0.709, 128, 256, 0, 5, 0.58, 0.335, true, 0.87, 10},
      {"h100", 0.803, 0.709, 128, 256, 132, 5, 0.58, 0.335, true, 0.87, 10},
      {"h200", 0.803, 0.734, 128, 256, 132, 5, 0.58, 0.335, true, 0.90, 10},
      {"h800", 0.803, 0.709, 128, 256, 132, 5, 0.58, 0.335, true, 0.87, 10},
      {"b200", 0.776, 0.763, 128, 256, 148, 5, 0.46, 0.46, true, 0.84, 10},
      {"gb200", 0.729, 0.723, 128, 256, 148, 5, 0.37, 0.37, true, 0.84, 10},
      {"tpu-v4", 0.792, 0.792, 128, 128, 0, 2, 0.383, 0.383, true, 0.85, 2},
      {"tpu-v5e", 0.792, 0.792, 128, 128, 0, 2, 0.383, 0.383, true, 0.85, 2},
      {"tpu-v5p", 0.792, 0.792, 128, 128, 0, 2, 0.383, 0.383, true, 0.85, 2},
      {"tpu-v6e", 0.792, 0.792, 256, 256, 0, 2, 0.383, 0.383, true, 0.85, 2},
      {"tpu-7x", 0.792, 0.792, 128, 128, 0, 2, 0.383, 0.383, true, 0.85, 2},
  };
  EXPECT_EQ(std::size(kRows), BuiltinCatalog().chips().size());
  for (const Row& r : kRows) {
    SCOPED_TRACE(r.chip);
    const hw::Chip& chip = Chip(r.chip);
    ChipEfficiency e = RealisticEfficiencyAtBoost(chip);
    EXPECT_EQ(e.gemm_max, r.gemm);
    EXPECT_EQ(e.gemm_max_fp8, r.fp8);
    EXPECT_EQ(e.tile_m, r.tile_m);
    EXPECT_EQ(e.tile_n, r.tile_n);
    EXPECT_EQ(e.units, r.units);
    EXPECT_EQ(e.op_overhead.si(), units::Microseconds(r.t0_us).si());
    EXPECT_EQ(e.attention, r.attention);
    EXPECT_EQ(e.attention_fa2, r.fa2);
    EXPECT_EQ(e.attention_ramp, r.ramp);
    EXPECT_EQ(e.hbm, r.hbm);
    // gemm_stream: measured for six GPUs (aiconfigurator's GEMM tables; an
    // optional key, not borrowed); the others stream GEMMs at hbm.
    const std::map<std::string, double> kStream = {
        {"a100", 0.791}, {"h100", 0.850},  {"h200", 0.839},
        {"b200", 0.798}, {"gb200", 0.820}, {"l40s", 0.833}};
    const auto stream = kStream.find(r.chip);
    const bool measured = stream != kStream.end();
    EXPECT_EQ(chip.efficiency.gemm_stream.has_value(), measured);
    EXPECT_EQ(e.gemm_stream, measured ? stream->second : r.hbm);
    // attention_decode_head: measured for five GPUs (aiconfigurator's decode
    // attention tables; optional, not borrowed); the others have none.
    const std::map<std::string, double> kHead = {{"a100", 39.1e-9},
                                                 {"h100", 25.6e-9},
                                                 {"h200", 24.9e-9},
                                                 {"b200", 7.06e-9},
                                                 {"gb200", 6.89e-9}};
    const auto head = kHead.find(r.chip);
    const bool per_head = head != kHead.end();
    EXPECT_EQ(chip.efficiency.attention_decode_head.has_value(), per_head);
    EXPECT_DOUBLE_EQ(e.attention_decode_head.si(),
                     per_head ? head->second : 0.0);
    // The fused-MoE decode fits (moe_floor / moe_stream and the fp8 pair):
    // measured for three NVIDIA GPUs (aiconfigurator's MoE tables) and,
    // bf16 only, MI300X (aiter's tuned tables; fp8 0: none); optional, not
    // borrowed; the others take the published single-kernel fits.
    struct MoeFit {
      double floor_us, stream, floor_fp8_us, stream_fp8;
    };
    const std::map<std::string, MoeFit> kMoe = {
        {"h100", {31.5, 0.877, 38.9, 0.842}},
        {"h200", {31.4, 0.885, 36.4, 0.809}},
        {"b200", {35.0, 0.783, 38.4, 0.703}},
        {"mi300x", {19.1, 0.757, 0, 0}}};
    const auto moe = kMoe.find(r.chip);
    const auto& d = chip.efficiency;
    ASSERT_EQ(d.moe_floor.has_value(), moe != kMoe.end());
    ASSERT_EQ(d.moe_floor_fp8.has_value(),
              moe != kMoe.end() && moe->second.floor_fp8_us > 0);
    if (moe != kMoe.end()) {
      EXPECT_DOUBLE_EQ(d.moe_floor->si(), moe->second.floor_us * 1e-6);
      EXPECT_EQ(d.moe_stream, moe->second.stream);
      if (d.moe_floor_fp8) {
        EXPECT_DOUBLE_EQ(d.moe_floor_fp8->si(),
                         moe->second.floor_fp8_us * 1e-6);
        EXPECT_EQ(d.moe_stream_fp8, moe->second.stream_fp8);
      }
    }
    // ... and SGLang's and vLLM's own fits on the NVIDIA three, bf16 and fp8
    // ([[moe_engine]]), with 4-bit W4A16 ones: fp4 and int4 on H100 and
    // H200, int4 on B200; on B200 also SGLang's flashinfer_trtllm runner in
    // bf16, fp8 and nvfp4.
    const std::string id = r.chip;
    const size_t w4 = id == "h100" || id == "h200" ? 4u
                      : id == "b200"               ? 2u + 3u
                                                   : 0u;
    EXPECT_EQ(chip.moe_engine.size(),
              moe != kMoe.end() && id != "mi300x" ? 4u + w4 : 0u);
    EXPECT_EQ(d.moe_stream.has_value(), d.moe_floor.has_value());
    EXPECT_EQ(d.moe_stream_fp8.has_value(), d.moe_floor_fp8.has_value());
    ASSERT_TRUE(chip.efficiency.collective_launch.has_value());
    EXPECT_EQ(chip.efficiency.collective_launch->si(),
              units::Microseconds(r.launch_us).si());
    // Built-in chips carry their own table: nothing borrowed, no note.
    EXPECT_TRUE(chip.efficiency.borrowed.empty());
    EXPECT_EQ(BorrowedEfficiencyNote(chip), "");
    // gemm_max_fp4: only b200 measures it (an optional key, not borrowed);
    // the others run fp4 GEMMs at their fp8 fraction.
    const bool fp4 = std::string(r.chip) == "b200";
    EXPECT_EQ(chip.efficiency.gemm_max_fp4.has_value(), fp4);
    EXPECT_EQ(e.gemm_max_fp4, fp4 ? 0.495 : r.fp8);
    // gather: only the TPUs carry it (fitted, optional, not borrowed).
    const bool tpu = chip.is_tpu();
    EXPECT_EQ(chip.efficiency.gather.has_value(), tpu);
    EXPECT_EQ(e.gather, tpu ? 0.141 : 1.0);
    // kernel_launch: only the CDNA 3 chips (optional, not borrowed).
    const bool cdna3 =
        std::string(r.chip) == "mi300x" || std::string(r.chip) == "mi325x";
    EXPECT_EQ(chip.efficiency.kernel_launch.has_value(), cdna3);
    EXPECT_EQ(e.kernel_launch.si(), cdna3 ? 4.5e-6 : 0.0);
    // moe_prefill pairs (bf16 and fp8): the NVIDIA three, fitted to
    // aiconfigurator's tables (tools/dev/aic_moe_prefill.mjs).
    // MI300X: the bf16 pair alone, fitted to aiter's tuned gfx942 tables.
    const bool prefill = id == "h100" || id == "h200" || id == "b200";
    const bool prefill_bf16 = prefill || id == "mi300x";
    EXPECT_EQ(d.moe_prefill.has_value(), prefill_bf16);
    EXPECT_EQ(d.moe_prefill_act.has_value(), prefill_bf16);
    EXPECT_EQ(d.moe_prefill_act_fp8.has_value(), prefill);
    // mla_fp8_kv_token: H100 and H200, aiconfigurator's SGLang MLA tables
    // (tools/dev/aic_mla_fp8_kv.mjs); optional, not borrowed.
    const std::map<std::string, double> kMlaFp8 = {{"h100", 2.095e-9},
                                                   {"h200", 1.942e-9}};
    const auto mla = kMlaFp8.find(id);
    const bool mla_fp8 = mla != kMlaFp8.end();
    EXPECT_EQ(d.mla_fp8_kv_token.has_value(), mla_fp8);
    EXPECT_DOUBLE_EQ(e.mla_fp8_kv_token.si(), mla_fp8 ? mla->second : 0.0);
    // block_fp8_k_step: the gfx942 chips (MI300X, MI325X), aiter PR #1930;
    // optional, not borrowed.
    const bool gfx942 = id == "mi300x" || id == "mi325x";
    EXPECT_EQ(d.block_fp8_k_step.has_value(), gfx942);
    EXPECT_DOUBLE_EQ(e.block_fp8_k_step.si(), gfx942 ? 2.18e-6 : 0.0);
    EXPECT_EQ(chip.efficiency.sources.size(),
              (fp4 || tpu ? 12u : 11u) + (cdna3 ? 1u : 0u) +
                  (gfx942 ? 1u : 0u) + (measured ? 1u : 0u) +
                  (per_head ? 1u : 0u) + (mla_fp8 ? 1u : 0u) +
                  (prefill        ? 4u
                   : prefill_bf16 ? 2u
                                  : 0u) +
                  (moe == kMoe.end()              ? 0u
                   : moe->second.floor_fp8_us > 0 ? 4u
                                                  : 2u));
  }
}

// fp4 GEMMs run at the chip's measured fp4 fraction (b200: 0.495 of the 9
// PFLOP/s fp4 peak, flashinfer #1979), not at the fp8 one. Pinned at the
// measured shape itself, 1024 x 7168 x 4608 (compute-bound, 2 waves of
// 128x256 tiles on 148 SMs: q = 224 / 296): the model returns the measured
// 3,370 TFLOP/s to within the rounding of 0.495.
TEST(GemmTime, Fp4UsesTheChipsFp4Fraction) {
  const hw::Chip& b200 = Chip("b200");
  ChipEfficiency eff = RealisticEfficiencyAtBoost(b200);
  eff.op_overhead = units::Seconds(0);
  const double m = 1024, n = 7168, k = 4608;
  // 64x64 tiles: 16 x 112 = 1792 tiles, 13 waves of 148 (TileQuantization).
  const double q = 1792.0 / 1924.0;
  const double flops = 2 * m * n * k;
  const GemmFormat fp4{hw::Dtype::kFp4, 0.5, 0.5, 2, true};
  const double t = GemmTime(b200, eff, m, n, k, fp4).si();
  EXPECT_DOUBLE_EQ(t, flops / (0.495 * q * 9e15));
  EXPECT_NEAR(flops / t / 1e12, 4149.4, 10);
  // fp8 at the same shape keeps fp8's fraction of the fp8 peak.
  const GemmFormat fp8{hw::Dtype::kFp8, 1, 1, 2, true};
  EXPECT_DOUBLE_EQ(GemmTime(b200, eff, m, n, k, fp8).si(),
                   flops / (0.763 * q * 4.5e15));
  EXPECT_EQ(GemmMaxFor(eff, hw::Dtype::kFp4), 0.495);
  EXPECT_EQ(GemmMaxFor(eff, hw::Dtype::kFp8), 0.763);
  EXPECT_EQ(GemmMaxFor(eff, hw::Dtype::kBf16), 0.776);
}

std::string BuiltinFile(const std::string& path);

// A chip file without gemm_max_fp4 runs fp4 at its fp8 fraction (nothing
// borrowed, no note); a value outside (0, 1] is refused with its key.
TEST(CatalogChipEfficiency, Fp4FractionIsOptionalAndChecked) {
  std::string s = BuiltinFile("chips/b200.toml");
  s.replace(s.find("id = \"b200\""), 11, "id = \"b2x\"");
  s.replace(s.find("aliases = ["),
            s.find('\n', s.find("aliases = [")) - s.find("aliases = ["),
            "aliases = []");
  const size_t at = s.find("gemm_max_fp4 = ");
  ASSERT_NE(at, std::string::npos);
  const std::string line = s.substr(at, s.find('\n', at) + 1 - at);
  std::string without = s;
  without.erase(at, line.size());
  catalog::Catalog cat = BuiltinCatalog();
  ASSERT_TRUE(cat.AddFiles({{"chips/b2x.toml", without}}).has_value());
  const hw::Chip& b2x = **cat.FindChip("b2x");
  EXPECT_FALSE(b2x.efficiency.gemm_max_fp4.has_value());
  EXPECT_TRUE(b2x.efficiency.borrowed.empty());
  EXPECT_EQ(RealisticEfficiencyAtBoost(b2x).gemm_max_fp4, 0.763);
  std::string bad = s;
  bad.replace(at, line.size(), "gemm_max_fp4 = 1.5\n");
  catalog::Catalog cat2 = BuiltinCatalog();
  auto r = cat2.AddFiles({{"chips/b2x.toml", bad}});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().ToString().find("gemm_max_fp4"), std::string::npos)
      << r.error().ToString();
}

// The GEMM time's roofline part is roofline::Time over roofline::Work.
TEST(GemmTime, IsTheRooflineAtAchievableRates) {
  const hw::Chip& v5p = Chip("tpu-v5p");
  ChipEfficiency eff = RealisticEfficiency(v5p);
  roofline::MatmulWork w = roofline::Work(16, 8192, 8192, 2, 2, 2);
  EXPECT_EQ(w.flops.si(), 2.0 * 16 * 8192 * 8192);
  EXPECT_EQ(w.bytes.si(), 2.0 * (16 * 8192 + 8192 * 8192) + 2.0 * 16 * 8192);
  // q = 16/128 on a 128-row MXU.
  units::Seconds roof = roofline::Time(
      w.flops, w.bytes, units::FlopsPerSecond(0.85 * 0.125 * 459e12),
      units::BytesPerSecond(0.85 * 2765e9));
  EXPECT_EQ(roof.si(),
            roofline::Evaluate(w.flops, w.bytes,
                               units::FlopsPerSecond(0.85 * 0.125 * 459e12),
                               units::BytesPerSecond(0.85 * 2765e9))
                .t_lower.si());
  EXPECT_EQ(GemmTime(v5p, eff, 16, 8192, 8192, hw::Dtype::kBf16).si(),
            2e-6 + roof.si());
  // Without quantization (serving's peak mode) q = 1; int4 weights read half
  // a byte per element.
  GemmFormat int4{hw::Dtype::kBf16, 2, 0.5, 2, false};
  roofline::MatmulWork w4 = roofline::Work(16, 8192, 8192, 2, 0.5, 2);
  EXPECT_EQ(GemmTime(v5p, eff, 16, 8192, 8192, int4).si(),
            2e-6 + roofline::Time(w4.flops, w4.bytes,
                                  units::FlopsPerSecond(0.85 * 459e12),
                                  units::BytesPerSecond(0.85 * 2765e9))
                       .si());
}

// No chip is special-cased by name in the estimator: every constant comes
// from the catalog (grep for a built-in chip id in src/estimate).
TEST(RealisticEfficiency, NoChipIdInTheEstimator) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(SCALEMODEL_SOURCE_DIR) / "src" / "estimate";
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::ifstream in(entry.path());
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    ++files;
    for (const hw::Chip& c : BuiltinCatalog().chips()) {
      EXPECT_EQ(text.find("\"" + c.id + "\""), std::string::npos)
          << entry.path() << " names " << c.id;
    }
  }
  EXPECT_GE(files, 4);
}

// ---- A chip added with --catalog.

std::string BuiltinFile(const std::string& path) {
  for (const catalog::DataFile& f : catalog::BuiltinDataFiles()) {
    if (f.path == path) return f.contents;
  }
  ADD_FAILURE() << "no built-in " << path;
  return "";
}

// h100.toml as a new chip `id` (no aliases), with `edit` applied.
std::string H100Copy(const std::string& id) {
  std::string s = BuiltinFile("chips/h100.toml");
  s.replace(s.find("id = \"h100\""), 11, "id = \"" + id + "\"");
  s.replace(s.find("aliases = ["),
            s.find('\n', s.find("aliases = [")) - s.find("aliases = ["),
            "aliases = []");
  return s;
}

std::string WithoutEfficiencyTable(std::string s) {
  return s.substr(0, s.find("[efficiency]"));
}

TrainingEstimate Train(const catalog::Catalog& cat, const std::string& system) {
  auto m = ingest::FindModel(cat, "llama3-8b");
  EXPECT_TRUE(m.has_value());
  auto sys = cat.FindSystem(system);
  EXPECT_TRUE(sys.has_value()) << sys.error().ToString();
  TrainingConfig cfg;
  cfg.par = *ParsePlan("tp=8");
  cfg.batch_tokens = 8 * 8192;
  cfg.seq = 8192;
  auto e = EstimateTraining(m->spec, *sys, cfg);
  EXPECT_TRUE(e.has_value()) << e.error().ToString();
  return e.value_or(TrainingEstimate{});
}

// A user's chip file that halves Hopper's best-shape GEMM fraction: every
// GEMM of a matmul-bound layer takes about twice as long.
TEST(CatalogChipEfficiency, HalvedGemmFractionDoublesMatmulTime) {
  catalog::Catalog cat = BuiltinCatalog();
  std::string half = H100Copy("h100-half");
  half.replace(half.find("gemm_max = { value = 0.803"), 26,
               "gemm_max = { value = 0.4015");
  ASSERT_TRUE(cat.AddFiles({{"chips/h100-half.toml", half}}).has_value());
  EXPECT_EQ((*cat.FindChip("h100-half"))->efficiency.gemm_max, 0.4015);
  TrainingEstimate base = Train(cat, "h100:8x1");
  TrainingEstimate slow = Train(cat, "h100-half:8x1");
  // Llama 3 8B at 8K tokens per GEMM row block: every GEMM is compute-bound
  // on Hopper, so only the 5 us per-GEMM floor keeps the ratio below 2.
  double ratio = slow.per_layer.matmul.si() / base.per_layer.matmul.si();
  EXPECT_GT(ratio, 1.95);
  EXPECT_LT(ratio, 2.0);
  EXPECT_GT(slow.compute.si(), 1.4 * base.compute.si());
  // Nothing was borrowed: the copy carries a full table.
  for (const std::string& n : slow.notes) {
    EXPECT_EQ(n.find("borrowed"), std::string::npos) << n;
  }
}

// A chip file without an [efficiency] table borrows its family reference
// chip's constants, and the training report says so.
TEST(CatalogChipEfficiency, ChipWithoutTableBorrowsAndTheReportSaysSo) {
  catalog::Catalog cat = BuiltinCatalog();
  ASSERT_TRUE(cat.AddFiles({{"chips/my-gpu.toml",
                             WithoutEfficiencyTable(H100Copy("my-gpu"))}})
                  .has_value());
  const hw::Chip& chip = **cat.FindChip("my-gpu");
  EXPECT_EQ(chip.efficiency.borrowed_from, "h100");
  EXPECT_EQ(chip.efficiency.borrowed.size(), 11u);
  EXPECT_EQ(chip.efficiency.gemm_max, 0.803);
  EXPECT_EQ(chip.efficiency.sources.at("gemm_max")
                .rfind("borrowed from h100: stas00/ml-engineering", 0),
            0u);
  // Same numbers as h100 itself.
  TrainingEstimate h100 = Train(cat, "h100:8x1");
  TrainingEstimate mine = Train(cat, "my-gpu:8x1");
  EXPECT_EQ(mine.step_time.si(), h100.step_time.si());
  const std::string note =
      "realistic efficiency constants for my-gpu: none in its catalog file; "
      "borrowed from h100 (gemm_max 0.803, gemm_max_fp8 0.709, tile_m 128, "
      "tile_n 256, wave_units 132, op_overhead 5 us, attention 0.58, "
      "attention_fa2 0.335, attention_ramp true, hbm 0.87, collective_launch "
      "10 us); add an [efficiency] table to its file to use its own "
      "(docs/catalog-format.md)";
  EXPECT_EQ(BorrowedEfficiencyNote(chip), note);
  EXPECT_NE(std::find(mine.notes.begin(), mine.notes.end(), note),
            mine.notes.end());
  for (const std::string& n : h100.notes) {
    EXPECT_EQ(n.find("borrowed"), std::string::npos) << n;
  }
}

// The same through a --catalog directory (tests/cli/catalogs; the CLI's
// errors.txt loads its bad-efficiency sibling).
TEST(CatalogChipEfficiency, CatalogDirectoryChipWithoutTable) {
  catalog::Catalog cat = BuiltinCatalog();
  ASSERT_TRUE(cat.AddDirectory(std::string(SCALEMODEL_SOURCE_DIR) +
                               "/tests/cli/catalogs/no-efficiency")
                  .has_value());
  TrainingEstimate e = Train(cat, "my-gpu:8x1");
  ASSERT_FALSE(e.notes.empty());
  EXPECT_EQ(e.notes[0].rfind("realistic efficiency constants for my-gpu: "
                             "none in its catalog file; borrowed from h100 ",
                             0),
            0u)
      << e.notes[0];
  // So does the serving estimate.
  ServeConfig serve;
  serve.tp = 8;
  serve.batch = 8;
  serve.prompt = 1024;
  serve.output = 128;
  auto s = EstimateServing(ingest::FindModel(cat, "llama3-8b")->spec,
                           *cat.FindSystem("my-gpu:8x1"), serve);
  ASSERT_TRUE(s.has_value()) << s.error().ToString();
  ASSERT_FALSE(s->notes.empty());
  EXPECT_EQ(s->notes.back().rfind(
                "realistic efficiency constants for my-gpu: none", 0),
            0u);
  // Peak mode uses no efficiency constants and says nothing.
  auto m = ingest::FindModel(cat, "llama3-8b");
  TrainingConfig cfg;
  cfg.par = *ParsePlan("tp=8");
  cfg.batch_tokens = 8 * 8192;
  cfg.seq = 8192;
  cfg.mode = Mode::kPeak;
  auto peak = EstimateTraining(m->spec, *cat.FindSystem("my-gpu:8x1"), cfg);
  ASSERT_TRUE(peak.has_value());
  for (const std::string& n : peak->notes) {
    EXPECT_EQ(n.find("borrowed"), std::string::npos) << n;
  }
}

}  // namespace
}  // namespace scalemodel::estimate
