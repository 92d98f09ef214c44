#!/usr/bin/env python3
"""Sets a device_checks.json (tools/dev/device_checks.py) beside the model.

    python3 tools/dev/device_compare.py FILES_AT/device_checks.json \
        [--chip h200] [--scalemodel build/scalemodel]

Prints Markdown for docs/device-checks.md: each measurement as a fraction
of the chip's datasheet peak next to the catalog constant that assumes it
(data/chips/CHIP.toml [efficiency]), the fused-MoE style fit of the
grouped GEMMs, and the measured decode steps of the Llama-3-8B-shaped
forward against `scalemodel serve`'s realistic decode step at the same
batch and context. Nothing here changes a constant: a change goes through
the catalog with this file's figures as its source.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

# The serving model's constants this run checks (src/estimate/inference.cc).
SMALL_KERNEL_FLOOR_S = 2.433e-6  # kSmallKernelFloor (Hopper)
FUSED_MOE_BF16 = (27.1e-6, 0.74)  # MeasuredFusedMoe bf16 (no chip fit)
EAGER_OP_S = 40.4e-6  # SGLang 0.5's eager prefill per op (PR #12160)


def unit(value):
    """'4.8 TB/s' / '989.5 TFLOP/s' / '5 us' -> SI float."""
    num, _, u = str(value).partition(" ")
    scale = {"T": 1e12, "G": 1e9, "M": 1e6, "k": 1e3, "u": 1e-6, "n": 1e-9,
             "m": 1e-3}
    x = float(num)
    if u and u[0] in scale and u not in ("s",):
        x *= scale[u[0]]
    return x


def find_peaks(chip):
    """Peaks from the TOML, whatever its table names."""
    with open(os.path.join(ROOT, "data", "chips", chip + ".toml"), "rb") as f:
        c = tomllib.load(f)
    flat = {}

    def walk(d):
        for k, v in d.items():
            if isinstance(v, dict) and "value" not in v:
                walk(v)
            else:
                flat.setdefault(k, v["value"] if isinstance(v, dict) else v)
    walk(c)
    return {"bf16": unit(flat["bf16"]), "fp8": unit(flat["fp8"]),
            "hbm": unit(flat["hbm_bandwidth"]), "eff": {
                k: flat[k] for k in ("gemm_max", "gemm_max_fp8", "hbm",
                                     "attention", "attention_fa2",
                                     "op_overhead") if k in flat},
            # The chip's own bf16 fused-MoE fit where its file has one, else
            # MeasuredFusedMoe's published fit.
            "moe": ((unit(flat["moe_floor"]), float(flat["moe_stream"]))
                    if "moe_floor" in flat else FUSED_MOE_BF16)}


def lstsq_line(xs, ys):
    """y = a + b x by least squares; (a, b)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0
    return my - b * mx, b


def serve_step(binary, chip, batch, context, phase="decode", serve=None):
    """The model's step: `serve --json` at this batch and context (prompt),
    for llama3-8b on one chip or `serve`'s model, system and plan; its
    breakdown less serve["less"] (a part the measurement did not run)."""
    serve = serve or {"model": "llama3-8b", "system": chip + ":1x1"}
    args = [binary, "--json", "serve", "--model", serve["model"], "--system",
            serve["system"]]
    if serve.get("plan"):
        args += ["--plan", serve["plan"]]
    out = subprocess.run(
        args + ["--batch", str(batch), "--prompt", str(context),
                "--output", "1"], capture_output=True, text=True,
        check=True).stdout
    d = json.loads(out)
    b = {k: v for k, v in d[phase + "_breakdown"].items()
         if k != serve.get("less")}
    return sum(b.values()), b


def gemm_table(rows, p, eff):
    print("GEMMs: weight streaming = weight bytes / time / HBM peak "
          "(what a skinny GEMM is bound by), compute = FLOP/s / the "
          "dtype's peak; catalog gemm_max %s, gemm_max_fp8 %s, hbm %s.\n"
          % (eff.get("gemm_max"), eff.get("gemm_max_fp8"), eff.get("hbm")))
    print("| dtype | shape | m | us | weight streaming | compute |")
    print("|---|---|---:|---:|---:|---:|")
    for g in rows:
        if "seconds" not in g:
            print("| %s | %s | %d | %s | | |" % (
                g["dtype"], g["shape"], g["m"], g.get("error")))
            continue
        wb = 1 if g["dtype"] == "fp8" else 2
        stream = g["n"] * g["k"] * wb / g["seconds"] / p["hbm"]
        comp = g["flop_per_s"] / p[g["dtype"]]
        print("| %s | %s | %d | %.2f | %.3f | %.3f |" % (
            g["dtype"], g["shape"], g["m"], g["seconds"] * 1e6, stream, comp))
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checks")
    ap.add_argument("--chip", default="h200")
    ap.add_argument("--scalemodel", default=os.path.join(ROOT, "build",
                                                         "scalemodel"))
    a = ap.parse_args()
    with open(a.checks) as f:
        r = json.load(f)
    p = find_peaks(a.chip)
    eff = p["eff"]
    print("## %s (%s)\n" % (r.get("env", {}).get("gpu", "?"), a.checks))
    print("Environment: `%s`\n" % json.dumps(r.get("env", {})))

    if "hbm" in r:
        print("| HBM | GB/s | of %.1f TB/s | catalog `hbm` |" % (p["hbm"] / 1e12))
        print("|---|---:|---:|---:|")
        for h in r["hbm"]:
            print("| %s | %.0f | %.3f | %s |" % (
                h["kind"], h["bytes_per_s"] / 1e9, h["bytes_per_s"] / p["hbm"],
                eff.get("hbm")))
        print()

    if "launch" in r:
        ln = r["launch"]
        print("| launch | us | model |")
        print("|---|---:|---|")
        print("| one tiny kernel as a CUDA-graph node | %.3f | %.3f "
              "(kSmallKernelFloor) |" % (ln["graph_node_s"] * 1e6,
                                         SMALL_KERNEL_FLOOR_S * 1e6))
        print("| one eager launch (x.add_) | %.2f | - |"
              % (ln["eager_add_s"] * 1e6))
        print("| 1x4096x4096 bf16 GEMM, eager / graph | %.2f / %.2f | "
              "op_overhead %s |\n" % (ln["eager_mm_1x4096x4096_s"] * 1e6,
                                      ln["graph_mm_1x4096x4096_s"] * 1e6,
                                      eff.get("op_overhead")))

    if r.get("sustained"):
        st = r["sustained"]
        clocks = [int(x.split(",")[0]) for x in
                  st.get("nvidia_smi_sm_mhz_w_c", [])[2:] if x.strip()]
        print("Sustained %s: first replays %.0f TFLOP/s (%.3f of peak), last "
              "%.0f TFLOP/s (%.3f) over %d replays; SM clock after the "
              "first 0.5 s %s MHz (nvidia-smi every 250 ms). The realistic "
              "mode's sustained GEMM fraction: gemm_max x base/boost clock.\n"
              % (st["shape"], st["first_flop_per_s"] / 1e12,
                 st["first_flop_per_s"] / p["bf16"],
                 st["last_flop_per_s"] / 1e12,
                 st["last_flop_per_s"] / p["bf16"], st["replays"],
                 "%d-%d" % (min(clocks), max(clocks)) if clocks else "?"))

    if r.get("hbm_sweep"):
        print("| array | sum GB/s | of peak | copy GB/s (read + write) | of "
              "peak |")
        print("|---:|---:|---:|---:|---:|")
        for h in r["hbm_sweep"]:
            print("| %d MB | %.0f | %.3f | %.0f | %.3f |" % (
                h["bytes"] >> 20, h["sum_bytes_per_s"] / 1e9,
                h["sum_bytes_per_s"] / p["hbm"], h["copy_bytes_per_s"] / 1e9,
                h["copy_bytes_per_s"] / p["hbm"]))
        print()

    if r.get("small"):
        print("| batch | RMSNorm (4096) us | SiLU x mul (14336) us |")
        print("|---:|---:|---:|")
        for h in r["small"]:
            print("| %d | %.2f | %.2f |" % (h["batch"], h["rms_norm_s"] * 1e6,
                                            h["silu_mul_s"] * 1e6))
        print()

    for key in ("gemm", "gemm_holdout"):
        if r.get(key):
            gemm_table(r[key], p, eff)

    if r.get("prefill"):
        print("Prefill of one prompt through the same PyTorch forward "
              "(CUDA graph), against `scalemodel serve ... --batch 1 "
              "--prompt S --output 1`'s prefill.\n")
        print("| prompt | measured ms | predicted ms | error | predicted "
              "parts |")
        print("|---:|---:|---:|---:|---|")
        for d in r["prefill"]:
            if "graph_prefill_s" not in d:
                continue
            try:
                pred, parts = serve_step(a.scalemodel, a.chip, 1,
                                         d["prompt"], "prefill")
            except (OSError, subprocess.CalledProcessError) as e:
                pred, parts = float("nan"), {"error": str(e)}
            print("| %d | %.2f | %.2f | %+.1f%% | %s |" % (
                d["prompt"], d["graph_prefill_s"] * 1e3, pred * 1e3,
                (pred / d["graph_prefill_s"] - 1) * 100,
                ", ".join("%s %.2f" % (k.replace("_s", ""), v * 1e3)
                          for k, v in parts.items()
                          if isinstance(v, (int, float)))))
        print()

    if r.get("attention"):
        print("Attention: prefill = causal FLOP/s (half of 4 s^2 h d) of the "
              "bf16 peak (catalog attention %s, attention_fa2 %s at 8K, "
              "times the sequence ramp); decode = KV bytes / time of HBM.\n"
              % (eff.get("attention"), eff.get("attention_fa2")))
        print("| backend | kind | seq / batch x context | us | fraction |")
        print("|---|---|---|---:|---:|")
        for t in r["attention"]:
            if "seconds" not in t:
                continue
            if t["kind"] == "prefill":
                print("| %s | prefill | %d | %.1f | %.3f |" % (
                    t["backend"], t["seq"], t["seconds"] * 1e6,
                    t["flop_per_s"] / p["bf16"]))
            else:
                print("| %s | decode%s | %d x %d | %.1f | %.3f |" % (
                    t["backend"], "" if t.get("gqa") else " (KV repeated)",
                    t["batch"], t["context"], t["seconds"] * 1e6,
                    t["kv_bytes"] / t["seconds"] / p["hbm"]))
        print()

    if r.get("grouped"):
        print("Grouped GEMMs (torch._grouped_mm bf16, up/gate projection of "
              "the experts one rank holds): fit T = floor + touched bytes / "
              "(fraction x HBM) over batches <= 32, against the model's "
              "bf16 fused-MoE fit (%.1f us, %.3f).\n"
              % (p["moe"][0] * 1e6, p["moe"][1]))
        shapes = sorted({g["shape"] for g in r["grouped"]})
        print("| shape | batch | touched | us |")
        print("|---|---:|---:|---:|")
        for s in shapes:
            rows = [g for g in r["grouped"] if g["shape"] == s
                    and "seconds" in g]
            for g in rows:
                print("| %s | %d | %d | %.1f |" % (
                    s, g["batch"], g["touched"], g["seconds"] * 1e6))
            fit = [g for g in rows if g["batch"] <= 32]
            if len(fit) >= 2:
                a0, b1 = lstsq_line([g["touched_weight_bytes"] for g in fit],
                                    [g["seconds"] for g in fit])
                frac = 1 / (b1 * p["hbm"]) if b1 > 0 else math.inf
                print("| %s: fit | | | floor %.1f us, fraction %.2f |" % (
                    s, a0 * 1e6, frac))
        print()

    if r.get("decode"):
        print("Decode steps of the Llama-3-8B-shaped PyTorch forward "
              "(random weights, every sequence at the stated context; more "
              "and smaller kernels than an engine's fused ones), replayed as "
              "a CUDA graph, against `scalemodel serve --model llama3-8b "
              "--system %s:1x1 --batch B --prompt CONTEXT --output 1` "
              "(realistic decode step).\n" % a.chip)
        print("| batch | measured ms | predicted ms | error | predicted "
              "parts | eager ms | kernels | eager us per kernel |")
        print("|---:|---:|---:|---:|---|---:|---:|---:|")
        for d in r["decode"]:
            if "graph_step_s" not in d:
                print("| %d | %s | | | | | | |" % (d["batch"], d.get("error")))
                continue
            try:
                pred, parts = serve_step(a.scalemodel, a.chip, d["batch"],
                                         d["context"])
            except (OSError, subprocess.CalledProcessError) as e:
                pred, parts = float("nan"), {"error": str(e)}
            eager = d.get("eager_step_s")
            kern = d.get("kernels_per_step")
            print("| %d | %.3f | %.3f | %+.1f%% | %s | %s | %s | %s |" % (
                d["batch"], d["graph_step_s"] * 1e3, pred * 1e3,
                (pred / d["graph_step_s"] - 1) * 100,
                ", ".join("%s %.3f" % (k.replace("_s", ""), v * 1e3)
                          for k, v in parts.items()
                          if isinstance(v, (int, float))),
                "%.2f" % (eager * 1e3) if eager else "",
                kern if kern else "",
                "%.1f" % (eager / kern * 1e6) if eager and kern else ""))
        print("\nSGLang 0.5's eager prefill is modelled at %.1f us per "
              "Python-level op (docs/model.md 7.2); PyTorch's own eager "
              "launch above is its floor.\n" % (EAGER_OP_S * 1e6))

    for key in sorted(k for k in r if k.startswith("compiled")):
        c = r[key]
        serve = c.get("serve")
        what_model = ("`scalemodel serve --model %s --system %s --plan %s`, "
                      "its %s left out" % (serve["model"], serve["system"],
                                           serve["plan"], serve["less"])
                      if serve else "`scalemodel serve --model llama3-8b "
                      "--system %s:1x1`" % a.chip)
        print("%s: the forward with each layer compiled by torch.compile "
              "(fused elementwise kernels between the cuBLAS GEMMs and the "
              "attention kernel, as vLLM's compiled forward), replayed as a "
              "CUDA graph, against %s (decode: --batch B --prompt CONTEXT; "
              "prefill: --batch 1 --prompt S).\n" % (key, what_model))
        print("| step | measured ms | predicted ms | error | kernels | "
              "predicted parts |")
        print("|---|---:|---:|---:|---:|---|")
        for d in c.get("decode", []) + c.get("prefill", []):
            t = d.get("graph_step_s", d.get("graph_prefill_s"))
            if t is None:
                continue
            phase = "decode" if "context" in d else "prefill"
            what = ("decode batch %d at %d" % (d["batch"], d["context"])
                    if phase == "decode" else "prefill %d" % d["prompt"])
            try:
                pred, parts = serve_step(
                    a.scalemodel, a.chip, d["batch"],
                    d["context"] if phase == "decode" else d["prompt"], phase,
                    serve)
            except (OSError, subprocess.CalledProcessError) as e:
                pred, parts = float("nan"), {"error": str(e)}
            print("| %s | %.2f | %.2f | %+.1f%% | %s | %s |" % (
                what, t * 1e3, pred * 1e3, (pred / t - 1) * 100,
                d.get("kernels_per_step", ""),
                ", ".join("%s %.2f" % (k.replace("_s", ""), v * 1e3)
                          for k, v in parts.items()
                          if isinstance(v, (int, float)))))
        print()

    if r.get("errors"):
        print("Sections that failed: %s" % ", ".join(r["errors"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
