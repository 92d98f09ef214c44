"""One function per CLI command. Keyword arguments are the command's options
with underscores for dashes (docs/cli.md; `scalemodel CMD --help`); every
function also takes catalog= (the CLI's --catalog DIR). Each returns the
command's --json document as a Result and raises scalemodel.Error with the
CLI's sentence on a bad input.
"""

from . import results as _r
from ._cli import call

__all__ = [
    "run", "chips", "chip", "systems", "system", "models", "model",
    "roofline", "collective", "shard", "matmul", "train", "plan_train",
    "serve", "plan_serve", "validate",
]

# Result class per command (the words of the command line).
_RESULT = {
    ("chips",): _r.ChipsResult,
    ("chip",): _r.ChipResult,
    ("systems",): _r.SystemsResult,
    ("system",): _r.SystemResult,
    ("models",): _r.ModelsResult,
    ("model",): _r.ModelResult,
    ("roofline",): _r.RooflineResult,
    ("collective",): _r.CollectiveResult,
    ("shard",): _r.ShardResult,
    ("matmul",): _r.MatmulResult,
    ("train",): _r.TrainResult,
    ("plan", "train"): _r.PlanTrainResult,
    ("serve",): _r.ServeResult,
    ("plan", "serve"): _r.PlanServeResult,
    ("validate",): _r.ValidateResult,
}


def run(command, *positional, **options):
    """Any command: run("plan train", model=..., ...) or
    run("collective", "all-gather", system=..., axes="x", bytes="8MiB").
    Commands this package has no function for (added to the CLI later) come
    back as a plain Result."""
    words = tuple(command.split()) if isinstance(command, str) else tuple(
        command)
    cls = _RESULT.get(words, _r.Result)
    return cls(call(words, positional, options))


def chips(**options):
    """All chips in the catalog (`scalemodel chips`)."""
    return run("chips", **options)


def chip(name, **options):
    """One chip by id or alias, every number with its source
    (`scalemodel chip NAME`)."""
    return run("chip", name, **options)


def systems(**options):
    """The catalog's named systems (`scalemodel systems`)."""
    return run("systems", **options)


def system(spec, **options):
    """One system: a catalog name, CHIP:SHAPE or SYSTEM:SHAPE
    (`scalemodel system SPEC`)."""
    return run("system", spec, **options)


def models(**options):
    """The catalog's models (`scalemodel models`)."""
    return run("models", **options)


def model(name, **options):
    """A catalog model, a HuggingFace config.json path, or a config given as
    a dict (written to a temporary config.json) (`scalemodel model`)."""
    return run("model", name, **options)


def roofline(**options):
    """Time of one operation on one chip (`scalemodel roofline`):
    chip=, and matmul="BxDxF" or flops= and bytes=."""
    return run("roofline", **options)


def collective(kind, **options):
    """One collective on a system's axes (`scalemodel collective KIND`)."""
    return run("collective", kind, **options)


def shard(spec, **options):
    """Per-device shape and bytes of a sharded array (`scalemodel shard`)."""
    return run("shard", spec, **options)


def matmul(expr, **options):
    """A sharded matmul in the book's notation (`scalemodel matmul`)."""
    return run("matmul", expr, **options)


def train(**options):
    """Step time, memory and MFU of one training plan (`scalemodel train`).
    With emit="maxtext"|"megatron"|"torchtitan", .launch.script is the
    launch line."""
    return run("train", **options)


def plan_train(**options):
    """The best training plans (`scalemodel plan train`). The search
    releases the GIL; Ctrl-C stops it (KeyboardInterrupt)."""
    return run("plan train", **options)


def serve(**options):
    """Latency, throughput and memory of one serving plan
    (`scalemodel serve`)."""
    return run("serve", **options)


def plan_serve(**options):
    """The serving latency/throughput frontier (`scalemodel plan serve`)."""
    return run("plan serve", **options)


def validate(**options):
    """The published runs and the book's examples against the model
    (`scalemodel validate`)."""
    return run("validate", **options)
