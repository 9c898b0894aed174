"""Lesson: PipeDream: asynchronous 1F1B and weight stashing.

The lesson's catalog entry; beside it its texts (en.md, zh.md, extra/, en.json, zh.json), its
questions (questions.py) and its claim check (claim.py)."""

from __future__ import annotations

from pipelab.lessons.extra_kinds import Extra
from pipelab.lessons.headline_row import HeadlineRow
from pipelab.lessons.knobs import Knobs
from pipelab.lessons.lesson import Comparison, Lesson
from pipelab.lessons.verdict import COMPARISON

from . import claim, questions

LESSON = Lesson(
    slug="pipedream", number=3, title="PipeDream: asynchronous 1F1B and weight stashing",
    claim="Asynchronous PipeDream keeps every stage busy in steady state, but stage r must stash "
          "up to p-r weight versions; 2BW needs only two.",
    defaults=Knobs(schedule="pipedream", steps=6),
    schedules=("pipedream", "pipedream-2bw", "1f1b"),
    comparisons=(
        Comparison(label="PipeDream-2BW (two weight versions)", overrides={"schedule": "pipedream-2bw"}),
        Comparison(label="1F1B with a flush (synchronous)", overrides={"schedule": "1f1b"}),
    ),
    editable=("stages", "microbatches", "model", "layers", "hidden", "steps"),
    claim_check=claim.check,
    headline=claim.headline,
    headline_row=HeadlineRow(COMPARISON, "most weight versions",
                             "theory's count (p - r; 2 for 2BW; 1 for 1F1B)"),
    predictions=questions.PREDICTIONS,
    checks=questions.CHECKS,
    extras=(
        Extra(kind="stash_toggle", texts={"label": "page.weight_stashing", "help": "page.weight_stashing_help"},
              schedules=("pipedream", "pipedream-2bw")),
        Extra(kind="weight_versions", texts={"title": "extras.versions_title", "caption": "extras.versions_caption"}),
        Extra(kind="loss_streams", texts={"title": "extras.losses_title", "caption": "extras.losses_caption"}),
        Extra(kind="split_or_replicate", texts={"header": "extras.split_header", "intro": "extras.split_intro"}),
    ),
)
