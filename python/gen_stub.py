#!/usr/bin/env python3
"""Writes python/scalemodel/__init__.pyi, the package's type stub, from the
CLI itself: each function's keyword arguments from its command's --help
(option names, value types, REQUIRED), each result class's attributes from
the keys of a sample run's --json document.

Usage (after building): PYTHONPATH=build/python python3 python/gen_stub.py
python/tests/test_runtime.py fails when the stub is out of date.
"""

import os
import re
import sys
from collections import namedtuple

HERE = os.path.dirname(os.path.abspath(__file__))
# The built package (PYTHONPATH), not the sources beside this script.
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != HERE]

import scalemodel as sm  # noqa: E402
STUB = os.path.join(HERE, "scalemodel", "__init__.pyi")

_TRAIN = dict(model="llama3-8b", system="h100:8x1", plan="fsdp=8",
              batch_tokens="1Mi", seq=8192, tokens="15T",
              price_per_chip_hour=2.0, emit="megatron")
# (command words, function, positional (name, sample), sample options,
# result class): the sample runs give the result attributes.
COMMANDS = [
    (("chips",), ("chips", None), {}, "ChipsResult"),
    (("chip",), ("chip", ("name", "h100")), {}, "ChipResult"),
    (("systems",), ("systems", None), {}, "SystemsResult"),
    (("system",), ("system", ("spec", "h100:8x2")), {}, "SystemResult"),
    (("models",), ("models", None), {}, "ModelsResult"),
    (("model",), ("model", ("name", "llama3-8b")), {}, "ModelResult"),
    (("roofline",), ("roofline", None),
     {"chip": "h100", "matmul": "64x8192x8192"}, "RooflineResult"),
    (("collective",), ("collective", ("kind", "all-gather")),
     {"system": "h100:8x2", "axes": "node", "bytes": "1GB"},
     "CollectiveResult"),
    (("shard",), ("shard", ("spec", "A[I_X,J]")),
     {"mesh": "X=4", "dims": "I=1024,J=512"}, "ShardResult"),
    (("matmul",), ("matmul", ("expr", "A[I,J_X]@B[J_X,K]")),
     {"system": "tpu-v5e:4x4", "mesh": "X=16", "dims": "I=128,J=8192,K=8192"},
     "MatmulResult"),
    (("train",), ("train", None), _TRAIN, "TrainResult"),
    (("plan", "train"), ("plan_train", None),
     dict(model="llama3-8b", system="h100:8x1", batch_tokens="1Mi", seq=8192,
          top=2, explain="fsdp=8", emit="megatron"), "PlanTrainResult"),
    (("serve",), ("serve", None),
     dict(model="llama3-8b", system="h100:8x1", plan="tp=8", batch=8,
          prompt=1024, output=128, emit="vllm", price_per_chip_hour=2.0),
     "ServeResult"),
    (("plan", "serve"), ("plan_serve", None),
     dict(model="llama3-8b", system="h100", prompt=1024, output=128,
          max_chips=8, emit="vllm"), "PlanServeResult"),
    (("validate",), ("validate", None), {"filter": "h100"},
     "ValidateResult"),
]

Option = namedtuple("Option", "name kind required")
_OPTION = re.compile(r"^\s{2}(?:-\w,)?--([a-z0-9][a-z0-9-]*)"
                     r"(?:,--[a-z0-9-]+)*(\s+(?:TEXT|INT|UINT|FLOAT|NUMBER)\b)?\S*"
                     r"(?:\s+(REQUIRED)\b)?")
_KINDS = {"INT": "int", "UINT": "int", "FLOAT": "float"}


def options(words):
    """The options of one command from its --help: Option(name as a
    keyword, Python type, required)."""
    code, out, err = sm.run_cli(list(words) + ["--help"])
    assert code == 0, err
    found, seen = [], {"help", "json"}
    for line in out.splitlines():
        m = _OPTION.match(line)
        if not m:
            continue
        name = m.group(1).replace("-", "_")
        if name in seen:
            continue
        seen.add(name)
        kind = _KINDS.get((m.group(2) or "").strip(), "_Opt")
        if m.group(2) is None:
            kind = "bool"
        if name == "model":
            kind = "_Model"
        found.append(Option(name, kind, m.group(3) == "REQUIRED"))
    if "catalog" not in seen:
        found.append(Option("catalog", "_Path", False))
    return found


def _type_of(value):
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, dict):
        return "Record"
    if isinstance(value, list):
        if value and all(isinstance(v, dict) for v in value):
            return "Table"
        if value and all(isinstance(v, str) for v in value):
            return "list[str]"
        return "list[Any]"
    return "Any"


def _class(name, doc, command):
    words, (fn, positional), sample, _ = command
    pos = (positional[1],) if positional else ()
    data = sm.run(" ".join(words), *pos, **sample).to_dict()
    lines = [f"class {name}(Result):", f'    """{doc}"""']
    for key, value in data.items():
        if key in ("schema_version", "inputs") or not key.isidentifier():
            continue
        t = _type_of(value)
        if key == "best" or value is None:
            t = "Record | None" if key == "best" else "Any"
        lines.append(f"    {key}: {t}")
    if name == "PlanTrainResult":
        lines.append("    @property\n    def best(self) -> Record | None: ...")
    return "\n".join(lines) + "\n"


def _function(command):
    words, (fn, positional), _, result = command
    params = []
    if positional:
        kind = "_Model" if fn == "model" else "str"
        params.append(f"{positional[0]}: {kind}, /")
    params.append("*")
    for o in options(words):
        default = "" if o.required else " = ..."
        kind = o.kind if o.required else f"{o.kind} | None"
        params.append(f"{o.name}: {kind}{default}")
    body = ",\n    ".join(params)
    return f"def {fn}(\n    {body},\n) -> {result}: ...\n"


HEADER = '''\
# The scalemodel package's type stub. Generated by python/gen_stub.py from
# the CLI's options (--help) and sample --json documents; do not edit.
from os import PathLike
from typing import Any, Callable, Iterator, Mapping, Sequence

from . import plot as plot

__version__: str

_Path = str | PathLike[str]
# An option value as the CLI reads it: text ("1Mi", "4k", "50ms"), a number,
# a path, or a list joined with commas.
_Opt = str | int | float | PathLike[str] | Sequence[str | int | float]
# A catalog model, a config.json path, or a HuggingFace config as a dict.
_Model = str | PathLike[str] | Mapping[str, Any]

class Error(ValueError):
    message: str
    args_: list[str]
    exit_code: int
    def __init__(self, message: str, args_: Sequence[str] | None = ...,
                 exit_code: int = ...) -> None: ...

class InternalError(Error): ...

class Record:
    def __getattr__(self, name: str) -> Any: ...
    def __getitem__(self, key: str) -> Any: ...
    def __contains__(self, key: object) -> bool: ...
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...
    def keys(self) -> Any: ...
    def get(self, key: str, default: Any = ...) -> Any: ...
    def to_dict(self) -> dict[str, Any]: ...

class Table(list[Any]):
    results: list[Result | None]
    def to_list(self) -> list[dict[str, Any]]: ...
    def to_pandas(self, sep: str = ...) -> Any: ...

class Result(Record):
    schema_version: int
    inputs: Record
    def to_pandas(self) -> Any: ...

def run_cli(args: Sequence[str]) -> tuple[int, str, str]: ...
def text(command: str | Sequence[str], *positional: Any,
         **options: Any) -> str: ...
def run(command: str | Sequence[str], *positional: Any,
        **options: Any) -> Result: ...
def sweep(fn: Callable[..., Result], /, columns: Sequence[str] | None = ...,
          fill: str | None = ..., **options: Any) -> Table: ...

'''

DOCS = {
    "ChipsResult": "`scalemodel chips`",
    "ChipResult": "`scalemodel chip NAME`",
    "SystemsResult": "`scalemodel systems`",
    "SystemResult": "`scalemodel system SPEC`",
    "ModelsResult": "`scalemodel models`",
    "ModelResult": "`scalemodel model NAME|CONFIG`",
    "RooflineResult": "`scalemodel roofline`",
    "CollectiveResult": "`scalemodel collective KIND`",
    "ShardResult": "`scalemodel shard SPEC`",
    "MatmulResult": "`scalemodel matmul EXPR`",
    "TrainResult": "`scalemodel train` (with tokens=, a price and emit=)",
    "PlanTrainResult": "`scalemodel plan train`",
    "ServeResult": "`scalemodel serve`",
    "PlanServeResult": "`scalemodel plan serve`",
    "ValidateResult": "`scalemodel validate`",
}


def stub():
    """The stub's text."""
    parts = [HEADER]
    for c in COMMANDS:
        parts.append(_class(c[3], DOCS[c[3]], c) + "\n")
    for c in COMMANDS:
        parts.append(_function(c) + "\n")
    return "".join(parts).rstrip("\n") + "\n"


if __name__ == "__main__":
    text = stub()
    with open(STUB, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {STUB} ({len(text.splitlines())} lines)", file=sys.stderr)
