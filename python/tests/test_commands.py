"""Every command through the package equals the CLI: the same inputs give a
.to_dict() equal to what the scalemodel executable prints with --json."""

import glob
import json
import os
import shlex

import pytest

import scalemodel as sm
from scalemodel import _cli
from conftest import SOURCE_DIR, binary_json, run_binary

# Search timings differ from run to run; everything else must be equal.
VOLATILE = {"search_time_s"}


def stable(doc):
    if isinstance(doc, dict):
        return {k: stable(v) for k, v in doc.items() if k not in VOLATILE}
    if isinstance(doc, list):
        return [stable(v) for v in doc]
    return doc


TRAIN = dict(model="llama3-8b", system="h100:8x1", plan="fsdp=8",
             batch_tokens="1Mi", seq=8192)
SERVE = dict(model="llama3-70b", system="h100:8x1", plan="tp=8", batch=64,
             prompt=2048, output=512)

# (name, function, command words, positional, keyword options)
CASES = [
    ("chips", sm.chips, ["chips"], (), {}),
    ("chip", sm.chip, ["chip"], ("h100",), {}),
    ("systems", sm.systems, ["systems"], (), {}),
    ("system", sm.system, ["system"], ("tpu-v5p:4x4x4",), {}),
    ("models", sm.models, ["models"], (), {}),
    ("model", sm.model, ["model"], ("llama3-70b",), {"seq": 8192}),
    ("model_kv", sm.model, ["model"], ("deepseek-v3",),
     {"seq": "4k", "kv_dtype": "fp8"}),
    ("roofline_matmul", sm.roofline, ["roofline"], (),
     {"chip": "tpu-v5e", "matmul": "512x8192x8192"}),
    ("roofline_flops", sm.roofline, ["roofline"], (),
     {"chip": "h100", "flops": 1e12, "bytes": "1GB"}),
    ("collective", sm.collective, ["collective"], ("all-gather",),
     {"system": "tpu-v5p:4x4x4", "axes": ["x", "y"], "bytes": "8MiB"}),
    ("collective_realistic", sm.collective, ["collective"], ("all-reduce",),
     {"system": "h100:8x16", "axes": "node,net", "bytes": "1GB",
      "mode": "realistic"}),
    ("shard", sm.shard, ["shard"], ("A[I_XY,J]",),
     {"mesh": "X=8,Y=2", "dims": "I=1024,J=4096", "dtype": "fp32"}),
    ("matmul", sm.matmul, ["matmul"], ("A[I,J_X]@B[J_X,K]",),
     {"system": "tpu-v5e:16x16", "mesh": "X=16",
      "dims": "I=128,J=8192,K=8192"}),
    ("train", sm.train, ["train"], (), TRAIN),
    ("train_flags", sm.train, ["train"], (),
     dict(TRAIN, offload_optimizer=True, tokens="15T",
          price_per_chip_hour=2.5, remat="full")),
    ("train_emit", sm.train, ["train"], (), dict(TRAIN, emit="megatron")),
    ("plan_train", sm.plan_train, ["plan", "train"], (),
     dict(model="llama3-8b", system="h100:8x2", batch_tokens="1Mi",
          seq=8192, top=3)),
    ("plan_train_emit", sm.plan_train, ["plan", "train"], (),
     dict(model="llama3-8b", system="tpu-v5e:4x4", batch_tokens="1Mi",
          seq=4096, top=2, emit="maxtext")),
    ("serve", sm.serve, ["serve"], (), SERVE),
    ("serve_emit", sm.serve, ["serve"], (), dict(SERVE, emit="vllm")),
    ("serve_simulated", sm.serve, ["serve"], (),
     dict(model="llama3-8b", system="h100:1x1", rate=4, requests=300,
          prompt=1024, output=256)),
    ("serve_expert_weights", sm.serve, ["serve"], (),
     dict(model="qwen3-30b-a3b", system="h200:1x1", batch=8,
          weights="bf16", expert_weights="fp4")),
    ("serve_concurrency", sm.serve, ["serve"], (),
     dict(model="llama3-8b", system="h100:1x1", concurrency=16,
          requests=200, prompt_dist="uniform:512:1536", chunked_prefill=True)),
    ("plan_serve", sm.plan_serve, ["plan", "serve"], (),
     dict(model="llama3-70b", chip="tpu-v5e", prompt=8192, output=512,
          tpot_max="50ms")),
    ("plan_serve_rate", sm.plan_serve, ["plan", "serve"], (),
     dict(model="llama3-70b", chip="h100", rate=8, prompt=2048, output=512,
          slo_ttft="2s", slo_tpot="50ms", requests=200)),
    ("serve_disaggregated", sm.serve, ["serve"], (),
     dict(model="llama3-70b", system="h100:8x2", prefill_plan="tp=4,dp=2",
          decode_plan="tp=8", rate=4, requests=200, prompt=2048,
          output=256)),
    ("validate", sm.validate, ["validate"], (), {"filter": "h100"}),
    ("validate_cv", sm.validate, ["validate"], (), {"cv": "family"}),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_to_dict_equals_cli_json(case):
    _, fn, words, positional, options = case
    result = fn(*positional, **options)
    cli = binary_json(_cli.argv(words, positional, options))
    assert stable(result.to_dict()) == stable(cli)
    # The generic entry point gives the same.
    again = sm.run(" ".join(words), *positional, **options)
    assert type(again) is type(result)
    assert stable(again.to_dict()) == stable(cli)


def test_keywords_are_the_cli_options():
    args = _cli.argv(["train"], (), dict(batch_tokens="1Mi", seq=8192,
                                         offload_optimizer=True, tp_overlap=False,
                                         emit=None, axes=["x", "y"]))
    assert args == ["train", "--batch-tokens=1Mi", "--seq=8192",
                    "--offload-optimizer", "--axes=x,y", "--json"]
    # Spelled the way a person types it on the command line: same document.
    typed = binary_json(["train", "--model", "llama3-8b", "--system",
                         "h100:8x1", "--plan", "fsdp=8", "--batch-tokens",
                         "1Mi", "--seq", "8192", "--json"])
    assert sm.train(**TRAIN).to_dict() == typed


def golden_cases():
    return sorted(glob.glob(os.path.join(SOURCE_DIR, "tests", "golden",
                                         "*.args")))


@pytest.mark.parametrize("args_file", golden_cases(),
                         ids=lambda p: os.path.basename(p)[:-5])
def test_golden_in_process(args_file):
    """tests/golden: the in-process run prints the golden bytes."""
    with open(args_file, encoding="utf-8") as f:
        args = shlex.split(f.read())
    with open(args_file[:-5] + ".json", encoding="utf-8") as f:
        expected = f.read()
    code, out, err = sm.run_cli(args + ["--json"])
    assert code == 0, err
    assert out == expected


def test_results_have_attributes():
    r = sm.train(**TRAIN)
    assert isinstance(r, sm.TrainResult)
    assert r.step_time_s == r.to_dict()["step_time_s"] > 0
    assert r.memory_per_chip.total_bytes == r["memory_per_chip"][
        "total_bytes"]
    assert r.inputs.seq == 8192
    assert isinstance(r.comms, sm.Table)
    with pytest.raises(AttributeError, match="did you mean 'step_time_s'"):
        r.step_time  # noqa: B018
    # to_dict() is a copy: changing it leaves the result alone.
    d = r.to_dict()
    d["step_time_s"] = 0
    assert r.step_time_s > 0


def test_plan_tables():
    p = sm.plan_train(model="llama3-8b", system="h100:8x2",
                      batch_tokens="1Mi", seq=8192, top=3)
    assert isinstance(p.plans, list) and len(p.plans) == 3
    assert p.best.key == p.plans[0].key
    assert p.plans.to_list() == p.to_dict()["plans"]
    f = sm.plan_serve(model="llama3-70b", system="tpu-v5e", prompt=8192,
                      output=512, tpot_max="50ms")
    assert len(f.frontier) > 0 and f.best.plan


def test_to_pandas():
    pandas = pytest.importorskip("pandas")
    p = sm.plan_train(model="llama3-8b", system="h100:8x2",
                      batch_tokens="1Mi", seq=8192, top=3)
    df = p.to_pandas()
    assert isinstance(df, pandas.DataFrame)
    assert list(df["key"]) == [x.key for x in p.plans]
    assert "memory_per_chip.total_bytes" in df.columns
    assert len(sm.chips().to_pandas()) == len(sm.chips().chips)


def test_hf_config_from_dict_and_path(tmp_path):
    path = os.path.join(SOURCE_DIR, "data", "models", "llama3-8b.json")
    with open(path, encoding="utf-8") as f:
        config = json.load(f)
    by_path = sm.model(path, seq=8192)
    assert by_path.to_dict() == binary_json(["model", path, "--seq", "8192",
                                             "--json"])
    by_dict = sm.model(config, seq=8192)
    assert by_dict.params == by_path.params
    assert by_dict.train_flops_per_token == by_path.train_flops_per_token
    # A dict is a model for train too.
    t = sm.train(**dict(TRAIN, model=config))
    assert t.step_time_s == pytest.approx(sm.train(**TRAIN).step_time_s)


def test_text_report():
    text = sm.text("train", **TRAIN)
    code, out, _ = run_binary(_cli.argv(["train"], (), TRAIN,
                                        json_report=False))
    assert code == 0 and text == out
    assert "step" in text


def test_plan_serve_rate_plans_simulate_again():
    """Each plan of `plan serve --rate` names the serve command that
    simulates it; that command gives the same TTFT and TPOT p99."""
    r = sm.plan_serve(model="llama3-70b", chip="h100", rate=8, prompt=2048,
                      output=512, slo_ttft="2s", slo_tpot="50ms",
                      requests=200)
    assert r.meets_slo and r.best is not None and r.closest is None
    kinds = set()
    for p in r.to_dict()["plans"]:
        kinds.add(p["kind"])
        words = shlex.split(p["serve_command"])
        assert words[0] == "scalemodel"
        again = binary_json(words[1:] + ["--json"])
        assert again["ttft_s"]["p99"] == p["ttft_p99_s"]
        assert again["tpot_s"]["p99"] == p["tpot_p99_s"]
    assert kinds == {"aggregated", "disaggregated"}
    try:
        import pandas  # noqa: F401  (optional: python3-pandas)
    except ImportError:
        return
    assert len(r.to_pandas()) == len(r.to_dict()["plans"])


def test_plan_serve_rate_with_sglang_simulates_again():
    """With --engine sglang the search simulates SGLang's prefill-first
    scheduler and its eager prefill; each plan's serve command names the
    engine, so it gives the same p99s, and says mixed_prefill is off."""
    r = sm.plan_serve(model="llama3-8b", chip="h100", rate=4, prompt=1024,
                      output=256, slo_ttft="1s", slo_tpot="50ms",
                      requests=200, engine="sglang@0.5.6", max_chips=8)
    plans = r.to_dict()["plans"]
    assert plans
    for p in plans:
        words = shlex.split(p["serve_command"])
        assert "--engine" in words
        again = binary_json(words[1:] + ["--json"])
        assert again["ttft_s"]["p99"] == p["ttft_p99_s"]
        assert again["tpot_s"]["p99"] == p["tpot_p99_s"]
        if p["kind"] == "aggregated":
            assert again["inputs"]["mixed_prefill"] is False
