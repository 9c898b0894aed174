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


def chunks_for(name: str, v: int) -> int:
    """The v a schedule is built with: the student's for interleaved, the registry's only
    count for the others, e.g. 2 for zb-v (pipelab.engine.schedules.chunks_for)."""
    from pipelab.engine.schedules import chunks_for as registered_chunks_for
    return registered_chunks_for(name, v)


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


__all__ = ["Choice", "ScheduleRow", "chunks_for", "rank_schedules", "schedule_row", "schedule_rows"]
