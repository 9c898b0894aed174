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
    # One quantity per half, the one the page measures: the bubble in both forms (the paper's
    # over the ideal time, the page's share of the step), and the messages as the Compare
    # table's ratio, (vp-1)/(p-1), which is "about v" only for large p.
    claim="With v chunks per device Megatron's bubble over the ideal time, (p-1)/(vm), is divided by v "
          "(as a share of the step, (p-1)/(vm+p-1), by a little less), while each micro-batch's messages "
          "grow from 2(p-1) to 2(vp-1): (vp-1)/(p-1) times as many, about v. The step gets shorter where "
          "the messages cost less than the bubble they save.",
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
