// Prints a chip's `mla_fp8_kv_token` (docs/catalog-format.md): SGLang's MLA
// decode attention (its FlashAttention-3 backend, the default on Hopper)
// over an fp8 KV cache, time per cached token per layer, from NVIDIA
// ai-dynamo/aiconfigurator's measured table
// (aic-core/src/aiconfigurator_core/systems/data/<gpu>/mla/sglang/<version>/
// generation_mla_perf.parquet, collected by collector/sglang/collect_mla.py;
// latency in ms, context = isl + step).
//
// The procedure: the table's rows with the KV dtype, every head count, and
// at least 65,536 cached tokens (batch x context), where the per-token part
// dominates the kernel's fixed time; the least-squares fit (relative error)
// of latency = fixed + slope x batch x context. It prints the slope for
// fp8 and, for comparison, for bf16 (whose slope is its KV bytes at the HBM
// rate).
//
// Dev-only (not part of the build): needs `npm install hyparquet
// hyparquet-compressors` and the parquet file extracted from a checkout:
//   node tools/dev/aic_mla_fp8_kv.mjs \
//       aic/systems/data/h200_sxm/mla/sglang/0.5.14/generation_mla_perf.parquet
import { readTable } from './aic_common.mjs'

const rows = await readTable(process.argv[2])
for (const kv of ['fp8', 'bfloat16']) {
  const big = rows
    .filter((r) => r.kv_cache_dtype === kv)
    .map((r) => ({
      t: Number(r.batch_size) * (Number(r.isl) + Number(r.step)),
      y: r.latency * 1e-3,
    }))
    .filter((p) => p.t >= 65536)
  // Weighted least squares, weights 1/y^2 (relative error).
  let sw = 0, st = 0, sy = 0, stt = 0, sty = 0
  for (const p of big) {
    const w = 1 / (p.y * p.y)
    sw += w; st += w * p.t; sy += w * p.y; stt += w * p.t * p.t; sty += w * p.t * p.y
  }
  const slope = (sw * sty - st * sy) / (sw * stt - st * st)
  const fixed = (sy - slope * st) / sw
  console.log(`${kv}: ${big.length} rows, ${(slope * 1e9).toFixed(3)} ns per ` +
              `token and layer, ${(fixed * 1e6).toFixed(1)} us fixed`)
}
