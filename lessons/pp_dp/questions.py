"""This lesson's questions: its predictions before Run and its checks at the end of the page.

Texts: ``q.<id>.*`` and ``check.<id>.*`` in this folder's en.json and zh.json; ids and keys are written
without the lesson's name, which its catalog entry puts in (pipelab.lessons.own_keys)."""

from __future__ import annotations

from pipelab.engine.schedules import build_schedule
from pipelab.engine.schedules.data_parallel import with_gradient_reduce
from pipelab.engine.theory import formulas as theory
from pipelab.engine.theory.simulate import CostModel, simulate
from pipelab.lessons.answer_kinds import CHOICE, FRACTION, NUMBER
from pipelab.lessons.engine_answers import simulated
from pipelab.lessons.knobs import Knobs
from pipelab.lessons.predictions import Prediction
from pipelab.lessons.self_checks import Check

from .claim import exposed_shares, layout_of

WORKERS = 4
"""The page splits 4 workers: one pipeline of 4, 2 of 2, or 4 replicas."""


def global_microbatches(k: Knobs) -> int:
    """The global batch in micro-batches: the lesson's own run is one pipeline of all of it."""
    return k.microbatches * k.data_parallel


def _bubble_formula(k: Knobs) -> float:
    return theory.fixed_global_batch_bubble_fraction(2, global_microbatches(k), 2)


def _bubble_simulated(k: Knobs) -> float:
    return simulated("1f1b", 2, global_microbatches(k) // 2).bubble_fraction()


def _bubble_measured(compared: list, k: Knobs) -> float | None:
    two = layout_of(compared, "backward")
    return None if two is None else two.metrics.device_bubble_fraction


def _which_stage(exposed: dict[int, float], t_r: float) -> str:
    """The option naming which stages' all-reduce shows: over a tenth of it counts."""
    shows = [s for s, e in sorted(exposed.items()) if e > 0.1 * t_r]
    return {(0,): "first", (1,): "last", (0, 1): "both"}.get(tuple(shows), "neither")


def _exposed_simulated(k: Knobs) -> str:
    """At unit costs (T_F = 1, T_B = 2) with an all-reduce of T_R = 1 per stage."""
    schedule = with_gradient_reduce(build_schedule("1f1b", 2, global_microbatches(k) // 2))
    return _which_stage(simulate(schedule, CostModel(forward=1.0, backward=2.0, reduce=1.0)).exposed_reduce(), 1.0)


def _exposed_measured(compared: list, k: Knobs) -> str | None:
    two = layout_of(compared, "backward")
    if two is None:
        return None
    measured, _, _ = exposed_shares(two)
    shares = dict(enumerate(measured))
    cost = max(two.data_parallel.reduce_cost_s) / two.data_parallel.device_step_time_s
    return _which_stage(shares, cost)


PREDICTIONS: tuple[Prediction, ...] = (
    Prediction(
        id="bubble", kind=FRACTION, tolerance=0.02,
        answer_fn=_bubble_formula,
        simulated_fn=_bubble_simulated,
        formula_fn=lambda k: r"\frac{p-1}{m+p-1},\quad m = \frac{B}{d}",
        compared_fn=_bubble_measured,
        applies_fn=lambda k: global_microbatches(k) % WORKERS == 0),
    Prediction(
        id="exposed", kind=CHOICE, options=("first", "last", "both", "neither"),
        answer_fn=lambda k: "first",
        simulated_fn=_exposed_simulated,
        formula_fn=lambda k: r"\max(0,\ t_R - s\,t_B)",
        compared_fn=_exposed_measured),
)
"""Asked before Run, in page order."""

CHECKS: tuple[Check, ...] = (
    Check(id="bubble", kind=FRACTION, tolerance=0.01, settings={"n": 8, "p": 4, "d": 2, "B": 16},
          answer_fn=lambda: theory.fixed_global_batch_bubble_fraction(4, 16, 2)),
    Check(id="ring", kind=NUMBER, tolerance=0.01, settings={"d": 4},
          answer_fn=lambda: theory.ring_all_reduce_seconds(1.0, 4, 1.0)),
    Check(id="flush", kind=CHOICE, settings={}, options=("first_finishes_last", "reduce_faster", "no_idle"),
          answer_fn=lambda: "first_finishes_last"),
)
"""Asked at the end of the page, in page order."""
