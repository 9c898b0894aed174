"""Lesson: GPipe: micro-batches and a flush.

The lesson's catalog entry; beside it its texts (en.md, zh.md, extra/, en.json, zh.json), its
questions (questions.py) and its claim check (claim.py)."""

from __future__ import annotations

from pipelab.lessons.headline_row import HeadlineRow
from pipelab.lessons.knobs import Knobs
from pipelab.lessons.lesson import Comparison, Lesson
from pipelab.lessons.verdict import BUBBLE_TOLERANCE, SWEEP

from . import claim, questions

LESSON = Lesson(
    slug="gpipe", number=2, title="GPipe: micro-batches and a flush",
    claim="GPipe's bubble fraction is (p-1)/(m+p-1), so it shrinks as micro-batches m grow "
          "past the number of stages p.",
    # Two stages: on a host of two cores or more each rank has a core, so the stages'
    # costs are not bent by sharing one (on fewer cores than ranks that alone lifts the
    # bubble past the formula's).
    defaults=Knobs(schedule="gpipe", stages=2),
    schedules=("gpipe", "naive"),
    comparisons=(Comparison(label="GPipe with re-materialization", overrides={"recompute": True}),),
    sweep={"knob": "microbatches", "values": [4, 8, 16]},
    editable=("stages", "microbatches", "model", "layers", "hidden", "recompute"),
    claim_check=claim.check,
    headline=claim.headline,
    headline_row=HeadlineRow(SWEEP, "bubble fraction at m",
                             f"each within {BUBBLE_TOLERANCE} of (p-1)/(m+p-1); falls as m grows"),
    predictions=questions.PREDICTIONS,
    checks=questions.CHECKS,
)
