"""The result JSON's version and the conversions between typed values and JSON values.

docs/results.md documents every field and the version rule: the version goes up when a
field is renamed or removed or changes its unit or meaning; a new field does not change it
(a result saved before the field existed reads it back as None).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import MISSING, fields, is_dataclass
from typing import Any, TypeVar

from pipelab.engine.errors import Message

SCHEMA_VERSION = 3
"""The result JSON's layout; a result written before versions existed has none and reads as 1."""

RENAMED_METRICS: Mapping[int, Mapping[str, str]] = {
    # 2: the held count's name says its unit (stage-micro-batches), not bytes as "activations" read.
    2: {"peak_activations_per_device": "peak_held_microbatches_per_device"},
    # 3: every time figure names its clock: device (each action its own thread's CPU time, a
    # message its link cost) or wall (this host's clock), as simulated_ and cpu_ ones did.
    3: {"bubble_fraction": "device_bubble_fraction",
        "bubble_fraction_per_device": "device_bubble_fraction_per_device",
        "bubble_fraction_wall": "wall_bubble_fraction",
        "bubble_fraction_wall_per_device": "wall_bubble_fraction_per_device",
        "steady_bubble_fraction": "device_steady_bubble_fraction",
        "step_starts_per_device": "device_step_starts_per_device",
        "step_time_s": "wall_step_time_s",
        "step_times_wall_s": "wall_step_times_s",
        "bubble_fraction_per_step": "device_bubble_fraction_per_step",
        "steady_bubble_fraction_per_step": "device_steady_bubble_fraction_per_step"},
}
"""Version -> the metrics renamed in it (old name -> new name): an older result is read by
renaming them on the way in (``upgraded_metrics``)."""


class ResultSchemaError(ValueError):
    """A saved result this PipeLab cannot read; the message is one line."""


def check_version(data: Mapping) -> None:
    """Refuse a result written by a newer PipeLab: its fields may mean something else."""
    version = data.get("schema_version", SCHEMA_VERSION)
    if not isinstance(version, int) or isinstance(version, bool):
        raise ResultSchemaError(Message.of("schema_not_int", version=repr(version)))
    if version > SCHEMA_VERSION:
        raise ResultSchemaError(Message.of("schema_newer", version=repr(version), known=SCHEMA_VERSION))


def version_of(data: Mapping) -> int:
    """The layout ``data`` was written in (check_version has refused any it cannot read)."""
    return data.get("schema_version", 1)


def upgraded_metrics(metrics: Mapping, version: int) -> dict:
    """A result's metrics dict written in layout ``version``, with the names of this layout."""
    out = dict(metrics)
    for renamed_in, renames in sorted(RENAMED_METRICS.items()):
        if version < renamed_in:
            for old, new in renames.items():
                if old in out:
                    out[new] = out.pop(old)
    return out


def plain(value: Any) -> Any:
    """A JSON-ready value: a typed record as the dict of its fields (its own ``to_dict``),
    tuples as lists."""
    if is_dataclass(value):
        return value.to_dict()
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def record_dict(record) -> dict:
    """A frozen record's fields as JSON values, under their own names."""
    return {f.name: plain(getattr(record, f.name)) for f in fields(record)}


T = TypeVar("T")
Load = Callable[[Any], Any]


def load_record(cls: type[T], data: Mapping, loaders: Mapping[str, Load], what: str) -> T:
    """A record from its JSON dict: each field through its loader (default: as is). A field
    with a default that the dict lacks (added after the dict was written) takes it; a
    field without one must be there. Keys the record does not know are left out."""
    values = {}
    for f in fields(cls):
        if f.name in data:
            raw = data[f.name]
            values[f.name] = None if raw is None else loaders.get(f.name, _same)(raw)
        elif f.default is MISSING:
            raise ResultSchemaError(Message.of("schema_missing", what=what, name=repr(f.name)))
    return cls(**values)


def _same(x):
    return x


def seq(x) -> tuple:
    """A JSON list as a tuple, its items as written."""
    return tuple(x)


def seqs(x) -> tuple[tuple, ...]:
    """A JSON list of lists as a tuple of tuples."""
    return tuple(tuple(row) for row in x)
