"""This lesson's questions: its predictions before Run and its checks at the end of the page.

Texts: ``q.<id>.*`` and ``check.<id>.*`` in this folder's en.json and zh.json; ids and keys are written
without the lesson's name, which its catalog entry puts in (pipelab.lessons.own_keys)."""

from __future__ import annotations

from pipelab.engine.theory import formulas as theory
from pipelab.lessons.answer_kinds import CHOICE, COUNT, FRACTION
from pipelab.lessons.engine_answers import (
                                            timeline_of,
)
from pipelab.lessons.predictions import Prediction, at_most_microbatches, bubble_question
from pipelab.lessons.run_readers import measured_peak
from pipelab.lessons.self_checks import Check

PREDICTIONS: tuple[Prediction, ...] = (
    bubble_question("bubble"),
    Prediction(
        id="peak", kind=COUNT,
        answer_fn=lambda k: theory.peak_inflight(k.schedule, k.stages, k.microbatches, 0),
        simulated_fn=lambda k: timeline_of(k).peak_inflight()[0],
        formula_fn=lambda k: "m" if k.schedule == "gpipe" else "1",
        measured_fn=measured_peak(lambda k: 0),
        at_most_fn=at_most_microbatches,
        applies_fn=lambda k: k.schedule in ("gpipe", "naive")),
)
"""Asked before Run, in page order."""

CHECKS: tuple[Check, ...] = (
    Check(id="bubble", kind=FRACTION, tolerance=0.01, settings={"p": 4, "m": 16},
          answer_fn=lambda: theory.gpipe_bubble_fraction(4, 16)),
    Check(id="four_k", kind=FRACTION, tolerance=0.01, settings={"p": 8, "m": 32},
          answer_fn=lambda: theory.gpipe_bubble_fraction(8, 32)),
    Check(id="remat", kind=CHOICE, settings={}, options=("memory_for_time", "bubble", "messages"),
          answer_fn=lambda: "memory_for_time"),
)
"""Asked at the end of the page, in page order."""
