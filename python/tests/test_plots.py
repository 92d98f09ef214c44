"""The plots draw and write non-empty PNGs; sweep() tabulates."""

import os

import pytest

import scalemodel as sm

pytest.importorskip("matplotlib")

TRAIN = dict(model="llama3-8b", system="h100:8x1", batch_tokens="1Mi",
             seq=8192)


def png(path):
    assert os.path.getsize(path) > 1000
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_roofline(tmp_path):
    ops = [sm.roofline(chip="tpu-v5e", matmul=m)
           for m in ("64x8192x8192", "512x8192x8192")]
    fig = sm.plot.roofline("tpu-v5e", ops + [("attention", 1e12, 1e10)],
                           path=tmp_path / "r.png")
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    # One roof per memory level: HBM and the chip's on-chip memories with a
    # bandwidth.
    levels = 1 + sum(1 for m in sm.chip("tpu-v5e").on_chip_memory
                     if m.bytes_per_s)
    assert len(ax.get_lines()) == levels
    png(tmp_path / "r.png")


def test_memory_step_time_plans(tmp_path):
    rs = [sm.train(plan=p, **TRAIN) for p in ("fsdp=8", "tp=8", "dp=8")]
    sm.plot.memory(rs, path=tmp_path / "m.png")
    sm.plot.step_time(rs, path=tmp_path / "s.png")
    p = sm.plan_train(top=4, **TRAIN)
    fig = sm.plot.plans(p, path=tmp_path / "p.png")
    assert len(fig.axes[0].patches) == len(p.plans)
    serve = sm.serve(model="llama3-70b", system="h100:8x1", plan="tp=8",
                     batch=64, prompt=2048, output=512)
    sm.plot.memory([serve], path=tmp_path / "sm.png")
    for name in ("m", "s", "p", "sm"):
        png(tmp_path / f"{name}.png")


def test_frontier(tmp_path):
    f = sm.plan_serve(model="llama3-8b", system="h100", prompt=1024,
                      output=256, max_chips=8)
    fig = sm.plot.frontier(f, path=tmp_path / "f.png")
    assert len(fig.axes[0].get_lines()[0].get_xdata()) == len(f.frontier)
    png(tmp_path / "f.png")


def test_sweep(tmp_path):
    t = sm.sweep(sm.train, model="llama3-8b", system="h100:8x2", seq=8192,
                 batch=["512Ki", "1Mi"], tp=[1, 2, 3], fill="fsdp")
    assert len(t) == 6
    assert [r.batch for r in t] == ["512Ki"] * 3 + ["1Mi"] * 3
    ok = [r for r in t if r.error is None]
    assert [r["inputs.plan"] for r in ok[:2]] == ["fsdp=16", "fsdp=8,tp=2"]
    # tp=3 does not divide 16 chips: a row with the reason, not a raise.
    bad = [r for r in t if r.tp == 3]
    assert all("do not divide" in r.error for r in bad)
    direct = sm.train(model="llama3-8b", system="h100:8x2", seq=8192,
                      batch_tokens="1Mi", plan="fsdp=8,tp=2")
    assert t[4].step_time_s == direct.step_time_s
    assert t.results[4].to_dict() == direct.to_dict()
    sm.plot.sweep(t, x="batch", y="mfu", group="tp", path=tmp_path / "w.png")
    png(tmp_path / "w.png")
    if pytest.importorskip("pandas"):
        assert len(t.to_pandas()) == 6
