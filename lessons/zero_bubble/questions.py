"""This lesson's questions: its predictions before Run and its checks at the end of the page.

Texts: ``q.<id>.*`` and ``check.<id>.*`` in this folder's en.json and zh.json; ids and keys are written
without the lesson's name, which its catalog entry puts in (pipelab.lessons.own_keys)."""

from __future__ import annotations

from pipelab.engine.schedules import chunks_for
from pipelab.engine.theory import formulas as theory
from pipelab.lessons.answer_kinds import CHOICE, COUNT, FRACTION
from pipelab.lessons.engine_answers import bubble_time_device0, simulated, timeline_of
from pipelab.lessons.knobs import Knobs
from pipelab.lessons.predictions import Prediction, at_most_microbatches, result_of
from pipelab.lessons.run_readers import measured_peak
from pipelab.lessons.self_checks import Check

from .claim import equal_cost_share, idle_ratio


def _zb_share_measured(compared: list, k: Knobs) -> float | None:
    """ZB-H1's idle time over 1F1B's as the comparison measured them: the very figure the verdict
    judges (claim.idle_ratio), so the card and the verdict say one number."""
    ours, other = result_of(compared, "zb-h1"), result_of(compared, "1f1b")
    return None if ours is None or other is None else idle_ratio(ours, other)


def _zb_share_simulated(k: Knobs) -> float:
    zb = bubble_time_device0(simulated("zb-h1", k.stages, k.microbatches))
    one = bubble_time_device0(simulated("1f1b", k.stages, k.microbatches))
    return zb / one


def at_device_0(latex: str) -> str:
    """A per-device peak formula at device 0, the device the card asks about: min(p - r, m) names
    a device r the page never defines, and at r = 0 it is min(p, m)."""
    return latex.replace("(p - r)", "p").replace("p - r", "p")


PREDICTIONS: tuple[Prediction, ...] = (
    Prediction(
        id="share", kind=FRACTION, tolerance=0.05,
        # The claim table's formula and the verdict's read this same figure (claim.equal_cost_share).
        answer_fn=lambda k: equal_cost_share(k.stages),
        simulated_fn=_zb_share_simulated,
        compared_fn=_zb_share_measured,
        formula_fn=lambda k: r"\frac{(p-1)(T_F+T_I-T_W)}{(p-1)(T_F+T_I+T_W)} = \frac{1}{3}"),
    Prediction(
        id="peak", kind=COUNT,
        answer_fn=lambda k: theory.peak_inflight(k.schedule, k.stages, k.microbatches, 0,
                                                 chunks_for(k.schedule, k.chunks)),
        simulated_fn=lambda k: timeline_of(k).peak_inflight()[0],
        formula_fn=lambda k: at_device_0(theory.schedule_theory(k.schedule).peak_inflight_latex),
        measured_fn=measured_peak(lambda k: 0),
        at_most_fn=at_most_microbatches,
        applies_fn=lambda k: k.schedule in ("zb-h1", "zb-h2", "zb-v", "1f1b")),
)
"""Asked before Run, in page order."""

CHECKS: tuple[Check, ...] = (
    Check(id="third", kind=FRACTION, tolerance=0.02, settings={"p": 4},
          answer_fn=lambda: equal_cost_share(4)),
    Check(id="defer", kind=CHOICE, settings={}, options=("w", "i", "f"),
          answer_fn=lambda: "w"),
    Check(id="h2_peak", kind=COUNT, settings={"p": 4, "m": 8},
          answer_fn=lambda: theory.peak_inflight("zb-h2", 4, 8, 0)),
)
"""Asked at the end of the page, in page order."""
