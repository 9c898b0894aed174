"""Lesson: Playground: write your own schedule.

The lesson's catalog entry; beside it its texts (en.md, zh.md, extra/, en.json, zh.json), its
questions (questions.py) and its claim check (claim.py)."""

from __future__ import annotations

from pipelab.lessons.knobs import KNOB_NAMES, SCHEDULES, Knobs
from pipelab.lessons.lesson import Lesson

from . import claim, questions

_EXAMPLE = """\
rank 0: 0F0 0F1 0B0 0B1
rank 1: 1F0 1B0 1F1 1B1
"""

LESSON = Lesson(
    slug="playground", number=8, title="Playground: write your own schedule",
    claim="Any schedule that passes validation runs on real processes, and the simulator "
          "predicts its timeline from the same action lists.",
    defaults=Knobs(),
    schedules=SCHEDULES,
    editable=KNOB_NAMES,
    example_schedule=_EXAMPLE,
    claim_check=claim.check,
    predictions=questions.PREDICTIONS,
    checks=questions.CHECKS,
    screen="playground",
)
