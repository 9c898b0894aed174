"""The engine's answers at given settings: the simulator on unit costs, counts from a schedule, formulas.

Plain data, no Streamlit and no torch. Every numeric answer of a question is computed, never
typed in: the formula side from ``pipelab.engine.theory.formulas`` (or a closed form cited
here), the simulator side by playing the schedule built from the student's own ``Knobs`` on
``UNIT_COSTS``.
"""

from __future__ import annotations

import functools

from pipelab.engine.schedules import chunks_for
from pipelab.engine.theory import formulas as theory
from pipelab.lessons.knobs import Knobs


@functools.lru_cache(maxsize=256)
def _schedule(name: str, p: int, m: int, v: int | None):
    from pipelab.engine.schedules import build_schedule
    return build_schedule(name, p, m, v)


@functools.lru_cache(maxsize=256)
def simulated(name: str, p: int, m: int, v: int | None = None, chunk_share: bool = False):
    """The unit-cost timeline (T_F = T_I = T_W = 1, the papers' figures) of a registered schedule,
    cached and shared: callers must not change it.

    ``chunk_share``: each of a rank's v chunks costs 1/v, so every schedule runs the same model
    (for comparing step times across schedules); the default gives each chunk unit costs, as
    the lesson pages' theory preview does. Bubble fractions are the same either way."""
    from pipelab.engine.theory.simulate import UNIT_COSTS, CostModel, simulate
    schedule = _schedule(name, p, m, v)
    cost = UNIT_COSTS
    if chunk_share and schedule.chunks > 1:
        share = 1.0 / schedule.chunks
        cost = CostModel(forward=share, backward_input=share, backward_weight=share)
    return simulate(schedule, cost)


@functools.lru_cache(maxsize=64)
def simulated_stream(name: str, p: int, m: int, v: int | None, steps: int):
    """The unit-cost timeline of a run's ``steps`` steps as one stream, as a run whose steps
    overlap plays them (PipeDream and 2BW always; engine/schedules/stream.py), cached and shared.
    What builds up across steps shows here and not in one step: PipeDream's stash of weight
    versions fills only from 2(p - 1) micro-batches in all (p = 6, m = 8: 4 versions in one
    step, the run's 6 over its steps)."""
    from pipelab.engine.schedules.stream import make_stream
    from pipelab.engine.theory.simulate import UNIT_COSTS, simulate
    return simulate(make_stream(_schedule(name, p, m, v), steps).program, UNIT_COSTS)


def timeline_of(knobs: Knobs, schedule: str | None = None):
    """The unit-cost simulation of ``schedule`` (default: the knobs' own) at the knobs' p, m, v,
    with the knobs' replicated stages where they give valid ones."""
    name = schedule or knobs.schedule
    replicas = replicas_of(knobs)
    if replicas:
        return simulated_replicated(name, knobs.stages, knobs.microbatches, replicas)
    return simulated(name, knobs.stages, knobs.microbatches, chunks_for(name, knobs.chunks))


def replicas_of(knobs: Knobs) -> tuple[int, ...] | None:
    """The knobs' replicated stages (Knobs.replicas as typed) where they are valid, else None."""
    from pipelab.engine.config import settings_error
    if not knobs.replicas.strip() or settings_error(knobs.to_run_config()) is not None:
        return None
    replicas = knobs.to_run_config().replicas
    return replicas if replicas and any(r > 1 for r in replicas) else None


@functools.lru_cache(maxsize=64)
def simulated_replicated(name: str, p: int, m: int, replicas: tuple[int, ...]):
    """The unit-cost timeline of ``name`` with PipeDream's replicated stages
    (engine/schedules/replication.py), cached and shared."""
    from pipelab.engine.config import replicated_schedule
    from pipelab.engine.theory.simulate import UNIT_COSTS, simulate
    return simulate(replicated_schedule(_schedule(name, p, m, None), replicas), UNIT_COSTS)


def messages_per_step(name: str, p: int, m: int, v: int | None = None) -> int:
    """Point-to-point messages of one step of schedule ``name`` (Schedule.messages_per_step)."""
    return _schedule(name, p, m, v).messages_per_step


def boundary_messages_per_microbatch(p: int, v: int = 1) -> int:
    """2(vp - 1): each of the vp - 1 chunk boundaries carries an activation forward and its
    gradient back (arXiv 2104.04473, section 2.2: about v times 1F1B's messages)."""
    return 2 * (v * p - 1)


PIPELINE_KINDS = ("F", "B", "I", "W")
"""The pipeline's own work: forward and backward. A synchronous step's optimizer update (U)
comes after a device's last backward, where it overlaps its neighbours' backwards: counting it
made one run of the naive schedule show 2 devices busy at once, where the lesson (and the
simulator, which plays no update) count 1."""


def most_devices_busy(timeline) -> int:
    """Most devices computing forward or backward work at the same moment anywhere in the
    timeline (the optimizer update left out: PIPELINE_KINDS)."""
    events = [e for e in timeline.compute_events() if e.kind in PIPELINE_KINDS]
    edges = sorted([(e.start, 1) for e in events] + [(e.end, -1) for e in events], key=lambda x: (x[0], x[1]))
    busy = best = 0
    for _, delta in edges:
        busy += delta
        best = max(best, busy)
    return best


def bubble_time_device0(timeline) -> float:
    """Device 0's idle time between its own first and last action: the zero-bubble paper's count."""
    return timeline.idle_within_own_span()[0]


def bubble_latex(name: str) -> str | None:
    """The schedule's bubble fraction at T_F = T_I = T_W in LaTeX, as it registered it
    (ScheduleTheory.bubble_latex), or None without a closed form or with one that only
    bounds it (a question's answer must be the bubble itself)."""
    forms = theory.schedule_theory(name)
    return None if forms.bubble_is_bound else forms.bubble_latex


def bubble_text(name: str) -> str | None:
    """The same as plain text for tables (ScheduleTheory.bubble_text)."""
    return theory.schedule_theory(name).bubble_text


def formula_bubble(knobs: Knobs, schedule: str | None = None) -> float:
    name = schedule or knobs.schedule
    return theory.formula_bubble_fraction(name, knobs.stages, knobs.microbatches, chunks_for(name, knobs.chunks))


def peak_rank(knobs: Knobs) -> int:
    """The rank 1F1B's question asks about: rank 2 when there is one, else the last."""
    return min(2, knobs.stages - 1)


__all__ = ["PIPELINE_KINDS", "boundary_messages_per_microbatch", "bubble_latex", "bubble_text", "bubble_time_device0",
           "formula_bubble", "messages_per_step", "most_devices_busy", "peak_rank", "replicas_of", "simulated",
           "simulated_stream", "timeline_of"]
