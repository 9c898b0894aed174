"""This lesson's questions: its predictions before Run and its checks at the end of the page.

Texts: ``q.<id>.*`` and ``check.<id>.*`` in this folder's en.json and zh.json; ids and keys are written
without the lesson's name, which its catalog entry puts in (pipelab.lessons.own_keys)."""

from __future__ import annotations

from pipelab.lessons.answer_kinds import CHOICE
from pipelab.lessons.predictions import Prediction, bubble_question
from pipelab.lessons.self_checks import Check


def _validation_outcome(text: str) -> str:
    """"valid", "order" (a backward before its forward) or "deadlock", as pipelab.engine.theory.validate says."""
    from pipelab.engine.theory.validate import InvalidSchedule, parse_schedule, validate
    try:
        validate(parse_schedule(text))
    except InvalidSchedule as err:
        return "deadlock" if "deadlock" in err.rule else "order"
    return "valid"


SWAPPED = "0B0 0F0 0F1 0B1\n1F0 1B0 1F1 1B1"
"""Lesson 7's example with 0F0 and 0B0 swapped on rank 0."""


CROSSED = "0F0 0B0 0F1 0B1\n1F0 1F1 1B0 1B1"
"""Lesson 7's deadlock: each rank waits for the other."""


PREDICTIONS: tuple[Prediction, ...] = (
    bubble_question("bubble"),
)
"""Asked before Run, in page order."""

CHECKS: tuple[Check, ...] = (
    Check(id="swapped", kind=CHOICE, settings={"text": SWAPPED},
          options=("valid", "order", "deadlock"), answer_fn=lambda: _validation_outcome(SWAPPED)),
    Check(id="crossed", kind=CHOICE, settings={"text": CROSSED},
          options=("valid", "order", "deadlock"), answer_fn=lambda: _validation_outcome(CROSSED)),
)
"""Asked at the end of the page, in page order."""
