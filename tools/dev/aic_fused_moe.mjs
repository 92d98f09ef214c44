// Prints a chip's fused-MoE decode constants (docs/catalog-format.md):
// `moe_floor` and `moe_stream` for bf16 experts, or `moe_floor_fp8` and
// `moe_stream_fp8` for fp8 ones, from NVIDIA ai-dynamo/aiconfigurator's
// measured MoE tables (aic-core/src/aiconfigurator_core/systems/data/<gpu>/
// moe/<engine>/<version>/moe_perf.parquet; collected by collector/<engine>/
// collect_moe.py: the engine's whole MoE op (routing, the experts' two
// GEMMs, activation, weighted sum) on `num_tokens` tokens; latency in ms).
//
// The procedure, the same for every chip and dtype: each table of the chip
// at the commit (every engine and release), its rows with the dtype (bf16:
// `bfloat16`; fp8: `fp8` and `fp8_block`; fp4: `nvfp4`, `w4a16_mxfp4` and
// `w4a8_mxfp4_mxfp8`; int4: `int4_wo`; fp4 and int4 per engine only),
// balanced routing, no expert
// parallelism and 1 to 16 tokens (decode batches, where the touched
// experts' weights dominate); per table, the least-squares fit (relative
// error) of t = floor + bytes / (fraction x HBM_BYTES_PER_S), bytes the
// touched experts' weights on one GPU, min(E, tokens x top_k) x 3 x hidden x
// inter / moe_tp x bytes per weight; the medians of the tables' floors and
// fractions.
//
// With `--engine NAME` first among the tables (and only that engine's
// tables after it), it prints that engine's [[moe_engine]] table instead:
// the same procedure over the engine's releases. `--engine NAME --kernel K`
// keeps only the rows of that MoE runner (kernel_source
// `<engine>_<K>_moe`, e.g. sglang_flashinfer_trtllm_moe) and prints the
// table with `kernel = "K"`. Without --kernel the rows of the opt-in
// FlashInfer runners (OPT_IN below, selected by a flag or an engine's
// per-model default, each fitted on its own) are left out, so a fit stands
// for the engine's default kernel.
//
// Dev-only (not part of the build): needs `npm install hyparquet
// hyparquet-compressors` and the parquet files extracted from a checkout:
//   node tools/dev/aic_fused_moe.mjs DIR GPU HBM_BYTES_PER_S DTYPE COMMIT \
//       [--engine NAME] ENGINE/VERSION...
//   node tools/dev/aic_fused_moe.mjs aic/systems/data h200_sxm 4.8e12 fp8 \
//       095f58a5 $(cd aic/systems/data/h200_sxm/moe && ls -d */*)
//   node tools/dev/aic_fused_moe.mjs aic/systems/data b200_sxm 8e12 bf16 \
//       095f58a5 --engine sglang \
//       $(cd aic/systems/data/b200_sxm/moe && ls -d sglang/*)
import { readTable } from './aic_common.mjs'

const [dir, gpu, peakArg, dtype, commit, ...rest] = process.argv.slice(2)
const engineName = rest[0] === '--engine' ? rest[1] : ''
const kernel = engineName && rest[2] === '--kernel' ? rest[3] : ''
const engines = rest.slice(kernel ? 4 : engineName ? 2 : 0)
const OPT_IN = new Set(['sglang_flashinfer_trtllm_moe', 'sglang_flashinfer_cutlass_moe'])
const keepKernel = (source) => kernel
  ? source === `${engineName}_${kernel}_moe`
  : !OPT_IN.has(source)
const peak = Number(peakArg)
// The tables' expert formats read as each scalemodel dtype, and the bytes
// per weight the model streams for it (4-bit formats: 0.5, their block
// scales left to the fitted fraction).
const FORMATS = {
  bf16: [['bfloat16'], 2],
  fp8: [['fp8', 'fp8_block'], 1],
  fp4: [['nvfp4', 'w4a16_mxfp4', 'w4a8_mxfp4_mxfp8'], 0.5],
  int4: [['int4_wo'], 0.5],
  // fp4 weights and fp4 activations (W4A4; the fp4 rows above are read as
  // W4A16, dequantized to bf16), per engine only
  nvfp4: [['nvfp4'], 0.5],
}
if (!FORMATS[dtype]) throw new Error(`dtype: expected bf16, fp8, fp4, nvfp4 or int4, got ${dtype}`)
if (!engineName && (dtype === 'fp4' || dtype === 'int4' || dtype === 'nvfp4')) {
  throw new Error('fp4 and int4 fits are per engine: give --engine NAME')
}
const [dtypes, bytesPerWeight] = FORMATS[dtype]
const fits = []
let device = ''
for (const ev of engines) {
  const rows = await readTable(`${dir}/${gpu}/moe/${ev}/moe_perf.parquet`)
  for (const dt of dtypes) {
    // Weighted least squares of t = a + b x (x = bytes / peak), weights
    // 1 / t: the normal equations of sum ((a + b x - t) / t)^2.
    let s00 = 0, s01 = 0, s11 = 0, r0 = 0, r1 = 0, count = 0
    for (const r of rows) {
      device = r.device
      if (r.moe_dtype !== dt || r.distribution !== 'balanced') continue
      if (!keepKernel(String(r.kernel_source))) continue
      if (Number(r.moe_ep_size) !== 1) continue
      const tokens = Number(r.num_tokens)
      if (tokens < 1 || tokens > 16) continue
      const t = r.latency * 1e-3
      if (!(t > 0)) continue
      const touched = Math.min(Number(r.num_experts), tokens * Number(r.topk))
      const x = touched * 3 * Number(r.hidden_size) * Number(r.inter_size) /
        Number(r.moe_tp_size) * bytesPerWeight / peak
      const w = 1 / (t * t)
      s00 += w; s01 += w * x; s11 += w * x * x; r0 += w * t; r1 += w * x * t
      count++
    }
    if (count < 10) continue
    const det = s00 * s11 - s01 * s01
    const a = (r0 * s11 - r1 * s01) / det, b = (s00 * r1 - s01 * r0) / det
    fits.push([`${ev} ${dt}`, a, 1 / b, count])
  }
}
const median = (v) => {
  const s = [...v].sort((x, y) => x - y)
  return s.length % 2 ? s[(s.length - 1) / 2]
    : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}
const floor = median(fits.map(f => f[1])), fitted = median(fits.map(f => f[2]))
// A fraction above 1 (the smallest shapes' weights served from L2 across
// the benchmark's repeats) is read as the HBM peak itself.
const frac = Math.min(1, fitted)
const capped = fitted > 1 ? `; the fitted fraction ${fitted.toFixed(3)} is above the HBM peak (L2 hits on the smallest shapes) and is read as 1` : ''
const us = (s) => `${Number((s * 1e6).toPrecision(3))} us`
const suffix = dtype === 'bf16' ? '' : '_fp8'
const runner = kernel ? ` (kernel_source ${engineName}_${kernel}_moe)` : ' (without the opt-in FlashInfer runners\' rows)'
const src = `ai-dynamo/aiconfigurator ${commit} systems/data/${gpu}/moe/{${engines.join(', ')}}/moe_perf.parquet (${device}): the engines' MoE op${runner}, ${dtype} experts, balanced routing, no EP, 1-16 tokens (collector/*/collect_moe.py); per table the least-squares (relative) fit of floor + touched experts' weight bytes / (fraction x HBM peak); median of ${fits.length} tables (${fits.map(f => `${f[0]} ${us(f[1])} ${f[2].toFixed(3)}, ${f[3]} rows`).join('; ')})${capped}`
if (engineName) {
  const k = kernel ? `kernel = "${kernel}"\n` : ''
  console.log(`[[moe_engine]]\nengine = "${engineName}"\n${k}dtype = "${dtype}"\nfloor = "${us(floor)}"\nstream = ${frac.toFixed(3)}\nsource = "${src}"\ndate = "2026-08"\n`)
} else {
  console.log(`moe_floor${suffix} = { value = "${us(floor)}", source = "${src}", date = "2026-08" }`)
  console.log(`moe_stream${suffix} = { value = ${frac.toFixed(3)}, source = "${src}", date = "2026-08" }`)
}
