"""sweep(): one function of the package over every combination of option
values, as a table.

    sm.sweep(sm.train, model="llama3-8b", system="h100:8x4", seq=8192,
             plan="fsdp=4", batch=["256Ki", "1Mi", "4Mi"], tp=[1, 2, 8])

A list (or tuple, range) is swept; anything else is passed as it is (give a
comma list the CLI takes as one value as a string: chips="256,512").
"""

import itertools

from . import commands
from ._cli import Error
from .results import Record, Table

__all__ = ["sweep", "PLAN_DEGREES"]

# Keywords that are plan degrees: joined into plan= ("tp=8,pp=2"), ahead of
# a plan= given (which keeps the rest: zero, mb, remat, ...).
PLAN_DEGREES = ("dp", "fsdp", "tp", "pp", "ep", "cp")

# Columns per result kind; dotted names reach into nested objects.
_TRAIN = ["inputs.plan", "feasible", "step_time_s", "mfu", "tokens_per_s_per_chip",
          "memory_per_chip.total_bytes", "memory_per_chip.capacity_bytes",
          "bottleneck", "microbatches", "reason"]
_SERVE = ["inputs.plan", "feasible", "ttft_s", "decode_step_time_s", "tokens_per_s_per_chip",
          "tokens_per_s_per_user", "memory_per_chip.total_bytes", "bound",
          "cost_per_million_tokens_usd", "reason"]
_DEFAULT_COLUMNS = {
    commands.train: _TRAIN,
    commands.serve: _SERVE,
    commands.plan_train: ["plans.0.key", "plans.0.step_time_s", "plans.0.mfu",
                          "plans.0.memory_per_chip.total_bytes",
                          "configs_evaluated"],
    commands.plan_serve: ["best.plan", "best.batch", "best.chips",
                          "best.ttft_s", "best.decode_step_time_s",
                          "best.tokens_per_s_per_chip"],
}


def _get(data, path):
    """data at a dotted path ("memory_per_chip.total_bytes", "plans.0.key");
    None where it is absent."""
    for part in path.split("."):
        if isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        elif isinstance(data, dict) and part in data:
            data = data[part]
        else:
            return None
    return data


def _scalars(data):
    return [k for k, v in data.items()
            if isinstance(v, (int, float, str, bool)) or v is None]


def _chips(opts):
    spec = opts.get("system")
    if not spec:
        raise Error("sweep: fill= needs system= to know the number of chips")
    return commands.system(spec, catalog=opts.get("catalog")).num_chips


def _options(fn, fixed, point, fill):
    """The keyword arguments of one call: plan degrees folded into plan=
    (with `fill` the chips the others leave), batch= as batch_tokens= for
    training."""
    opts = dict(fixed)
    opts.update(point)
    given = {k: int(opts.pop(k)) for k in PLAN_DEGREES if k in opts}
    if fill:
        product = 1
        for k, v in given.items():
            product *= v if k != fill else 1
        chips = _chips(opts)
        if product <= 0 or chips % product:
            raise Error(f"sweep: the degrees {given} do not divide the "
                        f"{chips} chips of {opts['system']}")
        given[fill] = chips // product
    degrees = [f"{k}={given[k]}" for k in PLAN_DEGREES if k in given]
    if degrees:
        rest = opts.get("plan")
        opts["plan"] = ",".join(degrees) + ("," + rest if rest else "")
    if fn in (commands.train, commands.plan_train) and "batch" in opts:
        opts["batch_tokens"] = opts.pop("batch")
    return opts


def sweep(fn, /, columns=None, fill=None, **options):
    """Calls `fn` (train, serve, plan_train, plan_serve, roofline, ... or any
    function of keyword options returning a Result) once per combination of
    the list-valued options, in order (the last one varies fastest).

    Plan degrees (dp, fsdp, tp, pp, ep, cp) are options too, joined into
    plan=; fill="dp" or "fsdp" gives that degree the chips the others leave
    (sweep(train, system="h100:8x4", tp=[1, 2, 8], fill="fsdp", ...)).

    Returns a Table: one Record per call with the swept values (under the
    names given) and `columns` (dotted paths into the result; by default the
    headline numbers of train, serve, plan_train and plan_serve, or every
    top-level number of other results). A combination the CLI rejects is a
    row with `error` (its sentence) instead of raising. The Results are in
    table.results (None for those rows).
    """
    swept = {k: list(v) for k, v in options.items()
             if isinstance(v, (list, tuple, range))}
    fixed = {k: v for k, v in options.items() if k not in swept}
    table = Table()
    table.results = []
    for values in itertools.product(*swept.values()):
        point = dict(zip(swept, values))
        row = dict(point)
        try:
            result = fn(**_options(fn, fixed, point, fill))
        except Error as e:
            row["error"] = str(e)
            table.append(Record(row))
            table.results.append(None)
            continue
        data = result.to_dict()
        cols = columns or _DEFAULT_COLUMNS.get(fn) or _scalars(data)
        for c in cols:
            row[c] = _get(data, c)
        row["error"] = None
        table.append(Record(row))
        table.results.append(result)
    return table
