"""This lesson's questions: its predictions before Run and its checks at the end of the page.

Texts: ``q.<id>.*`` and ``check.<id>.*`` in this folder's en.json and zh.json; ids and keys are written
without the lesson's name, which its catalog entry puts in (pipelab.lessons.own_keys)."""

from __future__ import annotations

from pipelab.engine.theory import formulas as theory
from pipelab.lessons.answer_kinds import CHOICE, COUNT
from pipelab.lessons.engine_answers import peak_rank, timeline_of
from pipelab.lessons.knobs import Knobs
from pipelab.lessons.predictions import Prediction, at_most_microbatches, result_of
from pipelab.lessons.run_readers import measured_peak
from pipelab.lessons.self_checks import Check
from pipelab.lessons.verdict import BUBBLE_TOLERANCE


def _same_as(schedule: str, other: str, p: int, m: int, v: int | None) -> str:
    """"smaller", "same" or "larger": ``schedule``'s formula bubble against ``other``'s."""
    mine = theory.formula_bubble_fraction(schedule, p, m, v or 1)
    theirs = theory.formula_bubble_fraction(other, p, m, 1)
    return "same" if abs(mine - theirs) < 1e-9 else ("smaller" if mine < theirs else "larger")


def _measured_vs(compared: list, knobs: Knobs) -> str | None:
    """"smaller", "same" or "larger": 1F1B's bubble on the device clock against GPipe's in a
    comparison, "same" within BUBBLE_TOLERANCE, as the comparison's verdict judges them."""
    ours, theirs = result_of(compared, "1f1b"), result_of(compared, "gpipe")
    if ours is None or theirs is None:
        return None
    gap = ours.metrics.device_bubble_fraction - theirs.metrics.device_bubble_fraction
    return "same" if abs(gap) <= BUBBLE_TOLERANCE else ("smaller" if gap < 0 else "larger")


def _simulated_vs(knobs: Knobs, other: str) -> str:
    mine, theirs = timeline_of(knobs).bubble_fraction(), timeline_of(knobs, other).bubble_fraction()
    return "same" if abs(mine - theirs) < 1e-9 else ("smaller" if mine < theirs else "larger")


PREDICTIONS: tuple[Prediction, ...] = (
    Prediction(
        id="peak", kind=COUNT,
        answer_fn=lambda k: theory.peak_inflight(k.schedule, k.stages, k.microbatches, peak_rank(k)),
        simulated_fn=lambda k: timeline_of(k).peak_inflight()[peak_rank(k)],
        formula_fn=lambda k: theory.schedule_theory(k.schedule).peak_inflight_latex,
        measured_fn=measured_peak(peak_rank),
        at_most_fn=at_most_microbatches,
        applies_fn=lambda k: k.schedule in ("1f1b", "gpipe")),
    Prediction(
        id="same_bubble", kind=CHOICE, options=("smaller", "same", "larger"),
        answer_fn=lambda k: _same_as("1f1b", "gpipe", k.stages, k.microbatches, None),
        simulated_fn=lambda k: _simulated_vs(k.with_overrides({"schedule": "1f1b"}), "gpipe"),
        compared_fn=_measured_vs,
        formula_fn=lambda k: (r"\frac{p-1}{m+p-1}\ \text{(1F1B)} \quad\text{vs.}\quad "
                              r"\frac{p-1}{m+p-1}\ \text{(GPipe)}")),
)
"""Asked before Run, in page order."""

CHECKS: tuple[Check, ...] = (
    Check(id="rank0", kind=COUNT, settings={"p": 8, "m": 32},
          answer_fn=lambda: theory.peak_inflight("1f1b", 8, 32, 0)),
    Check(id="gpipe", kind=COUNT, settings={"p": 8, "m": 32},
          answer_fn=lambda: theory.peak_inflight("gpipe", 8, 32, 0)),
    Check(id="warmup", kind=CHOICE, settings={}, options=("p_r_1", "p", "m"),
          answer_fn=lambda: "p_r_1"),
)
"""Asked at the end of the page, in page order."""
