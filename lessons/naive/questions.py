"""This lesson's questions: its predictions before Run and its checks at the end of the page.

Texts: ``q.<id>.*`` and ``check.<id>.*`` in this folder's en.json and zh.json; ids and keys are written
without the lesson's name, which its catalog entry puts in (pipelab.lessons.own_keys)."""

from __future__ import annotations

from pipelab.engine.theory import formulas as theory
from pipelab.lessons.answer_kinds import CHOICE, COUNT, FRACTION
from pipelab.lessons.engine_answers import (
                                            most_devices_busy,
                                            timeline_of,
)
from pipelab.lessons.predictions import Prediction, at_most_devices, bubble_question
from pipelab.lessons.run_readers import measured_most_busy
from pipelab.lessons.self_checks import Check

PREDICTIONS: tuple[Prediction, ...] = (
    bubble_question("bubble"),
    Prediction(
        id="busy", kind=COUNT,
        answer_fn=lambda k: 1 if k.schedule == "naive" else min(k.stages, k.microbatches),
        simulated_fn=lambda k: most_devices_busy(timeline_of(k)),
        formula_fn=lambda k: "1" if k.schedule == "naive" else r"\min(p, m)",
        measured_fn=lambda result, k: measured_most_busy(result),
        at_most_fn=at_most_devices,
        applies_fn=lambda k: k.schedule in ("naive", "gpipe")),
)
"""Asked before Run, in page order."""

CHECKS: tuple[Check, ...] = (
    Check(id="idle", kind=FRACTION, tolerance=0.01, settings={"p": 8},
          answer_fn=lambda: theory.naive_bubble_fraction(8)),
    Check(id="buys", kind=CHOICE, settings={}, options=("memory", "speed", "both"),
          answer_fn=lambda: "memory"),
)
"""Asked at the end of the page, in page order."""
