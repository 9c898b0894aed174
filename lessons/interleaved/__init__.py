"""Lesson: Interleaved 1F1B (Megatron-LM).

The lesson's catalog entry; beside it its texts (en.md, zh.md, extra/, en.json, zh.json), its
questions (questions.py) and its claim check (claim.py)."""

from __future__ import annotations

from pipelab.lessons.headline_row import HeadlineRow
from pipelab.lessons.knobs import Knobs
from pipelab.lessons.lesson import Comparison, Lesson
from pipelab.lessons.verdict import COMPARISON, RATIO_TOLERANCE

from . import claim, questions

LESSON = Lesson(
    slug="interleaved", number=5, title="Interleaved 1F1B (Megatron-LM)",
    # One quantity per half, the one the page measures: the bubble as a share of the step (the
    # ratio question's note gives Megatron's form over the ideal time, (p-1)/(vm), exactly 1/v),
    # and the messages as the Compare table's ratio, (vp-1)/(p-1), which is "about v" only for large p.
    claim="With v chunks per device the bubble's share of the step falls from (p-1)/(m+p-1) to (p-1)/(vm+p-1), "
          "and each micro-batch sends (vp-1)/(p-1) times as many messages. The step gets shorter where the "
          "messages cost less than the bubble they save.",
    defaults=Knobs(schedule="interleaved", chunks=2),
    schedules=("interleaved", "1f1b"),
    comparisons=(Comparison(label="1F1B (v = 1)", overrides={"schedule": "1f1b", "chunks": 1}),),
    editable=("stages", "microbatches", "chunks", "model", "layers", "hidden"),
    claim_compares=True,
    claim_check=claim.check,
    headline=claim.headline,
    headline_row=HeadlineRow(COMPARISON, "bubble fraction, interleaved",
                             (f"<= {claim.INTERLEAVED_CUT}, within {RATIO_TOLERANCE} of theory at the runs' own costs; "
                             "messages x(vp-1)/(p-1)")),
    predictions=questions.PREDICTIONS,
    checks=questions.CHECKS,
)
