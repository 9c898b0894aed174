"""A data-parallel run's own figures: where its replicas sit, what each stage's all-reduce
cost, and how much of it the pipeline's idle time hid, measured beside the simulator's.

build_result (engine/results/result.py) computes every pipeline figure from replica 0, whose
ranks played the same programs on the same costs as the other replicas'; this record keeps
the rest: every process's events (rank = process, RankLayout), for the timeline that shows
the data-parallel groups, and the reduce figures per stage.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import asdict, dataclass

from pipelab.engine.results.timeline import Event, Timeline


@dataclass(frozen=True)
class DataParallelFigures:
    replicas: int
    """d: pipelines side by side."""
    reduce_at: str
    """Where each stage's R waited: "backward" (its own last backward) or "flush"."""
    layout: tuple[str, ...]
    """RankLayout.describe(): each pipeline's processes, each stage group's."""
    reduce_cost_s: tuple[float, ...]
    """Per stage: its all-reduce's cost, measured at set-up (what R lasts on the device clock,
    and what the simulator plays)."""
    exposed_reduce_s: tuple[float, ...]
    """Per stage, device clock: the part of its all-reduce after the step's last compute on any
    process, median over the measured steps (Timeline.exposed_reduce)."""
    exposed_reduce_wall_s: tuple[float, ...]
    """The same on the wall clock."""
    simulated_exposed_reduce_s: tuple[float, ...]
    """The same in the simulator at the run's own costs."""
    device_step_time_s: float
    """Device clock: median step, reduces included (the run's device_step_time_s)."""
    events: tuple[Event, ...]
    """Every process's events, ``rank`` the process (replica k's pipeline rank r is k * p + r)."""

    def exposed_fraction(self, which: str = "device") -> tuple[float, ...]:
        """Per stage, the exposed reduce as a share of the step: "device", "wall" or "simulated"."""
        values = {"device": self.exposed_reduce_s, "wall": self.exposed_reduce_wall_s,
                  "simulated": self.simulated_exposed_reduce_s}[which]
        return tuple(v / self.device_step_time_s if self.device_step_time_s > 0 else 0.0 for v in values)

    def timeline(self, num_microbatches: int, stage_to_rank: tuple[int, ...]) -> Timeline:
        """Every process's row on the device clock: d x p rows."""
        world = 1 + max((e.rank for e in self.events), default=0)
        return Timeline(world, list(self.events), "device", num_microbatches, stage_to_rank)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["events"] = [dict(vars(e)) for e in self.events]
        return data

    @classmethod
    def from_dict(cls, data: Mapping) -> DataParallelFigures:
        values = dict(data)
        if "step_time_s" in values:  # schema version 2 named it without its clock
            values["device_step_time_s"] = values.pop("step_time_s")
        values["events"] = tuple(Event(**e) for e in values["events"])
        for name in ("layout", "reduce_cost_s", "exposed_reduce_s", "exposed_reduce_wall_s",
                     "simulated_exposed_reduce_s"):
            values[name] = tuple(values[name])
        return cls(**values)


def median_exposed(steps: list[Timeline], stages: int) -> tuple[float, ...]:
    """Per stage, the median over ``steps`` (one timeline each) of Timeline.exposed_reduce."""
    per_step = [t.exposed_reduce() for t in steps]
    return tuple(statistics.median(step.get(s, 0.0) for step in per_step) if per_step else 0.0
                 for s in range(stages))
