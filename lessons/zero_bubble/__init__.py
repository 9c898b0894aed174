"""Lesson: Zero bubble: splitting the backward.

The lesson's catalog entry; beside it its texts (en.md, zh.md, extra/, en.json, zh.json), its
questions (questions.py) and its claim check (claim.py)."""

from __future__ import annotations

from pipelab.lessons.extra_kinds import Extra
from pipelab.lessons.headline_row import HeadlineRow
from pipelab.lessons.knobs import Knobs
from pipelab.lessons.lesson import Comparison, Lesson
from pipelab.lessons.verdict import COMPARISON, RATIO_TOLERANCE

from . import claim, questions

LESSON = Lesson(
    slug="zero-bubble", number=6, title="Zero bubble: splitting the backward",
    # At most two short sentences (issue 47): the verdict says what theory at a run's own costs
    # expects where T_F, T_I and T_W are not equal.
    # T_F, T_I and T_W are named in words before the formula uses them (walk finding 10).
    claim="Splitting the backward into I (input gradient) and W (weight gradient), ZB-H1 cuts 1F1B's bubble "
          "at equal memory, to a third when forward, I and W take equal time ($T_F = T_I = T_W$). "
          "ZB-H2 and ZB-V leave no gap inside each device's span, only the pipeline's two ends idle, "
          "and all three shorten the step.",
    # Micro-batches of 128 rows: zero bubble's gaps are what is left after each action's
    # fixed costs (the engine's own time, a step's cold first forward), and with steps
    # overlapping ZB-H2 has no slack to hide them (arXiv 2401.10241, section 4); twice
    # the work per action halves their share (bench/overlap.py measures the pair here).
    defaults=Knobs(schedule="zb-h1", microbatch_size=128),
    schedules=("zb-h1", "zb-h2", "zb-v", "dualpipev", "zb-1p", "zb-2p", "v-half", "v-min", "1f1b"),
    comparisons=(
        Comparison(label="1F1B", overrides={"schedule": "1f1b"}),
        Comparison(label="ZB-H2", overrides={"schedule": "zb-h2"}),
        Comparison(label="ZB-V (2 chunks per device)", overrides={"schedule": "zb-v", "chunks": 2}),
    ),
    editable=("stages", "microbatches", "microbatch_size", "model", "layers", "hidden", "overlap_steps"),
    claim_compares=True,
    claim_check=claim.check,
    headline=claim.headline,
    headline_row=HeadlineRow(COMPARISON, "idle time per step",
                             (f"<= {claim.ZB_H1_CUT}, within {RATIO_TOLERANCE} of theory at the runs' own "
                             "costs, at <= 1.1x 1F1B's peak memory")),
    predictions=questions.PREDICTIONS,
    checks=questions.CHECKS,
    extras=(
        Extra(kind="dualpipe_table", texts={"header": "extras.dp_header", "intro": "extras.dp_intro"}),
        Extra(kind="memory_tradeoff", texts={"header": "extras.mem_header", "intro": "extras.mem_intro"}),
    ),
)
