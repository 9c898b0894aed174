"""Every registered schedule at one setting, and the "which schedule?" ranking.

Plain data, no Streamlit: the recap page (app/screens/recap.py) shows these rows. All numbers come
from the engine: the closed forms of ``pipelab.engine.theory.formulas`` and the simulator playing each
schedule's own action lists. For comparing schedules the simulator gives each of a rank's
v chunks 1/v of a stage's unit costs, so every row trains the same model on p devices.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipelab.engine.actions import ScheduleError
from pipelab.engine.errors import Message, message_of
from pipelab.engine.schedules import chunks_for
from pipelab.engine.theory import formulas as theory
from pipelab.lessons.engine_answers import bubble_text, messages_per_step, simulated


@dataclass(frozen=True, kw_only=True)
class ScheduleRow:
    name: str
    chunks: int
    """v the row was built with (the student's v for interleaved, 2 for zb-v, else 1)."""
    synchronous: bool
    formula: str | None
    """The bubble fraction's closed form at T_F = T_I = T_W, plain text; None if it has none."""
    formula_value: float | None
    simulated_bubble: float | None
    peak_activations: float | None
    """Most micro-batches alive on any rank, in whole stages' worth (a chunk counts 1/v)."""
    weight_versions: int | None
    messages_per_step: int | None
    step_time: float | None
    """Simulated step in units of one stage's T_F (chunks cost 1/v each)."""
    error: Message | None = None
    """Why the schedule cannot be built at these settings (one line, a coded Message that a
    page says in its language), else None."""

    @property
    def buildable(self) -> bool:
        return self.error is None


def schedule_row(name: str, p: int, m: int, v: int = 2) -> ScheduleRow:
    """One schedule's numbers at p devices, m micro-batches, v chunks (where it takes them)."""
    from pipelab.engine.schedules import get_schedule_info
    info = get_schedule_info(name)
    chunks = chunks_for(name, v)
    try:
        timeline = simulated(name, p, m, chunks, chunk_share=True)
    except ScheduleError as err:
        return ScheduleRow(name=name, chunks=chunks, synchronous=info.synchronous,
                           formula=bubble_text(name), formula_value=None, simulated_bubble=None,
                           peak_activations=None, weight_versions=None, messages_per_step=None, step_time=None,
                           error=message_of(err))
    formula_value = theory.formula_bubble_fraction(name, p, m, chunks)
    return ScheduleRow(
        name=name, chunks=chunks, synchronous=info.synchronous,
        formula=bubble_text(name) if formula_value is not None else None,
        formula_value=formula_value,
        simulated_bubble=timeline.bubble_fraction(),
        peak_activations=max(timeline.peak_inflight()) / chunks,
        weight_versions=max(timeline.weight_versions()),
        messages_per_step=messages_per_step(name, p, m, chunks),
        step_time=timeline.step_time())


def schedule_rows(p: int, m: int, v: int = 2) -> list[ScheduleRow]:
    """Every registered schedule (pipelab.engine.schedules.REGISTRY), in registry order."""
    from pipelab.engine.schedules import REGISTRY
    return [schedule_row(name, p, m, v) for name in REGISTRY]


@dataclass(frozen=True, kw_only=True)
class Choice:
    row: ScheduleRow
    fits: bool
    """Its peak activations fit the memory budget."""


def rank_schedules(p: int, m: int, budget: float, v: int = 2, allow_async: bool = False) -> list[Choice]:
    """The schedules buildable at (p, m, v), fastest simulated step first among those whose
    peak activations fit ``budget`` (micro-batches of a whole stage per device), then the
    ones that do not fit, smallest peak first. Asynchronous schedules (stale weights) only
    when ``allow_async``. Ties go to the smaller peak, then to the fewer messages."""
    rows = [row for row in schedule_rows(p, m, v) if row.buildable and (allow_async or row.synchronous)]
    fit = [row for row in rows if row.peak_activations <= budget + 1e-9]
    over = [row for row in rows if row.peak_activations > budget + 1e-9]
    fit.sort(key=lambda r: (round(r.step_time, 9), r.peak_activations, r.messages_per_step))
    over.sort(key=lambda r: (r.peak_activations, r.step_time))
    return [Choice(row=r, fits=True) for r in fit] + [Choice(row=r, fits=False) for r in over]




# ---- the split: n workers as d pipelines of p stages (PP x DP) --------------------------------
@dataclass(frozen=True, kw_only=True)
class SplitRow:
    """One way to split n workers at one global batch, simulated on the same model."""
    stages: int
    """p: stages per pipeline."""
    replicas: int
    """d: pipelines side by side (n = p x d)."""
    microbatches: int
    """m per pipeline: the global batch / d."""
    model_share: float
    """The model each device holds: 1/p."""
    bubble: float
    """Idle share of the step, the all-reduce's exposed part included."""
    exposed_reduce: float
    """The part of the step's all-reduce no stage's cool-down hid, in the same units as step_time."""
    step_time: float
    """The simulated step in units of one forward of the whole model for one micro-batch."""


def split_row(name: str, stages: int, replicas: int, global_microbatches: int, reduce_cost: float) -> SplitRow:
    """``name`` on p = ``stages`` of one model: each stage costs 1/p of a whole-model forward
    (backward twice that), and its all-reduce over d replicas ``reduce_cost`` x 2(d-1)/d x 1/p,
    ``reduce_cost`` being the whole model's gradients over 2 devices in forwards of the whole
    model (a ring's 2(d-1)/d of the bytes: pipelab.engine.theory.formulas.ring_all_reduce_seconds)."""
    from pipelab.engine.schedules import build_schedule
    from pipelab.engine.schedules.data_parallel import with_gradient_reduce
    from pipelab.engine.theory.simulate import CostModel, simulate
    m = global_microbatches // replicas
    schedule = build_schedule(name, stages, m)
    share = 1.0 / stages
    t_r = theory.ring_all_reduce_seconds(reduce_cost * share, replicas, 1.0) if replicas > 1 else 0.0
    if replicas > 1:
        schedule = with_gradient_reduce(schedule)
    timeline = simulate(schedule, CostModel(forward=share, backward=2 * share, reduce=t_r))
    exposed = max(timeline.exposed_reduce().values(), default=0.0)
    return SplitRow(stages=stages, replicas=replicas, microbatches=m, model_share=share,
                    bubble=timeline.bubble_fraction(), exposed_reduce=exposed, step_time=timeline.step_time())


def split_rows(workers: int, global_microbatches: int, reduce_cost: float, name: str = "1f1b") -> list[SplitRow]:
    """Every (p, d) with p x d = ``workers`` whose replicas split the global batch evenly, fewest
    replicas first."""
    return [split_row(name, workers // d, d, global_microbatches, reduce_cost)
            for d in range(1, workers + 1) if workers % d == 0 and global_microbatches % d == 0]


def rank_splits(rows: list[SplitRow], model_budget: float) -> list[tuple[SplitRow, bool]]:
    """(row, fits): the splits whose model share per device fits ``model_budget`` (a share of the
    whole model), shortest simulated step first (ties: less model per device), then the others."""
    fit = sorted((r for r in rows if r.model_share <= model_budget + 1e-9),
                 key=lambda r: (round(r.step_time, 9), r.model_share))
    over = sorted((r for r in rows if r.model_share > model_budget + 1e-9), key=lambda r: r.model_share)
    return [(r, True) for r in fit] + [(r, False) for r in over]


__all__ = ["Choice", "ScheduleRow", "SplitRow", "rank_schedules", "rank_splits", "schedule_row",
           "schedule_rows", "split_row", "split_rows"]
