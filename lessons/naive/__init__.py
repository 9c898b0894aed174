"""Lesson: Naive model parallelism.

The lesson's catalog entry; beside it its texts (en.md, zh.md, extra/, en.json, zh.json), its
questions (questions.py) and its claim check (claim.py)."""

from __future__ import annotations

from pipelab.lessons.headline_row import HeadlineRow
from pipelab.lessons.knobs import Knobs
from pipelab.lessons.lesson import Comparison, Lesson
from pipelab.lessons.verdict import BUBBLE_TOLERANCE, RUN

from . import claim, questions

LESSON = Lesson(
    slug="naive", number=1, title="Naive model parallelism",
    # "Computes forward or backward work": the optimizer update after the last backward
    # overlaps the next device's backward, and the lesson's question counts F and B only.
    claim="With one batch passing through p stages, only one device computes forward or backward work "
          "at a time, so each device is busy about 1/p of the step.",
    # The same 8 micro-batches in both runs, one at a time (naive) or pipelined (GPipe):
    # the same actions in another order, so the step times differ by the schedule alone.
    # (One 512-row piece against 8 pieces would also measure how a CPU's matmuls slow
    # down on fewer rows.)
    defaults=Knobs(schedule="naive"),
    schedules=("naive", "gpipe"),
    # The comparison judges the busy share of the step, GPipe ÷ naive (claim.py). Naive's
    # share hardly moves from step to step (sd 0.0002 here); GPipe's does (0.009, with
    # several ranks on each core), so GPipe's run measures eight steps after the warm-up,
    # not three: at 0.1 s a step they cost about 0.6 s more per round.
    comparisons=(Comparison(label="GPipe, the same 8 micro-batches pipelined",
                            overrides={"schedule": "gpipe", "steps": 10}),),
    editable=("stages", "microbatches", "microbatch_size", "model", "layers", "hidden"),
    claim_check=claim.check,
    headline=claim.headline,
    headline_row=HeadlineRow(RUN, "busy share, device",
                             f"within {BUBBLE_TOLERANCE} of 1/p on every device"),
    predictions=questions.PREDICTIONS,
    checks=questions.CHECKS,
)
