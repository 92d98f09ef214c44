// Prints a chip's `attention_decode_head` catalog constant
// (docs/catalog-format.md): the decode attention kernel's time per decoding
// sequence and KV head in a layer, from NVIDIA ai-dynamo/aiconfigurator's
// measured decode attention tables (aic-core/src/aiconfigurator_core/
// systems/data/<gpu>/attention/<engine>/<version>/
// generation_attention_perf.parquet; collected by collector/<engine>/
// collect_attn.py: the engine's attention backend over a paged KV cache,
// one decode query per sequence; latency in ms per call).
//
// The procedure, the same for every chip: each SGLang and vLLM table of the
// chip at the commit (FlashAttention / FlashInfer / TensorRT-LLM-MHA
// kernels; TensorRT-LLM's own tables time a whole torch flow and are left
// out), its rows with a bf16 KV cache, head_dim 128 and no sliding window;
// with the serving model's own terms held fixed (the attention kernel's
// floor and the KV-cache store, FLOOR_US, plus the KV bytes at the chip's
// `hbm` fraction of HBM_BYTES_PER_S), the one coefficient c of
// batch x KV heads that fits best by least squares on the relative error;
// the median of the tables' c.
//
// Dev-only (not part of the build): needs `npm install hyparquet
// hyparquet-compressors` and the parquet files extracted from a checkout:
//   node tools/dev/aic_decode_attention.mjs DIR GPU HBM_BYTES_PER_S HBM \
//       FLOOR_US COMMIT ENGINE/VERSION...
//   node tools/dev/aic_decode_attention.mjs aic/systems/data h200_sxm \
//       4.8e12 0.90 8.583 095f58a5 \
//       $(cd aic/systems/data/h200_sxm/attention && ls -d sglang/* vllm/*)
import { readTable } from './aic_common.mjs'

const [dir, gpu, peakArg, hbmArg, floorArg, commit, ...engines] =
  process.argv.slice(2)
const rate = Number(peakArg) * Number(hbmArg)
const floor = Number(floorArg) * 1e-6
const fits = []
let device = ''
for (const ev of engines) {
  const rel = `${gpu}/attention/${ev}/generation_attention_perf.parquet`
  const rows = await readTable(`${dir}/${rel}`)
  // Weighted least squares through the origin of (t - base) on n, weights
  // 1 / t (relative error).
  let sxy = 0, sxx = 0, count = 0
  for (const r of rows) {
    device = r.device
    if (r.kv_cache_dtype !== 'bfloat16' || Number(r.head_dim) !== 128) continue
    if (r.window_size !== undefined && Number(r.window_size) !== 0) continue
    const b = Number(r.batch_size), kvh = Number(r.num_key_value_heads)
    const ctx = Number(r.isl) + Number(r.step)
    const t = r.latency * 1e-3
    if (!(t > 0)) continue
    const base = floor + b * ctx * 2 * kvh * 128 * 2 / rate
    const n = b * kvh, w2 = 1 / (t * t)
    sxy += w2 * n * (t - base)
    sxx += w2 * n * n
    count++
  }
  if (count > 0) fits.push([ev, sxy / sxx, count])
}
const cs = fits.map(f => f[1]).sort((a, b) => a - b)
const med = cs.length % 2 ? cs[(cs.length - 1) / 2]
  : (cs[cs.length / 2 - 1] + cs[cs.length / 2]) / 2
const ns = (s) => `${Number((s * 1e9).toPrecision(3))} ns`
console.log(`attention_decode_head = { value = "${ns(med)}", source = "ai-dynamo/aiconfigurator ${commit} systems/data/${gpu}/attention/{${engines.join(', ')}}/generation_attention_perf.parquet (${device}): decode attention over a paged bf16 KV cache, head_dim 128, no sliding window (collector/*/collect_attn.py); per table, the least-squares (relative) coefficient of batch x KV heads over the model's floor ${floorArg} us and KV bytes at hbm ${hbmArg}; median of ${fits.length} tables (${fits.map(f => `${f[0]} ${ns(f[1])}, ${f[2]} rows`).join('; ')})", date = "2026-08" }`)
