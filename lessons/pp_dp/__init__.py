"""Lesson: Pipelines side by side: pipeline and data parallelism (PP x DP).

The lesson's catalog entry; beside it its texts (en.md, zh.md, extra/, en.json, zh.json), its
questions (questions.py) and its claim check (claim.py)."""

from __future__ import annotations

from pipelab.lessons.headline_row import HeadlineRow
from pipelab.lessons.knobs import Knobs
from pipelab.lessons.lesson import Comparison, Lesson
from pipelab.lessons.verdict import COMPARISON

from . import claim, questions

LESSON = Lesson(
    slug="pp-dp", number=7, title="Pipelines side by side: pipeline and data parallelism (PP x DP)",
    claim="On 4 workers at one global batch B, d pipelines of p = 4/d stages idle (p-1)/(m+p-1) of a step, "
          "with m = B/d. In exchange each device holds d times the model and all-reduces once a step, hidden in "
          "the cool-down on every stage but the first.",
    # The global batch is fixed at 8 micro-batches: each layout gets m = 8 / d of them.
    defaults=Knobs(schedule="1f1b", stages=4, microbatches=8),
    schedules=("1f1b", "gpipe"),
    comparisons=(
        Comparison(label="p = 2, d = 2: 2 pipelines of 2 stages, all-reduce after each stage's last backward",
                   overrides={"stages": 2, "data_parallel": 2, "microbatches": 4, "reduce_at": "backward"}),
        Comparison(label="p = 2, d = 2: 2 pipelines of 2 stages, all-reduce at the flush",
                   overrides={"stages": 2, "data_parallel": 2, "microbatches": 4, "reduce_at": "flush"}),
        Comparison(label="p = 1, d = 4: 4 replicas, no pipeline (data parallelism alone)",
                   overrides={"stages": 1, "data_parallel": 4, "microbatches": 2, "reduce_at": "backward"}),
    ),
    editable=("model", "layers", "hidden", "microbatch_size"),
    claim_compares=True,
    claim_check=claim.check,
    headline=claim.headline,
    headline_row=HeadlineRow(COMPARISON, "step time, p = 2, d = 2",
                             "each layout's step within 0.10 of theory at the runs' own costs; each stage's "
                             f"exposed all-reduce within {claim.EXPOSED_TOLERANCE} of the step of the simulator's; "
                             f"the step at the flush at least 1x after the backward's ({claim.FLUSH_NOISE} below "
                             "it within noise)"),
    predictions=questions.PREDICTIONS,
    checks=questions.CHECKS,
)
