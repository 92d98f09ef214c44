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
With --more, gpt-oss-120b, MiniMax-M2.5 and Kimi-K2.5 the same way (their
config.json shapes below; gpt-oss's and Kimi's quantized checkpoints as
bf16 weights with quantized routed experts, --expert-weights; docs/model.md
7.1). With --ep, the runs of all six MoE models whose experts are split by
expert parallelism alone inside the TP group (moe_ep = tp, moe_tp 1, no
attention data parallelism), as plan tp=1,ep=N (docs/model.md 7).

  python3 tools/dev/silicon_check.py silicon_sample.csv [--limit N]
      [--moe | --more]
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
# The MoE families of --more, as their config.json files give them (the
# fields scalemodel reads). gpt-oss-120b: openai/gpt-oss-120b (sliding
# window of 128 on every other layer, MXFP4 routed experts); MiniMax-M2.5:
# MiniMaxAI/MiniMax-M2.5 (MiniMax-M2's shapes); Kimi-K2.5: the language
# model of moonshotai/Kimi-K2.5 (Kimi K2's: DeepSeek-V3's layout with 384
# experts, 64 heads and one dense layer; INT4 routed experts).
GPT_OSS_120B = {
    "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss",
    "hidden_size": 2880, "intermediate_size": 2880, "num_hidden_layers": 36,
    "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64,
    "vocab_size": 201088, "num_local_experts": 128,
    "num_experts_per_tok": 4, "sliding_window": 128,
    "layer_types": ["sliding_attention", "full_attention"] * 18,
    "max_position_embeddings": 131072, "tie_word_embeddings": False,
    "attention_bias": True, "torch_dtype": "bfloat16"}
MINIMAX_M2_5 = {
    "architectures": ["MiniMaxM2ForCausalLM"], "model_type": "minimax_m2",
    "hidden_size": 3072, "intermediate_size": 1536, "num_hidden_layers": 62,
    "num_attention_heads": 48, "num_key_value_heads": 8, "head_dim": 128,
    "vocab_size": 200064, "tie_word_embeddings": False,
    "max_position_embeddings": 196608, "num_local_experts": 256,
    "num_experts_per_tok": 8, "torch_dtype": "bfloat16"}
KIMI_K2_5 = {
    "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
    "hidden_size": 7168, "intermediate_size": 18432,
    "moe_intermediate_size": 2048, "num_hidden_layers": 61,
    "num_attention_heads": 64, "num_key_value_heads": 64,
    "vocab_size": 163840, "tie_word_embeddings": False,
    "max_position_embeddings": 262144, "q_lora_rank": 1536,
    "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
    "v_head_dim": 128, "n_routed_experts": 384, "n_shared_experts": 1,
    "num_experts_per_tok": 8, "first_k_dense_replace": 1,
    "torch_dtype": "bfloat16"}
# Checkpoints that quantize the routed experts alone (--expert-weights).
EXPERTS_ONLY = {"openai/gpt-oss-120b", "moonshotai/Kimi-K2.5"}
CHIPS = {"h100_sxm": "h100", "h200_sxm": "h200", "b200_sxm": "b200"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--binary", default="build/scalemodel")
    ap.add_argument("--dump", help="write each run's errors to this JSON file")
    ap.add_argument("--more", action="store_true",
                    help="gpt-oss-120b, MiniMax-M2.5 and Kimi-K2.5 (experts "
                         "split by tensor parallelism alone, as --moe)")
    ap.add_argument("--moe", action="store_true",
                    help="the MoE runs instead (DeepSeek-V3/R1, Qwen3-235B-A22B) "
                         "whose experts are split by tensor parallelism alone "
                         "(moe_tp = tp, no expert or attention data parallelism)")
    ap.add_argument("--ep", action="store_true",
                    help="the MoE runs of --moe and --more whose experts are "
                         "split by expert parallelism alone inside the TP "
                         "group (moe_ep = tp, moe_tp 1, no attention data "
                         "parallelism: SGLang --tp N --ep N, vLLM "
                         "--enable-expert-parallel), run as plan tp=1,ep=N")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()

    def config(name, spec):
        path = os.path.join(tmp, name + ".json")
        with open(path, "w") as f:
            json.dump(spec, f)
        return path

    qwen = config("qwen3-32b", QWEN3_32B)
    models = {"meta-llama/Llama-3.1-8B-Instruct": "llama3-8b",
              "meta-llama/Llama-3.1-70B": "llama3-70b", "Qwen/Qwen3-32B": qwen}
    if a.moe:
        models = {"deepseek-ai/DeepSeek-R1": "deepseek-v3",
                  "deepseek-ai/DeepSeek-V3": "deepseek-v3",
                  "Qwen/Qwen3-235B-A22B-FP8": "qwen3-235b-a22b"}
    if a.more or a.ep:
        models = ({} if a.more else {
            "deepseek-ai/DeepSeek-R1": "deepseek-v3",
            "deepseek-ai/DeepSeek-V3": "deepseek-v3",
            "Qwen/Qwen3-235B-A22B-FP8": "qwen3-235b-a22b"}) | {
            "openai/gpt-oss-120b": config("gpt-oss-120b", GPT_OSS_120B),
            "MiniMaxAI/MiniMax-M2.5": config("minimax-m2.5", MINIMAX_M2_5),
            "moonshotai/Kimi-K2.5": config("kimi-k2.5", KIMI_K2_5)}
        a.moe = not a.ep
    rows = [r for r in csv.DictReader(open(a.csv))
            if r["mode"] == "agg" and r["model_path"] in models
            and r["system"] in CHIPS and r["pp_size"] == "1"
            and (not a.moe or (r["moe_ep_size"] == "1"
                               and r["attention_dp_size"] in ("", "1")
                               and r["moe_tp_size"] == r["tp_size"]))
            and (not a.ep or (r["moe_ep_size"] == r["tp_size"] != "1"
                              and r["attention_dp_size"] in ("", "1")
                              and r["moe_tp_size"] == "1"))]
    if a.limit:
        rows = rows[:a.limit]

    def run(r):
        tp, c = int(r["tp_size"]), int(r["batch_size"])
        weights = {"fp8": "fp8", "fp4": "fp4", "int4": "int4"}.get(
            r["precision"], "bf16")
        # aiconfigurator quantizes the KV cache to fp8 for fp8 and nvfp4
        # checkpoints (aic-core/src/aiconfigurator_core/sdk/models/
        # helpers.py: "FMHA quant mode" sets kvcache_quant_mode fp8).
        kv = "fp8" if weights in ("fp8", "fp4") else "bf16"
        experts = []
        if r["model_path"] in EXPERTS_ONLY and weights != "bf16":
            experts = ["--expert-weights", weights]
            weights = "bf16"
        # A release scalemodel can read ("0.18.0"); a build tag
        # ("gpt-oss-dev", "nightly-...") names the engine alone.
        version = r["backend_version"]
        engine = r["backend"] + ("@" + version
                                 if version[:1].isdigit() else "")
        cmd = [a.binary, "serve", "--model", models[r["model_path"]],
               "--system", f"{CHIPS[r['system']]}:{tp}x1", "--plan",
               f"tp=1,ep={tp}" if a.ep else f"tp={tp}", "--concurrency", str(c), "--requests",
               str(20 * c), "--prompt", r["isl"], "--output", r["osl"],
               "--weights", weights, *experts, "--kv", kv, "--engine", engine,
               "--json"]
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
