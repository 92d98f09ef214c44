// Prints a chip's `gemm_stream` catalog constant (docs/catalog-format.md):
// the fraction of the HBM peak at which a skinny GEMM streams its weights,
// from NVIDIA ai-dynamo/aiconfigurator's measured GEMM tables
// (aic-core/src/aiconfigurator_core/systems/data/<gpu>/gemm/<engine>/
// <version>/gemm_perf.parquet; collected by collector/<engine>/
// collect_gemm.py: the engine's own linear op, several copies with their
// own weights captured in one CUDA graph, so that each streams its weights
// from HBM; latency in ms per GEMM).
//
// The procedure, the same for every chip: the bf16 GEMMs of 1 to 16 rows
// whose weights are at least 512 MB (a GEMM's fixed time, 3-6 us, is then
// under 3% of it), over every engine table of the chip at the commit (all
// the engines and releases measured: the built-in values pass them all);
// each one's bytes (weights, activations in, output) over its time, over
// the HBM peak; the median.
// fp8 tables are not used: their op includes the activation quantization,
// whose fixed time is still visible at 512 MB.
//
// Dev-only (not part of the build): needs `npm install hyparquet
// hyparquet-compressors` and the parquet files extracted from a checkout:
//   node tools/dev/aic_gemm_stream.mjs DIR GPU HBM_BYTES_PER_S COMMIT \
//       ENGINE/VERSION...
//   node tools/dev/aic_gemm_stream.mjs aic/systems/data a100_sxm 2.039e12 \
//       095f58a5 $(cd aic/systems/data/a100_sxm/gemm && ls -d */*)
import { readTable } from './aic_common.mjs'

const [dir, gpu, hbmArg, commit, ...engines] = process.argv.slice(2)
const hbm = Number(hbmArg)
const fractions = []
let device = ''
const counts = []
for (const ev of engines) {
  const rel = `${gpu}/gemm/${ev}/gemm_perf.parquet`
  const rows = await readTable(`${dir}/${rel}`)
  let n = 0
  for (const r of rows) {
    device = r.device
    const m = Number(r.m), nn = Number(r.n), k = Number(r.k)
    if (r.gemm_dtype !== 'bfloat16' || m < 1 || m > 16) continue
    const weights = 2 * nn * k
    if (weights < 512e6) continue
    const bytes = weights + 2 * m * k + 2 * m * nn
    fractions.push(bytes / (r.latency * 1e-3) / hbm)
    n++
  }
  counts.push(`${ev} ${n}`)
}
fractions.sort((a, b) => a - b)
const q = (p) => fractions[Math.min(fractions.length - 1,
  Math.floor(p * fractions.length))]
const med = fractions.length % 2 ? q(0.5)
  : (fractions[fractions.length / 2 - 1] + fractions[fractions.length / 2]) / 2
console.log(`gemm_stream = { value = ${med.toFixed(3)}, source = "ai-dynamo/aiconfigurator ${commit} systems/data/${gpu}/gemm/{${engines.join(', ')}}/gemm_perf.parquet (${device}): bf16 GEMMs of 1-16 rows with >= 512 MB of weights, one engine linear op each in a CUDA graph (collector/*/collect_gemm.py); median of bytes / time over the HBM peak, ${fractions.length} GEMMs (${counts.join(', ')}), p10 ${q(0.1).toFixed(3)}, p90 ${q(0.9).toFixed(3)}", date = "2026-08" }`)
