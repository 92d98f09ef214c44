"""scalemodel in Python: the step time, memory, MFU and cost of training and
serving Transformers on TPU and GPU clusters, from the same engine and with
the same answers as the `scalemodel` command (docs/python.md).

    import scalemodel as sm
    r = sm.train(model="llama3-8b", system="h100:8x1", plan="fsdp=8",
                 batch_tokens="1Mi", seq=8192)
    r.step_time_s, r.mfu, r.memory_per_chip.total_bytes, r.to_dict()

Each function runs the CLI command of its name in this process (keyword
arguments are the options, dashes as underscores) and returns its --json
document as a Result. Plots are in scalemodel.plot (matplotlib), imported
on first use; sweep() tabulates a function over lists of option values.
"""

from ._cli import Error, InternalError, run_cli, text
from .commands import (chip, chips, collective, matmul, model, models,
                       plan_serve, plan_train, roofline, run, serve, shard,
                       system, systems, train, validate)
from .results import (ChipResult, ChipsResult, CollectiveResult, MatmulResult,
                      ModelResult, ModelsResult, PlanServeResult,
                      PlanTrainResult, Record, Result, RooflineResult,
                      ServeResult, ShardResult, SystemResult, SystemsResult,
                      Table, TrainResult, ValidateResult)
from .sweep import sweep

__version__ = "0.1.0"

__all__ = [
    "Error", "InternalError", "run_cli", "text", "run", "chips", "chip",
    "systems", "system", "models", "model", "roofline", "collective", "shard",
    "matmul", "train", "plan_train", "serve", "plan_serve", "validate",
    "sweep", "plot", "Record", "Table", "Result", "ChipsResult", "ChipResult",
    "SystemsResult", "SystemResult", "ModelsResult", "ModelResult",
    "RooflineResult", "CollectiveResult", "ShardResult", "MatmulResult",
    "TrainResult", "PlanTrainResult", "ServeResult", "PlanServeResult",
    "ValidateResult",
]


def __getattr__(name):
    # matplotlib loads only when a plot is asked for (import time).
    if name == "plot":
        import importlib
        module = importlib.import_module(".plot", __name__)
        globals()["plot"] = module
        return module
    raise AttributeError(f"module 'scalemodel' has no attribute '{name}'")
