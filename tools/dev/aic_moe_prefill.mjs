// Prints a chip's fused-MoE prefill constants (docs/catalog-format.md):
// `moe_prefill` and `moe_prefill_act` for bf16 experts, or the `_fp8` pair,
// from NVIDIA ai-dynamo/aiconfigurator's measured MoE tables (aic-core/src/
// aiconfigurator_core/systems/data/<gpu>/moe/<engine>/<version>/
// moe_perf.parquet: the engine's whole MoE op on `num_tokens` tokens,
// latency in ms).
//
// The procedure, the same for every chip and dtype: each table of the chip
// at the commit (every engine and release), its rows of one expert format
// (bf16: `bfloat16`; fp8: `fp8` and `fp8_block`, each format its own fit),
// balanced routing, no expert parallelism and at least 4,096 tokens
// (prefill, where the op is no longer bound by its weights); per table and
// format with at least 20 rows, the least-squares fit (relative error) of
//   t = FLOPs / (moe_prefill x peak) + pairs x hidden x 8 B / (moe_prefill_act x HBM)
// with FLOPs = 6 x tokens x top_k x hidden x inter / moe_tp (the experts'
// two GEMMs on one GPU) and pairs = tokens x top_k: the GEMMs at a fraction
// of the dense peak, and per token-expert pair a cost proportional to the
// hidden size, read as 8 bytes per element (the activation's bf16 vector
// read and written once each) streamed at a fraction of the HBM peak
// (the permutation, quantization and reduction around the GEMMs); the
// medians of the fits' two terms.
//
// Dev-only (not part of the build): needs `npm install hyparquet
// hyparquet-compressors` and the parquet files extracted from a checkout:
//   node tools/dev/aic_moe_prefill.mjs DIR GPU PEAK_FLOPS HBM_BYTES_PER_S \
//       DTYPE COMMIT ENGINE/VERSION...
//   node tools/dev/aic_moe_prefill.mjs aic/systems/data b200_sxm 4.5e15 8e12 \
//       fp8 095f58a5 $(cd aic/systems/data/b200_sxm/moe && ls -d */*)
import { readTable } from './aic_common.mjs'
import fs from 'fs'

const [dir, gpu, peakArg, hbmArg, dtype, commit, ...tables] = process.argv.slice(2)
const peak = Number(peakArg)
const hbm = Number(hbmArg)
const FORMATS = { bf16: ['bfloat16'], fp8: ['fp8', 'fp8_block'] }
if (!FORMATS[dtype]) throw new Error(`dtype: expected bf16 or fp8, got ${dtype}`)
const median = (a) => {
  const s = [...a].sort((x, y) => x - y)
  return s[Math.floor((s.length - 1) / 2)]
}
// Weighted least squares of t = a x1 + b x2, weights 1 / t^2.
function fit(points) {
  let s11 = 0, s12 = 0, s22 = 0, s1t = 0, s2t = 0
  for (const [x1, x2, t] of points) {
    const w = 1 / (t * t)
    s11 += w * x1 * x1; s12 += w * x1 * x2; s22 += w * x2 * x2
    s1t += w * x1 * t; s2t += w * x2 * t
  }
  const det = s11 * s22 - s12 * s12
  return [(s1t * s22 - s2t * s12) / det, (s11 * s2t - s12 * s1t) / det]
}
const fits = []
let device = ''
for (const ev of tables) {
  const path = `${dir}/${gpu}/moe/${ev}/moe_perf.parquet`
  if (!fs.existsSync(path)) continue
  const rows = await readTable(path)
  for (const format of FORMATS[dtype]) {
    const sel = rows.filter((r) => r.moe_dtype === format &&
      Number(r.moe_ep_size) === 1 && r.distribution === 'balanced' &&
      Number(r.num_tokens) >= 4096)
    if (sel.length < 20) continue
    device = sel[0].device
    const points = sel.map((r) => {
      const n = Number(r.num_tokens), k = Number(r.topk), h = Number(r.hidden_size)
      const inter = Number(r.inter_size) / Number(r.moe_tp_size)
      return [6 * n * k * h * inter / peak, n * k * h * 8 / hbm, r.latency * 1e-3]
    })
    const [a, b] = fit(points)
    if (!(a > 0 && b > 0)) continue
    fits.push({ table: `${ev} ${format}`, compute: 1 / a, act: 1 / b, rows: sel.length })
  }
}
if (!fits.length) throw new Error('no table with enough prefill rows')
const compute = median(fits.map((f) => f.compute))
const act = median(fits.map((f) => f.act))
const key = dtype === 'bf16' ? '' : '_fp8'
const list = fits.map((f) => `${f.table} ${f.compute.toFixed(3)} ${f.act.toFixed(3)}, ${f.rows} rows`).join('; ')
const source = `ai-dynamo/aiconfigurator ${commit} systems/data/${gpu}/moe/{${tables.join(', ')}}/moe_perf.parquet (${device}): the engines' MoE op, ${dtype} experts, balanced routing, no EP, 4096-16384 tokens (collector/*/collect_moe.py); per table and format the least-squares (relative) fit of FLOPs / (fraction x ${dtype} peak) + token-expert pairs x hidden x 8 B / (act x HBM peak) (tools/dev/aic_moe_prefill.mjs); median of ${fits.length} fits (${list})`
console.log(`moe_prefill${key} = { value = ${compute.toFixed(3)}, source = "${source}", date = "2026-08" }`)
console.log(`moe_prefill_act${key} = { value = ${act.toFixed(3)}, source = "${source}", date = "2026-08" }`)
