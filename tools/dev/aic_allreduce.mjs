// Prints [[allreduce_in_graph]] catalog tables (docs/catalog-format.md)
// from NVIDIA ai-dynamo/aiconfigurator's measured engine all-reduce tables
// (aic-core/src/aiconfigurator_core/systems/data/<gpu>/comm/<engine>/
// <version>/custom_allreduce_perf.parquet; collected by collector/network/
// collect_all_reduce.py: the engine's own tensor_model_parallel_all_reduce,
// 5 captured back-to-back in one CUDA graph, 20 replays after 3 warm-ups,
// time per all-reduce; message_size is bf16 elements).
//
// Dev-only (not part of the build): needs `npm install hyparquet
// hyparquet-compressors` and the parquet files extracted from a checkout:
//   node tools/dev/aic_allreduce.mjs DIR GPU COMMIT ENGINE/VERSION...
//   node tools/dev/aic_allreduce.mjs aic/systems/data h100_sxm 095f58a5 \
//       vllm/0.14.0 sglang/0.5.9 trtllm/1.2.0rc5
import { readTable } from './aic_common.mjs'

const [dir, gpu, commit, ...engines] = process.argv.slice(2)
const fmtBytes = (b) => b >= 1 << 30 ? `${b / (1 << 30)} GiB`
  : b >= 1 << 20 ? `${b / (1 << 20)} MiB` : `${b / 1024} KiB`
const fmtTime = (ms) => ms >= 1 ? `${Number(ms.toPrecision(3))} ms`
  : `${Number((ms * 1000).toPrecision(3))} us`
for (const ev of engines) {
  const [engine, version] = ev.split('/')
  const rel = `${gpu}/comm/${engine}/${version}/custom_allreduce_perf.parquet`
  const rows = await readTable(`${dir}/${rel}`)
  const byGpus = {}
  for (const r of rows) {
    if (r.op_name !== 'all_reduce' || String(r.kernel_source).includes('eager')
        || String(r.backend ?? '').includes('eager')) continue
    const bytes = 2 * Number(r.message_size)  // bf16
    if (bytes < 4096) continue
    ;(byGpus[r.num_gpus] ??= []).push([bytes, r.latency])
  }
  for (const g of Object.keys(byGpus).sort((a, b) => a - b)) {
    const pts = byGpus[g].sort((a, b) => a[0] - b[0])
    console.log(`[[allreduce_in_graph]]
engine = "${engine}"
version = "${version}"
gpus = ${g}
bytes = [${pts.map(p => `"${fmtBytes(p[0])}"`).join(', ')}]
time = [${pts.map(p => `"${fmtTime(p[1])}"`).join(', ')}]
source = "ai-dynamo/aiconfigurator ${commit} aic-core/src/aiconfigurator_core/systems/data/${rel} (${rows[0].device}): the engine's TP all-reduce of a bf16 message, 5 in one CUDA graph, 20 replays, time per all-reduce (collector/network/collect_all_reduce.py)"
date = "2026-08"
`)
  }
}
