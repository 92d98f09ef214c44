"""Results as Python objects: the CLI's --json document with attributes.

A Result holds the parsed document; `result.step_time_s` reads its key,
nested objects come back as Records (attributes too) and lists of objects
as Tables (lists with .to_pandas()). `.to_dict()` returns the document
itself, equal to what `scalemodel ... --json` prints for the same inputs.
"""

import copy
import keyword

__all__ = [
    "Record", "Table", "Result", "ChipsResult", "ChipResult",
    "SystemsResult", "SystemResult", "ModelsResult", "ModelResult",
    "RooflineResult", "CollectiveResult", "ShardResult", "MatmulResult",
    "TrainResult", "PlanTrainResult", "ServeResult", "PlanServeResult",
    "ValidateResult",
]


def _wrap(value):
    if isinstance(value, dict):
        return Record(value)
    if isinstance(value, list) and value and all(
            isinstance(v, dict) for v in value):
        return Table(Record(v) for v in value)
    return value


class Record:
    """One JSON object with its keys as attributes (record.memory_per_chip
    .total_bytes); record["key"] works too, for keys that are not names."""

    __slots__ = ("_data",)

    def __init__(self, data):
        object.__setattr__(self, "_data", data)

    def __getattr__(self, name):
        data = object.__getattribute__(self, "_data")
        key = name[:-1] if name.endswith("_") and keyword.iskeyword(
            name[:-1]) else name
        if key in data:
            return _wrap(data[key])
        import difflib  # only for the message
        near = difflib.get_close_matches(name, list(data), n=1)
        hint = f" (did you mean '{near[0]}'?)" if near else ""
        raise AttributeError(
            f"{type(self).__name__} has no key '{name}'{hint}; "
            f"keys: {', '.join(data)}")

    def __setattr__(self, name, value):
        raise AttributeError("results are read-only; use .to_dict() for a copy")

    def __getitem__(self, key):
        return _wrap(self._data[key])

    def __contains__(self, key):
        return key in self._data

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)

    def __eq__(self, other):
        if isinstance(other, Record):
            return self._data == other._data
        return self._data == other

    def __dir__(self):
        return sorted(set(dir(type(self))) | {
            k for k in self._data if k.isidentifier()})

    def keys(self):
        return self._data.keys()

    def get(self, key, default=None):
        return _wrap(self._data.get(key, default))

    def to_dict(self):
        """A deep copy of the JSON object."""
        return copy.deepcopy(self._data)

    def __repr__(self):
        shown = []
        for k, v in self._data.items():
            if isinstance(v, (int, float, str, bool)) or v is None:
                shown.append(f"{k}={v!r}")
            if len(shown) == 6:
                break
        more = ", ..." if len(self._data) > len(shown) else ""
        return f"{type(self).__name__}({', '.join(shown)}{more})"


class Table(list):
    """A list of Records (plans, chips, frontier points, cases, sweep rows)
    with .to_pandas() and .to_list()."""

    def to_list(self):
        """The rows as plain dicts (deep copies)."""
        return [r.to_dict() if isinstance(r, Record) else copy.deepcopy(r)
                for r in self]

    def to_pandas(self, sep="."):
        """A pandas DataFrame, one row per entry; nested objects become
        dotted columns ("memory_per_chip.total_bytes"). Needs pandas
        (Debian: python3-pandas)."""
        try:
            import pandas
        except ImportError as e:
            raise ImportError(
                "to_pandas() needs pandas: apt-get install -y python3-pandas "
                "(or pip install pandas)") from e
        return pandas.json_normalize(self.to_list(), sep=sep)


class Result(Record):
    """The --json document of one command: `schema_version`, `inputs` (the
    resolved inputs) and the results, as attributes."""

    __slots__ = ()
    # The key whose list is this result's table (to_pandas), if any.
    _table_key = None

    def to_pandas(self):
        """The result's table (plans, frontier, chips, ...) as a DataFrame;
        for a single result, one row."""
        if self._table_key is None:
            return Table([self]).to_pandas()
        return Table(Record(r) for r in self._data[self._table_key]).to_pandas()


class ChipsResult(Result):
    """`scalemodel chips`: .chips, one Record per chip."""
    __slots__ = ()
    _table_key = "chips"


class ChipResult(Result):
    """`scalemodel chip NAME`."""
    __slots__ = ()


class SystemsResult(Result):
    """`scalemodel systems`: .systems."""
    __slots__ = ()
    _table_key = "systems"


class SystemResult(Result):
    """`scalemodel system SPEC`."""
    __slots__ = ()


class ModelsResult(Result):
    """`scalemodel models`: .models."""
    __slots__ = ()
    _table_key = "models"


class ModelResult(Result):
    """`scalemodel model NAME|CONFIG`."""
    __slots__ = ()


class RooflineResult(Result):
    """`scalemodel roofline`."""
    __slots__ = ()


class CollectiveResult(Result):
    """`scalemodel collective KIND`: .per_axis."""
    __slots__ = ()
    _table_key = "per_axis"


class ShardResult(Result):
    """`scalemodel shard SPEC`."""
    __slots__ = ()


class MatmulResult(Result):
    """`scalemodel matmul EXPR`: .collectives, .alternatives."""
    __slots__ = ()
    _table_key = "alternatives"


class TrainResult(Result):
    """`scalemodel train`: step time, breakdown, memory per chip, MFU..."""
    __slots__ = ()
    _table_key = "comms"


class PlanTrainResult(Result):
    """`scalemodel plan train`: .plans (best first), .best."""
    __slots__ = ()
    _table_key = "plans"

    @property
    def best(self):
        """The best plan (a Record shaped like TrainResult), or None when
        nothing fits."""
        plans = self._data.get("plans") or []
        return Record(plans[0]) if plans else None


class ServeResult(Result):
    """`scalemodel serve`: TTFT, time per token, throughput, memory..."""
    __slots__ = ()


class PlanServeResult(Result):
    """`scalemodel plan serve`: .frontier, .best (None when no point meets
    the constraints); with rate=: .plans (simulated, best or closest first),
    .best, .closest, .meets_slo."""
    __slots__ = ()
    _table_key = "frontier"

    def to_pandas(self):
        """The frontier, or with rate= the simulated plans, as a DataFrame."""
        key = "plans" if "plans" in self._data else "frontier"
        return Table(Record(r) for r in self._data[key]).to_pandas()


class ValidateResult(Result):
    """`scalemodel validate`: .cases, .summary, .by_chip, .skipped."""
    __slots__ = ()
    _table_key = "cases"
