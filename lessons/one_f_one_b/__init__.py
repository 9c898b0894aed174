"""Lesson: 1F1B (PipeDream-Flush): same bubble, less memory.

The lesson's catalog entry; beside it its texts (en.md, zh.md, extra/, en.json, zh.json), its
questions (questions.py) and its claim check (claim.py)."""

from __future__ import annotations

from pipelab.lessons.headline_row import HeadlineRow
from pipelab.lessons.knobs import Knobs
from pipelab.lessons.lesson import Comparison, Lesson
from pipelab.lessons.verdict import SWEEP

from . import claim, questions

LESSON = Lesson(
    slug="1f1b", number=4, title="1F1B (PipeDream-Flush): same bubble, less memory",
    claim="1F1B has GPipe's bubble, but device r holds at most p-r micro-batches of activations "
          "instead of m, so its peak memory stays flat as m grows.",
    defaults=Knobs(schedule="1f1b"),
    schedules=("1f1b", "gpipe"),
    comparisons=(Comparison(label="GPipe", overrides={"schedule": "gpipe"}),),
    sweep={"knob": "microbatches", "values": [4, 8, 16]},
    editable=("stages", "microbatches", "microbatch_size", "model", "layers", "hidden"),
    claim_check=claim.check,
    headline=claim.headline,
    headline_row=HeadlineRow(SWEEP, "peak activations, worst device, m",
                             "largest / smallest over m >= p at most 1.1x"),
    predictions=questions.PREDICTIONS,
    checks=questions.CHECKS,
)
