#!/usr/bin/env python3
"""Out-of-sample check of `scalemodel serve --concurrency` against NVIDIA's
measured serving runs in ai-dynamo/aiconfigurator (aic-core/src/
aiconfigurator_core/systems/silicon_sample.csv; read at commit 095f58a5).

Those runs are aiperf closed loops (fixed ISL and OSL, ignore_eos, a
warm-up of one request per client, 20 rounds of the concurrency), with
TTFT and TPOT per run. They are not validation rows; this script runs the
aggregated dense ones whose model the catalog has (Llama 3.1 8B and 70B)
or that a config.json given here describes (Qwen3-32B) and prints the
errors by model, GPU, engine and precision (docs/model.md 7.3).

With --moe it runs the MoE runs instead (DeepSeek-R1/V3 as the catalog's
deepseek-v3, Qwen3-235B-A22B-FP8) whose experts are split by tensor
parallelism alone (moe_tp = tp, no expert or attention data parallelism).

  python3 tools/dev/silicon_check.py silicon_sample.csv [--limit N] [--moe]
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

QWEN3_32B = {  # Qwen/Qwen3-32B config.json (the fields scalemodel reads)
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
    "hidden_size": 5120, "intermediate_size": 25600,
    "num_hidden_layers": 64, "num_attention_heads": 64,
    "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
    "max_position_embeddings": 40960, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16"}
CHIPS = {"h100_sxm": "h100", "h200_sxm": "h200", "b200_sxm": "b200"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--binary", default="build/scalemodel")
    ap.add_argument("--dump", help="write each run's errors to this JSON file")
    ap.add_argument("--moe", action="store_true",
                    help="the MoE runs instead (DeepSeek-V3/R1, Qwen3-235B-A22B) "
                         "whose experts are split by tensor parallelism alone "
                         "(moe_tp = tp, no expert or attention data parallelism)")
    a = ap.parse_args()
    qwen = os.path.join(tempfile.mkdtemp(), "qwen3-32b.json")
    with open(qwen, "w") as f:
        json.dump(QWEN3_32B, f)
    models = {"meta-llama/Llama-3.1-8B-Instruct": "llama3-8b",
              "meta-llama/Llama-3.1-70B": "llama3-70b", "Qwen/Qwen3-32B": qwen}
    if a.moe:
        models = {"deepseek-ai/DeepSeek-R1": "deepseek-v3",
                  "deepseek-ai/DeepSeek-V3": "deepseek-v3",
                  "Qwen/Qwen3-235B-A22B-FP8": "qwen3-235b-a22b"}
    rows = [r for r in csv.DictReader(open(a.csv))
            if r["mode"] == "agg" and r["model_path"] in models
            and r["system"] in CHIPS and r["pp_size"] == "1"
            and (not a.moe or (r["moe_ep_size"] == "1"
                               and r["attention_dp_size"] in ("", "1")
                               and r["moe_tp_size"] == r["tp_size"]))]
    if a.limit:
        rows = rows[:a.limit]

    def run(r):
        tp, c = int(r["tp_size"]), int(r["batch_size"])
        weights = {"fp8": "fp8", "fp4": "fp4"}.get(r["precision"], "bf16")
        # aiconfigurator quantizes the KV cache to fp8 for fp8 and nvfp4
        # checkpoints (aic-core/src/aiconfigurator_core/sdk/models/
        # helpers.py: "FMHA quant mode" sets kvcache_quant_mode fp8).
        kv = "fp8" if weights in ("fp8", "fp4") else "bf16"
        engine = r["backend"] + ("@" + r["backend_version"]
                                 if r["backend_version"] else "")
        cmd = [a.binary, "serve", "--model", models[r["model_path"]],
               "--system", f"{CHIPS[r['system']]}:{tp}x1", "--plan",
               f"tp={tp}", "--concurrency", str(c), "--requests",
               str(20 * c), "--prompt", r["isl"], "--output", r["osl"],
               "--weights", weights, "--kv", kv, "--engine", engine, "--json"]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode:
            return r, None, p.stderr.strip()
        return r, json.loads(p.stdout), None

    out = []
    with ThreadPoolExecutor(os.cpu_count() or 2) as ex:
        for r, j, err in ex.map(run, rows):
            if j is None or not j.get("feasible", True):
                print("skipped", r["id"], err or j.get("reason"), file=sys.stderr)
                continue
            out.append(dict(
                key=(r["model_path"].split("/")[1], r["system"], r["backend"],
                     r["precision"] or "bf16"),
                run=dict(id=r["id"], tp=int(r["tp_size"]),
                         c=int(r["batch_size"]), isl=int(r["isl"]),
                         osl=int(r["osl"]),
                         ttft_ms=float(r["silicon_ttft_ms"]),
                         tpot_ms=float(r["silicon_tpot_ms"]),
                         pred_ttft_ms=j["ttft_s"]["mean"] * 1e3,
                         pred_tpot_ms=j["tpot_s"]["mean"] * 1e3),
                ttft=j["ttft_s"]["mean"] / (float(r["silicon_ttft_ms"]) / 1e3) - 1,
                tpot=j["tpot_s"]["mean"] / (float(r["silicon_tpot_ms"]) / 1e3) - 1,
                # The other bound for fixed lengths: requests spread evenly
                # (serve's `staggered`); the run's own when it has none.
                ttft_staggered=j.get("staggered", j)["ttft_s"]["mean"]
                / (float(r["silicon_ttft_ms"]) / 1e3) - 1,
                tpot_staggered=j.get("staggered", j)["tpot_s"]["mean"]
                / (float(r["silicon_tpot_ms"]) / 1e3) - 1))

    def summary(v, k):
        e = sorted(abs(x[k]) for x in v)
        return (f"median {statistics.median(e):.1%} p90 "
                f"{e[int(0.9 * (len(e) - 1))]:.1%} bias "
                f"{statistics.median(x[k] for x in v):+.1%}")

    if a.dump:
        with open(a.dump, "w") as f:
            json.dump([dict(x["run"], key=list(x["key"]), ttft_err=x["ttft"],
                            tpot_err=x["tpot"],
                            ttft_staggered_err=x["ttft_staggered"],
                            tpot_staggered_err=x["tpot_staggered"])
                       for x in out], f, indent=1)
    print(f"{len(out)} runs: TTFT {summary(out, 'ttft')}; TPOT {summary(out, 'tpot')}")
    print(f"  clients spread evenly (serve's staggered bound): TTFT "
          f"{summary(out, 'ttft_staggered')}; TPOT {summary(out, 'tpot_staggered')}")
    groups = defaultdict(list)
    for x in out:
        groups[x["key"]].append(x)
    for k, v in sorted(groups.items()):
        print(f"{' '.join(k)} ({len(v)}): TTFT {summary(v, 'ttft')}; "
              f"TPOT {summary(v, 'tpot')}; spread evenly: TTFT "
              f"{summary(v, 'ttft_staggered')}")


if __name__ == "__main__":
    main()
