#!/usr/bin/env python3
"""Measures, on one NVIDIA GPU, what the realistic model assumes.

One prepared run for a session that is lent a device (docs/device-checks.md):

    python3 tools/dev/device_checks.py --out "$OUT" --budget 420

Each section times PyTorch kernels on the GPU and appends its rows to
OUT/device_checks.json as soon as it ends, so a run stopped at its limit
keeps what it measured. Sections (--only picks some):

  env       GPU name, SMs, clocks, torch and CUDA versions
  hbm       device-to-device copy and a read-only reduction (the `hbm` fraction)
  launch    one tiny kernel per CUDA-graph node (the serving model's
            2.433 us small-kernel floor) and per eager launch (host time)
  gemm      bf16 and fp8 GEMMs by rows (1 ... 16,384) at real models' shapes
            (gemm_max, gemm_max_fp8, skinny GEMMs streaming their weights)
  attention SDPA causal prefill by length and decode by batch and context,
            per backend (flash = FlashAttention-2, cudnn) (attention_fa2)
  grouped   torch._grouped_mm bf16 over MoE experts by batch (the fused-MoE
            fit: floor + touched experts' bytes / (fraction x HBM))
  decode    a Llama-3-8B-shaped forward of random weights, batch 1 ... 128 at
            1,024 tokens of context, replayed as a CUDA graph and run eagerly
            (the decode step; PyTorch's host time per eager kernel)
  prefill   the same forward over one prompt of 128 ... 16,384 tokens
            (the prefill step behind TTFT)
  gemm_holdout  bf16/fp8 GEMMs at shapes and rows kept out of any fit to
            `gemm` (a held-out check of the GEMM rule)
  sustained 8192^3 bf16 GEMMs back to back for 8 s with clocks and power
            (burst vs sustained GEMM rate)
  hbm_sweep read and copy by array size, 4 MB ... 1 GB
  small     decode-sized RMSNorm and SiLU*mul kernels in a CUDA graph
  compiled  the Llama-3-8B forward with each layer torch.compile'd (fused
            elementwise kernels, as vLLM's compiled forward), decode batch
            1 ... 256 and prefill 128 ... 8,192 tokens, as CUDA graphs
  compiled_70b_tp8  the same for one rank's slice of Llama 3 70B at TP 8
            (the step without its all-reduces)

tools/dev/device_compare.py reads the file back here and sets it beside the
model's numbers. Timing: CUDA events around CUDA-graph replays of `reps`
back-to-back calls (what a graph-replayed decode step sees), the median of
`iters` replays; weights rotate over copies larger than the L2 so that a
skinny GEMM streams them from HBM as in a real forward.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
import traceback

import torch

L2_DEFEAT_BYTES = 256 << 20  # rotate weight copies over at least this much
RESULTS = {}
OUT_PATH = None
DEADLINE = None


def save():
    with open(OUT_PATH, "w") as f:
        json.dump(RESULTS, f, indent=1)


def left():
    return DEADLINE - time.monotonic()


def sync():
    torch.cuda.synchronize()


def replay_seconds(g):
    """Seconds of one replay of CUDA graph g (CUDA events around it)."""
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    g.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3


def time_graph(fn, reps=20, iters=5):
    """Seconds per call of fn(i), i = 0..reps-1, replayed as one CUDA graph."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for i in range(3):
            fn(i)
    torch.cuda.current_stream().wait_stream(s)
    sync()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(reps):
            fn(i)
    g.replay()
    sync()
    times = [replay_seconds(g) / reps for _ in range(iters)]
    del g
    return statistics.median(times)


def time_eager(fn, calls=200):
    """Wall seconds per call of fn(i) launched eagerly (host and GPU)."""
    for i in range(5):
        fn(i)
    sync()
    t0 = time.perf_counter()
    for i in range(calls):
        fn(i)
    sync()
    return (time.perf_counter() - t0) / calls


def section_env():
    p = torch.cuda.get_device_properties(0)
    env = {
        "gpu": p.name,
        "sms": p.multi_processor_count,
        "memory_bytes": p.total_memory,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
    }
    try:
        q = "clocks.max.sm,clocks.max.mem,power.limit,driver_version"
        env["nvidia_smi"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=" + q, "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as e:  # noqa: BLE001 - a missing tool is a note
        env["nvidia_smi"] = "not run: %s" % e
    RESULTS["env"] = env
    print("env", env)


def section_hbm():
    rows = []
    n = 1 << 30  # 1 GiB per buffer
    a = torch.empty(n, dtype=torch.uint8, device="cuda").random_(0, 255)
    b = torch.empty_like(a)
    t = time_graph(lambda i: b.copy_(a), reps=10)
    rows.append({"kind": "copy", "bytes": 2 * n, "seconds": t,
                 "bytes_per_s": 2 * n / t})
    x = a.view(torch.float32)
    t = time_graph(lambda i: x.sum(), reps=10)
    rows.append({"kind": "sum", "bytes": n, "seconds": t,
                 "bytes_per_s": n / t})
    RESULTS["hbm"] = rows
    for r in rows:
        print("hbm %-5s %.0f GB/s" % (r["kind"], r["bytes_per_s"] / 1e9))


def section_launch():
    x = torch.zeros(1, device="cuda")
    nodes = 1000
    t_node = time_graph(lambda i: x.add_(1), reps=nodes, iters=5)
    t_eager = time_eager(lambda i: x.add_(1), calls=5000)
    w = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(1, 4096, device="cuda", dtype=torch.bfloat16)
    t_mm_eager = time_eager(lambda i: torch.mm(v, w), calls=2000)
    t_mm_graph = time_graph(lambda i: torch.mm(v, w), reps=200)
    RESULTS["launch"] = {
        "graph_node_s": t_node, "eager_add_s": t_eager,
        "eager_mm_1x4096x4096_s": t_mm_eager,
        "graph_mm_1x4096x4096_s": t_mm_graph,
    }
    print("launch", RESULTS["launch"])


# (name, n = output features, k = contracting): real models' projections.
GEMM_SHAPES = [
    ("llama3-8b qkv", 6144, 4096), ("llama3-8b o", 4096, 4096),
    ("llama3-8b gate_up", 28672, 4096), ("llama3-8b down", 4096, 14336),
    ("llama3-70b/tp8 qkv", 1280, 8192), ("llama3-70b/tp8 o", 8192, 1024),
    ("llama3-70b/tp8 gate_up", 7168, 8192),
    ("llama3-70b/tp8 down", 8192, 3584),
]
GEMM_ROWS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192,
             16384]


def gemm_time(m, n, k, dtype):
    copies = max(1, min(20, math.ceil(L2_DEFEAT_BYTES / (n * k * 2))))
    if dtype == "bf16":
        ws = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.02
              for _ in range(copies)]
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        fn = lambda i: torch.mm(a, ws[i % copies].t())  # noqa: E731
    else:
        f8 = torch.float8_e4m3fn
        ws = [(torch.randn(n, k, device="cuda") * 0.02).to(f8)
              for _ in range(copies)]
        a = torch.randn(m, k, device="cuda").to(f8)
        one = torch.ones((), device="cuda")
        fn = lambda i: torch._scaled_mm(  # noqa: E731
            a, ws[i % copies].t(), scale_a=one, scale_b=one,
            out_dtype=torch.bfloat16)
    t = time_graph(fn, reps=20)
    del ws
    return t


def gemm_row(name, dtype, m, n, k):
    """One timed GEMM as a result row (an error recorded, not raised)."""
    row = {"shape": name, "dtype": dtype, "m": m, "n": n, "k": k}
    try:
        mm = m
        if dtype == "fp8" and m % 16:
            mm = 16  # _scaled_mm wants rows in multiples of 16
            row["padded_m"] = mm
        row["seconds"] = gemm_time(mm, n, k, dtype)
        row["flop_per_s"] = 2.0 * m * n * k / row["seconds"]
    except Exception as e:  # noqa: BLE001 - recorded, run goes on
        row["error"] = str(e).splitlines()[0][:200]
    return row


def section_gemm():
    rows = []
    RESULTS["gemm"] = rows
    shapes = GEMM_SHAPES + [("square 8192", 8192, 8192)]
    for dtype in ("bf16", "fp8"):
        for name, n, k in shapes:
            ms = [8192] if name.startswith("square") else GEMM_ROWS
            for m in ms:
                if left() < 60:
                    return
                row = gemm_row(name, dtype, m, n, k)
                rows.append(row)
                print("gemm %s %-22s m=%-5d %s" % (
                    dtype, name, m,
                    "%.2f us %.0f TFLOP/s" % (row["seconds"] * 1e6,
                                              row["flop_per_s"] / 1e12)
                    if "seconds" in row else row["error"]))
            save()


def sdpa_backends():
    from torch.nn.attention import SDPBackend
    out = [("flash", SDPBackend.FLASH_ATTENTION)]
    if hasattr(SDPBackend, "CUDNN_ATTENTION"):
        out.append(("cudnn", SDPBackend.CUDNN_ATTENTION))
    out.append(("efficient", SDPBackend.EFFICIENT_ATTENTION))
    return out


def section_attention():
    from torch.nn.attention import sdpa_kernel
    import torch.nn.functional as F
    rows = []
    RESULTS["attention"] = rows
    hq, hkv, d = 32, 8, 128  # Llama 3 8B
    for backend, kind in sdpa_backends():
        for s in (512, 1024, 2048, 4096, 8192, 16384):
            if left() < 45:
                return
            row = {"kind": "prefill", "backend": backend, "seq": s,
                   "heads": hq, "kv_heads": hkv, "head_dim": d}
            try:
                q = torch.randn(1, hq, s, d, device="cuda",
                                dtype=torch.bfloat16)
                k = torch.randn(1, hq, s, d, device="cuda",
                                dtype=torch.bfloat16)
                v = torch.randn_like(k)
                with sdpa_kernel([kind]):
                    t = time_graph(lambda i: F.scaled_dot_product_attention(
                        q, k, v, is_causal=True), reps=5)
                row["seconds"] = t
                # Causal: half of the 4 s^2 h d FLOPs (docs/model.md).
                row["flop_per_s"] = 2.0 * s * s * hq * d / t
            except Exception as e:  # noqa: BLE001
                row["error"] = str(e).splitlines()[0][:200]
            rows.append(row)
        for b in (1, 8, 32, 64, 128):
            for ctx in (1024, 4096, 16384):
                if left() < 45:
                    return
                row = {"kind": "decode", "backend": backend, "batch": b,
                       "context": ctx, "heads": hq, "kv_heads": hkv,
                       "head_dim": d}
                try:
                    q = torch.randn(b, hq, 1, d, device="cuda",
                                    dtype=torch.bfloat16)
                    k = torch.randn(b, hkv, ctx, d, device="cuda",
                                    dtype=torch.bfloat16)
                    v = torch.randn_like(k)
                    row["kv_bytes"] = 2 * b * hkv * ctx * d * 2
                    try:  # the GQA cache as it is
                        with sdpa_kernel([kind]):
                            t = time_graph(
                                lambda i: F.scaled_dot_product_attention(
                                    q, k, v, enable_gqa=True), reps=10)
                        row["gqa"] = True
                    except Exception:  # noqa: BLE001 - backend lacks GQA
                        # Each KV head repeated for its query group: the
                        # kernel reads hq / hkv times the cache's bytes.
                        kr = k.repeat_interleave(hq // hkv, dim=1)
                        vr = v.repeat_interleave(hq // hkv, dim=1)
                        with sdpa_kernel([kind]):
                            t = time_graph(
                                lambda i: F.scaled_dot_product_attention(
                                    q, kr, vr), reps=10)
                        row["gqa"] = False
                    row["seconds"] = t
                except Exception as e:  # noqa: BLE001
                    row["error"] = str(e).splitlines()[0][:200]
                rows.append(row)
        save()
        print("attention", backend, "done")


# (name, experts, top_k, n of the up/gate GEMM, k = hidden): experts as one
# rank of the serving layout holds them.
MOE_SHAPES = [
    ("qwen3-30b-a3b tp1 w13", 128, 8, 1536, 2048),
    ("qwen3-235b-a22b tp8 w13", 128, 8, 384, 4096),
    ("deepseek-v3 tp8 w13", 256, 8, 512, 7168),
]


def section_grouped():
    rows = []
    RESULTS["grouped"] = rows
    if not hasattr(torch, "_grouped_mm"):
        RESULTS["grouped_note"] = "torch._grouped_mm is not in this torch"
        return
    gen = torch.Generator().manual_seed(0)
    for name, e, topk, n, k in MOE_SHAPES:
        w = torch.randn(e, k, n, device="cuda", dtype=torch.bfloat16) * 0.02
        w = w.transpose(-2, -1).contiguous().transpose(-2, -1)
        for b in (1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096):
            if left() < 30:
                return
            row = {"shape": name, "experts": e, "top_k": topk, "n": n, "k": k,
                   "batch": b}
            try:
                picks = torch.stack([torch.randperm(e, generator=gen)[:topk]
                                     for _ in range(b)]).flatten()
                counts = torch.bincount(picks, minlength=e)
                # Each group's rows padded to a multiple of 16, as grouped
                # GEMM kernels want aligned offsets.
                padded = ((counts + 15) // 16) * 16
                offs = torch.cumsum(padded, 0).to(torch.int32).cuda()
                a = torch.randn(int(padded.sum()), k, device="cuda",
                                dtype=torch.bfloat16)
                t = time_graph(lambda i: torch._grouped_mm(a, w, offs=offs),
                               reps=10)
                row["seconds"] = t
                row["touched"] = int((counts > 0).sum())
                row["touched_weight_bytes"] = row["touched"] * n * k * 2
            except Exception as ex:  # noqa: BLE001
                row["error"] = str(ex).splitlines()[0][:200]
            rows.append(row)
        del w
        save()
        print("grouped", name, "done")


class Llama8B:
    """Llama 3 8B's decode forward in plain PyTorch ops (random weights)."""
    layers, hidden, heads, kv_heads, head_dim = 32, 4096, 32, 8, 128
    ffn, vocab = 14336, 128256

    def __init__(self, batch, context, **dims):
        """dims override the shapes (layers, hidden, heads, kv_heads,
        head_dim, ffn, vocab): another dense model, or one rank's slice of
        one under tensor parallelism."""
        for k, v in dims.items():
            setattr(self, k, v)

        def w(*shape):
            return torch.randn(*shape, device="cuda",
                               dtype=torch.bfloat16) * 0.02
        h, kvd = self.hidden, self.kv_heads * self.head_dim
        self.qs = self.heads * self.head_dim
        self.b, self.ctx = batch, context
        self.qkv = [w(self.qs + 2 * kvd, h) for _ in range(self.layers)]
        self.o = [w(h, self.qs) for _ in range(self.layers)]
        self.gate_up = [w(2 * self.ffn, h) for _ in range(self.layers)]
        self.down = [w(h, self.ffn) for _ in range(self.layers)]
        self.norm = torch.ones(h, device="cuda", dtype=torch.bfloat16)
        self.head = w(self.vocab, h)
        self.kc = [torch.zeros(batch, self.kv_heads, context, self.head_dim,
                               device="cuda", dtype=torch.bfloat16)
                   for _ in range(self.layers)]
        self.vc = [torch.zeros_like(c) for c in self.kc]
        self.x = w(batch, h)
        self.cos = torch.ones(self.head_dim // 2, device="cuda",
                              dtype=torch.bfloat16)
        self.sin = torch.zeros_like(self.cos)

    def rms(self, x):
        v = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(v + 1e-5)).to(x.dtype) * self.norm

    def rope(self, t):
        a, b = t[..., ::2], t[..., 1::2]
        return torch.cat((a * self.cos - b * self.sin,
                          a * self.sin + b * self.cos), -1)

    def step(self, i=0):
        import torch.nn.functional as F
        b, hd = self.b, self.head_dim
        kvd = self.kv_heads * hd
        x = self.x
        for li in range(self.layers):
            h = self.rms(x)
            qkv = h @ self.qkv[li].t()
            q = qkv[:, :self.qs].view(b, self.heads, 1, hd)
            k = qkv[:, self.qs:self.qs + kvd].view(
                b, self.kv_heads, 1, hd)
            v = qkv[:, self.qs + kvd:].view(b, self.kv_heads, 1, hd)
            q, k = self.rope(q), self.rope(k)
            self.kc[li][:, :, -1:, :].copy_(k)
            self.vc[li][:, :, -1:, :].copy_(v)
            a = F.scaled_dot_product_attention(
                q, self.kc[li], self.vc[li], enable_gqa=True)
            x = x + a.reshape(b, self.qs) @ self.o[li].t()
            h = self.rms(x)
            gu = h @ self.gate_up[li].t()
            x = x + (F.silu(gu[:, :self.ffn]) * gu[:, self.ffn:]) @ \
                self.down[li].t()
        return (self.rms(x) @ self.head.t()).argmax(-1)

    def prefill(self, s):
        """One sequence of s prompt tokens: the whole forward, causal."""
        import torch.nn.functional as F
        hd, kvd = self.head_dim, self.kv_heads * self.head_dim
        x = self.px[:s]
        for li in range(self.layers):
            h = self.rms(x)
            qkv = h @ self.qkv[li].t()
            q = qkv[:, :self.qs].view(s, self.heads, hd).transpose(0, 1)
            k = qkv[:, self.qs:self.qs + kvd].view(
                s, self.kv_heads, hd).transpose(0, 1)
            v = qkv[:, self.qs + kvd:].view(
                s, self.kv_heads, hd).transpose(0, 1)
            q, k = self.rope(q), self.rope(k)
            a = F.scaled_dot_product_attention(
                q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0).contiguous(),
                is_causal=True, enable_gqa=True)
            x = x + a[0].transpose(0, 1).reshape(s, self.qs) @ \
                self.o[li].t()
            h = self.rms(x)
            gu = h @ self.gate_up[li].t()
            x = x + (F.silu(gu[:, :self.ffn]) * gu[:, self.ffn:]) @ \
                self.down[li].t()
        return (self.rms(x[-1:]) @ self.head.t()).argmax(-1)


def count_kernels(fn):
    """GPU kernels one call of fn launches (torch.profiler), or None."""
    try:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            sync()
        return sum(1 for e in prof.events()
                   if e.device_type == torch.autograd.DeviceType.CUDA)
    except Exception:  # noqa: BLE001 - a count we could not take
        return None


def section_decode():
    rows = []
    RESULTS["decode"] = rows
    ctx = 1024
    for b in (1, 8, 32, 64, 128):
        if left() < 40:
            return
        row = {"model": "llama3-8b (PyTorch ops, random weights)",
               "batch": b, "context": ctx}
        try:
            m = Llama8B(b, ctx)
            row["graph_step_s"] = time_graph(m.step, reps=3, iters=5)
            if b in (1, 32):
                row["eager_step_s"] = time_eager(m.step, calls=10)
                row["kernels_per_step"] = count_kernels(m.step)
            del m
        except Exception as e:  # noqa: BLE001
            row["error"] = str(e).splitlines()[0][:200]
        torch.cuda.empty_cache()
        rows.append(row)
        save()
        print("decode", row)


# Shapes kept out of any fit to `gemm`'s rows (a held-out check of a GEMM
# rule): Llama 3 70B at TP 4, Qwen3-32B at TP 1, Llama 3 405B at TP 8, and
# Llama 3 8B's output head; rows between the powers of two too.
HOLDOUT_SHAPES = [
    ("llama3-70b/tp4 qkv", 2560, 8192), ("llama3-70b/tp4 o", 8192, 2048),
    ("llama3-70b/tp4 gate_up", 14336, 8192),
    ("llama3-70b/tp4 down", 8192, 7168),
    ("qwen3-32b qkv", 10240, 5120), ("qwen3-32b o", 5120, 8192),
    ("qwen3-32b gate_up", 51200, 5120), ("qwen3-32b down", 5120, 25600),
    ("llama3-405b/tp8 qkv", 2304, 16384), ("llama3-405b/tp8 o", 16384, 2048),
    ("llama3-405b/tp8 gate_up", 13312, 16384),
    ("llama3-405b/tp8 down", 16384, 6656),
    ("llama3-8b head", 128256, 4096),
]
HOLDOUT_ROWS = [1, 16, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 2048,
                4096, 8192]


def section_gemm_holdout():
    rows = []
    RESULTS["gemm_holdout"] = rows
    for dtype in ("bf16", "fp8"):
        for name, n, k in HOLDOUT_SHAPES:
            for m in HOLDOUT_ROWS:
                if left() < 60:
                    return
                rows.append(gemm_row(name, dtype, m, n, k))
            save()
        print("gemm_holdout", dtype, "done")


def section_sustained():
    """8192^3 bf16 GEMMs back to back for ~8 s, with clocks and power."""
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    ws = [torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
          for _ in range(4)]
    smi = None
    try:
        smi = subprocess.Popen(
            ["nvidia-smi", "--query-gpu=clocks.sm,power.draw,temperature.gpu",
             "--format=csv,noheader,nounits", "-lms", "250"],
            stdout=subprocess.PIPE, text=True)
    except Exception:  # noqa: BLE001 - no sampling then
        smi = None
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for i in range(3):
            torch.mm(a, ws[i % 4])
    sync()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(10):
            torch.mm(a, ws[i % 4])
    series = []
    t_end = time.monotonic() + 8
    while time.monotonic() < t_end:
        series.append(10 * 2.0 * n ** 3 / replay_seconds(g))
    samples = []
    if smi is not None:
        smi.terminate()
        try:
            out = smi.communicate(timeout=5)[0]
            samples = [ln.strip() for ln in out.splitlines() if ln.strip()]
        except Exception:  # noqa: BLE001
            pass
    k = max(1, len(series) // 8)
    RESULTS["sustained"] = {
        "shape": "8192^3 bf16 torch.mm, 10 per graph replay",
        "replays": len(series),
        "first_flop_per_s": statistics.median(series[:k]),
        "last_flop_per_s": statistics.median(series[-k:]),
        "series_flop_per_s": series[::max(1, len(series) // 64)],
        "nvidia_smi_sm_mhz_w_c": samples,
    }
    del g
    print("sustained first %.0f last %.0f TFLOP/s" % (
        RESULTS["sustained"]["first_flop_per_s"] / 1e12,
        RESULTS["sustained"]["last_flop_per_s"] / 1e12))


def section_hbm_sweep():
    """Read (sum) and copy by array size, buffers rotated past the L2."""
    rows = []
    RESULTS["hbm_sweep"] = rows
    for mb in (4, 16, 64, 256, 1024):
        nbytes = mb << 20
        copies = max(1, math.ceil((1 << 30) / nbytes))
        xs = [torch.randn(nbytes // 4, device="cuda") for _ in range(copies)]
        ys = [torch.empty_like(x) for x in xs]
        t_sum = time_graph(lambda i: xs[i % copies].sum(), reps=20)
        t_copy = time_graph(lambda i: ys[i % copies].copy_(xs[i % copies]),
                            reps=20)
        rows.append({"bytes": nbytes, "sum_s": t_sum, "copy_s": t_copy,
                     "sum_bytes_per_s": nbytes / t_sum,
                     "copy_bytes_per_s": 2 * nbytes / t_copy})
        print("hbm_sweep %5d MB sum %.0f GB/s copy %.0f GB/s" % (
            mb, nbytes / t_sum / 1e9, 2 * nbytes / t_copy / 1e9))
        del xs, ys
    save()


def section_small():
    """Decode-sized non-GEMM kernels in a CUDA graph (RMSNorm, SiLU*mul)."""
    import torch.nn.functional as F
    rows = []
    RESULTS["small"] = rows
    h, f = 4096, 14336
    wn = torch.ones(h, device="cuda", dtype=torch.bfloat16)
    for b in (1, 8, 32, 128, 512):
        x = torch.randn(b, h, device="cuda", dtype=torch.bfloat16)
        gu = torch.randn(b, 2 * f, device="cuda", dtype=torch.bfloat16)
        t_norm = time_graph(lambda i: F.rms_norm(x, (h,), wn, 1e-5),
                            reps=100)
        t_act = time_graph(lambda i: F.silu(gu[:, :f]) * gu[:, f:], reps=100)
        rows.append({"batch": b, "rms_norm_s": t_norm, "silu_mul_s": t_act})
    save()
    print("small", rows)


def section_prefill():
    rows = []
    RESULTS["prefill"] = rows
    m = Llama8B(1, 16)
    m.px = torch.randn(16384, m.hidden, device="cuda",
                       dtype=torch.bfloat16) * 0.02
    for s in (128, 512, 1024, 2048, 4096, 8192, 16384):
        if left() < 40:
            break
        row = {"model": "llama3-8b (PyTorch ops, random weights)",
               "batch": 1, "prompt": s}
        try:
            row["graph_prefill_s"] = time_graph(
                lambda i: m.prefill(s), reps=2, iters=3)
            if s in (128, 2048):
                row["eager_prefill_s"] = time_eager(
                    lambda i: m.prefill(s), calls=5)
        except Exception as e:  # noqa: BLE001
            row["error"] = str(e).splitlines()[0][:200]
        rows.append(row)
        save()
        print("prefill", row)
    del m
    torch.cuda.empty_cache()


def wall_seconds(fn):
    """Wall seconds of one call fn(0) to its GPU work's end (a first call:
    torch.compile's compilation included)."""
    t0 = time.monotonic()
    fn(0)
    sync()
    return time.monotonic() - t0


def section_compiled(m=None, key="compiled", serve=None,
                     batches=(1, 8, 32, 64, 128, 256),
                     prompts=(128, 512, 1024, 2048, 4096, 8192)):
    """Llama-3-8B decode and prefill with each decoder layer compiled by
    torch.compile (Inductor fuses the norms, rotary embedding, activation
    and residual adds into a few Triton kernels between the cuBLAS GEMMs
    and the attention kernel, as vLLM's compiled forward does), replayed as
    a CUDA graph: an engine-like step to set beside the model's. `m` another
    model's shapes (a Llama8B with dims), `serve` the scalemodel serve
    arguments it stands for (device_compare.py)."""
    import torch.nn.functional as F
    m = m or Llama8B(1, 16)
    H, hd, nq, nk, ff = m.hidden, m.head_dim, m.heads, m.kv_heads, m.ffn
    kvd, QS = nk * hd, m.qs

    def rope(t, cos, sin):
        a, b = t[..., ::2], t[..., 1::2]
        return torch.cat((a * cos - b * sin, a * sin + b * cos), -1)

    def mlp(x, norm, gu_w, d_w):
        h = F.rms_norm(x, (H,), norm, 1e-5)
        gu = h @ gu_w.t()
        return x + (F.silu(gu[:, :ff]) * gu[:, ff:]) @ d_w.t()

    def layer_decode(x, qkv_w, o_w, gu_w, d_w, kc, vc, norm, cos, sin):
        b = x.shape[0]
        h = F.rms_norm(x, (H,), norm, 1e-5)
        qkv = h @ qkv_w.t()
        q = rope(qkv[:, :QS].view(b, nq, 1, hd), cos, sin)
        a = F.scaled_dot_product_attention(q, kc, vc, enable_gqa=True)
        x = x + a.reshape(b, QS) @ o_w.t()
        return mlp(x, norm, gu_w, d_w)

    def layer_prefill(x, qkv_w, o_w, gu_w, d_w, norm, cos, sin):
        s = x.shape[0]
        h = F.rms_norm(x, (H,), norm, 1e-5)
        qkv = h @ qkv_w.t()
        q = rope(qkv[:, :QS].view(s, nq, hd).transpose(0, 1), cos, sin)
        k = rope(qkv[:, QS:QS + kvd].view(s, nk, hd).transpose(0, 1), cos,
                 sin)
        v = qkv[:, QS + kvd:].view(s, nk, hd).transpose(0, 1)
        a = F.scaled_dot_product_attention(
            q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), is_causal=True,
            enable_gqa=True)
        x = x + a[0].transpose(0, 1).reshape(s, QS) @ o_w.t()
        return mlp(x, norm, gu_w, d_w)

    dec = torch.compile(layer_decode, dynamic=True, fullgraph=True)
    pre = torch.compile(layer_prefill, dynamic=True, fullgraph=True)
    out = {"decode": [], "prefill": []}
    if serve:
        out["serve"] = serve
    RESULTS[key] = out
    ctx = 1024
    for b in batches:
        if left() < 60:
            break
        row = {"batch": b, "context": ctx}
        try:
            kc = [torch.randn(b, nk, ctx, hd, device="cuda",
                              dtype=torch.bfloat16) for _ in range(m.layers)]
            vc = [torch.randn_like(c) for c in kc]
            x0 = torch.randn(b, H, device="cuda", dtype=torch.bfloat16)

            def step(i, kc=kc, vc=vc, x0=x0):
                x = x0
                for li in range(m.layers):
                    x = dec(x, m.qkv[li], m.o[li], m.gate_up[li], m.down[li],
                            kc[li], vc[li], m.norm, m.cos, m.sin)
                return (F.rms_norm(x, (H,), m.norm, 1e-5) @
                        m.head.t()).argmax(-1)
            row["first_call_s"] = wall_seconds(step)
            row["graph_step_s"] = time_graph(step, reps=3, iters=5)
            row["kernels_per_step"] = count_kernels(lambda: step(0))
            del kc, vc
        except Exception as e:  # noqa: BLE001
            row["error"] = str(e).splitlines()[0][:300]
        torch.cuda.empty_cache()
        out["decode"].append(row)
        save()
        print(key, "decode", row)
    px = torch.randn(8192, H, device="cuda", dtype=torch.bfloat16)
    for sl in prompts:
        if left() < 45:
            break
        row = {"batch": 1, "prompt": sl}
        try:
            def fwd(i, sl=sl):
                x = px[:sl]
                for li in range(m.layers):
                    x = pre(x, m.qkv[li], m.o[li], m.gate_up[li], m.down[li],
                            m.norm, m.cos, m.sin)
                return (F.rms_norm(x[-1:], (H,), m.norm, 1e-5) @
                        m.head.t()).argmax(-1)
            row["first_call_s"] = wall_seconds(fwd)
            row["graph_prefill_s"] = time_graph(fwd, reps=2, iters=3)
        except Exception as e:  # noqa: BLE001
            row["error"] = str(e).splitlines()[0][:300]
        out["prefill"].append(row)
        save()
        print(key, "prefill", row)


def section_compiled_70b_tp8():
    """One rank's slice of Llama 3 70B under TP 8 (80 layers, 8 query heads
    and 1 KV head of 128, FFN 3,584, a 16,032-row output head), compiled as
    `compiled`: the step without its all-reduces, against the model's TP 8
    step less its communication."""
    m = Llama8B(1, 16, layers=80, hidden=8192, heads=8, kv_heads=1,
                ffn=3584, vocab=16032)
    section_compiled(m, "compiled_llama3_70b_tp8",
                     {"model": "llama3-70b", "system": "h200:8x1",
                      "plan": "tp=8", "less": "communication_s"},
                     batches=(1, 8, 32, 64, 128, 256),
                     prompts=(128, 512, 2048, 8192))
    del m
    torch.cuda.empty_cache()


SECTIONS = {"env": section_env, "hbm": section_hbm, "launch": section_launch,
            "gemm": section_gemm, "attention": section_attention,
            "grouped": section_grouped, "decode": section_decode,
            "prefill": section_prefill, "gemm_holdout": section_gemm_holdout,
            "sustained": section_sustained, "hbm_sweep": section_hbm_sweep,
            "small": section_small, "compiled": section_compiled,
            "compiled_70b_tp8": section_compiled_70b_tp8}


def main():
    global OUT_PATH, DEADLINE
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "."),
                    help="folder for device_checks.json ($OUT)")
    ap.add_argument("--budget", type=float, default=420,
                    help="seconds before sections stop starting work")
    ap.add_argument("--only", default=",".join(SECTIONS),
                    help="comma-separated sections: " + ",".join(SECTIONS))
    args = ap.parse_args()
    DEADLINE = time.monotonic() + args.budget
    OUT_PATH = os.path.join(args.out, "device_checks.json")
    if not torch.cuda.is_available():
        print("error: no CUDA device visible to torch", file=sys.stderr)
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    for name in args.only.split(","):
        if name not in SECTIONS:
            print("error: unknown section '%s' (have %s)" % (
                name, ", ".join(SECTIONS)), file=sys.stderr)
            return 2
    for name in args.only.split(","):
        t0 = time.monotonic()
        try:
            SECTIONS[name]()
        except Exception:  # noqa: BLE001 - one broken section, not the run
            RESULTS.setdefault("errors", {})[name] = traceback.format_exc()
            print("section %s failed:\n%s" % (name, traceback.format_exc()))
        RESULTS.setdefault("section_seconds", {})[name] = (
            time.monotonic() - t0)
        save()
        torch.cuda.empty_cache()
    print("wrote", OUT_PATH)
    return 0


if __name__ == "__main__":
    sys.exit(main())
