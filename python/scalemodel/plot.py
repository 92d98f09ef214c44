"""Plots of scalemodel results with matplotlib, drawn as "How to Scale Your
Model" draws them. Each function returns the matplotlib Figure and, given
path=, also saves it (PNG by the file's extension). Imported on first use of
scalemodel.plot, so `import scalemodel` stays fast.

    roofline(chip, ops)       log-log roofline, one roof per memory level
    memory(results)           memory per chip, stacked, against HBM
    step_time(results)        step-time breakdown, stacked
    plans(plan_train_result)  the plan search's top plans
    frontier(plan_serve_result, ...)  serving latency/throughput frontier
    sweep(table, x, y)        one column of a sweep() table against another

Without a display, matplotlib draws with Agg (set MPLBACKEND to change it).
"""

import os

if not os.environ.get("MPLBACKEND") and not os.environ.get("DISPLAY"):
    import matplotlib
    matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from . import commands  # noqa: E402
from .results import Record  # noqa: E402

__all__ = ["roofline", "memory", "step_time", "plans", "frontier", "sweep"]

_GB = 1e9


def _data(r):
    return r.to_dict() if hasattr(r, "to_dict") else dict(r)


def _finish(fig, path):
    fig.tight_layout()
    if path is not None:
        fig.savefig(os.fspath(path), dpi=120)
    return fig


def _labels(results, labels, key):
    if labels is not None:
        return list(labels)
    out = []
    for i, r in enumerate(results):
        d = _data(r)
        out.append(str(d.get(key) or d.get("inputs", {}).get(key) or i))
    return out


def roofline(chip, ops=(), dtype="bf16", path=None, title=None, catalog=None):
    """The roofline of `chip` (a name or a ChipResult): attainable FLOP/s
    against arithmetic intensity (FLOP/byte), log-log, one roof per memory
    level (HBM and each on-chip memory with a bandwidth) at the `dtype`
    peak. `ops` are points: RooflineResults (scalemodel.roofline(...)) or
    (label, flops, bytes) tuples, each drawn at its intensity and the rate
    the HBM roof allows it."""
    info = _data(chip) if not isinstance(chip, str) else _data(
        commands.chip(chip, catalog=catalog))
    peak = (info.get("peak_flops_per_s") or {}).get(dtype)
    if not peak:
        raise ValueError(f"{info['id']} has no {dtype} rate in the catalog")
    roofs = [("HBM", info["hbm_bytes_per_s"])]
    roofs += [(m["name"], m["bytes_per_s"]) for m in info.get(
        "on_chip_memory", []) if m.get("bytes_per_s")]
    points = []
    for op in ops:
        if isinstance(op, tuple):
            label, flops, nbytes = op
            points.append((label, flops / nbytes))
        else:
            d = _data(op)
            m = d["inputs"].get("matmul")
            label = (f"{int(m['b'])}x{int(m['d'])}x{int(m['f'])}" if m
                     else f"{d['flops']:.3g} FLOP")
            points.append((label, d["intensity"]))
    lo = min([1.0] + [p[1] / 4 for p in points])
    hi = max([peak / roofs[0][1] * 20] + [p[1] * 4 for p in points])
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, bw in roofs:
        ax.plot(xs, [min(peak, bw * x) for x in xs],
                label=f"{name} roof ({bw / 1e12:.3g} TB/s), ridge "
                      f"{peak / bw:.0f} FLOP/B")
    for i, (label, x) in enumerate(points):
        y = min(peak, roofs[0][1] * x)
        ax.scatter([x], [y], zorder=3)
        # Alternately below and above, so neighbours on the flat roof do not
        # overlap.
        ax.annotate(label, (x, y), textcoords="offset points",
                    xytext=(4, -12 if i % 2 == 0 else 6), fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel(f"attainable {dtype} FLOP/s")
    ax.set_title(title or f"Roofline: {info['name']}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return _finish(fig, path)


_TRAIN_MEMORY = ["params_bytes", "grads_bytes", "optimizer_bytes",
                 "activations_bytes", "other_bytes"]
_SERVE_MEMORY = ["weights_bytes", "kv_cache_bytes"]


def memory(results, labels=None, path=None, title="Memory per chip"):
    """Memory per chip of train or serve results (or plan rows), stacked by
    part, with each one's HBM capacity as a line."""
    data = [_data(r) for r in results]
    labels = _labels(data, labels, "plan")
    fig, ax = plt.subplots(figsize=(max(5, 1.1 * len(data) + 2), 4.5))
    first = data[0]["memory_per_chip"]
    parts = _TRAIN_MEMORY if "params_bytes" in first else _SERVE_MEMORY
    bottom = [0.0] * len(data)
    for part in parts:
        vals = [(d["memory_per_chip"].get(part) or 0) / _GB for d in data]
        ax.bar(labels, vals, bottom=bottom, label=part.replace("_bytes", ""))
        bottom = [b + v for b, v in zip(bottom, vals)]
    for i, d in enumerate(data):
        cap = d["memory_per_chip"].get("capacity_bytes")
        if cap:
            ax.hlines(cap / _GB, i - 0.45, i + 0.45, colors="black",
                      linestyles="dashed", label="HBM" if i == 0 else None)
    ax.set_ylabel("GB per chip")
    ax.set_title(title)
    ax.legend(fontsize=8)
    ax.tick_params(axis="x", labelrotation=30, labelsize=8)
    return _finish(fig, path)


_BREAKDOWN = ["compute_s", "exposed_comm_s", "bubble_s", "other_s"]


def step_time(results, labels=None, path=None, title="Step time"):
    """The step-time breakdown of train results (or plan rows): compute,
    exposed communication, pipeline bubble and the rest, stacked."""
    data = [_data(r) for r in results]
    labels = _labels(data, labels, "plan")
    fig, ax = plt.subplots(figsize=(max(5, 1.1 * len(data) + 2), 4.5))
    bottom = [0.0] * len(data)
    for part in _BREAKDOWN:
        vals = [d.get("breakdown", {}).get(part) or 0 for d in data]
        ax.bar(labels, vals, bottom=bottom, label=part[:-2])
        bottom = [b + v for b, v in zip(bottom, vals)]
    for i, d in enumerate(data):
        if d.get("mfu") is not None:
            ax.annotate(f"MFU {100 * d['mfu']:.0f}%", (i, bottom[i]),
                        ha="center", va="bottom", fontsize=8)
    ax.set_ylabel("seconds per step")
    ax.set_title(title)
    ax.legend(fontsize=8)
    ax.tick_params(axis="x", labelrotation=30, labelsize=8)
    return _finish(fig, path)


def plans(result, top=None, path=None, title=None):
    """The plan search's plans (a PlanTrainResult), best at the top: step
    time as bars, with MFU and memory per chip against HBM beside each."""
    d = _data(result)
    rows = d["plans"][:top] if top else d["plans"]
    if not rows:
        raise ValueError("the search found no plan that fits")
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(rows) + 1.5))
    names = [r.get("plan") or r.get("key") for r in rows][::-1]
    times = [r["step_time_s"] for r in rows][::-1]
    ax.barh(names, times, color="tab:blue")
    for i, r in enumerate(rows[::-1]):
        mem = r["memory_per_chip"]
        ax.annotate(f" MFU {100 * r['mfu']:.0f}%, "
                    f"{mem['total_bytes'] / _GB:.0f}/"
                    f"{mem['capacity_bytes'] / _GB:.0f} GB",
                    (times[i], i), va="center", fontsize=8)
    ax.set_xlim(0, max(times) * 1.45)
    ax.set_xlabel("seconds per step")
    inputs = d.get("inputs", {})
    ax.set_title(title or f"Top plans: {inputs.get('model', '')} on "
                          f"{inputs.get('system', '')}")
    ax.tick_params(axis="y", labelsize=8)
    return _finish(fig, path)


def frontier(*results, labels=None, path=None,
             title="Serving: throughput against latency"):
    """The latency/throughput frontier of plan_serve results (one line
    each): tokens per second per chip against time per output token; the
    chosen best point circled."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    data = [_data(r) for r in results]
    names = labels or [
        f"{d['inputs'].get('model', '')} on {d['inputs'].get('chip', '')}"
        for d in data]
    for name, d in zip(names, data):
        pts = sorted(d["frontier"], key=lambda p: p["decode_step_time_s"])
        xs = [1e3 * p["decode_step_time_s"] for p in pts]
        ys = [p["tokens_per_s_per_chip"] for p in pts]
        line, = ax.plot(xs, ys, marker="o", markersize=3, label=name)
        best = d.get("best")
        if best:
            ax.scatter([1e3 * best["decode_step_time_s"]],
                       [best["tokens_per_s_per_chip"]], s=120,
                       facecolors="none", edgecolors=line.get_color(),
                       zorder=3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("time per output token (ms)")
    ax.set_ylabel("tokens/s per chip")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return _finish(fig, path)


def sweep(table, x, y, group=None, path=None, title=None, logx=False):
    """Column `y` of a sweep() table against column `x`, one line per value
    of `group`; rows with an error or no value are left out."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    groups = {}
    for row in table:
        r = row.to_dict() if isinstance(row, Record) else row
        if r.get("error") or r.get(y) is None:
            continue
        groups.setdefault(r.get(group) if group else y, []).append(
            (r[x], r[y]))
    for g, pts in groups.items():
        labels_x = [str(p[0]) for p in pts]
        numeric = all(isinstance(p[0], (int, float)) for p in pts)
        xs = [p[0] for p in pts] if numeric else labels_x
        ax.plot(xs, [p[1] for p in pts], marker="o",
                label=f"{group}={g}" if group else None)
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_title(title or f"{y} against {x}")
    ax.grid(True, alpha=0.3)
    if group:
        ax.legend(fontsize=8)
    return _finish(fig, path)
