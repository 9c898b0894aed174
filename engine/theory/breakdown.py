"""Why a run's bubble is not its formula's: the simulator adds one measured effect at a time.

The closed forms (engine/theory/formulas.py) assume what the papers assume: every stage costs the
same, a message arrives the moment it is sent, and nothing runs between two actions. A real
run has none of these. The first row plays the schedule in the formulas' setting, every
stage at this run's mean costs (next to the formula, it shows where a closed form is only
approximate); each row after it adds one thing the run measured and plays it again:

1. each stage's own mean costs: unequal stages, and F, I and W in their measured ratio. The
   slowest stage sets the pace (GPipe, arXiv 1811.06965, section 2.2), and zero bubble's
   schedules fill their bubbles only as well as T_F, T_I and T_W match (arXiv 2401.10241,
   section 3);
2. the message latency, measured once per run (Executor's ping-pong link cost);
3. the engine's own time after each action: posting sends, keeping books and taking a message
   that is in already (Event.host_after);
4. each action's own mean cost: where an action sits in the step changes its cost (a stage's
   first forward of a step runs with cold caches);
5. each step's own costs: every measured step played with the durations it had. Costs that
   vary from step to step lengthen a step more than their mean does (an action waits for the
   slower of its inputs, so a mean of maxima exceeds the maximum of the means), and a
   shared host varies them most.

Only costs go in, never measured start times. The device clock runs this very model on the
ranks themselves (engine/runtime/executor.py: each action lasts its own time, a message carries its
sender's clock), so the last row lands on the device clock exactly, unless a rank waited
for something its schedule does not make it wait for; tests/test_engine_run.py holds that
action by action.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

from pipelab.engine.actions import BACKWARD, BACKWARD_INPUT, BACKWARD_WEIGHT, FORWARD, UPDATE
from pipelab.engine.results.metrics import RunMetrics
from pipelab.engine.results.timeline import Timeline
from pipelab.engine.schedules.base import Schedule
from pipelab.engine.theory.simulate import CostModel, simulate, simulate_run

ActionKey = tuple[str, int, int]  # (kind, stage, micro-batch), as CostModel.per_action
PER_STEP_LABEL = "+ each step's own costs (steps vary)"


@dataclass(frozen=True)
class BreakdownRow:
    label: str
    """What this row adds to the one above it."""
    timelines: tuple[Timeline, ...]
    """The schedule simulated with everything up to this row: one step, or each measured step;
    for overlapping steps, the whole run's stream once."""
    steady_steps: tuple[int, ...] | None = None
    """Overlapping steps: the steps the bubble is measured over (pipelab.engine.results.timeline.steady_steps)."""

    @property
    def bubble(self) -> float:
        """Per device the median bubble over the timelines, then the mean over devices: what
        pipelab.engine.results.result does with the measured steps, so the rows compare with the clocks.
        Overlapping steps: per device the median over its steady step windows."""
        if self.steady_steps is not None:
            (timeline,) = self.timelines
            return statistics.fmean(timeline.steady_bubble_fractions(list(self.steady_steps)))
        return statistics.fmean(statistics.median(per_step)
                                for per_step in zip(*(t.bubble_fractions() for t in self.timelines)))


@dataclass(frozen=True)
class Breakdown:
    """The rows in their fixed order, each named by what it adds."""
    mean_costs: BreakdownRow
    """Every stage at the run's mean costs: the formulas' setting."""
    stage_costs: BreakdownRow
    latency: BreakdownRow
    host_time: BreakdownRow
    """Everything the run's per-stage means say: the run's simulated timeline (RunResult.simulated)."""
    action_costs: BreakdownRow
    """Each action's own mean cost."""
    step_costs: BreakdownRow | None = None
    """Each measured step with its own costs; None without them."""
    reduce: BreakdownRow | None = None
    """With data parallelism, after the latency: each stage's all-reduce (R) at its measured
    cost, the part the pipeline's idle time does not hide; None without R actions."""

    @property
    def rows(self) -> tuple[BreakdownRow, ...]:
        rows = (self.mean_costs, self.stage_costs, self.latency)
        rows += (self.reduce,) if self.reduce is not None else ()
        rows += (self.host_time, self.action_costs)
        return rows if self.step_costs is None else (*rows, self.step_costs)


@dataclass(frozen=True)
class Overlapped:
    """How an overlapped run is played: its steps, and the steps its bubble counts."""
    steps: int
    steady: tuple[int, ...]


def equal_stage_costs(schedule: Schedule, cost: CostModel) -> CostModel:
    """Every stage at the mean over stages of ``cost``'s per-stage costs; no latency, no host time."""
    stages = range(schedule.num_stages)

    def mean(kind: str) -> float:
        return statistics.fmean(cost.of(kind, s) for s in stages)

    return CostModel(forward=mean(FORWARD), backward=mean(BACKWARD), backward_input=mean(BACKWARD_INPUT),
                     backward_weight=mean(BACKWARD_WEIGHT), update=mean(UPDATE))


def bubble_breakdown(schedule: Schedule, cost: CostModel, per_action: Mapping[ActionKey, float],
                     per_action_host: Mapping[ActionKey, float],
                     per_step: Sequence[tuple[Mapping[ActionKey, float], Mapping[ActionKey, float]]] = (),
                     overlapped: Overlapped | None = None,
                     per_step_stream: tuple[Mapping, Mapping] | None = None) -> Breakdown:
    """Rows of the simulated bubble as the measured effects come in, one at a time.

    ``cost``: the run's per-stage mean costs, link cost and host time per stage
    (pipelab.engine.results.result.measured_costs); ``per_action`` and ``per_action_host``: each action's own
    mean cost and host time after it (pipelab.engine.results.result.mean_action_costs / mean_action_host);
    ``per_step``: the same two for each measured step alone (no row without them).
    The order is fixed (effects do not simply add up, so each row's change is what that
    effect adds on top of the rows above it). Rows host_time and action_costs are the run's
    own simulations, ``cost`` as it is and ``cost`` with each action's own mean cost
    (pipelab.engine.results.result).

    ``overlapped``: the run's steps overlap, so each row plays the whole run as one stream
    (engine/schedules/stream.py) and counts its steady steps; the last row then plays it once with
    ``per_step_stream``: every action's cost and host time keyed (kind, stage, micro-batch,
    step), for all the run's steps."""
    stage_costs = replace(cost, link=0.0, host_after=0.0, reduce=0.0, per_action=None, per_action_host_after=None)
    with_host = replace(stage_costs, link=cost.link, host_after=cost.host_after, reduce=cost.reduce)

    def each_action(costs, hosts) -> CostModel:
        return replace(with_host, per_action=dict(costs), per_action_host_after=dict(hosts))

    models = [
        ("simulator: every stage at the run's mean costs", equal_stage_costs(schedule, cost)),
        ("+ each stage's own costs", stage_costs),
        ("+ message latency", replace(stage_costs, link=cost.link)),
        ("+ the engine's own time between actions", with_host),
        ("+ each action's own mean cost (its place in the step)", each_action(per_action, per_action_host)),
    ]
    reduce_row = schedule.reduces_gradients  # Breakdown.reduce: after the latency
    if reduce_row:
        models.insert(3, (REDUCE_LABEL, replace(stage_costs, link=cost.link, reduce=cost.reduce)))

    def breakdown(rows: list[BreakdownRow], last: BreakdownRow | None) -> Breakdown:
        reduce = rows.pop(3) if reduce_row else None
        return Breakdown(*rows, last, reduce)

    if overlapped is not None:
        def row(label, model):
            return BreakdownRow(label, (simulate_run(schedule, model, overlapped.steps, overlap=True),),
                                overlapped.steady)
        last = None
        if per_step_stream is not None:
            costs, hosts = per_step_stream
            last = row(PER_STEP_LABEL, replace(each_action(per_action, per_action_host), per_step_action=dict(costs),
                                               per_step_action_host_after=dict(hosts)))
        return breakdown([row(label, model) for label, model in models], last)
    last = None
    if per_step:
        steps = tuple(simulate(schedule, each_action(costs, hosts)) for costs, hosts in per_step)
        last = BreakdownRow(PER_STEP_LABEL, steps)
    return breakdown([BreakdownRow(label, (simulate(schedule, model),)) for label, model in models], last)


REDUCE_LABEL = "+ the data-parallel all-reduce"


class TableRow(NamedTuple):
    label: str
    value: float
    change: float | None
    """From the row above; None on the first row."""
    kind: str
    """What the value is: "formula", "simulated", "device" or "wall" (the clocks)."""


def breakdown_table(metrics: RunMetrics) -> list[TableRow]:
    """The bubble from the formula through the simulated rows to the two measured clocks, each
    with its change from the row above, for a run's metrics (pipelab.engine.results.result): what the app's
    chart and the CLI show. A schedule without a closed form starts at the simulated rows."""
    rows = ([("formula: every stage at the run's mean costs", metrics.formula_bubble_fraction, "formula")]
            + [(row.label, row.bubble, "simulated") for row in metrics.bubble_breakdown or ()]
            + [("measured, device clock", metrics.device_bubble_fraction, "device"),
               ("measured, wall clock (cores shared)", metrics.wall_bubble_fraction, "wall")])
    table, previous = [], None
    for label, value, kind in rows:
        if value is None:
            continue
        table.append(TableRow(label, value, None if previous is None else value - previous, kind))
        previous = value
    return table
