"""--emit ENGINE then --from ENGINE through the scalemodel executable: the
imported line gives back the estimate of the plan that was emitted (one
case per engine; tests/launch/import_test.cc has the library's round
trips), both as a script file and as a quoted argument. torchtitan's line
has no flag for its fp32 gradient reduction (its only value at v0.2.2), so
its plan is estimated with --engine torchtitan, as the import reads it."""

import json
import os
import tempfile

import pytest

from conftest import binary_json, run_binary

TRAIN = [
    ("megatron", ["--model", "llama3-70b", "--system", "h100:8x64", "--plan",
                  "dp=16,tp=8,pp=4,zero=1", "--batch-tokens", "1024x4096",
                  "--seq", "4096", "--remat", "selective"]),
    ("maxtext", ["--model", "llama3-405b", "--system", "tpu-v5p:8x16x16",
                 "--plan", "fsdp=128,tp=4,pp=4", "--batch-tokens",
                 "2048x8192", "--seq", "8192", "--schedule", "interleaved",
                 "--vpp", "2", "--microbatches", "16", "--remat", "full",
                 "--precision", "fp8"]),
    ("torchtitan", ["--model", "qwen3-235b-a22b", "--system", "h100:8x16",
                    "--plan", "fsdp=4,ep=8,pp=4", "--batch-tokens",
                    "512x4096", "--seq", "4096", "--remat",
                    "save-matmul-outputs", "--engine", "torchtitan"]),
]

SERVE = [
    ("vllm", ["--model", "qwen3-235b-a22b", "--system", "h100:8x2", "--plan",
              "tp=1,ep=16", "--batch", "128", "--weights", "fp8", "--kv",
              "fp8"]),
    ("sglang", ["--model", "llama3-8b", "--system", "h100:8x1", "--plan",
                "tp=1,dp=8", "--batch", "16"]),
]

LENGTHS = ["--prompt", "2048", "--output", "512"]


def system_of(args):
    return args[args.index("--system") + 1]


@pytest.mark.parametrize("engine,args", TRAIN, ids=[t[0] for t in TRAIN])
def test_train_round_trip(engine, args):
    emitted = binary_json(["train"] + args + ["--emit", engine, "--json"])
    script = emitted["launch"]["script"]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "run.sh")
        with open(path, "w", encoding="utf-8") as f:
            f.write(script)
        back = binary_json(["train", "--system", system_of(args), "--from",
                            engine, path, "--json"])
    assert back["inputs"]["from"]["ignored"] == []
    assert back["step_time_s"] == emitted["step_time_s"]
    assert back["memory_per_chip"] == emitted["memory_per_chip"]


@pytest.mark.parametrize("engine,args", SERVE, ids=[s[0] for s in SERVE])
def test_serve_round_trip(engine, args):
    emitted = binary_json(["serve"] + args + LENGTHS +
                          ["--emit", engine, "--json"])
    # The command without its comment lines, as one quoted argument.
    line = " ".join(l.rstrip("\\").strip()
                    for l in emitted["launch"]["script"].splitlines()
                    if l and not l.startswith("#"))
    back = binary_json(["serve", "--system", system_of(args), "--from",
                        engine, line] + LENGTHS + ["--json"])
    for key in ("decode_step_time_s", "ttft_s", "tokens_per_s_per_chip"):
        assert back[key] == emitted[key], key


def test_from_refuses_options_the_line_sets():
    code, _, err = run_binary(
        ["train", "--system", "h100:8x4", "--model", "llama3-8b", "--from",
         "megatron", "--seq-length 4096 --micro-batch-size 1", "--remat",
         "full"])
    assert code == 2
    assert err.startswith("error: --remat: the launch line given to --from")
